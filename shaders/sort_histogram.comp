#version 450
// The radix sort's first step; the twin of cuda/sort_histogram.cu, modelled by
// src/cpu/sort.rs. Two modes:
//   clear      zero words 0 .. n of the work buffer (the histograms, the tile counters and
//              the first pass's tile states), grid-strided, CLEAR_ITEMS words per invocation;
//   histogram  count every digit of the bit range at once: workgroup g reads keys
//              g * chunk .. (g + 1) * chunk in coalesced steps, counts each digit pass into a
//              histogram in shared memory and adds its nonzero counts to the global rows.
// Every counter is kept PARTS times: invocation t counts into copy t % PARTS, so the invocations
// of a subgroup that share a digit (sorted, all-equal and low-entropy keys: one digit value for
// many keys) mostly add to different words; the copies are summed at the end.
#include "common.glsl"
#include "sort_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PARTS = 4u;  // copies of every counter (a power of two)
// How keys map to sortable bits (KIND_*) and the order: 2 * kind + descending.
layout(constant_id = 2) const uint KEY_ORDER = 0u;
const uint KEY_KIND = KEY_ORDER / 2u;
const bool DESCENDING = (KEY_ORDER & 1u) != 0u;

layout(std430, binding = 0) readonly buffer Keys { KEY keys[]; };
layout(std430, binding = 1) buffer Work { uint work[]; };
layout(push_constant) uniform Params {
    uint n;           // keys; clearing: words to zero
    uint chunk;       // keys per workgroup (a multiple of the workgroup size)
    uint passes;      // digit passes of the bit range
    uint begin;       // the bit range begin_bit .. end_bit
    uint end;
    uint clear;       // nonzero: clearing mode
} p;

const uint PASSES_MAX = 4u * KEY_WORDS;
const uint CLEAR_ITEMS = 4u;
const uint HIST_ITEMS = 8u;

shared uint s_hist[PASSES_MAX * RADIX * PARTS];

void main() {
    uint local = xw_local();
    if (p.clear != 0u) {
        uint first = xw_group() * gl_WorkGroupSize.x * CLEAR_ITEMS + local;
        for (uint r = 0u; r < CLEAR_ITEMS; ++r) {
            uint i = first + r * gl_WorkGroupSize.x;
            if (i < p.n) work[i] = 0u;
        }
        return;
    }
    for (uint i = local; i < p.passes * RADIX * PARTS; i += gl_WorkGroupSize.x) s_hist[i] = 0u;
    barrier();
    uint part = local % PARTS;
    uint start = xw_group() * p.chunk;
    uint stop = min(start + p.chunk, p.n);
    // Each digit pass's shift and mask, formed once (NVIDIA's driver formed them again for
    // every key where they were written inside the loop).
    uint shifts[PASSES_MAX];
    uint masks[PASSES_MAX];
    [[unroll]] for (uint d = 0u; d < PASSES_MAX; ++d) {
        shifts[d] = min(p.begin + 8u * d, 32u * KEY_WORDS - 1u);
        masks[d] = d < p.passes ? xw_digit_mask(shifts[d], p.end) : 0u;
    }
    // HIST_ITEMS loads in flight per invocation before any is counted.
    for (uint i = start + local; i < stop; i += HIST_ITEMS * gl_WorkGroupSize.x) {
        KEY m[HIST_ITEMS];
        [[unroll]] for (uint r = 0u; r < HIST_ITEMS; ++r) {
            uint at = i + r * gl_WorkGroupSize.x;
            m[r] = at < stop ? xw_sort_map(keys[at], KEY_KIND, DESCENDING) : KEY(0u);
        }
        [[unroll]] for (uint r = 0u; r < HIST_ITEMS; ++r) {
            if (i + r * gl_WorkGroupSize.x < stop) {
                [[unroll]] for (uint d = 0u; d < PASSES_MAX; ++d) {
                    if (d < p.passes) {
                        uint v = xw_digit(m[r], shifts[d], masks[d]);
                        atomicAdd(s_hist[(d * RADIX + v) * PARTS + part], 1u);
                    }
                }
            }
        }
    }
    barrier();
    for (uint i = local; i < p.passes * RADIX; i += gl_WorkGroupSize.x) {
        uint c = 0u;
        for (uint q = 0u; q < PARTS; ++q) c += s_hist[i * PARTS + q];
        if (c != 0u) atomicAdd(work[XW_SORT_HIST + i], c);
    }
}
