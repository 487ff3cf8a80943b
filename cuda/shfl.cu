// The shuffle family with CUDA's own intrinsics: the reference behaviour that shaders/shfl.comp
// reproduces on any subgroup size.
//
// Logical thread t handles elements t*SEGM .. t*SEGM+SEGM-1; lane = t % 32. Elements past `n`
// take part as zeros (a warp is always whole) and are never written.
//
// Variant constants: OP (0 broadcast, 1 up, 2 down, 3 wrap, 4 xor), SEGM (values per lane).

struct ShflParams {
    unsigned int n;      // elements in this launch
    int arg;             // srcLane, delta, offset or laneMask, by OP
    unsigned int width;  // segment width: 2, 4, 8, 16 or 32
    unsigned int pad;
};

extern "C" __global__ void shfl(const XW_T* __restrict__ in, XW_T* __restrict__ out, ShflParams p) {
    const unsigned long long first = xw_group() * blockDim.x;
    const unsigned long long lanes = ((unsigned long long)p.n + SEGM - 1) / SEGM;
    // Whole blocks past the end leave together; inside a block every warp stays whole.
    if (first >= lanes) return;
    const unsigned long long t = first + threadIdx.x;
    const int lane = threadIdx.x % XW_WARP;
#pragma unroll
    for (int k = 0; k < SEGM; ++k) {
        const unsigned long long i = t * SEGM + k;
        const XW_T v = i < p.n ? in[i] : XW_T(0);
        XW_T r;
#if OP == 0
        r = __shfl_sync(XW_FULL_MASK, v, p.arg, p.width);
#elif OP == 1
        r = __shfl_up_sync(XW_FULL_MASK, v, (unsigned)p.arg, p.width);
#elif OP == 2
        r = __shfl_down_sync(XW_FULL_MASK, v, (unsigned)p.arg, p.width);
#elif OP == 3
        r = __shfl_sync(XW_FULL_MASK, v, lane + p.arg, p.width);
#elif OP == 4
        r = __shfl_xor_sync(XW_FULL_MASK, v, p.arg, p.width);
#else
#error "unknown OP"
#endif
        if (i < p.n) out[i] = r;
    }
}
