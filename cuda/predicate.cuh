// Run-time predicates of the vote and compaction kernels; the twin of
// shaders/vote_predicate.glsl.

// A value of each type from its bits (32-bit types take the low word).
__device__ __forceinline__ void xw_from_bits(unsigned long long w, int& v) { v = (int)(unsigned int)w; }
__device__ __forceinline__ void xw_from_bits(unsigned long long w, unsigned int& v) { v = (unsigned int)w; }
__device__ __forceinline__ void xw_from_bits(unsigned long long w, float& v) { v = __uint_as_float((unsigned int)w); }
__device__ __forceinline__ void xw_from_bits(unsigned long long w, long long& v) { v = (long long)w; }
__device__ __forceinline__ void xw_from_bits(unsigned long long w, unsigned long long& v) { v = w; }
__device__ __forceinline__ void xw_from_bits(unsigned long long w, double& v) { v = __longlong_as_double((long long)w); }

// An operand from its two parameter words, low first.
__device__ __forceinline__ XW_T xw_pred_operand(unsigned int lo, unsigned int hi) {
    XW_T v;
    xw_from_bits(((unsigned long long)hi << 32) | lo, v);
    return v;
}

template <typename V>
__device__ __forceinline__ bool xw_is_even(V v) { return (v & 1) == 0; }
template <typename V>
__device__ __forceinline__ bool xw_is_odd(V v) { return (v & 1) != 0; }
// A float is even or odd when it is an integer (finite, equal to its truncation), as that
// integer, decided from its bits alone as in shaders/vote_predicate.glsl: with the unbiased
// exponent e and F fraction bits, a finite non-zero value is an integer when e >= 0 and the
// F - e lowest bits of its significand are zero, and odd when bit F - e of the significand is
// one. Zeros are even; subnormals, other values below 1, infinities and NaN are neither.
// 0: not an integer, 1: even, 2: odd.
__device__ __forceinline__ unsigned int xw_parity_bits(unsigned long long bits, unsigned int frac,
                                                       unsigned int bias, unsigned int exp_max) {
    const unsigned long long magnitude = bits & ~(1ull << (frac + (frac == 23 ? 8 : 11)));
    if (magnitude == 0) return 1;
    const unsigned int e = (unsigned int)(magnitude >> frac);
    if (e == exp_max || e < bias) return 0;
    const unsigned int x = e - bias;
    if (x > frac) return 1;
    const unsigned long long m = (magnitude & ((1ull << frac) - 1)) | (1ull << frac);
    const unsigned int k = frac - x;
    if (k > 0 && (m & ((1ull << k) - 1)) != 0) return 0;
    return ((m >> k) & 1) ? 2 : 1;
}
__device__ __forceinline__ unsigned int xw_parity(float v) {
    return xw_parity_bits(__float_as_uint(v), 23, 127, 0xff);
}
__device__ __forceinline__ unsigned int xw_parity(double v) {
    return xw_parity_bits((unsigned long long)__double_as_longlong(v), 52, 1023, 0x7ff);
}
__device__ __forceinline__ bool xw_is_even(float v) { return xw_parity(v) == 1; }
__device__ __forceinline__ bool xw_is_odd(float v) { return xw_parity(v) == 2; }
__device__ __forceinline__ bool xw_is_even(double v) { return xw_parity(v) == 1; }
__device__ __forceinline__ bool xw_is_odd(double v) { return xw_parity(v) == 2; }

// Whether v passes predicate `code` with operands a and b: 0 even, 1 odd, 2 nonzero,
// 3 greater than a, 4 less than a, 5 a <= v <= b (IEEE comparisons: NaN fails all but nonzero).
__device__ __forceinline__ bool xw_predicate(XW_T v, unsigned int code, XW_T a, XW_T b) {
    switch (code) {
    case 0: return xw_is_even(v);
    case 1: return xw_is_odd(v);
    case 2: return v != XW_T(0);
    case 3: return v > a;
    case 4: return v < a;
    case 5: return a <= v && v <= b;
    default: return false;
    }
}
