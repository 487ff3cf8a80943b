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
    unsigned int tiles;  // tiles in this launch; clearing: all tiles of the scan
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
// needed tile has published or `spin` polls have passed. Call with the whole block.
__device__ void poll_window(const unsigned* flags, unsigned hi, unsigned count, unsigned spin,
                            unsigned* s_masks) {
    if (threadIdx.x < XW_WARP) {
        const unsigned lane = threadIdx.x;
        const bool mine = lane < count;
        unsigned incl = 0, pub = 0;
        for (unsigned poll = 0;; ++poll) {
            const unsigned f = mine ? *(const volatile unsigned*)&flags[hi - lane] : 0u;
            incl = __ballot_sync(XW_FULL_MASK, f == FLAG_INCLUSIVE);
            pub = __ballot_sync(XW_FULL_MASK, f != 0);
            const unsigned need = needed(incl, count);
            if ((pub & need) == need || poll >= spin) break;
        }
        __threadfence();
        if (lane == 0) {
            s_masks[0] = incl;
            s_masks[1] = pub;
        }
    }
    __syncthreads();
}

__device__ T look_back(const T* __restrict__ src, unsigned k, unsigned* flags, T* aggregates,
                       T* inclusives, const ScanDeviceParams& p, T* warp_totals) {
    __shared__ unsigned s_masks[2];
    __shared__ T s_value;
    __shared__ T lb_values[XW_LB];
    // Find the nearest inclusive prefix j (-1: none), making sure every tile after it has
    // published its aggregate.
    int hi = (int)k - 1;
    int j = -1;
    while (hi >= 0) {
        const unsigned count = (unsigned)min(hi + 1, (int)XW_LB);
        poll_window(flags, (unsigned)hi, count, p.spin, s_masks);
        const unsigned incl = s_masks[0];
        const unsigned pub = s_masks[1];
        __syncthreads();
        unsigned missing = needed(incl, count) & ~pub;
        while (missing != 0) {
            // Tiles of earlier launches have all finished, so this one belongs to this launch.
            const unsigned tile = (unsigned)hi - (unsigned)(__ffs(missing) - 1);
            missing &= missing - 1;
            const T a = tile_total(src, tile - p.tile0, p.n, warp_totals);
            if (threadIdx.x == 0) {
                *(volatile T*)&aggregates[tile] = a;
                __threadfence();
                atomicMax(&flags[tile], FLAG_AGGREGATE);
            }
        }
        if (incl != 0) {
            j = hi - (__ffs(incl) - 1);
            break;
        }
        hi -= (int)count;
    }
    // Fold the aggregates after j onto P(j) in order, XW_LB at a time.
    __threadfence();
    T e = xw_identity(T(0));
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
    if (threadIdx.x == 0) s_value = e;
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
        if (threadIdx.x == 0) {
            *(volatile T*)&aggregates[k] = total;
            __threadfence();
            atomicMax(&flags[k], FLAG_AGGREGATE);
        }
        e = look_back(src, k, flags, aggregates, inclusives, p, warp_totals);
    }
    if (threadIdx.x == 0) {
        *(volatile T*)&inclusives[k] = xw_op(e, total);
        __threadfence();
        atomicMax(&flags[k], FLAG_INCLUSIVE);
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
