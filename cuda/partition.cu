// Stable two-way partition by a run-time predicate with CUDA's own intrinsics; the twin of
// shaders/partition.comp, whose header describes the steps (OP: 0 COUNT, 1 SCATTER, 2 ONE) of
// the plan in src/partition.rs, modelled by src/cpu/partition.rs.
//
// A tile is blockDim.x * ITEMS consecutive elements; warp w owns the w-th run of 32 * ITEMS of
// them and reads it in ITEMS coalesced steps; per step __ballot_sync and __popc rank the
// passing lanes, and the warps' counts meet in shared memory. Both groups of a tile are staged
// in shared memory (the passing ones first) and leave in coalesced stores.
//
// Variant constants: OP (0 COUNT, 1 SCATTER, 2 ONE, 3 GROUPS, 4 SCATTER_GROUPS), ITEMS, BLOCK
// (threads per block).

struct PartitionParams {
    unsigned int n;      // elements
    unsigned int pred;   // predicate code (xw_predicate)
    unsigned int a_lo;   // first operand, low and high word
    unsigned int a_hi;
    unsigned int b_lo;   // second operand (in_range's hi)
    unsigned int b_hi;
    unsigned int tiles;  // tiles of the input
    unsigned int scan;   // SCATTER's offsets: XW_SCAN_LAUNCH or XW_SCAN_SUMS
    unsigned int spin;   // ONE: polls of unpublished states per thread before counting tiles here
    unsigned int group_bits;  // COUNT and XW_SCAN_SUMS: log2 of the tiles a group
    unsigned int epoch_wrap;   // the GLSL twin's XW_EPOCHS alone (partition_e64.comp)
    unsigned int epoch_tiles;  // likewise
};

#include "predicate.cuh"

#define XW_MAX_WARPS 32  // warps of the largest block (1024 threads)
// p.scan (see the GLSL twin): prefixes by a scan launch, or the group sums and the group's own
// counts summed by the scatter step.
#define XW_SCAN_LAUNCH 0u
#define XW_SCAN_SUMS 1u
#define XW_SUM_TILES 4u   // values of each kind a thread of the scatter step sums
#define XW_ONE_TILES 2u   // ONE: tiles whose states one thread reads (at most 2 * BLOCK tiles)
#define XW_STATE_DONE 0x80000000u

// Bit j: the element of step j of the thread's run (from `first`) passes; *count gets the
// warp's passing elements. Called with a constant code, the predicate's switch folds away.
__device__ __forceinline__ unsigned int xw_kept_bits(unsigned int code, const XW_T (&v)[ITEMS],
                                                     unsigned int first, const PartitionParams& p,
                                                     XW_T a, XW_T b, unsigned int* count) {
    unsigned int kept = 0;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool pass = first + j * XW_WARP < p.n && xw_predicate(v[j], code, a, b);
        kept |= (unsigned int)pass << j;
    }
    // One butterfly sum of the lanes' bit counts rather than a ballot a step (the GLSL twin's).
    unsigned int c = __popc(kept);
#pragma unroll
    for (unsigned int d = 1; d < XW_WARP; d <<= 1) c += __shfl_xor_sync(XW_FULL_MASK, c, d);
    *count = c;
    return kept;
}

// XW_SCAN_SUMS: tile t's offset among the passing elements (*pre) and every tile's (*selected),
// from every tile's count (OP 1), or from every group's sum (sums[g]) and the counts of the
// tiles of t's group before t (OP 4, SCATTER_GROUPS). warp_counts is free once every thread has read it
// (the barrier first). Every thread calls it.
__device__ __forceinline__ void xw_sum_counts(const unsigned int* counts, const unsigned int* sums,
                                              unsigned int* warp_counts, const PartitionParams& p,
                                              unsigned int t, unsigned int* pre,
                                              unsigned int* selected) {
    __shared__ __align__(16) unsigned int warp_all[XW_MAX_WARPS];
    const unsigned int local = threadIdx.x;
    const unsigned int bits = p.group_bits;
    const unsigned int groups = (p.tiles + (1u << bits) - 1u) >> bits;
    const unsigned int g = t >> bits;
    const unsigned int g_first = g << bits;
    unsigned int below = 0, all = 0;
    // Two variants (see the GLSL twin).
    if (OP != 4) {
#pragma unroll
        for (unsigned int q = 0; q < XW_SUM_TILES; ++q) {
            const unsigned int j = local + q * BLOCK;
            const unsigned int c = j < p.tiles ? counts[j] : 0u;
            all += c;
            if (j < t) below += c;
        }
    } else {
#pragma unroll
        for (unsigned int q = 0; q < XW_SUM_TILES; ++q) {
            const unsigned int j = local + q * BLOCK;
            const unsigned int c = j < groups ? sums[j] : 0u;
            all += c;
            if (j < g) below += c;
            if (g_first + j < t) below += counts[g_first + j];
        }
    }
#pragma unroll
    for (unsigned int o = XW_WARP / 2; o > 0; o >>= 1) {
        below += __shfl_xor_sync(XW_FULL_MASK, below, o);
        all += __shfl_xor_sync(XW_FULL_MASK, all, o);
    }
    __syncthreads();
    if (local % XW_WARP == 0) {
        warp_counts[local / XW_WARP] = below;
        warp_all[local / XW_WARP] = all;
    }
    __syncthreads();
    *pre = 0;
    *selected = 0;
    for (unsigned int s = 0; s < BLOCK / XW_WARP; ++s) {
        *pre += warp_counts[s];
        *selected += warp_all[s];
    }
}

// Loads tile t's elements of this thread into v (0 past the input) and returns their pass bits
// (xw_kept_bits); *count gets the warp's passing elements, *first the thread's first element.
__device__ __forceinline__ unsigned int xw_tile_kept(const XW_T* __restrict__ src,
                                                     const PartitionParams& p, unsigned int t,
                                                     XW_T (&v)[ITEMS], unsigned int* first,
                                                     unsigned int* count) {
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
    *first = t * (BLOCK * ITEMS) + warp * XW_WARP * ITEMS + lane;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int i = *first + j * XW_WARP;
        v[j] = i < p.n ? src[i] : XW_T(0);
    }
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
    // The predicate's code is uniform: one branch here instead of one per element.
    switch (p.pred) {
    case 0: return xw_kept_bits(0u, v, *first, p, a, b, count);
    case 1: return xw_kept_bits(1u, v, *first, p, a, b, count);
    case 2: return xw_kept_bits(2u, v, *first, p, a, b, count);
    case 3: return xw_kept_bits(3u, v, *first, p, a, b, count);
    case 4: return xw_kept_bits(4u, v, *first, p, a, b, count);
    case 5: return xw_kept_bits(5u, v, *first, p, a, b, count);
    default: return xw_kept_bits(p.pred, v, *first, p, a, b, count);
    }
}

// GROUPS (OP 3): the tiles of group g (the block), one after another: each tile's count, and
// their sum (sums[g]); 60 registers where COUNT has 40 (`int`), rolled or not. Every thread
// calls it.
__device__ __forceinline__ void xw_count_group(const XW_T* __restrict__ src, unsigned int* counts,
                                               unsigned int* sums, unsigned int* warp_counts,
                                               const PartitionParams& p, unsigned int g) {
    const unsigned int first_tile = g << p.group_bits;
    const unsigned int end = min(p.tiles, first_tile + (1u << p.group_bits));
    unsigned int sum = 0;
#pragma unroll 1
    for (unsigned int u = first_tile; u < end; ++u) {
        XW_T v[ITEMS];
        unsigned int first, count;
        xw_tile_kept(src, p, u, v, &first, &count);
        if (threadIdx.x % XW_WARP == 0) warp_counts[threadIdx.x / XW_WARP] = count;
        __syncthreads();
        unsigned int c = 0;
        for (unsigned int s = 0; s < BLOCK / XW_WARP; ++s) c += warp_counts[s];
        __syncthreads();  // warp_counts is read before the next tile writes it
        if (threadIdx.x == 0) counts[u] = c;
        sum += c;
    }
    if (threadIdx.x == 0) sums[g] = sum;
}

// ONE: tile j's passing count, counted here from the input (the fallback) and published as its
// owner publishes it. warp_counts is free (every thread has read it). Every thread calls it.
__device__ __noinline__ void xw_count_tile(const XW_T* __restrict__ src, unsigned int* states,
                                           unsigned int* warp_counts, const PartitionParams& p,
                                           unsigned int j) {
    XW_T w[ITEMS];
    unsigned int first, count;
    xw_tile_kept(src, p, j, w, &first, &count);
    if (threadIdx.x % XW_WARP == 0) warp_counts[threadIdx.x / XW_WARP] = count;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int c = 0;
        for (unsigned int s = 0; s < BLOCK / XW_WARP; ++s) c += warp_counts[s];
        *(volatile unsigned int*)&states[j] = XW_STATE_DONE | c;
    }
    __syncthreads();  // warp_counts is read before the next round writes it
}

// ONE: tile t's offset among the passing elements (*pre, the tiles before it) and every tile's
// (*selected), from the tile states; then the states' clearing by the last tile done (its
// ticket, states[tiles]: the done count, a fence before it and after it). Every thread calls it.
__device__ __forceinline__ void xw_one_totals(const XW_T* __restrict__ src, unsigned int* states,
                                              unsigned int* warp_counts, const PartitionParams& p,
                                              unsigned int t, unsigned int* pre,
                                              unsigned int* selected) {
    __shared__ unsigned int s_flag;
    __shared__ __align__(16) unsigned int warp_all[XW_MAX_WARPS];
    const unsigned int local = threadIdx.x;
    unsigned int below = 0, all = 0, pending = 0;
#pragma unroll
    for (unsigned int q = 0; q < XW_ONE_TILES; ++q) {
        if (local + q * BLOCK < p.tiles) pending |= 1u << q;
    }
    if (local == 0) s_flag = 0;
    __syncthreads();
    // The thread's polls of unpublished states over the whole wait (see the GLSL twin).
    unsigned int budget = p.spin;
    for (;;) {
#pragma unroll
        for (unsigned int q = 0; q < XW_ONE_TILES; ++q) {
            const unsigned int j = local + q * BLOCK;
            if (pending & (1u << q)) {
                for (;;) {
                    const unsigned int w = *(const volatile unsigned int*)&states[j];
                    if (w != 0) {
                        const unsigned int c = w & ~XW_STATE_DONE;
                        all += c;
                        if (j < t) below += c;
                        pending &= ~(1u << q);
                        break;
                    }
                    if (budget == 0) break;
                    --budget;
                }
                if (pending & (1u << q)) atomicMax(&s_flag, j + 1);
            }
        }
        __syncthreads();
        const unsigned int stuck = s_flag;
        __syncthreads();
        if (stuck == 0) break;
        if (local == 0) s_flag = 0;
        xw_count_tile(src, states, warp_counts, p, stuck - 1);
    }
#pragma unroll
    for (unsigned int o = XW_WARP / 2; o > 0; o >>= 1) {
        below += __shfl_xor_sync(XW_FULL_MASK, below, o);
        all += __shfl_xor_sync(XW_FULL_MASK, all, o);
    }
    if (local % XW_WARP == 0) {
        warp_counts[local / XW_WARP] = below;
        warp_all[local / XW_WARP] = all;
    }
    // The count of tiles done reading the states: the last one zeroes them again.
    if (local == 0) {
        __threadfence();
        s_flag = atomicAdd(&states[p.tiles], 1u) + 1u == p.tiles;
    }
    __syncthreads();
    *pre = 0;
    *selected = 0;
    for (unsigned int s = 0; s < BLOCK / XW_WARP; ++s) {
        *pre += warp_counts[s];
        *selected += warp_all[s];
    }
    if (s_flag) {
        __threadfence();
        for (unsigned int i = local; i <= p.tiles; i += BLOCK) states[i] = 0;
    }
}

// ONE at four blocks an SM: the host counts on that many being resident (src/partition.rs).
#if OP == 2
#define XW_PARTITION_BOUNDS __launch_bounds__(BLOCK, 4)
#else
#define XW_PARTITION_BOUNDS __launch_bounds__(BLOCK)
#endif
extern "C" __global__ XW_PARTITION_BOUNDS void partition(
    const XW_T* __restrict__ src, XW_T* __restrict__ dst, unsigned int* counts,
    unsigned int* prefix, unsigned long long* __restrict__ total, PartitionParams p) {
    __shared__ __align__(16) unsigned int warp_counts[XW_MAX_WARPS];
    __shared__ XW_T stage[BLOCK * ITEMS];
    const unsigned int t = (unsigned int)xw_group();
    const unsigned int local = threadIdx.x;
    if ((OP == 1 || OP == 4) && p.tiles == 0 && t == 0 && local == 0) *total = 0ull;
    // Whole blocks leave together, so __syncthreads below is reached by all.
#if OP == 3
    if ((t << p.group_bits) < p.tiles) xw_count_group(src, counts, prefix, warp_counts, p, t);
#elif OP == 0 || OP == 1 || OP == 2 || OP == 4
    if (t >= p.tiles) return;
    const unsigned int lane = local % XW_WARP;
    const unsigned int warp = local / XW_WARP;
    const unsigned int tile = BLOCK * ITEMS;
    XW_T v[ITEMS];
    unsigned int first, count;
    const unsigned int kept = xw_tile_kept(src, p, t, v, &first, &count);
    if (lane == 0) warp_counts[warp] = count;
    __syncthreads();
    unsigned int below = 0, tile_count = 0;
    for (unsigned int w = 0; w < BLOCK / XW_WARP; ++w) {
        const unsigned int c = warp_counts[w];
        if (w < warp) below += c;
        tile_count += c;
    }
#if OP == 0
    if (local == 0) counts[t] = tile_count;
#else
#if OP == 2
    if (local == 0) *(volatile unsigned int*)&counts[t] = XW_STATE_DONE | tile_count;
#endif
    // The element of step j sits at place q = run + j * 32 + lane of the tile, with `at`
    // passing elements of the tile before it.
    const unsigned int run = warp * XW_WARP * ITEMS;
    const unsigned int below_lane = (1u << lane) - 1u;
    unsigned int at = below;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool pass = (kept >> j) & 1u;
        const unsigned int ballot = __ballot_sync(XW_FULL_MASK, pass);
        const unsigned int r = at + __popc(ballot & below_lane);
        const unsigned int q = run + j * XW_WARP + lane;
        if (first + j * XW_WARP < p.n) stage[pass ? r : tile_count + q - r] = v[j];
        at += __popc(ballot);
    }
#if OP == 2
    // Every thread has read warp_counts above (the ranking's loop lies between).
    unsigned int pre, selected;
    xw_one_totals(src, counts, warp_counts, p, t, &pre, &selected);
#else
    unsigned int pre, selected;
    if (OP == 4 || p.scan != XW_SCAN_LAUNCH) {
        xw_sum_counts(counts, prefix, warp_counts, p, t, &pre, &selected);
    } else {
        pre = prefix[t];
        selected = prefix[p.tiles - 1] + counts[p.tiles - 1];
    }
#endif
    if (t == 0 && local == 0) *total = selected;
    __syncthreads();
    const unsigned int tile_first = t * tile;
    const unsigned int len = min(tile, p.n - tile_first);
    // The tile's failing elements start after every passing element and the failing elements
    // of the tiles before it (tile_first - pre of them).
    const unsigned int fail_first = selected + tile_first - pre;
    for (unsigned int i = local; i < len; i += BLOCK) {
        dst[i < tile_count ? pre + i : fail_first + (i - tile_count)] = stage[i];
    }
#endif
#else
#error "unknown OP"
#endif
}
