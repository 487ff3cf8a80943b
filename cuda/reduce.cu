// Reductions at three scopes with CUDA's warp intrinsics; the twin of shaders/reduce.comp (see
// there for SCOPE and the association order), modelled by src/cpu/reduce.rs.
//
// Variant constants: OP (0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor), SCOPE, ITEMS.
// Blocks are XW_REDUCE_BLOCK threads.

#define XW_REDUCE_BLOCK 256

typedef XW_T T;

struct ReduceParams {
    unsigned int n;       // elements in this launch
    unsigned int groups;  // blocks that have work; any beyond leave at once
    unsigned int dst_index; // index of the first result in dst
};

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

// min/max: IEEE 754-2008 minNum/maxNum for floats, with -0.0 below +0.0.
template <typename F> __device__ __forceinline__ F xw_fmin(F a, F b) {
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == b) return signbit(a) ? a : b;
    return a < b ? a : b;
}
template <typename F> __device__ __forceinline__ F xw_fmax(F a, F b) {
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == b) return signbit(a) ? b : a;
    return a > b ? a : b;
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

// The xor butterfly over aligned blocks of `span` threads (32 or the block); levels of 32 and
// more go through shared memory.
__device__ __forceinline__ T butterfly(T v, unsigned local, unsigned span, T* stage) {
    for (unsigned s = 1; s < span; s <<= 1) {
        T o;
        if (s < XW_WARP) {
            o = __shfl_xor_sync(XW_FULL_MASK, v, s);
        } else {
            stage[local] = v;
            __syncthreads();
            o = stage[local ^ s];
            __syncthreads();
        }
        v = (local & s) == 0 ? xw_op(v, o) : xw_op(o, v);
    }
    return v;
}

// The shift-down reduce of the source material: lane 0 ends with the warp's total.
__device__ __forceinline__ T warp_reduce_down(T v) {
    for (int s = XW_WARP / 2; s > 0; s >>= 1) v = xw_op(v, __shfl_down_sync(XW_FULL_MASK, v, s));
    return v;
}

extern "C" __global__ void reduce(const T* __restrict__ src, T* __restrict__ dst, ReduceParams p) {
    __shared__ T stage[XW_REDUCE_BLOCK];
    __shared__ T warp_totals[XW_REDUCE_BLOCK / XW_WARP];
    const unsigned group = (unsigned)xw_group();
    if (group >= p.groups) return;
    const unsigned local = threadIdx.x;
    const unsigned block = blockDim.x;
    const T identity = xw_identity(T(0));
#if SCOPE == 3
    T acc = identity;
    const unsigned base = group * block * ITEMS;
#pragma unroll
    for (unsigned k = 0; k < ITEMS; ++k) {
        const unsigned i = base + k * block + local;
        if (i < p.n) acc = xw_op(acc, src[i]);
    }
    const T total = butterfly(acc, local, block, stage);
    if (local == 0) dst[p.dst_index + group] = total;
#else
    const unsigned i = group * block + local;
    T v = i < p.n ? src[i] : identity;
#if SCOPE == 0
    v = butterfly(v, local, XW_WARP, stage);
    if (i < p.n) dst[p.dst_index + i] = v;
#elif SCOPE == 1
    v = warp_reduce_down(v);
    if (local % XW_WARP == 0 && i < p.n) dst[p.dst_index + i / XW_WARP] = v;
#else
    v = warp_reduce_down(v);
    if (local % XW_WARP == 0) warp_totals[local / XW_WARP] = v;
    __syncthreads();
    const unsigned lane = local % XW_WARP;
    v = lane < block / XW_WARP ? warp_totals[lane] : identity;
    v = warp_reduce_down(v);
    if (local == 0) dst[p.dst_index + group] = v;
#endif
#endif
}
