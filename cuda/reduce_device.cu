// The one-launch device reduce with CUDA's warp intrinsics; the twin of
// shaders/reduce_device.comp (see there for the protocol), modelled by src/cpu/reduce.rs.
//
// Variant constants: OP (0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor), ITEMS, GROUPED
// (1: more than one tile of totals, so more than one counter; see below).
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
    const unsigned tile = XW_REDUCE_BLOCK * ITEMS;
    const T total = block_total(tile_fold(src, group * tile, p.n), local, stage);
    // One tile of totals or fewer: counter[0] counts the tiles. More: counter[1 + g] counts the
    // tiles of tile-of-totals g, and counter[0] the tiles of totals reduced.
    // GROUPED is 0 when there is at most one tile of totals: the kernel is then that path alone.
    const unsigned m = GROUPED ? (p.groups + tile - 1) / tile : 1;
    const unsigned g = group / tile;
    unsigned* count = m == 1 ? counter : counter + 1 + g;
    const unsigned members = m == 1 ? p.groups : min(tile, p.groups - g * tile);
    if (local == 0) {
        // Publish the tile's total, then count the tile: the block that counts last sees every
        // total it counts (the fence orders the store before the count, device-wide).
        __stcg(&totals[group], total);
        __threadfence();
        last = atomicAdd(count, 1u) == members - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    // The totals, read through L2 (they were written by other blocks of this launch), reduced
    // in the order of the multi-launch reduce's further levels: as one tile when they fit in
    // one; else each tile of them to one value in totals[groups + g], by the block that counts
    // last in it, then those as one tile by the block that counts the last such value. One
    // fold in a loop over the levels, so the kernel holds one copy of it.
    unsigned lo = m == 1 ? 0 : g * tile;
    unsigned hi = p.groups;
    while (true) {
        const T v = block_total(tile_fold<true>(totals, lo, hi), local, stage);
        if (m == 1 || lo == p.groups) {
            if (local == 0) {
                dst[p.dst_index] = v;
                // Every block has counted: the word goes back to zero for the next launch.
                *counter = 0;
            }
            return;
        }
        if (local == 0) {
            *count = 0;
            __stcg(&totals[p.groups + g], v);
            __threadfence();
            last = atomicAdd(counter, 1u) == m - 1;
        }
        __syncthreads();
        if (!last) return;
        __threadfence();
        lo = p.groups;
        hi = p.groups + m;
    }
}
