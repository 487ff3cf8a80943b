// Top-k by radix selection with CUDA's own intrinsics; the twin of shaders/top_k.comp, whose
// header describes the mapped keys, the steps (OP: 0 HIST, 1 SELECT, 2 COUNT, 3 SCATTER,
// 4 CLEAR) of the plan in src/top_k.rs and the state words. Modelled by src/cpu/top_k.rs.
//
// Tiles for COUNT and SCATTER: warp w owns the w-th run of 32 * ITEMS consecutive keys, read in
// ITEMS coalesced steps, ranked by one __ballot_sync per step and class.
//
// Variant constants: OP, ITEMS, VALUE_WORDS (32-bit words per value: 0, 1 or 2), BLOCK
// (threads per block).

#include "sort_common.cuh"

struct TopKParams {
    unsigned int n;           // keys
    unsigned int k;
    unsigned int tiles;       // COUNT, SCATTER: tiles; HIST: keys per block
    unsigned int shift;       // HIST, SELECT: the digit's lowest bit
    unsigned int mask_lo;     // HIST: the mapped bits above the digit (low, high word)
    unsigned int mask_hi;
    unsigned int key_kind;    // KIND_*
    unsigned int descending;  // nonzero: the k largest
    unsigned int indices;     // nonzero: the candidates' values are input indices
    unsigned int pad0;
    unsigned int pad1;
    unsigned int pad2;
};

#define S_THRESHOLD 0u
#define S_REST 2u
#define S_LESS 3u
#define S_HIST 8u
#define BATCH 4u
#define NONE 0xffffffffu
#define XW_MAX_WARPS 32

__device__ __forceinline__ KEY xw_threshold(const unsigned int* state) {
    if (sizeof(KEY) == 8) {
        return (KEY)(((unsigned long long)state[S_THRESHOLD + 1] << 32) | state[S_THRESHOLD]);
    }
    return (KEY)state[S_THRESHOLD];
}

__device__ __forceinline__ KEY xw_mapped(const KEY* keys, unsigned int i, const TopKParams& p) {
    return xw_sort_map(keys[i], p.key_kind, p.descending != 0);
}

// Counts one digit per thread (NONE: nothing), warp-aggregated. The whole warp calls it.
__device__ __forceinline__ void xw_count_digit(unsigned int* sh_hist, unsigned int b) {
    const unsigned int lane = threadIdx.x % XW_WARP;
    const bool valid = b != NONE;
    const unsigned int counted = __ballot_sync(XW_FULL_MASK, valid);
    if (counted == 0) return;
    const unsigned int leader = __ffs(counted) - 1;
    const unsigned int lb = __shfl_sync(XW_FULL_MASK, b, leader);
    const unsigned int peers = __ballot_sync(XW_FULL_MASK, valid && b == lb);
    if (lane == leader) {
        atomicAdd(&sh_hist[lb & (RADIX - 1)], __popc(peers));
    } else if (valid && b != lb) {
        atomicAdd(&sh_hist[b & (RADIX - 1)], 1u);
    }
}

extern "C" __global__ __launch_bounds__(BLOCK) void top_k(
    const KEY* __restrict__ keys, const unsigned int* __restrict__ values,
    KEY* __restrict__ cand_keys, unsigned int* __restrict__ cand_values, unsigned int* state,
    unsigned int* __restrict__ counts, const unsigned int* __restrict__ before, TopKParams p) {
    __shared__ unsigned int sh_hist[RADIX];
    __shared__ unsigned int warp_counts[2 * XW_MAX_WARPS];
    const unsigned int local = threadIdx.x;
#if OP == 0
    // HIST
    for (unsigned int i = local; i < RADIX; i += BLOCK) sh_hist[i] = 0;
    __syncthreads();
    const KEY t = xw_threshold(state);
    const KEY mask = (KEY)(((unsigned long long)p.mask_hi << 32) | p.mask_lo);
    const unsigned int start = (unsigned int)xw_group() * p.tiles;
    const unsigned int stop = min(start + p.tiles, p.n);
    for (unsigned int base = start; base < stop; base += BATCH * BLOCK) {
        unsigned int b[BATCH];
#pragma unroll
        for (unsigned int j = 0; j < BATCH; ++j) {
            const unsigned int i = base + j * BLOCK + local;
            b[j] = NONE;
            if (i < stop) {
                const KEY m = xw_mapped(keys, i, p);
                if ((m & mask) == (t & mask)) b[j] = xw_digit(m, p.shift, 0xffu);
            }
        }
#pragma unroll
        for (unsigned int j = 0; j < BATCH; ++j) xw_count_digit(sh_hist, b[j]);
    }
    __syncthreads();
    for (unsigned int i = local; i < RADIX; i += BLOCK) {
        const unsigned int c = sh_hist[i];
        if (c != 0) atomicAdd(&state[S_HIST + i], c);
    }
#elif OP == 1
    // SELECT
    if (local != 0) return;
    const unsigned int rest = state[S_REST];
    unsigned int below = 0, digit = RADIX - 1;
    for (unsigned int d = 0; d < RADIX; ++d) {
        const unsigned int c = state[S_HIST + d];
        if (below + c >= rest) {
            digit = d;
            break;
        }
        below += c;
    }
    for (unsigned int d = 0; d < RADIX; ++d) state[S_HIST + d] = 0;
    if (p.shift >= 32) {
        state[S_THRESHOLD + 1] |= digit << (p.shift - 32);
    } else {
        state[S_THRESHOLD] |= digit << p.shift;
    }
    state[S_REST] = rest - below;
    state[S_LESS] += below;
#elif OP == 4
    // CLEAR
    for (unsigned int i = local; i < S_HIST + RADIX; i += BLOCK) state[i] = i == S_REST ? p.k : 0;
#elif OP == 2 || OP == 3
    // COUNT, SCATTER
    const unsigned int t = (unsigned int)xw_group();
    // Whole blocks leave together, so __syncthreads below is reached by all.
    if (t >= p.tiles) return;
    const unsigned int lane = local % XW_WARP;
    const unsigned int warp = local / XW_WARP;
    const KEY thr = xw_threshold(state);
    const unsigned int first = t * BLOCK * ITEMS + warp * XW_WARP * ITEMS + lane;
    unsigned int lo = 0, eq = 0, c_lo = 0, c_eq = 0;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const unsigned int i = first + j * XW_WARP;
        bool below = false, equal = false;
        if (i < p.n) {
            const KEY m = xw_mapped(keys, i, p);
            below = m < thr;
            equal = m == thr;
        }
        lo |= (unsigned int)below << j;
        eq |= (unsigned int)equal << j;
        c_lo += __popc(__ballot_sync(XW_FULL_MASK, below));
        c_eq += __popc(__ballot_sync(XW_FULL_MASK, equal));
    }
    if (lane == 0) {
        warp_counts[2 * warp] = c_lo;
        warp_counts[2 * warp + 1] = c_eq;
    }
    __syncthreads();
    unsigned int lo_below = 0, eq_below = 0, lo_tile = 0, eq_tile = 0;
    for (unsigned int w = 0; w < BLOCK / XW_WARP; ++w) {
        const unsigned int a = warp_counts[2 * w], b = warp_counts[2 * w + 1];
        if (w < warp) {
            lo_below += a;
            eq_below += b;
        }
        lo_tile += a;
        eq_tile += b;
    }
#if OP == 2
    if (local == 0) {
        counts[2 * t] = lo_tile;
        counts[2 * t + 1] = eq_tile;
    }
#else
    // SCATTER: ranks in input order within each class.
    const unsigned int below_lane = (1u << lane) - 1u;
    unsigned int at_lo = before[2 * t] + lo_below;
    unsigned int at_eq = state[S_LESS] + before[2 * t + 1] + eq_below;
#pragma unroll
    for (unsigned int j = 0; j < ITEMS; ++j) {
        const bool below = (lo >> j) & 1u;
        const bool equal = (eq >> j) & 1u;
        const unsigned int bb = __ballot_sync(XW_FULL_MASK, below);
        const unsigned int be = __ballot_sync(XW_FULL_MASK, equal);
        const unsigned int i = first + j * XW_WARP;
        unsigned int pos = NONE;
        if (below) pos = at_lo + __popc(bb & below_lane);
        if (equal) pos = at_eq + __popc(be & below_lane);
        if (pos < p.k) {
            cand_keys[pos] = keys[i];
            if (p.indices) {
                cand_values[VALUE_WORDS * pos] = i;
                if (VALUE_WORDS == 2) cand_values[2 * pos + 1] = 0;
            } else {
                for (unsigned int w = 0; w < VALUE_WORDS; ++w) {
                    cand_values[VALUE_WORDS * pos + w] = values[VALUE_WORDS * i + w];
                }
            }
        }
        at_lo += __popc(bb);
        at_eq += __popc(be);
    }
#endif
#else
#error "unknown OP"
#endif
}
