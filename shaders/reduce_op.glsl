// The reduction operators on T and their identities; the twin of the same functions in
// cuda/reduce.cu. Include after OP is declared.
//
// Floats: sum's identity is -0.0 (x + -0.0 == x for every x, +0.0 included); min and max follow
// IEEE 754-2008 minNum/maxNum (a NaN operand is ignored, the result is NaN only when both are)
// and order -0.0 below +0.0, so their identity is NaN and an empty reduction gives NaN.
// Integers wrap on overflow.

#include "float_ops.glsl"

#if defined(XW_TYPE_F32)
T xw_neg_zero() { return uintBitsToFloat(0x80000000u); }
T xw_nan() { return uintBitsToFloat(0x7fc00000u); }
#elif defined(XW_TYPE_F64)
T xw_neg_zero() { return packDouble2x32(uvec2(0u, 0x80000000u)); }
T xw_nan() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
#endif

// Sum, product, min and max of floats keep subnormals on every device (float_ops.glsl).
T xw_op(T a, T b) {
    if (OP == 0u) return xw_add(a, b);
    if (OP == 1u) return xw_mul(a, b);
    if (OP == 2u) return xw_min(a, b);
    if (OP == 3u) return xw_max(a, b);
#ifndef XW_T_FLOAT
    if (OP == 4u) return a & b;
    if (OP == 5u) return a | b;
    return a ^ b;
#else
    // Bitwise operators are refused for floats before any launch.
    return a;
#endif
}

// xw_op on a fold's fast path: exact float sums (SUBNORMALS 1) take the driver's sum and set
// `slow` where it may differ from xw_add's (the caller then folds again with xw_op); every
// other operator is xw_op and leaves `slow` alone.
T xw_op_fast(T a, T b, inout bool slow) {
#ifdef XW_T_FLOAT
    if (OP == 0u && SUBNORMALS == 1u) return xw_sum_fast(a, b, slow);
#endif
    return xw_op(a, b);
}

T xw_identity() {
#ifdef XW_T_FLOAT
    if (OP == 0u) return xw_neg_zero();
    if (OP == 1u) return T(1);
    return xw_nan();
#else
    if (OP == 0u || OP == 5u || OP == 6u) return T(0);
    if (OP == 1u) return T(1);
    if (OP == 4u) return ~T(0);
#if defined(XW_TYPE_I32)
    T lowest = T(0x80000000u);
#elif defined(XW_TYPE_I64)
    T lowest = T(uint64_t(1) << 63);
#else
    T lowest = T(0);
#endif
    // min's identity is the largest value, max's the lowest.
    return OP == 2u ? ~lowest : lowest;
#endif
}
