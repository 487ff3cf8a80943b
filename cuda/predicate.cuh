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
// integer. Half of an integer of magnitude 1 or more is exact, so no rounding enters.
__device__ __forceinline__ bool xw_is_even(float v) {
    const float h = v * 0.5f;
    return !isinf(v) && truncf(v) == v && truncf(h) == h;
}
__device__ __forceinline__ bool xw_is_odd(float v) {
    const float h = v * 0.5f;
    return !isinf(v) && truncf(v) == v && truncf(h) != h;
}
__device__ __forceinline__ bool xw_is_even(double v) {
    const double h = v * 0.5;
    return !isinf(v) && trunc(v) == v && trunc(h) == h;
}
__device__ __forceinline__ bool xw_is_odd(double v) {
    const double h = v * 0.5;
    return !isinf(v) && trunc(v) == v && trunc(h) != h;
}

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
