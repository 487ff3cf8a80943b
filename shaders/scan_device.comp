#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// Device scan, single pass: each workgroup scans a tile of BLOCK * ITEMS elements and finds
// the tile's exclusive prefix E by decoupled look-back; the twin of cuda/scan_device.cu,
// modelled by src/cpu/scan.rs.
//
// Canonical floats: E(k) is always the left fold A(0) + A(1) + ... + A(k-1) of the tile totals.
// The look-back walks back to the nearest published inclusive prefix P(j) (itself that fold up
// to j) and folds the aggregates A(j+1) .. A(k-1) onto it in order, so the bits do not depend
// on which j it found, that is on timing.
//
// No deadlock on any conformant device: Vulkan promises no forward progress between
// workgroups, so after `spin` polls of a predecessor that has published nothing, the workgroup
// reduces that tile itself (in the canonical order: the very bits the predecessor will
// publish) and publishes the aggregate for it. Flags only grow (atomicMax), so two publishers
// of the same aggregate cannot set a flag back.
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;  // 0 sum, 2 min, 3 max (reduce_op.glsl codes)
layout(constant_id = 2) const uint EXCLUSIVE = 0u;
layout(constant_id = 3) const uint ITEMS = 8u;

const uint FLAG_AGGREGATE = 1u;
const uint FLAG_INCLUSIVE = 2u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) coherent buffer Counters { uint counters[]; };
layout(std430, binding = 3) coherent buffer Flags { uint flags[]; };
layout(std430, binding = 4) coherent buffer Aggregates { T aggregates[]; };
layout(std430, binding = 5) coherent buffer Inclusives { T inclusives[]; };
layout(push_constant) uniform Params {
    uint n;       // elements in this launch (a chunk of whole tiles)
    uint tiles;   // tiles in this launch
    uint tile0;   // global index of the launch's first tile
    uint chunk;   // this launch's tile counter
    uint spin;    // polls of an unpublished predecessor before reducing its tile here
} p;

shared T stage[gl_WorkGroupSize.x];
shared T warp_totals[gl_WorkGroupSize.x / XW_WARP];
shared uint s_word;
shared T s_value;

#include "reduce_op.glsl"
#include "scan_common.glsl"

// The canonical total of tile `t` of this launch (every invocation gets it).
T tile_total(uint t, uint local) {
    uint base = (t * gl_WorkGroupSize.x + local) * ITEMS;
    T acc = xw_identity();
    for (uint j = 0u; j < ITEMS; ++j) {
        if (base + j < p.n) acc = xw_op(acc, src[base + j]);
    }
    T prefix;
    T total;
    block_prefix(acc, local, prefix, total);
    return total;
}

// The exclusive prefix of global tile k > 0 (every invocation gets it).
T look_back(uint k, uint local) {
    int j = int(k) - 1;
    while (j >= 0) {
        if (local == 0u) {
            uint f = 0u;
            for (uint poll = 0u; poll <= p.spin; ++poll) {
                f = atomicOr(flags[j], 0u);
                if (f != 0u) break;
            }
            s_word = f;
        }
        barrier();
        uint f = s_word;
        barrier();
        if (f == FLAG_INCLUSIVE) break;
        if (f == 0u) {
            // Tiles of earlier launches have all finished, so j belongs to this launch.
            T a = tile_total(uint(j) - p.tile0, local);
            if (local == 0u) {
                aggregates[j] = a;
                memoryBarrierBuffer();
                atomicMax(flags[j], FLAG_AGGREGATE);
            }
        }
        j -= 1;
    }
    if (local == 0u) {
        memoryBarrierBuffer();
        T e = j >= 0 ? inclusives[j] : xw_identity();
        for (uint i = uint(j + 1); i < k; ++i) e = xw_op(e, aggregates[i]);
        s_value = e;
    }
    barrier();
    T e = s_value;
    barrier();
    return e;
}

void main() {
    uint group = xw_group();
    if (group >= p.tiles) return;
    uint local = xw_local();
    // Tiles are numbered in the order workgroups start, so a tile's predecessors have started.
    if (local == 0u) s_word = atomicAdd(counters[p.chunk], 1u);
    barrier();
    uint t = s_word;
    barrier();
    uint k = p.tile0 + t;

    uint base = (t * gl_WorkGroupSize.x + local) * ITEMS;
    T s[ITEMS];
    T acc = xw_identity();
    for (uint j = 0u; j < ITEMS; ++j) {
        T x = base + j < p.n ? src[base + j] : xw_identity();
        acc = xw_op(acc, x);
        s[j] = acc;
    }
    T prefix;
    T total;
    block_prefix(acc, local, prefix, total);

    T e = xw_identity();
    if (k > 0u) {
        if (local == 0u) {
            aggregates[k] = total;
            memoryBarrierBuffer();
            atomicMax(flags[k], FLAG_AGGREGATE);
        }
        e = look_back(k, local);
    }
    if (local == 0u) {
        inclusives[k] = xw_op(e, total);
        memoryBarrierBuffer();
        atomicMax(flags[k], FLAG_INCLUSIVE);
    }

    T pre = xw_op(e, prefix);
    for (uint j = 0u; j < ITEMS; ++j) {
        T y = EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op(pre, s[j - 1u])) : xw_op(pre, s[j]);
        if (base + j < p.n) dst[base + j] = y;
    }
}
