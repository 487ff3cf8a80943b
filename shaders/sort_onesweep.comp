#version 450
// One digit pass of the radix sort (Onesweep: Adinets & Merrill 2022); the twin of
// cuda/sort_onesweep.cu, modelled by src/cpu/sort.rs. Each workgroup sorts one tile of
// BLOCK * ITEMS keys by the pass's digit and scatters them to their global places; the
// global place of each digit's keys comes from decoupled look-back over the tiles before it.
//
// Tiles: a workgroup takes a ticket (the pass's tile counter), so tiles are numbered in the
// order workgroups start and a tile's predecessors have all started. Subgroup s owns the s-th
// run of gl_SubgroupSize * ITEMS keys of the tile and reads it in ITEMS coalesced steps (step i:
// lane l reads key i * gl_SubgroupSize + l of the run), so the order in which a subgroup ranks
// its keys (step by step, lane by lane) is their input order. Keys past the end of the input
// become the largest mapped key: they rank last in the last digit's bucket and are never
// stored.
//
// Early counts and ranking (stable, any subgroup size): each subgroup first counts its keys'
// digits in shared memory (one atomic add per key); per digit the subgroups' counts sum to the
// tile's count, which the tile publishes at once (see the look-back), and a scan over the digits
// gives where each digit's keys start in the tile; each subgroup's running offset of a digit
// starts there plus the earlier subgroups' counts of it. Then per step, eight ballots (one per
// digit bit) give each lane the lanes holding its digit (AND of the ballots, or of their
// complements); the highest of them moves the subgroup's offset of the digit on by their number
// (an atomic add, which returns the offset before) and every lane's place in the tile is that
// offset plus the matching lanes below it (subgroupBallotInclusiveBitCount less one: any width
// of ballot). Equal digits keep their input order throughout, so every pass is stable.
// A workgroup has at most HIST_SG subgroups (src/sort.rs sizes the workgroup by the smallest
// subgroup size the device may run), so the subgroup counts take HIST_SG * RADIX words of
// shared memory, beside the staging area of the sorted tile.
//
// Look-back: each tile publishes its count of every digit as soon as it knows them (flag 1;
// tile 0 publishes inclusive prefixes right away: the pass's global digit offsets, an exclusive
// scan of the pass's histogram row, plus its counts). Invocation b then reads digit b's states
// (and those of digits b + BLOCK, ... where the workgroup is narrower than the radix) of tiles
// k - 1, k - 2, ... adding their values until an inclusive prefix, and publishes the tile's
// own inclusive prefix. The last tile publishes nothing: no tile reads it, and it keeps every
// value below 2^30 for n < 2^30.
//
// No deadlock on any conformant device: Vulkan promises no forward progress between
// workgroups, so an invocation that has polled unpublished states `spin` times in this
// look-back stops at the next one it finds; the workgroup then counts the digits of the
// highest such tile itself from the pass's input and publishes them (the very values their
// owner publishes; tile 0's as its inclusive prefixes) and everyone polls on. Each round
// publishes one more tile, so the look-back ends after at most k rounds.
//
// Tile states: two regions of `tiles` rows of RADIX words in the work buffer, alternating
// between passes: a tile clears its row of the region the next pass uses (the previous pass
// used it and has finished), so only the first pass's region needs a clearing launch.
//
// Scatter: each key goes to shared memory at its place in the sorted tile; then invocation t
// takes places t, t + BLOCK, ... in turn, so that keys of one digit go out as runs of
// consecutive stores. Where the staging area holds half the tile's keys (STAGE_WORDS, keys
// only: ROUNDS = 2; src/sort.rs chooses it for 64-bit keys on Vulkan, where a workgroup then
// needs 31 KiB of shared memory instead of 47 and NVIDIA's driver, which gives a
// multiprocessor about 100 KiB, runs three workgroups instead of two), the keys placed in the
// first half are staged as they are ranked (the others write a spare place of their invocation,
// never read: a select, so the subgroup never diverges there), scattered after the look-back, and
// then the second half's keys, read again from the pass's input (the tile's own keys, just
// read), take the staging area at their places less half the tile. Values (pairs, or the
// key's input index for argsort) are loaded once every key has left the staging area, go to
// their keys' places there, and leave for their keys' destinations: the staging area needs the
// wider of a key and a value per place, not both, so pairs get the tiles keys get.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"
#include "sort_common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 16u;        // keys per invocation
layout(constant_id = 2) const uint VALUE_WORDS = 0u;   // 0 keys only; 1 or 2 words per value
layout(constant_id = 3) const uint HIST_SG = 8u;       // most subgroups a workgroup may have
layout(constant_id = 4) const uint STAGE_WORDS = 8192u;  // shared words for the sorted tile
// Constant 5 (MATCH_ANY) chooses __match_any_sync over ballots in the CUDA twin, constant 6
// (BLOCK) is the CUDA twin's block size and constant 7 (MIN_BLOCKS) its launch bounds; here the
// workgroup size is constant 0.
// Words of a ballot that can hold lanes: 1 where subgroups have at most 32 lanes (the ranking
// then works on one word instead of four), 4 up to 128 lanes.
layout(constant_id = 8) const uint BALLOT_WORDS = 4u;
// How keys map to sortable bits (KIND_*) and the order: 2 * kind + descending.
layout(constant_id = 9) const uint KEY_ORDER = 0u;
// 1: the whole sort of a single tile in this one launch (every pass; see sort_whole), 0: one
// digit pass.
layout(constant_id = 10) const uint WHOLE = 0u;
const uint KEY_KIND = KEY_ORDER / 2u;
const bool DESCENDING = (KEY_ORDER & 1u) != 0u;

// Bits of `flags`.
const uint FLAG_INDEX_VALUES = 1u;  // the values are the keys' input indices (argsort's first pass)
const uint FLAG_WRITE_KEYS = 2u;    // store the sorted keys (argsort's last pass does not)

layout(std430, binding = 0) readonly buffer KeysIn { KEY keys_in[]; };
layout(std430, binding = 1) writeonly buffer KeysOut { KEY keys_out[]; };
layout(std430, binding = 2) readonly buffer ValsIn { uint vals_in[]; };
layout(std430, binding = 3) writeonly buffer ValsOut { uint vals_out[]; };
// The same two bindings as values of two words (VALUE_WORDS = 2): one 8-byte load or store a
// value, not two of 4 bytes (H200, u64 keys with u64 values: 0.91-0.92x the time).
layout(std430, binding = 2) readonly buffer ValsIn2 { uvec2 vals_in2[]; };
layout(std430, binding = 3) writeonly buffer ValsOut2 { uvec2 vals_out2[]; };
layout(std430, binding = 4) coherent buffer Work { uint work[]; };
layout(push_constant) uniform Params {
    uint n;            // keys
    uint tiles;        // tiles of the pass
    uint pass;         // the pass: its tile counter and histogram row
    uint shift;        // lowest bit of the pass's digit in the mapped key
    uint digit_bits;   // width of the digit, 1 .. 8
    uint state_cur;    // first word of this pass's tile states
    uint state_next;   // first word of the next pass's tile states, cleared here
    uint clear_next;   // nonzero: clear this tile's row of the next pass's states
    uint spin;         // polls of unpublished states per invocation before counting tiles here
    uint flags;        // FLAG_INDEX_VALUES | FLAG_WRITE_KEYS
    uint passes;       // WHOLE: the passes of the bit range, from shift on
    uint end_bit;      // WHOLE: the bit range's end
} p;

const uint BLOCK = gl_WorkGroupSize.x;
const uint TILE = BLOCK * ITEMS;
// Places of the sorted tile the staging area holds at once, and the rounds that stage the
// tile (1, or 2 for keys where the host halves STAGE_WORDS; its places then a multiple of
// BLOCK), each taking PLACES / BLOCK of an invocation's scatter steps.
const uint PLACES = STAGE_WORDS / KEY_WORDS;
const uint ROUNDS = (TILE + PLACES - 1u) / PLACES;
const uint ROUND_STEPS = PLACES / BLOCK;
// The look-back's two per-digit arrays (each digit's next predecessor to read, plus one, 0:
// done; the digit counts of a tile counted here, the fallback) follow the staging area in
// s_stage, at NEXT and FB: they are dead while the tile is ranked, so where ROUNDS > 1 they
// give each invocation a spare place of its own (PLACES + local), which the ranking writes
// for keys of the second half and nobody reads (see the scatter): the host takes two rounds
// only where KEY_WORDS * BLOCK <= LOOK_WORDS.
const uint NEXT = STAGE_WORDS;
const uint FB = STAGE_WORDS + RADIX;
const uint LOOK_WORDS = 2u * RADIX;
// Digits per invocation where the workgroup is narrower than the radix.
const uint DPT = (RADIX + BLOCK - 1u) / BLOCK;

// Per subgroup and digit: its count, then its place; then a spare word per lane (the ranking).
shared uint s_offsets[HIST_SG * RADIX + 32u * BALLOT_WORDS];
// The sorted tile (its keys, later its values), then the look-back's arrays (NEXT, FB).
shared uint s_stage[STAGE_WORDS + LOOK_WORDS];
shared uint s_count[RADIX];        // the tile's count of each digit
shared uint s_scan[2][RADIX];      // [0] where each digit starts in the tile; [1] global offsets
shared uint s_acc[RADIX];          // per digit: the tile's exclusive global prefix, then its base
shared uint s_sgsum[HIST_SG];
shared uint s_tile;
shared uint s_stuck;
// The pass's shift again, read back for the ranking: a value the compiler cannot equate with
// the push constant, so it recomputes each key's digit and count address there rather than
// keeping the early counts' ones live across the barriers between (24 registers of the CUDA
// twin).
shared uint s_shift;

// Publishes a tile state word. A relaxed store, not an atomicMax: every tile writes only its own
// words, and where a fallback's aggregate lands after its owner's inclusive prefix, readers
// still read a true value of that tile (they only walk further back), so no read-modify-write
// (two per digit per tile) is needed.
void publish(uint at, uint w) {
    atomicStore(work[at], w, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
}

// Exclusive prefix sums over the digits of s_scan[which], in place; every invocation calls it.
// Invocation t sums digits t * DPT .. t * DPT + DPT - 1; subgroups scan their sums and add the
// totals of the subgroups before them.
void scan_digits(uint which, uint local) {
    uint first = local * DPT;
    uint sum = 0u;
    for (uint q = 0u; q < DPT; ++q) {
        if (first + q < RADIX) sum += s_scan[which][first + q];
    }
    uint incl = subgroupInclusiveAdd(sum);
    uint sg = min(xw_subgroup_id(), HIST_SG - 1u);
    if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u) s_sgsum[sg] = incl;
    barrier();
    uint run = incl - sum;
    for (uint s = 0u; s < sg; ++s) run += s_sgsum[s];
    for (uint q = 0u; q < DPT; ++q) {
        if (first + q < RADIX) {
            uint c = s_scan[which][first + q];
            s_scan[which][first + q] = run;
            run += c;
        }
    }
    barrier();
}

// s_scan[0] (each digit's count) becomes where each digit starts in the tile, and s_offsets
// (each subgroup's count of each digit) where each subgroup's keys of the digit start: the
// digit's start, then the subgroups before. Uniform control flow.
void subgroup_places(uint local) {
    scan_digits(0u, local);
    uint groups = min(gl_NumSubgroups, HIST_SG);
    for (uint b = local; b < RADIX; b += BLOCK) {
        uint at = s_scan[0][b];
        for (uint s = 0u; s < groups; ++s) {
            uint c = s_offsets[s * RADIX + b];
            s_offsets[s * RADIX + b] = at;
            at += c;
        }
    }
    barrier();
}

// The place in the tile of this invocation's key with digit `d`, in this step: where the
// subgroup's next key of digit `d` goes (s_offsets[offsets + d], the subgroup's running offset
// of the digit) plus the invocations below with the same digit. The highest invocation of the
// digit moves the offset on by their number, which is its own count of matching invocations
// at or below it (one bit count serves both), with an atomic add, so the next step's highest
// invocation (maybe another) sees it without a barrier. Every invocation runs the atomic (the
// others on a spare word of their own, past the subgroups' offsets), so the subgroup never
// diverges: after a divergent branch NVIDIA's driver recomputes the active invocations for
// each ballot with a MATCH.ANY (an instruction costing several ballots) before every step.
// Uniform control flow, all invocations of the subgroup active (the workgroup is a multiple
// of the subgroup size and runs full subgroups): the lanes the ballots AND over start as all
// of the subgroup's.
uint rank_in_subgroup(uint d, uint offsets) {
    // A fixed eight ballots: a narrower last digit has zeros above, where all invocations agree.
    uint upto;
    uint leader;
    if (BALLOT_WORDS == 1u) {
        uint match = gl_SubgroupSize >= 32u ? ~0u : (1u << gl_SubgroupSize) - 1u;
        [[unroll]] for (uint bit = 0u; bit < 8u; ++bit) {
            bool set = (d & (1u << bit)) != 0u;
            uint b = subgroupBallot(set).x;
            match &= set ? b : ~b;
        }
        upto = bitCount(match & gl_SubgroupLeMask.x);
        leader = uint(findMSB(match));
    } else {
        uvec4 match;
        [[unroll]] for (uint w = 0u; w < 4u; ++w) {
            uint lanes = uint(clamp(int(gl_SubgroupSize) - 32 * int(w), 0, 32));
            match[w] = lanes >= 32u ? ~0u : (1u << lanes) - 1u;
        }
        [[unroll]] for (uint bit = 0u; bit < 8u; ++bit) {
            bool set = (d & (1u << bit)) != 0u;
            uvec4 b = subgroupBallot(set);
            match &= set ? b : ~b;
        }
        upto = subgroupBallotInclusiveBitCount(match);
        leader = subgroupBallotFindMSB(match);
    }
    bool lead = gl_SubgroupInvocationID == leader;
    uint at = lead ? offsets + d : HIST_SG * RADIX + gl_SubgroupInvocationID;
    uint old = atomicAdd(s_offsets[at], upto);
    return subgroupShuffle(old, leader) + upto - 1u;
}

// Counts the digits of tile j (not the last) from the pass's input and publishes them: as
// aggregates, or for tile 0 as inclusive prefixes. Uniform control flow.
void count_tile(uint j, uint local) {
    for (uint b = local; b < RADIX; b += BLOCK) {
        s_stage[FB + b] = 0u;
        if (j == 0u) s_scan[1][b] = work[XW_SORT_HIST + p.pass * RADIX + b];
    }
    barrier();
    uint mask = (1u << p.digit_bits) - 1u;
    uint base = j * TILE;
    for (uint x = local; x < TILE; x += BLOCK) {
        if (base + x < p.n) {
            KEY m = xw_sort_map(keys_in[base + x], KEY_KIND, DESCENDING);
            atomicAdd(s_stage[FB + xw_digit(m, p.shift, mask)], 1u);
        }
    }
    if (j == 0u) scan_digits(1u, local);
    barrier();
    for (uint b = local; b < RADIX; b += BLOCK) {
        uint w = j == 0u ? FLAG_INCLUSIVE | (s_scan[1][b] + s_stage[FB + b]) : FLAG_AGGREGATE | s_stage[FB + b];
        publish(p.state_cur + j * RADIX + b, w);
    }
    barrier();
}

// Tile k > 0: s_acc[b] becomes the global place of the tile's first key of digit b; publishes
// the tile's inclusive prefixes unless it is the last tile. Uniform control flow.
void look_back(uint k, bool last, uint local) {
    for (uint b = local; b < RADIX; b += BLOCK) {
        s_acc[b] = 0u;
        s_stage[NEXT + b] = k;
    }
    if (local == 0u) s_stuck = 0u;
    barrier();
    // The invocation's polls of unpublished states over the whole look-back, not per
    // predecessor: llvmpipe ends every loop of an invocation once all its loops together
    // have iterated 65535 times, and a per-predecessor wait of several digits' predecessors
    // could reach that.
    uint budget = p.spin;
    for (;;) {
        for (uint b = local; b < RADIX; b += BLOCK) {
            uint next = s_stage[NEXT + b];
            uint acc = s_acc[b];
            while (next != 0u) {
                uint w = atomicLoad(work[p.state_cur + (next - 1u) * RADIX + b], gl_ScopeDevice,
                                    gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
                if (w == 0u) {
                    if (budget == 0u) break;
                    --budget;
                } else {
                    acc += w & VALUE_MASK;
                    next = (w & FLAG_INCLUSIVE) != 0u ? 0u : next - 1u;
                }
            }
            s_acc[b] = acc;
            s_stage[NEXT + b] = next;
            if (next != 0u) atomicMax(s_stuck, next);
        }
        barrier();
        uint stuck = s_stuck;
        barrier();
        if (stuck == 0u) break;
        if (local == 0u) s_stuck = 0u;
        count_tile(stuck - 1u, local);
    }
    if (!last) {
        for (uint b = local; b < RADIX; b += BLOCK) {
            publish(p.state_cur + k * RADIX + b, FLAG_INCLUSIVE | (s_acc[b] + s_count[b]));
        }
    }
}

// Staging in shared memory: `words` words per place.
void stage_key(uint at, KEY m) {
#if defined(XW_TYPE_B64)
    s_stage[2u * at] = m.x;
    s_stage[2u * at + 1u] = m.y;
#else
    s_stage[at] = m;
#endif
}

KEY staged_key(uint at) {
#if defined(XW_TYPE_B64)
    return uvec2(s_stage[2u * at], s_stage[2u * at + 1u]);
#else
    return s_stage[at];
#endif
}

// The value of a key of this invocation (input place `src`; `inside`: the place holds one of
// the input's keys), or 0 past the input.
uint value_word(bool inside, uint src, uint w, bool index_values) {
    if (!inside) return 0u;
    if (index_values) return w == 0u ? src : 0u;
    return vals_in[src * VALUE_WORDS + w];
}

// How many of an invocation's places first, first + stride, ... lie below `valid`: the bound a
// partial tile's loops compare their step with (no condition kept per step).
uint steps_below(uint valid, uint first, uint stride) {
    return valid > first ? (valid - first + stride - 1u) / stride : 0u;
}

// Pairs keep each key's place in the tile (below 2^16: TILE <= 1024 * 32) two to a word, and
// each sorted place's digit four to a word, until the values follow (the CUDA twin: 64
// registers for 20 keys where whole words took 80).
const uint RANK_WORDS = (ITEMS + 1u) / 2u;
// The ranking's steps in flight: step i's digit waits for step i - RANK_LAG's place (see the
// digit pass's ranking).
const uint RANK_LAG = 2u;
const uint DIGIT_WORDS = (ITEMS + 3u) / 4u;

// Places local, local + BLOCK, ... of the sorted tile (the first `valid`; `full`: all) that
// round `round` staged go to s_acc[d] + place, d the key's digit, where `write_keys`; pairs keep
// each place's digit in `digits` (four to a word) for its value. Called with literal `full`,
// `write_keys` and `round`.
void scatter_keys(bool full, bool write_keys, uint valid, uint local, uint mask, uint round,
                  inout uint digits[DIGIT_WORDS]) {
    uint steps = full ? ITEMS : steps_below(valid, local, BLOCK);
    [[unroll]] for (uint r = round * ROUND_STEPS; r < min(ITEMS, (round + 1u) * ROUND_STEPS); ++r) {
        uint at = local + r * BLOCK;
        if (full || r < steps) {
            KEY m = staged_key(at - round * PLACES);
            uint d = xw_digit(m, p.shift, mask);
            if (VALUE_WORDS != 0u) digits[r / 4u] |= d << (8u * (r % 4u));
            if (write_keys) keys_out[s_acc[d] + at] = xw_sort_unmap(m, KEY_KIND, DESCENDING);
        }
    }
}

// The values of this invocation's keys (input places first, first + subgroup size, ...; of the
// tile's places `place`, `place` + subgroup size, ..., the first `valid` of the tile real) go
// to their keys' places in the staging area (`ranks`, two to a word).
void stage_values(bool full, uint valid, uint place, uint first, uint ranks[RANK_WORDS],
                  bool index_values) {
    uint steps = full ? ITEMS : steps_below(valid, place, gl_SubgroupSize);
    [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
        uint at = (ranks[i / 2u] >> (16u * (i % 2u))) & 0xffffu;
        uint src = first + i * gl_SubgroupSize;
        if (VALUE_WORDS == 2u) {
            uvec2 v = uvec2(0u);
            if (full || i < steps) v = index_values ? uvec2(src, 0u) : vals_in2[src];
            s_stage[2u * at] = v.x;
            s_stage[2u * at + 1u] = v.y;
            continue;
        }
        [[unroll]] for (uint w = 0u; w < VALUE_WORDS; ++w) {
            s_stage[at * VALUE_WORDS + w] = value_word(full || i < steps, src, w, index_values);
        }
    }
}

// The staged values of the places scatter_keys wrote go to the same destinations (their
// digits' bases in s_acc, plus the place).
void scatter_values(bool full, uint valid, uint local, uint digits[DIGIT_WORDS]) {
    uint steps = full ? ITEMS : steps_below(valid, local, BLOCK);
    [[unroll]] for (uint r = 0u; r < ITEMS; ++r) {
        uint at = local + r * BLOCK;
        if (full || r < steps) {
            uint dest = s_acc[(digits[r / 4u] >> (8u * (r % 4u))) & 0xffu] + at;
            if (VALUE_WORDS == 2u) {
                vals_out2[dest] = uvec2(s_stage[2u * at], s_stage[2u * at + 1u]);
                continue;
            }
            [[unroll]] for (uint w = 0u; w < VALUE_WORDS; ++w) {
                vals_out[dest * VALUE_WORDS + w] = s_stage[at * VALUE_WORDS + w];
            }
        }
    }
}

// The whole sort in one workgroup (WHOLE, where one tile holds every key): every pass of the bit
// range ranks the tile as a digit pass does (early counts, the scan over digits, the ballot
// ranking into the staging area) and takes the keys back from the staging area in ranked
// order: invocation step i, lane l of subgroup s takes place s * gl_SubgroupSize * ITEMS +
// i * gl_SubgroupSize + l, the order in which the next pass ranks, so equal digits keep the
// previous passes' order and the sort is stable as the digit passes make it. Padding keys (the
// largest mapped key) stay at the places past the input. No histogram launch, no look-back:
// one launch for a sort of up to a tile of keys; each pass writes its digit's histogram row
// (the padding left out), as the histogram launch would. Values follow their keys through the
// staging area after them. Uniform control flow.
// The digit of a key in sort_whole. Pairs of 64-bit keys take it by 32-bit shifts even where
// the device has shaderInt64: with the 64-bit shift NVIDIA's driver ran the one-launch sort of
// 2^10-2^12 u64 pairs 1.08-1.14x slower (H200, NOTES.md version 73), its keys 0.74-0.97x.
#if defined(XW_BITS_INT64)
uint whole_digit(KEY m, uint shift, uint mask) {
    if (VALUE_WORDS != 0u) return xw_digit_words(m, shift, mask);
    return xw_digit(m, shift, mask);
}
#else
#define whole_digit xw_digit
#endif

void sort_whole(uint local) {
    uint sg = min(xw_subgroup_id(), HIST_SG - 1u);
    uint lane = gl_SubgroupInvocationID;
    uint run = sg * gl_SubgroupSize * ITEMS;
    uint offsets = sg * RADIX;
    uint valid = p.n;
    uint groups = min(gl_NumSubgroups, HIST_SG);
    bool index_values = (p.flags & FLAG_INDEX_VALUES) != 0u;
    KEY keys[ITEMS];
    uint v[ITEMS * 2u];
    [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
        uint pos = run + i * gl_SubgroupSize + lane;
        keys[i] = pos < valid ? xw_sort_map(keys_in[pos], KEY_KIND, DESCENDING) : KEY_MAX;
        [[unroll]] for (uint w = 0u; w < VALUE_WORDS; ++w) {
            v[i * 2u + w] = value_word(pos < valid, pos, w, index_values);
        }
    }
    for (uint pass = 0u; pass < p.passes; ++pass) {
        uint shift = p.shift + 8u * pass;
        uint mask = xw_digit_mask(shift, p.end_bit);
        for (uint i = local; i < HIST_SG * RADIX; i += BLOCK) s_offsets[i] = 0u;
        barrier();
        [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
            atomicAdd(s_offsets[offsets + whole_digit(keys[i], shift, mask)], 1u);
        }
        barrier();
        for (uint b = local; b < RADIX; b += BLOCK) {
            uint sum = 0u;
            for (uint s = 0u; s < groups; ++s) sum += s_offsets[s * RADIX + b];
            s_scan[0][b] = sum;
            work[XW_SORT_HIST + pass * RADIX + b] = sum - (b == mask ? TILE - valid : 0u);
        }
        barrier();
        subgroup_places(local);
        uint ranks[ITEMS];
        uint after[RANK_LAG];  // see the digit pass's ranking
        [[unroll]] for (uint j = 0u; j < RANK_LAG; ++j) after[j] = 0u;
        [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
            uint d = whole_digit(keys[i], shift, mask) | after[i % RANK_LAG];
            ranks[i] = rank_in_subgroup(d, offsets);
            after[i % RANK_LAG] = ranks[i] >> 16u;
            stage_key(ranks[i], keys[i]);
        }
        barrier();
        [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
            keys[i] = staged_key(run + i * gl_SubgroupSize + lane);
        }
        if (VALUE_WORDS != 0u) {
            barrier();
            [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
                [[unroll]] for (uint w = 0u; w < VALUE_WORDS; ++w) {
                    s_stage[ranks[i] * VALUE_WORDS + w] = v[i * 2u + w];
                }
            }
            barrier();
            [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
                uint at = run + i * gl_SubgroupSize + lane;
                [[unroll]] for (uint w = 0u; w < VALUE_WORDS; ++w) {
                    v[i * 2u + w] = s_stage[at * VALUE_WORDS + w];
                }
            }
        }
        barrier();
    }
    bool write_keys = (p.flags & FLAG_WRITE_KEYS) != 0u;
    [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
        uint pos = run + i * gl_SubgroupSize + lane;
        if (pos < valid) {
            if (write_keys) keys_out[pos] = xw_sort_unmap(keys[i], KEY_KIND, DESCENDING);
            [[unroll]] for (uint w = 0u; w < VALUE_WORDS; ++w) {
                vals_out[pos * VALUE_WORDS + w] = v[i * 2u + w];
            }
        }
    }
}

void main() {
    uint local = xw_local();
    if (xw_group() >= p.tiles) return;
    if (WHOLE != 0u) {
        sort_whole(local);
        return;
    }
    if (local == 0u) {
        s_tile = atomicAdd(work[XW_SORT_COUNTERS + p.pass], 1u);
        s_shift = p.shift;
    }
    for (uint i = local; i < HIST_SG * RADIX; i += BLOCK) s_offsets[i] = 0u;
    barrier();
    uint k = s_tile;
    bool last = k + 1u == p.tiles;
    uint tile_base = k * TILE;
    uint valid = min(TILE, p.n - tile_base);
    uint sg = min(xw_subgroup_id(), HIST_SG - 1u);
    uint lane = gl_SubgroupInvocationID;
    uint run = sg * gl_SubgroupSize * ITEMS;
    uint offsets = sg * RADIX;
    uint mask = (1u << p.digit_bits) - 1u;

    if (p.clear_next != 0u) {
        for (uint b = local; b < RADIX; b += BLOCK) work[p.state_next + k * RADIX + b] = 0u;
    }

    KEY keys[ITEMS];
    if (valid == TILE) {
        // A whole tile (all but maybe the last): no bounds.
        uint first = tile_base + run + lane;
        [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
            keys[i] = xw_sort_map(keys_in[first + i * gl_SubgroupSize], KEY_KIND, DESCENDING);
        }
    } else {
        [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
            uint pos = run + i * gl_SubgroupSize + lane;
            keys[i] = pos < valid ? xw_sort_map(keys_in[tile_base + pos], KEY_KIND, DESCENDING)
                                  : KEY_MAX;
        }
    }
    // Early counts: each subgroup counts its keys' digits, so the tile's counts are published
    // before the ranking, long before any successor's look-back needs them.
    [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
        atomicAdd(s_offsets[offsets + xw_digit(keys[i], p.shift, mask)], 1u);
    }
    barrier();
    uint groups = min(gl_NumSubgroups, HIST_SG);
    for (uint b = local; b < RADIX; b += BLOCK) {
        uint sum = 0u;
        for (uint s = 0u; s < groups; ++s) sum += s_offsets[s * RADIX + b];
        s_count[b] = sum;
        s_scan[0][b] = sum;
        if (k == 0u) {
            s_scan[1][b] = work[XW_SORT_HIST + p.pass * RADIX + b];
        } else if (!last) {
            publish(p.state_cur + k * RADIX + b, FLAG_AGGREGATE | sum);
        }
    }
    barrier();
    if (k == 0u) {
        scan_digits(1u, local);
        for (uint b = local; b < RADIX; b += BLOCK) {
            uint offset = s_scan[1][b];
            if (!last) publish(p.state_cur + b, FLAG_INCLUSIVE | (offset + s_count[b]));
            s_acc[b] = offset;
        }
    }
    subgroup_places(local);

    // Each key goes to its place in the sorted tile as soon as it is known; pairs keep the
    // places for their values, which are loaded once the keys have left (below).
    uint ranks[RANK_WORDS];
    [[unroll]] for (uint j = 0u; j < RANK_WORDS; ++j) ranks[j] = 0u;
    uint shift = s_shift;
    // Each step's digit is ORed with the step before's place shifted down by 16 bits: zero (a
    // place in the tile is below 2^16), but not to the compiler, so the steps' ballots follow
    // one another; without it NVIDIA's driver forms the ballots of all ITEMS steps up front
    // (about 200 registers).
    uint after[RANK_LAG];
    [[unroll]] for (uint j = 0u; j < RANK_LAG; ++j) after[j] = 0u;
    [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
        uint d = xw_digit(keys[i], shift, mask) | after[i % RANK_LAG];
        uint at = rank_in_subgroup(d, offsets);
        after[i % RANK_LAG] = at >> 16u;
        stage_key(ROUNDS == 1u || at < PLACES ? at : PLACES + local, keys[i]);
        if (VALUE_WORDS != 0u || ROUNDS > 1u) ranks[i / 2u] |= at << (16u * (i % 2u));
    }
    // The spare places (the look-back's arrays) written by any invocation above.
    if (ROUNDS > 1u) barrier();
    if (k > 0u) look_back(k, last, local);
    for (uint b = local; b < RADIX; b += BLOCK) s_acc[b] -= s_scan[0][b];
    barrier();

    // Place t of the sorted tile, of digit d, goes to s_acc[d] + t; pairs keep each place's
    // digit for its value. Whole tiles and the keys' writing get copies of their own (literal
    // arguments, inlined): NVIDIA's driver keeps a loop's per-step conditions as branches,
    // one load and store after the other, where a copy without them overlaps them.
    bool write_keys = (p.flags & FLAG_WRITE_KEYS) != 0u;
    bool full = valid == TILE;
    uint digits[DIGIT_WORDS];
    [[unroll]] for (uint j = 0u; j < DIGIT_WORDS; ++j) digits[j] = 0u;
    if (full && (VALUE_WORDS == 0u || write_keys)) {
        scatter_keys(true, true, valid, local, mask, 0u, digits);
    } else if (full) {
        scatter_keys(true, false, valid, local, mask, 0u, digits);
    } else {
        scatter_keys(false, write_keys, valid, local, mask, 0u, digits);
    }
    if (ROUNDS > 1u) {
        // The second half of the sorted tile (keys only): its keys read again, staged at their
        // places less PLACES once the first half has left.
        barrier();
        uint first = tile_base + run + lane;
        [[unroll]] for (uint i = 0u; i < ITEMS; ++i) {
            uint at = (ranks[i / 2u] >> (16u * (i % 2u))) & 0xffffu;
            if (at >= PLACES && (full || run + i * gl_SubgroupSize + lane < valid)) {
                stage_key(at - PLACES,
                          xw_sort_map(keys_in[first + i * gl_SubgroupSize], KEY_KIND, DESCENDING));
            }
        }
        barrier();
        if (full) {
            scatter_keys(true, true, valid, local, mask, 1u, digits);
        } else {
            scatter_keys(false, write_keys, valid, local, mask, 1u, digits);
        }
    }
    if (VALUE_WORDS != 0u) {
        // The values take the keys' places in the staging area once every key has left it:
        // loaded as the keys were (step i, lane l: place run + i * subgroup size + l), staged
        // at their keys' places, then written out like them. The tile's base is read back
        // here, so that the values' loads cannot move up to the keys' (a register each held
        // through the ranking).
        barrier();
        bool index_values = (p.flags & FLAG_INDEX_VALUES) != 0u;
        uint first = s_tile * TILE + run + lane;
        if (full) {
            stage_values(true, valid, run + lane, first, ranks, index_values);
        } else {
            stage_values(false, valid, run + lane, first, ranks, index_values);
        }
        barrier();
        if (full) {
            scatter_values(true, valid, local, digits);
        } else {
            scatter_values(false, valid, local, digits);
        }
    }
}
