// The shuffle family with CUDA's own intrinsics: the reference behaviour that shaders/shfl.comp
// reproduces on any subgroup size.
//
// Logical thread t handles elements t*SEGM .. t*SEGM+SEGM-1; lane = t % 32. Elements past `n`
// take part as zeros (a warp is always whole) and are never written.
//
// A block handles ROWS layers of blockDim.x logical threads, every load issued before the first
// shuffle.
//
// Variant constants: OP (0 broadcast, 1 up, 2 down, 3 wrap, 4 xor), SEGM (values per lane),
// ROWS (layers per block).

struct ShflParams {
    unsigned int n;      // elements in this launch
    int arg;             // srcLane, delta, offset or laneMask, by OP
    unsigned int width;  // segment width: 2, 4, 8, 16 or 32
    unsigned int pad;
};

extern "C" __global__ void shfl(const XW_T* __restrict__ in, XW_T* __restrict__ out, ShflParams p) {
    const unsigned long long first = xw_group() * blockDim.x * ROWS;
    const unsigned long long lanes = ((unsigned long long)p.n + SEGM - 1) / SEGM;
    // Whole blocks past the end leave together; inside a block every warp stays whole.
    if (first >= lanes) return;
    const int lane = threadIdx.x % XW_WARP;
    XW_T v[ROWS * SEGM];
#pragma unroll
    for (int j = 0; j < ROWS * SEGM; ++j) {
        const unsigned long long i = (first + (j / SEGM) * blockDim.x + threadIdx.x) * SEGM + j % SEGM;
        v[j] = i < p.n ? in[i] : XW_T(0);
    }
#pragma unroll
    for (int j = 0; j < ROWS * SEGM; ++j) {
        const unsigned long long i = (first + (j / SEGM) * blockDim.x + threadIdx.x) * SEGM + j % SEGM;
        XW_T r;
#if OP == 0
        r = __shfl_sync(XW_FULL_MASK, v[j], p.arg, p.width);
#elif OP == 1
        r = __shfl_up_sync(XW_FULL_MASK, v[j], (unsigned)p.arg, p.width);
#elif OP == 2
        r = __shfl_down_sync(XW_FULL_MASK, v[j], (unsigned)p.arg, p.width);
#elif OP == 3
        r = __shfl_sync(XW_FULL_MASK, v[j], lane + p.arg, p.width);
#elif OP == 4
        r = __shfl_xor_sync(XW_FULL_MASK, v[j], p.arg, p.width);
#else
#error "unknown OP"
#endif
        if (i < p.n) out[i] = r;
    }
}
