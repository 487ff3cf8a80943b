#version 450
// Reductions at three scopes; the twin of cuda/reduce.cu, modelled by src/cpu/reduce.rs.
//
// SCOPE 0, warp butterfly: every lane of each 32-lane logical warp gets the warp's total
//   (xor butterfly, levels 1, 2, 4, 8, 16); output per element.
// SCOPE 1, warp shift-down: lane 0 gets the total (levels 16, 8, 4, 2, 1); output per warp.
// SCOPE 2, block: shift-down per warp, warp totals in shared memory, the first warp reduces
//   them; output per workgroup.
// SCOPE 3, device tile: each of the BLOCK threads folds ITEMS elements strided by BLOCK, in
//   order, starting from the identity; then the butterfly over the whole workgroup; output per
//   tile of BLOCK * ITEMS elements. The device reduce repeats it over the tile totals.
//
// Every combination is op(lower lanes, upper lanes), so the association order depends only on
// n, never on the subgroup size or on whether values travel by shuffle or shared memory.
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;    // 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor
layout(constant_id = 2) const uint SCOPE = 0u;
layout(constant_id = 3) const uint ITEMS = 16u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(push_constant) uniform Params {
    uint n;       // elements in this launch
    uint groups;  // workgroups that have work; any beyond leave at once
    uint dst_index; // index of the first result in dst
} p;

shared T stage[gl_WorkGroupSize.x];
shared T warp_totals[gl_WorkGroupSize.x / XW_WARP];

#include "reduce_op.glsl"

#include "reduce_tile.glsl"

// CUDA's shift-down reduce of a 32-lane warp: lane 0 ends with the total. A lane whose source
// lies past the warp combines with its own value, as __shfl_down_sync returns it. Levels at or
// above the subgroup size cross subgroups and go through shared memory; below it, lanes whose
// source lies in the next subgroup read an undefined value, but no such lane feeds lane 0.
T warp_reduce_down(T v, uint local) {
    uint lane = local % XW_WARP;
    [[unroll]] for (uint s = XW_WARP / 2u; s > 0u; s >>= 1u) {
        T o;
        if (s >= gl_SubgroupSize) {
            stage[local] = v;
            barrier();
            o = lane + s < XW_WARP ? stage[local + s] : v;
            barrier();
        } else {
            o = xw_shuffle_down(v, s);
            if (lane + s >= XW_WARP) o = v;
        }
        v = xw_op(v, o);
    }
    return v;
}

void main() {
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.groups) return;
    uint local = xw_local();
    uint block = gl_WorkGroupSize.x;
    if (SCOPE == 3u) {
        precise T acc = xw_identity();
        XW_TILE_FOLD(acc, src, group * block * ITEMS, p.n);
        T total = block_total(acc, local);
        if (local == 0u) dst[p.dst_index + group] = total;
        return;
    }
    uint i = group * block + local;
    T v = i < p.n ? src[i] : xw_identity();
    if (SCOPE == 0u) {
        v = butterfly(v, local, XW_WARP);
        if (i < p.n) dst[p.dst_index + i] = v;
    } else if (SCOPE == 1u) {
        v = warp_reduce_down(v, local);
        if (local % XW_WARP == 0u && i < p.n) dst[p.dst_index + i / XW_WARP] = v;
    } else {
        v = warp_reduce_down(v, local);
        if (local % XW_WARP == 0u) warp_totals[local / XW_WARP] = v;
        barrier();
        // Every warp runs the second round (its barriers need the whole workgroup); only the
        // first warp's result is kept.
        uint lane = local % XW_WARP;
        v = lane < block / XW_WARP ? warp_totals[lane] : xw_identity();
        v = warp_reduce_down(v, local);
        if (local == 0u) dst[p.dst_index + group] = v;
    }
}
