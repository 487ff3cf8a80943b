#version 450
// Rung reduceCompleteUnroll<iBlockSize>: reduceCompleteUnrollWarps8 with the block size a
// compile-time parameter: the specialization constant IBLOCK (the CUDA twin's -DIBLOCK, the
// book's template argument), which the layer selects by a switch over 64, 128, 256, 512 and 1024
// and which must equal the workgroup size. Needs a block of at least 64.
//
// Like every chapter-3 rung it works in place on global memory, as the book's kernels do on
// g_idata, but never on the caller's input: each workgroup first writes its starting values
// (the guarded loads, zeros past n) into its slice of a scratch buffer the layer allocates
// (`work`, block elements per workgroup), and the tree runs there. One partial per workgroup
// goes to dst[dst_index + group]; the layer finishes with the device reduce.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) XW_WORKGROUP_COHERENT buffer Work { T work[]; };
layout(std430, binding = 2) writeonly buffer Dst { T dst[]; };

#define LADDER_AT(i) work[ladder_base + (i)]
#define LADDER_GLOBAL 1
#include "ladder_common.glsl"

layout(constant_id = 1) const uint IBLOCK = 512u;

void main() {
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.groups) return;
    uint tid = xw_local();
    ladder_base = group * IBLOCK;
    LADDER_AT(tid) = ladder_load(group, tid, 8u);
    ladder_barrier();
    if (IBLOCK >= 1024u && tid < 512u) LADDER_AT(tid) += LADDER_AT(tid + 512u);
    ladder_barrier();
    if (IBLOCK >= 512u && tid < 256u) LADDER_AT(tid) += LADDER_AT(tid + 256u);
    ladder_barrier();
    if (IBLOCK >= 256u && tid < 128u) LADDER_AT(tid) += LADDER_AT(tid + 128u);
    ladder_barrier();
    if (IBLOCK >= 128u && tid < 64u) LADDER_AT(tid) += LADDER_AT(tid + 64u);
    ladder_barrier();
    ladder_last_warp(tid);
    if (tid == 0u) dst[p.dst_index + group] = LADDER_AT(0u);
}
