#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// The device reduce in one launch; the twin of cuda/reduce_device.cu, in the canonical order of
// src/reduce.rs (modelled by src/cpu/reduce.rs). Each workgroup reduces its tile of
// BLOCK * ITEMS elements (reduce_tile.glsl), writes the total into `totals` and counts itself
// done on `counter`; the workgroup that counts last reduces the totals, level by level, in tiles
// of the same order (the totals of level L follow those of level L-1 in `totals`), writes the
// result and sets the counter back to zero. No workgroup waits for another, so it needs no
// forward-progress guarantee.
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;    // 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor
layout(constant_id = 2) const uint ITEMS = 16u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) coherent buffer Totals { T totals[]; };
layout(std430, binding = 3) coherent buffer Counter { uint counter[]; };
layout(push_constant) uniform Params {
    uint n;       // elements
    uint groups;  // tiles; workgroups beyond leave at once
    uint dst_index; // index of the result in dst
} p;

shared T stage[gl_WorkGroupSize.x];
shared bool s_last;

#include "reduce_op.glsl"
#include "reduce_tile.glsl"

T input_tile(uint base) {
    precise T acc = xw_identity();
    XW_TILE_FOLD(acc, src, base, p.n);
    return butterfly(acc, xw_local(), gl_WorkGroupSize.x);
}

T totals_tile(uint base, uint end) {
    precise T acc = xw_identity();
    XW_TILE_FOLD(acc, totals, base, end);
    return butterfly(acc, xw_local(), gl_WorkGroupSize.x);
}

void main() {
    uint group = xw_group();
    if (group >= p.groups) return;
    uint local = xw_local();
    uint tile = gl_WorkGroupSize.x * ITEMS;
    T total = input_tile(group * tile);
    if (local == 0u) {
        totals[group] = total;
        memoryBarrierBuffer();
        s_last = atomicAdd(counter[0], 1u) == p.groups - 1u;
    }
    barrier();
    if (!s_last) return;
    // The last workgroup: every total is written and visible.
    memoryBarrierBuffer();
    uint off = 0u;
    uint count = p.groups;
    while (count > 1u) {
        uint next = (count + tile - 1u) / tile;
        for (uint t = 0u; t < next; ++t) {
            T v = totals_tile(off + t * tile, off + count);
            if (local == 0u) totals[off + count + t] = v;
        }
        memoryBarrierBuffer();
        barrier();
        off += count;
        count = next;
    }
    if (local == 0u) {
        dst[p.dst_index] = totals[off];
        counter[0] = 0u;
    }
}
