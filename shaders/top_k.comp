#version 450
// Top-k by radix selection; the twin of cuda/top_k.cu, modelled by src/cpu/top_k.rs. Keys are
// handled as the radix sort's mapped keys (sort_common.glsl: unsigned bit patterns whose order
// is the wanted one; descending inverts them), so the k wanted keys are always the k smallest
// mapped keys, ties taken by the lower input index. OP selects one step of the plan in
// src/top_k.rs:
//   CLEAR    one workgroup: the state starts: threshold 0, k still to take, none below, the
//            histogram zero;
//   HIST     radix pass d, most significant digit first: every key whose mapped bits above the
//            digit equal the threshold found so far (mask: those bits) counts its digit in a
//            histogram in shared memory, warp-aggregated (the leader's digit counted once for
//            every lane a ballot finds with it, as in histogram.comp); the workgroup adds its
//            nonzero bins to state's histogram;
//   SELECT   one workgroup: the digit where the remaining count is reached; the keys of the
//            smaller digits are taken (`less` grows by them), the threshold gets the digit, and
//            the histogram is zeroed for the next pass. After the last pass the threshold T is
//            the k-th smallest mapped key, `less` counts the keys below it and `rest` the keys
//            equal to it still to take;
//   COUNT    per tile, its keys below T and equal to T: one 64-bit word per tile, equal count in
//            the high half (the host scans these words with xwarp::scan: both counts at once,
//            neither reaching 2^32);
//   SCATTER  per tile, the keys below T at (below before the tile) + rank, the keys equal to T
//            at less + (equal before the tile) + rank while that is below k, each with its value
//            (pairs) or input index: the k candidates, keys below T in input order, then the
//            first `rest` keys equal to T in input order.
// The host then sorts the k candidates by key with the radix sort (stable: equal keys keep the
// candidates' order, which is input order).
//
// Tiles for COUNT and SCATTER are laid out as in compact.glsl and partition.comp: subgroup s
// owns the s-th run of gl_SubgroupSize * ITEMS consecutive keys, read in ITEMS coalesced steps,
// ranked by one ballot per step and class.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#include "sort_common.glsl"

layout(local_size_x_id = 0) in;
#include "tile_ballot.glsl"

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint ITEMS = 16u;
layout(constant_id = 3) const uint VALUE_WORDS = 0u;  // 32-bit words per value: 0 (keys), 1 or 2

const uint OP_HIST = 0u;
const uint OP_SELECT = 1u;
const uint OP_COUNT = 2u;
const uint OP_SCATTER = 3u;
const uint OP_CLEAR = 4u;

// State words: the threshold's mapped bits (low, high), the count still to take, the keys taken
// below the threshold, then the histogram of the current pass.
const uint S_THRESHOLD = 0u;
const uint S_REST = 2u;
const uint S_LESS = 3u;
const uint S_HIST = 8u;

layout(std430, binding = 0) readonly buffer Keys { KEY keys[]; };
layout(std430, binding = 1) readonly buffer Values { uint values[]; };
layout(std430, binding = 2) writeonly buffer CandKeys { KEY cand_keys[]; };
layout(std430, binding = 3) writeonly buffer CandValues { uint cand_values[]; };
layout(std430, binding = 4) coherent buffer State { uint state[]; };
layout(std430, binding = 5) buffer Counts { uint counts[]; };        // two words per tile
layout(std430, binding = 6) readonly buffer Before { uint before[]; };  // their exclusive scan
layout(push_constant) uniform Params {
    uint n;           // keys
    uint k;
    uint tiles;       // COUNT, SCATTER: tiles; HIST: keys per workgroup
    uint shift;       // HIST, SELECT: the digit's lowest bit
    uint mask_lo;     // HIST: the mapped bits above the digit (low, high word)
    uint mask_hi;
    uint key_kind;    // KIND_*
    uint descending;  // nonzero: the k largest
    uint indices;     // nonzero: the candidates' values are input indices
    uint pad0;
    uint pad1;
    uint pad2;
} p;

const uint TILE = gl_WorkGroupSize.x * ITEMS;
const uint BATCH = 4u;
const uint NONE = 0xffffffffu;

shared uint sh_hist[RADIX];
shared uint sg_counts[2u * gl_WorkGroupSize.x];

#if defined(XW_TYPE_B64)
uvec2 key_and(KEY a, uvec2 m) { return a & m; }
KEY threshold_key() { return uvec2(state[S_THRESHOLD], state[S_THRESHOLD + 1u]); }
bool key_less(KEY a, KEY b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }
#else
uint key_and(KEY a, uvec2 m) { return a & m.x; }
KEY threshold_key() { return state[S_THRESHOLD]; }
bool key_less(KEY a, KEY b) { return a < b; }
#endif

KEY mapped(uint i) { return xw_sort_map(keys[i], p.key_kind, p.descending != 0u); }

// Counts one digit per invocation (NONE: nothing), warp-aggregated. Uniform control flow.
void count_digit(uint b) {
    bool valid = b != NONE;
    uvec4 counted = subgroupBallot(valid);
    if (counted == uvec4(0u)) return;
    uint leader = subgroupBallotFindLSB(counted);
    uint lb = subgroupShuffle(b, leader);
    uvec4 peers = subgroupBallot(valid && b == lb);
    if (gl_SubgroupInvocationID == leader) {
        atomicAdd(sh_hist[lb & (RADIX - 1u)], ballot_count(peers));
    } else if (valid && b != lb) {
        atomicAdd(sh_hist[b & (RADIX - 1u)], 1u);
    }
}

void hist_step() {
    uint local = gl_LocalInvocationIndex;
    uint block = gl_WorkGroupSize.x;
    for (uint i = local; i < RADIX; i += block) sh_hist[i] = 0u;
    barrier();
    KEY t = threshold_key();
    uvec2 mask = uvec2(p.mask_lo, p.mask_hi);
    uint start = xw_group() * p.tiles;
    uint stop = min(start + p.tiles, p.n);
    for (uint base = start; base < stop; base += BATCH * block) {
        uint b[BATCH];
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
            uint i = base + j * block + local;
            b[j] = NONE;
            if (i < stop) {
                KEY m = mapped(i);
                if (key_and(m, mask) == key_and(t, mask)) b[j] = xw_digit(m, p.shift, 0xffu);
            }
        }
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) count_digit(b[j]);
    }
    barrier();
    for (uint i = local; i < RADIX; i += block) {
        uint c = sh_hist[i];
        if (c != 0u) atomicAdd(state[S_HIST + i], c);
    }
}

void clear_step() {
    uint local = gl_LocalInvocationIndex;
    for (uint i = local; i < S_HIST + RADIX; i += gl_WorkGroupSize.x) {
        state[i] = i == S_REST ? p.k : 0u;
    }
}

void select_step() {
    if (gl_LocalInvocationIndex != 0u) return;
    uint rest = state[S_REST];
    uint below = 0u;
    uint digit = RADIX - 1u;
    for (uint d = 0u; d < RADIX; ++d) {
        uint c = state[S_HIST + d];
        if (below + c >= rest) {
            digit = d;
            break;
        }
        below += c;
    }
    for (uint d = 0u; d < RADIX; ++d) state[S_HIST + d] = 0u;
    if (p.shift >= 32u) {
        state[S_THRESHOLD + 1u] |= digit << (p.shift - 32u);
    } else {
        state[S_THRESHOLD] |= digit << p.shift;
    }
    state[S_REST] = rest - below;
    state[S_LESS] += below;
}

// Bits j of `lo` and `eq`: the key of step j of the caller's run is below T or equal to it;
// `c_lo` and `c_eq` get the subgroup's counts.
void classify(uint t, KEY thr, out uint lo, out uint eq, out uint c_lo, out uint c_eq) {
    uint first = t * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
    lo = 0u;
    eq = 0u;
    c_lo = 0u;
    c_eq = 0u;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        uint i = first + j * gl_SubgroupSize;
        bool below = false;
        bool equal = false;
        if (i < p.n) {
            KEY m = mapped(i);
            below = key_less(m, thr);
            equal = m == thr;
        }
        lo |= uint(below) << j;
        eq |= uint(equal) << j;
        c_lo += ballot_count(subgroupBallot(below));
        c_eq += ballot_count(subgroupBallot(equal));
    }
}

void main() {
    if (OP == OP_HIST) {
        hist_step();
        return;
    }
    if (OP == OP_SELECT) {
        select_step();
        return;
    }
    if (OP == OP_CLEAR) {
        clear_step();
        return;
    }
    uint t = xw_group();
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (t >= p.tiles) return;
    uint local = gl_LocalInvocationIndex;
    KEY thr = threshold_key();
    uint lo;
    uint eq;
    uint c_lo;
    uint c_eq;
    classify(t, thr, lo, eq, c_lo, c_eq);
    uint sg = xw_subgroup_id();
    if (subgroupElect()) {
        sg_counts[2u * sg] = c_lo;
        sg_counts[2u * sg + 1u] = c_eq;
    }
    barrier();
    uint lo_below = 0u;
    uint eq_below = 0u;
    uint lo_tile = 0u;
    uint eq_tile = 0u;
    for (uint s = 0u; s < xw_num_subgroups(); ++s) {
        uint a = sg_counts[2u * s];
        uint b = sg_counts[2u * s + 1u];
        if (s < gl_SubgroupID) {
            lo_below += a;
            eq_below += b;
        }
        lo_tile += a;
        eq_tile += b;
    }
    if (OP == OP_COUNT) {
        if (local == 0u) {
            counts[2u * t] = lo_tile;
            counts[2u * t + 1u] = eq_tile;
        }
        return;
    }
    // SCATTER: ranks in input order within each class.
    uint less = state[S_LESS];
    uint at_lo = before[2u * t] + lo_below;
    uint at_eq = less + before[2u * t + 1u] + eq_below;
    uint first = t * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        bool below = ((lo >> j) & 1u) != 0u;
        bool equal = ((eq >> j) & 1u) != 0u;
        uvec4 bb = subgroupBallot(below);
        uvec4 be = subgroupBallot(equal);
        uint i = first + j * gl_SubgroupSize;
        uint pos = NONE;
        if (below) pos = at_lo + ballot_rank(bb);
        if (equal) pos = at_eq + ballot_rank(be);
        if (pos < p.k) {
            cand_keys[pos] = keys[i];
            if (p.indices != 0u) {
                cand_values[VALUE_WORDS * pos] = i;
                if (VALUE_WORDS == 2u) cand_values[2u * pos + 1u] = 0u;
            } else if (VALUE_WORDS != 0u) {
                for (uint w = 0u; w < VALUE_WORDS; ++w) {
                    cand_values[VALUE_WORDS * pos + w] = values[VALUE_WORDS * i + w];
                }
            }
        }
        at_lo += ballot_count(bb);
        at_eq += ballot_count(be);
    }
}
