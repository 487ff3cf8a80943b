// The 5-point weighted moving average with CUDA's warp intrinsics; the twin of
// shaders/stencil.comp (see there for the formula, the edges and the launch parameters),
// modelled by src/cpu/stencil.rs.
//
//   y[i] = ((((w0*x[i-2] + w1*x[i-1]) + w2*x[i]) + w3*x[i+1]) + w4*x[i+2])   for 2 <= i < n-2
//
// evaluated in exactly that order with __fmul_rn/__fadd_rn (__dmul_rn/__dadd_rn): the
// intrinsics are never contracted into an FMA, so the result is bit-identical to the Vulkan
// shader and the CPU reference.
//
// Variant constants: SMEM (0 the shuffle version, 1 the shared-memory version), ROWS (layers of
// a block's width per block).
// Blocks are XW_STENCIL_BLOCK threads (src/stencil.rs launches that many).

#define XW_STENCIL_BLOCK 256
#define XW_HALO 2

typedef XW_T T;

struct StencilParams {
    unsigned int count;   // outputs in this launch
    unsigned int in_off;  // index in src of output 0's centre element x[i]
    unsigned int in_len;  // elements src holds
    unsigned int lo;      // outputs lo .. hi-1 are averages, the others the edge value +0.0
    unsigned int hi;
    unsigned int out_off; // index in dst of output 0
    unsigned int w[10];   // weights w0 .. w4, two words each, low first (float: the low word)
};

__device__ __forceinline__ void xw_from_words(unsigned int lo, unsigned int, float& v) {
    v = __uint_as_float(lo);
}
__device__ __forceinline__ void xw_from_words(unsigned int lo, unsigned int hi, double& v) {
    v = __hiloint2double((int)hi, (int)lo);
}
__device__ __forceinline__ T xw_weight(const StencilParams& p, int k) {
    T v;
    xw_from_words(p.w[2 * k], p.w[2 * k + 1], v);
    return v;
}

__device__ __forceinline__ float xw_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float xw_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double xw_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double xw_mul(double a, double b) { return __dmul_rn(a, b); }

// x at offset d from output t's centre; outside the bound input it is never used for an
// average and reads as 0, so nothing out of bounds is touched.
__device__ __forceinline__ T xw_load(const T* __restrict__ src, const StencilParams& p, unsigned t, int d) {
    const long long q = (long long)p.in_off + t + d;
    return q >= 0 && q < (long long)p.in_len ? src[q] : T(0);
}

// The documented order, every product and sum rounded on its own.
__device__ __forceinline__ T xw_average(const StencilParams& p, T m2, T m1, T c, T p1, T p2) {
    T y = xw_add(xw_mul(xw_weight(p, 0), m2), xw_mul(xw_weight(p, 1), m1));
    y = xw_add(y, xw_mul(xw_weight(p, 2), c));
    y = xw_add(y, xw_mul(xw_weight(p, 3), p1));
    return xw_add(y, xw_mul(xw_weight(p, 4), p2));
}

extern "C" __global__ void stencil(const T* __restrict__ src, T* __restrict__ dst, StencilParams p) {
    // A block computes ROWS layers of blockDim.x consecutive outputs each; every layer is
    // aligned like a block of its own, so warps start at multiples of 32 outputs.
    const unsigned long long first = xw_group() * blockDim.x * ROWS;
    // Whole blocks past the end leave together; inside a block every warp stays whole.
    if (first >= p.count) return;
    const unsigned local = threadIdx.x;
    const unsigned lane = local % XW_WARP;
    // Every load of every layer is issued before the first average. Threads past `count` still
    // load: their centre values are the right-hand neighbours of the last outputs. The halo
    // registers: in the shuffle version lanes 0 and 1 hold x[i-2] (x[base-2], x[base-1] of the
    // warp starting at `base`), lanes 30 and 31 hold x[i+2] (x[base+32], x[base+33]); in the
    // shared-memory version the first and last two threads of the layer do.
    const bool left = SMEM ? local < XW_HALO : lane < XW_HALO;
    const bool right = SMEM ? local >= blockDim.x - XW_HALO : lane >= XW_WARP - XW_HALO;
    T c[ROWS], h[ROWS];
    // A block whose every load (halo included) lies inside the bound input loads without
    // bounds checks or branches: each thread's halo load reads x[i-2], x[i+2] or, for the
    // threads that need none, its own centre again (no extra memory traffic). Only the blocks
    // at the ends of the input take the checked path.
    const long long base = (long long)p.in_off + (long long)first;
    if (blockDim.x == XW_STENCIL_BLOCK && base >= XW_HALO &&
        base + ROWS * XW_STENCIL_BLOCK + XW_HALO <= (long long)p.in_len) {
        const T* __restrict__ s = src + base + local;
        const T* __restrict__ hs = s + (left ? -XW_HALO : right ? XW_HALO : 0);
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) {
            c[r] = s[r * XW_STENCIL_BLOCK];
            h[r] = hs[r * XW_STENCIL_BLOCK];
        }
    } else {
#pragma unroll
        for (unsigned r = 0; r < ROWS; ++r) {
            const unsigned t = (unsigned)first + r * blockDim.x + local;
            c[r] = xw_load(src, p, t, 0);
            h[r] = left ? xw_load(src, p, t, -XW_HALO)
                        : right ? xw_load(src, p, t, XW_HALO) : T(0);
        }
    }
#if SMEM
    __shared__ T tile[XW_STENCIL_BLOCK + 2 * XW_HALO];
#endif
#pragma unroll
    for (unsigned r = 0; r < ROWS; ++r) {
        const unsigned t = (unsigned)first + r * blockDim.x + local;
        T m2, m1, p1, p2;
#if SMEM
        tile[local + XW_HALO] = c[r];
        if (left) tile[local] = h[r];
        if (right) tile[local + 2 * XW_HALO] = h[r];
        // Each thread reads slots other threads wrote (its neighbours, the halo loaders at the
        // layer's edges), possibly in other warps: the barrier makes every write visible first.
        __syncthreads();
        m2 = tile[local];
        m1 = tile[local + 1];
        p1 = tile[local + 3];
        p2 = tile[local + 4];
        // The next layer overwrites the tile.
        __syncthreads();
#else
        // Every lane takes part in every shuffle (full mask); the fix-ups below replace what
        // the lanes at the warp's edges got back (their own values, by CUDA's rule).
        const T up2 = __shfl_up_sync(XW_FULL_MASK, c[r], 2);
        const T up1 = __shfl_up_sync(XW_FULL_MASK, c[r], 1);
        const T dn1 = __shfl_down_sync(XW_FULL_MASK, c[r], 1);
        const T dn2 = __shfl_down_sync(XW_FULL_MASK, c[r], 2);
        const T h_dn1 = __shfl_down_sync(XW_FULL_MASK, h[r], 1);
        const T h_up1 = __shfl_up_sync(XW_FULL_MASK, h[r], 1);
        // The fix-ups: a lane whose neighbour lies outside its warp takes it from the halo
        // registers. Lanes 0 and 1 use their own x[i-2]; lane 0's x[i-1] is lane 1's x[i-2].
        // Lanes 30 and 31 use their own x[i+2]; lane 31's x[i+1] is lane 30's x[i+2].
        m2 = lane >= 2 ? up2 : h[r];
        m1 = lane >= 1 ? up1 : h_dn1;
        p1 = lane + 1 < XW_WARP ? dn1 : h_up1;
        p2 = lane + 2 < XW_WARP ? dn2 : h[r];
#endif
        if (t < p.count) {
            dst[p.out_off + t] =
                t >= p.lo && t < p.hi ? xw_average(p, m2, m1, c[r], p1, p2) : T(0);
        }
    }
}
