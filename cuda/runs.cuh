// Runs of equal consecutive keys, single pass, with CUDA's own intrinsics: the text of
// unique.cu (XW_RUNS_UNIQUE), run_length.cu (XW_RUNS_RLE) and reduce_by_key.cu (XW_RUNS_RBK);
// the twin of shaders/runs.glsl, whose header describes the heads and tails, the tile's four
// steps, the canonical order of a run's reduction, the tile states and the look-back with its
// fallback. Modelled by src/cpu/runs.rs.
//
// Variant constants: KEY_WORDS (32-bit words per key), ITEMS (elements per thread), BLOCK
// (threads per block); RBK also OP (reduce_op.cuh codes).

struct RunsParams {
    unsigned int n;      // elements
    unsigned int tiles;  // tiles of the input
    unsigned int spin;   // polls of unpublished predecessors per look-back before computing them here
    unsigned int clear;  // nonzero: zero the ticket and the flags, and the run count
};

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
#define TILE (BLOCK * ITEMS)
#define CHUNK 16u  // threads whose heads one thread sums in step 2
// 32-bit words of a value (reduce-by-key's; the other kernels load none) and of the largest
// element, keys or values, that a tile stages in shared memory.
#if defined(XW_RUNS_RBK)
#define VALUE_WORDS ((unsigned int)(sizeof(xw_vt) / 4))
#else
#define VALUE_WORDS 1u
#endif
// Blocks of BLOCK threads an SM holds at least (registers capped to fit): reduce-by-key's
// 32-bit kernels otherwise took 80 registers, three blocks an SM.
#define XW_RUNS_MIN_BLOCKS ((KEY_WORDS == 1 && VALUE_WORDS == 1) ? 4 : 1)
#define STAGE_WORDS ((TILE + 1) * (KEY_WORDS > VALUE_WORDS ? KEY_WORDS : VALUE_WORDS))
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
    unsigned int inv_before[BLOCK]; // step 2: H[l]
    xw_vt inv_carry[BLOCK];         // step 2: C[l]
    unsigned int lb_flag[BLOCK];    // the look-back window's flags
    unsigned int inv_chunk[BLOCK / CHUNK];  // step 2: heads of each chunk of CHUNK threads
    unsigned int stage[XW_PAD(STAGE_WORDS)];  // a tile's keys, then its values, as words
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
    Carry carry;
    // The near look-back's prefix: not in `carry`, which warps still leaving the tile's own
    // summary may be reading as its aggregate while warp 0 looks back.
    Carry near_prefix;
};

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

// One thread piece: its keys, values, and which of its elements are heads and tails (bit j).
struct Piece {
    xw_key k[ITEMS];
    xw_vt v[ITEMS];
    unsigned int heads;
    unsigned int tails;
    unsigned int len;  // its elements below n
};

// Element e of the tile's keys in the stage.
__device__ __forceinline__ xw_key xw_stage_key(const RunsShared& s, unsigned int e) {
    return KEY_WORDS == 2 ? xw_key_from(s.stage[XW_PAD(2 * e)], s.stage[XW_PAD(2 * e + 1)])
                          : (xw_key)s.stage[XW_PAD(e)];
}

// A piece's elements, read through shared memory: the tile's keys (then its values) are
// loaded by all threads at once, consecutive threads reading consecutive words, and each thread
// then takes its ITEMS consecutive elements from shared memory. (Each thread loading its own
// ITEMS elements from global memory used 4.5 of every 32 bytes the L1 fetched: the kernels
// were bound by L2 traffic at 11% of DRAM bandwidth, Nsight Compute on an H100.) Every thread
// calls it.
__device__ __forceinline__ void xw_load_piece(const RunsArgs& a, RunsShared& s, unsigned int t,
                                              unsigned int l, Piece& pc) {
    const unsigned int n = a.p.n;
    const unsigned int tile_first = t * TILE;
    const unsigned int tile_len = min((unsigned int)TILE, n - tile_first);
    const unsigned int first = tile_first + l * ITEMS;
    pc.len = first < n ? min((unsigned int)ITEMS, n - first) : 0u;
    pc.heads = 0;
    pc.tails = 0;
    // The keys either side of the piece, from global memory (L2 hits, loaded while the stage
    // fills; taking them from the stage after its barrier cost 4-10% on an H100).
    const xw_key prev = first > 0 && first < n ? xw_key_at(a, first - 1) : 0;
    const xw_key next = pc.len > 0 && first + pc.len < n ? xw_key_at(a, first + pc.len) : 0;
#if defined(XW_RUNS_RBK)
    // The tile's values are loaded with its keys (element l + j * BLOCK into register j), so
    // that the two loads' latencies overlap; they go to the stage once the keys have left it.
    xw_vt staged[ITEMS];
    const xw_vt* vsrc = a.values + tile_first + l;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j)
        staged[j] = l + j * BLOCK < tile_len ? vsrc[j * BLOCK] : xw_vt(0);
#endif
    // Called once a block, after the ticket's barrier: no earlier reader of the stage. Word w of
    // the tile is step w / BLOCK of thread w % BLOCK: one address each side, constant offsets.
    {
        const unsigned int* src = a.keys + (unsigned long long)tile_first * KEY_WORDS + l;
        unsigned int* dst = &s.stage[XW_PAD(l)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS * KEY_WORDS; ++j) {
            if (l + j * BLOCK < tile_len * KEY_WORDS) dst[j * XW_PAD_STEP] = src[j * BLOCK];
        }
    }
    __syncthreads();
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int e = l * ITEMS + j;
        if (j < pc.len) {
            pc.k[j] = xw_stage_key(s, e);
        } else {
            pc.k[j] = 0;
        }
    }
#if defined(XW_RUNS_RBK)
    __syncthreads();  // every thread has read its keys
    {
        unsigned int* dst = &s.stage[XW_PAD(VALUE_WORDS * l)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) {
            if (l + j * BLOCK < tile_len) {
                unsigned int lo, hi;
                xw_vt_bits(staged[j], &lo, &hi);
                // A value's two words are neighbours: XW_PAD adds no word between 2i and 2i + 1.
                dst[j * VALUE_WORDS * XW_PAD_STEP] = lo;
                if (VALUE_WORDS == 2) dst[j * VALUE_WORDS * XW_PAD_STEP + 1] = hi;
            }
        }
    }
    __syncthreads();
#endif
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
#if defined(XW_RUNS_RBK)
        const unsigned int e = l * ITEMS + j;
        pc.v[j] = j < pc.len ? xw_vt_from(s.stage[XW_PAD(VALUE_WORDS * e)],
                                          VALUE_WORDS == 2 ? s.stage[XW_PAD(VALUE_WORDS * e + 1)]
                                                           : 0u)
                             : xw_vt(0);
#else
        pc.v[j] = j < pc.len ? xw_value_at(a, first + j) : xw_vt(0);
#endif
    }
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        if (j < pc.len) {
            const xw_key before = j == 0 ? prev : pc.k[j - 1];
            const xw_key after = j + 1 == pc.len ? next : pc.k[min(j + 1, (unsigned int)ITEMS - 1)];
            const bool head = first + j == 0 || pc.k[j] != before;
            const bool tail = first + j + 1 == n || pc.k[j] != after;
            pc.heads |= (unsigned int)head << j;
            pc.tails |= (unsigned int)tail << j;
        }
    }
}

// The trail of a piece: the fold of its values from its last head (or its first value).
__device__ __forceinline__ xw_vt xw_piece_trail(const Piece& pc) {
    xw_vt acc = pc.v[0];
#pragma unroll
    for (unsigned int j = 1; j < ITEMS; ++j) {
        if (j < pc.len) acc = ((pc.heads >> j) & 1u) ? pc.v[j] : xw_vop(acc, pc.v[j]);
    }
    return acc;
}

// Step 2's left fold of the trails, which a head restarts, run as one fold per segment: thread
// r < pieces with a head (or r = 0) folds from its trail on through the threads after it until
// the next head, writing C[q] (the value before q) for each q it passes; the last segment's
// thread carries on to BLOCK and returns the tile's value (true), which no other thread reaches.
// Every C[q] is the serial fold's value, bit for bit, and no thread folds what another does.
__device__ __forceinline__ bool xw_segment_fold(RunsShared& s, unsigned int r,
                                                unsigned int pieces, bool own, xw_vt* tile_v) {
    xw_vt acc = s.inv_trail[r];
    unsigned int q = r + 1;
    for (; q < BLOCK; ++q) {
        if (own) s.inv_carry[q] = acc;
        if (q < pieces) {
            if (s.inv_heads[q] > 0) return false;
            acc = xw_vop(acc, s.inv_trail[q]);
        }
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

// Step 2 for tile t, from each thread's head count and trail (step 1): the tile's aggregate
// (every thread gets it); with `own`, also H[l] and C[l] in inv_before and inv_carry. Every
// thread calls it. Step 2 is the left fold of the pieces' (heads, trail) in thread order,
// computed in parallel: H[l] sums integers (through per-chunk sums), C[l] and the aggregate's
// value come from xw_segment_fold. (One thread folding all BLOCK pieces in turn kept every tile
// waiting on a chain of BLOCK shared-memory reads; now the chain is as long as the longest run
// of threads without a head.)
__device__ Carry xw_tile_summary(const RunsArgs& a, RunsShared& s, unsigned int t, unsigned int l,
                                 bool own, unsigned int piece_heads, xw_vt piece_trail) {
    // inv_heads, inv_trail and inv_chunk may still be read by an earlier summary (the tile's
    // own, before the look-back's fallback computes a predecessor's).
    if (!own) __syncthreads();
    s.inv_heads[l] = piece_heads;
    s.inv_trail[l] = piece_trail;
    __syncthreads();
    if (l < BLOCK / CHUNK) {
        unsigned int sum = 0;
#pragma unroll
        for (unsigned int i = 0; i < CHUNK; ++i) sum += s.inv_heads[l * CHUNK + i];
        s.inv_chunk[l] = sum;
    }
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
    if (own) {
        unsigned int h = 0;
        const unsigned int c = l / CHUNK;
        for (unsigned int i = 0; i < c; ++i) h += s.inv_chunk[i];
        for (unsigned int r = c * CHUNK; r < l; ++r) h += s.inv_heads[r];
        s.inv_before[l] = h;
    }
    if (l == 0) {
        unsigned int heads = 0;
#pragma unroll
        for (unsigned int i = 0; i < BLOCK / CHUNK; ++i) heads += s.inv_chunk[i];
        s.carry.heads = heads;
    }
    __syncthreads();
    return s.carry;
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

// The exclusive prefix E of tile k > 0 (every thread gets it), whose aggregate is `agg`;
// publishes the tile's inclusive prefix. Every thread calls it.
__device__ Carry xw_look_back(const RunsArgs& a, RunsShared& s, unsigned int k, Carry agg,
                              unsigned int l) {
    // The near look-back, by warp 0 alone: lane i polls the flag of tile k - 1 - i until every
    // tile of the window up to the nearest inclusive prefix (lane m) has published; then lane
    // i <= m reads its tile's value, the heads are summed by a butterfly and the value is folded
    // from the nearest value with a head (or from lane m's) down to lane 0 by shuffles: the
    // window's left fold, bit for bit the first-window path's below, with no block barrier per
    // poll (four a poll below). The other warps stage their keys meanwhile (see xw_runs). A
    // window without an inclusive prefix, or a budget run out, leaves the look-back to the
    // window path below (with the polls left): walking down 32 tiles at a time (integers) took
    // 1.07-1.14x the time of leaving at once (H200, 2^20-2^24).
    if (l < XW_WARP) {
        const unsigned int lane = l;
        const int tile = (int)k - 1 - (int)lane;
        unsigned int polls = 0;
        unsigned int incl, empty, limit;
        for (;; ++polls) {
            // Tiles before tile 0 read as inclusive: never the nearest once tile 0 has published
            // (and never read).
            const unsigned int f = tile >= 0 ? xw_poll_flag(a, (unsigned int)tile) : FLAG_INCLUSIVE;
            incl = __ballot_sync(XW_FULL_MASK, f == FLAG_INCLUSIVE);
            limit = incl != 0 ? (unsigned int)(__ffs(incl) - 1) : (unsigned int)XW_WARP - 1;
            empty = __ballot_sync(XW_FULL_MASK, f == 0 && lane <= limit);
            if (empty == 0 || polls >= a.p.spin) break;
        }
        const bool ok = empty == 0 && incl != 0;
        if (ok) {
            // Each lane's poll was an acquire of its tile's flag: its value can be read.
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
    __syncthreads();
    if (s.lb_ok) return s.near_prefix;
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
                const Carry c = xw_tile_summary(a, s, tile, l, false, h, trail);
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

// Step 4 for one piece: stages what the piece outputs (unique: a key at each head; the others:
// a key, or with `values` the run's value, at each tail) at its place in the tile's output,
// r - e.heads, and widens [lo, hi) to cover those places.
__device__ __forceinline__ void xw_stage_outputs(RunsShared& s, const Piece& pc, Carry e,
                                                 unsigned int before, xw_vt carry, unsigned int l,
                                                 bool values, unsigned int* lo, unsigned int* hi) {
    unsigned int seen = 0;  // heads of the piece so far
    xw_vt partial = xw_vt(0);
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        if (j < pc.len) {
            const bool head = (pc.heads >> j) & 1u;
            seen += head;
            partial = head || j == 0 ? pc.v[j] : xw_vop(partial, pc.v[j]);
            const unsigned int at = before + seen;  // the run's index + 1 - e.heads
#if defined(XW_RUNS_UNIQUE)
            const bool out = head;
#else
            const bool out = (pc.tails >> j) & 1u;
#endif
            if (out) {
                *lo = min(*lo, at);
                *hi = max(*hi, at + 1);
                if (!values) {
                    s.stage[XW_PAD(KEY_WORDS * at)] = (unsigned int)pc.k[j];
                    if (KEY_WORDS == 2)
                        s.stage[XW_PAD(KEY_WORDS * at + 1)] = xw_key_hi(pc.k[j]);
                } else {
                    // The run began in this piece, in an earlier piece of the tile, or in an
                    // earlier tile.
                    const xw_vt local = seen > 0 || l == 0 ? partial : xw_vop(carry, partial);
                    const xw_vt value = seen == 0 && before == 0 ? xw_vop(e.v, local) : local;
                    unsigned int w0, w1;
                    xw_vt_bits(value, &w0, &w1);
                    s.stage[XW_PAD(VALUE_WORDS * at)] = w0;
                    if (VALUE_WORDS == 2) s.stage[XW_PAD(VALUE_WORDS * at + 1)] = w1;
                }
            }
        }
    }
}

__device__ __forceinline__ void xw_runs(const RunsArgs& a) {
    __shared__ RunsShared s;
    const unsigned int l = threadIdx.x;
    const RunsParams& p = a.p;
    if (p.clear) {
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
    // The tile's output range, widened in step 4 (the summary's barriers publish these).
    if (l == 0) {
        s.out_lo = TILE + 1;
        s.out_hi = 0;
    }
    // The thread's piece, loaded once: its summary now, its outputs after the look-back.
    Piece pc;
    xw_load_piece(a, s, t, l, pc);
    const Carry agg = xw_tile_summary(a, s, t, l, true, __popc(pc.heads),
                                      pc.len > 0 ? xw_piece_trail(pc) : xw_vt(0));
    const unsigned int before = s.inv_before[l];
    const xw_vt carry = s.inv_carry[l];
    Carry e;
    e.heads = 0;
    e.v = xw_vt(0);
    if (t > 0 && l == 0) xw_publish(a, t, FLAG_AGGREGATE, agg);
    // Step 4: the tile's outputs take consecutive places from e.heads - 1 on; each is staged in
    // shared memory at its place in the tile's range (r - e.heads, 0 to TILE) and the range is
    // then written by all threads at once, consecutive threads writing consecutive words (each
    // thread storing its own outputs used 4 of every 32 bytes written). The keys' places do
    // not depend on the look-back, so they are staged before it (while warp 0 looks back, the
    // others stage theirs). Every thread read its piece from the stage before the summary's
    // barriers.
    unsigned int lo = TILE + 1, hi = 0;
    xw_stage_outputs(s, pc, e, before, carry, l, false, &lo, &hi);
    if (hi > 0) {
        atomicMin(&s.out_lo, lo);
        atomicMax(&s.out_hi, hi);
    }
    if (t == 0) {
        if (l == 0) xw_publish(a, 0, FLAG_INCLUSIVE, agg);
    } else {
        e = xw_look_back(a, s, t, agg, l);
    }
    if (t + 1 == p.tiles && l == 0) *a.runs = (unsigned long long)(e.heads + agg.heads);
    __syncthreads();
    const unsigned int out_lo = s.out_lo, out_hi = s.out_hi;
    // Place `at` of the tile is output e.heads + at - 1 (at >= 1 where e.heads is 0).
    // The range holds at most TILE places (an output per element), so each thread has at most
    // ITEMS * KEY_WORDS words to write, at constant offsets from its first.
    {
        const unsigned int w0 = out_lo * KEY_WORDS + l;
        const unsigned int end = out_hi * KEY_WORDS;
        unsigned int* dst = a.keys_out + ((unsigned long long)e.heads * KEY_WORDS + w0 - KEY_WORDS);
        const unsigned int* src = &s.stage[XW_PAD(w0)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS * KEY_WORDS; ++j) {
            if (w0 + j * BLOCK < end) dst[j * BLOCK] = src[j * XW_PAD_STEP];
        }
    }
#if !defined(XW_RUNS_UNIQUE)
    __syncthreads();  // the keys are written out
    xw_stage_outputs(s, pc, e, before, carry, l, true, &lo, &hi);
    __syncthreads();
    {
        const unsigned int i0 = out_lo + l;
        xw_vt* dst = a.values_out + ((unsigned long long)e.heads + i0 - 1);
        const unsigned int* src = &s.stage[XW_PAD(VALUE_WORDS * i0)];
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) {
            const unsigned int at = j * VALUE_WORDS * XW_PAD_STEP;
            if (i0 + j * BLOCK < out_hi)
                dst[j * BLOCK] = xw_vt_from(src[at], VALUE_WORDS == 2 ? src[at + 1] : 0u);
        }
    }
#endif
}
