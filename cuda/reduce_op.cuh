// The reduction and scan operators on T and their identities; the twin of
// shaders/reduce_op.glsl (see there for the float semantics). Needs OP defined:
// 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor.

typedef XW_T T;

// Signed overflow is undefined in C++: signed integers add and multiply as unsigned, which
// wraps as the GLSL twin does.
__device__ __forceinline__ int xw_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int xw_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ long long xw_add(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ long long xw_mul(long long a, long long b) {
    return (long long)((unsigned long long)a * (unsigned long long)b);
}
__device__ __forceinline__ unsigned xw_add(unsigned a, unsigned b) { return a + b; }
__device__ __forceinline__ unsigned xw_mul(unsigned a, unsigned b) { return a * b; }
__device__ __forceinline__ unsigned long long xw_add(unsigned long long a, unsigned long long b) { return a + b; }
__device__ __forceinline__ unsigned long long xw_mul(unsigned long long a, unsigned long long b) { return a * b; }
__device__ __forceinline__ float xw_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float xw_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double xw_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double xw_mul(double a, double b) { return __dmul_rn(a, b); }

// min/max: IEEE 754-2008 minNum/maxNum for floats, with -0.0 below +0.0, as branch-free
// selects: equal operands (equal values, or +0.0 and -0.0) differ at most in the sign of a zero,
// so OR of the bits picks -0.0 (min) and AND picks +0.0 (max); otherwise a NaN `a` yields `b`,
// a NaN `b` loses every comparison, and both NaN yields `b`.
__device__ __forceinline__ float xw_or_bits(float a, float b) { return __int_as_float(__float_as_int(a) | __float_as_int(b)); }
__device__ __forceinline__ float xw_and_bits(float a, float b) { return __int_as_float(__float_as_int(a) & __float_as_int(b)); }
__device__ __forceinline__ double xw_or_bits(double a, double b) { return __longlong_as_double(__double_as_longlong(a) | __double_as_longlong(b)); }
__device__ __forceinline__ double xw_and_bits(double a, double b) { return __longlong_as_double(__double_as_longlong(a) & __double_as_longlong(b)); }
// NaN recognised from the bits, as in the GLSL twin.
__device__ __forceinline__ bool xw_isnan(float a) { return (__float_as_uint(a) & 0x7fffffffu) > 0x7f800000u; }
__device__ __forceinline__ bool xw_isnan(double a) {
    return ((unsigned long long)__double_as_longlong(a) & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
template <typename F> __device__ __forceinline__ F xw_fmin(F a, F b) {
    const F m = (xw_isnan(a) || b < a) ? b : a;
    return a == b ? xw_or_bits(a, b) : m;
}
template <typename F> __device__ __forceinline__ F xw_fmax(F a, F b) {
    const F m = (xw_isnan(a) || b > a) ? b : a;
    return a == b ? xw_and_bits(a, b) : m;
}
template <typename I> __device__ __forceinline__ I xw_imin(I a, I b) { return a < b ? a : b; }
template <typename I> __device__ __forceinline__ I xw_imax(I a, I b) { return a > b ? a : b; }
__device__ __forceinline__ float xw_min(float a, float b) { return xw_fmin(a, b); }
__device__ __forceinline__ double xw_min(double a, double b) { return xw_fmin(a, b); }
__device__ __forceinline__ float xw_max(float a, float b) { return xw_fmax(a, b); }
__device__ __forceinline__ double xw_max(double a, double b) { return xw_fmax(a, b); }
__device__ __forceinline__ int xw_min(int a, int b) { return xw_imin(a, b); }
__device__ __forceinline__ unsigned xw_min(unsigned a, unsigned b) { return xw_imin(a, b); }
__device__ __forceinline__ long long xw_min(long long a, long long b) { return xw_imin(a, b); }
__device__ __forceinline__ unsigned long long xw_min(unsigned long long a, unsigned long long b) { return xw_imin(a, b); }
__device__ __forceinline__ int xw_max(int a, int b) { return xw_imax(a, b); }
__device__ __forceinline__ unsigned xw_max(unsigned a, unsigned b) { return xw_imax(a, b); }
__device__ __forceinline__ long long xw_max(long long a, long long b) { return xw_imax(a, b); }
__device__ __forceinline__ unsigned long long xw_max(unsigned long long a, unsigned long long b) { return xw_imax(a, b); }

// Bitwise operators exist for integers only; the library refuses them for floats before any
// launch, so the float versions are never reached.
template <typename I> __device__ __forceinline__ I xw_bitwise(I a, I b) {
#if OP == 4
    return a & b;
#elif OP == 5
    return a | b;
#else
    return a ^ b;
#endif
}
__device__ __forceinline__ float xw_bitwise(float a, float) { return a; }
__device__ __forceinline__ double xw_bitwise(double a, double) { return a; }

__device__ __forceinline__ T xw_op(T a, T b) {
#if OP == 0
    return xw_add(a, b);
#elif OP == 1
    return xw_mul(a, b);
#elif OP == 2
    return xw_min(a, b);
#elif OP == 3
    return xw_max(a, b);
#else
    return xw_bitwise(a, b);
#endif
}

// Identities, as in shaders/reduce_op.glsl.
template <typename I> __device__ __forceinline__ I xw_int_identity(I lowest) {
#if OP == 0 || OP == 5 || OP == 6
    return I(0);
#elif OP == 1
    return I(1);
#elif OP == 4
    return ~I(0);
#elif OP == 2
    return ~lowest;
#else
    return lowest;
#endif
}
__device__ __forceinline__ int xw_identity(int) { return xw_int_identity<int>((int)0x80000000u); }
__device__ __forceinline__ unsigned xw_identity(unsigned) { return xw_int_identity<unsigned>(0u); }
__device__ __forceinline__ long long xw_identity(long long) {
    return xw_int_identity<long long>((long long)(1ull << 63));
}
__device__ __forceinline__ unsigned long long xw_identity(unsigned long long) {
    return xw_int_identity<unsigned long long>(0ull);
}
__device__ __forceinline__ float xw_identity(float) {
#if OP == 0
    return __uint_as_float(0x80000000u);
#elif OP == 1
    return 1.0f;
#else
    return __uint_as_float(0x7fc00000u);
#endif
}
__device__ __forceinline__ double xw_identity(double) {
#if OP == 0
    return __longlong_as_double(0x8000000000000000ll);
#elif OP == 1
    return 1.0;
#else
    return __longlong_as_double(0x7ff8000000000000ll);
#endif
}

