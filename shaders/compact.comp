#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// Stream compaction, one pass over the input, subgroup-size agnostic; the twin of
// cuda/compact.cu, modelled by src/cpu/compact.rs. OP selects one step of the plan in
// src/compact.rs:
//   RESET       the u64 total and the chunk's counters become 0, and so do the first `tiles`
//               tile states (every workgroup zeroes 256 of them).
//   UNORDERED   per tile, the hierarchical leader-elected, warp-aggregated enqueue: ONE
//               atomicAdd per tile on the chunk counter for the tile's passing count.
//   STABLE      per tile, the tile's offset by decoupled look-back over the tile states, then
//               an ordered scatter; the last tile leaves the chunk's count in the counter.
//   ACCUMULATE  total += chunk counter (a u64 as two words), the counters and the first `tiles`
//               tile states become 0 for the next chunk.
//
// A tile is gl_WorkGroupSize.x * ITEMS consecutive elements. Subgroup s of the workgroup owns
// the s-th run of gl_SubgroupSize * ITEMS of them and reads it in ITEMS coalesced steps (step j:
// lane l reads element j * gl_SubgroupSize + l of the run). Per step one ballot gives every
// passing lane its rank (the passing lanes below it plus those of the earlier steps); the
// subgroup's elected lane puts the subgroup's count in shared memory, and each invocation adds
// the counts of the subgroups below its own. Passing elements therefore land in input order
// within a tile: tile offset + subgroup offset + rank.
//
// Tile states (STABLE): one word per tile of the chunk, status in bits 31..30 (0 nothing yet,
// 1 aggregate, 2 inclusive prefix) and the value in bits 29..0 (a chunk has at most 2^29
// elements). Words only grow (atomicMax), so a state never goes back, and a value never
// travels apart from its status. Tiles are numbered in the order workgroups take a ticket,
// so a tile's predecessors have started. The look-back is done by subgroup 0: its lanes read a
// window of gl_SubgroupSize predecessor states at once (lane l: tile top - l), a ballot finds
// the nearest inclusive prefix, and when every lane up to it has published, a butterfly sum of
// those values ends the look-back; without an inclusive prefix the window moves down.
//
// No deadlock on any conformant device: Vulkan promises no forward progress between
// workgroups, so after `spin` polls that still find the nearest unpublished predecessor empty,
// the whole workgroup counts that tile from the input itself and publishes its aggregate (the
// very value the tile will publish).
//
// The output binding is a window of the output starting at element `base` (two words); a chunk
// writes at total - base + ..., and only when total lies in base .. base + span (span 0: any).
// The host launches one UNORDERED/STABLE per window the chunk's output may start in; every
// workgroup of the others leaves at once, before taking a ticket.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "vote_predicate.glsl"

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint ITEMS = 16u;

const uint OP_RESET = 0u;
const uint OP_UNORDERED = 1u;
const uint OP_STABLE = 2u;
const uint OP_ACCUMULATE = 3u;

const uint STATE_AGGREGATE = 1u << 30;
const uint STATE_INCLUSIVE = 2u << 30;
const uint STATE_VALUE = STATE_AGGREGATE - 1u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) buffer Total { uint total[]; };  // the u64 count, low word first
// [0]: this chunk's count; [1]: the chunk's tile tickets (STABLE).
layout(std430, binding = 3) coherent buffer Counter { uint counter[]; };
layout(std430, binding = 4) coherent buffer States { uint states[]; };  // tile states
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
    uint tiles;    // tiles in this chunk (RESET, ACCUMULATE: tile states to zero)
    uint spin;     // polls of an unpublished predecessor before counting its tile here
    uint pad0;
} p;

const uint TILE = gl_WorkGroupSize.x * ITEMS;

// One entry per subgroup (a subgroup has at least one invocation).
shared uint sg_counts[gl_WorkGroupSize.x];
shared uint s_word;
shared int s_stalled;

// Where the chunk's output starts in the output binding, if it starts in this launch's window.
// Every invocation reads the same total, so leaving on `false` is uniform.
bool window_offset(out uint offset) {
    uint borrow;
    offset = usubBorrow(total[0], p.base_lo, borrow);
    uint high = total[1] - p.base_hi - borrow;
    return high == 0u && (p.span == 0u || offset < p.span);
}

void reset_step() {
    uint i = xw_group() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    if (i < p.tiles) states[i] = 0u;
    if (i != 0u) return;
    if (OP == OP_RESET) {
        total[0] = 0u;
        total[1] = 0u;
    } else {
        uint carry;
        total[0] = uaddCarry(total[0], counter[0], carry);
        total[1] += carry;
    }
    counter[0] = 0u;
    counter[1] = 0u;
}

bool passes(uint i) {
    return i < p.n && xw_predicate(src[i], p.pred, xw_pred_operand(p.a_lo, p.a_hi),
                                   xw_pred_operand(p.b_lo, p.b_hi));
}

// The first element of the caller's subgroup's run in tile t.
uint run_first(uint t) {
    return t * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
}

// The passing elements of tile t of this chunk (every invocation gets the count). Call it from
// the whole workgroup in uniform control flow.
uint count_tile(uint t) {
    uint first = run_first(t);
    uint count = 0u;
    for (uint j = 0u; j < ITEMS; ++j) {
        count += subgroupBallotBitCount(subgroupBallot(passes(first + j * gl_SubgroupSize)));
    }
    barrier();  // sg_counts may still be read by the caller's previous round
    if (subgroupElect()) sg_counts[gl_SubgroupID] = count;
    barrier();
    uint sum = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) sum += sg_counts[s];
    return sum;
}

// The sum over the subgroup of a value, by a butterfly (any power-of-two subgroup size).
uint subgroup_sum(uint x) {
    for (uint d = 1u; d < gl_SubgroupSize; d <<= 1u) x += subgroupShuffleXor(x, d);
    return x;
}

// The exclusive prefix of tile k > 0 of this chunk (every invocation gets it). Call it from
// the whole workgroup in uniform control flow.
uint look_back(uint k) {
    // Subgroup 0's running state: the values folded so far and the nearest tile not folded.
    uint folded = 0u;
    int top = int(k) - 1;
    while (true) {
        if (gl_SubgroupID == 0u) {
            uint lane = gl_SubgroupInvocationID;
            int stalled = -1;
            while (true) {
                int t = top - int(lane);
                uint s;
                bool any_inclusive;
                uint limit;
                uvec4 empty;
                for (uint poll = 0u;; ++poll) {
                    // Tiles before the chunk count as an inclusive prefix of 0.
                    s = t >= 0 ? atomicOr(states[t], 0u) : STATE_INCLUSIVE;
                    uvec4 inclusive = subgroupBallot(s >= STATE_INCLUSIVE);
                    any_inclusive = inclusive != uvec4(0u);
                    limit = any_inclusive ? subgroupBallotFindLSB(inclusive) : gl_SubgroupSize - 1u;
                    empty = subgroupBallot(s == 0u && lane <= limit);
                    if (empty == uvec4(0u) || poll >= p.spin) break;
                }
                if (empty != uvec4(0u)) {
                    stalled = top - int(subgroupBallotFindLSB(empty));
                    break;
                }
                folded += subgroup_sum(lane <= limit ? s & STATE_VALUE : 0u);
                if (any_inclusive) break;
                top -= int(gl_SubgroupSize);
            }
            if (subgroupElect()) {
                s_stalled = stalled;
                s_word = folded;
            }
        }
        barrier();
        int stalled = s_stalled;
        uint prefix = s_word;
        barrier();
        if (stalled < 0) return prefix;
        // A predecessor that has published nothing after `spin` polls: count its tile here.
        uint c = count_tile(uint(stalled));
        if (gl_LocalInvocationIndex == 0u) {
            atomicMax(states[stalled], STATE_AGGREGATE | c);
            memoryBarrierBuffer();
        }
        barrier();
    }
    return 0u;
}

void main() {
    if (OP == OP_RESET || OP == OP_ACCUMULATE) {
        reset_step();
        return;
    }
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (xw_group() >= p.tiles) return;
    uint out0 = 0u;
    if (!window_offset(out0)) return;
    uint local = gl_LocalInvocationIndex;
    uint t = xw_group();
    if (OP == OP_STABLE) {
        // Tiles are numbered in the order workgroups start, so a tile's predecessors have.
        if (local == 0u) s_word = atomicAdd(counter[1], 1u);
        barrier();
        t = s_word;
        barrier();
    }

    // Load ITEMS coalesced steps, then ballot each: which pass, and the subgroup's count.
    uint first = run_first(t);
    T v[ITEMS];
    T a = xw_pred_operand(p.a_lo, p.a_hi);
    T b = xw_pred_operand(p.b_lo, p.b_hi);
    for (uint j = 0u; j < ITEMS; ++j) {
        uint i = first + j * gl_SubgroupSize;
        v[j] = i < p.n ? src[i] : T(0);
    }
    // Bit j of `kept`: the element of step j passes (the ranks are recomputed from it at the
    // scatter, which costs a ballot per step and saves a register per step).
    uint kept = 0u;
    uint count = 0u;
    for (uint j = 0u; j < ITEMS; ++j) {
        bool pass = first + j * gl_SubgroupSize < p.n && xw_predicate(v[j], p.pred, a, b);
        kept |= uint(pass) << j;
        count += subgroupBallotBitCount(subgroupBallot(pass));
    }
    // The subgroup leaders combine their counts in shared memory.
    if (subgroupElect()) sg_counts[gl_SubgroupID] = count;
    barrier();
    uint below = 0u;
    uint tile_count = 0u;
    for (uint s = 0u; s < gl_NumSubgroups; ++s) {
        uint c = sg_counts[s];
        if (s < gl_SubgroupID) below += c;
        tile_count += c;
    }

    uint tile_base;
    if (OP == OP_UNORDERED) {
        // ONE atomic per tile, by the tile's leader; the base meets the tile in shared memory.
        if (local == 0u && tile_count != 0u) s_word = atomicAdd(counter[0], tile_count);
        barrier();
        tile_base = s_word;
    } else {
        tile_base = 0u;
        if (t == 0u) {
            if (local == 0u) atomicMax(states[t], STATE_INCLUSIVE | tile_count);
        } else {
            if (local == 0u) atomicMax(states[t], STATE_AGGREGATE | tile_count);
            tile_base = look_back(t);
            if (local == 0u) atomicMax(states[t], STATE_INCLUSIVE | (tile_base + tile_count));
        }
        if (local == 0u && t + 1u == p.tiles) counter[0] = tile_base + tile_count;
    }

    uint at = out0 + tile_base + below;
    for (uint j = 0u; j < ITEMS; ++j) {
        bool pass = ((kept >> j) & 1u) != 0u;
        uvec4 ballot = subgroupBallot(pass);
        if (pass) dst[at + subgroupBallotExclusiveBitCount(ballot)] = v[j];
        at += subgroupBallotBitCount(ballot);
    }
}
