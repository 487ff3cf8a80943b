#version 450
// Rung reduceSmem (chapter 5): the complete-unroll reduce in shared memory instead of global
// memory. Each invocation loads one element (guarded: zero past n) into smem, the tree is
// completely unrolled (strides 512, 256, 128, 64, skipped when the block is smaller), then the
// last warp is unrolled on any subgroup size (see ladder_warp_step in ladder_common.glsl). The
// caller's input is only read. Needs a block of at least 64. One partial per workgroup.
#include "common.glsl"

// Before the shared array sized by gl_WorkGroupSize (or glslang sizes it as 1).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };

shared T smem[gl_WorkGroupSize.x];

#define LADDER_AT(i) smem[i]
#include "ladder_common.glsl"

void main() {
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.groups) return;
    uint tid = xw_local();
    uint block = gl_WorkGroupSize.x;
    smem[tid] = ladder_load(group, tid, 1u);
    ladder_barrier();
    if (block >= 1024u && tid < 512u) smem[tid] += smem[tid + 512u];
    ladder_barrier();
    if (block >= 512u && tid < 256u) smem[tid] += smem[tid + 256u];
    ladder_barrier();
    if (block >= 256u && tid < 128u) smem[tid] += smem[tid + 128u];
    ladder_barrier();
    if (block >= 128u && tid < 64u) smem[tid] += smem[tid + 64u];
    ladder_barrier();
    ladder_last_warp(tid);
    if (tid == 0u) dst[p.dst_index + group] = smem[0];
}
