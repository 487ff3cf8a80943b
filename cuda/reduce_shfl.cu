// Rung reduceShfl (chapter 5): the warp-shuffle reduce. Each thread loads one element
// (guarded: zero past n); each warp sums its values with the xor butterfly; lane 0 of every
// warp puts the warp's sum in shared memory; the first warp sums those partials the same way.
// The caller's input is only read.
//
//
// A rung of the reduction ladder (Professional CUDA C Programming, chapter 3 reduceInteger.cu
// and chapter 5); the twin of shaders/reduce_shfl.comp,
// modelled by src/cpu/ladder.rs. Sums wrap on overflow (the book's int sums, done as unsigned
// so that C++ has no overflow UB).

typedef XW_T T;

struct LadderParams {
    unsigned int n;         // elements in this launch
    unsigned int groups;    // blocks that have work; any beyond leave at once
    unsigned int dst_index; // index of the first partial in dst
};

__device__ __forceinline__ int xw_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ unsigned xw_add(unsigned a, unsigned b) { return a + b; }
__device__ __forceinline__ long long xw_add(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ unsigned long long xw_add(unsigned long long a, unsigned long long b) {
    return a + b;
}

// The sum of the `items` data blocks this thread starts with (elements idx, idx + block, ...
// of the block's tile of items * blockDim.x elements); every load is guarded, so a ragged tail
// contributes zeros.
__device__ __forceinline__ T ladder_load(const T* __restrict__ src, unsigned n, unsigned group,
                                         unsigned tid, unsigned items) {
    const unsigned block = blockDim.x;
    const unsigned idx = group * block * items + tid;
    T sum = T(0);
    for (unsigned k = 0; k < items; ++k) {
        const unsigned i = idx + k * block;
        if (i < n) sum = xw_add(sum, src[i]);
    }
    return sum;
}

// The book's warpReduce, with the _sync intrinsics: every lane ends with the warp's sum.
__device__ __forceinline__ T warp_reduce(T v) {
#pragma unroll
    for (int s = XW_WARP / 2; s > 0; s >>= 1) v = xw_add(v, __shfl_xor_sync(XW_FULL_MASK, v, s));
    return v;
}

// One partial per warp of the largest block (1024 threads).
#define LADDER_WARPS (1024 / XW_WARP)

extern "C" __global__ void reduce_shfl(const T* __restrict__ src, T* __restrict__ dst,
                                       LadderParams p) {
    __shared__ T warp_sums[LADDER_WARPS];
    const unsigned group = (unsigned)xw_group();
    // Whole blocks without work leave together; inside one all threads stay.
    if (group >= p.groups) return;
    const unsigned tid = threadIdx.x;
    const unsigned lane = tid % XW_WARP;
    const unsigned warp = tid / XW_WARP;
    T sum = ladder_load(src, p.n, group, tid, 1);
    sum = warp_reduce(sum);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    sum = tid < blockDim.x / XW_WARP ? warp_sums[lane] : T(0);
    if (warp == 0) sum = warp_reduce(sum);
    if (tid == 0) dst[p.dst_index + group] = sum;
}
