// Top-k by radix selection with CUDA's own intrinsics; the twin of shaders/top_k.comp, whose
// header describes the mapped keys, the steps (OP: 0 HIST, its last block selecting the digit
// and scanning the blocks' counts; 1 SCATTER; 2 CLEAR) of the plan in src/top_k.rs, the filter
// into the candidates' buffer and the state words. Modelled by src/cpu/top_k.rs.
//
// Tiles for SCATTER: warp w owns the w-th run of 32 * ITEMS consecutive keys, read in
// ITEMS coalesced steps, ranked by one __ballot_sync per step and class.
//
// Variant constants: OP, ITEMS, VALUE_WORDS (32-bit words per value: 0, 1 or 2), BLOCK
// (threads per block).

#include "sort_common.cuh"

struct TopKParams {
    unsigned int n;           // keys
    unsigned int k;
    unsigned int tiles;       // HIST, SCATTER: keys per block (a multiple of BATCH * BLOCK)
    unsigned int shift;       // HIST: the digit's lowest bit
    unsigned int mask_lo;     // HIST: the mapped bits above the digit (low, high word)
    unsigned int mask_hi;
    unsigned int key_kind;    // KIND_*
    unsigned int descending;  // nonzero: the k largest
    unsigned int indices;     // nonzero: the candidates' values are input indices
    unsigned int cap;         // keys the candidates' buffer holds (0: no buffer)
    unsigned int filtering;   // HIST: a filter may follow; SCATTER: the filter
    unsigned int digit;       // HIST: the pass (0: the most significant digit)
};

#define S_THRESHOLD 0u
#define S_REST 2u
#define S_LESS 3u
#define S_M 4u
#define S_BASE 5u
#define S_DO 6u
#define S_DONE 7u
#define S_FILTERED 8u
#define S_HIST 16u
#define BATCH 16u
#define PARTS 8u
#define SCAN_ITEMS 4u
#define XW_MAX_WARPS 32

// Inclusive sums of a and b over the block's threads (in place): warp scans, then the warps'
// totals through shared memory (`sh`: 2 * XW_MAX_WARPS words); `total_a`, `total_b` get the
// block's. The whole block calls it.
__device__ __forceinline__ void xw_block_scan2(unsigned int* sh, unsigned int& a, unsigned int& b,
                                               unsigned int& total_a, unsigned int& total_b) {
    const unsigned int lane = threadIdx.x % XW_WARP;
    const unsigned int warp = threadIdx.x / XW_WARP;
#pragma unroll
    for (unsigned int off = 1; off < XW_WARP; off <<= 1) {
        const unsigned int xa = __shfl_up_sync(XW_FULL_MASK, a, off);
        const unsigned int xb = __shfl_up_sync(XW_FULL_MASK, b, off);
        if (lane >= off) {
            a += xa;
            b += xb;
        }
    }
    if (lane == XW_WARP - 1) {
        sh[warp] = a;
        sh[XW_MAX_WARPS + warp] = b;
    }
    __syncthreads();
    unsigned int pa = 0, pb = 0;
    total_a = 0;
    total_b = 0;
    for (unsigned int w = 0; w < BLOCK / XW_WARP; ++w) {
        const unsigned int x = sh[w], y = sh[XW_MAX_WARPS + w];
        if (w < warp) {
            pa += x;
            pb += y;
        }
        total_a += x;
        total_b += y;
    }
    a += pa;
    b += pb;
    __syncthreads();
}
#define NONE 0xffffffffu

__device__ __forceinline__ KEY xw_threshold(const unsigned int* state) {
    if (sizeof(KEY) == 8) {
        return (KEY)(((unsigned long long)state[S_THRESHOLD + 1] << 32) | state[S_THRESHOLD]);
    }
    return (KEY)state[S_THRESHOLD];
}

// Keys first + j * stride (j < N) below len, 0 past it, from the keys or (`buffered`) the
// candidates' buffer: one loop per source, so that each load takes the read-only path.
template <unsigned int N>
__device__ __forceinline__ void xw_load_keys(KEY (&raw)[N], const KEY* __restrict__ keys,
                                             const KEY* __restrict__ buf_keys, bool buffered,
                                             unsigned int first, unsigned int stride,
                                             unsigned int len) {
    if (buffered) {
#pragma unroll
        for (unsigned int j = 0; j < N; ++j) {
            const unsigned int i = first + j * stride;
            raw[j] = i < len ? __ldg(&buf_keys[i]) : (KEY)0;
        }
    } else {
#pragma unroll
        for (unsigned int j = 0; j < N; ++j) {
            const unsigned int i = first + j * stride;
            raw[j] = i < len ? __ldg(&keys[i]) : (KEY)0;
        }
    }
}

__device__ __forceinline__ KEY xw_mask(const TopKParams& p) {
    return (KEY)(((unsigned long long)p.mask_hi << 32) | p.mask_lo);
}

// Keys of the candidates' buffer (m of them) per block, HIST's and SCATTER's alike.
__device__ __forceinline__ unsigned int xw_buffer_chunk(unsigned int m, unsigned int groups) {
    const unsigned int step = BATCH * BLOCK;
    return ((m + groups - 1) / groups + step - 1) / step * step;
}

// Word `bin` of HIST block g's row in pass d (two passes' rows, in turn).
__device__ __forceinline__ unsigned int xw_row_word(unsigned int d, unsigned int groups,
                                                    unsigned int g, unsigned int bin) {
    return ((d & 1) * groups + g) * RADIX + bin;
}

// HIST block g's keys below the threshold in the digits of the passes before this one that read
// the same keys (every pass, or those over the candidates' buffer).
__device__ __forceinline__ unsigned int xw_below_word(unsigned int groups, unsigned int g) {
    return 2 * groups * RADIX + g;
}

// Whether this block is the last of the launch's `groups` to get here (the whole block calls
// it): every thread's writes are made visible device-wide before thread 0 counts the block
// done. The last block then reads what the others wrote through L2 (__ldcg), never a stale
// line of its own L1.
__device__ __forceinline__ bool xw_last_block(unsigned int* state, unsigned int groups,
                                              unsigned int& s_flag) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_flag = atomicAdd(&state[S_DONE], 1u) + 1 == groups;
    __syncthreads();
    const bool last = s_flag != 0;
    if (last) __threadfence();
    return last;
}

// One round of the exclusive sums of two counts over `tiles` blocks: thread i holds those of the
// SCAN_ITEMS consecutive blocks from `first` (va, vb; zero past `tiles`) and writes their sums to
// `before`; `carry_a`, `carry_b` carry the rounds' totals. The whole block calls it.
__device__ __forceinline__ void xw_scan_round(unsigned int* sh, unsigned int* before,
                                              unsigned int first, unsigned int tiles,
                                              const unsigned int (&va)[SCAN_ITEMS],
                                              const unsigned int (&vb)[SCAN_ITEMS],
                                              unsigned int& carry_a, unsigned int& carry_b) {
    unsigned int sa = 0, sb = 0;
#pragma unroll
    for (unsigned int j = 0; j < SCAN_ITEMS; ++j) {
        sa += va[j];
        sb += vb[j];
    }
    unsigned int ia = sa, ib = sb, ta, tb;
    xw_block_scan2(sh, ia, ib, ta, tb);
    unsigned int ea = carry_a + ia - sa, eb = carry_b + ib - sb;
#pragma unroll
    for (unsigned int j = 0; j < SCAN_ITEMS; ++j) {
        const unsigned int t = first + j;
        if (t < tiles) {
            before[2 * t] = ea;
            before[2 * t + 1] = eb;
        }
        ea += va[j];
        eb += vb[j];
    }
    carry_a += ta;
    carry_b += tb;
}


// SCATTER at four blocks an SM (64 registers), where the compiler alone took 80 and ran three.
#if OP == 1
#define XW_TOP_K_BOUNDS __launch_bounds__(BLOCK, 4)
#else
#define XW_TOP_K_BOUNDS __launch_bounds__(BLOCK)
#endif

extern "C" __global__ XW_TOP_K_BOUNDS void top_k(
    const KEY* __restrict__ keys, const unsigned int* __restrict__ values,
    KEY* __restrict__ cand_keys, unsigned int* __restrict__ cand_values, unsigned int* state,
    unsigned int* __restrict__ counts, unsigned int* __restrict__ before,
    unsigned int* __restrict__ buf, TopKParams p) {
    __shared__ unsigned int sh_hist[RADIX * PARTS];
    __shared__ unsigned int warp_counts[2 * XW_MAX_WARPS];
    __shared__ unsigned int s_flag;   // xw_last_block's answer, then whether the filter runs
    __shared__ unsigned int s_digit;  // the selected digit
    const unsigned int local = threadIdx.x;
    const unsigned int groups = gridDim.x * gridDim.y * gridDim.z;
    // The candidates' buffer: cap keys, then what each carries.
    KEY* buf_keys = (KEY*)buf;
    unsigned int* buf_values = buf + KEY_WORDS * p.cap;
#if OP == 0
    // HIST
    const KEY t = xw_threshold(state);
    const KEY mask = xw_mask(p);
    // After a filter the candidates' buffer is the source, spread over the same blocks.
    const unsigned int m = state[S_M];
    const bool buffered = m != NONE;
    const unsigned int len = buffered ? m : p.n;
    const unsigned int chunk = buffered ? xw_buffer_chunk(m, groups) : p.tiles;
    const unsigned int g = (unsigned int)xw_group();
    const unsigned int start = g * chunk;
    const unsigned int stop = min(start + chunk, len);
    // A block past the keys (over a small buffer, most of them) counts and stores nothing.
    if (start < len) {
        // The block's keys below the threshold in the earlier passes' digits: those before the
        // last pass and, from the last pass's row, those below its digit (none in the first
        // pass and in the first over the buffer).
        unsigned int below = 0;
        if (local == 0 && p.digit != 0 && !(buffered && state[S_FILTERED] + 1 == p.digit)) {
            const unsigned int last = xw_digit(t, p.shift + 8, 0xffu);
            below = counts[xw_below_word(groups, g)];
            if (last != 0) below += counts[xw_row_word(p.digit - 1, groups, g, last - 1)];
        }
        for (unsigned int i = local; i < RADIX * PARTS; i += BLOCK) sh_hist[i] = 0;
        __syncthreads();
        for (unsigned int base = start; base < stop; base += BATCH * BLOCK) {
            KEY raw[BATCH];
            xw_load_keys<BATCH>(raw, keys, buf_keys, buffered, base + local, BLOCK, stop);
            unsigned int b[BATCH];
#pragma unroll
            for (unsigned int j = 0; j < BATCH; ++j) {
                const unsigned int i = base + j * BLOCK + local;
                b[j] = NONE;
                if (i < stop) {
                    const KEY mk = xw_sort_map(raw[j], p.key_kind, p.descending != 0);
                    if ((mk & mask) == (t & mask)) b[j] = xw_digit(mk, p.shift, 0xffu);
                }
            }
#pragma unroll
            for (unsigned int j = 0; j < BATCH; ++j) {
                if (b[j] != NONE) atomicAdd(&sh_hist[b[j] * PARTS + local % PARTS], 1u);
            }
        }
        __syncthreads();
        // Thread d holds bin d (BLOCK >= RADIX).
        unsigned int c = 0;
        if (local < RADIX) {
#pragma unroll
            for (unsigned int q = 0; q < PARTS; ++q) c += sh_hist[local * PARTS + q];
            if (c != 0) atomicAdd(&state[S_HIST + local], c);
        }
        // The block's row (the scan reuses sh_hist).
        __syncthreads();
        unsigned int cum = c, unused = 0, total, total_unused;
        xw_block_scan2(sh_hist, cum, unused, total, total_unused);
        if (local < RADIX) counts[xw_row_word(p.digit, groups, g, local)] = cum;
        if (local == 0) counts[xw_below_word(groups, g)] = below;
    }
    if (!xw_last_block(state, groups, s_flag)) return;
    if (local == 0) state[S_DONE] = 0;
    // SELECT, by the last block: thread d holds bin d; the one whose bins up to it reach the
    // count still to take is the digit.
    const bool filtering = p.filtering != 0 && !buffered;
    {
        const unsigned int rest = __ldcg(&state[S_REST]);
        const unsigned int at = local < RADIX ? __ldcg(&state[S_HIST + local]) : 0u;
        unsigned int upto = at, unused = 0, total, total_unused;
        xw_block_scan2(sh_hist, upto, unused, total, total_unused);
        if (local < RADIX) state[S_HIST + local] = 0;
        const unsigned int below = upto - at;
        if (local < RADIX && below < rest && upto >= rest) {
            const unsigned int digit = local;
            // The filter runs once, after the first digit whose keys fit the buffer.
            const bool filter = filtering && at <= p.cap;
            state[S_DO] = filter ? 1u : 0u;
            s_flag = filter ? 1u : 0u;
            s_digit = digit;
            const unsigned int less = __ldcg(&state[S_LESS]);
            if (filter) {
                state[S_M] = at;
                state[S_BASE] = less + below;
                state[S_FILTERED] = p.digit;
            }
            if (p.shift >= 32) {
                const unsigned int high = __ldcg(&state[S_THRESHOLD + 1]);
                state[S_THRESHOLD + 1] = high | (digit << (p.shift - 32));
            } else {
                state[S_THRESHOLD] = __ldcg(&state[S_THRESHOLD]) | (digit << p.shift);
            }
            state[S_REST] = rest - below;
            state[S_LESS] = less + below;
        }
    }
    __syncthreads();
    // Where the filter runs, and after the last pass: each block's keys below the bucket (below
    // the threshold in an earlier pass's digit, or below the selected digit in this one) and in
    // it, as exclusive sums over the blocks to `before`. Blocks from `active` on had no keys
    // (and stored nothing).
    if (p.shift != 0 && s_flag == 0) return;
    const unsigned int active = (len + chunk - 1) / chunk;
    const unsigned int sel = s_digit;
    unsigned int carry_a = 0, carry_b = 0;
    for (unsigned int base = 0; base < groups; base += BLOCK * SCAN_ITEMS) {
        const unsigned int first = base + local * SCAN_ITEMS;
        unsigned int va[SCAN_ITEMS], vb[SCAN_ITEMS];
#pragma unroll
        for (unsigned int j = 0; j < SCAN_ITEMS; ++j) {
            const unsigned int h = first + j;
            va[j] = 0;
            vb[j] = 0;
            if (h < active) {
                const unsigned int lo = __ldcg(&counts[xw_below_word(groups, h)]);
                const unsigned int lo_here =
                    sel != 0 ? __ldcg(&counts[xw_row_word(p.digit, groups, h, sel - 1)]) : 0u;
                va[j] = lo + lo_here;
                vb[j] = __ldcg(&counts[xw_row_word(p.digit, groups, h, sel)]) - lo_here;
            }
        }
        xw_scan_round(sh_hist, before, first, groups, va, vb, carry_a, carry_b);
    }
#elif OP == 1
    // SCATTER: the filter (p.filtering: keys by the bits at and above the digit, after the
    // selection that chose to filter) or the last step (keys by all bits, from the candidates'
    // buffer after a filter). Block t takes HIST's chunk t, tile by tile.
    const unsigned int t = (unsigned int)xw_group();
    const bool filter = p.filtering != 0;
    // Whole blocks leave together, so __syncthreads below is reached by all.
    if (filter && state[S_DO] == 0) return;
    const unsigned int m = filter ? NONE : state[S_M];
    const bool buffered = m != NONE;
    const unsigned int len = buffered ? m : p.n;
    const unsigned int span = (buffered ? xw_buffer_chunk(m, groups) : p.tiles) / (BLOCK * ITEMS);
    const unsigned int tile_first = t * span * (BLOCK * ITEMS);
    if (tile_first >= len) return;
    const unsigned int lane = local % XW_WARP;
    const unsigned int warp = local / XW_WARP;
    // The block's places, loaded before its keys are classified.
    unsigned int at_lo = before[2 * t];
    unsigned int at_eq = before[2 * t + 1];
    unsigned int eq_end = p.cap;
    if (!filter) {
        at_lo += state[S_BASE];
        at_eq += state[S_LESS];
        eq_end = p.k;
    }
    KEY* eq_keys = filter ? buf_keys : cand_keys;
    unsigned int* eq_values = filter ? buf_values : cand_values;
    const unsigned int below_lane = (1u << lane) - 1u;
    const KEY mask = filter ? xw_mask(p) : KEY_MAX;
    const KEY thr = xw_threshold(state) & mask;
    for (unsigned int s = 0; s < span; ++s) {
        const unsigned int sub_first = tile_first + s * (BLOCK * ITEMS);
        if (sub_first >= len) break;
        const unsigned int first = sub_first + warp * XW_WARP * ITEMS + lane;
        KEY raw[ITEMS];
        xw_load_keys<ITEMS>(raw, keys, buf_keys, buffered, first, XW_WARP, len);
        unsigned int lo = 0, eq = 0;
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) {
            const unsigned int i = first + j * XW_WARP;
            bool below = false, equal = false;
            if (i < len) {
                const KEY mk = xw_sort_map(raw[j], p.key_kind, p.descending != 0) & mask;
                below = mk < thr;
                equal = mk == thr;
            }
            lo |= (unsigned int)below << j;
            eq |= (unsigned int)equal << j;
        }
        // The warp's counts: each thread's, summed across the warp.
        unsigned int c_lo = __popc(lo), c_eq = __popc(eq);
#pragma unroll
        for (unsigned int off = XW_WARP / 2; off > 0; off >>= 1) {
            c_lo += __shfl_xor_sync(XW_FULL_MASK, c_lo, off);
            c_eq += __shfl_xor_sync(XW_FULL_MASK, c_eq, off);
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
        // The next tile's counts overwrite these.
        __syncthreads();
        // Ranks in input order within each class. Keys below go to the candidates (after those
        // a filter placed); equal keys to the candidates' buffer (filter) or after the keys below
        // T while places are left.
        unsigned int w_lo = at_lo + lo_below;
        unsigned int w_eq = at_eq + eq_below;
        at_lo += lo_tile;
        at_eq += eq_tile;
#pragma unroll
        for (unsigned int j = 0; j < ITEMS; ++j) {
            const bool below = (lo >> j) & 1u;
            const bool equal = (eq >> j) & 1u;
            // Most steps of a filter place nothing.
            if (__ballot_sync(XW_FULL_MASK, below || equal) == 0) continue;
            const unsigned int bb = __ballot_sync(XW_FULL_MASK, below);
            const unsigned int be = __ballot_sync(XW_FULL_MASK, equal);
            const unsigned int i = first + j * XW_WARP;
            KEY* dk = nullptr;
            unsigned int* dv = nullptr;
            unsigned int pos = 0;
            if (below) {
                pos = w_lo + __popc(bb & below_lane);
                if (pos < p.k) {
                    dk = cand_keys;
                    dv = cand_values;
                }
            } else if (equal) {
                pos = w_eq + __popc(be & below_lane);
                if (pos < eq_end) {
                    dk = eq_keys;
                    dv = eq_values;
                }
            }
            if (dk != nullptr) {
                dk[pos] = raw[j];
                if (buffered) {
                    for (unsigned int w = 0; w < VALUE_WORDS; ++w) {
                        dv[VALUE_WORDS * pos + w] = buf_values[VALUE_WORDS * i + w];
                    }
                } else if (p.indices) {
                    dv[VALUE_WORDS * pos] = i;
                    if (VALUE_WORDS == 2) dv[2 * pos + 1] = 0;
                } else {
                    for (unsigned int w = 0; w < VALUE_WORDS; ++w) {
                        dv[VALUE_WORDS * pos + w] = values[VALUE_WORDS * i + w];
                    }
                }
            }
            w_lo += __popc(bb);
            w_eq += __popc(be);
        }
    }
#elif OP == 2
    // CLEAR
    for (unsigned int i = local; i < S_HIST + RADIX; i += BLOCK) {
        state[i] = i == S_REST ? p.k : i == S_M ? NONE : 0;
    }
#else
#error "unknown OP"
#endif
}
