#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// The device reduce in one launch, for inputs of at most (BLOCK * ITEMS)^2 tiles; the twin of
// cuda/reduce_device.cu, modelled by src/cpu/reduce.rs.
//
// Each workgroup reduces its tile of BLOCK * ITEMS elements exactly as reduce.comp's SCOPE 3
// does and writes the total to `totals`; then its first invocation counts the tile on
// `counter[0]`. The workgroup that counts last (every other total is written by then) reduces
// the totals in the same order as the multi-launch reduce's further levels, so the result is the
// same bits: as one more tile when they fit in one, else each tile of them to one value in
// totals[groups + t], then those as one tile. It writes the result and sets the counter back to
// zero, which is how the next launch finds it (the device runs one launch at a time).
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
    uint n;         // elements
    uint groups;    // tiles, one workgroup each (at most (BLOCK * ITEMS)^2)
    uint dst_index; // index of the result in dst
} p;

shared T stage[gl_WorkGroupSize.x];
shared bool last;

#include "reduce_op.glsl"

#include "reduce_tile.glsl"

void main() {
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.groups) return;
    uint local = xw_local();
    precise T acc = xw_identity();
    XW_TILE_FOLD(acc, src, group * gl_WorkGroupSize.x * ITEMS, p.n);
    T total = block_total(acc, local);
    if (local == 0u) {
        // Publish the tile's total before counting the tile.
        totals[group] = total;
        memoryBarrierBuffer();
        last = atomicAdd(counter[0], 1u) == p.groups - 1u;
    }
    barrier();
    // The same for the whole workgroup (read after the barrier).
    if (!last) return;
    memoryBarrierBuffer();
    uint tile = gl_WorkGroupSize.x * ITEMS;
    T result;
    if (p.groups <= tile) {
        precise T sum = xw_identity();
        XW_TILE_FOLD(sum, totals, 0u, p.groups);
        result = block_total(sum, local);
    } else {
        uint m = (p.groups + tile - 1u) / tile;
        for (uint t = 0u; t < m; ++t) {
            precise T sum = xw_identity();
            XW_TILE_FOLD(sum, totals, t * tile, p.groups);
            T v = block_total(sum, local);
            if (local == 0u) totals[p.groups + t] = v;
            // Makes the value visible to the workgroup, and keeps the next tile's block_total
            // from overwriting `stage` before the first subgroup has read it.
            memoryBarrierBuffer();
            barrier();
        }
        // The m values as one tile: elements groups .. groups + m - 1, in the same order.
        precise T sum = xw_identity();
        XW_TILE_FOLD(sum, totals, p.groups, p.groups + m);
        result = block_total(sum, local);
    }
    if (local == 0u) {
        dst[p.dst_index] = result;
        counter[0] = 0u;
    }
}
