#version 450
// The shuffle family with CUDA semantics on any subgroup size; the twin of cuda/shfl.cu.
//
// Logical thread t handles elements t*SEGM .. t*SEGM+SEGM-1 and is lane t % 32 of a 32-lane
// logical warp. Elements past `n` take part as zeros (a warp is always whole) and are never
// written.
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;   // 0 broadcast, 1 up, 2 down, 3 wrap, 4 xor
layout(constant_id = 2) const uint SEGM = 1u; // values per lane (the register-array exchange)
layout(constant_id = 3) const uint ROWS = 4u; // layers of the workgroup's width per workgroup

const uint OP_BROADCAST = 0u;
const uint OP_UP = 1u;
const uint OP_DOWN = 2u;
const uint OP_WRAP = 3u;
const uint OP_XOR = 4u;

layout(std430, binding = 0) readonly buffer Src { WORD src[]; };
layout(std430, binding = 1) writeonly buffer Dst { WORD dst[]; };
layout(push_constant) uniform Params {
    uint n;      // elements in this launch
    int arg;     // srcLane, delta, offset or laneMask, by OP
    uint width;  // segment width: 2, 4, 8, 16 or 32
    uint pad;
} p;

shared WORD stage[gl_WorkGroupSize.x];

// The lane of the 32-lane warp that `lane` reads, after PTX's definition of shfl.sync: a source
// outside the lane's segment (up, down) or above it (xor) means the lane keeps its own value;
// broadcast and wrap take the source lane modulo the width.
uint cuda_source_lane(uint lane) {
    uint seg = lane & ~(p.width - 1u);
    uint last = seg + p.width - 1u;
    uint a = uint(p.arg);
    if (OP == OP_BROADCAST) return seg | (a & (p.width - 1u));
    if (OP == OP_WRAP) return seg | ((lane + a) & (p.width - 1u));
    if (OP == OP_UP) return lane >= seg + a ? lane - a : lane;
    if (OP == OP_DOWN) return lane + a <= last ? lane + a : lane;
    uint j = lane ^ a;
    return j <= last ? j : lane;
}

void main() {
    // A workgroup handles ROWS layers of its width in logical threads, every load issued before
    // the first shuffle; the layers are aligned like workgroups of their own.
    uint block = gl_WorkGroupSize.x;
    uint first = xw_group() * block * ROWS;
    uint lanes = (p.n + SEGM - 1u) / SEGM;
    // Whole workgroups past the end leave together; inside one every warp stays whole.
    if (first >= lanes) return;
    uint local = xw_local();
    uint lane = (first + local) % XW_WARP;
    uint from = cuda_source_lane(lane);
    // Every source lies in the reader's own subgroup when the lanes it can reach (the segment,
    // or for xor the lanes the mask can flip) fit in one subgroup. This depends only on
    // uniform values, so the barriers below are in uniform control flow.
    uint reach = (OP == OP_XOR ? uint(p.arg) : 0u) | (p.width - 1u);
    bool in_subgroup = reach < gl_SubgroupSize;
    WORD v[ROWS * SEGM];
    [[unroll]] for (uint j = 0u; j < ROWS * SEGM; ++j) {
        uint i = (first + (j / SEGM) * block + local) * SEGM + j % SEGM;
        v[j] = i < p.n ? src[i] : WORD_ZERO;
    }
    [[unroll]] for (uint j = 0u; j < ROWS * SEGM; ++j) {
        uint i = (first + (j / SEGM) * block + local) * SEGM + j % SEGM;
        WORD r;
        if (in_subgroup) {
            if (OP == OP_UP) {
                r = subgroupShuffleUp(v[j], uint(p.arg));
            } else if (OP == OP_DOWN) {
                r = subgroupShuffleDown(v[j], uint(p.arg));
            } else if (OP == OP_XOR) {
                r = subgroupShuffleXor(v[j], uint(p.arg));
            } else {
                r = subgroupShuffle(v[j], gl_SubgroupInvocationID + from - lane);
            }
            // Vulkan leaves a shuffle whose source is out of range undefined; CUDA returns the
            // caller's own value.
            if (from == lane) r = v[j];
        } else {
            // Segments wider than the subgroup: the warp exchanges through shared memory.
            stage[local] = v[j];
            barrier();
            r = stage[local + from - lane];
            barrier();
        }
        if (i < p.n) dst[i] = r;
    }
}
