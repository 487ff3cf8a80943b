#version 450
// Rung reduceShfl (chapter 5): the warp-shuffle reduce. Each invocation loads one element
// (guarded: zero past n); each 32-lane warp sums its values with the xor butterfly
// (__shfl_xor_sync at 16, 8, 4, 2, 1 in the CUDA twin); lane 0 of every warp puts the warp's
// sum in shared memory; then the first warp sums those partials the same way. The caller's
// input is only read. One partial per workgroup.
//
// Warps are the 32-lane logical warps of the CUDA model whatever the subgroup size S: a
// butterfly level below S is a subgroup shuffle (on S >= 64 it stays inside the lane's half or
// quarter, since the mask is below 32); a level at or above S (S = 4, 8, 16) crosses subgroups
// and goes through shared memory with workgroup barriers, so the butterfly is called in
// uniform control flow by every warp (only the first warp's second-round result is kept).
#include "common.glsl"
#include "shuffle.glsl"

// Before the shared arrays sized by gl_WorkGroupSize (or glslang sizes them as 1).
layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };

shared T stage[gl_WorkGroupSize.x];
shared T warp_sums[gl_WorkGroupSize.x / XW_WARP];

#define LADDER_AT(i) stage[i]
#include "ladder_common.glsl"

// The book's warpReduce: every lane of the 32-lane warp ends with the warp's sum.
T warp_reduce(T v, uint tid) {
    [[unroll]] for (uint s = XW_WARP / 2u; s > 0u; s >>= 1u) {
        T o;
        if (s < gl_SubgroupSize) {
            o = xw_shuffle_xor(v, s);
        } else {
            stage[tid] = v;
            barrier();
            o = stage[tid ^ s];
            barrier();
        }
        v += o;
    }
    return v;
}

void main() {
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.groups) return;
    uint tid = xw_local();
    uint block = gl_WorkGroupSize.x;
    uint lane = tid % XW_WARP;
    uint warp = tid / XW_WARP;
    T sum = ladder_load(group, tid, 1u);
    sum = warp_reduce(sum, tid);
    if (lane == 0u) warp_sums[warp] = sum;
    barrier();
    sum = tid < block / XW_WARP ? warp_sums[lane] : T(0);
    sum = warp_reduce(sum, tid);
    if (tid == 0u) dst[p.dst_index + group] = sum;
}
