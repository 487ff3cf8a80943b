// Stream compaction, one pass over the input, subgroup-size agnostic; the twin of
// cuda/compact.cu, modelled by src/cpu/compact.rs. The text of compact.comp and of
// compact_c64.comp (XW_COUNT64: the unordered step's count and tiles done in one 64-bit word,
// for devices with shaderBufferInt64Atomics). OP selects one step of the plan in
// src/compact.rs:
//   RESET       once per call: the u64 total, the counters and the base of the first chunk
//               become 0, and so do the first `tiles` tile states (every workgroup zeroes 256
//               of them; each chunk has its own run of states, from `state0`).
//   UNORDERED   per tile, the hierarchical leader-elected, warp-aggregated enqueue: ONE
//               atomicAdd per tile on the chunk counter for the tile's passing count; the last
//               tile to count itself done sets total and the next chunk's base to this chunk's
//               base + its count and zeroes the counters. XW_COUNT64: count (low word) and
//               tiles done (high word) are one 64-bit word, so that one atomicAdd gives the
//               tile its base and its turn, and the last tile's answer holds every other
//               count. Without it the done counter is a second, acquire-release atomic.
//   STABLE      per tile, the tile's offset by decoupled look-back over the tile states, then
//               an ordered scatter; the tile with the last ticket sets total and the next
//               chunk's base to this chunk's base + its inclusive prefix and zeroes the tickets.
// So a call is one RESET and one launch per chunk and window, and nothing runs after them. A
// call of one chunk and one window may instead keep its counter words and tile states in the
// device's counters buffer (`self_clearing`), which is zero whenever no launch runs: no RESET;
// the last tile leaves the next base unwritten, and (STABLE) each tile counts itself done once
// past the states, and the last of them zeroes the tile states after its scatter.
// The base of chunk k is in slot k % 2 (`slot`): the launches of chunk k for other windows
// still read it after the chunk has written slot (k + 1) % 2.
//
// HEADS (a variant of its own): the predicate is unique's, "differs in its bits from the element
// before it" (the input's first element always passes), in place of `pred`; a chunk after the
// first binds its input from `shift` elements before its start, so that its first element's
// predecessor is in the binding.
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
// The passing elements of a tile go to shared memory first (at their place in the tile's output
// run) and then out in coalesced stores, a workgroup's worth of consecutive elements per step:
// the tile's output run is contiguous in both orders.
// EARLY (not with LENGTHS; src/compact.rs takes it for stable tiles above 16 elements a thread):
// they go there before the tile's base is known, so that a stable tile waits on its look-back
// with its elements out of registers and only its stores left.
//
// The output binding is a window of the output starting at element `window` (two words); a
// chunk writes at its base - window + ..., and only when its base lies in window .. window +
// span (span 0: any).
// The host launches one UNORDERED/STABLE per window the chunk's output may start in; every
// workgroup of the others leaves at once, before taking a ticket.
//
// EPOCHS (XW_COUNT64 only; a variant of its own, the twin of the scans' epochs in
// scan_device.glsl): a stable call of one chunk and one window keeps its tile states in the
// device's epochs buffer (src/device.rs, Device::epochs), 64-bit words bound from its first
// state, and `counter` is that buffer's header: words 0 and 1 the tile ticket and the epoch as
// one 64-bit word, word 2 the first state the next launch zeroes. A state's high word is the
// epoch of the launch that published it times 4 plus the status (1 aggregate, 2 inclusive
// prefix), its low word the value, so a state of an earlier launch reads as unpublished and no
// state is zeroed for a call: no RESET, no count of tiles done. The tile that takes the last
// ticket sets the word to the next epoch (modulo p.epoch_wrap) and ticket 0 at once, and zeroes
// the SCRUB states from word 2 on that the launch does not use, moving that place on, so no
// state still carries a tag when the tag comes back. A tile's own first publication replaces
// whatever an earlier launch left by an exchange (its tag may be larger once the epochs have
// wrapped), its inclusive prefix takes the maximum, and a fallback's aggregate for another tile
// goes only over a state of an earlier launch (a compare and swap). The base is 0 and the last
// ticket writes only the total.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "vote_predicate.glsl"

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint ITEMS = 16u;
// 1: the head predicate (XW_PRED_HEAD, unique's), whose chunks read the element before them;
// 0: the predicates of vote_predicate.glsl.
layout(constant_id = 3) const uint HEADS = 0u;
// 1 (with HEADS; run-length encoding): each head's run length too (main's scatter, OP_LENGTHS).
layout(constant_id = 4) const uint LENGTHS = 0u;
// 1 (not with LENGTHS): the tile's passing elements go to shared memory before the tile's base
// is known (the stable step's look-back then overlaps nothing of the tile's but its stores).
layout(constant_id = 5) const uint EARLY = 0u;
// 1 (OP_STABLE, XW_COUNT64; with LENGTHS only with CARRY): the tile states tagged with epochs
// (see the top).
layout(constant_id = 6) const uint EPOCHS = 0u;
const bool EARLY_STAGE = EARLY != 0u && LENGTHS == 0u;
#if defined(XW_COUNT64)
// CARRY: compact_c64.comp's constant.
const bool XW_CARRY = CARRY != 0u && LENGTHS != 0u && HEADS != 0u && EPOCHS != 0u;
#else
const bool XW_CARRY = false;
#endif

const uint OP_RESET = 0u;
const uint OP_UNORDERED = 1u;
const uint OP_STABLE = 2u;
const uint OP_LENGTHS = 3u;

const uint STATE_AGGREGATE = 1u << 30;
const uint STATE_INCLUSIVE = 2u << 30;
const uint STATE_VALUE = STATE_AGGREGATE - 1u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) coherent buffer Total { uint total[]; };  // the u64 count, low word first
// The counter words, each on a 128-byte line of its own: every tile takes one or two atomics
// on them and reads the chunk base. Measured on an H200 with the words on one line: the Vulkan
// compaction took 14-16 ns per tile at 2^26-2^28 against 3-5 ns on CUDA; with them apart it
// ran 1.3x (stable) and 2x (unordered) faster at 2^28, CUDA 1-3% faster. C_COUNT: this
// chunk's count (UNORDERED; XW_COUNT64: and the word after it its tiles done); C_TICKET: the
// chunk's tile tickets (STABLE); C_DONE: tiles done (UNORDERED without XW_COUNT64); C_BASE +
// C_LINE * s and the word after it: the base of the chunks of slot s, low word first.
const uint C_LINE = 32u;
const uint C_COUNT = 0u;
const uint C_TICKET = C_LINE;
const uint C_DONE = 2u * C_LINE;
const uint C_BASE = 3u * C_LINE;
layout(std430, binding = 3) coherent buffer Counter { uint counter[]; };
#if defined(XW_COUNT64)
// The same words, as 64-bit ones: counter64[C_COUNT / 2] is the count and tiles done.
layout(std430, binding = 3) coherent buffer Counter64 { uint64_t counter64[]; };
#endif
// Tile states, read with plain loads while other workgroups publish (volatile: every poll
// reads memory again).
layout(std430, binding = 4) coherent volatile buffer States { uint states[]; };
#if defined(XW_COUNT64)
// EPOCHS: the same binding as the epochs buffer's 64-bit states.
layout(std430, binding = 4) coherent buffer States64 { uint64_t states64[]; };
#endif
// LENGTHS: the run lengths (a window like dst's), and two words a tile (side[2 g], side[2 g + 1]:
// the global rank and the position of tile g's first head, or NO_HEAD); CARRY: one word a tile
// (side[g]: the place of the last head at or before tile g, see look_back).
// Coherent: a self-clearing pass's last tile reads what the others stored (close_runs).
layout(std430, binding = 5) coherent buffer Lengths { uint lengths[]; };
layout(std430, binding = 6) coherent buffer Side { uint side[]; };
const uint NO_HEAD = 0xffffffffu;
layout(push_constant) uniform Params {
    uint n;        // elements in this chunk
    uint pred;     // predicate code (vote_predicate.glsl)
    uint a_lo;     // first operand, low and high word
    uint a_hi;
    uint b_lo;     // second operand (in_range's hi)
    uint b_hi;
    uint window_lo;  // output element the output binding starts at, low and high word
    uint window_hi;
    uint span;     // the window this launch serves: base - window < span (0: any)
    uint tiles;    // tiles in this chunk (RESET: tile states to zero)
    uint spin;     // polls of an unpublished predecessor before counting its tile here
    uint slot;     // the slot holding this chunk's base (0 or 1)
    uint state0;   // this chunk's first tile state
    uint self_clearing;  // nonzero: the counters buffer's words, no RESET (see the top)
    uint shift;    // the input binding starts this many elements before the chunk (HEADS)
    uint close;    // LENGTHS, self_clearing: the last tile closes the runs (no OP_LENGTHS)
    uint epoch_wrap;   // EPOCHS: the number of epochs (after the last comes 0)
    uint epoch_tiles;  // EPOCHS: the states states64 holds (a multiple of SCRUB)
} p;

const uint TILE = gl_WorkGroupSize.x * ITEMS;

// One entry per subgroup (a subgroup has at least one invocation).
shared uint sg_counts[gl_WorkGroupSize.x];
shared uint s_word;
shared uint s_ticket;
shared int s_stalled;
shared uint s_last_tile;  // STABLE with self_clearing: this tile was the last to count itself done
shared uint s_eb;         // EPOCHS: the launch's epoch times 4
shared uint s_scrub;      // EPOCHS: the last ticket's first state to zero, plus one
// EPOCHS: this launch's epoch times 4, the tag of its states (from s_eb after the ticket).
uint g_eb = 0u;
// CARRY: the last head before this tile (look_back's, NO_HEAD before it), and a fallback's
// count_tile's last head plus one (0: none; zero between its uses).
uint g_before = 0xffffffffu;
shared uint s_before;
shared uint s_fallback_last;
const uint SCRUB = 1024u;
shared T out_stage[TILE];
// LENGTHS: each subgroup's last head (its element in the chunk, or NO_HEAD).
shared uint sg_last[LENGTHS != 0u ? gl_WorkGroupSize.x : 1u];

// Where the chunk's output starts in the output binding, if it starts in this launch's window.
// Every invocation reads the same base, so leaving on `false` is uniform.
bool window_offset(uvec2 base, out uint offset) {
    uint borrow;
    offset = usubBorrow(base.x, p.window_lo, borrow);
    uint high = base.y - p.window_hi - borrow;
    return high == 0u && (p.span == 0u || offset < p.span);
}

void reset_step() {
    uint i = xw_group() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    if (i < p.tiles) states[i] = 0u;
    if (i != 0u) return;
    total[0] = 0u;
    total[1] = 0u;
    counter[C_COUNT] = 0u;
    counter[C_COUNT + 1u] = 0u;
    counter[C_TICKET] = 0u;
    counter[C_DONE] = 0u;
    counter[C_BASE] = 0u;
    counter[C_BASE + 1u] = 0u;
}

// The end of a chunk: total and the next chunk's base become this chunk's base + count.
void finish_chunk(uvec2 base, uint count) {
    uint carry;
    uvec2 end;
    end.x = uaddCarry(base.x, count, carry);
    end.y = base.y + carry;
    total[0] = end.x;
    total[1] = end.y;
    // The only chunk: no next base, the word stays zero.
    if (p.self_clearing != 0u || EPOCHS != 0u) return;
    uint next = C_BASE + C_LINE * (p.slot ^ 1u);
    counter[next] = end.x;
    counter[next + 1u] = end.y;
}

// STABLE with self_clearing, at the end of the tile: the last tile to count itself done (after
// its last use of the states, below) zeroes the tile states and the done counter. Uniform
// control flow.
void zero_states_if_last() {
    barrier();
    if (s_last_tile == 0u) return;
    // Acquire: every other tile's count, and so its use of the states, before the zeroing.
    memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
    for (uint i = gl_LocalInvocationIndex; i < p.tiles; i += gl_WorkGroupSize.x) {
        states[p.state0 + i] = 0u;
    }
    if (gl_LocalInvocationIndex == 0u) counter[C_DONE] = 0u;
}

// ballot_count and ballot_rank: the passing lanes of a ballot, all and below the caller.
#include "tile_ballot.glsl"

// An element's bits, as one word or two: heads compare and shuffle these (a NaN equals only a
// NaN of the same payload, +0.0 is not -0.0, and no float passes through the driver's math).
#if defined(XW_TYPE_F32)
#define XB uint
XB xw_elem_bits(T v) { return floatBitsToUint(v); }
#elif defined(XW_TYPE_F64)
#define XB uvec2
XB xw_elem_bits(T v) { return unpackDouble2x32(v); }
#elif defined(XW_TYPE_I64) || defined(XW_TYPE_U64)
#define XB uvec2
XB xw_elem_bits(T v) { return unpackUint2x32(uint64_t(v)); }
#else
#define XB uint
XB xw_elem_bits(T v) { return uint(v); }
#endif

// Element i of this chunk (the binding starts `shift` elements before it).
// The code src/compact.rs passes with HEADS.
const uint XW_PRED_HEAD = 12u;

T src_at(uint i) { return src[(HEADS != 0u ? p.shift : 0u) + i]; }

bool passes(uint i) {
    if (HEADS != 0u) {
        return i < p.n && ((i == 0u && p.shift == 0u) ||
                           xw_elem_bits(src_at(i)) != xw_elem_bits(src[p.shift + i - 1u]));
    }
    T a = xw_pred_operand(p.a_lo, p.a_hi);
    T b = xw_pred_operand(p.b_lo, p.b_hi);
    return i < p.n && xw_predicate(src_at(i), xw_pred_code(p.pred, a, b), a, b);
}

// The first element of the caller's subgroup's run in tile t.
uint run_first(uint t) {
    return t * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
}

// The passing elements of tile t of this chunk (every invocation gets the count). Call it from
// the whole workgroup in uniform control flow.
// CARRY: invocation 0 gets the tile's last passing element in `last` (NO_HEAD: none).
uint count_tile(uint t, out uint last) {
    uint first = run_first(t);
    uint count = 0u;
    uint mine = 0u;  // CARRY: the subgroup's last passing element plus one (0: none)
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        uvec4 ballot = subgroupBallot(passes(first + j * gl_SubgroupSize));
        count += ballot_count(ballot);
        if (XW_CARRY && ballot != uvec4(0u)) {
            mine = first - gl_SubgroupInvocationID + j * gl_SubgroupSize +
                   subgroupBallotFindMSB(ballot) + 1u;
        }
    }
    barrier();  // sg_counts may still be read by the caller's previous round
    if (subgroupElect()) {
        sg_counts[xw_subgroup_id()] = count;
        if (XW_CARRY && mine != 0u) atomicMax(s_fallback_last, mine);
    }
    barrier();
    uint sum = 0u;
    for (uint s = 0u; s < xw_num_subgroups(); ++s) sum += sg_counts[s];
    last = NO_HEAD;
    if (XW_CARRY && gl_LocalInvocationIndex == 0u) {
        // Read, then zeroed for the next fallback (two barriers away).
        last = s_fallback_last - 1u;
        s_fallback_last = 0u;
    }
    return sum;
}

// The sum over the subgroup of a value, by a butterfly (any power-of-two subgroup size).
uint subgroup_sum(uint x) {
    for (uint d = 1u; d < gl_SubgroupSize; d <<= 1u) x += subgroupShuffleXor(x, d);
    return x;
}

// Tile t's state as the look-back reads it: the status in bits 31..30 (EPOCHS: 0 for another
// launch's state), the value below.
uint read_state(uint t) {
#if defined(XW_COUNT64)
    if (EPOCHS != 0u) {
        uint64_t w = atomicLoad(states64[t], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                gl_SemanticsRelaxed);
        uint f = uint(w >> 32) - g_eb;
        return f - 1u < 2u ? (f << 30) | uint(w) : 0u;
    }
#endif
    return states[t];
}

#if defined(XW_COUNT64)
uint64_t tagged(uint state) {
    return (uint64_t((state >> 30) + g_eb) << 32) | uint64_t(state & STATE_VALUE);
}
#endif

// Tile t's own publication of `state` (status bits and value); EPOCHS: the first by an
// exchange (see the top).
void publish(uint t, uint state, bool first) {
#if defined(XW_COUNT64)
    if (EPOCHS != 0u) {
        if (first) {
            atomicExchange(states64[t], tagged(state));
        } else {
            atomicMax(states64[t], tagged(state));
        }
        return;
    }
#endif
    atomicMax(states[t], state);
}

// A fallback's aggregate for tile t; EPOCHS: over a state of an earlier launch only, by one
// compare and swap (one that fails found a publication of this launch, since only this
// launch's tiles write its states, and the look-back's next poll reads it).
void publish_for(uint t, uint state) {
#if defined(XW_COUNT64)
    if (EPOCHS != 0u) {
        uint64_t old = atomicLoad(states64[t], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                  gl_SemanticsRelaxed);
        if (uint(old >> 32) - g_eb - 1u >= 2u) atomicCompSwap(states64[t], old, tagged(state));
        return;
    }
#endif
    atomicMax(states[t], state);
}

// The exclusive prefix of tile k > 0 of this chunk (every invocation gets it). Call it from
// the whole workgroup in uniform control flow.
//
// CARRY (run-length encoding, one chunk, states tagged by epochs): side[g] is the place of the
// last head at or before tile g, written before the state that says so: a tile with heads
// writes its own last head before its aggregate, a tile without any the word it found here
// before its inclusive prefix. So the nearest tile of the walk whose state counts a head (an
// aggregate above zero, or the inclusive prefix, which counts tile 0's first element) holds
// the last head before tile k in its word, read after the state is seen (acquire); g_before
// gets it. Tile k's first head then closes the run before it (its length, the distance from
// that head), and no launch after the pass is needed. A predecessor counted here for the
// fallback gets its word too.
uint look_back(uint k) {
    // Subgroup 0's running state: the values folded so far and the nearest tile not folded.
    uint folded = 0u;
    uint found = NO_HEAD;  // CARRY: the last head before tile k, once a window had it
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
                    s = t >= 0 ? read_state(p.state0 + uint(t)) : STATE_INCLUSIVE;
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
                uint x = lane <= limit ? s & STATE_VALUE : 0u;
                if (XW_CARRY) {
                    uvec4 has = subgroupBallot(x != 0u);
                    if (found == NO_HEAD && has != uvec4(0u)) {
                        uint i = subgroupBallotFindLSB(has);
                        uint w = 0u;
                        if (lane == i) {
                            // The state was seen: the word written before it.
                            memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                          gl_SemanticsAcquire);
                            w = side[p.state0 + uint(t)];
                        }
                        found = subgroupShuffle(w, i);
                    }
                }
                folded += subgroup_sum(x);
                if (any_inclusive) break;
                top -= int(gl_SubgroupSize);
            }
            if (subgroupElect()) {
                s_stalled = stalled;
                s_word = folded;
                s_before = found;
            }
        }
        barrier();
        int stalled = s_stalled;
        uint prefix = s_word;
        g_before = s_before;
        barrier();
        if (stalled < 0) return prefix;
        // A predecessor that has published nothing after `spin` polls: count its tile here.
        uint tile_last;
        uint c = count_tile(uint(stalled), tile_last);
        if (gl_LocalInvocationIndex == 0u) {
            // CARRY: its last head, before its state (the tile writes the same word itself).
            if (XW_CARRY && c != 0u) {
                side[p.state0 + uint(stalled)] = tile_last;
                memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelease);
            }
            publish_for(p.state0 + uint(stalled), STATE_AGGREGATE | c);
            memoryBarrierBuffer();
        }
        barrier();
    }
    return 0u;
}

// Loads the caller's ITEMS elements of tile t (a whole tile needs no bounds checks).
void load_tile(uint t, out T v[ITEMS]) {
    uint first = run_first(t);
    if ((t + 1u) * TILE <= p.n) {
        [[unroll]] for (uint j = 0u; j < ITEMS; ++j) v[j] = src_at(first + j * gl_SubgroupSize);
    } else {
        [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
            uint i = first + j * gl_SubgroupSize;
            v[j] = i < p.n ? src_at(i) : T(0);
        }
    }
}

// Bit j: the element of step j of the caller's run (from `first`) passes predicate `code`;
// `count` gets the subgroup's passing elements. Called with a constant code, the predicate's
// switch folds away.
// The count is one butterfly sum of the lanes' bit counts rather than a ballot a step: NVIDIA's
// driver took all the steps' ballots at once, with each step's test kept for the bits, and the
// stable kernel at 24 elements a thread needed 79 registers (three workgroups an SM).
uint kept_bits(uint code, T v[ITEMS], uint first, bool whole, T a, T b, out uint count) {
    uint kept = 0u;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        bool pass = (whole || first + j * gl_SubgroupSize < p.n) && xw_predicate(v[j], code, a, b);
        kept |= uint(pass) << j;
    }
    count = subgroup_sum(uint(bitCount(kept)));
    return kept;
}

// HEADS (unique's predicate): bit j is set where the element of step j differs in its bits from the element
// before it (or is the input's first). Lane l > 0's predecessor is lane l - 1's element of the
// same step, lane 0's the last lane's element of the step before, and at step 0 the element
// before the subgroup's run (loaded). One shuffle a step: the last lane offers its previous
// step's element instead of its own.
// `last_head` gets the subgroup's last head (its element in the chunk), or NO_HEAD.
uint head_bits(T v[ITEMS], uint first, bool whole, out uint count, out uint last_head) {
    uint lane = gl_SubgroupInvocationID;
    uint last = gl_SubgroupSize - 1u;
    bool at_start = first == 0u && p.shift == 0u;  // lane 0 of the input's first run
    XB before = xw_elem_bits(v[0]);
    if (lane == 0u && !at_start && first < p.n) before = xw_elem_bits(src[p.shift + first - 1u]);
    uint kept = 0u;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        XB own = xw_elem_bits(v[j]);
        XB offer = j > 0u && lane == last ? xw_elem_bits(v[j > 0u ? j - 1u : 0u]) : own;
        XB got = subgroupShuffle(offer, (lane + last) & last);
        XB prev = j == 0u && lane == 0u ? before : got;
        bool valid = whole || first + j * gl_SubgroupSize < p.n;
        bool pass = valid && ((j == 0u && at_start) || own != prev);
        kept |= uint(pass) << j;
    }
    // The count and the last head by butterflies over the lanes' bits (as kept_bits): a lane's
    // last head is its highest set bit's element; the subgroup's is the lanes' largest, kept
    // plus one so that 0 means none. H200 (NOTES.md, version 46): run-length encoding's kernel
    // 68 -> 55 registers, 6-11% less time from 2^22 (the CUDA twin, whose kernel then spilled,
    // keeps a ballot a step).
    uint c = uint(bitCount(kept));
    uint h = kept != 0u ? first + uint(findMSB(kept)) * gl_SubgroupSize + 1u : 0u;
    for (uint d = 1u; d < gl_SubgroupSize; d <<= 1u) {
        c += subgroupShuffleXor(c, d);
        if (LENGTHS != 0u) h = max(h, subgroupShuffleXor(h, d));
    }
    count = c;
    last_head = h == 0u ? NO_HEAD : h - 1u;
    return kept;
}

// OP_LENGTHS (one launch after the chunk's, p.tiles = its tiles, p.n = its elements; or the
// last tile of a self-clearing pass): the run
// before each tile's first head ends there, and the last run at n; each of those runs' lengths
// holds its last head's position (main's scatter). Each run is one invocation's.
// With `zero`, by one workgroup (the last tile of a self-clearing pass, whose two words a tile
// lie in the counters buffer and go back to zero); else by the grid, an invocation a tile.
void close_runs(bool zero) {
    uint first = zero ? gl_LocalInvocationIndex : xw_group() * gl_WorkGroupSize.x + gl_LocalInvocationIndex;
    uint stride = zero ? gl_WorkGroupSize.x : p.tiles + 1u;
    for (uint g = first; g <= p.tiles; g += stride) {
        if (g < p.tiles) {
            uint r = side[2u * g];
            if (r != NO_HEAD && r > 0u) lengths[r - 1u] = side[2u * g + 1u] - lengths[r - 1u];
            if (zero) {
                side[2u * g] = 0u;
                side[2u * g + 1u] = 0u;
            }
        } else {
            uint runs = total[0];
            if (runs > 0u) lengths[runs - 1u] = p.n - lengths[runs - 1u];
        }
    }
}

void lengths_step() { close_runs(false); }

// The caller's passing elements at their places in the tile's output run (out_stage), from
// `at`, the count of the subgroups below the caller's.
void stage_tile(uint kept, T v[ITEMS], uint at) {
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        bool pass = ((kept >> j) & 1u) != 0u;
        uvec4 ballot = subgroupBallot(pass);
        uint q = min(at + ballot_rank(ballot), TILE - 1u);
        if (pass) out_stage[q] = v[j];
        at += ballot_count(ballot);
    }
}

void main() {
    if (OP == OP_RESET) {
        reset_step();
        return;
    }
    if (OP == OP_LENGTHS) {
        lengths_step();
        return;
    }
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (xw_group() >= p.tiles) return;
    uint at_base = C_BASE + C_LINE * p.slot;
    // EPOCHS: one chunk, whose base is 0 (`counter` is the epochs buffer's header).
    uvec2 base = EPOCHS != 0u ? uvec2(0u) : uvec2(counter[at_base], counter[at_base + 1u]);
    uint out0 = 0u;
    if (!window_offset(base, out0)) return;
    uint local = gl_LocalInvocationIndex;
    uint t = xw_group();
    T v[ITEMS];
    // Load ITEMS coalesced steps. STABLE: tiles are numbered in the order workgroups take a
    // ticket, so a tile's predecessors have started; the loads of tile `group` are in flight
    // while the ticket comes (devices that start workgroups in order hand out exactly that
    // one), and a workgroup with another ticket loads its tile again.
    load_tile(t, v);
    if (XW_CARRY && local == 0u) s_fallback_last = 0u;  // read after two barriers at least
    if (OP == OP_STABLE) {
#if defined(XW_COUNT64)
        if (EPOCHS != 0u) {
            if (local == 0u) {
                uint64_t w = atomicAdd(counter64[0], uint64_t(1));
                uint epoch = uint(w >> 32);
                s_ticket = uint(w);
                s_eb = epoch << 2u;
                s_scrub = 0u;
                if (uint(w) + 1u == p.tiles) {
                    uint next = epoch + 1u >= p.epoch_wrap ? 0u : epoch + 1u;
                    atomicExchange(counter64[0], uint64_t(next) << 32);
                    uint at = counter[2];
                    counter[2] = at + SCRUB >= p.epoch_tiles ? 0u : at + SCRUB;
                    s_scrub = at + 1u;
                }
            }
            barrier();
            g_eb = s_eb;
            if (s_scrub != 0u) {
                for (uint i = local; i < SCRUB; i += gl_WorkGroupSize.x) {
                    uint at = s_scrub - 1u + i;
                    if (at >= p.tiles) states64[at] = uint64_t(0);
                }
            }
        } else
#endif
        {
            if (local == 0u) s_ticket = atomicAdd(counter[C_TICKET], 1u);
            barrier();
        }
        t = s_ticket;
        if (t != xw_group()) load_tile(t, v);
    }

    // Ballot each step: which pass, and the subgroup's count.
    uint first = run_first(t);
    bool whole = (t + 1u) * TILE <= p.n;
    T a = xw_pred_operand(p.a_lo, p.a_hi);
    T b = xw_pred_operand(p.b_lo, p.b_hi);
    // Bit j of `kept`: the element of step j passes (the ranks are recomputed from it at the
    // scatter, which costs a ballot per step and saves a register per step).
    // The predicate's code is uniform: one branch here instead of one per element.
    uint kept;
    uint count;
    uint last_head = NO_HEAD;
    // HEADS also tests the code (always XW_PRED_HEAD there), which keeps the other predicates'
    // branches in that variant: so built, NVIDIA's driver gave it 60 registers (four workgroups
    // an SM) and unique of 2^24 i32 took 55.5 us on an H200; without the test 66 registers,
    // three workgroups, 62.0 us (NOTES.md, version 25).
    if (HEADS != 0u && p.pred == XW_PRED_HEAD) {
        kept = head_bits(v, first, whole, count, last_head);
    } else switch (xw_pred_code(p.pred, a, b)) {
    case XW_PRED_EVEN: kept = kept_bits(XW_PRED_EVEN, v, first, whole, a, b, count); break;
    case XW_PRED_ODD: kept = kept_bits(XW_PRED_ODD, v, first, whole, a, b, count); break;
    case XW_PRED_NONZERO: kept = kept_bits(XW_PRED_NONZERO, v, first, whole, a, b, count); break;
    case XW_PRED_GREATER: kept = kept_bits(XW_PRED_GREATER, v, first, whole, a, b, count); break;
    case XW_PRED_LESS: kept = kept_bits(XW_PRED_LESS, v, first, whole, a, b, count); break;
    case XW_PRED_IN_RANGE: kept = kept_bits(XW_PRED_IN_RANGE, v, first, whole, a, b, count); break;
#if defined(XW_SUBNORMALS_EXACT) && defined(XW_TYPE_F32)
    case XW_PRED_NATIVE_GREATER: kept = kept_bits(XW_PRED_NATIVE_GREATER, v, first, whole, a, b, count); break;
    case XW_PRED_NATIVE_LESS: kept = kept_bits(XW_PRED_NATIVE_LESS, v, first, whole, a, b, count); break;
    case XW_PRED_NATIVE_IN_RANGE: kept = kept_bits(XW_PRED_NATIVE_IN_RANGE, v, first, whole, a, b, count); break;
    case XW_PRED_ONE_GREATER: kept = kept_bits(XW_PRED_ONE_GREATER, v, first, whole, a, b, count); break;
    case XW_PRED_ONE_LESS: kept = kept_bits(XW_PRED_ONE_LESS, v, first, whole, a, b, count); break;
    case XW_PRED_ONE_IN_RANGE: kept = kept_bits(XW_PRED_ONE_IN_RANGE, v, first, whole, a, b, count); break;
#endif
    default: kept = kept_bits(p.pred, v, first, whole, a, b, count); break;
    }
    // The subgroup leaders combine their counts in shared memory.
    if (subgroupElect()) sg_counts[xw_subgroup_id()] = count;
    if (LENGTHS != 0u && subgroupElect()) sg_last[xw_subgroup_id()] = last_head;
    barrier();
    uint below = 0u;
    uint tile_count = 0u;
    for (uint s = 0u; s < xw_num_subgroups(); ++s) {
        uint c = sg_counts[s];
        if (s < gl_SubgroupID) below += c;
        tile_count += c;
    }

    if (EARLY_STAGE) stage_tile(kept, v, below);

    uint tile_base;
#if !defined(XW_COUNT64)
    uint done = 0u;
#endif
    if (OP == OP_UNORDERED) {
        // ONE atomic per tile, by the tile's leader; the base meets the tile in shared memory.
#if defined(XW_COUNT64)
        // Its high word is the tiles done before this one: the last tile's low word is the
        // count of all the others, so it ends the chunk (every other tile has added).
        if (local == 0u) {
            uint64_t before = atomicAdd(counter64[C_COUNT / 2u],
                                        (uint64_t(1u) << 32) | uint64_t(tile_count));
            s_word = uint(before);
            if (uint(before >> 32) + 1u == p.tiles) {
                counter64[C_COUNT / 2u] = uint64_t(0u);
                finish_chunk(base, uint(before) + tile_count);
            }
        }
        barrier();
        tile_base = s_word;
#else
        // Then the leader counts the tile done (after its count has landed); the answer is
        // needed only after the scatter.
        if (local == 0u) {
            if (tile_count != 0u) s_word = atomicAdd(counter[C_COUNT], tile_count);
            // Release: the count lands before the tile counts itself done; acquire: the tile
            // that counts last sees every count (measured 3-5% faster at 2^26-2^28 on an
            // H200 than a memoryBarrierBuffer between two plain atomics).
            done = atomicAdd(counter[C_DONE], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                             gl_SemanticsAcquireRelease);
        }
        barrier();
        tile_base = s_word;
#endif
    } else {
        tile_base = 0u;
        if (XW_CARRY && local == 0u && tile_count != 0u) {
            // The tile's last head, released to whoever reads a state published after it.
            uint tile_last = NO_HEAD;
            for (uint s = 0u; s < xw_num_subgroups(); ++s) {
                if (sg_last[s] != NO_HEAD) tile_last = sg_last[s];
            }
            side[p.state0 + t] = tile_last;
            memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelease);
        }
        if (t == 0u) {
            if (local == 0u) publish(p.state0, STATE_INCLUSIVE | tile_count, true);
        } else {
            if (local == 0u) publish(p.state0 + t, STATE_AGGREGATE | tile_count, true);
            tile_base = look_back(t);
            if (XW_CARRY && local == 0u && tile_count == 0u) {
                // No head here: the tile passes on the last one before it.
                side[p.state0 + t] = g_before;
                memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelease);
            }
            if (local == 0u) publish(p.state0 + t, STATE_INCLUSIVE | (tile_base + tile_count), false);
        }
        // With self_clearing: the tile has published its last state and its invocations have
        // read their last ones (the barrier that ends look_back), so it counts itself done; the
        // count's round trip overlaps the scatter. Release: the publications come first.
        // (LENGTHS with `close` counts after its stores, below.)
        if ((LENGTHS == 0u || p.close == 0u) && p.self_clearing != 0u && local == 0u) {
            uint before = atomicAdd(counter[C_DONE], 1u, gl_ScopeDevice,
                                    gl_StorageSemanticsBuffer, gl_SemanticsRelease);
            s_last_tile = before + 1u == p.tiles ? 1u : 0u;
        }
        // The last ticket: every workgroup of the chunk has taken its own.
        if (local == 0u && t + 1u == p.tiles) {
            if (EPOCHS == 0u) counter[C_TICKET] = 0u;  // EPOCHS: ticket 0 again already
            finish_chunk(base, tile_base + tile_count);
        }
    }

    uint at = below;
    uint out_first = out0 + tile_base;
    // LENGTHS: the head before the current step's lanes (the last of an earlier subgroup's run
    // first). A head writes the length of the run before it (up to its own element) at the
    // place before its own; the tile's last head writes its position at its own place instead;
    // the run before the tile's first head is OP_LENGTHS's (side). A step's passing lanes
    // write consecutive places, so these stores need no staging (a second staging area did
    // not fit 32 KiB of shared memory).
    // CARRY: the head before the tile's first is g_before, and the tile's first head closes
    // its run; the last tile closes the input's last run (no head there: the one before).
    uint prev_head = XW_CARRY ? g_before : NO_HEAD;
    if (LENGTHS != 0u) {
        for (uint s = 0u; s < gl_SubgroupID; ++s) {
            if (sg_last[s] != NO_HEAD) prev_head = sg_last[s];
        }
        if (!XW_CARRY && tile_count == 0u && local == 0u) side[2u * (p.state0 + t)] = NO_HEAD;
        if (XW_CARRY && tile_count == 0u && local == 0u && t + 1u == p.tiles && tile_base > 0u) {
            lengths[out0 + tile_base - 1u] = p.n - g_before;
        }
    }
    [[unroll]] for (uint j = 0u; j < (EARLY_STAGE ? 0u : ITEMS); ++j) {
        bool pass = ((kept >> j) & 1u) != 0u;
        uvec4 ballot = subgroupBallot(pass);
        uint q = min(at + ballot_rank(ballot), TILE - 1u);
        if (pass) out_stage[q] = v[j];
        if (LENGTHS != 0u) {
            uint step0 = first - gl_SubgroupInvocationID + j * gl_SubgroupSize;
            if (pass) {
                uint pos = step0 + gl_SubgroupInvocationID;
                uvec4 lower = ballot & gl_SubgroupLtMask;
                uint before_head =
                    lower != uvec4(0u) ? step0 + subgroupBallotFindMSB(lower) : prev_head;
                if (XW_CARRY ? tile_base + q > 0u : q > 0u) {
                    lengths[out_first + q - 1u] = pos - before_head;
                }
                if (q + 1u == tile_count && (!XW_CARRY || t + 1u == p.tiles)) {
                    lengths[out_first + q] = XW_CARRY ? p.n - pos : pos;
                }
                if (!XW_CARRY && q == 0u) {
                    uint g = p.state0 + t;
                    side[2u * g] = base.x + tile_base;
                    side[2u * g + 1u] = pos;
                }
            }
            if (ballot != uvec4(0u)) prev_head = step0 + subgroupBallotFindMSB(ballot);
        }
        at += ballot_count(ballot);
    }
    barrier();
    for (uint i = local; i < tile_count; i += gl_WorkGroupSize.x) dst[out_first + i] = out_stage[i];
    if (OP == OP_STABLE && LENGTHS != 0u && p.close != 0u) {
        // The two words a tile lie in the counters buffer too, and the last tile to count
        // itself done does OP_LENGTHS's work: every invocation's stores of lengths and side
        // are released before the count, which the last tile acquires. (Only for a few tiles:
        // from 1024 tiles that count's wait and the last tile's loop cost more than the launch
        // they save; NOTES.md, version 25.)
        controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                       gl_SemanticsAcquireRelease);
        if (local == 0u) {
            uint before = atomicAdd(counter[C_DONE], 1u, gl_ScopeDevice,
                                    gl_StorageSemanticsBuffer, gl_SemanticsAcquireRelease);
            s_last_tile = before + 1u == p.tiles ? 1u : 0u;
        }
        barrier();
        if (s_last_tile != 0u) {
            memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
            close_runs(true);
        }
    }
    if (OP == OP_STABLE && p.self_clearing != 0u) zero_states_if_last();

#if !defined(XW_COUNT64)
    if (OP == OP_UNORDERED && local == 0u && done + 1u == p.tiles) {
        // Every tile's count has landed: the chunk's count is final.
        memoryBarrierBuffer();
        uint chunk = atomicExchange(counter[C_COUNT], 0u);
        counter[C_DONE] = 0u;
        finish_chunk(base, chunk);
    }
#endif
}
