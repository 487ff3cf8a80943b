// Stream compaction, one pass over the input, with CUDA's own intrinsics; the twin of
// shaders/compact.glsl, whose header describes the steps (OP) of the plan in src/compact.rs,
// the tile layout, the tile states and how a chunk hands its end to the next: 0 RESET,
// 1 UNORDERED, 2 STABLE.
//
// A tile is blockDim.x * ITEMS consecutive elements; warp w owns the w-th run of 32 * ITEMS of
// them and reads it in ITEMS coalesced steps. Per step __ballot_sync and __popc give every
// passing lane its rank in the warp's run; lane 0 puts the warp's count in shared memory.
// UNORDERED: thread 0, the tile's leader, does ONE 64-bit atomicAdd per tile: the tile's count
// to the low word, one tile done to the high word; the block whose answer says every other
// tile is done ends the chunk (its low word holds their counts).
// STABLE: the loads of tile blockIdx are in flight while the block takes its ticket (blocks
// start in order, so the ticket is almost always that tile; otherwise it loads its own); the
// tile's offset comes from decoupled look-back over a 32-tile window per step
// (warp 0, one state per lane, __ballot_sync for the nearest inclusive prefix); after `spin`
// polls of an unpublished predecessor the block counts that tile itself. The block always
// synchronises, so tail lanes stay and do not pass.
//
// The output pointer is a window of the output starting at element `window`; a chunk writes at
// its base - window + ..., and only when its base lies in window .. window + span (span 0: any).
//
// The passing elements of a tile go to shared memory first (at their place in the tile's output
// run) and then out in coalesced stores, BLOCK consecutive elements per step: the tile's output
// run is contiguous in both orders.
//
// EARLY (1, not with LENGTHS): the passing elements go to shared memory before the tile's base
// is known (src/compact.rs: stable tiles above 16 elements a thread).
//
// Variant constants: OP (3: LENGTHS's last step), ITEMS, BLOCK (threads per block), LENGTHS (1,
// with HEADS: run-length encoding's lengths too), SELF_CLEARING (1: launches with
// self_clearing set, whose code only this variant has), HEADS (1: unique's predicate, "differs
// from the element before it", in place of `pred`; the input pointer starts `shift` elements
// before the chunk, whose first element's predecessor it is), EPOCHS (1: the stable step of
// one chunk and one window with its tile states in the device's epochs buffer, see below; only
// this variant has that code), CARRY (1, with LENGTHS, one chunk and one window: each tile
// closes the run before its first head itself, see xw_look_back; no last launch).

struct CompactParams {
    unsigned int n;        // elements in this chunk
    unsigned int pred;     // predicate code (xw_predicate)
    unsigned int a_lo;     // first operand, low and high word
    unsigned int a_hi;
    unsigned int b_lo;     // second operand (in_range's hi)
    unsigned int b_hi;
    unsigned int window_lo;  // output element the output pointer starts at, low and high word
    unsigned int window_hi;
    unsigned int span;     // the window this launch serves: base - window < span (0: any)
    unsigned int tiles;    // tiles in this chunk (RESET: tile states to zero)
    unsigned int spin;     // polls of an unpublished predecessor before counting its tile here
    unsigned int slot;     // the slot holding this chunk's base (0 or 1)
    unsigned int state0;   // this chunk's first tile state
    unsigned int self_clearing;  // nonzero: words of the counters buffer, no RESET (see the Vulkan twin)
    unsigned int shift;    // the input binding starts this many elements before the chunk
    unsigned int close;    // LENGTHS, SELF_CLEARING: the last block closes the runs (no OP 3)
    unsigned int epoch_wrap;   // EPOCHS: the number of epochs (after the last comes 0)
    unsigned int epoch_tiles;  // EPOCHS: the states `states` holds (a multiple of XW_SCRUB)
};

#include "predicate.cuh"

#define XW_MAX_WARPS 32  // warps of the largest block (1024 threads)
#define NO_HEAD 0xffffffffu  // LENGTHS: no head (a warp's, a tile's)
#define XW_CARRY (CARRY && LENGTHS && HEADS)  // the table compiles CARRY with every variant

#define STATE_AGGREGATE (1u << 30)
#define STATE_INCLUSIVE (2u << 30)
#define STATE_VALUE (STATE_AGGREGATE - 1u)

// EPOCHS (the twin of the scans' epochs, cuda/scan_device.cu): the tile states are 64-bit
// words of the device's epochs buffer (src/device.rs, Device::epochs), bound from its first
// state; `counter` is its header: words 0 and 1 the tile ticket and the epoch as one 64-bit
// word, word 2 the first state the next launch zeroes. A state's high word is the epoch of the
// launch that published it times 4 plus the status (1 aggregate, 2 inclusive prefix), its low
// word the value, so a state of an earlier launch reads as unpublished and none is zeroed
// before or after a launch. Each tile takes its ticket and the launch's epoch in one atomic;
// the tile that takes the last ticket sets the word to the next epoch (modulo p.epoch_wrap) and
// ticket 0 at once, and zeroes the XW_SCRUB states from word 2 on that this launch does not
// use, moving that place on, so no state still carries a tag when the tag comes back. A tile's
// own first publication replaces whatever an earlier launch left by an exchange (its tag may be
// larger once the epochs have wrapped), its inclusive prefix takes the maximum, and a fallback
// publishes another tile's aggregate only over a state of an earlier launch (a compare and swap).
// One chunk, one window: the base is 0 and the last ticket writes only the total.
#define XW_SCRUB 1024u
#if EPOCHS
// The launch's epoch times 4, set by thread 0 before the first barrier; read from shared
// memory at each use.
__shared__ unsigned int xw_ceb;
#define XW_EB (*(volatile unsigned int*)&xw_ceb)

// A state as the look-back reads it: the status in bits 31..30 (0 for another launch's), the
// value below.
__device__ __forceinline__ unsigned int xw_read_state(const unsigned int* states, int t) {
    const unsigned long long w = *((const volatile unsigned long long*)states + t);
    const unsigned int f = (unsigned int)(w >> 32) - XW_EB;
    return f - 1u < 2u ? (f << 30) | (unsigned int)w : 0u;
}

__device__ __forceinline__ unsigned long long xw_tagged(unsigned int state) {
    return ((unsigned long long)((state >> 30) + XW_EB) << 32) | (state & STATE_VALUE);
}

// Tile t's own publication of `state` (status bits and value): the first by an exchange.
__device__ __forceinline__ void xw_publish(unsigned int* states, unsigned int t,
                                           unsigned int state, bool first) {
    unsigned long long* const at = (unsigned long long*)states + t;
    if (first) {
        atomicExch(at, xw_tagged(state));
    } else {
        atomicMax(at, xw_tagged(state));
    }
}

// A fallback's aggregate of tile t, over a state of an earlier launch only: one compare and
// swap, since a swap that fails found a publication of this launch (only this launch's tiles
// write its states), which the look-back's next poll reads.
__device__ __forceinline__ void xw_publish_for(unsigned int* states, unsigned int t,
                                               unsigned int state) {
    unsigned long long* const at = (unsigned long long*)states + t;
    const unsigned long long old = *(volatile unsigned long long*)at;
    if ((unsigned int)(old >> 32) - XW_EB - 1u >= 2u) atomicCAS(at, old, xw_tagged(state));
}
#else
__device__ __forceinline__ unsigned int xw_read_state(const unsigned int* states, int t) {
    return *(const volatile unsigned int*)&states[t];
}
__device__ __forceinline__ void xw_publish(unsigned int* states, unsigned int t,
                                           unsigned int state, bool) {
    atomicMax(&states[t], state);
}
__device__ __forceinline__ void xw_publish_for(unsigned int* states, unsigned int t,
                                               unsigned int state) {
    atomicMax(&states[t], state);
}
#endif

// Where the chunk's output starts in the output window, if it starts in this launch's window.
// Every thread reads the same base, so leaving on `false` is uniform.
__device__ __forceinline__ bool xw_window_offset(unsigned long long base, const CompactParams& p,
                                                 unsigned long long* offset) {
    const unsigned long long window = ((unsigned long long)p.window_hi << 32) | p.window_lo;
    *offset = base - window;
    return base >= window && (p.span == 0 || base - window < p.span);
}

// The counter words, each on a 128-byte line of its own (measured faster on an H200; see
// shaders/compact.glsl): the chunk's count and, in the word after it, its tiles done (one
// 64-bit word); its tile tickets; and at C_BASE + C_LINE * s (low word) and the word after it
// the base of the chunks of slot s. The line between tickets and bases is the Vulkan twin's
// done counter on devices without 64-bit atomics.
#define C_LINE 32u
#define C_COUNT 0u
#define C_TICKET C_LINE
#define C_DONE (2u * C_LINE)  // STABLE with self_clearing: tiles finished
#define C_BASE (3u * C_LINE)

// The base of the chunks of slot s.
__device__ __forceinline__ unsigned long long xw_base(const unsigned int* counter, unsigned int s) {
    const unsigned int at = C_BASE + C_LINE * s;
    return ((unsigned long long)counter[at + 1] << 32) | counter[at];
}

// The end of a chunk: total and the next chunk's base become this chunk's base + count.
__device__ __forceinline__ void xw_finish_chunk(unsigned long long* total, unsigned int* counter,
                                                const CompactParams& p, unsigned long long base,
                                                unsigned int count) {
    const unsigned long long end = base + count;
    *total = end;
#if SELF_CLEARING || EPOCHS
    return;  // the only chunk: no next base, the word stays zero
#endif
    const unsigned int next = C_BASE + C_LINE * (p.slot ^ 1u);
    counter[next] = (unsigned int)end;
    counter[next + 1] = (unsigned int)(end >> 32);
}

// Loads the thread's ITEMS elements of tile t (a whole tile needs no bounds checks).
__device__ __forceinline__ void xw_load_tile(const XW_T* __restrict__ in, unsigned int t,
                                             const CompactParams& p, XW_T (&v)[ITEMS]) {
    const unsigned int first =
        t * blockDim.x * ITEMS + threadIdx.x / XW_WARP * XW_WARP * ITEMS + threadIdx.x % XW_WARP;
    if ((t + 1) * blockDim.x * ITEMS <= p.n) {
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) v[j] = in[first + j * XW_WARP];
    } else {
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) {
            const unsigned int i = first + j * XW_WARP;
            v[j] = i < p.n ? in[i] : XW_T(0);
        }
    }
}

// Whether two elements have the same bits (a NaN equals only a NaN of the same payload, and
// +0.0 is not -0.0).
__device__ __forceinline__ bool xw_same_bits(XW_T x, XW_T y) {
    unsigned long long bx = 0, by = 0;
    memcpy(&bx, &x, sizeof(XW_T));
    memcpy(&by, &y, sizeof(XW_T));
    return bx == by;
}

// `in` points at the chunk's first element; with HEADS, element -1 is the one before the chunk
// where `shift` is nonzero.
__device__ __forceinline__ bool xw_passes(const XW_T* __restrict__ in, unsigned int i,
                                          const CompactParams& p, XW_T a, XW_T b) {
#if HEADS
    return i < p.n && ((i == 0 && p.shift == 0) || !xw_same_bits(in[i], in[(int)i - 1]));
#else
    return i < p.n && xw_predicate(in[i], p.pred, a, b);
#endif
}

// The passing elements of tile t of this chunk (every thread gets the count); CARRY: *last
// gets the last one's place in the chunk (NO_HEAD: none).
__device__ unsigned int xw_count_tile(const XW_T* __restrict__ in, unsigned int t,
                                      const CompactParams& p, unsigned int* warp_counts,
                                      unsigned int* last) {
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
    const unsigned int first = t * blockDim.x * ITEMS + warp * XW_WARP * ITEMS + lane;
    unsigned int count = 0;
#if XW_CARRY
    __shared__ unsigned int s_last;  // the last passing element's place plus one (0: none)
    unsigned int mine = 0;
#endif
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int ballot =
            __ballot_sync(XW_FULL_MASK, xw_passes(in, first + j * XW_WARP, p, a, b));
        count += __popc(ballot);
#if XW_CARRY
        if (ballot != 0) mine = first - lane + j * XW_WARP + 32u - __clz(ballot);
#endif
    }
    __syncthreads();  // warp_counts may still be read by the caller's previous round
#if XW_CARRY
    if (threadIdx.x == 0) s_last = 0;
    __syncthreads();
    if (lane == 0 && mine != 0) atomicMax(&s_last, mine);
#endif
    if (lane == 0) warp_counts[warp] = count;
    __syncthreads();
    unsigned int sum = 0;
    for (unsigned int w = 0; w < blockDim.x / XW_WARP; ++w) sum += warp_counts[w];
#if XW_CARRY
    *last = s_last - 1u;  // 0 - 1: NO_HEAD
#else
    *last = NO_HEAD;
#endif
    return sum;
}

// The exclusive prefix of tile k > 0 of this chunk (every thread gets it).
//
// CARRY (run-length encoding, one chunk): `last` holds one word a tile, the place of the last
// head at or before it, written before the tile's state says so: a tile with heads writes its
// own last head before its aggregate, a tile without any the word it found here before its
// inclusive prefix. So the nearest tile of the walk whose state counts a head (an aggregate
// above zero, or the inclusive prefix, which counts tile 0's first element) holds the last
// head before tile k in its word, read once the state is seen; *before gets it. Tile k's
// first head then closes the run before it (its length, the distance from that head), and no
// launch after the pass is needed. A predecessor counted here for the fallback gets its word
// too.
__device__ unsigned int xw_look_back(const XW_T* __restrict__ in, unsigned int k,
                                     unsigned int* states, const CompactParams& p,
                                     unsigned int* warp_counts, unsigned int* last,
                                     unsigned int* before) {
    __shared__ int s_stalled;
    __shared__ unsigned int s_prefix;
    __shared__ unsigned int s_before;
    // Warp 0's running state: the values folded so far and the nearest tile not folded.
    unsigned int folded = 0;
    unsigned int found = NO_HEAD;  // CARRY: the last head before tile k, once a window had it
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
                    s = t >= 0 ? xw_read_state(states, t) : STATE_INCLUSIVE;
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
#if XW_CARRY
                const unsigned int has = __ballot_sync(XW_FULL_MASK, x != 0);
                if (found == NO_HEAD && has != 0) {
                    const unsigned int i = (unsigned int)__ffs(has) - 1;
                    unsigned int w = 0;
                    if (lane == i) {
                        // The state was seen: with the fence, the word written before it.
                        asm volatile("fence.acq_rel.gpu;" ::: "memory");
                        w = *(const volatile unsigned int*)&last[t];
                    }
                    found = __shfl_sync(XW_FULL_MASK, w, i);
                }
#endif
#pragma unroll
                for (unsigned int d = 1; d < XW_WARP; d <<= 1) x += __shfl_xor_sync(XW_FULL_MASK, x, d);
                folded += x;
                if (any_inclusive) break;
                top -= XW_WARP;
            }
            if (lane == 0) {
                s_stalled = stalled;
                s_prefix = folded;
                s_before = found;
            }
        }
        __syncthreads();
        const int stalled = s_stalled;
        const unsigned int prefix = s_prefix;
        *before = s_before;
        __syncthreads();
        if (stalled < 0) return prefix;
        // A predecessor that has published nothing after `spin` polls: count its tile here.
        unsigned int tile_last;
        const unsigned int c = xw_count_tile(in, (unsigned int)stalled, p, warp_counts, &tile_last);
        if (threadIdx.x == 0) {
            // CARRY: its last head, before its state (the tile writes the same word itself).
            if (XW_CARRY && c != 0) {
                *(volatile unsigned int*)&last[stalled] = tile_last;
                __threadfence();
            }
            xw_publish_for(states, (unsigned int)stalled, STATE_AGGREGATE | c);
            __threadfence();
        }
        __syncthreads();
    }
}

// Bit j: the element of step j of the thread's run (from `first`) passes predicate `code`;
// *count gets the warp's passing elements. Called with a constant code, the predicate's switch
// folds away.
__device__ __forceinline__ unsigned int xw_kept_bits(unsigned int code, const XW_T (&v)[ITEMS],
                                                     unsigned int first, bool whole,
                                                     const CompactParams& p, XW_T a, XW_T b,
                                                     unsigned int* count) {
    unsigned int kept = 0, c = 0;
    // EARLY (the stable kernel at 24 or 32 elements a thread, 64 registers): a ballot a step.
    // Elsewhere one butterfly sum of the lanes' bit counts, as the GLSL twin everywhere. H200
    // (NOTES.md, version 46): the butterfly made the unordered f32 kernel 4% faster at 2^26 to
    // 2^28 (48 -> 40 registers), and made the EARLY kernel spill 16-32 bytes and the stable
    // compaction of 2^28 4-8% slower.
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool pass = (whole || first + j * XW_WARP < p.n) && xw_predicate(v[j], code, a, b);
        kept |= (unsigned int)pass << j;
        if (EARLY) c += __popc(__ballot_sync(XW_FULL_MASK, pass));
    }
    if (!EARLY) {
        c = __popc(kept);
#pragma unroll
        for (unsigned int d = 1; d < XW_WARP; d <<= 1) c += __shfl_xor_sync(XW_FULL_MASK, c, d);
    }
    *count = c;
    return kept;
}

// The thread's passing elements at their places in the tile's output run (out_stage), from
// `at`, the count of the warps below the thread's (EARLY: before the tile's base is known).
__device__ __forceinline__ void xw_stage_tile(unsigned int kept, const XW_T (&v)[ITEMS],
                                              unsigned int at, XW_T* out_stage) {
    const unsigned int below_lane = (1u << (threadIdx.x % XW_WARP)) - 1u;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool pass = (kept >> j) & 1u;
        const unsigned int ballot = __ballot_sync(XW_FULL_MASK, pass);
        if (pass) out_stage[at + __popc(ballot & below_lane)] = v[j];
        at += __popc(ballot);
    }
}

// HEADS (unique's predicate): bit j is set where the element of step j differs in its bits from the element
// before it (or is the input's first): the heads of the runs of equal elements, which unique
// keeps. Lane l > 0's predecessor is lane l - 1's element of the same step, lane 0's the last
// lane's element of the step before, and at step 0 the element before the warp's run (loaded).
// One shuffle a step: the last lane offers its previous step's element instead of its own.
__device__ __forceinline__ unsigned int xw_head_bits(const XW_T* __restrict__ in,
                                                     const XW_T (&v)[ITEMS], unsigned int first,
                                                     bool whole, const CompactParams& p,
                                                     unsigned int* count, unsigned int* last_head) {
    const unsigned int lane = threadIdx.x % XW_WARP;
    const bool at_start = first == 0 && p.shift == 0;  // lane 0 of the input's first run
    XW_T before = v[0];
    if (lane == 0 && !at_start && first < p.n) before = in[(int)first - 1];
    unsigned int kept = 0, c = 0, last = NO_HEAD;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const XW_T offer = j > 0 && lane == XW_WARP - 1 ? v[j - 1] : v[j];
        const XW_T got = __shfl_sync(XW_FULL_MASK, offer, (lane + XW_WARP - 1) % XW_WARP);
        const XW_T prev = j == 0 && lane == 0 ? before : got;
        const bool valid = whole || first + j * XW_WARP < p.n;
        const bool pass = valid && ((j == 0 && at_start) || !xw_same_bits(v[j], prev));
        kept |= (unsigned int)pass << j;
        const unsigned int ballot = __ballot_sync(XW_FULL_MASK, pass);
        c += __popc(ballot);
        if (ballot != 0) last = first - lane + j * XW_WARP + 31 - __clz(ballot);
    }
    *count = c;
    *last_head = last;
    return kept;
}

// The run before each tile's first head ends there, and the last run at n; each of those runs'
// lengths holds its last head's position (the scatter's). Each run is one thread's, from
// `first` in steps of `stride`; with `zero` (the last block of a self-clearing pass, whose two
// words a tile lie in the counters buffer) they go back to zero, and the loads bypass L1 (the
// other blocks stored them in this launch).
__device__ void xw_close_runs(unsigned int* lengths, unsigned int* side,
                              unsigned long long* total, const CompactParams& p,
                              unsigned long long first, unsigned long long stride, bool zero) {
    for (unsigned long long g = first; g <= p.tiles; g += stride) {
        if (g < p.tiles) {
            const unsigned int r = __ldcg(&side[2 * g]);
            if (r != NO_HEAD && r > 0)
                lengths[r - 1] = __ldcg(&side[2 * g + 1]) - __ldcg(&lengths[r - 1]);
            if (zero) {
                side[2 * g] = 0;
                side[2 * g + 1] = 0;
            }
        } else {
            const unsigned int runs = (unsigned int)__ldcg(total);
            if (runs > 0) lengths[runs - 1] = p.n - __ldcg(&lengths[runs - 1]);
        }
    }
}

// Run-length encoding's stable pass of 4-byte keys in fewer registers than the default
// allocation (60 with SELF_CLEARING, 48 without): at most 48 (five blocks an SM instead of four)
// and 40 (six instead of five); 5-8% faster from 2^22 keys on an H100, no spills. The same
// bounds made the other stable variants spill and run slower (NOTES.md, version 26).
#if OP == 2 && XW_CARRY
// CARRY's pass (the runs closed by each tile, no last launch): NVRTC 13.0's default allocation.
#define XW_COMPACT_BOUNDS __launch_bounds__(BLOCK)
#elif OP == 2 && LENGTHS && XW_ELEM_BYTES == 4 && SELF_CLEARING
#define XW_COMPACT_BOUNDS __launch_bounds__(BLOCK, 5)
#elif OP == 2 && LENGTHS && XW_ELEM_BYTES == 4
#define XW_COMPACT_BOUNDS __launch_bounds__(BLOCK, 6)
#elif OP == 2 && HEADS && EPOCHS && XW_ELEM_BYTES == 4 && ITEMS == 32
// Unique's kernel of 32 elements a thread with its states tagged by epochs: 75 registers by
// default (three blocks an SM), 64 without spills within these bounds (four blocks), as
// without epochs. At 16 elements a thread the same (6 blocks, 40 registers) spills 32 bytes:
// 48 registers there. (From 2^25 keys both took 1.5-6% more time than without epochs on an
// H200, so unique takes epochs only up to 2048 tiles on CUDA: src/tuning.rs.)
#define XW_COMPACT_BOUNDS __launch_bounds__(BLOCK, 4)
#else
#define XW_COMPACT_BOUNDS __launch_bounds__(BLOCK)
#endif
extern "C" __global__ XW_COMPACT_BOUNDS void compact(const XW_T* __restrict__ in, XW_T* __restrict__ out,
                                   unsigned long long* __restrict__ total,
                                   unsigned int* counter, unsigned int* states,
                                   unsigned int* lengths, unsigned int* side,
                                   CompactParams p) {
#if OP == 3
    // LENGTHS (one launch after the chunk's; p.tiles its tiles, p.n its elements).
    xw_close_runs(lengths, side, total, p, xw_group() * blockDim.x + threadIdx.x, p.tiles + 1,
                  false);
#elif OP == 0
    // RESET: the total, the counters and the first chunk's base.
    const unsigned long long i = xw_group() * blockDim.x + threadIdx.x;
    if (i < p.tiles) states[i] = 0;
    if (i != 0) return;
    *total = 0;
    counter[C_COUNT] = 0;
    counter[C_COUNT + 1] = 0;
    counter[C_TICKET] = 0;
    counter[C_BASE] = 0;
    counter[C_BASE + 1] = 0;
#elif OP == 1 || OP == 2
    __shared__ unsigned int warp_counts[XW_MAX_WARPS];
    __shared__ unsigned int s_word;
    __shared__ unsigned int s_ticket;
#if SELF_CLEARING
    __shared__ unsigned int s_last;  // STABLE with self_clearing: the last to count itself done
#endif
    __shared__ XW_T out_stage[BLOCK * ITEMS];
#if LENGTHS
    __shared__ unsigned int warp_last[XW_MAX_WARPS];  // each warp's last head, or NO_HEAD
#endif
    // Whole blocks leave together, so __syncthreads below is reached by all.
    if (xw_group() >= p.tiles) return;
    const unsigned long long base = EPOCHS ? 0ull : xw_base(counter, p.slot);
    unsigned long long out0;
    if (!xw_window_offset(base, p, &out0)) return;
    states += p.state0;
#if HEADS
    in += p.shift;
#endif
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
    unsigned int t = (unsigned int)xw_group();
    XW_T v[ITEMS];
    xw_load_tile(in, t, p, v);
#if OP == 2
    // Tiles are numbered in the order blocks take a ticket, so a tile's predecessors have
    // started; the loads above are in flight meanwhile, and a block whose ticket is another
    // tile loads that one.
#if EPOCHS
    __shared__ unsigned int s_scrub;  // the last ticket's first state to zero, plus one
    if (threadIdx.x == 0) {
        unsigned long long* const word = (unsigned long long*)counter;
        const unsigned long long w = atomicAdd(word, 1ull);
        const unsigned int epoch = (unsigned int)(w >> 32);
        s_ticket = (unsigned int)w;
        xw_ceb = epoch << 2;
        s_scrub = 0;
        if ((unsigned int)w + 1u == p.tiles) {
            const unsigned int next = epoch + 1u >= p.epoch_wrap ? 0u : epoch + 1u;
            atomicExch(word, (unsigned long long)next << 32);
            const unsigned int at = counter[2];
            counter[2] = at + XW_SCRUB >= p.epoch_tiles ? 0u : at + XW_SCRUB;
            s_scrub = at + 1u;
        }
    }
    __syncthreads();
    if (s_scrub != 0) {
        for (unsigned int i = threadIdx.x; i < XW_SCRUB; i += BLOCK) {
            const unsigned int at = s_scrub - 1u + i;
            if (at >= p.tiles) ((unsigned long long*)states)[at] = 0ull;
        }
    }
#else
    if (threadIdx.x == 0) s_ticket = atomicAdd(&counter[C_TICKET], 1u);
    __syncthreads();
#endif
    t = s_ticket;
    if (t != (unsigned int)xw_group()) xw_load_tile(in, t, p, v);
#endif
    const XW_T a = xw_pred_operand(p.a_lo, p.a_hi);
    const XW_T b = xw_pred_operand(p.b_lo, p.b_hi);
    const unsigned int first = t * blockDim.x * ITEMS + warp * XW_WARP * ITEMS + lane;
    const bool whole = (t + 1) * blockDim.x * ITEMS <= p.n;
    const unsigned int below_lane = (1u << lane) - 1u;
    // Bit j of `kept`: the element of step j passes (the ranks are recomputed from it at the
    // scatter, which costs a ballot per step and saves a register per step).
    // The predicate's code (xw_predicate) is uniform: one branch here instead of one per
    // element.
    unsigned int kept, count, last_head = NO_HEAD;
#if HEADS
    kept = xw_head_bits(in, v, first, whole, p, &count, &last_head);
#else
    switch (p.pred) {
    case 0: kept = xw_kept_bits(0u, v, first, whole, p, a, b, &count); break;
    case 1: kept = xw_kept_bits(1u, v, first, whole, p, a, b, &count); break;
    case 2: kept = xw_kept_bits(2u, v, first, whole, p, a, b, &count); break;
    case 3: kept = xw_kept_bits(3u, v, first, whole, p, a, b, &count); break;
    case 4: kept = xw_kept_bits(4u, v, first, whole, p, a, b, &count); break;
    case 5: kept = xw_kept_bits(5u, v, first, whole, p, a, b, &count); break;
    default: kept = xw_kept_bits(p.pred, v, first, whole, p, a, b, &count); break;
    }
#endif
    // The warp leaders combine their counts in shared memory.
    if (lane == 0) warp_counts[warp] = count;
#if LENGTHS
    if (lane == 0) warp_last[warp] = last_head;
#endif
    __syncthreads();
    unsigned int below = 0, tile_count = 0;
    for (unsigned int w = 0; w < blockDim.x / XW_WARP; ++w) {
        const unsigned int c = warp_counts[w];
        if (w < warp) below += c;
        tile_count += c;
    }
    constexpr bool early = EARLY && !LENGTHS;
    if (early) xw_stage_tile(kept, v, below, out_stage);
    unsigned int tile_base;
#if OP == 1
    // ONE atomic per tile, by the tile's leader; the base meets the tile in shared memory. Its
    // high word is the tiles done before this one: the last tile's low word is the count of
    // all the others, so it ends the chunk (every other tile has added).
    if (threadIdx.x == 0) {
        unsigned long long* const count_done = (unsigned long long*)&counter[C_COUNT];
        const unsigned long long before = atomicAdd(count_done, (1ull << 32) | tile_count);
        s_word = (unsigned int)before;
        if ((unsigned int)(before >> 32) + 1 == p.tiles) {
            *count_done = 0;
            xw_finish_chunk(total, counter, p, base, (unsigned int)before + tile_count);
        }
    }
    __syncthreads();
    tile_base = s_word;
#else
    tile_base = 0;
    // CARRY: the last head before this tile (see xw_look_back), and the tile's own last.
    unsigned int before = NO_HEAD;
#if XW_CARRY
    unsigned int tile_last = NO_HEAD;
    for (unsigned int w = 0; w < blockDim.x / XW_WARP; ++w)
        if (warp_last[w] != NO_HEAD) tile_last = warp_last[w];
    if (threadIdx.x == 0 && tile_count != 0) {
        // Released by the fence to whoever reads the state published after it.
        *(volatile unsigned int*)&side[t] = tile_last;
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
    }
#endif
    if (t == 0) {
        if (threadIdx.x == 0) xw_publish(states, t, STATE_INCLUSIVE | tile_count, true);
    } else {
        if (threadIdx.x == 0) xw_publish(states, t, STATE_AGGREGATE | tile_count, true);
        tile_base = xw_look_back(in, t, states, p, warp_counts, side, &before);
#if XW_CARRY
        if (threadIdx.x == 0 && tile_count == 0) {
            *(volatile unsigned int*)&side[t] = before;
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
        }
#endif
        if (threadIdx.x == 0)
            xw_publish(states, t, STATE_INCLUSIVE | (tile_base + tile_count), false);
    }
    // With self_clearing: past its states (see the Vulkan twin), the tile counts itself done;
    // the round trip overlaps the scatter.
#if SELF_CLEARING
    if (threadIdx.x == 0 && !(LENGTHS && p.close)) {
        __threadfence();
        s_last = atomicAdd(&counter[C_DONE], 1u) + 1 == p.tiles;
    }
#endif
    // The last ticket: every block of the chunk has taken its own.
    if (threadIdx.x == 0 && t + 1 == p.tiles) {
        if (!EPOCHS) counter[C_TICKET] = 0;  // EPOCHS: the ticket is 0 again already
        xw_finish_chunk(total, counter, p, base, tile_base + tile_count);
    }
#endif
    unsigned int at = below;
#if LENGTHS && OP == 2
    // The head before the current step's lanes (the last of an earlier warp's run first); the
    // twin of the GLSL kernel's scatter: a head writes the length of the run before it at the
    // place before its own, the tile's last head its position at its own place, and tile t's
    // first head its global rank and position in side (NO_HEAD: no head).
    // CARRY: the head before the tile's first is `before`, and the tile's first head closes
    // its run; the last tile closes the input's last run (no head here: the one before).
    unsigned int prev_head = XW_CARRY ? before : NO_HEAD;
    for (unsigned int w = 0; w < warp; ++w)
        if (warp_last[w] != NO_HEAD) prev_head = warp_last[w];
    if (!XW_CARRY && tile_count == 0 && threadIdx.x == 0) side[2 * (p.state0 + t)] = NO_HEAD;
    unsigned int* const len_out = lengths + out0 + tile_base;
    if (XW_CARRY && tile_count == 0 && threadIdx.x == 0 && t + 1 == p.tiles && tile_base > 0)
        len_out[-1] = p.n - before;
#endif
#pragma unroll
    for (unsigned int j = 0; j < (early ? 0 : ITEMS); ++j) {
        const bool pass = (kept >> j) & 1u;
        const unsigned int ballot = __ballot_sync(XW_FULL_MASK, pass);
        const unsigned int q = at + __popc(ballot & below_lane);
        if (pass) out_stage[q] = v[j];
#if LENGTHS && OP == 2
        const unsigned int step0 = first - lane + j * XW_WARP;
        if (pass) {
            const unsigned int pos = step0 + lane;
            const unsigned int lower = ballot & below_lane;
            const unsigned int before_head = lower != 0 ? step0 + 31 - __clz(lower) : prev_head;
            if (XW_CARRY && tile_base + q > 0) len_out[(int)q - 1] = pos - before_head;
            if (!XW_CARRY && q > 0) len_out[q - 1] = pos - before_head;
            if (q + 1 == tile_count && (!XW_CARRY || t + 1 == p.tiles))
                len_out[q] = XW_CARRY ? p.n - pos : pos;
            if (!XW_CARRY && q == 0) {
                const unsigned int g = p.state0 + t;
                side[2 * g] = (unsigned int)base + tile_base;
                side[2 * g + 1] = pos;
            }
        }
        if (ballot != 0) prev_head = step0 + 31 - __clz(ballot);
#endif
        at += __popc(ballot);
    }
    __syncthreads();
    XW_T* const dst = out + out0 + tile_base;
    for (unsigned int i = threadIdx.x; i < tile_count; i += BLOCK) dst[i] = out_stage[i];
#if OP == 2 && SELF_CLEARING && LENGTHS
    // With `close`: the two words a tile lie in the counters buffer too, and the last block to
    // count itself done does the last launch's work (xw_close_runs) and zeroes them; the count
    // comes after every thread's stores of lengths and side.
    if (p.close) {
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) s_last = atomicAdd(&counter[C_DONE], 1u) + 1 == p.tiles;
        __syncthreads();
        if (s_last) {
            __threadfence();
            xw_close_runs(lengths, side, total, p, threadIdx.x, BLOCK, true);
        }
    }
#endif
#if OP == 2 && SELF_CLEARING
    // With self_clearing, the last tile to count itself done zeroes the tile states and the
    // done counter.
    {
        __syncthreads();
        if (s_last) {
            __threadfence();
            for (unsigned int i = threadIdx.x; i < p.tiles; i += BLOCK) states[i] = 0;
            if (threadIdx.x == 0) counter[C_DONE] = 0;
        }
    }
#endif
#else
#error "unknown OP"
#endif
}
