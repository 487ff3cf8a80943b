// Even-bin histogram (CUB's HistogramEven) with CUDA's own intrinsics; the twin of
// shaders/histogram.comp, whose header describes the bins, the steps (OP: 0 CLEAR, 1 SHARED,
// 2 GLOBAL, 3 WIDEN, 4 SELF) of the plan in src/histogram.rs and the counting (each thread's bins by
// runs, its last run warp-aggregated: __all_sync finds a warp whose lanes all end on lane 0's
// bin and count, and lane 0 adds them with one atomic). Modelled by src/cpu/histogram.rs.
// FAST_BINS (the Vulkan twin's exact float variant) has no twin: CUDA keeps subnormals.
//
// Variant constants: OP, BLOCK (threads per block).

struct HistogramParams {
    unsigned int n;         // samples
    unsigned int bins;
    unsigned int chunk;     // samples per block (a multiple of the block size times BATCH)
    unsigned int wide;      // SELF: nonzero where the output's counts are u64
    unsigned int lower_lo;  // lower, upper, the float scale, the integer range and bin width:
    unsigned int lower_hi;  // two words each, low first
    unsigned int upper_lo;
    unsigned int upper_hi;
    unsigned int scale_lo;
    unsigned int scale_hi;
    unsigned int range_lo;
    unsigned int range_hi;
    unsigned int width_lo;
    unsigned int width_hi;
    unsigned int pad1;
    unsigned int pad2;
};

#include "predicate.cuh"

#define BATCH 8u
#define NONE 0xffffffffu

typedef unsigned long long xw_u64;

__device__ __forceinline__ xw_u64 xw_words(unsigned int lo, unsigned int hi) {
    return ((xw_u64)hi << 32) | lo;
}

// The 96-bit product of a and b: (the low 64 bits, the high 32).
__device__ __forceinline__ void xw_mul96(xw_u64 a, unsigned int b, xw_u64* lo, unsigned int* hi) {
    const xw_u64 p0 = (xw_u64)(unsigned int)a * b;
    const xw_u64 p1 = (a >> 32) * b;
    *lo = p0 + (p1 << 32);
    *hi = (unsigned int)(p1 >> 32) + (unsigned int)(*lo < p0);
}

__device__ __forceinline__ unsigned int xw_bin_int(xw_u64 d, const HistogramParams& p) {
    const xw_u64 width = xw_words(p.width_lo, p.width_hi);
    if (width != 0) return (unsigned int)(d / width);
    const xw_u64 range = xw_words(p.range_lo, p.range_hi);
    if (sizeof(XW_T) == 4) return (unsigned int)((d * p.bins) / range);
    // q = floor(d * bins / range) < bins <= 2^24, bit by bit: the largest q with
    // q * range <= d * bins.
    xw_u64 dl;
    unsigned int dh;
    xw_mul96(d, p.bins, &dl, &dh);
    unsigned int q = 0;
    for (int bit = 31 - __clz(p.bins); bit >= 0; --bit) {
        const unsigned int t = q | (1u << bit);
        xw_u64 tl;
        unsigned int th;
        xw_mul96(range, t, &tl, &th);
        if (th < dh || (th == dh && tl <= dl)) q = t;
    }
    return q;
}

__device__ __forceinline__ unsigned int xw_bin_scaled(float x, float lower, const HistogramParams& p) {
    const float scale = __uint_as_float(p.scale_lo);
    return min((unsigned int)floorf(__fmul_rn(__fsub_rn(x, lower), scale)), p.bins - 1);
}
__device__ __forceinline__ unsigned int xw_bin_scaled(double x, double lower, const HistogramParams& p) {
    const double scale = __longlong_as_double((long long)xw_words(p.scale_lo, p.scale_hi));
    return min((unsigned int)floor(__dmul_rn(__dsub_rn(x, lower), scale)), p.bins - 1);
}
template <typename I>
__device__ __forceinline__ unsigned int xw_bin_scaled(I x, I lower, const HistogramParams& p) {
    // Integers: the difference in the unsigned type of the same width, exact.
    const xw_u64 d = sizeof(I) == 4 ? (xw_u64)((unsigned int)x - (unsigned int)lower)
                                    : (xw_u64)x - (xw_u64)lower;
    return xw_bin_int(d, p);
}

// The bin of sample x, or NONE.
__device__ __forceinline__ unsigned int xw_bin_of(XW_T x, const HistogramParams& p) {
    const XW_T lower = xw_pred_operand(p.lower_lo, p.lower_hi);
    const XW_T upper = xw_pred_operand(p.upper_lo, p.upper_hi);
    if (!(x >= lower && x < upper)) return NONE;
    return xw_bin_scaled(x, lower, p);
}

__device__ __forceinline__ void xw_add(unsigned int* sh, unsigned int* counts, unsigned int b,
                                       unsigned int c) {
#if OP == 1 || OP == 4
    atomicAdd(&sh[b], c);
#else
    atomicAdd(&counts[b], c);
#endif
}

// Counts c samples in bin b (NONE: nothing) for each thread: where the whole warp holds one bin
// and one count, lane 0 adds them all. The whole warp calls it.
__device__ __forceinline__ void xw_count_run(unsigned int* sh, unsigned int* counts,
                                             unsigned int b, unsigned int c) {
    const unsigned int b0 = __shfl_sync(XW_FULL_MASK, b, 0);
    const unsigned int c0 = __shfl_sync(XW_FULL_MASK, c, 0);
    if (__all_sync(XW_FULL_MASK, b == b0 && c == c0)) {
        if (b0 != NONE && threadIdx.x % XW_WARP == 0) xw_add(sh, counts, b0, c0 * XW_WARP);
    } else if (b != NONE) {
        xw_add(sh, counts, b, c);
    }
}

extern "C" __global__ __launch_bounds__(BLOCK) void histogram(const XW_T* __restrict__ samples,
                                                              unsigned int* counts,
                                                              unsigned int* __restrict__ wide,
                                                              HistogramParams p) {
    __shared__ unsigned int sh[SHARED_WORDS];  // the bins rounded up (see the Vulkan twin)
    const unsigned int local = threadIdx.x;
    const unsigned long long i0 = xw_group() * BLOCK + local;
#if OP == 0
    if (i0 < p.bins) counts[i0] = 0;
#elif OP == 3
    if (i0 < p.bins) {
        wide[2 * i0] = counts[i0];
        wide[2 * i0 + 1] = 0;
    }
#else
#if OP == 1 || OP == 4
    for (unsigned int i = local; i < p.bins; i += BLOCK) sh[i] = 0;
    __syncthreads();
#endif
    const unsigned int start = (unsigned int)xw_group() * p.chunk;
    const unsigned int stop = min(start + p.chunk, p.n);
    for (unsigned int base = start; base < stop; base += BATCH * BLOCK) {
        unsigned int b[BATCH];
        if (base + BATCH * BLOCK <= stop) {
            // A whole step: every load issued before any sample is binned (a bin's branches
            // would otherwise keep each load behind the one before).
            XW_T x[BATCH];
#pragma unroll
            for (unsigned int j = 0; j < BATCH; ++j) x[j] = samples[base + j * BLOCK + local];
#pragma unroll
            for (unsigned int j = 0; j < BATCH; ++j) b[j] = xw_bin_of(x[j], p);
        } else {
#pragma unroll
            for (unsigned int j = 0; j < BATCH; ++j) {
                const unsigned int i = base + j * BLOCK + local;
                b[j] = i < stop ? xw_bin_of(samples[i], p) : NONE;
            }
        }
        // The thread's bins by runs of equal bins, its last run warp-aggregated.
        unsigned int run = b[0];
        unsigned int c = 1;
#pragma unroll
        for (unsigned int j = 1; j < BATCH; ++j) {
            if (b[j] != run) {
                if (run != NONE) xw_add(sh, counts, run, c);
                run = b[j];
                c = 0;
            }
            ++c;
        }
        xw_count_run(sh, counts, run, c);
    }
#if OP == 1 || OP == 4
    __syncthreads();
    for (unsigned int i = local; i < p.bins; i += BLOCK) {
        const unsigned int c = sh[i];
        if (c != 0) atomicAdd(&counts[i], c);
    }
#endif
#if OP == 4
    // SELF (see the GLSL twin): thread 0 counts the block done after a fence (the block's adds
    // before its count); the last block takes each total, zeroing its word, writes the output
    // and zeroes the count.
    __shared__ unsigned int s_last;
    __syncthreads();
    if (local == 0) {
        __threadfence();
        const unsigned int groups = (p.n - 1) / p.chunk + 1;  // the launch's blocks (p.n > 0)
        s_last = atomicAdd(&counts[p.bins], 1u) + 1 == groups ? 1u : 0u;
    }
    __syncthreads();
    if (s_last != 0) {
        __threadfence();
        for (unsigned int i = local; i < p.bins; i += BLOCK) {
            const unsigned int c = atomicExch(&counts[i], 0u);
            if (p.wide != 0) {
                wide[2 * i] = c;
                wide[2 * i + 1] = 0;
            } else {
                wide[i] = c;
            }
        }
        if (local == 0) counts[p.bins] = 0;
    }
#endif
#endif
}
