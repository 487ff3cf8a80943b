// Stream compaction, one pass over the input, with CUDA's own intrinsics; the twin of
// shaders/compact.comp, whose header describes the steps (OP) of the plan in src/compact.rs,
// the tile layout and the tile states: 0 RESET, 1 UNORDERED, 2 STABLE, 3 ACCUMULATE.
//
// A tile is blockDim.x * ITEMS consecutive elements; warp w owns the w-th run of 32 * ITEMS of
// them and reads it in ITEMS coalesced steps. Per step __ballot_sync and __popc give every
// passing lane its rank in the warp's run; lane 0 puts the warp's count in shared memory.
// UNORDERED: thread 0, the tile's leader, does ONE atomicAdd per tile for the tile's count.
// STABLE: the tile's offset comes from decoupled look-back over a 32-tile window per step
// (warp 0, one state per lane, __ballot_sync for the nearest inclusive prefix); after `spin`
// polls of an unpublished predecessor the block counts that tile itself. The block always
// synchronises, so tail lanes stay and do not pass.
//
// The output pointer is a window of the output starting at element `base`; a chunk writes at
// total - base + ..., and only when total lies in base .. base + span (span 0: any).
//
// Variant constants: OP, ITEMS.

struct CompactParams {
    unsigned int n;        // elements in this chunk
    unsigned int pred;     // predicate code (xw_predicate)
    unsigned int a_lo;     // first operand, low and high word
    unsigned int a_hi;
    unsigned int b_lo;     // second operand (in_range's hi)
    unsigned int b_hi;
    unsigned int base_lo;  // output element the output pointer starts at, low and high word
    unsigned int base_hi;
    unsigned int span;     // the window this launch serves: total - base < span (0: any)
    unsigned int tiles;    // tiles in this chunk (RESET, ACCUMULATE: tile states to zero)
    unsigned int spin;     // polls of an unpublished predecessor before counting its tile here
    unsigned int pad0;
};

#include "predicate.cuh"

#define XW_MAX_WARPS 32  // warps of the largest block (1024 threads)

#define STATE_AGGREGATE (1u << 30)
#define STATE_INCLUSIVE (2u << 30)
#define STATE_VALUE (STATE_AGGREGATE - 1u)

// Where the chunk's output starts in the output window, if it starts in this launch's window.
// Every thread reads the same total, so leaving on `false` is uniform.
__device__ __forceinline__ bool xw_window_offset(const unsigned long long* total,
                                                 const CompactParams& p,
                                                 unsigned long long* offset) {
    const unsigned long long base = ((unsigned long long)p.base_hi << 32) | p.base_lo;
    const unsigned long long t = *total;
    *offset = t - base;
    return t >= base && (p.span == 0 || t - base < p.span);
}

__device__ __forceinline__ bool xw_passes(const XW_T* __restrict__ in, unsigned int i,
                                          const CompactParams& p, XW_T a, XW_T b) {
    return i < p.n && xw_predicate(in[i], p.pred, a, b);
}

// The passing elements of tile t of this chunk (every thread gets the count).
__device__ unsigned int xw_count_tile(const XW_T* __restrict__ in, unsigned int t,
                                      const CompactParams& p, unsigned int* warp_counts) {
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
    const unsigned int first = t * blockDim.x * ITEMS + warp * XW_WARP * ITEMS + lane;
    unsigned int count = 0;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        count += __popc(__ballot_sync(XW_FULL_MASK, xw_passes(in, first + j * XW_WARP, p, a, b)));
    }
    __syncthreads();  // warp_counts may still be read by the caller's previous round
    if (lane == 0) warp_counts[warp] = count;
    __syncthreads();
    unsigned int sum = 0;
    for (unsigned int w = 0; w < blockDim.x / XW_WARP; ++w) sum += warp_counts[w];
    return sum;
}

// The exclusive prefix of tile k > 0 of this chunk (every thread gets it).
__device__ unsigned int xw_look_back(const XW_T* __restrict__ in, unsigned int k,
                                     unsigned int* states, const CompactParams& p,
                                     unsigned int* warp_counts) {
    __shared__ int s_stalled;
    __shared__ unsigned int s_prefix;
    // Warp 0's running state: the values folded so far and the nearest tile not folded.
    unsigned int folded = 0;
    int top = (int)k - 1;
    for (;;) {
        if (threadIdx.x < XW_WARP) {
            const unsigned int lane = threadIdx.x;
            int stalled = -1;
            for (;;) {
                const int t = top - (int)lane;
                unsigned int s, limit, empty;
                bool any_inclusive;
                for (unsigned int poll = 0;; ++poll) {
                    // Tiles before the chunk count as an inclusive prefix of 0.
                    s = t >= 0 ? *(volatile unsigned int*)&states[t] : STATE_INCLUSIVE;
                    const unsigned int inclusive = __ballot_sync(XW_FULL_MASK, s >= STATE_INCLUSIVE);
                    any_inclusive = inclusive != 0;
                    limit = any_inclusive ? (unsigned int)(__ffs(inclusive) - 1) : XW_WARP - 1;
                    empty = __ballot_sync(XW_FULL_MASK, s == 0 && lane <= limit);
                    if (empty == 0 || poll >= p.spin) break;
                }
                if (empty != 0) {
                    stalled = top - (__ffs(empty) - 1);
                    break;
                }
                unsigned int x = lane <= limit ? (s & STATE_VALUE) : 0u;
#pragma unroll
                for (unsigned int d = 1; d < XW_WARP; d <<= 1) x += __shfl_xor_sync(XW_FULL_MASK, x, d);
                folded += x;
                if (any_inclusive) break;
                top -= XW_WARP;
            }
            if (lane == 0) {
                s_stalled = stalled;
                s_prefix = folded;
            }
        }
        __syncthreads();
        const int stalled = s_stalled;
        const unsigned int prefix = s_prefix;
        __syncthreads();
        if (stalled < 0) return prefix;
        // A predecessor that has published nothing after `spin` polls: count its tile here.
        const unsigned int c = xw_count_tile(in, (unsigned int)stalled, p, warp_counts);
        if (threadIdx.x == 0) {
            atomicMax(&states[stalled], STATE_AGGREGATE | c);
            __threadfence();
        }
        __syncthreads();
    }
}

extern "C" __global__ void compact(const XW_T* __restrict__ in, XW_T* __restrict__ out,
                                   unsigned long long* __restrict__ total,
                                   unsigned int* counter, unsigned int* states,
                                   CompactParams p) {
#if OP == 0 || OP == 3
    // RESET / ACCUMULATE.
    const unsigned long long i = xw_group() * blockDim.x + threadIdx.x;
    if (i < p.tiles) states[i] = 0;
    if (i != 0) return;
#if OP == 0
    *total = 0;
#else
    *total += counter[0];
#endif
    counter[0] = 0;
    counter[1] = 0;
#elif OP == 1 || OP == 2
    __shared__ unsigned int warp_counts[XW_MAX_WARPS];
    __shared__ unsigned int s_word;
    // Whole blocks leave together, so __syncthreads below is reached by all.
    if (xw_group() >= p.tiles) return;
    unsigned long long out0;
    if (!xw_window_offset(total, p, &out0)) return;
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
    unsigned int t = (unsigned int)xw_group();
#if OP == 2
    // Tiles are numbered in the order blocks start, so a tile's predecessors have.
    if (threadIdx.x == 0) s_word = atomicAdd(&counter[1], 1u);
    __syncthreads();
    t = s_word;
    __syncthreads();
#endif
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
    const unsigned int first = t * blockDim.x * ITEMS + warp * XW_WARP * ITEMS + lane;
    const unsigned int below_lane = (1u << lane) - 1u;
    XW_T v[ITEMS];
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int i = first + j * XW_WARP;
        v[j] = i < p.n ? in[i] : XW_T(0);
    }
    // Bit j of `kept`: the element of step j passes (the ranks are recomputed from it at the
    // scatter, which costs a ballot per step and saves a register per step).
    unsigned int kept = 0, count = 0;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int i = first + j * XW_WARP;
        const bool pass = i < p.n && xw_predicate(v[j], p.pred, a, b);
        kept |= (unsigned int)pass << j;
        count += __popc(__ballot_sync(XW_FULL_MASK, pass));
    }
    // The warp leaders combine their counts in shared memory.
    if (lane == 0) warp_counts[warp] = count;
    __syncthreads();
    unsigned int below = 0, tile_count = 0;
    for (unsigned int w = 0; w < blockDim.x / XW_WARP; ++w) {
        const unsigned int c = warp_counts[w];
        if (w < warp) below += c;
        tile_count += c;
    }
    unsigned int tile_base;
#if OP == 1
    // ONE atomic per tile, by the tile's leader; the base meets the tile in shared memory.
    if (threadIdx.x == 0 && tile_count != 0) s_word = atomicAdd(&counter[0], tile_count);
    __syncthreads();
    tile_base = s_word;
#else
    tile_base = 0;
    if (t == 0) {
        if (threadIdx.x == 0) atomicMax(&states[t], STATE_INCLUSIVE | tile_count);
    } else {
        if (threadIdx.x == 0) atomicMax(&states[t], STATE_AGGREGATE | tile_count);
        tile_base = xw_look_back(in, t, states, p, warp_counts);
        if (threadIdx.x == 0) atomicMax(&states[t], STATE_INCLUSIVE | (tile_base + tile_count));
    }
    if (threadIdx.x == 0 && t + 1 == p.tiles) counter[0] = tile_base + tile_count;
#endif
    XW_T* const dst = out + out0 + tile_base + below;
    unsigned int rank = 0;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool pass = (kept >> j) & 1u;
        const unsigned int ballot = __ballot_sync(XW_FULL_MASK, pass);
        if (pass) dst[rank + __popc(ballot & below_lane)] = v[j];
        rank += __popc(ballot);
    }
#else
#error "unknown OP"
#endif
}
