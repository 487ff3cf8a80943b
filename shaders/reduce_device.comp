#version 450
// The device reduce in one launch, for inputs of at most (BLOCK * ITEMS)^2 tiles; the twin of
// cuda/reduce_device.cu, modelled by src/cpu/reduce.rs.
//
// Each workgroup reduces its tile of BLOCK * ITEMS elements exactly as reduce.comp's SCOPE 3
// does and writes the total to `totals`; then its first invocation counts the tile on
// a counter. The totals are reduced in the same order as the multi-launch reduce's further
// levels, so the result is the same bits. When they fit in one tile, `counter[0]` counts the
// tiles and the workgroup that counts last (every other total is written by then) reduces them
// as one more tile. Otherwise `counter[1 + g]` counts the tiles whose totals make up tile g of
// totals; the workgroup that counts last there reduces that tile of totals to one value in
// totals[groups + g] and counts it on `counter[0]`, and the one that counts the last such value
// reduces them as one tile. So the tiles of totals are reduced in parallel, while other
// workgroups still stream their tiles. Each counter is set back to zero by the workgroup that
// counted last on it, which is how the next launch finds it (the device runs one launch at a
// time).
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;    // 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor
layout(constant_id = 2) const uint ITEMS = 16u;
layout(constant_id = 3) const uint GROUPED = 0u;  // 1: more than one tile of totals

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
    uint tile = gl_WorkGroupSize.x * ITEMS;
    precise T acc = xw_identity();
    XW_TILE_FOLD(acc, src, group * tile, p.n);
    T total = block_total(acc, local);
    // One tile of totals or fewer: counter[0] counts the tiles. More: counter[1 + g] counts the
    // tiles of tile-of-totals g, and counter[0] the tiles of totals reduced.
    // GROUPED is 0 when there is at most one tile of totals: the pipeline is then that path alone.
    uint m = GROUPED != 0u ? (p.groups + tile - 1u) / tile : 1u;
    uint g = group / tile;
    uint word = m == 1u ? 0u : 1u + g;
    uint members = m == 1u ? p.groups : min(tile, p.groups - g * tile);
    if (local == 0u) {
        // Publish the tile's total before counting the tile.
        totals[group] = total;
        memoryBarrierBuffer();
        last = atomicAdd(counter[word], 1u) == members - 1u;
    }
    barrier();
    // The same for the whole workgroup (read after the barrier).
    if (!last) return;
    memoryBarrierBuffer();
    T result;
    if (m == 1u) {
        precise T sum = xw_identity();
        XW_TILE_FOLD(sum, totals, 0u, p.groups);
        result = block_total(sum, local);
    } else {
        // This workgroup counted last in tile-of-totals g: it reduces that tile to one value
        // in totals[groups + g] and counts it; the workgroup that counts the last such value
        // reduces them, elements groups .. groups + m - 1, as one tile, in the same order.
        precise T sum = xw_identity();
        XW_TILE_FOLD(sum, totals, g * tile, p.groups);
        T v = block_total(sum, local);
        if (local == 0u) {
            counter[word] = 0u;
            totals[p.groups + g] = v;
            memoryBarrierBuffer();
            last = atomicAdd(counter[0], 1u) == m - 1u;
        }
        barrier();
        if (!last) return;
        memoryBarrierBuffer();
        precise T top = xw_identity();
        XW_TILE_FOLD(top, totals, p.groups, p.groups + m);
        result = block_total(top, local);
    }
    if (local == 0u) {
        dst[p.dst_index] = result;
        counter[0] = 0u;
    }
}
