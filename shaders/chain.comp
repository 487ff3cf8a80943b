#version 450
// Subgroup-operation throughput: each invocation runs a chain of `iters` dependent subgroup
// operations on the device's own subgroup, in registers; the twin of cuda/chain.cu.
//
// Thread t (lane t % gl_SubgroupSize, the pipeline asks for full subgroups) starts from
// v = (t * 0x9e3779b9) ^ seed, keeps c = that first value, and repeats
//   broadcast: v = subgroupShuffle(v, 1) + c
//   up:        v = (lane 0 ? v : subgroupShuffleUp(v, 1)) + c     (CUDA's rule: no source, own)
//   down:      v = (last lane ? v : subgroupShuffleDown(v, 1)) + c
//   xor:       v = subgroupShuffleXor(v, 1) + c
//   ballot:    v = subgroupBallot((v & 1) != 0).x + c
// then writes v if t < n. The per-lane addend keeps the chain from being folded (a shuffle of
// a subgroup-uniform value could be replaced by the value). Every invocation of the grid runs
// the chain, so subgroups are always whole; only the stores are bounded.
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u; // 0 broadcast, 1 up, 2 down, 3 xor, 4 ballot

const uint OP_BROADCAST = 0u;
const uint OP_UP = 1u;
const uint OP_DOWN = 2u;
const uint OP_XOR = 3u;
const uint OP_BALLOT = 4u;

layout(std430, binding = 0) writeonly restrict buffer Dst { uint dst[]; };
layout(push_constant) uniform Params {
    uint n;      // threads that store, in this launch
    uint iters;  // chain length
    uint seed;
    uint first;  // index of this launch's first thread
} p;

// One link of the chain; `keep` marks the lane that keeps its own value (up, down).
uint link(uint v, uint c, bool keep) {
    uint r;
    if (OP == OP_BROADCAST) {
        r = subgroupShuffle(v, 1u);
    } else if (OP == OP_UP) {
        r = subgroupShuffleUp(v, 1u);
        r = keep ? v : r;
    } else if (OP == OP_DOWN) {
        r = subgroupShuffleDown(v, 1u);
        r = keep ? v : r;
    } else if (OP == OP_XOR) {
        r = subgroupShuffleXor(v, 1u);
    } else {
        r = subgroupBallot((v & 1u) != 0u).x;
    }
    return r + c;
}

void main() {
    uint local = xw_local();
    uint t = xw_group() * gl_WorkGroupSize.x + local;
    uint v = ((p.first + t) * 0x9e3779b9u) ^ p.seed;
    uint c = v;
    uint lane = gl_SubgroupInvocationID;
    bool keep = OP == OP_UP ? lane == 0u : lane == gl_SubgroupSize - 1u;
    // Eight links per trip, then the rest one by one.
    for (uint j = p.iters >> 3u; j != 0u; --j) {
        v = link(v, c, keep);
        v = link(v, c, keep);
        v = link(v, c, keep);
        v = link(v, c, keep);
        v = link(v, c, keep);
        v = link(v, c, keep);
        v = link(v, c, keep);
        v = link(v, c, keep);
    }
    for (uint j = p.iters & 7u; j != 0u; --j) v = link(v, c, keep);
    if (t < p.n) dst[t] = v;
}
