// The radix sort's first step; the twin of shaders/sort_histogram.comp (see there for the two
// modes and the copies of the counters), modelled by src/cpu/sort.rs. Variant constant: PARTS.

#include "sort_common.cuh"

// The key order of the variant (constant KEY_ORDER = 2 * kind + descending).
#define XW_KEY_KIND ((unsigned)(KEY_ORDER) / 2u)
#define XW_DESCENDING (((unsigned)(KEY_ORDER) & 1u) != 0u)

struct SortHistogramParams {
    unsigned int n;           // keys; clearing: words to zero
    unsigned int chunk;       // keys per block (a multiple of the block size)
    unsigned int passes;      // digit passes of the bit range
    unsigned int begin;       // the bit range begin_bit .. end_bit
    unsigned int end;
    unsigned int clear;       // nonzero: clearing mode
};

#define PASSES_MAX (4u * KEY_WORDS)
#define CLEAR_ITEMS 4u
#define HIST_ITEMS 8u

extern "C" __global__ void sort_histogram(const KEY* __restrict__ keys, unsigned* work,
                                          SortHistogramParams p) {
#if PARTS == 32
    // A copy of every counter per lane, 16 bits, two to a word: counter c of lane l in the
    // half c % 2 of word (c / 2) * 32 + l, so a warp's atomics never share a bank (at most
    // 2^16 keys a block: 2048 a lane's counter). XW_DYNAMIC_SHARED bytes.
    extern __shared__ unsigned s_hist[];
    static_assert(KEY_WORDS == 1 && PASSES_MAX * RADIX * 16 * 4 <= XW_DYNAMIC_SHARED, "lane counters");
#else
    // PARTS copies of every counter: thread t counts into copy t % PARTS, so the lanes of a
    // warp that share a digit (sorted, all-equal and low-entropy keys) mostly add to
    // different words.
    __shared__ unsigned s_hist[PASSES_MAX * RADIX * PARTS];
#endif
    const unsigned local = threadIdx.x;
    if (p.clear) {
        const unsigned long long first = xw_group() * blockDim.x * CLEAR_ITEMS + local;
        for (unsigned r = 0; r < CLEAR_ITEMS; ++r) {
            const unsigned long long i = first + r * blockDim.x;
            if (i < p.n) work[i] = 0;
        }
        return;
    }
#if PARTS == 32
    for (unsigned i = local; i < p.passes * RADIX * 16; i += blockDim.x) s_hist[i] = 0;
#else
    for (unsigned i = local; i < p.passes * RADIX * PARTS; i += blockDim.x) s_hist[i] = 0;
#endif
    __syncthreads();
    const unsigned part = local % PARTS;
    const unsigned start = (unsigned)xw_group() * p.chunk;
    const unsigned stop = min(start + p.chunk, p.n);
    // Each digit pass's shift and mask, formed once (see the Vulkan twin).
    unsigned shifts[PASSES_MAX];
    unsigned masks[PASSES_MAX];
#pragma unroll
    for (unsigned d = 0; d < PASSES_MAX; ++d) {
        shifts[d] = min(p.begin + 8u * d, 32u * KEY_WORDS - 1u);
        masks[d] = d < p.passes ? xw_digit_mask(shifts[d], p.end) : 0u;
    }
    // HIST_ITEMS loads in flight per thread before any is counted.
    for (unsigned i = start + local; i < stop; i += HIST_ITEMS * blockDim.x) {
        KEY m[HIST_ITEMS];
#pragma unroll
        for (unsigned r = 0; r < HIST_ITEMS; ++r) {
            const unsigned at = i + r * blockDim.x;
            m[r] = at < stop ? xw_sort_map(keys[at], XW_KEY_KIND, XW_DESCENDING) : (KEY)0;
        }
#pragma unroll
        for (unsigned r = 0; r < HIST_ITEMS; ++r) {
            if (i + r * blockDim.x < stop) {
#pragma unroll
                for (unsigned d = 0; d < PASSES_MAX; ++d) {
                    if (d < p.passes) {
                        const unsigned v = xw_digit(m[r], shifts[d], masks[d]);
#if PARTS == 32
                        atomicAdd(&s_hist[(d * (RADIX / 2) + (v >> 1)) * 32 + part], 1u << (16 * (v & 1)));
#else
                        atomicAdd(&s_hist[(d * RADIX + v) * PARTS + part], 1u);
#endif
                    }
                }
            }
        }
    }
    __syncthreads();
#if PARTS == 32
    // Row r holds counters 2r and 2r + 1 of every lane; a warp's threads start at different
    // lanes, so their loads never share a bank.
    for (unsigned r = local; r < p.passes * RADIX / 2; r += blockDim.x) {
        unsigned lo = 0, hi = 0;
#pragma unroll 8
        for (unsigned l = 0; l < 32; ++l) {
            const unsigned w = s_hist[r * 32 + ((l + local) & 31u)];
            lo += w & 0xffffu;
            hi += w >> 16;
        }
        if (lo != 0) atomicAdd(&work[XW_SORT_HIST + 2 * r], lo);
        if (hi != 0) atomicAdd(&work[XW_SORT_HIST + 2 * r + 1], hi);
    }
    return;
#endif
    for (unsigned i = local; i < p.passes * RADIX; i += blockDim.x) {
        unsigned c = 0;
#pragma unroll
        for (unsigned q = 0; q < PARTS; ++q) c += s_hist[i * PARTS + q];
        if (c != 0) atomicAdd(&work[XW_SORT_HIST + i], c);
    }
}
