#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// Stream compaction by warp-aggregated atomics, subgroup-size agnostic; the twin of
// cuda/compact.cu. OP selects one step of the plan in src/compact.rs:
//   RESET       one thread: the u64 total and the chunk counter become 0.
//   UNORDERED   per 32-lane logical warp: a ballot of the predicate, ONE atomicAdd by the leader
//               for the warp's passing lanes, the base broadcast to the warp, and each passing
//               lane writes at total + base + popc(ballot & lanes below it).
//   TILE_COUNT  stable, pass 1: each workgroup (tile) counts its passing elements by ballots.
//   TILE_SCAN   stable, pass 2, one workgroup: exclusive scan of the tile counts in place; the
//               chunk's count goes to the chunk counter.
//   SCATTER     stable, pass 3: ballots again; each passing element writes at total + its
//               tile's offset + the passing lanes of lower warps of the tile + its warp rank.
//   ACCUMULATE  one thread: total += chunk counter (a u64 as two words), counter = 0.
// Elements past `n` take part as lanes that do not pass and are never read.
//
// The output binding is a window of the output starting at element `base` (two words); a chunk
// writes at total - base + ..., and only when total lies in base .. base + span (span 0: any).
// The host launches one UNORDERED/SCATTER per window the chunk's output may start in; every
// workgroup of the others leaves at once.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

// Declared ahead of the includes: their shared arrays are sized by gl_WorkGroupSize.
layout(local_size_x_id = 0) in;
#include "vote_predicate.glsl"
#include "vote_warp.glsl"

layout(constant_id = 1) const uint OP = 0u;

const uint OP_RESET = 0u;
const uint OP_UNORDERED = 1u;
const uint OP_TILE_COUNT = 2u;
const uint OP_TILE_SCAN = 3u;
const uint OP_SCATTER = 4u;
const uint OP_ACCUMULATE = 5u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) buffer Total { uint total[]; };  // the u64 count, low word first
layout(std430, binding = 3) buffer Counter { uint counter[]; }; // [0]: this chunk's count
layout(std430, binding = 4) buffer Tiles { uint tiles[]; };  // tile counts, then offsets
layout(push_constant) uniform Params {
    uint n;        // elements in this chunk
    uint pred;     // predicate code (vote_predicate.glsl)
    uint a_lo;     // first operand, low and high word
    uint a_hi;
    uint b_lo;     // second operand (in_range's hi)
    uint b_hi;
    uint base_lo;  // output element the output binding starts at, low and high word
    uint base_hi;
    uint span;     // the window this launch serves: total - base < span (0: any)
    uint tiles;    // TILE_SCAN: tiles in this chunk
    uint pad0;
    uint pad1;
} p;

const uint WARPS = gl_WorkGroupSize.x / XW_WARP;
shared uint warp_share[WARPS];
shared uint scan[gl_WorkGroupSize.x];

// Where the chunk's output starts in the output binding, if it starts in this launch's window.
// Every invocation reads the same total, so leaving on `false` is uniform.
bool window_offset(out uint offset) {
    uint borrow;
    offset = usubBorrow(total[0], p.base_lo, borrow);
    uint high = total[1] - p.base_hi - borrow;
    return high == 0u && (p.span == 0u || offset < p.span);
}

void one_thread() {
    if (xw_group() != 0u || gl_LocalInvocationIndex != 0u) return;
    if (OP == OP_RESET) {
        total[0] = 0u;
        total[1] = 0u;
    } else {
        uint carry;
        total[0] = uaddCarry(total[0], counter[0], carry);
        total[1] += carry;
    }
    counter[0] = 0u;
}

void tile_scan() {
    uint local = gl_LocalInvocationIndex;
    uint size = gl_WorkGroupSize.x;
    uint running = 0u;
    for (uint base = 0u; base < p.tiles; base += size) {
        uint t = base + local;
        uint c = t < p.tiles ? tiles[t] : 0u;
        scan[local] = c;
        barrier();
        // Hillis-Steele inclusive scan of the workgroup's counts.
        for (uint d = 1u; d < size; d <<= 1u) {
            uint add = local >= d ? scan[local - d] : 0u;
            barrier();
            scan[local] += add;
            barrier();
        }
        if (t < p.tiles) tiles[t] = running + scan[local] - c;
        running += scan[size - 1u];
        // The next round overwrites `scan`.
        barrier();
    }
    if (local == 0u) counter[0] = running;
}

void main() {
    if (OP == OP_RESET || OP == OP_ACCUMULATE) {
        one_thread();
        return;
    }
    if (OP == OP_TILE_SCAN) {
        tile_scan();
        return;
    }
    uint first = xw_group() * gl_WorkGroupSize.x;
    // Whole workgroups past the end leave together, so the barriers below stay uniform.
    if (first >= p.n) return;
    uint out0 = 0u;
    if (OP != OP_TILE_COUNT && !window_offset(out0)) return;
    uint local = xw_local();
    uint i = first + local;
    uint lane = local % XW_WARP;
    uint warp = local / XW_WARP;
    bool live = i < p.n;
    T v = T(0);
    bool pass = false;
    if (live) {
        v = src[i];
        pass = xw_predicate(v, p.pred, xw_pred_operand(p.a_lo, p.a_hi),
                            xw_pred_operand(p.b_lo, p.b_hi));
    }
    uvec2 bits = xw_warp_ballot(pass, live);
    uint ballot = bits.x;
    uint rank = bitCount(ballot & ((1u << lane) - 1u));

    if (OP == OP_UNORDERED) {
        // The leader is the lowest active lane; a warp with no active lane has nothing to do.
        uint leader = bits.y != 0u ? uint(findLSB(bits.y)) : 0u;
        uint base = 0u;
        if (lane == leader && ballot != 0u) base = atomicAdd(counter[0], bitCount(ballot));
        if (gl_SubgroupSize >= XW_WARP) {
            uint warp_first = gl_SubgroupInvocationID & ~(XW_WARP - 1u);
            base = subgroupShuffle(base, warp_first + leader);
        } else {
            // The warp spans subgroups: the base meets its lanes in shared memory.
            if (lane == leader) warp_share[warp] = base;
            barrier();
            base = warp_share[warp];
        }
        if (pass) dst[out0 + base + rank] = v;
        return;
    }

    // Stable: the passing lanes of every warp of the tile, in shared memory.
    if (lane == 0u) warp_share[warp] = bitCount(ballot);
    barrier();
    if (OP == OP_TILE_COUNT) {
        if (local == 0u) {
            uint sum = 0u;
            for (uint k = 0u; k < WARPS; ++k) sum += warp_share[k];
            tiles[xw_group()] = sum;
        }
        return;
    }
    uint offset = tiles[xw_group()];
    for (uint k = 0u; k < warp; ++k) offset += warp_share[k];
    if (pass) dst[out0 + offset + rank] = v;
}
