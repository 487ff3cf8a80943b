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

#include "ladder_common.cuh"

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
