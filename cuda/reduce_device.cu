// The one-launch device reduce with CUDA's warp intrinsics; the twin of
// shaders/reduce_device.comp (see there for the protocol), modelled by src/cpu/reduce.rs.
//
// Variant constants: OP (0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor), ITEMS.
// Blocks are XW_REDUCE_BLOCK threads.

#define XW_REDUCE_BLOCK 256

struct ReduceDeviceParams {
    unsigned int n;         // elements
    unsigned int groups;    // tiles, one block each (at most (XW_REDUCE_BLOCK * ITEMS)^2)
    unsigned int dst_index; // index of the result in dst
};

#include "reduce_op.cuh"

#include "reduce_tile.cuh"

extern "C" __global__ void reduce_device(const T* __restrict__ src, T* dst, T* totals,
                                         unsigned int* counter, ReduceDeviceParams p) {
    __shared__ T stage[XW_REDUCE_BLOCK];
    __shared__ bool last;
    const unsigned group = (unsigned)xw_group();
    if (group >= p.groups) return;
    const unsigned local = threadIdx.x;
    const T total = block_total(tile_fold(src, group * blockDim.x * ITEMS, p.n), local, stage);
    if (local == 0) {
        // Publish the tile's total, then count the tile: the block that counts last sees every
        // total (the fence orders the store before the count, device-wide).
        __stcg(&totals[group], total);
        __threadfence();
        last = atomicAdd(counter, 1u) == p.groups - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    // The totals, read through L2 (they were written by other blocks of this launch), reduced
    // in the order of the multi-launch reduce's further levels: as one tile when they fit in
    // one; else each tile of them to one value in totals[groups + t], then those as one tile.
    const unsigned tile = blockDim.x * ITEMS;
    T result;
    if (p.groups <= tile) {
        result = block_total(tile_fold<true>(totals, 0, p.groups), local, stage);
    } else {
        const unsigned m = (p.groups + tile - 1) / tile;
        for (unsigned t = 0; t < m; ++t) {
            const T v = block_total(tile_fold<true>(totals, t * tile, p.groups), local, stage);
            if (local == 0) __stcg(&totals[p.groups + t], v);
            // Makes the value visible to the block, and keeps the next tile's block_total from
            // overwriting `stage` before the first warp has read it.
            __syncthreads();
        }
        result = block_total(tile_fold<true>(totals + p.groups, 0, m), local, stage);
    }
    if (local == 0) {
        dst[p.dst_index] = result;
        // Every block has counted: the word goes back to zero for the next launch.
        *counter = 0;
    }
}
