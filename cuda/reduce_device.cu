// The device reduce in one launch; the twin of shaders/reduce_device.comp (see there for the
// plan), in the canonical order of src/reduce.rs. Variant constants: OP, ITEMS.

#define XW_REDUCE_BLOCK 256

struct ReduceParams {
    unsigned int n;         // elements
    unsigned int groups;    // tiles; blocks beyond leave at once
    unsigned int dst_index; // index of the result in dst
};

#include "reduce_op.cuh"
#include "reduce_tile.cuh"

extern "C" __global__ void reduce_device(const T* __restrict__ src, T* __restrict__ dst,
                                         T* totals, unsigned int* counter, ReduceParams p) {
    __shared__ T stage[XW_REDUCE_BLOCK];
    __shared__ bool s_last;
    const unsigned group = (unsigned)xw_group();
    if (group >= p.groups) return;
    const unsigned local = threadIdx.x;
    const unsigned tile = blockDim.x * ITEMS;
    const T total = butterfly(tile_fold(src, group * tile, p.n), local, blockDim.x, stage);
    if (local == 0) {
        totals[group] = total;
        __threadfence();
        s_last = atomicAdd(counter, 1u) == p.groups - 1u;
    }
    __syncthreads();
    if (!s_last) return;
    // The last block: every total is written and visible (this block never cached them).
    __threadfence();
    unsigned off = 0;
    unsigned count = p.groups;
    while (count > 1) {
        const unsigned next = (count + tile - 1) / tile;
        for (unsigned t = 0; t < next; ++t) {
            const T v = butterfly(tile_fold(totals, off + t * tile, off + count), local,
                                  blockDim.x, stage);
            if (local == 0) totals[off + count + t] = v;
        }
        __syncthreads();
        off += count;
        count = next;
    }
    if (local == 0) {
        dst[p.dst_index] = totals[off];
        *counter = 0;
    }
}
