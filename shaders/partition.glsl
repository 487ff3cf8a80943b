// Stable two-way partition by a run-time predicate (partition.comp, partition_e64.comp); the twin
// of cuda/partition.cu, modelled by src/cpu/partition.rs. A call is three steps (src/partition.rs):
//   COUNT    per tile t, the elements that pass the predicate: counts[t].
//   GROUPS   COUNT by groups of 2^p.group_bits consecutive tiles: workgroup g counts the tiles
//            of group g one after another, writes each one's count and their sum, prefix[g]
//            (no atomics: a group is one workgroup's). SCATTER_GROUPS is SCATTER after it.
//   (then)   with p.scan == SCAN_LAUNCH, an exclusive scan of the tile counts: prefix[t], the
//            passing elements of the tiles before t, by a device scan (xwarp::scan, itself a
//            decoupled look-back with its no-deadlock fallback). With SCAN_SUMS the scatter
//            step sums the counts itself (no launch between the steps, NOTES.md versions 47
//            and 48): every group's sum (every tile's count where groups are single tiles) and
//            the counts of the tiles of its own group before it, SUM_TILES of each an
//            invocation (src/partition.rs keeps groups and tiles a group within
//            SUM_TILES * BLOCK).
//   SCATTER  per tile t, with P = prefix[t] and S = prefix[tiles - 1] + counts[tiles - 1] (every
//            passing element; summed as above with SCAN_SUMS): the tile's passing elements go
//            to P + their rank, its others to S + (t * TILE - P) + their rank, each group in
//            input order. Workgroup 0 also writes S as the u64 count.
// The total S must be known before any element that fails can be placed (it starts the second
// part), so the input is read twice: once to count, once to scatter.
//   ONE      (inputs of at most ONE_TILES * BLOCK tiles, where the host expects every tile's
//            workgroup resident at once) the whole partition in one launch, the input read
//            once: the tile states (binding 2) lie in the device's counters buffer, zero before
//            the launch and after it: state[t] = STATE_DONE | the tile's passing count, and
//            state[tiles] counts the tiles done reading them. Each workgroup counts its tile and
//            publishes its state, stages its elements as SCATTER does, then reads every tile's
//            state (invocation i: tiles i, i + BLOCK, ...) for P and S, and writes its tile out.
//            No deadlock where tiles are not all resident (Vulkan promises no forward progress
//            between workgroups): an invocation that has polled unpublished states `spin` times
//            stops at the next one; the workgroup then counts the highest such tile itself from
//            the input and publishes its state (the very value its owner publishes), and polls
//            on: each round publishes one more tile. The workgroup that counts itself done last
//            zeroes the states and the count of done tiles again. A call of one tile reads no
//            state: its offset is 0 and its count the total.
//            XW_EPOCHS (partition_e64.comp, where the device has 64-bit buffer atomics): the
//            states lie in the device's epochs buffer as the scans' (scan_device.glsl, whose
//            header gives the scheme), 64 bits each: the launch's epoch times 4 plus 2 in the
//            high word, the count in the low one; binding 3 is that buffer's header. Each tile
//            takes a ticket and the epoch in one atomic ahead of its loads (the tile is still
//            its workgroup's); the last ticket sets the next epoch and zeroes SCRUB states past
//            the call's tiles, so nothing counts the tiles done and nothing is zeroed after the
//            call: NVIDIA's Vulkan driver makes every device-scope release or acquire a
//            sequentially consistent fence (NOTES.md version 68), and the count of tiles done
//            needs one.
//
// A tile is gl_WorkGroupSize.x * ITEMS consecutive elements laid out as in compact.glsl:
// subgroup s owns the s-th run of gl_SubgroupSize * ITEMS of them and reads it in ITEMS
// coalesced steps; per step one ballot ranks the passing lanes, and the subgroups' counts meet
// in shared memory. An element at place q of the tile with r passing elements before it has
// rank r among the passing ones and q - r among the others. Both groups are staged in shared
// memory (the passing ones first) and leave in coalesced stores: each is contiguous in the
// output.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "vote_predicate.glsl"
#include "tile_ballot.glsl"

// 0 COUNT, 1 SCATTER, 2 ONE, 3 GROUPS, 4 SCATTER_GROUPS
layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint ITEMS = 16u;

const uint OP_COUNT = 0u;
const uint OP_SCATTER = 1u;
const uint OP_ONE = 2u;
const uint OP_GROUPS = 3u;
const uint OP_SCATTER_GROUPS = 4u;
// ONE: tiles whose states one invocation reads (src/partition.rs: ONE_LAUNCH_MAX_TILES), and
// the flag of a published state.
const uint ONE_TILES = 2u;
const uint STATE_DONE = 0x80000000u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
// Coherent: ONE's tile states, which every workgroup reads while others write them.
layout(std430, binding = 2) coherent buffer Counts { uint counts[]; };
// The scan launch's prefixes, or SCAN_SUMS' group sums (written by COUNT); XW_EPOCHS' ONE: the
// epochs buffer's header (word 2: the first state the last ticket zeroes).
layout(std430, binding = 3) buffer Prefix { uint prefix[]; };
#if defined(XW_EPOCHS)
// ONE: the tile states (the same binding as `counts`) and the ticket and epoch (words 0 and 1
// of the header, the same binding as `prefix`).
layout(std430, binding = 2) coherent buffer States64 { uint64_t states64[]; };
layout(std430, binding = 3) coherent buffer Header64 { uint64_t header64[]; };
#endif
layout(std430, binding = 4) writeonly buffer Total { uint total[]; };  // the u64 count, low first
layout(push_constant) uniform Params {
    uint n;      // elements
    uint pred;   // predicate code (vote_predicate.glsl)
    uint a_lo;   // first operand, low and high word
    uint a_hi;
    uint b_lo;   // second operand (in_range's hi)
    uint b_hi;
    uint tiles;  // tiles of the input
    uint scan;   // SCATTER's offsets: SCAN_LAUNCH or SCAN_SUMS
    uint spin;   // ONE: polls of unpublished states per invocation before counting tiles here
    uint group_bits;  // COUNT and SCAN_SUMS: log2 of the tiles a group
    uint epoch_wrap;  // XW_EPOCHS: the number of epochs (after the last comes 0)
    uint epoch_tiles; // XW_EPOCHS: the states the epochs buffer holds (a multiple of SCRUB)
} p;

const uint TILE = gl_WorkGroupSize.x * ITEMS;

// p.scan: the prefixes by a scan launch, or the group sums and the group's own counts summed
// by the scatter step.
const uint SCAN_LAUNCH = 0u;
const uint SCAN_SUMS = 1u;
// Values of each kind one invocation of the scatter step sums (src/partition.rs bounds the
// tiles and groups).
const uint SUM_TILES = 4u;

shared uint sg_counts[gl_WorkGroupSize.x];
shared uint sg_all[gl_WorkGroupSize.x];  // the subgroups' sums of every tile's count (ONE, p.scan)
shared T stage[TILE];
shared uint s_last;
#if defined(XW_EPOCHS)
shared uint s_eb;     // ONE: the launch's epoch times 4
shared uint s_scrub;  // ONE: the last ticket's first state to zero, plus one; else 0
// ONE: the states the last ticket zeroes (as the scans', xwarp::scan::EPOCH_SCRUB).
const uint SCRUB = 1024u;
#endif

// The sum of `x` over the subgroup's lanes, in every lane: a butterfly of shuffles (the kernel
// needs no subgroup arithmetic).
uint sum_lanes(uint x) {
    for (uint d = 1u; d < gl_SubgroupSize; d <<= 1u) x += subgroupShuffleXor(x, d);
    return x;
}

// Bit j: the element of step j of the caller's run (from `first`) passes; `count` gets the
// subgroup's passing elements. Called with a constant code, the predicate's switch folds away.
// The count is one butterfly sum of the lanes' bit counts rather than a ballot a step (as
// compact.glsl's kept_bits).
uint kept_bits(uint code, T v[ITEMS], uint first, T a, T b, out uint count) {
    uint kept = 0u;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        bool pass = first + j * gl_SubgroupSize < p.n && xw_predicate(v[j], code, a, b);
        kept |= uint(pass) << j;
    }
    count = sum_lanes(uint(bitCount(kept)));
    return kept;
}

// Loads tile `t`'s elements of this invocation into `v` (0 past the input) and returns their
// pass bits (kept_bits); `count` gets the subgroup's passing elements, `first` the invocation's
// first element. Uniform control flow.
uint tile_kept(uint t, out T v[ITEMS], out uint first, out uint count) {
    first = t * TILE + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        uint i = first + j * gl_SubgroupSize;
        v[j] = i < p.n ? src[i] : T(0);
    }
    T a = xw_pred_operand(p.a_lo, p.a_hi);
    T b = xw_pred_operand(p.b_lo, p.b_hi);
    // The predicate's code is uniform: one branch here instead of one per element.
    uint kept;
    switch (xw_pred_code_bits(p.pred, a, b)) {
    case XW_PRED_EVEN: kept = kept_bits(XW_PRED_EVEN, v, first, a, b, count); break;
    case XW_PRED_ODD: kept = kept_bits(XW_PRED_ODD, v, first, a, b, count); break;
    case XW_PRED_NONZERO: kept = kept_bits(XW_PRED_NONZERO, v, first, a, b, count); break;
#if defined(XW_SUBNORMALS_EXACT) && defined(XW_TYPE_F32)
    // The comparisons by their bits' intervals (xw_pred_code_bits): one loop for the three
    // of two intervals, one for those of one.
    case XW_PRED_GREATER:
    case XW_PRED_LESS:
    case XW_PRED_IN_RANGE: kept = kept_bits(XW_PRED_GREATER, v, first, a, b, count); break;
    case XW_PRED_ONE_GREATER:
    case XW_PRED_ONE_LESS:
    case XW_PRED_ONE_IN_RANGE: kept = kept_bits(XW_PRED_ONE_GREATER, v, first, a, b, count); break;
#else
    case XW_PRED_GREATER: kept = kept_bits(XW_PRED_GREATER, v, first, a, b, count); break;
    case XW_PRED_LESS: kept = kept_bits(XW_PRED_LESS, v, first, a, b, count); break;
    case XW_PRED_IN_RANGE: kept = kept_bits(XW_PRED_IN_RANGE, v, first, a, b, count); break;
#endif
    // No other code reaches a kernel (the host checks the predicate): none passes.
    default: kept = 0u; count = 0u; break;
    }
    return kept;
}

// ONE: publishes tile j's passing count c (by its owner, or by a fallback: the same state);
// `eb` is the launch's epoch times 4 (XW_EPOCHS).
void publish_state(uint j, uint c, uint eb) {
#if defined(XW_EPOCHS)
    atomicStore(states64[j], (uint64_t(eb + 2u) << 32) | uint64_t(c), gl_ScopeDevice,
                gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
#else
    atomicStore(counts[j], STATE_DONE | c, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                gl_SemanticsRelaxed);
#endif
}

// ONE: tile j's state, STATE_DONE | its count once published in this launch, else 0.
uint read_state(uint j, uint eb) {
#if defined(XW_EPOCHS)
    uint64_t w = atomicLoad(states64[j], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                            gl_SemanticsRelaxed);
    return uint(w >> 32) == eb + 2u ? STATE_DONE | uint(w) : 0u;
#else
    return atomicLoad(counts[j], gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
#endif
}

// ONE: tile j's passing count, counted here from the input (the fallback) and published as its
// owner publishes it. sg_counts is free (every invocation has read it). Uniform control flow.
void count_tile(uint j, uint eb) {
    T w[ITEMS];
    uint first;
    uint count;
    tile_kept(j, w, first, count);
    if (subgroupElect()) sg_counts[xw_subgroup_id()] = count;
    barrier();
    if (gl_LocalInvocationIndex == 0u) {
        uint c = 0u;
        for (uint s = 0u; s < xw_num_subgroups(); ++s) c += sg_counts[s];
        publish_state(j, c, eb);
    }
    barrier();  // sg_counts is read before the next round writes it
}

// ONE: tile t's offset among the passing elements (`pre`, the tiles before it) and every tile's
// (`selected`), from the tile states. Uniform control flow.
void one_totals(uint t, uint local, uint eb, out uint pre, out uint selected) {
    uint below = 0u;
    uint all = 0u;
    uint pending = 0u;
    [[unroll]] for (uint q = 0u; q < ONE_TILES; ++q) {
        if (local + q * gl_WorkGroupSize.x < p.tiles) pending |= 1u << q;
    }
    if (local == 0u) s_last = 0u;
    barrier();
    // The invocation's polls of unpublished states over the whole wait (llvmpipe ends an
    // invocation's loops after 65535 iterations in all; see sort_onesweep.comp's look-back).
    uint budget = p.spin;
    for (;;) {
        [[unroll]] for (uint q = 0u; q < ONE_TILES; ++q) {
            uint j = local + q * gl_WorkGroupSize.x;
            if ((pending & (1u << q)) != 0u) {
                for (;;) {
                    uint w = read_state(j, eb);
                    if (w != 0u) {
                        uint c = w & ~STATE_DONE;
                        all += c;
                        if (j < t) below += c;
                        pending &= ~(1u << q);
                        break;
                    }
                    if (budget == 0u) break;
                    --budget;
                }
                if ((pending & (1u << q)) != 0u) atomicMax(s_last, j + 1u);
            }
        }
        barrier();
        uint stuck = s_last;
        barrier();
        if (stuck == 0u) break;
        if (local == 0u) s_last = 0u;
        count_tile(stuck - 1u, eb);
    }
    below = sum_lanes(below);
    all = sum_lanes(all);
    if (subgroupElect()) {
        sg_counts[xw_subgroup_id()] = below;
        sg_all[xw_subgroup_id()] = all;
    }
    barrier();
    pre = 0u;
    selected = 0u;
    for (uint s = 0u; s < xw_num_subgroups(); ++s) {
        pre += sg_counts[s];
        selected += sg_all[s];
    }
}

// ONE, once the tile is scattered (a call of more than one tile): the count of tiles done
// reading the states, the last of which zeroes them again. After the scatter, so that the
// count's fence (every release or acquire at device scope is a sequentially consistent fence on
// NVIDIA's Vulkan driver) is off the scatter's path. XW_EPOCHS: the last ticket's zeroing of
// states past the call's tiles instead. Uniform control flow.
void one_done(uint local) {
#if defined(XW_EPOCHS)
    if (s_scrub != 0u) {
        for (uint i = local; i < SCRUB; i += gl_WorkGroupSize.x) {
            uint at = s_scrub - 1u + i;
            if (at >= p.tiles) states64[at] = uint64_t(0);
        }
    }
    return;
#endif
    if (local == 0u) {
        uint before = atomicAdd(counts[p.tiles], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                gl_SemanticsAcquireRelease);
        s_last = before + 1u == p.tiles ? 1u : 0u;
    }
    barrier();
    if (s_last != 0u) {
        memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
        for (uint i = local; i <= p.tiles; i += gl_WorkGroupSize.x) counts[i] = 0u;
    }
}

// SCAN_SUMS: tile t's offset among the passing elements (`pre`) and every tile's
// (`selected`), from every tile's count (SCATTER), or from every group's sum and the counts of
// the tiles of t's group before t (SCATTER_GROUPS). sg_counts is free once every invocation has
// read it (the barrier first). Uniform control flow.
void sum_counts(uint t, uint local, out uint pre, out uint selected) {
    uint bits = p.group_bits;
    uint groups = (p.tiles + (1u << bits) - 1u) >> bits;
    uint g = t >> bits;
    uint g_first = g << bits;
    uint below = 0u;
    uint all = 0u;
    // Two variants: with single tiles no load waits on the group's test (one loop of both cost
    // Vulkan 1.2 us at 1024 tiles, a uniform branch between two loops a register of the exact
    // f32 variant, NOTES.md version 48).
    if (OP != OP_SCATTER_GROUPS) {
        [[unroll]] for (uint q = 0u; q < SUM_TILES; ++q) {
            uint j = local + q * gl_WorkGroupSize.x;
            uint c = j < p.tiles ? counts[j] : 0u;
            all += c;
            if (j < t) below += c;
        }
    } else {
        [[unroll]] for (uint q = 0u; q < SUM_TILES; ++q) {
            uint j = local + q * gl_WorkGroupSize.x;
            uint c = j < groups ? prefix[j] : 0u;
            all += c;
            if (j < g) below += c;
            if (g_first + j < t) below += counts[g_first + j];
        }
    }
    below = sum_lanes(below);
    all = sum_lanes(all);
    barrier();
    if (subgroupElect()) {
        sg_counts[xw_subgroup_id()] = below;
        sg_all[xw_subgroup_id()] = all;
    }
    barrier();
    pre = 0u;
    selected = 0u;
    for (uint s = 0u; s < xw_num_subgroups(); ++s) {
        pre += sg_counts[s];
        selected += sg_all[s];
    }
}

// GROUPS: the tiles of group g (the workgroup), one after another: each tile's count, and
// their sum. NVIDIA's driver gives this step 83 registers where COUNT has 65, rolled or not
// (NOTES.md version 48). Uniform control flow.
void count_group(uint g, uint local) {
    uint first_tile = g << p.group_bits;
    uint end = min(p.tiles, first_tile + (1u << p.group_bits));
    uint sum = 0u;
    [[dont_unroll]] for (uint u = first_tile; u < end; ++u) {
        T v[ITEMS];
        uint first;
        uint count;
        tile_kept(u, v, first, count);
        if (subgroupElect()) sg_counts[xw_subgroup_id()] = count;
        barrier();
        uint c = 0u;
        for (uint s = 0u; s < xw_num_subgroups(); ++s) c += sg_counts[s];
        barrier();  // sg_counts is read before the next tile writes it
        if (local == 0u) counts[u] = c;
        sum += c;
    }
    if (local == 0u) prefix[g] = sum;
}

void main() {
    uint t = xw_group();
    uint local = gl_LocalInvocationIndex;
    if ((OP == OP_SCATTER || OP == OP_SCATTER_GROUPS) && p.tiles == 0u && t == 0u && local == 0u) {
        total[0] = 0u;
        total[1] = 0u;
    }
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (OP == OP_GROUPS) {
        if ((t << p.group_bits) < p.tiles) count_group(t, local);
        return;
    }
    if (t >= p.tiles) return;
    // ONE of more than one tile (XW_EPOCHS): the ticket and the epoch, in flight during the
    // tile's loads.
    bool states = OP == OP_ONE && p.tiles > 1u;
#if defined(XW_EPOCHS)
    uint64_t ticket = uint64_t(0);
    if (states && local == 0u) ticket = atomicAdd(header64[0], uint64_t(1));
#endif
    T v[ITEMS];
    uint first;
    uint count;
    uint kept = tile_kept(t, v, first, count);
    if (subgroupElect()) sg_counts[xw_subgroup_id()] = count;
#if defined(XW_EPOCHS)
    if (states && local == 0u) {
        uint epoch = uint(ticket >> 32);
        s_eb = epoch << 2u;
        s_scrub = 0u;
        if (uint(ticket) + 1u == p.tiles) {
            // No tile of the launch takes a ticket after this one.
            uint next = epoch + 1u >= p.epoch_wrap ? 0u : epoch + 1u;
            atomicExchange(header64[0], uint64_t(next) << 32);
            uint at = prefix[2];
            prefix[2] = at + SCRUB >= p.epoch_tiles ? 0u : at + SCRUB;
            s_scrub = at + 1u;
        }
    }
#endif
    barrier();
    uint eb = 0u;
#if defined(XW_EPOCHS)
    if (states) eb = s_eb;
#endif
    uint below = 0u;
    uint tile_count = 0u;
    for (uint s = 0u; s < xw_num_subgroups(); ++s) {
        uint c = sg_counts[s];
        if (s < gl_SubgroupID) below += c;
        tile_count += c;
    }
    if (OP == OP_COUNT) {
        if (local == 0u) counts[t] = tile_count;
        return;
    }
    if (states && local == 0u) publish_state(t, tile_count, eb);
    // The element of step j sits at place q = run + j * gl_SubgroupSize + lane of the tile,
    // with `at` passing elements of the tile before it.
    uint run = gl_SubgroupID * gl_SubgroupSize * ITEMS;
    uint at = below;
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        bool pass = ((kept >> j) & 1u) != 0u;
        uvec4 ballot = subgroupBallot(pass);
        uint r = at + ballot_rank(ballot);
        uint q = run + j * gl_SubgroupSize + gl_SubgroupInvocationID;
        if (first + j * gl_SubgroupSize < p.n) {
            stage[min(pass ? r : tile_count + q - r, TILE - 1u)] = v[j];
        }
        at += ballot_count(ballot);
    }
    uint pre;
    uint selected;
    if (OP == OP_ONE && !states) {
        pre = 0u;
        selected = tile_count;
    } else if (OP == OP_ONE) {
        // Every invocation has read sg_counts above (the ranking's loop lies between).
        one_totals(t, local, eb, pre, selected);
    } else if (OP == OP_SCATTER_GROUPS || p.scan != SCAN_LAUNCH) {
        sum_counts(t, local, pre, selected);
    } else {
        pre = prefix[t];
        selected = prefix[p.tiles - 1u] + counts[p.tiles - 1u];
    }
    if (t == 0u && local == 0u) {
        total[0] = selected;
        total[1] = 0u;
    }
    barrier();
    uint tile_first = t * TILE;
    uint len = min(TILE, p.n - tile_first);
    // The tile's failing elements start after every passing element and the failing elements
    // of the tiles before it (tile_first - pre of them).
    uint fail_first = selected + tile_first - pre;
    for (uint i = local; i < len; i += gl_WorkGroupSize.x) {
        dst[i < tile_count ? pre + i : fail_first + (i - tile_count)] = stage[i];
    }
    if (states) one_done(local);
}
