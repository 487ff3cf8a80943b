// Run-time predicates over the element type T (xwarp::vote::Predicate): the twin of
// xw_predicate in cuda/vote.cu and cuda/compact.cu and of Predicate::eval on the CPU.
// The code and operands travel in the push constants; 64-bit operands as two words, low first.
// Float comparisons keep subnormals on every device (float_ops.glsl).
#include "float_ops.glsl"

const uint XW_PRED_EVEN = 0u;
const uint XW_PRED_ODD = 1u;
const uint XW_PRED_NONZERO = 2u;
const uint XW_PRED_GREATER = 3u;
const uint XW_PRED_LESS = 4u;
const uint XW_PRED_IN_RANGE = 5u;

// An operand from its two parameter words.
T xw_pred_operand(uint lo, uint hi) {
#if defined(XW_TYPE_I32)
    return int(lo);
#elif defined(XW_TYPE_U32)
    return lo;
#elif defined(XW_TYPE_F32)
    return uintBitsToFloat(lo);
#elif defined(XW_TYPE_I64)
    return int64_t(packUint2x32(uvec2(lo, hi)));
#elif defined(XW_TYPE_U64)
    return packUint2x32(uvec2(lo, hi));
#elif defined(XW_TYPE_F64)
    return packDouble2x32(uvec2(lo, hi));
#endif
}

#if defined(XW_T_FLOAT)
// A float is even or odd when it is an integer (finite, equal to its truncation), as that
// integer. Decided from the value's bits alone, never by driver math (trunc, isinf and
// multiplication by 0.5 went wrong on one driver): with the unbiased exponent e and F
// fraction bits (23 or 52), a finite non-zero value is an integer when e >= 0 and the
// F - e lowest bits of its significand (the fraction with the implicit leading one) are zero,
// and it is odd when bit F - e of the significand is one (for e > F the value is even).
// Zeros are even; subnormals, other values below 1, infinities and NaN are neither.
// The significand as two words (low, high); the biased exponent and the fraction width are
// float_ops.glsl's.
#if defined(XW_TYPE_F32)
uvec2 xw_significand(T v) { return uvec2((floatBitsToUint(v) & 0x7fffffu) | 0x800000u, 0u); }
#else
uvec2 xw_significand(T v) {
    uvec2 w = unpackDouble2x32(v);
    return uvec2(w.x, (w.y & 0xfffffu) | 0x100000u);
}
#endif

// Whether the k lowest bits of m (k in 1..63) are all zero.
bool xw_low_bits_zero(uvec2 m, uint k) {
    if (k >= 32u) return m.x == 0u && (k == 32u || (m.y & ((1u << (k - 32u)) - 1u)) == 0u);
    return (m.x & ((1u << k) - 1u)) == 0u;
}

// Bit k of m (k in 0..63).
uint xw_bit(uvec2 m, uint k) { return k >= 32u ? (m.y >> (k - 32u)) & 1u : (m.x >> k) & 1u; }

// 0: not an integer, 1: an even integer, 2: an odd integer.
uint xw_parity(T v) {
    if (xw_is_zero(v)) return 1u;
    uint e = xw_biased_exp(v);
    if (e == XW_EXP_MAX || e < XW_BIAS) return 0u;
    uint x = e - XW_BIAS;
    if (x > XW_FRAC) return 1u;
    uvec2 m = xw_significand(v);
    uint k = XW_FRAC - x;
    if (k > 0u && !xw_low_bits_zero(m, k)) return 0u;
    return xw_bit(m, k) == 1u ? 2u : 1u;
}
bool xw_is_even(T v) { return xw_parity(v) == 1u; }
bool xw_is_odd(T v) { return xw_parity(v) == 2u; }
#else
bool xw_is_even(T v) { return (v & T(1)) == T(0); }
bool xw_is_odd(T v) { return (v & T(1)) != T(0); }
#endif

// Whether v passes predicate `code` with operands a and b (IEEE comparisons: NaN fails all but
// nonzero).
bool xw_predicate(T v, uint code, T a, T b) {
    switch (code) {
    case XW_PRED_EVEN: return xw_is_even(v);
    case XW_PRED_ODD: return xw_is_odd(v);
    case XW_PRED_NONZERO: return xw_nonzero(v);
    case XW_PRED_GREATER: return xw_less(a, v);
    case XW_PRED_LESS: return xw_less(v, a);
    case XW_PRED_IN_RANGE: return xw_less_equal(a, v) && xw_less_equal(v, b);
    }
    return false;
}
