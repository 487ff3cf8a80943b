// Device scan, single pass: chained scan with decoupled look-back, each tile's exclusive
// prefix the canonical left fold of the tile totals; the twin of shaders/scan_device.comp (see
// there for why the order is canonical, how tiles move through shared memory, how the
// look-back window works and how a stalled predecessor is handled).
// Variant constants: OP (0 sum, 2 min, 3 max), EXCLUSIVE, ITEMS.

#include "reduce_op.cuh"
#include "scan_common.cuh"

#define FLAG_AGGREGATE 1u
#define FLAG_INCLUSIVE 2u
#define XW_LB 32u  // predecessors one look-back step reads

struct ScanDeviceParams {
    unsigned int n;      // elements in this launch (a chunk of whole tiles)
    unsigned int tiles;  // tiles in this launch; clearing: flag words (two per tile of the scan)
    unsigned int tile0;  // global index of the launch's first tile
    unsigned int chunk;  // this launch's tile counter; clearing: the number of counters
    unsigned int spin;   // polls of a window with unpublished tiles before reducing them here
    unsigned int clear;  // nonzero: only zero flags[0 .. tiles) and counters[0 .. chunk)
};

// 32-bit types go through shared memory (coalesced loads and stores, transposed there).
#define XW_TRANSPOSE (sizeof(T) == 4)
#define XW_TILE (XW_SCAN_BLOCK * ITEMS)
#define XW_STAGE (XW_TRANSPOSE ? XW_TILE + XW_TILE / 32 : 1)

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

__device__ __forceinline__ xw_word load_word(const unsigned* flags, unsigned tile) {
    return *((const volatile xw_word*)flags + tile);
}

// Publishes tile `tile`'s aggregate (or inclusive prefix) `v` with flag `flag`.
__device__ __forceinline__ void publish(unsigned* flags, T* values, unsigned tile, unsigned flag, T v) {
    if constexpr (XW_PACKED) {
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

// Tiles above the window's nearest inclusive prefix (all `count` tiles if it has none).
__device__ __forceinline__ unsigned needed(unsigned incl, unsigned count) {
    const unsigned m = incl != 0 ? (unsigned)(__ffs(incl) - 1) : count;
    return m >= 32 ? 0xffffffffu : (1u << m) - 1u;
}

// Warp 0 polls the flags of tiles hi, hi - 1, ..., hi - count + 1 into s_masks until every
// needed tile has published or `spin` polls have passed. Packed words bring the values along:
// when the window is the first (hi = k - 1) and complete, warp 0 also folds it into *s_value,
// publishes tile k's inclusive prefix (the tile's total being `total`)
// and sets s_masks[2], so the look-back is over after this one barrier. Call with the whole
// block.
__device__ void poll_window(const unsigned* flags, unsigned hi, unsigned count, bool first,
                            unsigned spin, T total, unsigned* s_masks, T* lb_values,
                            T* s_value) {
    if (threadIdx.x < XW_WARP) {
        const unsigned lane = threadIdx.x;
        const bool mine = lane < count;
        unsigned incl = 0, pub = 0;
        T v = xw_identity(T(0));
        for (unsigned poll = 0;; ++poll) {
            unsigned f;
            if constexpr (XW_PACKED) {
                const xw_word w = mine ? load_word(flags, hi - lane) : 0ull;
                f = (unsigned)(w >> 32);
                v = xw_unpack(w);
            } else {
                f = mine ? *(const volatile unsigned*)&flags[hi - lane] : 0u;
            }
            incl = __ballot_sync(XW_FULL_MASK, f == FLAG_INCLUSIVE);
            pub = __ballot_sync(XW_FULL_MASK, f != 0);
            const unsigned need = needed(incl, count);
            if ((pub & need) == need || poll >= spin) break;
        }
        unsigned done = 0;
        if constexpr (XW_PACKED) {
            const unsigned need = needed(incl, count);
            done = first && incl != 0 && (pub & need) == need;
            if (done) {
                // Lane i holds tile hi - i: P(hi - m), then A(hi - m + 1) .. A(hi) in order.
                lb_values[lane] = v;
                __syncwarp();
                if (lane == 0) {
                    const int m = __ffs(incl) - 1;
                    T e = lb_values[m];
#pragma unroll
                    for (int i = (int)XW_LB - 2; i >= 0; --i) {
                        if (i < m) e = xw_op(e, lb_values[i]);
                    }
                    *s_value = e;
                    publish((unsigned*)flags, nullptr, hi + 1, FLAG_INCLUSIVE, xw_op(e, total));
                }
            }
        } else {
            __threadfence();
        }
        if (lane == 0) {
            s_masks[0] = incl;
            s_masks[1] = pub;
            s_masks[2] = done;
        }
    }
    __syncthreads();
}

// The exclusive prefix of tile k > 0, whose total is `total`; publishes the tile's inclusive
// prefix as soon as it is known.
__device__ T look_back(const T* __restrict__ src, unsigned k, T total, unsigned* flags,
                       T* aggregates, T* inclusives, const ScanDeviceParams& p, T* warp_totals) {
    __shared__ unsigned s_masks[3];
    __shared__ T s_value;
    __shared__ T lb_values[XW_LB];
    // Find the nearest inclusive prefix j (-1: none), making sure every tile after it has
    // published its aggregate.
    int hi = (int)k - 1;
    int j = -1;
    while (hi >= 0) {
        const unsigned count = (unsigned)min(hi + 1, (int)XW_LB);
        poll_window(flags, (unsigned)hi, count, hi == (int)k - 1, p.spin, total, s_masks,
                    lb_values, &s_value);
        if (s_masks[2]) return s_value;
        const unsigned incl = s_masks[0];
        const unsigned pub = s_masks[1];
        __syncthreads();
        unsigned missing = needed(incl, count) & ~pub;
        while (missing != 0) {
            // Tiles of earlier launches have all finished, so this one belongs to this launch.
            const unsigned tile = (unsigned)hi - (unsigned)(__ffs(missing) - 1);
            missing &= missing - 1;
            const T a = tile_total(src, tile - p.tile0, p.n, warp_totals);
            if (threadIdx.x == 0) publish(flags, aggregates, tile, FLAG_AGGREGATE, a);
        }
        if (incl != 0) {
            j = hi - (__ffs(incl) - 1);
            break;
        }
        hi -= (int)count;
    }
    // Fold the aggregates after j onto P(j) in order, XW_LB at a time.
    T e = xw_identity(T(0));
    __syncthreads();  // aggregates published above by thread 0 are visible to the block
    if constexpr (XW_PACKED) {
        // Warp 0 alone. A tile after j may have replaced its aggregate by its inclusive prefix
        // since the poll; the fold then restarts from that prefix, which is the same left fold.
        if (threadIdx.x < XW_WARP) {
            const unsigned lane = threadIdx.x;
            if (lane == 0 && j >= 0) e = xw_unpack(load_word(flags, (unsigned)j));
            for (unsigned first = (unsigned)(j + 1); first < k; first += XW_LB) {
                const unsigned c = min(k - first, XW_LB);
                const xw_word w = lane < c ? load_word(flags, first + lane) : 0ull;
                const unsigned incl = __ballot_sync(XW_FULL_MASK, (unsigned)(w >> 32) == FLAG_INCLUSIVE);
                lb_values[lane] = xw_unpack(w);
                __syncwarp();
                if (lane == 0) {
#pragma unroll
                    for (unsigned i = 0; i < XW_LB; ++i) {
                        if (i < c) e = (incl >> i) & 1u ? lb_values[i] : xw_op(e, lb_values[i]);
                    }
                }
                __syncwarp();
            }
        }
    } else {
        __threadfence();
        if (threadIdx.x == 0 && j >= 0) e = load_published(&inclusives[j]);
        for (unsigned first = (unsigned)(j + 1); first < k; first += XW_LB) {
            const unsigned c = min(k - first, XW_LB);
            if (threadIdx.x < c) lb_values[threadIdx.x] = load_published(&aggregates[first + threadIdx.x]);
            __syncthreads();
            if (threadIdx.x == 0) {
                // A fixed trip count lets the shared-memory reads go ahead of the dependent ops.
#pragma unroll
                for (unsigned i = 0; i < XW_LB; ++i) {
                    if (i < c) e = xw_op(e, lb_values[i]);
                }
            }
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) {
        s_value = e;
        publish(flags, inclusives, k, FLAG_INCLUSIVE, xw_op(e, total));
    }
    __syncthreads();
    return s_value;
}

extern "C" __global__ __launch_bounds__(XW_SCAN_BLOCK) void scan_device(
    const T* __restrict__ src, T* __restrict__ dst, unsigned* counters, unsigned* flags,
    T* aggregates, T* inclusives, ScanDeviceParams p) {
    __shared__ T warp_totals[XW_SCAN_BLOCK / XW_WARP];
    __shared__ T tile_stage[XW_STAGE];
    __shared__ unsigned s_tile;
    if (p.clear) {
        const unsigned long long i = xw_group() * blockDim.x + threadIdx.x;
        if (i < p.tiles) flags[i] = 0;
        if (i < p.chunk) counters[i] = 0;
        return;
    }
    const unsigned group = (unsigned)xw_group();
    if (group >= p.tiles) return;
    // Tiles are numbered in the order blocks start, so a tile's predecessors have started.
    if (threadIdx.x == 0) s_tile = atomicAdd(&counters[p.chunk], 1u);
    __syncthreads();
    const unsigned t = s_tile;
    const unsigned k = p.tile0 + t;
    const unsigned tile_base = t * XW_TILE;
    const unsigned base = tile_base + threadIdx.x * ITEMS;

    T s[ITEMS];
    if (XW_TRANSPOSE) {
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            const unsigned idx = i * XW_SCAN_BLOCK + threadIdx.x;
            tile_stage[xw_pad(idx)] = tile_base + idx < p.n ? src[tile_base + idx] : xw_identity(T(0));
        }
        __syncthreads();
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) s[j] = tile_stage[xw_pad(threadIdx.x * ITEMS + j)];
    } else {
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) s[j] = base + j < p.n ? src[base + j] : xw_identity(T(0));
    }
    T acc = xw_identity(T(0));
#pragma unroll
    for (unsigned j = 0; j < ITEMS; ++j) {
        acc = xw_op(acc, s[j]);
        s[j] = acc;
    }
    // block_prefix's barriers also order every read of tile_stage before its reuse below.
    T prefix, total;
    block_prefix(acc, warp_totals, prefix, total);

    T e = xw_identity(T(0));
    if (k > 0) {
        if (threadIdx.x == 0) publish(flags, aggregates, k, FLAG_AGGREGATE, total);
        e = look_back(src, k, total, flags, aggregates, inclusives, p, warp_totals);
    } else if (threadIdx.x == 0) {
        publish(flags, inclusives, k, FLAG_INCLUSIVE, total);
    }

    const T pre = xw_op(e, prefix);
    if (XW_TRANSPOSE) {
#pragma unroll
        for (unsigned j = 0; j < ITEMS; ++j) {
            tile_stage[xw_pad(threadIdx.x * ITEMS + j)] =
                EXCLUSIVE ? (j == 0 ? pre : xw_op(pre, s[j - 1])) : xw_op(pre, s[j]);
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
}
