// Stream compaction by warp-aggregated atomics with CUDA's own intrinsics; the twin of
// shaders/compact.comp, whose header describes the steps (OP) of the plan in src/compact.rs:
//   0 RESET, 1 UNORDERED, 2 TILE_COUNT, 3 TILE_SCAN, 4 SCATTER, 5 ACCUMULATE.
//
// UNORDERED is the leader-elected enqueue: the warp's lanes holding an element are taken with
// __ballot_sync, the tail lanes return, the active lanes ballot the predicate, the leader
// (lowest active lane) does ONE atomicAdd for the warp's __popc(ballot) and __shfl_sync
// broadcasts the base; each passing lane writes at total + base + __popc(ballot & lanes below).
// The stable steps synchronise whole blocks, so there the tail lanes stay and do not pass.
//
// The output pointer is a window of the output starting at element `base`; a chunk writes at
// total - base + ..., and only when total lies in base .. base + span (span 0: any).
//
// Variant constant: OP.

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
    unsigned int tiles;    // TILE_SCAN: tiles in this chunk
    unsigned int pad0;
    unsigned int pad1;
};

#include "predicate.cuh"

// ---- the kernel ----

#define XW_MAX_WARPS 32  // warps of the largest block (1024 threads)

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

extern "C" __global__ void compact(const XW_T* __restrict__ in, XW_T* __restrict__ out,
                                   unsigned long long* __restrict__ total,
                                   unsigned int* __restrict__ counter,
                                   unsigned int* __restrict__ tiles, CompactParams p) {
#if OP == 0 || OP == 5
    // RESET / ACCUMULATE: one thread.
    if (xw_group() != 0 || threadIdx.x != 0) return;
#if OP == 0
    *total = 0;
#else
    *total += *counter;
#endif
    *counter = 0;
#elif OP == 3
    // TILE_SCAN: one block scans all tile counts, blockDim.x at a time, by warp shuffles.
    __shared__ unsigned int warp_sums[XW_MAX_WARPS];
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
    const unsigned int warps = blockDim.x / XW_WARP;
    unsigned int running = 0;
    for (unsigned int base = 0; base < p.tiles; base += blockDim.x) {
        const unsigned int t = base + threadIdx.x;
        const unsigned int c = t < p.tiles ? tiles[t] : 0u;
        unsigned int x = c;
#pragma unroll
        for (unsigned int d = 1; d < XW_WARP; d <<= 1) {
            const unsigned int y = __shfl_up_sync(XW_FULL_MASK, x, d);
            if (lane >= d) x += y;
        }
        if (lane == XW_WARP - 1) warp_sums[warp] = x;
        __syncthreads();
        if (warp == 0) {
            unsigned int s = lane < warps ? warp_sums[lane] : 0u;
#pragma unroll
            for (unsigned int d = 1; d < XW_WARP; d <<= 1) {
                const unsigned int y = __shfl_up_sync(XW_FULL_MASK, s, d);
                if (lane >= d) s += y;
            }
            warp_sums[lane] = s;
        }
        __syncthreads();
        const unsigned int below = warp > 0 ? warp_sums[warp - 1] : 0u;
        if (t < p.tiles) tiles[t] = running + below + x - c;
        running += warp_sums[warps - 1];
        // The next round overwrites warp_sums.
        __syncthreads();
    }
    if (threadIdx.x == 0) *counter = running;
#elif OP == 1 || OP == 2 || OP == 4
    const unsigned long long first = xw_group() * blockDim.x;
    // Whole blocks past the end leave together, so __syncthreads below is reached by all.
    if (first >= p.n) return;
#if OP != 2
    unsigned long long out0;
    if (!xw_window_offset(total, p, &out0)) return;
#endif
    const unsigned long long i = first + threadIdx.x;
    const unsigned int lane = threadIdx.x % XW_WARP;
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
#if OP == 1
    // UNORDERED: the leader-elected, warp-aggregated enqueue.
    const unsigned int active = __ballot_sync(XW_FULL_MASK, i < p.n);
    if (i >= p.n) return;
    const XW_T v = in[i];
    const bool pass = xw_predicate(v, p.pred, a, b);
    const unsigned int ballot = __ballot_sync(active, pass);
    const int leader = __ffs(active) - 1;
    unsigned int base = 0;
    if ((int)lane == leader && ballot != 0) base = atomicAdd(counter, __popc(ballot));
    base = __shfl_sync(active, base, leader);
    if (pass) out[out0 + base + __popc(ballot & ((1u << lane) - 1u))] = v;
#else
    // TILE_COUNT / SCATTER: one tile per block; the tail lanes stay (the block synchronises)
    // and do not pass.
    __shared__ unsigned int warp_counts[XW_MAX_WARPS];
    const unsigned int warp = threadIdx.x / XW_WARP;
    const bool active = i < p.n;
    const XW_T v = active ? in[i] : XW_T(0);
    const bool pass = active && xw_predicate(v, p.pred, a, b);
    const unsigned int ballot = __ballot_sync(XW_FULL_MASK, pass);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
#if OP == 2
    if (threadIdx.x == 0) {
        unsigned int sum = 0;
        for (unsigned int k = 0; k < blockDim.x / XW_WARP; ++k) sum += warp_counts[k];
        tiles[xw_group()] = sum;
    }
#else
    unsigned long long offset = out0 + tiles[xw_group()];
    for (unsigned int k = 0; k < warp; ++k) offset += warp_counts[k];
    if (pass) out[offset + __popc(ballot & ((1u << lane) - 1u))] = v;
#endif
#endif
#else
#error "unknown OP"
#endif
}
