// Segmented reduce (CUB's DeviceSegmentedReduce) with CUDA's warp intrinsics; the twin of
// shaders/segmented_reduce.comp, whose header describes the canonical order of each segment
// and the two steps (STEP: 0 SMALL, one thread per short segment; 1 TILES, one block per tile
// of the longer ones), modelled by src/cpu/segmented_reduce.rs.
//
// Variant constants: OP (0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor), ITEMS, STEP,
// BLOCK (threads per block).

struct SegmentedReduceParams {
    unsigned int items;  // segments (SMALL) or tiles (TILES) of this launch
    unsigned int pad0;
    unsigned int pad1;
    unsigned int pad2;
};

#include "reduce_op.cuh"
#include "reduce_tile.cuh"

#define SMALL 32u        // the longest segment of the SMALL step
#define TREE_LEVELS 5u   // log2(SMALL)

extern "C" __global__ __launch_bounds__(BLOCK) void segmented_reduce(
    const T* __restrict__ src, T* __restrict__ dst, T* __restrict__ totals,
    const unsigned int* __restrict__ items, const unsigned int* __restrict__ offsets,
    SegmentedReduceParams p) {
    __shared__ T stage[BLOCK];
#if STEP == 0
    const unsigned long long i = xw_group() * BLOCK + threadIdx.x;
    if (i >= p.items) return;
    const unsigned int s = items[i];
    const unsigned int first = offsets[s];
    const unsigned int m = offsets[s + 1] - first;
    // Thread t of the tile holds op(id, x[t]) (t < m) or id; the butterfly's lane 0 ends with
    // the pairwise tree over all of them, neighbours first.
    T v[SMALL];
#pragma unroll
    for (unsigned int t = 0; t < SMALL; ++t) {
        v[t] = t < m ? xw_op(xw_identity(T(0)), src[first + t]) : xw_identity(T(0));
    }
#pragma unroll
    for (unsigned int level = 0; level < TREE_LEVELS; ++level) {
        const unsigned int d = 1u << level;
#pragma unroll
        for (unsigned int t = 0; t < SMALL; t += 2 * d) v[t] = xw_op(v[t], v[t + d]);
    }
    T r = v[0];
    // The levels above SMALL: the upper subtree holds identities only.
    for (unsigned int s2 = SMALL; s2 < BLOCK; s2 <<= 1) r = xw_op(r, xw_identity(T(0)));
    dst[s] = r;
#elif STEP == 1
    const unsigned int group = (unsigned int)xw_group();
    // Whole blocks without work leave together; inside one all threads stay.
    if (group >= p.items) return;
    const unsigned int first = items[4 * group];
    const unsigned int end = items[4 * group + 1];
    const unsigned int at = items[4 * group + 2];
    const bool to_totals = items[4 * group + 3] != 0;
    const T total = block_total(tile_fold(src, first, end), threadIdx.x, stage);
    if (threadIdx.x == 0) {
        if (to_totals) {
            totals[at] = total;
        } else {
            dst[at] = total;
        }
    }
#else
#error "unknown STEP"
#endif
}
