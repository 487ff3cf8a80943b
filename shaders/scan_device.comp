#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// Device scan, single pass: each workgroup scans a tile of BLOCK * ITEMS elements and finds
// the tile's exclusive prefix E by decoupled look-back; the twin of cuda/scan_device.cu,
// modelled by src/cpu/scan.rs.
//
// Data movement: 32-bit types load the tile coalesced (element i * BLOCK + local in round i)
// into shared memory and transpose it there, so each invocation gets its ITEMS consecutive
// elements; outputs go back the same way. The shared index is padded by one word per 32, so
// neither direction has bank conflicts. 64-bit types (whose tile would not fit in the 32 KiB
// of shared memory some devices offer) load their consecutive elements directly.
//
// Canonical floats: E(k) is always the left fold A(0) + A(1) + ... + A(k-1) of the tile totals.
// The look-back finds the nearest published inclusive prefix P(j) (itself that fold up to j)
// and folds the aggregates A(j+1) .. A(k-1) onto it in order, one invocation doing the
// arithmetic, so the bits do not depend on which j it found, that is on timing.
//
// The look-back reads a window of LB = 32 predecessors at once (one invocation each), polling
// until every tile above the window's nearest inclusive prefix has published at least its
// aggregate; with no inclusive prefix in the window, the whole window must be published and
// the look-back moves on to the 32 tiles below.
//
// No deadlock on any conformant device: Vulkan promises no forward progress between
// workgroups, so after `spin` polls of a window with unpublished tiles, the workgroup reduces
// those tiles itself (in the canonical order: the very bits their owners will publish) and
// publishes their aggregates. Flags only grow (atomicMax), so two publishers of the same
// aggregate cannot set a flag back.
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;  // 0 sum, 2 min, 3 max (reduce_op.glsl codes)
layout(constant_id = 2) const uint EXCLUSIVE = 0u;
layout(constant_id = 3) const uint ITEMS = 16u;

const uint FLAG_AGGREGATE = 1u;
const uint FLAG_INCLUSIVE = 2u;
const uint LB = 32u; // predecessors one look-back step reads

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) coherent buffer Counters { uint counters[]; };
layout(std430, binding = 3) coherent buffer Flags { uint flags[]; };
layout(std430, binding = 4) coherent buffer Aggregates { T aggregates[]; };
layout(std430, binding = 5) coherent buffer Inclusives { T inclusives[]; };
layout(push_constant) uniform Params {
    uint n;       // elements in this launch (a chunk of whole tiles)
    uint tiles;   // tiles in this launch; clearing: all tiles of the scan
    uint tile0;   // global index of the launch's first tile
    uint chunk;   // this launch's tile counter; clearing: the number of counters
    uint spin;    // polls of a window with unpublished tiles before reducing them here
    uint clear;   // nonzero: only zero flags[0 .. tiles) and counters[0 .. chunk)
} p;

shared T stage[gl_WorkGroupSize.x];
shared T warp_totals[gl_WorkGroupSize.x / XW_WARP];
shared uint s_word;
shared uint s_incl;  // look-back window: bit i set where tile hi - i is inclusive
shared uint s_pub;   // look-back window: bit i set where tile hi - i has published
shared T s_value;
shared T lb_values[LB];

#if !defined(XW_T_64)
#define XW_TRANSPOSE 1
shared T tile_stage[gl_WorkGroupSize.x * ITEMS + gl_WorkGroupSize.x * ITEMS / 32u];
#endif

#include "reduce_op.glsl"
#include "scan_common.glsl"

// Index in tile_stage of tile element i: one pad word per 32.
uint xw_pad(uint i) {
    return i + (i >> 5u);
}

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

// Tiles above the window's nearest inclusive prefix (all `count` tiles if it has none).
uint needed(uint incl, uint count) {
    uint m = incl != 0u ? uint(findLSB(incl)) : count;
    return m >= 32u ? 0xffffffffu : (1u << m) - 1u;
}

// Polls the flags of tiles hi, hi - 1, ..., hi - count + 1 into s_incl and s_pub until every
// needed tile has published or `spin` polls have passed. Call in uniform control flow.
void poll_window(uint hi, uint count, uint local) {
    if (gl_SubgroupSize >= LB) {
        // One subgroup polls the whole window.
        if (gl_SubgroupID == 0u) {
            uint lane = gl_SubgroupInvocationID;
            bool mine = lane < count;
            uint incl = 0u;
            uint pub = 0u;
            for (uint poll = 0u;; ++poll) {
                uint f = mine ? atomicOr(flags[hi - lane], 0u) : 0u;
                incl = subgroupBallot(f == FLAG_INCLUSIVE).x;
                pub = subgroupBallot(f != 0u).x;
                uint need = needed(incl, count);
                if ((pub & need) == need || poll >= p.spin) break;
            }
            memoryBarrierBuffer();
            if (lane == 0u) {
                s_incl = incl;
                s_pub = pub;
            }
        }
        barrier();
    } else {
        // Narrower subgroups: the window's invocations span several subgroups and meet in
        // shared memory.
        for (uint poll = 0u;; ++poll) {
            if (local == 0u) {
                s_incl = 0u;
                s_pub = 0u;
            }
            barrier();
            if (local < count) {
                uint f = atomicOr(flags[hi - local], 0u);
                if (f == FLAG_INCLUSIVE) atomicOr(s_incl, 1u << local);
                if (f != 0u) atomicOr(s_pub, 1u << local);
            }
            memoryBarrierBuffer();
            barrier();
            uint incl = s_incl;
            uint pub = s_pub;
            barrier();
            uint need = needed(incl, count);
            if ((pub & need) == need || poll >= p.spin) break;
        }
    }
}

// The exclusive prefix of global tile k > 0 (every invocation gets it). Uniform control flow.
T look_back(uint k, uint local) {
    // Find the nearest inclusive prefix j (-1: none), making sure every tile after it has
    // published its aggregate.
    int hi = int(k) - 1;
    int j = -1;
    while (hi >= 0) {
        uint count = uint(min(hi + 1, int(LB)));
        poll_window(uint(hi), count, local);
        uint incl = s_incl;
        uint pub = s_pub;
        barrier();
        uint missing = needed(incl, count) & ~pub;
        while (missing != 0u) {
            // Tiles of earlier launches have all finished, so this one belongs to this launch.
            uint tile = uint(hi) - uint(findLSB(missing));
            missing &= missing - 1u;
            T a = tile_total(tile - p.tile0, local);
            if (local == 0u) {
                aggregates[tile] = a;
                memoryBarrierBuffer();
                atomicMax(flags[tile], FLAG_AGGREGATE);
            }
        }
        if (incl != 0u) {
            j = hi - findLSB(incl);
            break;
        }
        hi -= int(count);
    }
    // Fold the aggregates after j onto P(j) in order, LB at a time.
    memoryBarrierBuffer();
    T e = xw_identity();
    if (local == 0u && j >= 0) e = inclusives[j];
    for (uint first = uint(j + 1); first < k; first += LB) {
        uint c = min(k - first, LB);
        if (local < c) lb_values[local] = aggregates[first + local];
        barrier();
        if (local == 0u) {
            // A fixed trip count lets the shared-memory reads go ahead of the dependent ops.
            for (uint i = 0u; i < LB; ++i) {
                if (i < c) e = xw_op(e, lb_values[i]);
            }
        }
        barrier();
    }
    if (local == 0u) s_value = e;
    barrier();
    return s_value;
}

void main() {
    uint local = xw_local();
    if (p.clear != 0u) {
        uint i = xw_group() * gl_WorkGroupSize.x + local;
        if (i < p.tiles) flags[i] = 0u;
        if (i < p.chunk) counters[i] = 0u;
        return;
    }
    uint group = xw_group();
    if (group >= p.tiles) return;
    // Tiles are numbered in the order workgroups start, so a tile's predecessors have started.
    if (local == 0u) s_word = atomicAdd(counters[p.chunk], 1u);
    barrier();
    uint t = s_word;
    uint k = p.tile0 + t;
    uint tile_base = t * gl_WorkGroupSize.x * ITEMS;
    uint base = tile_base + local * ITEMS;

    T s[ITEMS];
#if defined(XW_TRANSPOSE)
    for (uint i = 0u; i < ITEMS; ++i) {
        uint idx = i * gl_WorkGroupSize.x + local;
        tile_stage[xw_pad(idx)] = tile_base + idx < p.n ? src[tile_base + idx] : xw_identity();
    }
    barrier();
    for (uint j = 0u; j < ITEMS; ++j) s[j] = tile_stage[xw_pad(local * ITEMS + j)];
#else
    for (uint j = 0u; j < ITEMS; ++j) s[j] = base + j < p.n ? src[base + j] : xw_identity();
#endif
    T acc = xw_identity();
    for (uint j = 0u; j < ITEMS; ++j) {
        acc = xw_op(acc, s[j]);
        s[j] = acc;
    }
    // block_prefix's barriers also order every read of tile_stage before its reuse below.
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
#if defined(XW_TRANSPOSE)
    for (uint j = 0u; j < ITEMS; ++j) {
        T y = EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op(pre, s[j - 1u])) : xw_op(pre, s[j]);
        tile_stage[xw_pad(local * ITEMS + j)] = y;
    }
    barrier();
    for (uint i = 0u; i < ITEMS; ++i) {
        uint idx = i * gl_WorkGroupSize.x + local;
        if (tile_base + idx < p.n) dst[tile_base + idx] = tile_stage[xw_pad(idx)];
    }
#else
    for (uint j = 0u; j < ITEMS; ++j) {
        T y = EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op(pre, s[j - 1u])) : xw_op(pre, s[j]);
        if (base + j < p.n) dst[base + j] = y;
    }
#endif
}
