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
    // PARTS copies of every counter: thread t counts into copy t % PARTS, so the lanes of a
    // warp that share a digit (sorted, all-equal and low-entropy keys) mostly add to
    // different words.
    __shared__ unsigned s_hist[PASSES_MAX * RADIX * PARTS];
    const unsigned local = threadIdx.x;
    if (p.clear) {
        const unsigned long long first = xw_group() * blockDim.x * CLEAR_ITEMS + local;
        for (unsigned r = 0; r < CLEAR_ITEMS; ++r) {
            const unsigned long long i = first + r * blockDim.x;
            if (i < p.n) work[i] = 0;
        }
        return;
    }
    for (unsigned i = local; i < p.passes * RADIX * PARTS; i += blockDim.x) s_hist[i] = 0;
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
                        atomicAdd(&s_hist[(d * RADIX + v) * PARTS + part], 1u);
                    }
                }
            }
        }
    }
    __syncthreads();
    for (unsigned i = local; i < p.passes * RADIX; i += blockDim.x) {
        unsigned c = 0;
#pragma unroll
        for (unsigned q = 0; q < PARTS; ++q) c += s_hist[i * PARTS + q];
        if (c != 0) atomicAdd(&work[XW_SORT_HIST + i], c);
    }
}
