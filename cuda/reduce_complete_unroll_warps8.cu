// Rung reduceCompleteUnrollWarps8: unrolling 8 with the tree completely unrolled (the block is
// at most 1024: one guarded step per stride 512, 256, 128, 64, each skipped when the block is
// smaller) and the last warp unrolled. Needs a block of at least 64.
//
//
// A rung of the reduction ladder (Professional CUDA C Programming, chapter 3 reduceInteger.cu
// and chapter 5); the twin of shaders/reduce_complete_unroll_warps8.comp,
// modelled by src/cpu/ladder.rs. Sums wrap on overflow (the book's int sums, done as unsigned
// so that C++ has no overflow UB).
//
// Like every chapter-3 rung it works in place on global memory, as the book's kernels do on
// g_idata, but never on the caller's input: each block first writes its starting values (the
// guarded loads, zeros past n) into its slice of a scratch buffer the layer allocates (`work`,
// blockDim.x elements per block) and the tree runs there. One partial per block goes to
// dst[dst_index + group]; the layer finishes with the device reduce.

#include "ladder_common.cuh"

extern "C" __global__ void reduce_complete_unroll_warps8(
    const T* __restrict__ src, T* work, T* __restrict__ dst, LadderParams p) {
    const unsigned group = (unsigned)xw_group();
    // Whole blocks without work leave together; inside one all threads stay.
    if (group >= p.groups) return;
    const unsigned tid = threadIdx.x;
    const unsigned block = blockDim.x;
    T* idata = work + (unsigned long long)group * block;
    idata[tid] = ladder_load(src, p.n, group, tid, 8);
    __syncthreads();
    if (block >= 1024 && tid < 512) idata[tid] = xw_add(idata[tid], idata[tid + 512]);
    __syncthreads();
    if (block >= 512 && tid < 256) idata[tid] = xw_add(idata[tid], idata[tid + 256]);
    __syncthreads();
    if (block >= 256 && tid < 128) idata[tid] = xw_add(idata[tid], idata[tid + 128]);
    __syncthreads();
    if (block >= 128 && tid < 64) idata[tid] = xw_add(idata[tid], idata[tid + 64]);
    __syncthreads();
    if (tid < 32) ladder_last_warp(idata, tid);
    if (tid == 0) dst[p.dst_index + group] = idata[0];
}
