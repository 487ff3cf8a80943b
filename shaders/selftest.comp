#version 450
// The self-test a Vulkan device runs when it opens (src/vulkan/selftest.rs). Every invocation
// records what the driver reports about its subgroup and what the subgroup operations the
// kernels rely on return for it; the host checks the records against the driver's claims.
// Invocation 0 also computes on subnormals of T, read from the input so that nothing is folded
// at compile time, through the kernels' float operations (float_ops.glsl): with SUBNORMALS 0 to
// learn whether the driver keeps them, with the value the device's kernels will run with to
// check that they compute what IEEE 754 does.
//
// Indices into the outputs come from gl_LocalInvocationIndex and the workgroup, never from the
// subgroup facts under test, so a driver that reports nonsense cannot send a write astray.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#include "common.glsl"
#include "float_ops.glsl"

layout(local_size_x_id = 0) in;

// Words per invocation in `facts` (the layout src/vulkan/selftest.rs reads).
const uint FACTS = 12u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Facts { uint facts[]; };
layout(std430, binding = 2) writeonly buffer Results { T results[]; };

void main() {
    uint me = gl_LocalInvocationIndex;
    uint lane = gl_SubgroupInvocationID;
    uint size = max(gl_SubgroupSize, 1u);
    uint at = me * FACTS;
    uvec4 all_lanes = subgroupBallot(true);
    facts[at + 0u] = gl_SubgroupSize;
    facts[at + 1u] = lane;
    facts[at + 2u] = gl_SubgroupID;
    facts[at + 3u] = gl_NumSubgroups;
    facts[at + 4u] = subgroupBallotBitCount(all_lanes);
    facts[at + 5u] = subgroupBallotBitCount(subgroupBallot((lane & 1u) == 1u));
    facts[at + 6u] = subgroupShuffle(me, (lane + 1u) % size);
    facts[at + 7u] = subgroupShuffleXor(me, 1u);
    facts[at + 8u] = subgroupShuffleUp(me, 1u);
    facts[at + 9u] = subgroupShuffleDown(me, 1u);
    facts[at + 10u] = subgroupBallotBitCount(subgroupBallot(subgroupElect()));
    facts[at + 11u] = all_lanes.x;

    if (me == 0u) {
        // src: the smallest subnormal, the smallest normal, a normal whose square is
        // subnormal, the largest subnormal, 1, 0.
        T tiny = src[0];
        T normal = src[1];
        T small = src[2];
        T largest = src[3];
        T one = src[4];
        T zero = src[5];
        results[0] = xw_add(tiny, tiny);
        results[1] = xw_add(normal, xw_negate(tiny));
        results[2] = xw_mul(small, small);
        results[3] = xw_mul(tiny, one);
        results[4] = xw_less(zero, tiny) ? one : zero;
        results[5] = xw_add(largest, tiny);
        results[6] = largest;
        results[7] = xw_max(tiny, largest);
        results[8] = xw_min(largest, tiny);
    }
}
