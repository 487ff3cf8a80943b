// The float arithmetic of every kernel that computes on floats: sum, product, min and max
// (reduce_op.glsl's operators, the stencil) and the comparisons of the predicates
// (vote_predicate.glsl), with IEEE 754 results, subnormals kept, whatever the driver does with
// subnormals. Include after common.glsl. CUDA needs no twin: NVRTC compiles without
// flush-to-zero, so the CUDA kernels keep subnormals in hardware.
//
// SUBNORMALS is the element type's variant, chosen once when the device opens
// (src/vulkan/mod.rs), never per call:
// 0 native (f32, f64): the driver's arithmetic, for devices that keep subnormals
//   (DenormPreserve, which src/vulkan/spirv.rs asks for where the driver offers it, or
//   measured by the self-test).
// 1 exact (f32_exact, f64_exact): for devices that flush them. An operation takes the driver's
//   arithmetic when the exponent bits of its result show that no flush can have changed it;
//   the others are computed exactly from the operands' bits, so that every value the driver
//   sees is normal: sums on operands scaled by a power of two into the normal range
//   (xw_exact_add), products as integer products of the significands rounded to nearest, ties
//   to even, by integer operations (xw_exact_mul). Min, max and the comparisons order the bits
//   themselves (a flushing comparison says -1e-45 == 0).
// 2 flushed (f32_flush, f64_flush): operands and results flushed to zero of the same sign, as a
//   flushing driver does; for tests, which show that the exact arithmetic changes what
//   flushing gets wrong.
// Integer types have only the first.
#ifndef XW_FLOAT_OPS_GLSL
#define XW_FLOAT_OPS_GLSL

#if defined(XW_SUBNORMALS_EXACT)
const uint SUBNORMALS = 1u;
#elif defined(XW_SUBNORMALS_FLUSH)
const uint SUBNORMALS = 2u;
#else
const uint SUBNORMALS = 0u;
#endif

// Unsigned 64-bit integers as (low word, high word), in 32-bit operations (no shaderInt64).
uvec2 xw_u64_shl(uvec2 m, uint s) {
    if (s == 0u) return m;
    if (s >= 64u) return uvec2(0u);
    if (s >= 32u) return uvec2(0u, m.x << (s - 32u));
    return uvec2(m.x << s, (m.y << s) | (m.x >> (32u - s)));
}
uvec2 xw_u64_shr(uvec2 m, uint s) {
    if (s == 0u) return m;
    if (s >= 64u) return uvec2(0u);
    if (s >= 32u) return uvec2(m.y >> (s - 32u), 0u);
    return uvec2((m.x >> s) | (m.y << (32u - s)), m.y >> s);
}
uvec2 xw_u64_add(uvec2 a, uvec2 b) {
    uint carry;
    uint lo = uaddCarry(a.x, b.x, carry);
    return uvec2(lo, a.y + b.y + carry);
}
uvec2 xw_u64_sub(uvec2 a, uvec2 b) {
    uint borrow;
    uint lo = usubBorrow(a.x, b.x, borrow);
    return uvec2(lo, a.y - b.y - borrow);
}
bool xw_u64_less(uvec2 a, uvec2 b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }

#if defined(XW_T_FLOAT)
// Bit patterns are built, tested and ordered as integers: no float operation touches them.
#if defined(XW_TYPE_F32)
const uint XW_FRAC = 23u;       // fraction bits
const uint XW_BIAS = 127u;
const uint XW_EXP_MAX = 0xffu;  // the biased exponent of infinities and NaN
uint xw_biased_exp(T v) { return (floatBitsToUint(v) >> 23) & 0xffu; }
uint xw_sign(T v) { return floatBitsToUint(v) >> 31; }
bool xw_isnan(T v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }
bool xw_is_zero(T v) { return (floatBitsToUint(v) & 0x7fffffffu) == 0u; }
T xw_or_bits(T a, T b) { return uintBitsToFloat(floatBitsToUint(a) | floatBitsToUint(b)); }
T xw_and_bits(T a, T b) { return uintBitsToFloat(floatBitsToUint(a) & floatBitsToUint(b)); }
T xw_negate(T v) { return uintBitsToFloat(floatBitsToUint(v) ^ 0x80000000u); }
T xw_signed_zero(uint sign) { return uintBitsToFloat(sign << 31); }
T xw_smallest_normal(uint sign) { return uintBitsToFloat((sign << 31) | 0x00800000u); }
// Whether non-NaN a orders below b in the order of min and max: IEEE order with -0.0 below
// +0.0 (negative values' bits reversed, below the positive ones').
uint xw_order_key(T v) {
    uint u = floatBitsToUint(v);
    return (u >> 31) != 0u ? ~u : u | 0x80000000u;
}
bool xw_below(T a, T b) { return xw_order_key(a) < xw_order_key(b); }
#else
const uint XW_FRAC = 52u;
const uint XW_BIAS = 1023u;
const uint XW_EXP_MAX = 0x7ffu;
uint xw_biased_exp(T v) { return (unpackDouble2x32(v).y >> 20) & 0x7ffu; }
uint xw_sign(T v) { return unpackDouble2x32(v).y >> 31; }
bool xw_isnan(T v) {
    uvec2 w = unpackDouble2x32(v);
    uint hi = w.y & 0x7fffffffu;
    return hi > 0x7ff00000u || (hi == 0x7ff00000u && w.x != 0u);
}
bool xw_is_zero(T v) {
    uvec2 w = unpackDouble2x32(v);
    return w.x == 0u && (w.y & 0x7fffffffu) == 0u;
}
T xw_or_bits(T a, T b) { return packDouble2x32(unpackDouble2x32(a) | unpackDouble2x32(b)); }
T xw_and_bits(T a, T b) { return packDouble2x32(unpackDouble2x32(a) & unpackDouble2x32(b)); }
T xw_negate(T v) { return packDouble2x32(unpackDouble2x32(v) ^ uvec2(0u, 0x80000000u)); }
T xw_signed_zero(uint sign) { return packDouble2x32(uvec2(0u, sign << 31)); }
T xw_smallest_normal(uint sign) { return packDouble2x32(uvec2(0u, (sign << 31) | 0x00100000u)); }
uvec2 xw_order_key(T v) {
    uvec2 w = unpackDouble2x32(v);
    return (w.y >> 31) != 0u ? ~w : uvec2(w.x, w.y | 0x80000000u);
}
bool xw_below(T a, T b) { return xw_u64_less(xw_order_key(a), xw_order_key(b)); }
#endif
const uint XW_PREC = XW_FRAC + 1u;

// Zeros and subnormals as the zero of their sign; every other value as it is.
T xw_flush(T v) { return xw_biased_exp(v) == 0u ? xw_signed_zero(xw_sign(v)) : v; }
bool xw_subnormal(T v) { return xw_biased_exp(v) == 0u && !xw_is_zero(v); }
// Subnormals as the smallest normal of their sign, which makes the same sum or product with
// an infinity or NaN.
T xw_unsubnormal(T v) {
    if (xw_biased_exp(v) != 0u || xw_is_zero(v)) return v;
    return xw_smallest_normal(xw_sign(v));
}

// a + b of finite a and b with |a + b| < 2^(emin + prec + 1), exactly rounded: a and b scaled
// by 2^K (exactly: a normal's exponent bits raised by K, a subnormal's significand converted
// and multiplied by 2^(K - emin - frac)) are normal, and so is their sum unless it is zero; it
// is the correctly rounded scaled sum (where the exact sum is subnormal, it is a multiple of the
// scaled subnormals' spacing below 2^(K + emin), which the hardware sum holds exactly), and is
// scaled back with integer operations. Operands too large to scale cancel exactly: the driver's
// sum is right.
#if defined(XW_TYPE_F32)
const uint XW_SCALE = 64u;
T xw_scaled(T v) {
    uint u = floatBitsToUint(v);
    if (xw_biased_exp(v) != 0u) return uintBitsToFloat(u + (XW_SCALE << 23));
    precise float s = float(u & 0x7fffffu) * uintBitsToFloat((127u + XW_SCALE - 149u) << 23);
    return uintBitsToFloat(floatBitsToUint(s) | (u & 0x80000000u));
}
T xw_unscaled(T s) {
    uint u = floatBitsToUint(s);
    if (xw_biased_exp(s) > XW_SCALE) return uintBitsToFloat(u - (XW_SCALE << 23));
    // |s| * 2^(149 - 64): the subnormal's significand, an integer below 2^23.
    precise float k =
        uintBitsToFloat(u & 0x7fffffffu) * uintBitsToFloat((127u + 149u - XW_SCALE) << 23);
    return uintBitsToFloat((u & 0x80000000u) | uint(k));
}
#else
const uint XW_SCALE = 128u;
T xw_scaled(T v) {
    uvec2 w = unpackDouble2x32(v);
    if (xw_biased_exp(v) != 0u) return packDouble2x32(uvec2(w.x, w.y + (XW_SCALE << 20)));
    // The significand (below 2^52) and its product with 2^(128 - 1074) are exact.
    precise double m = double(w.y & 0xfffffu) * 4294967296.0lf + double(w.x);
    precise double s = m * packDouble2x32(uvec2(0u, (1023u + XW_SCALE - 1074u) << 20));
    uvec2 r = unpackDouble2x32(s);
    return packDouble2x32(uvec2(r.x, r.y | (w.y & 0x80000000u)));
}
T xw_unscaled(T s) {
    uvec2 w = unpackDouble2x32(s);
    if (xw_biased_exp(s) > XW_SCALE) return packDouble2x32(uvec2(w.x, w.y - (XW_SCALE << 20)));
    // |s| * 2^(1074 - 128): the subnormal's significand, an integer below 2^52, in two words.
    precise double k = packDouble2x32(uvec2(w.x, w.y & 0x7fffffffu))
        * packDouble2x32(uvec2(0u, (1023u + 1074u - XW_SCALE) << 20));
    uint hi = uint(k * packDouble2x32(uvec2(0u, (1023u - 32u) << 20)));
    precise double lo = k - double(hi) * 4294967296.0lf;
    return packDouble2x32(uvec2(uint(lo), hi | (w.y & 0x80000000u)));
}
#endif
T xw_exact_add(T a, T b) {
    if (max(xw_biased_exp(a), xw_biased_exp(b)) >= XW_EXP_MAX - XW_SCALE) {
        precise T r = a + b;
        return r;
    }
    precise T s = xw_scaled(a) + xw_scaled(b);
    return xw_unscaled(s);
}

// a * b of finite a and b, exactly rounded: the integer product of the significands (f32: 48
// bits; f64: 106 bits), its leading bit moved to the top of a word (f32) or of 64 bits (f64),
// the bits below that in a sticky bit, rounded once.
#if defined(XW_TYPE_F32)
// The f32 bits nearest to (-1)^sign * hi * 2^(top - 31) for hi with its leading bit at bit 31,
// ties to even, `sticky` saying that nonzero bits follow hi: normal, subnormal, zero or
// infinity.
uint xw_round_f32(uint sign, uint hi, bool sticky, int top) {
    if (top > 127) return (sign << 31) | 0x7f800000u;
    // The bits of hi below the result's last place: 8 for a normal, more below.
    uint drop = 8u + uint(max(-126 - top, 0));
    uint q = 0u;
    bool up = false;
    if (drop < 32u) {
        q = hi >> drop;
        uint rest = hi & ((1u << drop) - 1u);
        uint half_unit = 1u << (drop - 1u);
        up = rest > half_unit || (rest == half_unit && (sticky || (q & 1u) == 1u));
    } else if (drop == 32u) {
        // Between half the smallest subnormal (hi = 2^31, nothing after it: a tie, to 0) and
        // the smallest subnormal.
        up = hi > 0x80000000u || sticky;
    }
    // A normal's leading bit adds one to the biased exponent less one placed above it; a
    // subnormal is q alone. A carry out of rounding moves into the exponent, up to infinity.
    return (sign << 31) | ((uint(max(top + 126, 0)) << 23) + q + (up ? 1u : 0u));
}

T xw_exact_mul(T a, T b) {
    uint ua = floatBitsToUint(a);
    uint ub = floatBitsToUint(b);
    uint sign = (ua ^ ub) >> 31;
    if (xw_is_zero(a) || xw_is_zero(b)) return xw_signed_zero(sign);
    uint ea = (ua >> 23) & 0xffu;
    uint eb = (ub >> 23) & 0xffu;
    // value = m * 2^(max(e, 1) - 150), with the implicit bit for normals.
    uint ma = (ua & 0x7fffffu) | (ea != 0u ? 0x800000u : 0u);
    uint mb = (ub & 0x7fffffu) | (eb != 0u ? 0x800000u : 0u);
    uint hi;
    uint lo;
    umulExtended(ma, mb, hi, lo);
    int msb = hi != 0u ? 32 + findMSB(hi) : findMSB(lo);
    uint s = uint(63 - msb);  // at least 16: the product is below 2^48
    uint word = s >= 32u ? lo << (s - 32u) : (hi << s) | (lo >> (32u - s));
    bool sticky = s < 32u && (lo << s) != 0u;
    int top = msb + int(max(ea, 1u) + max(eb, 1u)) - 300;
    return uintBitsToFloat(xw_round_f32(sign, word, sticky, top));
}
#else
// The f64 bits, as (low word, high word), nearest to (-1)^sign * m * 2^(top - 63) for m with
// its leading bit at bit 63, ties to even, `sticky` saying that nonzero bits follow m: normal,
// subnormal, zero or infinity.
uvec2 xw_round_f64(uint sign, uvec2 m, bool sticky, int top) {
    uvec2 bits = uvec2(0u);
    // The bits of m below the result's last place: 11 for a normal, more below.
    uint drop = 11u + uint(max(-1022 - top, 0));
    if (top > 1023) {
        bits = uvec2(0u, 0x7ff00000u);
    } else if (drop <= 64u) {
        // (Past 64 bits the value lies below half the smallest subnormal: zero.)
        uvec2 q = xw_u64_shr(m, drop);
        uvec2 rest = xw_u64_sub(m, xw_u64_shl(q, drop));
        uvec2 half_unit = xw_u64_shl(uvec2(1u, 0u), drop - 1u);
        bool odd = (q.x & 1u) == 1u;
        if (xw_u64_less(half_unit, rest) || (rest == half_unit && (sticky || odd))) {
            q = xw_u64_add(q, uvec2(1u, 0u));
        }
        // As in xw_round_f32: the biased exponent less one above q's leading bit.
        bits = xw_u64_add(uvec2(0u, uint(max(top + 1022, 0)) << 20), q);
    }
    bits.y |= sign << 31;
    return bits;
}

T xw_exact_mul(T a, T b) {
    uvec2 ra = unpackDouble2x32(a);
    uvec2 rb = unpackDouble2x32(b);
    uint sign = (ra.y ^ rb.y) >> 31;
    if (xw_is_zero(a) || xw_is_zero(b)) return xw_signed_zero(sign);
    uint ea = xw_biased_exp(a);
    uint eb = xw_biased_exp(b);
    // value = m * 2^(max(e, 1) - 1075), with the implicit bit for normals.
    uvec2 ma = uvec2(ra.x, (ra.y & 0xfffffu) | (ea != 0u ? 0x100000u : 0u));
    uvec2 mb = uvec2(rb.x, (rb.y & 0xfffffu) | (eb != 0u ? 0x100000u : 0u));
    // Significands normalised to a leading bit at 52 give a product of 105 or 106 bits.
    uint sa = uint(52 - (ma.y != 0u ? 32 + findMSB(ma.y) : findMSB(ma.x)));
    uint sb = uint(52 - (mb.y != 0u ? 32 + findMSB(mb.y) : findMSB(mb.x)));
    ma = xw_u64_shl(ma, sa);
    mb = xw_u64_shl(mb, sb);
    uint h00, l00, h01, l01, h10, l10, h11, l11;
    umulExtended(ma.x, mb.x, h00, l00);
    umulExtended(ma.x, mb.y, h01, l01);
    umulExtended(ma.y, mb.x, h10, l10);
    umulExtended(ma.y, mb.y, h11, l11);
    uint c0, c1, c2, c3, c4;
    uint w1 = uaddCarry(h00, l01, c0);
    w1 = uaddCarry(w1, l10, c1);
    uint w2 = uaddCarry(h01, h10, c2);
    w2 = uaddCarry(w2, l11, c3);
    w2 = uaddCarry(w2, c0 + c1, c4);
    uint w3 = h11 + c2 + c3 + c4;
    // The product's leading bit is bit 105 (bit 9 of w3) or 104: its top 64 bits start there.
    uint k = (w3 & 0x200u) != 0u ? 10u : 9u;
    uvec2 top = uvec2((w1 >> k) | (w2 << (32u - k)), (w2 >> k) | (w3 << (32u - k)));
    bool sticky = l00 != 0u || (w1 & ((1u << k) - 1u)) != 0u;
    int e = int(max(ea, 1u) + max(eb, 1u) + 95u + k) - int(2150u + sa + sb);
    return packDouble2x32(xw_round_f64(sign, top, sticky, e));
}
#endif

// Below this biased exponent a sum may have met a flushed operand or been flushed: a sum of
// magnitude 2^(emin + prec + 1) or more is the driver's correctly rounded sum of normal
// operands, or a normal operand b that a subnormal leaves unchanged (it lies below half of b's
// unit in the last place, so the exact sum rounds to b as well).
const uint XW_SUM_FAST_EXP = XW_PREC + 2u;

T xw_add(T a, T b) {
    precise T r = a + b;
    if (SUBNORMALS == 1u) {
        // Infinities and NaN come from infinite or NaN operands alone, which no flush changes.
        if (xw_biased_exp(r) >= XW_SUM_FAST_EXP) return r;
        return xw_exact_add(a, b);
    }
    if (SUBNORMALS == 2u) {
        precise T f = xw_flush(a) + xw_flush(b);
        return xw_flush(f);
    }
    return r;
}

T xw_mul(T a, T b) {
    precise T r = a * b;
    if (SUBNORMALS == 1u) {
        // A normal finite product had normal operands: a flushed one gives zero or NaN.
        if (xw_biased_exp(r) - 1u < XW_EXP_MAX - 1u) return r;
        if (xw_biased_exp(a) == XW_EXP_MAX || xw_biased_exp(b) == XW_EXP_MAX) {
            precise T s = xw_unsubnormal(a) * xw_unsubnormal(b);
            return s;
        }
        return xw_exact_mul(a, b);
    }
    if (SUBNORMALS == 2u) {
        precise T f = xw_flush(a) * xw_flush(b);
        return xw_flush(f);
    }
    return r;
}

// The exact arithmetic in batches (SUBNORMALS 1): a kernel folds a run of sums or products in
// the driver's arithmetic, testing each result beside the chain (xw_sum_fast, xw_mul_fast: no
// branch), and computes the run again with xw_add and xw_mul only where a test failed. The
// tests are xw_add's and xw_mul's, so the bits are the same either way; the per-operation
// branch (and the divergence bookkeeping around it) leaves the hot loop.
// The tests as float comparisons of the result's magnitude, one instruction each beside the
// chain: a flushed result compares as zero, a NaN fails every comparison. |a + b| below
// 2^(emin + prec + 1) (the smallest value of biased exponent XW_SUM_FAST_EXP) is xw_add's
// test: a NaN sum passes (it came from NaN or infinite operands). A product must be normal or
// infinite: zero, subnormal (flushed) and NaN (a flushed operand times an infinity) fail.
// (Literals, exact powers of two: 2^-101 and 2^-126, f64 2^-968 and 2^-1022. glslang
// evaluates `a || b` without a branch only where b is a plain variable or constant: hence `t`.)
#if defined(XW_TYPE_F32)
const T XW_SUM_FAST_MIN = 3.9443045261050590271e-31;
const T XW_MIN_NORMAL = 1.1754943508222875080e-38;
#else
const T XW_SUM_FAST_MIN = 4.0083367200179456e-292lf;
const T XW_MIN_NORMAL = 2.2250738585072014e-308lf;
#endif
// a + b natively; `slow` set where the driver's sum may differ from the exact one.
T xw_sum_fast(T a, T b, inout bool slow) {
    precise T r = a + b;
    bool t = abs(r) < XW_SUM_FAST_MIN;
    slow = slow || t;
    return r;
}
// a * b natively; `slow` set unless the product is normal or infinite.
T xw_mul_fast(T a, T b, inout bool slow) {
    precise T r = a * b;
    bool t = !(abs(r) >= XW_MIN_NORMAL);
    slow = slow || t;
    return r;
}

#if defined(XW_TYPE_F32)
// Min and max of f32 as unsigned integers: the order key of min (xw_min_key) and of max
// (xw_max_key) is xw_order_key rotated so that every NaN orders above every other value (min)
// or below it (max); the other values keep the order of xw_below, -0.0 below +0.0. Keys are
// a bijection of the bits, so equal keys are equal bits, and the minNum (maxNum) fold of a
// run, left to right from a NaN accumulator, is the value of the least (greatest) key unless
// every element is NaN: then it is the run's last element ("a NaN `a` yields `b`").
const uint XW_KEY_ROTATE = 0x007fffffu;  // the order key of -inf
uint xw_min_key(T v) { return xw_order_key(v) - XW_KEY_ROTATE; }
uint xw_max_key(T v) { return xw_order_key(v) + XW_KEY_ROTATE; }
// Keys of min at or above this one, and of max at or below this one, are NaN.
const uint XW_MIN_KEY_NAN = 0xff000002u;
const uint XW_MAX_KEY_NAN = 0x00fffffdu;
T xw_from_order_key(uint k) {
    return uintBitsToFloat((k >> 31) != 0u ? k & 0x7fffffffu : ~k);
}
T xw_from_min_key(uint k) { return xw_from_order_key(k + XW_KEY_ROTATE); }
T xw_from_max_key(uint k) { return xw_from_order_key(k - XW_KEY_ROTATE); }
#endif

// minNum and maxNum with -0.0 < +0.0: a NaN `a` yields `b`, a NaN `b` loses every comparison,
// and both NaN yields `b`. Natively, equal values differ at most in the sign of a zero: OR of
// the bits picks -0.0 (min), AND picks +0.0 (max).
T xw_native_min(T a, T b) {
    const T m = (xw_isnan(a) || b < a) ? b : a;
    return a == b ? xw_or_bits(a, b) : m;
}
T xw_native_max(T a, T b) {
    const T m = (xw_isnan(a) || b > a) ? b : a;
    return a == b ? xw_and_bits(a, b) : m;
}
T xw_min(T a, T b) {
    if (SUBNORMALS == 1u) return (xw_isnan(a) || (!xw_isnan(b) && xw_below(b, a))) ? b : a;
    if (SUBNORMALS == 2u) return xw_native_min(xw_flush(a), xw_flush(b));
    return xw_native_min(a, b);
}
T xw_max(T a, T b) {
    if (SUBNORMALS == 1u) return (xw_isnan(a) || (!xw_isnan(b) && xw_below(a, b))) ? b : a;
    if (SUBNORMALS == 2u) return xw_native_max(xw_flush(a), xw_flush(b));
    return xw_native_max(a, b);
}

// IEEE comparisons (false with a NaN; -0.0 == +0.0) and v != 0.
bool xw_less(T a, T b) {
    if (SUBNORMALS == 1u) {
        return !xw_isnan(a) && !xw_isnan(b) && !(xw_is_zero(a) && xw_is_zero(b))
            && xw_below(a, b);
    }
    if (SUBNORMALS == 2u) return xw_flush(a) < xw_flush(b);
    return a < b;
}
bool xw_less_equal(T a, T b) {
    if (SUBNORMALS == 1u) {
        return !xw_isnan(a) && !xw_isnan(b)
            && ((xw_is_zero(a) && xw_is_zero(b)) || !xw_below(b, a));
    }
    if (SUBNORMALS == 2u) return xw_flush(a) <= xw_flush(b);
    return a <= b;
}
bool xw_nonzero(T v) {
    if (SUBNORMALS == 1u) return !xw_is_zero(v);
    if (SUBNORMALS == 2u) return xw_flush(v) != T(0);
    return v != T(0);
}
#else
// Integers: wrapping arithmetic and plain comparisons.
T xw_add(T a, T b) { return a + b; }
T xw_mul(T a, T b) { return a * b; }
T xw_min(T a, T b) { return min(a, b); }
T xw_max(T a, T b) { return max(a, b); }
bool xw_less(T a, T b) { return a < b; }
bool xw_less_equal(T a, T b) { return a <= b; }
bool xw_nonzero(T v) { return v != T(0); }
#endif

#endif
