#version 450
// Warp scan (SCOPE 0: each 32-lane logical warp, Kogge-Stone with shift-up shuffles, CUDA's
// semantics on any subgroup size) and block scan (SCOPE 1: each workgroup, one element per
// thread, the tile order of scan_common.glsl with ITEMS = 1); inclusive or EXCLUSIVE. The twin
// of cuda/scan.cu.
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;  // 0 sum, 2 min, 3 max (reduce_op.glsl codes)
layout(constant_id = 2) const uint SCOPE = 0u;
layout(constant_id = 3) const uint EXCLUSIVE = 0u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(push_constant) uniform Params {
    uint n;
    uint groups;
} p;

shared T stage[gl_WorkGroupSize.x];
shared T warp_totals[gl_WorkGroupSize.x / XW_WARP];

#include "reduce_op.glsl"
#include "scan_common.glsl"

void main() {
    uint group = xw_group();
    if (group >= p.groups) return;
    uint local = xw_local();
    uint i = group * gl_WorkGroupSize.x + local;
    T x = i < p.n ? src[i] : xw_identity();
    T y;
    if (SCOPE == 0u) {
        T incl = warp_inclusive(x, local);
        y = EXCLUSIVE != 0u ? warp_shift_up_one(incl, local) : incl;
    } else {
        T prefix;
        T total;
        block_prefix(x, local, prefix, total);
        y = EXCLUSIVE != 0u ? prefix : xw_op(prefix, x);
    }
    if (i < p.n) dst[i] = y;
}
