// Rung 2, reduceNeighboredLess: neighbored pairs with less divergence. Thread tid works on
// element index = 2*stride*tid, so the active threads are packed into the first warps.
//
//
// A rung of the reduction ladder (Professional CUDA C Programming, chapter 3 reduceInteger.cu
// and chapter 5); the twin of shaders/reduce_neighbored_less.comp,
// modelled by src/cpu/ladder.rs. Sums wrap on overflow (the book's int sums, done as unsigned
// so that C++ has no overflow UB).
//
// Like every chapter-3 rung it works in place on global memory, as the book's kernels do on
// g_idata, but never on the caller's input: each block first writes its starting values (the
// guarded loads, zeros past n) into its slice of a scratch buffer the layer allocates (`work`,
// blockDim.x elements per block) and the tree runs there. One partial per block goes to
// dst[dst_index + group]; the layer finishes with the device reduce.

#include "ladder_common.cuh"

extern "C" __global__ void reduce_neighbored_less(
    const T* __restrict__ src, T* work, T* __restrict__ dst, LadderParams p) {
    const unsigned group = (unsigned)xw_group();
    // Whole blocks without work leave together; inside one all threads stay.
    if (group >= p.groups) return;
    const unsigned tid = threadIdx.x;
    const unsigned block = blockDim.x;
    T* idata = work + (unsigned long long)group * block;
    idata[tid] = ladder_load(src, p.n, group, tid, 1);
    __syncthreads();
    for (unsigned stride = 1; stride < block; stride *= 2) {
        const unsigned index = 2 * stride * tid;
        if (index < block) idata[index] = xw_add(idata[index], idata[index + stride]);
        __syncthreads();
    }
    if (tid == 0) dst[p.dst_index + group] = idata[0];
}
