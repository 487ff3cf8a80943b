// The radix sort's first step; the twin of shaders/sort_histogram.comp (see there for the two
// modes and the runs of equal digits), modelled by src/cpu/sort.rs.

#include "sort_common.cuh"

struct SortHistogramParams {
    unsigned int n;           // keys; clearing: words to zero
    unsigned int chunk;       // keys per block (a multiple of the block size)
    unsigned int passes;      // digit passes of the bit range
    unsigned int begin;       // the bit range begin_bit .. end_bit
    unsigned int end;
    unsigned int key_kind;    // KIND_*
    unsigned int descending;  // nonzero: descending order
    unsigned int clear;       // nonzero: clearing mode
};

#define PASSES_MAX (4u * KEY_WORDS)
#define CLEAR_ITEMS 4u
#define BATCH 4u

extern "C" __global__ void sort_histogram(const KEY* __restrict__ keys, unsigned* work,
                                          SortHistogramParams p) {
    __shared__ unsigned s_hist[PASSES_MAX * RADIX];
    const unsigned local = threadIdx.x;
    if (p.clear) {
        const unsigned long long first = xw_group() * blockDim.x * CLEAR_ITEMS + local;
        for (unsigned r = 0; r < CLEAR_ITEMS; ++r) {
            const unsigned long long i = first + r * blockDim.x;
            if (i < p.n) work[i] = 0;
        }
        return;
    }
    for (unsigned i = local; i < p.passes * RADIX; i += blockDim.x) s_hist[i] = 0;
    __syncthreads();
    const bool descending = p.descending != 0;
    const unsigned start = (unsigned)xw_group() * p.chunk;
    const unsigned stop = min(start + p.chunk, p.n);
    unsigned digit[PASSES_MAX];
    unsigned run[PASSES_MAX];
#pragma unroll
    for (unsigned d = 0; d < PASSES_MAX; ++d) {
        digit[d] = 0;
        run[d] = 0;
    }
    // BATCH loads in flight per thread before any is counted.
    for (unsigned i = start + local; i < stop; i += BATCH * blockDim.x) {
        KEY m[BATCH];
#pragma unroll
        for (unsigned r = 0; r < BATCH; ++r) {
            const unsigned at = i + r * blockDim.x;
            if (at < stop) m[r] = xw_sort_map(keys[at], p.key_kind, descending);
        }
#pragma unroll
        for (unsigned r = 0; r < BATCH; ++r) {
            if (i + r * blockDim.x >= stop) break;
#pragma unroll
            for (unsigned d = 0; d < PASSES_MAX; ++d) {
                if (d < p.passes) {
                    const unsigned shift = p.begin + 8u * d;
                    const unsigned v = xw_digit(m[r], shift, xw_digit_mask(shift, p.end));
                    if (v != digit[d]) {
                        if (run[d] != 0) atomicAdd(&s_hist[d * RADIX + digit[d]], run[d]);
                        digit[d] = v;
                        run[d] = 0;
                    }
                    run[d] += 1;
                }
            }
        }
    }
#pragma unroll
    for (unsigned d = 0; d < PASSES_MAX; ++d) {
        if (d < p.passes && run[d] != 0) atomicAdd(&s_hist[d * RADIX + digit[d]], run[d]);
    }
    __syncthreads();
    for (unsigned i = local; i < p.passes * RADIX; i += blockDim.x) {
        const unsigned c = s_hist[i];
        if (c != 0) atomicAdd(&work[XW_SORT_HIST + i], c);
    }
}
