// Device scan, single pass: chained scan with decoupled look-back, each tile's exclusive
// prefix the canonical left fold of the tile totals; the twin of shaders/scan_device.comp (see
// there for why the order is canonical and how a stalled predecessor is handled).
// Variant constants: OP (0 sum, 2 min, 3 max), EXCLUSIVE, ITEMS.

#include "reduce_op.cuh"
#include "scan_common.cuh"

#define FLAG_AGGREGATE 1u
#define FLAG_INCLUSIVE 2u

struct ScanDeviceParams {
    unsigned int n;      // elements in this launch (a chunk of whole tiles)
    unsigned int tiles;  // tiles in this launch
    unsigned int tile0;  // global index of the launch's first tile
    unsigned int chunk;  // this launch's tile counter
    unsigned int spin;   // polls of an unpublished predecessor before reducing its tile here
};

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

__device__ T look_back(const T* __restrict__ src, unsigned k, unsigned* flags, T* aggregates,
                       T* inclusives, const ScanDeviceParams& p, T* warp_totals) {
    __shared__ unsigned s_flag;
    __shared__ T s_value;
    int j = (int)k - 1;
    while (j >= 0) {
        if (threadIdx.x == 0) {
            unsigned f = 0;
            for (unsigned poll = 0; poll <= p.spin; ++poll) {
                f = atomicOr(&flags[j], 0u);
                if (f != 0) break;
            }
            s_flag = f;
        }
        __syncthreads();
        const unsigned f = s_flag;
        __syncthreads();
        if (f == FLAG_INCLUSIVE) break;
        if (f == 0) {
            const T a = tile_total(src, (unsigned)j - p.tile0, p.n, warp_totals);
            if (threadIdx.x == 0) {
                *(volatile T*)&aggregates[j] = a;
                __threadfence();
                atomicMax(&flags[j], FLAG_AGGREGATE);
            }
        }
        j -= 1;
    }
    if (threadIdx.x == 0) {
        __threadfence();
        T e = j >= 0 ? load_published(&inclusives[j]) : xw_identity(T(0));
        for (unsigned i = (unsigned)(j + 1); i < k; ++i) e = xw_op(e, load_published(&aggregates[i]));
        s_value = e;
    }
    __syncthreads();
    const T e = s_value;
    __syncthreads();
    return e;
}

extern "C" __global__ void scan_device(const T* __restrict__ src, T* __restrict__ dst,
                                       unsigned* counters, unsigned* flags, T* aggregates,
                                       T* inclusives, ScanDeviceParams p) {
    __shared__ T warp_totals[XW_SCAN_BLOCK / XW_WARP];
    __shared__ unsigned s_tile;
    const unsigned group = (unsigned)xw_group();
    if (group >= p.tiles) return;
    // Tiles are numbered in the order blocks start, so a tile's predecessors have started.
    if (threadIdx.x == 0) s_tile = atomicAdd(&counters[p.chunk], 1u);
    __syncthreads();
    const unsigned t = s_tile;
    const unsigned k = p.tile0 + t;

    const unsigned base = (t * blockDim.x + threadIdx.x) * ITEMS;
    T s[ITEMS];
    T acc = xw_identity(T(0));
#pragma unroll
    for (unsigned j = 0; j < ITEMS; ++j) {
        const T x = base + j < p.n ? src[base + j] : xw_identity(T(0));
        acc = xw_op(acc, x);
        s[j] = acc;
    }
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
#pragma unroll
    for (unsigned j = 0; j < ITEMS; ++j) {
        const T y = EXCLUSIVE ? (j == 0 ? pre : xw_op(pre, s[j - 1])) : xw_op(pre, s[j]);
        if (base + j < p.n) dst[base + j] = y;
    }
}
