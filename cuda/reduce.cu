// Reductions at three scopes with CUDA's warp intrinsics; the twin of shaders/reduce.comp (see
// there for SCOPE and the association order), modelled by src/cpu/reduce.rs.
//
// Variant constants: OP (0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor), SCOPE, ITEMS.
// Blocks are XW_REDUCE_BLOCK threads.

#define XW_REDUCE_BLOCK 256

struct ReduceParams {
    unsigned int n;       // elements in this launch
    unsigned int groups;  // blocks that have work; any beyond leave at once
    unsigned int dst_index; // index of the first result in dst
};

#include "reduce_op.cuh"

#include "reduce_tile.cuh"

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
    const T acc = tile_fold(src, group * block * ITEMS, p.n);
    const T total = block_total(acc, local, stage);
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
