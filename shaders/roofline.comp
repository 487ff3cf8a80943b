#version 450
// The memory roofline: a copy and a read-only pass that move data as fast as the device's
// memory allows, the yardsticks of `xwarp bench`; the twin of cuda/roofline.cu.
//
// Data are 32-bit words, whatever the element type. Workgroup g owns the tile of VECS * 256
// 16-byte vectors (4096 words, 16 KiB) that starts at vector g * VECS * 256; thread t moves
// vectors g * VECS * 256 + k * 256 + t, k = 0 .. VECS-1, all loads issued before any store.
// Only the last workgroup checks bounds: it skips vectors past the end, and its threads
// 0 .. n%4-1 move the words after the last whole vector one each.
//
// MODE 0 (copy): dst = src. MODE 1 (read): each workgroup XORs all the words of its tile (words
// past the end count as zero) and writes the one word folds[fold0 + g]. MODE 2 (digest): each
// word w at index i of the whole input (word0 + its index in this launch) adds
// xw_digest_hash(i, w) (below) to two 32-bit sums, which each workgroup adds to dst[0] and
// dst[1] with one atomic each (the sums wrap, so the order does not matter).
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0u; // 0 copy, 1 read

const uint MODE_COPY = 0u;
const uint MODE_READ = 1u;
const uint MODE_DIGEST = 2u;
const uint VECS = 4u; // 16-byte vectors per thread

// Each binding is declared twice: as 16-byte vectors for the bulk, as words for the tail.
// No word is accessed through both declarations, so `restrict` holds. Binding offsets are
// multiples of the 16 KiB tile, so the vectors are aligned.
layout(std430, binding = 0) readonly restrict buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 0) readonly restrict buffer Src1 { uint src1[]; };
layout(std430, binding = 1) writeonly restrict buffer Dst4 { uvec4 dst4[]; };
layout(std430, binding = 1) writeonly restrict buffer Dst1 { uint dst1[]; };
layout(std430, binding = 1) restrict buffer DstA { uint dsta[]; };
layout(push_constant) uniform Params {
    uint n;      // words in this launch
    uint fold0;  // read: index in dst1 of this launch's first fold
    uint word0;  // digest: index of this launch's first word in the whole input
    uint pad1;
} p;

shared uint partial[gl_WorkGroupSize.x];
shared uint partial2[gl_WorkGroupSize.x];

// MurmurHash3's finaliser: a bijection of 32 bits.
uint xw_fmix32(uint h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

// The two hashes of word w at index i: for each i a bijection of w, so a changed word always
// changes both sums.
uvec2 xw_digest_hash(uint i, uint w) {
    return uvec2(xw_fmix32(w ^ xw_fmix32(i)), xw_fmix32(w ^ xw_fmix32(i ^ 0x5bd1e995u)));
}

void main() {
    const uint B = gl_WorkGroupSize.x;
    uint g = xw_group();
    uint t = gl_LocalInvocationID.x;
    uint nv = p.n / 4u;
    uint first = g * (VECS * B) + t;
    uvec4 v[VECS];
    if (g * (VECS * B) + VECS * B <= nv) {
        // A whole tile: four unconditional vector loads, then four vector stores.
        for (uint k = 0u; k < VECS; ++k) v[k] = src4[first + k * B];
        if (MODE == MODE_COPY) {
            for (uint k = 0u; k < VECS; ++k) dst4[first + k * B] = v[k];
        }
    } else {
        for (uint k = 0u; k < VECS; ++k) {
            uint i = first + k * B;
            v[k] = i < nv ? src4[i] : uvec4(0u);
        }
        if (MODE == MODE_COPY) {
            for (uint k = 0u; k < VECS; ++k) {
                uint i = first + k * B;
                if (i < nv) dst4[i] = v[k];
            }
        }
        if (t < p.n % 4u) {
            uint w = nv * 4u + t;
            uint x = src1[w];
            if (MODE == MODE_COPY) {
                dst1[w] = x;
            } else if (MODE == MODE_READ) {
                v[0].x ^= x;
            }
        }
    }
    if (MODE == MODE_DIGEST) {
        uvec2 h = uvec2(0u);
        for (uint k = 0u; k < VECS; ++k) {
            uint i = first + k * B;
            if (i < nv) {
                uint w = p.word0 + 4u * i;
                h += xw_digest_hash(w, v[k].x) + xw_digest_hash(w + 1u, v[k].y)
                   + xw_digest_hash(w + 2u, v[k].z) + xw_digest_hash(w + 3u, v[k].w);
            }
        }
        if (g * (VECS * B) + VECS * B > nv && t < p.n % 4u) {
            uint w = nv * 4u + t;
            h += xw_digest_hash(p.word0 + w, src1[w]);
        }
        uint a = subgroupAdd(h.x);
        uint b = subgroupAdd(h.y);
        if (subgroupElect()) {
            partial[xw_subgroup_id()] = a;
            partial2[xw_subgroup_id()] = b;
        }
        barrier();
        if (t == 0u) {
            uint sa = 0u;
            uint sb = 0u;
            for (uint s = 0u; s < xw_num_subgroups(); ++s) {
                sa += partial[s];
                sb += partial2[s];
            }
            atomicAdd(dsta[0], sa);
            atomicAdd(dsta[1], sb);
        }
    }
    if (MODE == MODE_READ) {
        uvec4 a = (v[0] ^ v[1]) ^ (v[2] ^ v[3]);
        uint x = subgroupXor((a.x ^ a.y) ^ (a.z ^ a.w));
        if (subgroupElect()) partial[xw_subgroup_id()] = x;
        barrier();
        if (t == 0u) {
            uint f = 0u;
            for (uint s = 0u; s < xw_num_subgroups(); ++s) f ^= partial[s];
            dst1[p.fold0 + g] = f;
        }
    }
}
