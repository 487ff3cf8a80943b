// Runs of equal consecutive keys, single pass, with CUDA's own intrinsics: the text of
// unique.cu (XW_RUNS_UNIQUE), run_length.cu (XW_RUNS_RLE) and reduce_by_key.cu (XW_RUNS_RBK);
// the twin of shaders/runs.glsl, whose header describes the heads and tails, the tile's four
// steps, the canonical order of a run's reduction, the tile states and the look-back with its
// fallback. Modelled by src/cpu/runs.rs.
//
// Variant constants: KEY_WORDS (32-bit words per key), ITEMS (elements per thread),
// SELF_CLEARING (1: launches with clear == XW_SELF_CLEARING, whose code only this variant has:
// in the others it cost the 32-bit reduce-by-key kernels a spilled word), BLOCK (threads per
// block); RBK also OP (reduce_op.cuh codes).

struct RunsParams {
    unsigned int n;      // elements
    unsigned int tiles;  // tiles of the input
    unsigned int spin;   // polls of unpublished predecessors per look-back before computing them here
    unsigned int clear;  // XW_CLEAR_LAUNCH, XW_SELF_CLEARING or 0 (see the Vulkan twin)
    unsigned int epoch_wrap;   // the Vulkan twin's reduce_by_key_e64 only
    unsigned int epoch_tiles;  // the Vulkan twin's reduce_by_key_e64 only
};

#define XW_CLEAR_LAUNCH 1u   // only zero the ticket, the done count, the flags and the run count
#define XW_SELF_CLEARING 2u  // the last tile to count itself done zeroes the work words

// reduce_by_key.cu includes reduce_op.cuh (the operators on XW_T, by OP) first.
#if defined(XW_RUNS_RBK)
typedef XW_T xw_vt;
__device__ __forceinline__ xw_vt xw_vop(xw_vt a, xw_vt b) { return xw_op(a, b); }
#else
// RLE counts the elements of a run; UNIQUE carries no value.
typedef unsigned int xw_vt;
__device__ __forceinline__ xw_vt xw_vop(xw_vt a, xw_vt b) { return a + b; }
#endif

#define FLAG_AGGREGATE 1u
#define FLAG_INCLUSIVE 2u
#define W_FLAGS 4u  // the first flag word; word 0 is the ticket counter
#define W_DONE 1u   // XW_SELF_CLEARING: the tiles done with the tile states
#define TILE (BLOCK * ITEMS)
// 32-bit words of a value (reduce-by-key's; the other kernels load none) and of the largest
// element, keys or values, that a tile stages in shared memory.
#if defined(XW_RUNS_RBK)
#define VALUE_WORDS ((unsigned int)(sizeof(xw_vt) / 4))
#else
#define VALUE_WORDS 1u
#endif
// Blocks of BLOCK threads an SM holds at least (registers capped to fit): reduce-by-key's
// 32-bit kernels otherwise take 72 registers, three blocks an SM, which cost 1.02-1.10x the
// time at 2^22-2^26 (H200) against a few spilled words at four.
#define XW_RUNS_MIN_BLOCKS ((KEY_WORDS == 1 && VALUE_WORDS == 1) ? 4 : 1)
// The keys' stage holds a tile's keys, then its outputs' keys (and run-length encoding's
// lengths); reduce-by-key's values have a stage of their own, for the tile's values, then its
// outputs' values. (Places 0 to TILE: see xw_runs_tile; TILE + 1 + l takes thread l's stores
// of non-outputs in xw_stage_outputs.)
// Reduce-by-key's 32-bit kernels then take 42 KiB a block: four blocks an SM on GPUs with at
// least 160 KiB of shared memory an SM (compute capability 8.0, 9.0), fewer on others.
#define STAGE_WORDS ((TILE + 1 + BLOCK) * KEY_WORDS)
#define VSTAGE_WORDS ((TILE + 1 + BLOCK) * VALUE_WORDS)
// A word's place in the staging buffer: one padding word after every 32, so that the threads
// of a warp reading words ITEMS * KEY_WORDS apart hit different banks.
#define XW_PAD(w) ((w) + (w) / 32u)
// How far XW_PAD moves a word BLOCK words on (BLOCK is a multiple of 32): the loops below step a
// thread's words by BLOCK, so each step's shared address is the first one's plus a constant.
#define XW_PAD_STEP (BLOCK + BLOCK / 32u)

// A key as one integer of its width (a 64-bit key for 32-bit keys would hold twice the
// registers a piece needs).
#if KEY_WORDS == 2
typedef unsigned long long xw_key;
__device__ __forceinline__ xw_key xw_key_from(unsigned int lo, unsigned int hi) {
    return ((xw_key)hi << 32) | lo;
}
__device__ __forceinline__ unsigned int xw_key_hi(xw_key k) { return (unsigned int)(k >> 32); }
#else
typedef unsigned int xw_key;
__device__ __forceinline__ xw_key xw_key_from(unsigned int lo, unsigned int) { return lo; }
__device__ __forceinline__ unsigned int xw_key_hi(xw_key) { return 0u; }
#endif

struct Carry {
    unsigned int heads;
    xw_vt v;
};

// A value's bits as two words (the high one 0 for 32-bit values), and back.
__device__ __forceinline__ void xw_vt_bits(xw_vt v, unsigned int* lo, unsigned int* hi) {
    unsigned long long b = 0;
    memcpy(&b, &v, sizeof(v));
    *lo = (unsigned int)b;
    *hi = (unsigned int)(b >> 32);
}
__device__ __forceinline__ xw_vt xw_vt_from(unsigned int lo, unsigned int hi) {
    const unsigned long long b = ((unsigned long long)hi << 32) | lo;
    xw_vt v;
    memcpy(&v, &b, sizeof(v));
    return v;
}

__device__ __forceinline__ Carry xw_carry_op(Carry a, Carry b) {
    Carry c;
    c.heads = a.heads + b.heads;
    c.v = b.heads > 0 ? b.v : xw_vop(a.v, b.v);
    return c;
}

struct RunsShared {
    unsigned int inv_heads[BLOCK];  // step 1: each thread's heads
    xw_vt inv_trail[BLOCK];         // step 1: each thread's trail
    xw_vt inv_carry[BLOCK];         // step 2: C[l]
    unsigned int lb_flag[BLOCK];    // the look-back window's flags
    unsigned int inv_warp[BLOCK / XW_WARP];  // step 2: heads of each warp
    unsigned int stage[XW_PAD(STAGE_WORDS)];  // a tile's keys, as words
#if defined(XW_RUNS_RBK)
    unsigned int vstage[XW_PAD(VSTAGE_WORDS)];  // a tile's values, as words
#endif
    unsigned int out_lo;                      // the tile's first output place
    unsigned int out_hi;                      // one past its last
    Carry lb_val[BLOCK];            // a window's values, read at once
    unsigned int lb_m;              // the window's nearest inclusive prefix
    unsigned int lb_gap;            // a tile above it has published nothing
    unsigned int lb_heads;          // the heads of the values read, summed
    unsigned int lb_head;           // the nearest value read with a head, by its window index
    unsigned int lb_ok;             // the near look-back found the prefix
    unsigned int lb_polls;          // polls the near look-back spent
    unsigned int word;
#if SELF_CLEARING
    unsigned int last;  // this tile was the last to count itself done
#endif
    Carry carry;
    // The near look-back's prefix: not in `carry`, which warps still leaving the tile's own
    // summary may be reading as its aggregate while warp 0 looks back.
    Carry near_prefix;
};

// Where the outputs' values are staged: reduce-by-key's value stage; run-length encoding's
// lengths take the keys' stage once the keys are written out.
#if defined(XW_RUNS_RBK)
#define XW_VSTAGE(s) ((s).vstage)
#else
#define XW_VSTAGE(s) ((s).stage)
#endif

struct RunsArgs {
    const unsigned int* keys;
    const xw_vt* values;
    unsigned int* keys_out;
    xw_vt* values_out;
    unsigned long long* runs;
    unsigned int* work;
    RunsParams p;
};

__device__ __forceinline__ unsigned int xw_w_aggregates(const RunsParams& p) {
    return W_FLAGS + (p.tiles + 3u) / 4u * 4u;
}
__device__ __forceinline__ unsigned int xw_w_inclusives(const RunsParams& p) {
    return xw_w_aggregates(p) + 4u * p.tiles;
}

__device__ __forceinline__ xw_key xw_key_at(const RunsArgs& a, unsigned int i) {
    if (KEY_WORDS == 2) return xw_key_from(a.keys[2 * i], a.keys[2 * i + 1]);
    return a.keys[i];
}

__device__ __forceinline__ xw_vt xw_value_at(const RunsArgs& a, unsigned int i) {
#if defined(XW_RUNS_RBK)
    return a.values[i];
#else
    return 1u;
#endif
}

// One thread piece: its keys, its values folded, and which of its elements are heads and tails
// (bit j).
struct Piece {
    xw_key k[ITEMS];
    // v[j]: the fold of the piece's values from its last head at or before j (or from its first
    // element) through j, in element order; past the piece's end, its trail.
    xw_vt v[ITEMS];
    unsigned int heads;
    unsigned int tails;
    unsigned int len;  // its elements below n
};

// A piece's keys, read through shared memory: the tile's keys (and reduce-by-key's values, into
// their own stage) are loaded by all threads at once, consecutive threads reading consecutive
// words, and each thread then takes its ITEMS consecutive keys from shared memory and finds its
// heads and tails. (Each thread loading its own ITEMS elements from global memory used 4.5 of
// every 32 bytes the L1 fetched: the kernels were bound by L2 traffic at 11% of DRAM bandwidth,
// Nsight Compute on an H100.) Called once a block, after the ticket's barrier (no earlier reader
// of the stages), by every thread. FULL: the tile holds TILE elements, so no element needs a
// bounds check.
template <bool FULL>
__device__ __forceinline__ void xw_load_keys(const RunsArgs& a, RunsShared& s, unsigned int t,
                                             unsigned int l, Piece& pc) {
    const unsigned int n = a.p.n;
    const unsigned int tile_first = t * TILE;
    const unsigned int tile_len = FULL ? (unsigned int)TILE : min((unsigned int)TILE, n - tile_first);
    const unsigned int first = tile_first + l * ITEMS;
    pc.len = FULL ? (unsigned int)ITEMS : first < n ? min((unsigned int)ITEMS, n - first) : 0u;
    pc.heads = 0;
    pc.tails = 0;
    // The keys either side of the piece, from global memory (L2 hits, loaded while the stage
    // fills; taking them from the stage after its barrier cost 4-10% on an H100).
    const xw_key prev = first > 0 && (FULL || first < n) ? xw_key_at(a, first - 1) : 0;
    const xw_key next = pc.len > 0 && first + pc.len < n ? xw_key_at(a, first + pc.len) : 0;
    // Word w of the tile is step w / BLOCK of thread w % BLOCK: one address each side, constant
    // offsets.
    {
        const unsigned int* src = a.keys + (unsigned long long)tile_first * KEY_WORDS + l;
        unsigned int* dst = &s.stage[XW_PAD(l)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS * KEY_WORDS; ++j) {
            if (FULL || l + j * BLOCK < tile_len * KEY_WORDS) dst[j * XW_PAD_STEP] = src[j * BLOCK];
        }
    }
#if defined(XW_RUNS_RBK)
    {
        const unsigned int* src =
            reinterpret_cast<const unsigned int*>(a.values) + (unsigned long long)tile_first * VALUE_WORDS + l;
        unsigned int* dst = &s.vstage[XW_PAD(l)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS * VALUE_WORDS; ++j) {
            if (FULL || l + j * BLOCK < tile_len * VALUE_WORDS) dst[j * XW_PAD_STEP] = src[j * BLOCK];
        }
    }
#endif
    __syncthreads();
    // A piece's words (ITEMS * KEY_WORDS or ITEMS * VALUE_WORDS, dividing 32) share one row of
    // 32 between padding words: one address, constant offsets.
    static_assert(32 % (ITEMS * KEY_WORDS) == 0 && 32 % (ITEMS * VALUE_WORDS) == 0,
                  "a piece's words within one padded row");
    {
        const unsigned int* kp = &s.stage[XW_PAD(l * ITEMS * KEY_WORDS)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) {
            if (j < pc.len) {
                pc.k[j] = KEY_WORDS == 2 ? xw_key_from(kp[2 * j], kp[2 * j + 1]) : (xw_key)kp[j];
            } else {
                pc.k[j] = 0;
            }
        }
    }
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        if (j < pc.len) {
            // Only the piece's first element can be the input's first, and only its last the
            // input's last.
            const bool head = j == 0 ? first == 0 || pc.k[0] != prev : pc.k[j] != pc.k[j - 1];
            const bool tail = j + 1 == pc.len
                                  ? first + pc.len == n || pc.k[j] != next
                                  : pc.k[j] != pc.k[min(j + 1, (unsigned int)ITEMS - 1)];
            pc.heads |= (unsigned int)head << j;
            pc.tails |= (unsigned int)tail << j;
        }
    }
}

// A piece's values (reduce-by-key's from their stage; run-length encoding counts ones), each
// folded in place with those before it since the last head: the only form in which the summary
// and the outputs use them. Every thread read the value stage after xw_load_keys' barrier; the
// first barrier after this call ends those reads.
__device__ __forceinline__ void xw_fold_values(const RunsArgs& a, const RunsShared& s,
                                               unsigned int t, unsigned int l, Piece& pc) {
    xw_vt acc = xw_vt(0);
#if defined(XW_RUNS_RBK)
    const unsigned int* vp = &s.vstage[XW_PAD(l * ITEMS * VALUE_WORDS)];
#endif
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        if (j < pc.len) {
#if defined(XW_RUNS_RBK)
            const xw_vt v = xw_vt_from(vp[VALUE_WORDS * j], VALUE_WORDS == 2 ? vp[2 * j + 1] : 0u);
#else
            const xw_vt v = xw_value_at(a, t * TILE + l * ITEMS + j);
#endif
            acc = j == 0 || ((pc.heads >> j) & 1u) ? v : xw_vop(acc, v);
        }
        pc.v[j] = acc;
    }
}

// The trail of a piece: the fold of its values from its last head (or its first value).
__device__ __forceinline__ xw_vt xw_piece_trail(const Piece& pc) { return pc.v[ITEMS - 1]; }

// Step 2's left fold of the trails, which a head restarts, run as one fold per segment: thread
// r < pieces with a head (or r = 0) folds from its trail on through the threads after it until
// the next head, writing C[q] (the value before q) for each q it passes; the last segment's
// thread stops at `pieces` and returns the tile's value (true), which no other thread reaches.
// Every C[q] is the serial fold's value, bit for bit, and no thread folds what another does.
// (C[q] of a thread past `pieces` is never read: it has no elements.)
__device__ __forceinline__ bool xw_segment_fold(RunsShared& s, unsigned int r,
                                                unsigned int pieces, bool own, xw_vt* tile_v) {
    xw_vt acc = s.inv_trail[r];
    for (unsigned int q = r + 1; q < pieces; ++q) {
        if (own) s.inv_carry[q] = acc;
        if (s.inv_heads[q] > 0) return false;
        acc = xw_vop(acc, s.inv_trail[q]);
    }
    *tile_v = acc;
    return true;
}

// Step 1 for a tile whose piece the caller does not hold (a predecessor computed in the
// look-back's fallback): the head count and trail of thread l's piece, read element by element
// from global memory (rare; no registers per element, so the caller's piece stays in its own).
__device__ void xw_piece_stats(const RunsArgs& a, unsigned int t, unsigned int l,
                               unsigned int* heads, xw_vt* trail) {
    const unsigned int n = a.p.n;
    const unsigned int first = t * TILE + l * ITEMS;
    unsigned int h = 0;
    xw_vt acc = xw_vt(0);
    if (first < n) {
        const unsigned int len = min((unsigned int)ITEMS, n - first);
        xw_key prev = first > 0 ? xw_key_at(a, first - 1) : 0;
        for (unsigned int j = 0; j < len; ++j) {
            const xw_key k = xw_key_at(a, first + j);
            const xw_vt v = xw_value_at(a, first + j);
            const bool head = first + j == 0 || k != prev;
            h += head;
            acc = head || j == 0 ? v : xw_vop(acc, v);
            prev = k;
        }
    }
    *heads = h;
    *trail = acc;
}

// Step 2, heads: H[l], the heads of the threads before l (returned), and the tile's heads
// (*tile_heads), by a shuffle scan within each warp and the warps' totals (integers: any order
// gives the same sum); also stores the thread's heads for xw_tile_value. Every thread calls it;
// it holds one barrier.
__device__ __forceinline__ unsigned int xw_tile_heads(RunsShared& s, unsigned int l,
                                                      unsigned int piece_heads,
                                                      unsigned int* tile_heads) {
    s.inv_heads[l] = piece_heads;
    const unsigned int lane = l % XW_WARP, warp = l / XW_WARP;
    unsigned int incl = piece_heads;
#pragma unroll
    for (unsigned int d = 1; d < XW_WARP; d <<= 1) {
        const unsigned int up = __shfl_up_sync(XW_FULL_MASK, incl, d);
        if (lane >= d) incl += up;
    }
    if (lane == XW_WARP - 1) s.inv_warp[warp] = incl;
    __syncthreads();
    unsigned int before = incl - piece_heads, heads = 0;
#pragma unroll
    for (unsigned int i = 0; i < BLOCK / XW_WARP; ++i) {
        const unsigned int w = s.inv_warp[i];
        if (i < warp) before += w;
        heads += w;
    }
    *tile_heads = heads;
    return before;
}

// Step 2, value, for tile t, after xw_tile_heads: the value of the tile's aggregate (every
// thread gets it); with `own`, also C[l] in inv_carry. Every thread calls it. It is the left fold
// of the pieces' trails in thread order, which a head restarts, computed by xw_segment_fold.
// (One thread folding all BLOCK pieces in turn kept every tile waiting on a chain of BLOCK
// shared-memory reads; now the chain is as long as the longest run of threads without a head.)
__device__ xw_vt xw_tile_value(const RunsArgs& a, RunsShared& s, unsigned int t, unsigned int l,
                               bool own, xw_vt piece_trail) {
    s.inv_trail[l] = piece_trail;
    __syncthreads();
    // Threads with elements: the first `pieces` (a thread past the end has no heads, and the
    // fold skips it).
    const unsigned int valid = a.p.n - t * TILE;  // elements of the tile (at least one)
    const unsigned int pieces = min((valid + ITEMS - 1) / ITEMS, (unsigned int)BLOCK);
    if (own && l == 0) s.inv_carry[0] = xw_vt(0);
    xw_vt tile_v;
    if (l < pieces && (l == 0 || s.inv_heads[l] > 0) &&
        xw_segment_fold(s, l, pieces, own, &tile_v))
        s.carry.v = tile_v;
    __syncthreads();
    return s.carry.v;
}

// Step 2 for a tile whose pieces the caller computed from global memory (xw_piece_stats, in
// the look-back's fallback): its aggregate (every thread gets it). Every thread calls it.
__device__ Carry xw_tile_summary(const RunsArgs& a, RunsShared& s, unsigned int t, unsigned int l,
                                 unsigned int piece_heads, xw_vt piece_trail) {
    // The shared words of steps 1 and 2 may still be read by an earlier summary (the tile's own,
    // or another predecessor's).
    __syncthreads();
    Carry c;
    xw_tile_heads(s, l, piece_heads, &c.heads);
    c.v = xw_tile_value(a, s, t, l, false, piece_trail);
    __syncthreads();  // every thread has read carry.v before the look-back writes it
    return c;
}

__device__ __forceinline__ void xw_publish(const RunsArgs& a, unsigned int tile, unsigned int flag,
                                           Carry c) {
    const unsigned int at =
        (flag == FLAG_INCLUSIVE ? xw_w_inclusives(a.p) : xw_w_aggregates(a.p)) + 4u * tile;
    unsigned int lo, hi;
    xw_vt_bits(c.v, &lo, &hi);
    volatile unsigned int* w = a.work;
    w[at] = c.heads;
    w[at + 1] = lo;
    w[at + 2] = hi;
    // The flag by a release (the value's stores before it), read by an acquire: a lighter
    // fence than __threadfence()'s sequentially consistent one.
    asm volatile("red.release.gpu.global.max.u32 [%0], %1;" ::"l"(&a.work[W_FLAGS + tile]), "r"(flag)
                 : "memory");
}

// A tile's flag, by an acquire: the values published before it are then visible to this thread.
__device__ __forceinline__ unsigned int xw_poll_flag(const RunsArgs& a, unsigned int tile) {
    unsigned int f;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(&a.work[W_FLAGS + tile]) : "memory");
    return f;
}

// The value `tile` published with `flag`, which this thread's poll has seen.
__device__ __forceinline__ Carry xw_read_seen(const RunsArgs& a, unsigned int tile,
                                              unsigned int flag) {
    const unsigned int at =
        (flag == FLAG_INCLUSIVE ? xw_w_inclusives(a.p) : xw_w_aggregates(a.p)) + 4u * tile;
    const volatile unsigned int* w = a.work;
    Carry c;
    c.heads = w[at];
    c.v = xw_vt_from(w[at + 1], w[at + 2]);
    return c;
}

// The published value of `tile` for `flag`, once its flag has reached it.
__device__ __forceinline__ Carry xw_read_published(const RunsArgs& a, unsigned int tile,
                                                   unsigned int flag) {
    while (xw_poll_flag(a, tile) < flag) {
    }
    return xw_read_seen(a, tile, flag);
}

// A tile's flag by a relaxed load (the near look-back's polls): one acquire fence follows once
// the polls have seen every flag they need, where an acquiring load (xw_poll_flag) invalidated
// the L1 cache after every poll (`CCTL.IVALL`, Nsight Compute on an H200).
__device__ __forceinline__ unsigned int xw_peek_flag(const RunsArgs& a, unsigned int tile) {
    unsigned int f;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(&a.work[W_FLAGS + tile]) : "memory");
    return f;
}

// The near look-back of tile k > 0, by warp 0 alone (every lane calls it): sets s.lb_ok and
// s.lb_polls and, where it finds the prefix, s.near_prefix, and publishes the tile's inclusive
// prefix. Lane i polls the flag of tile k - 1 - i until every tile of the window up to the
// nearest inclusive prefix (lane m) has published; then lane i <= m reads its tile's value, the
// heads are summed by a butterfly and the value is folded from the nearest value with a head
// (or from lane m's) down to lane 0 by shuffles: the window's left fold, bit for bit the
// first-window path's of xw_far_look_back, with no block barrier per poll (four a poll there).
// The other warps stage their keys, or reduce-by-key's values, meanwhile (see xw_runs_tile). A
// window without an inclusive prefix, or a budget run out, leaves the look-back to the window
// path (with the polls left): walking down 32 tiles at a time (integers) took 1.07-1.14x the
// time of leaving at once (H200, 2^20-2^24).
__device__ __forceinline__ void xw_near_look_back(const RunsArgs& a, RunsShared& s, unsigned int k,
                                                  Carry agg, unsigned int lane) {
    const int tile = (int)k - 1 - (int)lane;
    unsigned int polls = 0;
    unsigned int incl, empty, limit;
    for (;; ++polls) {
        // Tiles before tile 0 read as inclusive: never the nearest once tile 0 has published
        // (and never read).
        const unsigned int f = tile >= 0 ? xw_peek_flag(a, (unsigned int)tile) : FLAG_INCLUSIVE;
        incl = __ballot_sync(XW_FULL_MASK, f == FLAG_INCLUSIVE);
        limit = incl != 0 ? (unsigned int)(__ffs(incl) - 1) : (unsigned int)XW_WARP - 1;
        empty = __ballot_sync(XW_FULL_MASK, f == 0 && lane <= limit);
        if (empty == 0 || polls >= a.p.spin) break;
    }
    const bool ok = empty == 0 && incl != 0;
    if (ok) {
        // Each lane's last poll saw its tile's flag; with the fence after it, an acquire:
        // the value published before the flag can be read.
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        Carry c;
        c.heads = 0;
        c.v = xw_vt(0);
        // A lane before tile 0 (the nearest "inclusive" where tile 0 has published only its
        // aggregate, which a fallback elsewhere may have done) adds nothing: tile 0's
        // aggregate is its inclusive prefix, and it has a head.
        if (lane <= limit && tile >= 0)
            c = xw_read_seen(a, (unsigned int)tile, lane == limit ? FLAG_INCLUSIVE : FLAG_AGGREGATE);
        Carry w;
        w.heads = c.heads;
#pragma unroll
        for (unsigned int d = 1; d < XW_WARP; d <<= 1)
            w.heads += __shfl_xor_sync(XW_FULL_MASK, w.heads, d);
        const unsigned int with_head =
            __ballot_sync(XW_FULL_MASK, lane < limit && c.heads > 0);
        const unsigned int from =
            with_head != 0 ? (unsigned int)(__ffs(with_head) - 1) : limit;
        w.v = __shfl_sync(XW_FULL_MASK, c.v, from);
        for (unsigned int i = from; i-- > 0;)
            w.v = xw_vop(w.v, __shfl_sync(XW_FULL_MASK, c.v, i));
        if (lane == 0) {
            s.near_prefix = w;
            xw_publish(a, k, FLAG_INCLUSIVE, xw_carry_op(w, agg));
        }
    }
    if (lane == 0) {
        s.lb_ok = ok;
        s.lb_polls = polls;
    }
}

// The exclusive prefix E of tile k > 0 where the near look-back (s.lb_ok, read after a barrier
// that followed it) did not find it, by the window path (every thread gets it); publishes the
// tile's inclusive prefix. Every thread calls it.
__device__ Carry xw_far_look_back(const RunsArgs& a, RunsShared& s, unsigned int k, Carry agg,
                                  unsigned int l) {
    int hi = (int)k - 1;
    int j = -1;
    unsigned int polls = s.lb_polls;
    while (hi >= 0) {
        const unsigned int count = (unsigned int)min(hi + 1, (int)BLOCK);
        unsigned int m;
        bool gap;
        for (;;) {
            if (l == 0) {
                s.lb_m = count;
                s.lb_gap = 0;
                s.lb_heads = 0;
                s.lb_head = BLOCK;
            }
            __syncthreads();
            if (l < count) {
                const unsigned int f = xw_poll_flag(a, (unsigned int)hi - l);
                s.lb_flag[l] = f;
                if (f == FLAG_INCLUSIVE) atomicMin(&s.lb_m, l);
            }
            __syncthreads();
            m = s.lb_m;
            if (l < m && s.lb_flag[l] == 0) atomicOr(&s.lb_gap, 1u);
            __syncthreads();
            gap = s.lb_gap != 0;
            __syncthreads();
            if (!gap || polls >= a.p.spin) break;
            ++polls;
        }
        if (!gap && m < count && hi == (int)k - 1) {
            // The usual case: the nearest inclusive prefix in the first window and every tile
            // after it published. Their values are read at once, one per thread (each flag
            // already seen), and folded from shared memory in the same order as below: one
            // thread reading them one after another made the look-back a chain of memory round
            // trips (the toolbox's runs at 0.02-0.03x CUB's speed at 2^24 on an H100).
            // The fold (from m down to 0) is the heads' sum and, for the value, the fold from
            // the nearest value with a head (lb_head) down: what it skips, a head overwrites.
            if (l <= m) {
                const Carry c = xw_read_published(a, (unsigned int)hi - l,
                                                  l == m ? FLAG_INCLUSIVE : FLAG_AGGREGATE);
                s.lb_val[l] = c;
                atomicAdd(&s.lb_heads, c.heads);
                if (l < m && c.heads > 0) atomicMin(&s.lb_head, l);
            }
            __syncthreads();
            if (l == 0) {
                const unsigned int from = min(s.lb_head, m);
                Carry e;
                e.heads = s.lb_heads;
                e.v = s.lb_val[from].v;
                for (unsigned int i = from; i-- > 0;) e.v = xw_vop(e.v, s.lb_val[i].v);
                s.carry = e;
                xw_publish(a, k, FLAG_INCLUSIVE, xw_carry_op(e, agg));
            }
            __syncthreads();
            return s.carry;
        }
        if (gap) {
            // Predecessors above the nearest inclusive prefix that published nothing within the
            // budget: computed here and published (lb_flag is shared, read after a barrier).
            for (unsigned int i = 0; i < m; ++i) {
                if (s.lb_flag[i] != 0) continue;
                const unsigned int tile = (unsigned int)hi - i;
                unsigned int h;
                xw_vt trail;
                xw_piece_stats(a, tile, l, &h, &trail);
                const Carry c = xw_tile_summary(a, s, tile, l, h, trail);
                if (l == 0) xw_publish(a, tile, FLAG_AGGREGATE, c);
            }
        }
        if (m < count) {
            j = hi - (int)m;
            break;
        }
        hi -= (int)count;
    }
    // Fold forward from the nearest inclusive prefix P(j) (or from tile 0): the same left fold
    // whichever j was found. Tile 0 has a head, so the start without a prefix is never combined
    // with a value. Every tile after j has published at least its aggregate (the walk above saw
    // it, or published it): a window of them is read at once, one per thread, and folded from
    // shared memory by one thread in order.
    if (l == 0) {
        Carry e;
        e.heads = 0;
        e.v = xw_vt(0);
        if (j >= 0) e = xw_read_published(a, (unsigned int)j, FLAG_INCLUSIVE);
        s.carry = e;
        s.lb_heads = 0;
        s.lb_head = 0;
    }
    for (unsigned int lo = (unsigned int)(j + 1); lo < k; lo += BLOCK) {
        const unsigned int c = min(k - lo, (unsigned int)BLOCK);
        __syncthreads();  // the previous window's fold has read lb_val
        if (l < c) {
            const Carry v = xw_read_published(a, lo + l, FLAG_AGGREGATE);
            s.lb_val[l] = v;
            atomicAdd(&s.lb_heads, v.heads);
            if (v.heads > 0) atomicMax(&s.lb_head, l + 1);
        }
        __syncthreads();
        if (l == 0) {
            // The window's fold: the heads' sum, and the value folded from the last value
            // with a head (index lb_head - 1), or from the carry when none has one.
            Carry e = s.carry;
            const unsigned int last = s.lb_head;
            e.heads += s.lb_heads;
            if (last > 0) e.v = s.lb_val[last - 1].v;
            for (unsigned int i = last; i < c; ++i) e.v = xw_vop(e.v, s.lb_val[i].v);
            s.carry = e;
            s.lb_heads = 0;
            s.lb_head = 0;
        }
    }
    if (l == 0) xw_publish(a, k, FLAG_INCLUSIVE, xw_carry_op(s.carry, agg));
    __syncthreads();
    return s.carry;
}

// The exclusive prefix E of tile k > 0 (every thread gets it), whose aggregate is `agg`;
// publishes the tile's inclusive prefix. Every thread calls it.
__device__ __forceinline__ Carry xw_look_back(const RunsArgs& a, RunsShared& s, unsigned int k,
                                              Carry agg, unsigned int l) {
    if (l < XW_WARP) xw_near_look_back(a, s, k, agg, l);
    __syncthreads();
    if (s.lb_ok) return s.near_prefix;
    return xw_far_look_back(a, s, k, agg, l);
}

#if SELF_CLEARING
// XW_SELF_CLEARING, by thread 0 once the tile has published its last state and every thread has
// read its last one (the barrier that ends xw_look_back; tile 0 reads none): counts the tile
// done, and s.last tells whether it was the last (every other tile is then past the states).
__device__ __forceinline__ void xw_count_tile_done(const RunsArgs& a, RunsShared& s) {
    // Release: the tile's publications before its count.
    unsigned int before;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(&a.work[W_DONE]) : "memory");
    s.last = before + 1u == a.p.tiles;
}

// XW_SELF_CLEARING, at the end of the tile: the last tile to count itself done zeroes every
// work word (the ticket, the count, the flags and the published values), which lie in the
// device's counters buffer. Every thread calls it.
__device__ __forceinline__ void xw_zero_work_if_last(const RunsArgs& a, RunsShared& s,
                                                     unsigned int l) {
    __syncthreads();
    if (!s.last) return;
    __threadfence();  // every other tile's count, and so its use of the states, before the zeroing
    const unsigned int words = xw_w_inclusives(a.p) + 4u * a.p.tiles;
    for (unsigned int i = l; i < words; i += BLOCK) a.work[i] = 0;
}
#endif

// Step 4 for one piece: stages what the piece outputs (unique: a key at each head; the others:
// a key, or with `values` the run's value, at each tail) at its place in the tile's output,
// r - e.heads, and (keys) widens [lo, hi) to cover those places.
__device__ __forceinline__ void xw_stage_outputs(RunsShared& s, const Piece& pc, Carry e,
                                                 unsigned int before, xw_vt carry, unsigned int l,
                                                 bool values, unsigned int* lo, unsigned int* hi) {
#if defined(XW_RUNS_UNIQUE)
    const unsigned int outs = pc.heads;
#else
    const unsigned int outs = pc.tails;
#endif
    if (!values && outs != 0) {
        // Element j's place is before + the piece's heads up to j: the first and last outputs'
        // places bound the piece's range.
        const unsigned int f = (unsigned int)__ffs(outs) - 1u;
        const unsigned int z = 31u - (unsigned int)__clz(outs);
        *lo = min(*lo, before + __popc(pc.heads & ((2u << f) - 1u)));
        *hi = max(*hi, before + __popc(pc.heads & ((2u << z) - 1u)) + 1u);
    }
    // Every element stores, a non-output to the thread's own scratch place TILE + 1 + l, which no
    // write-out reads (elements past the piece's end are neither heads nor tails): no branch an
    // element, and no two threads' stores meet.
    unsigned int seen = 0;  // heads of the piece so far
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool head = (pc.heads >> j) & 1u;
        seen += head;
#if defined(XW_RUNS_UNIQUE)
        const bool out = head;
#else
        const bool out = (pc.tails >> j) & 1u;
#endif
        // The run's index + 1 - e.heads.
        const unsigned int at = out ? before + seen : (unsigned int)TILE + 1u + l;
        if (!values) {
            s.stage[XW_PAD(KEY_WORDS * at)] = (unsigned int)pc.k[j];
            if (KEY_WORDS == 2) s.stage[XW_PAD(KEY_WORDS * at + 1)] = xw_key_hi(pc.k[j]);
        } else {
            // The fold within the piece; a run that began before the piece is completed below.
            unsigned int w0, w1;
            xw_vt_bits(pc.v[j], &w0, &w1);
            XW_VSTAGE(s)[XW_PAD(VALUE_WORDS * at)] = w0;
            if (VALUE_WORDS == 2) XW_VSTAGE(s)[XW_PAD(VALUE_WORDS * at + 1)] = w1;
        }
    }
    // The piece's entering run (its elements before its first head) began in an earlier piece of
    // the tile or in an earlier tile; its output, if the piece has it (a tail before the first
    // head), is the only one whose value needs the carry C[l] or the prefix e: read back from its
    // place `before` (this thread's own store) and completed there, in the canonical order, so
    // that no other element selects or folds anything.
    const unsigned int entering = pc.tails & ((pc.heads & (0u - pc.heads)) - 1u);
    if (values && entering != 0) {
        const unsigned int at = XW_PAD(VALUE_WORDS * before);
        const xw_vt partial =
            xw_vt_from(XW_VSTAGE(s)[at], VALUE_WORDS == 2 ? XW_VSTAGE(s)[XW_PAD(VALUE_WORDS * before + 1)] : 0u);
        const xw_vt local = l == 0 ? partial : xw_vop(carry, partial);
#if defined(XW_RUNS_RBK)
        // (Reduce-by-key stages its values before the look-back: place 0's write-out applies e.)
        const xw_vt value = local;
#else
        const xw_vt value = before == 0 ? xw_vop(e.v, local) : local;
#endif
        unsigned int w0, w1;
        xw_vt_bits(value, &w0, &w1);
        XW_VSTAGE(s)[at] = w0;
        if (VALUE_WORDS == 2) XW_VSTAGE(s)[XW_PAD(VALUE_WORDS * before + 1)] = w1;
    }
}

// The tile's outputs' keys, staged at places [out_lo, out_hi), go out: place `at` is output
// heads + at - 1 (at >= 1 where heads, the prefix's, is 0). The range holds at most TILE places
// (an output per element), so each thread has at most ITEMS * KEY_WORDS words to write, at
// constant offsets from its first. Every thread calls it.
__device__ __forceinline__ void xw_write_keys(const RunsArgs& a, const RunsShared& s,
                                              unsigned int heads, unsigned int out_lo,
                                              unsigned int out_hi, unsigned int l) {
    const unsigned int w0 = out_lo * KEY_WORDS + l;
    const unsigned int end = out_hi * KEY_WORDS;
    unsigned int* dst = a.keys_out + ((unsigned long long)heads * KEY_WORDS + w0 - KEY_WORDS);
    const unsigned int* src = &s.stage[XW_PAD(w0)];
#pragma unroll
    for (unsigned int j = 0; j < ITEMS * KEY_WORDS; ++j) {
        if (w0 + j * BLOCK < end) dst[j * BLOCK] = src[j * XW_PAD_STEP];
    }
}

#if !defined(XW_RUNS_UNIQUE)
// The tile's outputs' values, staged at places [out_lo, out_hi) as xw_write_keys' keys, go out;
// with `prefixed` (reduce-by-key, whose values were staged before the look-back), place 0 of a
// tile after the first, the output of the run entering from an earlier tile, after the
// prefix e.v. Every thread calls it.
__device__ __forceinline__ void xw_write_values(const RunsArgs& a, const RunsShared& s, Carry e,
                                                unsigned int out_lo, unsigned int out_hi,
                                                unsigned int l, bool prefixed) {
    const unsigned int i0 = out_lo + l;
    xw_vt* dst = a.values_out + ((unsigned long long)e.heads + i0 - 1);
    const unsigned int* src = &XW_VSTAGE(s)[XW_PAD(VALUE_WORDS * i0)];
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int at = j * VALUE_WORDS * XW_PAD_STEP;
        if (i0 + j * BLOCK < out_hi) {
            xw_vt v = xw_vt_from(src[at], VALUE_WORDS == 2 ? src[at + 1] : 0u);
            if (prefixed && j == 0 && i0 == 0) v = xw_vop(e.v, v);
            dst[j * BLOCK] = v;
        }
    }
}
#endif

// Tile t, by the whole block; FULL: it holds TILE elements.
template <bool FULL>
__device__ __forceinline__ void xw_runs_tile(const RunsArgs& a, RunsShared& s, unsigned int t,
                                             unsigned int l) {
    const RunsParams& p = a.p;
    // The tile's output range, widened in step 4 (xw_tile_heads' barrier publishes these).
    if (l == 0) {
        s.out_lo = TILE + 1;
        s.out_hi = 0;
    }
    // The thread's piece, loaded once: its summary now, its outputs around the look-back.
    Piece pc;
    xw_load_keys<FULL>(a, s, t, l, pc);
    Carry agg;
    const unsigned int before = xw_tile_heads(s, l, __popc(pc.heads), &agg.heads);
    Carry e;
    e.heads = 0;
    e.v = xw_vt(0);
    // Step 4: the tile's outputs take consecutive places from e.heads - 1 on; each is staged in
    // shared memory at its place in the tile's range (r - e.heads, 0 to TILE) and the range is
    // then written by all threads at once, consecutive threads writing consecutive words (each
    // thread storing its own outputs used 4 of every 32 bytes written). The keys' places do
    // not depend on the look-back or on the values, so they are staged first, over the tile's
    // keys (every thread read its own before xw_tile_heads' barrier): the piece's keys are not
    // kept beside its values.
    unsigned int lo = TILE + 1, hi = 0;
    xw_stage_outputs(s, pc, e, before, xw_vt(0), l, false, &lo, &hi);
    if (hi > 0) {
        atomicMin(&s.out_lo, lo);
        atomicMax(&s.out_hi, hi);
    }
    xw_fold_values(a, s, t, l, pc);
    agg.v = xw_tile_value(a, s, t, l, true, pc.len > 0 ? xw_piece_trail(pc) : xw_vt(0));
#if defined(XW_RUNS_RBK)
    // Reduce-by-key: the outputs' values go to their own stage while warp 0 looks back (the
    // other warps waited at the look-back's barrier: 18% of the kernel's stall samples, Nsight
    // Compute on an H200). Only place 0, the output of a run entering from an earlier tile,
    // needs the prefix, which its write-out applies; one barrier then serves the look-back, the
    // values' stage and both write-outs.
    if (t == 0) {
        if (l == 0) xw_publish(a, 0, FLAG_INCLUSIVE, agg);
    } else {
        if (l == 0) xw_publish(a, t, FLAG_AGGREGATE, agg);
        if (l < XW_WARP) xw_near_look_back(a, s, t, agg, l);
    }
    // C[l] read here, not kept through warp 0's look-back (the self-clearing kernels spilled
    // 8 bytes more with it).
    xw_stage_outputs(s, pc, e, before, s.inv_carry[l], l, true, &lo, &hi);
    __syncthreads();
    if (t > 0) e = s.lb_ok ? s.near_prefix : xw_far_look_back(a, s, t, agg, l);
#if SELF_CLEARING
    if (l == 0) xw_count_tile_done(a, s);
#endif
    if (t + 1 == p.tiles && l == 0) *a.runs = (unsigned long long)(e.heads + agg.heads);
    const unsigned int out_lo = s.out_lo, out_hi = s.out_hi;
    xw_write_keys(a, s, e.heads, out_lo, out_hi, l);
    xw_write_values(a, s, e, out_lo, out_hi, l, true);
#else
    const xw_vt carry = s.inv_carry[l];
    if (t == 0) {
        if (l == 0) xw_publish(a, 0, FLAG_INCLUSIVE, agg);
    } else {
        if (l == 0) xw_publish(a, t, FLAG_AGGREGATE, agg);
        e = xw_look_back(a, s, t, agg, l);
    }
#if SELF_CLEARING
    if (l == 0) xw_count_tile_done(a, s);
#endif
    if (t + 1 == p.tiles && l == 0) *a.runs = (unsigned long long)(e.heads + agg.heads);
    __syncthreads();
    const unsigned int out_lo = s.out_lo, out_hi = s.out_hi;
    xw_write_keys(a, s, e.heads, out_lo, out_hi, l);
#if !defined(XW_RUNS_UNIQUE)
    __syncthreads();  // the keys are written out: the lengths take their stage
    // `before` and the piece's head and tail bits through opaque moves: otherwise the compiler
    // keeps the keys' staging addresses, which the lengths' repeat, live across the look-back
    // (spilled: 44-52 bytes a thread, reduce-by-key's kernels when they staged values here).
    unsigned int before_v;
    asm volatile("mov.u32 %0, %1;" : "=r"(before_v) : "r"(before));
    asm volatile("mov.u32 %0, %0;" : "+r"(pc.heads));
    asm volatile("mov.u32 %0, %0;" : "+r"(pc.tails));
    xw_stage_outputs(s, pc, e, before_v, carry, l, true, &lo, &hi);
    __syncthreads();
    xw_write_values(a, s, e, out_lo, out_hi, l, false);
#endif
#endif
#if SELF_CLEARING
    xw_zero_work_if_last(a, s, l);
#endif
}

__device__ __forceinline__ void xw_runs(const RunsArgs& a) {
    __shared__ RunsShared s;
    const unsigned int l = threadIdx.x;
    const RunsParams& p = a.p;
    // (Variant 0 runs with clear 0 or XW_CLEAR_LAUNCH; variant 1 only with XW_SELF_CLEARING.)
    if (!SELF_CLEARING && p.clear != 0) {
        const unsigned long long i = xw_group() * BLOCK + l;
        if (i < W_FLAGS + p.tiles) a.work[i] = 0;
        if (i == 0) *a.runs = 0;
        return;
    }
    // Whole blocks leave together, so __syncthreads below is reached by all.
    if (xw_group() >= p.tiles) return;
    // Tiles are numbered in the order blocks take a ticket, so a tile's predecessors have
    // started.
    if (l == 0) s.word = atomicAdd(&a.work[0], 1u);
    __syncthreads();
    const unsigned int t = s.word;
    // Every tile but the last is full: its bounds checks (a predicate a word and an element,
    // 16-32 a thread) go.
    if (p.n - t * TILE >= TILE)
        xw_runs_tile<true>(a, s, t, l);
    else
        xw_runs_tile<false>(a, s, t, l);
}
