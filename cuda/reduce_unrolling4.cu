// Rung reduceUnrolling4: each block first sums 4 data blocks (thread tid adds elements idx,
// idx + blockDim.x, ... of its tile of 4*blockDim.x elements), then reduces the block of sums
// with the interleaved tree.
//
//
// A rung of the reduction ladder (Professional CUDA C Programming, chapter 3 reduceInteger.cu
// and chapter 5); the twin of shaders/reduce_unrolling4.comp,
// modelled by src/cpu/ladder.rs. Sums wrap on overflow (the book's int sums, done as unsigned
// so that C++ has no overflow UB).
//
// Like every chapter-3 rung it works in place on global memory, as the book's kernels do on
// g_idata, but never on the caller's input: each block first writes its starting values (the
// guarded loads, zeros past n) into its slice of a scratch buffer the layer allocates (`work`,
// blockDim.x elements per block) and the tree runs there. One partial per block goes to
// dst[dst_index + group]; the layer finishes with the device reduce.

#include "ladder_common.cuh"

extern "C" __global__ void reduce_unrolling4(
    const T* __restrict__ src, T* work, T* __restrict__ dst, LadderParams p) {
    const unsigned group = (unsigned)xw_group();
    // Whole blocks without work leave together; inside one all threads stay.
    if (group >= p.groups) return;
    const unsigned tid = threadIdx.x;
    const unsigned block = blockDim.x;
    T* idata = work + (unsigned long long)group * block;
    idata[tid] = ladder_load(src, p.n, group, tid, 4);
    __syncthreads();
    for (unsigned stride = block / 2; stride > 0; stride >>= 1) {
        if (tid < stride) idata[tid] = xw_add(idata[tid], idata[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) dst[p.dst_index + group] = idata[0];
}
