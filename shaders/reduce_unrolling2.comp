#version 450
// Rung reduceUnrolling2: each workgroup first sums 2 data blocks (thread tid adds elements
// idx, idx + block, ... of its tile of 2*block elements: 2x fewer workgroups, more loads in
// flight), then reduces the block of sums with the interleaved tree.
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

void main() {
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.groups) return;
    uint tid = xw_local();
    uint block = gl_WorkGroupSize.x;
    ladder_base = group * block;
    LADDER_AT(tid) = ladder_load(group, tid, 2u);
    ladder_barrier();
    for (uint stride = block / 2u; stride > 0u; stride >>= 1u) {
        ladder_tree_step(tid, stride);
    }
    if (tid == 0u) dst[p.dst_index + group] = LADDER_AT(0u);
}
