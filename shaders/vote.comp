#version 450
// The warp vote family with CUDA semantics on any subgroup size; the twin of cuda/vote.cu.
//
// Logical thread t evaluates the predicate on element t and is lane t % 32 of a 32-lane logical
// warp. Lanes past `n` are inactive, as CUDA's tail lanes that have returned: they neither pass
// nor count for `all`, and are absent from the active mask. The warp's leader (its lowest active
// lane) writes the warp's record; every active lane writes its exclusive rank.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_vote : require
#include "common.glsl"

// Declared ahead of the includes: their shared arrays are sized by gl_WorkGroupSize.
layout(local_size_x_id = 0) in;
#include "vote_predicate.glsl"
#include "vote_warp.glsl"

layout(std430, binding = 0) readonly buffer Src { T src[]; };
// A warp's record is two 16-byte words, written by two vector stores: eight scalar stores from
// the leader cost the Vulkan kernel 27% more time on an H100 (NOTES.md, version 7). Any
// descriptor offset the device accepts is valid for this layout.
layout(std430, binding = 1) writeonly buffer Records { uvec4 records[]; };
layout(std430, binding = 2) writeonly buffer Ranks { uint ranks[]; };
layout(push_constant) uniform Params {
    uint n;      // elements in this launch
    uint pred;   // predicate code (vote_predicate.glsl)
    uint a_lo;   // first operand, low and high word
    uint a_hi;
    uint b_lo;   // second operand (in_range's hi)
    uint b_hi;
    uint pad0;
    uint pad1;
} p;

// Words per warp record: ballot, any, all, active mask, popc, ffs, leader, active lanes.
const uint RECORD = 8u;
layout(constant_id = 1) const uint ROWS = 4u; // layers of the workgroup's width per workgroup

void main() {
    // A workgroup handles ROWS layers of its width, every load issued before the first vote;
    // each layer's warps vote as they would in a workgroup of their own.
    uint block = gl_WorkGroupSize.x;
    uint first = xw_group() * block * ROWS;
    // Whole workgroups past the end leave together, so the barriers below stay uniform.
    if (first >= p.n) return;
    uint local = xw_local();
    uint lane = local % XW_WARP;
    T a = xw_pred_operand(p.a_lo, p.a_hi);
    T b = xw_pred_operand(p.b_lo, p.b_hi);
    uint code = xw_pred_code(p.pred, a, b);
    T v[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        uint i = first + r * block + local;
        v[r] = i < p.n ? src[i] : T(0);
    }
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        // A layer without elements ends the workgroup's work (uniform: the barriers stay so).
        if (first + r * block >= p.n) break;
        uint i = first + r * block + local;
        bool live = i < p.n;
        bool pass = live && xw_predicate(v[r], code, a, b);

        uint ballot, live_mask, any_pass, all_pass, popc, ffs, rank;
        bool elected;
        if (gl_SubgroupSize == XW_WARP) {
            // The subgroup is the warp: its ballot is one word, counted with scalar bit operations.
            // Every invocation runs, so the elected one is invocation 0: lane 0, the lowest active
            // lane of any warp holding an element. Inactive lanes do not count against `all`.
            ballot = subgroupBallot(pass).x;
            live_mask = subgroupBallot(live).x;
            popc = uint(bitCount(ballot));
            rank = uint(bitCount(ballot & gl_SubgroupLtMask.x));
            ffs = uint(findLSB(ballot) + 1);
            any_pass = ballot != 0u ? 1u : 0u;
            all_pass = ballot == live_mask ? 1u : 0u;
            elected = lane == 0u && live_mask != 0u;
        } else if (gl_SubgroupSize > XW_WARP) {
            // Whole warps in one subgroup: the subgroup operations on the warp's own 32 bits of the
            // ballot (the other words masked off).
            uvec4 b = subgroupBallot(pass);
            uvec4 a = subgroupBallot(live);
            uint word = gl_SubgroupInvocationID / XW_WARP;
            uvec4 mine = uvec4(equal(uvec4(0u, 1u, 2u, 3u), uvec4(word))) * 0xffffffffu;
            uvec4 warp_ballot = b & mine;
            ballot = b[word];
            live_mask = a[word];
            popc = subgroupBallotBitCount(warp_ballot);
            rank = subgroupBallotExclusiveBitCount(warp_ballot);
            ffs = popc == 0u ? 0u : subgroupBallotFindLSB(warp_ballot) - word * XW_WARP + 1u;
            any_pass = ballot != 0u ? 1u : 0u;
            all_pass = ballot == live_mask ? 1u : 0u;
            elected = live_mask != 0u && lane == uint(findLSB(live_mask));
        } else {
            // The warp spans several subgroups: their ballots meet in shared memory.
            uvec2 bits = xw_warp_ballot(pass, live);
            ballot = bits.x;
            live_mask = bits.y;
            popc = bitCount(ballot);
            rank = bitCount(ballot & ((1u << lane) - 1u));
            ffs = uint(findLSB(ballot) + 1);
            any_pass = ballot != 0u ? 1u : 0u;
            all_pass = ballot == live_mask ? 1u : 0u;
            elected = live_mask != 0u && lane == uint(findLSB(live_mask));
        }

        if (live) ranks[i] = rank;
        if (elected) {
            uint rec = i / XW_WARP * (RECORD / 4u);
            records[rec] = uvec4(ballot, any_pass, all_pass, live_mask);
            records[rec + 1u] = uvec4(popc, ffs, uint(findLSB(live_mask)), uint(bitCount(live_mask)));
        }
    }
}
