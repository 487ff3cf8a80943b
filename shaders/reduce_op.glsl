// The reduction operators on T and their identities; the twin of the same functions in
// cuda/reduce.cu. Include after OP is declared.
//
// Floats: sum's identity is -0.0 (x + -0.0 == x for every x, +0.0 included); min and max follow
// IEEE 754-2008 minNum/maxNum (a NaN operand is ignored, the result is NaN only when both are)
// and order -0.0 below +0.0, so their identity is NaN and an empty reduction gives NaN.
// Integers wrap on overflow.

// Equal floats (a == b: equal values, or +0.0 and -0.0) differ at most in the sign of a zero:
// OR of the bits picks -0.0 (min), AND picks +0.0 (max). Otherwise a NaN `a` yields `b`, a NaN
// `b` loses every comparison, and both NaN yields `b`: branch-free selects. NaN is recognised
// from the bits (xw_isnan), not by the driver's isnan, which a driver may fold away.
#if defined(XW_TYPE_F32)
T xw_neg_zero() { return uintBitsToFloat(0x80000000u); }
T xw_nan() { return uintBitsToFloat(0x7fc00000u); }
T xw_or_bits(T a, T b) { return uintBitsToFloat(floatBitsToUint(a) | floatBitsToUint(b)); }
T xw_and_bits(T a, T b) { return uintBitsToFloat(floatBitsToUint(a) & floatBitsToUint(b)); }
bool xw_isnan(T a) { return (floatBitsToUint(a) & 0x7fffffffu) > 0x7f800000u; }
#elif defined(XW_TYPE_F64)
T xw_neg_zero() { return packDouble2x32(uvec2(0u, 0x80000000u)); }
T xw_nan() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
T xw_or_bits(T a, T b) { return packDouble2x32(unpackDouble2x32(a) | unpackDouble2x32(b)); }
T xw_and_bits(T a, T b) { return packDouble2x32(unpackDouble2x32(a) & unpackDouble2x32(b)); }
bool xw_isnan(T a) {
    uvec2 w = unpackDouble2x32(a);
    uint hi = w.y & 0x7fffffffu;
    return hi > 0x7ff00000u || (hi == 0x7ff00000u && w.x != 0u);
}
#endif

T xw_min(T a, T b) {
#ifdef XW_T_FLOAT
    const T m = (xw_isnan(a) || b < a) ? b : a;
    return a == b ? xw_or_bits(a, b) : m;
#else
    return min(a, b);
#endif
}

T xw_max(T a, T b) {
#ifdef XW_T_FLOAT
    const T m = (xw_isnan(a) || b > a) ? b : a;
    return a == b ? xw_and_bits(a, b) : m;
#else
    return max(a, b);
#endif
}

T xw_op(T a, T b) {
    if (OP == 0u) return a + b;
    if (OP == 1u) return a * b;
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
