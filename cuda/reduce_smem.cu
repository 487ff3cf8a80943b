// Rung reduceSmem (chapter 5): the complete-unroll reduce in shared memory instead of global
// memory. Each thread loads one element (guarded: zero past n) into smem, the tree is completely
// unrolled, then the last warp is unrolled. The caller's input is only read. Needs a block of
// at least 64.
//
//
// A rung of the reduction ladder (Professional CUDA C Programming, chapter 3 reduceInteger.cu
// and chapter 5); the twin of shaders/reduce_smem.comp,
// modelled by src/cpu/ladder.rs. Sums wrap on overflow (the book's int sums, done as unsigned
// so that C++ has no overflow UB).

#include "ladder_common.cuh"

// Sized for the largest block (1024 threads, 8 KiB at 64 bits), so one build serves every
// block size.
#define LADDER_SMEM 1024

extern "C" __global__ void reduce_smem(const T* __restrict__ src, T* __restrict__ dst,
                                       LadderParams p) {
    __shared__ T smem[LADDER_SMEM];
    const unsigned group = (unsigned)xw_group();
    // Whole blocks without work leave together; inside one all threads stay.
    if (group >= p.groups) return;
    const unsigned tid = threadIdx.x;
    const unsigned block = blockDim.x;
    smem[tid] = ladder_load(src, p.n, group, tid, 1);
    __syncthreads();
    if (block >= 1024 && tid < 512) smem[tid] = xw_add(smem[tid], smem[tid + 512]);
    __syncthreads();
    if (block >= 512 && tid < 256) smem[tid] = xw_add(smem[tid], smem[tid + 256]);
    __syncthreads();
    if (block >= 256 && tid < 128) smem[tid] = xw_add(smem[tid], smem[tid + 128]);
    __syncthreads();
    if (block >= 128 && tid < 64) smem[tid] = xw_add(smem[tid], smem[tid + 64]);
    __syncthreads();
    if (tid < 32) ladder_last_warp(smem, tid);
    if (tid == 0) dst[p.dst_index + group] = smem[0];
}
