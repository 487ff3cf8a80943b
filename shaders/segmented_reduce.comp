#version 450
// Segmented reduce (CUB's DeviceSegmentedReduce): one reduction per segment of the input given
// by offsets (segment s = offsets[s] .. offsets[s + 1]); the twin of cuda/segmented_reduce.cu,
// modelled by src/cpu/segmented_reduce.rs. Each segment's value is the device reduce of its
// elements in the canonical order of src/reduce.rs (README, "Deterministic floats": tiles of
// BLOCK * ITEMS = 4096 from the segment's first element, the 256-invocation butterfly, tile
// totals reduced again while there are more than one), so an empty segment gives the identity
// and the bits match xwarp::reduce on the segment alone.
//
// The plan (src/segmented_reduce.rs, made once per xwarp::segmented_reduce::Segments) has two
// kinds of launch:
//   SMALL  one invocation per segment of at most SMALL elements (items: segment indices): the
//          tile's order written out for so few elements, a pairwise tree over SMALL leaves
//          (the invocations' values, identities past the end) and the butterfly's remaining
//          levels, each against a subtree of identities;
//   TILES  one workgroup per tile of the longer segments (items: first element, end,
//          destination, and whether the destination is the output or the next level's
//          totals): the device reduce's tile (reduce_tile.glsl). A segment of one tile is
//          written to the output; a longer one's tile totals go to `totals`, which the next
//          level reduces the same way (three levels at most: 2^30 elements).
// Many tiny segments take one invocation each; one huge segment takes every workgroup.
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;     // 0 sum, 1 product, 2 min, 3 max, 4 and, 5 or, 6 xor
layout(constant_id = 2) const uint ITEMS = 16u;
layout(constant_id = 3) const uint STEP = 0u;   // 0 SMALL, 1 TILES

const uint STEP_SMALL = 0u;
const uint SMALL = 32u;        // the longest segment of the SMALL step
const uint TREE_LEVELS = 5u;   // log2(SMALL)

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) writeonly buffer Totals { T totals[]; };
layout(std430, binding = 3) readonly buffer Items { uint items[]; };
layout(std430, binding = 4) readonly buffer Offsets { uint offsets[]; };
layout(push_constant) uniform Params {
    uint items;  // segments (SMALL) or tiles (TILES) of this launch
    uint pad0;
    uint pad1;
    uint pad2;
} p;

shared T stage[gl_WorkGroupSize.x];

#include "reduce_op.glsl"
#include "reduce_tile.glsl"

void main() {
    if (STEP == STEP_SMALL) {
        uint i = xw_group() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
        if (i >= p.items) return;
        uint s = items[i];
        uint first = offsets[s];
        uint m = offsets[s + 1u] - first;
        // Invocation t of the tile holds op(id, x[t]) (t < m) or id; the butterfly's lane 0
        // ends with the pairwise tree over all 256 of them, neighbours first.
        T v[SMALL];
        [[unroll]] for (uint t = 0u; t < SMALL; ++t) {
            v[t] = t < m ? xw_op(xw_identity(), src[first + t]) : xw_identity();
        }
#if defined(XW_SUBNORMALS_EXACT)
        if (OP == 0u) {
            // Exact sums: a pair whose upper subtree starts at or past m (identities, -0.0,
            // only) is its lower value as it is (x + -0.0 is x for every x), as are the
            // levels above SMALL: no exact sum, whose test fails on zeros, for the padding.
            [[unroll]] for (uint level = 0u; level < TREE_LEVELS; ++level) {
                uint d = 1u << level;
                [[unroll]] for (uint t = 0u; t < SMALL; t += 2u * d) {
                    if (t + d < m) v[t] = xw_op(v[t], v[t + d]);
                }
            }
            dst[s] = v[0];
            return;
        }
#endif
        [[unroll]] for (uint level = 0u; level < TREE_LEVELS; ++level) {
            uint d = 1u << level;
            [[unroll]] for (uint t = 0u; t < SMALL; t += 2u * d) v[t] = xw_op(v[t], v[t + d]);
        }
        T r = v[0];
        // The levels above SMALL: the upper subtree holds identities only.
        for (uint s2 = SMALL; s2 < gl_WorkGroupSize.x; s2 <<= 1u) r = xw_op(r, xw_identity());
        dst[s] = r;
        return;
    }
    uint group = xw_group();
    // Whole workgroups without work leave together; inside one all invocations stay.
    if (group >= p.items) return;
    uint first = items[4u * group];
    uint end = items[4u * group + 1u];
    uint at = items[4u * group + 2u];
    bool to_totals = items[4u * group + 3u] != 0u;
    precise T acc = xw_identity();
    XW_TILE_FOLD(acc, src, first, end);
    T total = block_total(acc, xw_local());
    if (xw_local() == 0u) {
        if (to_totals) {
            totals[at] = total;
        } else {
            dst[at] = total;
        }
    }
}
