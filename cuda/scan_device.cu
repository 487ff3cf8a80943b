// Device scan, single pass: chained scan with decoupled look-back, each tile's exclusive
// prefix the canonical left fold of the tile totals; the twin of shaders/scan_device.comp (see
// there for why the order is canonical, how tiles move through shared memory, how the
// look-back window works and how a stalled predecessor is handled), with a near look-back by
// one warp before the window (below).
// Variant constants: OP (0 sum, 2 min, 3 max), EXCLUSIVE, ITEMS, LB_TILES (look-back window:
// tiles per thread), PARTIALS_IN_SHARED (32-bit types: each thread's partial folds stay in
// shared memory through the look-back and are computed again at the end; 0: in registers),
// SELF_CLEARING (1: launches with clear == XW_SELF_CLEARING, whose code only this variant has;
// 0: the clearing launch and the launches after it), EPOCHS (1: launches with clear ==
// XW_EPOCHS, 4-byte types only, whose code only this variant has; below), VEC (1: the tile in
// registers, below),
// NEAR_DEPTH (4-byte integers: predecessors each lane of the near look-back polls, 1 or 4).

#include "reduce_op.cuh"
#include "scan_common.cuh"

#define FLAG_AGGREGATE 1u
#define FLAG_INCLUSIVE 2u
#define XW_LB (XW_SCAN_BLOCK * LB_TILES)  // predecessors one look-back step reads
#define XW_NEAR_POLLS 64                 // polls of the near look-back (shaders: NEAR_POLLS)

struct ScanDeviceParams {
    unsigned int n;      // elements in this launch (a chunk of whole tiles)
    unsigned int tiles;  // tiles in this launch; clearing: flag words (two per tile of the scan)
    unsigned int tile0;  // global index of the launch's first tile
    unsigned int chunk;  // this launch's tile counter; clearing: the number of counters
    unsigned int spin;   // polls of a window with unpublished tiles before reducing them here
    unsigned int clear;  // XW_CLEAR_LAUNCH, XW_SELF_CLEARING, XW_EPOCHS or 0 (see the Vulkan twin)
    unsigned int epoch_wrap;   // XW_EPOCHS: the number of epochs (after the last comes 0)
    unsigned int epoch_tiles;  // XW_EPOCHS: the states `flags` holds (a multiple of XW_SCRUB)
    unsigned int gate_x;  // the Vulkan twin's gated f32 sums only (0 here)
    unsigned int gate_y;
};

#define XW_CLEAR_LAUNCH 1u   // only zero flags[0 .. tiles) and counters[0 .. chunk)
#define XW_SELF_CLEARING 2u  // the last tile to count itself done zeroes the states and counters
#define XW_EPOCHS 3u         // states tagged with the launch's epoch, advanced by the last ticket

// XW_SELF_CLEARING, at the end of the tile: the last tile to count itself done (`last`, see
// the kernel) zeroes the tile states and the launch's two counters (see the Vulkan twin). Every
// thread calls it.
__device__ __forceinline__ void zero_states_if_last(unsigned* counters, unsigned* flags,
                                                    T* aggregates, T* inclusives,
                                                    const ScanDeviceParams& p, const unsigned& last) {
    __syncthreads();
    if (!last) return;
    __threadfence();
    const unsigned tiles = p.tile0 + p.tiles;
    // Packed states take two words a tile; otherwise a flag word and two values a tile.
    for (unsigned i = threadIdx.x; i < 2 * tiles; i += blockDim.x) {
        if (sizeof(T) == 4 || i < tiles) flags[i] = 0;
    }
    if (sizeof(T) != 4) {
        for (unsigned i = threadIdx.x; i < tiles; i += blockDim.x) {
            aggregates[i] = T(0);
            inclusives[i] = T(0);
        }
    }
    if (threadIdx.x == 0) {
        counters[p.chunk] = 0;
        counters[p.chunk + 1] = 0;
    }
}

// XW_EPOCHS (see the Vulkan twin): the tile counter and the epoch are one 64-bit word,
// counters[p.chunk] (the ticket) and counters[p.chunk + 1] (the epoch), so each tile takes its
// ticket and the launch's epoch in one atomic. The tile that takes the last ticket sets the
// word to the next epoch and ticket 0 at once (no tile of the launch takes a ticket after it),
// and zeroes the XW_SCRUB states from counters[p.chunk + 2] on that this launch does not use,
// moving that place on: every state is zeroed or written again within p.epoch_tiles /
// XW_SCRUB launches, fewer than the epochs before a tag recurs (p.epoch_wrap), so a state can
// never carry the tag of a later launch. Every thread calls it, thread 0 having set `scrub` to
// the first state to zero plus one (0: not the last tile).
#define XW_SCRUB 1024u
__device__ __forceinline__ void scrub_states(unsigned* flags, unsigned tiles, unsigned scrub) {
    if (scrub == 0) return;
    for (unsigned i = threadIdx.x; i < XW_SCRUB; i += blockDim.x) {
        const unsigned at = scrub - 1u + i;
        if (at >= tiles) reinterpret_cast<unsigned long long*>(flags)[at] = 0ull;
    }
}

// VEC (4-byte integers, ITEMS a multiple of 4; f32 at ITEMS 16; src/tuning.rs says where):
// the tile in registers, the Vulkan twin's scan_device_vec.comp (see vec_x in
// scan_device.glsl): warp w owns the run of 32 * ITEMS elements at w * 32 * ITEMS of the tile,
// and in round r its lane l holds the run's 16-byte vector r * 32 + l (every binding starts at
// a multiple of 16 bytes, and every launch at a whole tile). The default launch bounds, also
// where SELF_CLEARING (below): at 32 elements a thread 64 registers, four blocks an SM; bounds
// of five took 48 and spilled 64-80 bytes, 1.08-1.19x the time from 2^24 on an H200 (NOTES.md
// version 40). f32 keeps the documented order (XW_VEC_ORDERED; the twin's vec_cin): the
// tile's thread 8r + i of warp w's run lies in round r, lanes 4i .. 4i + 3, which fold their
// vectors in sequence, each handing its fold up one lane; thread 32w + l's total is gathered
// to lane l for block_prefix, and its prefix goes back after the look-back. f32 min and max
// take the integers' layout: minNum and maxNum with -0.0 below +0.0 are associative, and every
// step of that layout folds in order (no operand swapped), so it gives the documented left
// fold's bits with shorter chains of xw_op (H200, NOTES.md version 72).
constexpr bool XW_INTEGER = T(1) / T(2) == T(0);
constexpr bool XW_VEC =
    VEC && sizeof(T) == 4 && ITEMS % 4 == 0 && (XW_INTEGER || ITEMS == 16);
constexpr bool XW_VEC_ORDERED = XW_VEC && !XW_INTEGER && OP != 2 && OP != 3;

// An element of the register tile on its way out: integers with their prefix q before them;
// XW_VEC_ORDERED's elements are final already.
__device__ __forceinline__ T xw_vec_out(T q, T v) { return XW_VEC_ORDERED ? v : xw_op(q, v); }

// Folds the four elements at x onto c in order, the last partial fold.
__device__ __forceinline__ T vec_fold(T c, const T* x) {
    return xw_op(xw_op(xw_op(xw_op(c, x[0]), x[1]), x[2]), x[3]);
}
// Other 32-bit types go through shared memory (coalesced loads and stores, transposed there).
#define XW_TRANSPOSE (sizeof(T) == 4)
#define XW_TILE (XW_SCAN_BLOCK * ITEMS)
#define XW_STAGE (XW_TRANSPOSE && !XW_VEC ? XW_TILE + XW_TILE / 32 : 1)

// A 4-byte element from its bits, and back.
__device__ __forceinline__ T xw_from_bits(unsigned u) {
    T v;
    memcpy(&v, &u, sizeof(unsigned) < sizeof(T) ? sizeof(unsigned) : sizeof(T));
    return v;
}
__device__ __forceinline__ unsigned xw_to_bits(T v) {
    unsigned u = 0;
    memcpy(&u, &v, sizeof(unsigned) < sizeof(T) ? sizeof(unsigned) : sizeof(T));
    return u;
}

// Index in the tile stage of tile element i: one pad word per 32.
__device__ __forceinline__ unsigned xw_pad(unsigned i) { return i + (i >> 5); }

// Values written by other blocks are read past the L1 cache.
__device__ __forceinline__ T load_published(const T* p) { return *(const volatile T*)p; }

// 32-bit types keep a tile's flag and value in one 64-bit word (flag in the high half, so
// atomicMax still only lets flags grow): one load sees both, and publishing needs no fence.
#define XW_PACKED (sizeof(T) == 4)
typedef unsigned long long xw_word;

__device__ __forceinline__ xw_word xw_pack(unsigned flag, T v) {
    unsigned bits = 0;
    memcpy(&bits, &v, sizeof(bits));
    return ((xw_word)flag << 32) | bits;
}

__device__ __forceinline__ T xw_unpack(xw_word w) {
    T v = xw_identity(T(0));
    const unsigned bits = (unsigned)w;
    memcpy(&v, &bits, sizeof(bits));
    return v;
}

#if EPOCHS
// XW_EPOCHS: the launch's epoch times 4, the tag of its states' flags, set by thread 0 before
// the first barrier. Read from shared memory at each use (volatile, so not kept in a register
// through the look-back: the register tile then spilled).
__shared__ unsigned xw_eb;
#define XW_EB (*(volatile unsigned*)&xw_eb)
#else
#define XW_EB 0u
#endif

// Tile `tile`'s flag; packed state also yields the value that goes with it in `v`. EPOCHS:
// the state's high word is its launch's epoch times 4 (XW_EB) plus the flag, so a state of an
// earlier launch reads as 0, unpublished.
__device__ __forceinline__ unsigned read_flag(const unsigned* flags, unsigned tile, T& v) {
    unsigned f;
    if constexpr (XW_PACKED) {
        const xw_word w = *((const volatile xw_word*)flags + tile);
        v = xw_unpack(w);
        f = (unsigned)(w >> 32);
    } else {
        f = *(const volatile unsigned*)&flags[tile];
    }
    if (EPOCHS) {
        f -= XW_EB;
        return f < 3u ? f : 0u;
    }
    return f;
}

// The value of tile `tile` whose flag was read as `f` (nonzero) before a __threadfence.
__device__ __forceinline__ T read_value(const T* aggregates, const T* inclusives, unsigned tile,
                                        unsigned f) {
    return f == FLAG_INCLUSIVE ? load_published(&inclusives[tile]) : load_published(&aggregates[tile]);
}

// Publishes tile `tile`'s aggregate (or inclusive prefix) `v` with flag `flag`. EPOCHS: tagged
// with this launch's epoch times 4, XW_EB; the tile's own first publication (`first`) replaces
// whatever an earlier launch left (whose tag may be larger once the epochs have wrapped) by an
// exchange, and every later one, and any other tile's, takes the maximum, so that within the
// launch a state never goes back from an inclusive prefix to an aggregate (the look-back's
// walk relies on it: a plain store of every publication gave wrong sums on an H200).
__device__ __forceinline__ void publish(unsigned* flags, T* values, unsigned tile, unsigned flag, T v,
                                        bool first = false) {
    if constexpr (XW_PACKED && EPOCHS) {
        if (first) {
            atomicExch((xw_word*)flags + tile, xw_pack(flag + XW_EB, v));
        } else {
            atomicMax((xw_word*)flags + tile, xw_pack(flag + XW_EB, v));
        }
    } else if constexpr (XW_PACKED) {
        atomicMax((xw_word*)flags + tile, xw_pack(flag, v));
    } else {
        *(volatile T*)&values[tile] = v;
        __threadfence();
        atomicMax(&flags[tile], flag);
    }
}

__device__ T tile_total(const T* __restrict__ src, unsigned t, unsigned n, T* warp_totals) {
    const unsigned base = (t * blockDim.x + threadIdx.x) * ITEMS;
    T acc = xw_identity(T(0));
    for (unsigned j = 0; j < ITEMS; ++j) {
        if (base + j < n) acc = xw_op(acc, src[base + j]);
    }
    T prefix, total;
    block_prefix(acc, warp_totals, prefix, total);
    return total;
}

// Shared state of one look-back.
struct LookBack {
    T values[XW_LB];      // values[i]: the value of the window's i-th tile
    unsigned flags[XW_LB];  // flags[i]: its flag as read (the fallback's list)
    unsigned m[2];        // nearest inclusive prefix of the window, per poll parity
    unsigned last;        // the last inclusive prefix of a window read upwards, plus one
    unsigned near;        // whether the near look-back found the prefix
    T value;
};

// e folded with values[from], values[from + step], ... (count values of the look-back's
// window) in that order, the canonical left fold. The fold is one thread's chain on the
// look-back's critical path, and for floats its cost per value sets how fast the tiles'
// inclusive prefixes can follow each other (NOTES.md version 44): floats read their values
// XW_FOLD_BATCH at a time before they fold them, so that a link of the chain is one operation,
// not a shared-memory read and an operation (integers keep the plain loop: batches cost their
// kernels registers). The GLSL twin's fold_window.
#define XW_FOLD_BATCH 4
__device__ __forceinline__ T fold_values(T e, const T* values, int from, int count, int step) {
    int i = 0;
    if constexpr (!XW_INTEGER) {
        for (; i + XW_FOLD_BATCH <= count; i += XW_FOLD_BATCH) {
            T v[XW_FOLD_BATCH];
#pragma unroll
            for (int j = 0; j < XW_FOLD_BATCH; ++j) v[j] = values[from + (i + j) * step];
#pragma unroll
            for (int j = 0; j < XW_FOLD_BATCH; ++j) e = xw_op(e, v[j]);
        }
    }
    for (; i < count; ++i) e = xw_op(e, values[from + i * step]);
    return e;
}

// The near look-back, by the first warp alone (no block barrier; the GLSL twin's, for 32-bit
// types, meets in shared memory with subgroup barriers and walks down past windows without an
// inclusive prefix where the operator is associative). The results are the same left fold
// either way. lane i polls tile k - 1 - i
// until every tile above the nearest inclusive prefix among the 32 (offset m) has published;
// then the warp folds P(k - 1 - m) and the aggregates after it in order (the same left fold
// as the window's) and lane 0 publishes. Sets lb.near and lb.value; the caller meets the other
// warps at a barrier. Without an inclusive prefix among the 32, or after XW_NEAR_POLLS polls
// (at most spin + 1) with a gap, lb.near is false and the window look-back below takes over.
__device__ void look_back_near_walk(unsigned k, T total, unsigned* flags, T* aggregates,
                                    T* inclusives, unsigned spin, LookBack& lb);

__device__ void look_back_near(unsigned k, T total, unsigned* flags, T* aggregates,
                               T* inclusives, unsigned spin, LookBack& lb) {
    const unsigned lane = threadIdx.x;
    if constexpr (!XW_INTEGER) {
        look_back_near_walk(k, total, flags, aggregates, inclusives, spin, lb);
        return;
    }
#if NEAR_DEPTH > 1
    if constexpr (XW_PACKED) {
        // NEAR_DEPTH tiles a lane (lane i: tiles k - 1 - i - 32 r): one round trip reads a
        // window of 32 * NEAR_DEPTH states, so in a grid that is resident at once an inclusive
        // prefix reaches NEAR_DEPTH times as many tiles a round. Integers fold in any order:
        // the nearest inclusive prefix and the aggregates after it are reduced by a butterfly
        // (the same bits as the left fold). src/tuning.rs (scan_near_depth) says where.
        const unsigned count = min(k, (unsigned)(XW_WARP * NEAR_DEPTH));
        unsigned m = count;
        bool near = false;
        T v[NEAR_DEPTH];
        for (unsigned poll = 0; poll < min(spin + 1, (unsigned)XW_NEAR_POLLS); ++poll) {
            unsigned f[NEAR_DEPTH];
#pragma unroll
            for (unsigned r = 0; r < NEAR_DEPTH; ++r) {
                const unsigned w = lane + r * XW_WARP;
                v[r] = xw_identity(T(0));
                f[r] = w < count ? read_flag(flags, k - 1 - w, v[r]) : 0u;
            }
            m = count;
#pragma unroll
            for (unsigned r = NEAR_DEPTH; r-- > 0;) {
                const unsigned w = lane + r * XW_WARP;
                const unsigned incl = __ballot_sync(0xffffffffu, w < count && f[r] == FLAG_INCLUSIVE);
                if (incl) m = r * XW_WARP + (unsigned)__ffs(incl) - 1;
            }
            bool hole = false;
#pragma unroll
            for (unsigned r = 0; r < NEAR_DEPTH; ++r) {
                hole = hole || (lane + r * XW_WARP < m && f[r] == 0u);
            }
            if (__ballot_sync(0xffffffffu, hole) == 0u) {
                near = m < count;
                break;
            }
        }
        if (near) {
            T e = xw_identity(T(0));
#pragma unroll
            for (unsigned r = 0; r < NEAR_DEPTH; ++r) {
                if (lane + r * XW_WARP <= m) e = xw_op(e, v[r]);
            }
#pragma unroll
            for (unsigned d = XW_WARP / 2; d > 0; d /= 2) e = xw_op(e, __shfl_xor_sync(0xffffffffu, e, d));
            if (lane == 0) {
                lb.value = e;
                publish(flags, inclusives, k, FLAG_INCLUSIVE, xw_op(e, total));
            }
        }
        if (lane == 0) lb.near = near;
        return;
    }
#endif
    const unsigned count = min(k, (unsigned)XW_WARP);
    unsigned m = count;
    bool near = false;
    T v = xw_identity(T(0));
    unsigned f = 0;
    for (unsigned poll = 0; poll < min(spin + 1, (unsigned)XW_NEAR_POLLS); ++poll) {
        v = xw_identity(T(0));
        f = lane < count ? read_flag(flags, k - 1 - lane, v) : 0u;
        const unsigned incl = __ballot_sync(0xffffffffu, lane < count && f == FLAG_INCLUSIVE);
        m = incl ? (unsigned)__ffs(incl) - 1 : count;
        const unsigned gap = __ballot_sync(0xffffffffu, lane < m && f == 0u);
        if (gap == 0u) {
            near = incl != 0u;
            break;
        }
    }
    if constexpr (!XW_PACKED) {
        __threadfence();
        if (near && lane <= m) v = read_value(aggregates, inclusives, k - 1 - lane, f);
    }
    if (near) {
        T e = __shfl_sync(0xffffffffu, v, m);
        for (int i = (int)m - 1; i >= 0; --i) e = xw_op(e, __shfl_sync(0xffffffffu, v, i));
        if (lane == 0) {
            lb.value = e;
            publish(flags, inclusives, k, FLAG_INCLUSIVE, xw_op(e, total));
        }
    }
    if (lane == 0) lb.near = near;
}

// look_back_near for floats (the GLSL twin's): a window without an inclusive prefix keeps its
// values in lb.values (values[d]: tile k - 1 - d) and the warp moves down a window, until a
// window holds an inclusive prefix P; then lane 0 folds P and every value kept after it in
// order, the window path's left fold. At most XW_LB tiles, and XW_NEAR_POLLS polls and windows
// together; else lb.near is false and the window look-back takes over.
__device__ void look_back_near_walk(unsigned k, T total, unsigned* flags, T* aggregates,
                                    T* inclusives, unsigned spin, LookBack& lb) {
    const unsigned lane = threadIdx.x;
    bool near = false;
    int top = (int)k - 1;
    unsigned below = 0;
    unsigned polls = 0;
    while (top >= 0) {
        const unsigned count = min((unsigned)top + 1, (unsigned)XW_WARP);
        unsigned m;
        unsigned f;
        bool gap;
        T v;
        for (;;) {
            v = xw_identity(T(0));
            f = lane < count ? read_flag(flags, (unsigned)top - lane, v) : 0u;
            const unsigned incl = __ballot_sync(0xffffffffu, lane < count && f == FLAG_INCLUSIVE);
            m = incl ? (unsigned)__ffs(incl) - 1 : count;
            gap = __ballot_sync(0xffffffffu, lane < m && f == 0u) != 0u;
            if (!gap || polls >= min(spin, (unsigned)XW_NEAR_POLLS - 1)) break;
            ++polls;
        }
        const bool incl = m < count;
        if (gap || (!incl && below + 2 * XW_WARP > XW_LB)) break;
        const bool mine = lane < count && lane <= m;
        if constexpr (!XW_PACKED) {
            __threadfence();
            if (mine) v = read_value(aggregates, inclusives, (unsigned)top - lane, f);
        }
        if (mine) lb.values[below + lane] = v;
        __syncwarp();
        if (incl) {
            if (lane == 0) {
                const unsigned d = below + m;
                const T e = fold_values(lb.values[d], lb.values, (int)d - 1, (int)d, -1);
                lb.value = e;
                publish(flags, inclusives, k, FLAG_INCLUSIVE, xw_op(e, total));
            }
            near = true;
            break;
        }
        below += XW_WARP;
        top -= XW_WARP;
        if (++polls >= XW_NEAR_POLLS) break;
    }
    if (lane == 0) lb.near = near;
}

// Reduces the window's tiles i < m whose flag reads 0 (tile hi - i, or lo + i upwards) here,
// publishes their aggregates and puts them in lb.values. Every thread calls it.
__device__ void reduce_missing(const T* __restrict__ src, unsigned* flags, T* aggregates,
                               const ScanDeviceParams& p, unsigned hi_or_lo, bool down,
                               unsigned m, LookBack& lb, T* warp_totals) {
    for (unsigned i = 0; i < m; ++i) {
        if (lb.flags[i] != 0) continue;  // uniform: shared memory, written before a barrier
        // Tiles of earlier launches have all finished, so this one belongs to this launch.
        const unsigned tile = down ? hi_or_lo - i : hi_or_lo + i;
        const T a = tile_total(src, tile - p.tile0, p.n, warp_totals);
        if (threadIdx.x == 0) {
            publish(flags, aggregates, tile, FLAG_AGGREGATE, a);
            lb.values[i] = a;
        }
    }
    __syncthreads();
}

// Thread i polls tiles hi - i - r * blockDim.x (window offsets below `count`) until every tile
// above the window's nearest inclusive prefix (offset m, `count` if none) has published, or
// `spin` polls have passed; then the tiles' values are in lb.values and their flags in
// lb.flags. Returns m; `complete` tells whether every tile above m published. Every thread
// calls it.
__device__ unsigned poll_window(const unsigned* flags, const T* aggregates, const T* inclusives,
                                unsigned hi, unsigned count, unsigned spin, LookBack& lb,
                                bool& complete) {
    const unsigned i = threadIdx.x;
    if (i == 0) lb.m[0] = count;
    __syncthreads();
    unsigned m = count;
    for (unsigned poll = 0;; ++poll) {
        // Each thread writes only its own slots, read by others after the barriers below.
#pragma unroll
        for (unsigned r = 0; r < LB_TILES; ++r) {
            const unsigned w = i + r * XW_SCAN_BLOCK;
            if (w < count) {
                T v = xw_identity(T(0));
                const unsigned f = read_flag(flags, hi - w, v);
                if (f == FLAG_INCLUSIVE) atomicMin(&lb.m[poll & 1], w);
                lb.values[w] = v;
                lb.flags[w] = f;
            }
        }
        __syncthreads();
        m = lb.m[poll & 1];
        // The other slot was last read before the previous poll's second barrier.
        if (i == 0) lb.m[(poll + 1) & 1] = count;
        bool gap = false;
#pragma unroll
        for (unsigned r = 0; r < LB_TILES; ++r) {
            const unsigned w = i + r * XW_SCAN_BLOCK;
            if (w < m && lb.flags[w] == 0) gap = true;
        }
        complete = !__syncthreads_or(gap);
        if (complete || poll >= spin) break;
    }
    if constexpr (!XW_PACKED) {
        __threadfence();
#pragma unroll
        for (unsigned r = 0; r < LB_TILES; ++r) {
            const unsigned w = i + r * XW_SCAN_BLOCK;
            if (w < count && lb.flags[w] != 0)
                lb.values[w] = read_value(aggregates, inclusives, hi - w, lb.flags[w]);
        }
    }
    __syncthreads();
    return m;
}

// The exclusive prefix of tile k > 0, whose total is `total`; publishes the tile's inclusive
// prefix as soon as it is known.
__device__ T look_back(const T* __restrict__ src, unsigned k, T total, unsigned* flags,
                       T* aggregates, T* inclusives, const ScanDeviceParams& p, T* warp_totals) {
    __shared__ LookBack lb;
    // Usually a tile among the 32 before has published its inclusive prefix.
    if (threadIdx.x < XW_WARP) look_back_near(k, total, flags, aggregates, inclusives, p.spin, lb);
    __syncthreads();
    if (lb.near) return lb.value;
    // Find the nearest inclusive prefix j (-1: none), making sure every tile after it has
    // published its aggregate. Usually it lies in the first window: then the fold is done here.
    int hi = (int)k - 1;
    int j = -1;
    while (hi >= 0) {
        const unsigned count = (unsigned)min(hi + 1, (int)XW_LB);
        bool complete;
        const unsigned m = poll_window(flags, aggregates, inclusives, (unsigned)hi, count,
                                       p.spin, lb, complete);
        if (!complete) reduce_missing(src, flags, aggregates, p, (unsigned)hi, true, m, lb, warp_totals);
        if (m < count && hi == (int)k - 1) {
            // values[m] is P(k - 1 - m); values[m - 1] .. values[0] the aggregates after it.
            if (threadIdx.x == 0) {
                const T e = fold_values(lb.values[m], lb.values, (int)m - 1, (int)m, -1);
                lb.value = e;
                publish(flags, inclusives, k, FLAG_INCLUSIVE, xw_op(e, total));
            }
            __syncthreads();
            return lb.value;
        }
        if (m < count) {
            j = hi - (int)m;
            break;
        }
        hi -= (int)count;
    }
    // Fold the aggregates after j onto P(j) in order, a window at a time. A tile may have
    // replaced its aggregate by its inclusive prefix since the walk down: the fold then
    // restarts from that prefix, which is the same left fold.
    T e = xw_identity(T(0));
    if (j >= 0 && threadIdx.x == 0) {
        T v;
        read_flag(flags, (unsigned)j, v);
        if constexpr (!XW_PACKED) {
            __threadfence();
            v = load_published(&inclusives[j]);
        }
        e = v;
    }
    for (unsigned lo = (unsigned)(j + 1); lo < k; lo += XW_LB) {
        const unsigned c = min(k - lo, XW_LB);
        if (threadIdx.x == 0) lb.last = 0;
        __syncthreads();
        bool missing = false;
#pragma unroll
        for (unsigned r = 0; r < LB_TILES; ++r) {
            const unsigned w = threadIdx.x + r * XW_SCAN_BLOCK;
            if (w < c) {
                T v = xw_identity(T(0));
                const unsigned f = read_flag(flags, lo + w, v);
                if (f == FLAG_INCLUSIVE) atomicMax(&lb.last, w + 1);
                if constexpr (!XW_PACKED) {
                    __threadfence();
                    if (f != 0) v = read_value(aggregates, inclusives, lo + w, f);
                }
                lb.values[w] = v;
                lb.flags[w] = f;
                missing = missing || f == 0;
            }
        }
        const bool gap = __syncthreads_or(missing);
        if (gap) reduce_missing(src, flags, aggregates, p, lo, false, c, lb, warp_totals);
        if (threadIdx.x == 0) {
            const unsigned last = lb.last;
            if (last != 0) e = lb.values[last - 1];
            e = fold_values(e, lb.values, (int)last, (int)(c - last), 1);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        lb.value = e;
        publish(flags, inclusives, k, FLAG_INCLUSIVE, xw_op(e, total));
    }
    __syncthreads();
    return lb.value;
}

// The self-clearing scan of 4-byte elements in at most 48 registers, five blocks an SM (the
// default allocation: 64 registers and a spill for i32, 32 and a spill for f32); f32 scans of
// 2^16 to 2^22 elements 2-8% faster on an H100, i32 unchanged (NOTES.md, version 26). Not the
// register tile (VEC), which spills at 48 (NOTES.md, version 40).
// The register tile of 16 elements a thread (f32's, and 4-byte integers' below 2^20) takes the
// same bounds: f32 took 40 registers and 28-44 bytes of spills under the default bounds (48 and
// none under these), 1.1x the time from 2^23 on an H200 (NOTES.md version 43); but its
// self-clearing variant (at most 1024 tiles) spilled 16 bytes at 48 registers, and at four
// blocks an SM (63 registers, none) took 2-4% less time at 2^20-2^22 on an H200 (NOTES.md
// version 47; the variant beyond, at four blocks, 5% more at 2^23).
#if VEC && XW_ELEM_BYTES == 4 && ITEMS == 16 && SELF_CLEARING
#define XW_SCAN_BOUNDS __launch_bounds__(XW_SCAN_BLOCK, 4)
#elif SELF_CLEARING && XW_ELEM_BYTES == 4 && !VEC || VEC && XW_ELEM_BYTES == 4 && ITEMS == 16
#define XW_SCAN_BOUNDS __launch_bounds__(XW_SCAN_BLOCK, 5)
#else
#define XW_SCAN_BOUNDS __launch_bounds__(XW_SCAN_BLOCK)
#endif
extern "C" __global__ XW_SCAN_BOUNDS void scan_device(
    const T* __restrict__ src, T* __restrict__ dst, unsigned* counters, unsigned* flags,
    T* aggregates, T* inclusives, ScanDeviceParams p) {
    __shared__ T warp_totals[XW_SCAN_BLOCK / XW_WARP];
    __shared__ T tile_stage[XW_STAGE];
    __shared__ unsigned s_tile;
#if SELF_CLEARING
    __shared__ unsigned s_last;  // the last tile to count itself done
#endif
#if EPOCHS
    __shared__ unsigned s_scrub;  // the last ticket's first state to zero, plus one (scrub_states)
#endif
    if (p.clear == XW_CLEAR_LAUNCH) {
        const unsigned long long i = xw_group() * blockDim.x + threadIdx.x;
        if (i < p.tiles) flags[i] = 0;
        if (i < p.chunk) counters[i] = 0;
        return;
    }
    const unsigned group = (unsigned)xw_group();
    if (group >= p.tiles) return;
    // Tiles are numbered in the order blocks start, so a tile's predecessors have started.
    if (threadIdx.x == 0) {
#if EPOCHS
        unsigned long long* word = reinterpret_cast<unsigned long long*>(&counters[p.chunk]);
        const unsigned long long w = atomicAdd(word, 1ull);
        const unsigned epoch = (unsigned)(w >> 32);
        s_tile = (unsigned)w;
        xw_eb = epoch << 2;
        s_scrub = 0;
        if ((unsigned)w + 1u == p.tiles) {
            const unsigned next = epoch + 1u >= p.epoch_wrap ? 0u : epoch + 1u;
            atomicExch(word, (unsigned long long)next << 32);
            const unsigned at = counters[p.chunk + 2];
            counters[p.chunk + 2] = at + XW_SCRUB >= p.epoch_tiles ? 0u : at + XW_SCRUB;
            s_scrub = at + 1u;
        }
#else
        s_tile = atomicAdd(&counters[p.chunk], 1u);
#endif
    }
    __syncthreads();
    const unsigned t = s_tile;
#if EPOCHS
    scrub_states(flags, p.tiles, s_scrub);
#endif

    const unsigned k = p.tile0 + t;
    const unsigned tile_base = t * XW_TILE;
    const unsigned base = tile_base + threadIdx.x * ITEMS;

    T s[ITEMS];
    T acc = xw_identity(T(0));
    T prefix, total;
    // VEC: the run's first vector in the tile (16-byte units) and whether the tile is whole.
    const unsigned warp = threadIdx.x / XW_WARP;
    const unsigned first = warp * XW_WARP * (ITEMS / 4) + threadIdx.x % XW_WARP;
    const bool whole = tile_base + XW_TILE <= p.n;
    if constexpr (XW_VEC) {
        if (whole) {
            const uint4* __restrict__ s4 = reinterpret_cast<const uint4*>(src + tile_base);
#pragma unroll
            for (unsigned r = 0; 4 * r < ITEMS; ++r) {
                const uint4 w = s4[first + r * XW_WARP];
                s[4 * r] = xw_from_bits(w.x);
                s[4 * r + 1] = xw_from_bits(w.y);
                s[4 * r + 2] = xw_from_bits(w.z);
                s[4 * r + 3] = xw_from_bits(w.w);
            }
        } else {
#pragma unroll
            for (unsigned r = 0; 4 * r < ITEMS; ++r) {
#pragma unroll
                for (unsigned c = 0; c < 4; ++c) {
                    const unsigned at = tile_base + 4 * (first + r * XW_WARP) + c;
                    s[4 * r + c] = at < p.n ? src[at] : xw_identity(T(0));
                }
            }
        }
    }
    // XW_VEC_ORDERED: each lane's carry into its vector (its thread's fold before it), and the
    // total of thread threadIdx.x in acc.
    T cin[XW_VEC_ORDERED ? ITEMS / 4 : 1];
    if constexpr (XW_VEC_ORDERED) {
        const unsigned lane = threadIdx.x % XW_WARP;
        constexpr unsigned per = XW_WARP / 4;  // documented threads a round
#pragma unroll
        for (unsigned r = 0; 4 * r < ITEMS; ++r) {
            T c = xw_identity(T(0));
#pragma unroll
            for (unsigned step = 1; step < 4; ++step) {
                const T up = __shfl_up_sync(XW_FULL_MASK, vec_fold(c, &s[4 * r]), 1);
                if ((lane & 3) == step) c = up;
            }
            cin[r] = c;
            const T t = __shfl_sync(XW_FULL_MASK, vec_fold(c, &s[4 * r]), 4 * (lane % per) + 3);
            if (lane / per == r) acc = t;
        }
    } else if constexpr (XW_VEC) {
        // Per round: the lane's vector scanned, the warp's scan of the lanes' totals, and the
        // vector becomes its elements' prefixes within the run.
        T carry = xw_identity(T(0));
#pragma unroll
        for (unsigned r = 0; 4 * r < ITEMS; ++r) {
            T* y = &s[4 * r];
            y[1] = xw_op(y[0], y[1]);
            y[2] = xw_op(y[1], y[2]);
            y[3] = xw_op(y[2], y[3]);
            const T incl = warp_inclusive(y[3]);
            // Floats: lane 0 takes the carry alone, as the NaN identity is not neutral on the
            // right of min and max (xw_op(a, NaN) is that NaN where `a` is a NaN).
            const T up = warp_shift_up_one(incl);
            const T pre = !XW_INTEGER && threadIdx.x % XW_WARP == 0 ? carry : xw_op(carry, up);
            carry = xw_op(carry, __shfl_sync(XW_FULL_MASK, incl, XW_WARP - 1));
            if (EXCLUSIVE) {
                y[3] = xw_op(pre, y[2]);
                y[2] = xw_op(pre, y[1]);
                y[1] = xw_op(pre, y[0]);
                y[0] = pre;
            } else {
#pragma unroll
                for (unsigned c = 0; c < 4; ++c) y[c] = xw_op(pre, y[c]);
            }
        }
        if (threadIdx.x % XW_WARP == 0) warp_totals[warp] = carry;
        __syncthreads();
        prefix = xw_identity(T(0));
        total = xw_identity(T(0));
#pragma unroll
        for (unsigned w = 0; w < XW_SCAN_BLOCK / XW_WARP; ++w) {
            if (w == warp) prefix = total;
            total = xw_op(total, warp_totals[w]);
        }
        __syncthreads();  // warp_totals is the fallback's (tile_total) in the look-back
    } else if (XW_TRANSPOSE) {
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            const unsigned idx = i * XW_SCAN_BLOCK + threadIdx.x;
            tile_stage[xw_pad(idx)] = tile_base + idx < p.n ? src[tile_base + idx] : xw_identity(T(0));
        }
        __syncthreads();
        // With PARTIALS_IN_SHARED the thread's elements stay in shared memory through the
        // look-back, and their partial folds are computed again at the end (the same fold, so
        // the same bits): ITEMS fewer live registers while the tile waits.
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) {
            acc = xw_op(acc, tile_stage[xw_pad(threadIdx.x * ITEMS + j)]);
            if (!PARTIALS_IN_SHARED) s[j] = acc;
        }
    } else {
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) s[j] = base + j < p.n ? src[base + j] : xw_identity(T(0));
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) {
            acc = xw_op(acc, s[j]);
            s[j] = acc;
        }
    }
    if (!XW_VEC || XW_VEC_ORDERED) block_prefix(acc, warp_totals, prefix, total);

    T e = xw_identity(T(0));
    if (k > 0) {
        if (threadIdx.x == 0) publish(flags, aggregates, k, FLAG_AGGREGATE, total, true);
        e = look_back(src, k, total, flags, aggregates, inclusives, p, warp_totals);
    } else if (threadIdx.x == 0) {
        publish(flags, inclusives, k, FLAG_INCLUSIVE, total, true);
    }
#if SELF_CLEARING
    // XW_SELF_CLEARING: the tile has published its last state and (the barrier that ends
    // look_back; tile 0 reads none) every thread has read its last one: thread 0 counts it
    // done, and the count's round trip overlaps the output below.
    if (threadIdx.x == 0) {
        __threadfence();
        s_last = atomicAdd(&counters[p.chunk + 1], 1u) + 1 == p.tiles;
    }
#endif

    const T pre = xw_op(e, prefix);
    if constexpr (XW_VEC) {
        if constexpr (XW_VEC_ORDERED) {
            // Each lane's elements from its thread's prefix, the carry and its vector.
            const unsigned lane = threadIdx.x % XW_WARP;
            constexpr unsigned per = XW_WARP / 4;
#pragma unroll
            for (unsigned r = 0; 4 * r < ITEMS; ++r) {
                const T tp = __shfl_sync(XW_FULL_MASK, pre, r * per + (lane >> 2));
                T* y = &s[4 * r];
                const T s0 = xw_op(cin[r], y[0]);
                const T s1 = xw_op(s0, y[1]);
                const T s2 = xw_op(s1, y[2]);
                if (EXCLUSIVE) {
                    y[0] = (lane & 3) == 0 ? tp : xw_op(tp, cin[r]);
                    y[1] = xw_op(tp, s0);
                    y[2] = xw_op(tp, s1);
                    y[3] = xw_op(tp, s2);
                } else {
                    const T s3 = xw_op(s2, y[3]);
                    y[0] = xw_op(tp, s0);
                    y[1] = xw_op(tp, s1);
                    y[2] = xw_op(tp, s2);
                    y[3] = xw_op(tp, s3);
                }
            }
        }
        // Integers, f32 min and max: each element with the tile's and the run's prefix before it.
        const T q = XW_VEC_ORDERED ? xw_identity(T(0)) : pre;
        if (whole) {
            uint4* __restrict__ d4 = reinterpret_cast<uint4*>(dst + tile_base);
#pragma unroll
            for (unsigned r = 0; 4 * r < ITEMS; ++r) {
                d4[first + r * XW_WARP] = make_uint4(
                    xw_to_bits(xw_vec_out(q, s[4 * r])), xw_to_bits(xw_vec_out(q, s[4 * r + 1])),
                    xw_to_bits(xw_vec_out(q, s[4 * r + 2])), xw_to_bits(xw_vec_out(q, s[4 * r + 3])));
            }
        } else {
#pragma unroll
            for (unsigned r = 0; 4 * r < ITEMS; ++r) {
#pragma unroll
                for (unsigned c = 0; c < 4; ++c) {
                    const unsigned at = tile_base + 4 * (first + r * XW_WARP) + c;
                    if (at < p.n) dst[at] = xw_vec_out(q, s[4 * r + c]);
                }
            }
        }
    } else if (XW_TRANSPOSE) {
        // Each thread rewrites only its own elements, in place.
        T part = xw_identity(T(0));
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) {
            const unsigned at = xw_pad(threadIdx.x * ITEMS + j);
            const T before = part;
            part = PARTIALS_IN_SHARED ? xw_op(part, tile_stage[at]) : s[j];
            tile_stage[at] = EXCLUSIVE ? (j == 0 ? pre : xw_op(pre, before)) : xw_op(pre, part);
        }
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            const unsigned idx = i * XW_SCAN_BLOCK + threadIdx.x;
            if (tile_base + idx < p.n) dst[tile_base + idx] = tile_stage[xw_pad(idx)];
        }
    } else {
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) {
            const T y = EXCLUSIVE ? (j == 0 ? pre : xw_op(pre, s[j - 1])) : xw_op(pre, s[j]);
            if (base + j < p.n) dst[base + j] = y;
        }
    }
#if SELF_CLEARING
    zero_states_if_last(counters, flags, aggregates, inclusives, p, s_last);
#endif
}
