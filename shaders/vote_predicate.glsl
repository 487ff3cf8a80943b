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
// The exact f32 variant's comparisons against operands that cannot meet a flushed element
// (xw_pred_code): the driver's comparison.
const uint XW_PRED_NATIVE_GREATER = 6u;
const uint XW_PRED_NATIVE_LESS = 7u;
const uint XW_PRED_NATIVE_IN_RANGE = 8u;
// The exact f32 variant's comparisons whose passing bits form one interval (xw_pred_code).
const uint XW_PRED_ONE_GREATER = 9u;
const uint XW_PRED_ONE_LESS = 10u;
const uint XW_PRED_ONE_IN_RANGE = 11u;

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

#if defined(XW_TYPE_F32)
// The exact comparisons (SUBNORMALS 1) as the elements whose bits lie in one of two intervals,
// (lo, width) pairs of (x, y) and (z, w): u passes when u - lo < width (unsigned). Bits order
// the non-negative values upwards from +0.0 (0) to +inf (0x7f800000) and the negative ones
// downwards from -0.0 (0x80000000) to -inf (0xff800000); NaN bits lie in neither range. A
// zero operand is taken as the zero of the sign that makes -0.0 == +0.0 (a < v as +0.0 < v,
// v < a as v < -0.0, a <= v as -0.0 <= v, v <= b as v <= +0.0); a NaN operand passes nothing.
// The operands are uniform, so this is computed once, and an element costs four integer
// operations.
uvec2 xw_bits_between(uint lo, uint hi) { return uvec2(lo, hi - lo + 1u); }
uvec4 xw_pred_intervals(uint code, T a, T b) {
    const uvec2 none = uvec2(0u);
    const uvec2 positives = xw_bits_between(0u, 0x7f800000u);
    const uvec2 negatives = xw_bits_between(0x80000000u, 0xff800000u);
    if (xw_isnan(a) || (code == XW_PRED_IN_RANGE && xw_isnan(b))) return uvec4(none, none);
    bool zero_a = xw_is_zero(a);
    uint ua = floatBitsToUint(a);
    if (code == XW_PRED_GREATER) {
        if (zero_a) ua = 0u;
        // Above a non-negative a: larger non-negative bits. Above a negative a: every
        // non-negative value and the negative ones of smaller magnitude.
        if (ua < 0x80000000u) return uvec4(xw_bits_between(ua + 1u, 0x7f800000u), none);
        return uvec4(positives, xw_bits_between(0x80000000u, ua - 1u));
    }
    if (code == XW_PRED_LESS) {
        if (zero_a) ua = 0x80000000u;
        if (ua >= 0x80000000u) return uvec4(xw_bits_between(ua + 1u, 0xff800000u), none);
        return uvec4(negatives, ua == 0u ? none : xw_bits_between(0u, ua - 1u));
    }
    uint ub = floatBitsToUint(b);
    if (zero_a) ua = 0x80000000u;
    if (xw_is_zero(b)) ub = 0u;
    bool neg_a = ua >= 0x80000000u;
    bool neg_b = ub >= 0x80000000u;
    if (!neg_a && !neg_b) return uvec4(ua <= ub ? xw_bits_between(ua, ub) : none, none);
    if (neg_a && neg_b) return uvec4(ub <= ua ? xw_bits_between(ub, ua) : none, none);
    // a negative and b non-negative: [a, -0.0] and [+0.0, b]; the other way round, nothing.
    if (!neg_a) return uvec4(none, none);
    return uvec4(xw_bits_between(0x80000000u, ua), xw_bits_between(0u, ub));
}

// The code a kernel passes to xw_predicate for a call with operands a and b: on the exact f32
// variant a comparison against normal, infinite or NaN operands becomes the driver's comparison
// (a subnormal element, flushed to a zero of its sign, stays on the same side of every such
// operand); against zero or subnormal operands it stays the exact comparison, by one interval
// of bits where the second is empty. Call once per launch (the operands are uniform) and
// switch on the result, so each loop holds one path.
// The bit intervals of the comparison of the last xw_pred_code call (exact f32 only): set once
// per launch, outside the loops, so an element's test does not recompute them.
uvec4 xw_pred_bits = uvec4(0u);

// xw_pred_code without the driver's comparison: on the exact f32 variant every comparison is
// tested on the element's bits, XW_PRED_ONE_* where one interval holds the passing bits, the
// comparison's own code (two intervals) elsewhere. For a kernel whose registers the driver's
// comparisons' extra paths cost more than they save (the partition's scatter: 82 registers,
// two workgroups an SM on NVIDIA, against 78 and three; NOTES.md version 42).
uint xw_pred_code_bits(uint code, T a, T b) {
    if (SUBNORMALS != 1u || code < XW_PRED_GREATER || code > XW_PRED_IN_RANGE) return code;
    xw_pred_bits = xw_pred_intervals(code, a, b);
    return xw_pred_bits.w == 0u ? code + (XW_PRED_ONE_GREATER - XW_PRED_GREATER) : code;
}

uint xw_pred_code(uint code, T a, T b) {
    if (SUBNORMALS != 1u || code < XW_PRED_GREATER || code > XW_PRED_IN_RANGE) return code;
    xw_pred_bits = xw_pred_intervals(code, a, b);
    bool normal = xw_biased_exp(a) != 0u && (code != XW_PRED_IN_RANGE || xw_biased_exp(b) != 0u);
    if (normal) return code + (XW_PRED_NATIVE_GREATER - XW_PRED_GREATER);
    // Zero or subnormal operands: the bit intervals, one where the second is empty (`x > 0`).
    bool one = xw_pred_bits.w == 0u;
    return one ? code + (XW_PRED_ONE_GREATER - XW_PRED_GREATER) : code;
}
#else
uint xw_pred_code(uint code, T a, T b) { return code; }
uint xw_pred_code_bits(uint code, T a, T b) { return code; }
#endif

// Whether v passes predicate `code` with operands a and b (IEEE comparisons: NaN fails all but
// nonzero). `code` comes from xw_pred_code(p.pred, a, b), which prepares the exact variant's
// bit intervals.
bool xw_predicate(T v, uint code, T a, T b) {
#if defined(XW_TYPE_F32)
    if (SUBNORMALS == 1u && code >= XW_PRED_ONE_GREATER) {
        // One interval of bits (xw_pred_code): two integer operations an element.
        return floatBitsToUint(v) - xw_pred_bits.x < xw_pred_bits.y;
    }
    if (SUBNORMALS == 1u && code >= XW_PRED_NATIVE_GREATER) {
        // Operands that xw_pred_code found normal, infinite or NaN: the driver's comparison.
        if (code == XW_PRED_NATIVE_GREATER) return a < v;
        if (code == XW_PRED_NATIVE_LESS) return v < a;
        return a <= v && v <= b;
    }
    if (SUBNORMALS == 1u && code >= XW_PRED_GREATER) {
        uvec4 r = xw_pred_bits;
        uint u = floatBitsToUint(v);
        bool first = u - r.x < r.y;
        bool second = u - r.z < r.w;
        return first || second;
    }
#endif
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
