#version 450
// Top-k by radix selection; the twin of cuda/top_k.cu, modelled by src/cpu/top_k.rs. Keys are
// handled as the radix sort's mapped keys (sort_common.glsl: unsigned bit patterns whose order
// is the wanted one; descending inverts them), so the k wanted keys are always the k smallest
// mapped keys, ties taken by the lower input index. OP selects one step of the plan in
// src/top_k.rs:
//   HIST     radix pass d, most significant digit first: every key whose mapped bits above the
//            digit equal the threshold found so far (mask: those bits) counts its digit in a
//            histogram in shared memory, in PARTS copies of each bin (invocation i adds to copy
//            i % PARTS, so equal keys spread over several words); the workgroup adds its
//            nonzero bins to state's histogram. After a filter it reads the candidates' buffer;
//   SELECT   one workgroup, invocation d holding bin d: the digit where the remaining count is
//            reached (a workgroup scan of the bins); the keys of the smaller digits are taken
//            (`less` grows by them), the threshold gets the digit, and the histogram is zeroed
//            for the next pass. With `filtering`, it also decides the filter: once, where the
//            digit's bucket fits the buffer (`cap` keys), it records the bucket's size (S_M) and
//            the keys below it (S_BASE). After the last pass the threshold T is the k-th
//            smallest mapped key, `less` counts the keys below it and `rest` the keys equal to it
//            still to take;
//   COUNT    per tile (workgroup t takes `span` tiles in turn), its keys below T and equal to
//            T; with `filtering`, its keys below the bucket and in it (the bits in the mask: at
//            and above the digit), and nothing unless SELECT chose to filter;
//   SCAN     one workgroup: the exclusive sums of both counts over the workgroups, in order;
//   SCATTER  per tile, the keys below T at (S_BASE + below before the tile) + rank, the keys
//            equal to T at less + (equal before the tile) + rank while that is below k, each
//            with its value (pairs) or input index: the k candidates, each class in input order
//            (keys of different classes differ, so the stable sort after gives ties in input
//            order). With `filtering`, the keys below the bucket go to the candidates and those
//            in it to the buffer, each with what it carries, in input order. After a filter the
//            last COUNT, SCAN and SCATTER read only the buffer.
//   CLEAR    one workgroup: the state starts (threshold 0, k still to take, none below, no
//            buffer, the histogram zero).
// The host then sorts the k candidates by key with the radix sort (stable: equal keys keep the
// candidates' order, which is input order).
//
// Tiles for COUNT and SCATTER are laid out as in compact.glsl and partition.comp: subgroup s
// owns the s-th run of gl_SubgroupSize * ITEMS consecutive keys, read in ITEMS coalesced steps,
// ranked by one ballot per step and class where the step has a key of either class.
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
const uint OP_SCAN = 5u;

// State words: the threshold's mapped bits (low, high), the count still to take, the keys taken
// below the threshold, the candidates in the buffer (NONE before a filter), the keys below that
// the filter placed, whether the current filter runs; then the histogram of the current pass.
const uint S_THRESHOLD = 0u;
const uint S_REST = 2u;
const uint S_LESS = 3u;
const uint S_M = 4u;
const uint S_BASE = 5u;
const uint S_DO = 6u;
const uint S_HIST = 8u;

layout(std430, binding = 0) readonly buffer Keys { KEY keys[]; };
layout(std430, binding = 1) readonly buffer Values { uint values[]; };
layout(std430, binding = 2) writeonly buffer CandKeys { KEY cand_keys[]; };
layout(std430, binding = 3) writeonly buffer CandValues { uint cand_values[]; };
layout(std430, binding = 4) coherent buffer State { uint state[]; };
layout(std430, binding = 5) buffer Counts { uint counts[]; };        // two words per tile
layout(std430, binding = 5) readonly buffer Counts4 { uvec4 counts4[]; };  // the same, by pairs
layout(std430, binding = 6) buffer Before { uint before[]; };  // their exclusive scan
// The candidates' buffer: cap keys, then what each carries.
layout(std430, binding = 7) buffer Buf { uint buf[]; };
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
    uint cap;         // keys the candidates' buffer holds (0: no buffer)
    uint filtering;   // SELECT: a filter may follow; COUNT, SCATTER: the filter
    uint span;        // COUNT, SCATTER: tiles a workgroup takes in turn
} p;

const uint TILE = gl_WorkGroupSize.x * ITEMS;
const uint BATCH = 16u;
// Copies of each bin: invocation i counts into copy i % PARTS, so lanes that share a digit
// (equal or skewed keys) mostly add to different words.
const uint PARTS = 8u;
const uint NONE = 0xffffffffu;

shared uint sh_hist[RADIX * PARTS];
shared uint sg_counts[2u * gl_WorkGroupSize.x];

#if defined(XW_TYPE_B64)
KEY buf_key(uint i) { return uvec2(buf[2u * i], buf[2u * i + 1u]); }
void set_buf_key(uint i, KEY v) {
    buf[2u * i] = v.x;
    buf[2u * i + 1u] = v.y;
}
uvec2 key_and(KEY a, uvec2 m) { return a & m; }
KEY threshold_key() { return uvec2(state[S_THRESHOLD], state[S_THRESHOLD + 1u]); }
bool key_less(KEY a, KEY b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }
#else
KEY buf_key(uint i) { return buf[i]; }
void set_buf_key(uint i, KEY v) { buf[i] = v; }
uint key_and(KEY a, uvec2 m) { return a & m.x; }
KEY threshold_key() { return state[S_THRESHOLD]; }
bool key_less(KEY a, KEY b) { return a < b; }
#endif

// Key i of the keys or, `buffered`, of the candidates' buffer.
KEY source(bool buffered, uint i) { return buffered ? buf_key(i) : keys[i]; }
// The tiles a workgroup takes in turn over the candidates' buffer (a sixteenth of the keys).
uint buffer_span() { return (p.span + 15u) / 16u; }
// Word w of what candidate i of the buffer carries.
uint buf_value_at(uint i, uint w) { return KEY_WORDS * p.cap + VALUE_WORDS * i + w; }

void hist_step() {
    uint local = gl_LocalInvocationIndex;
    uint block = gl_WorkGroupSize.x;
    for (uint i = local; i < RADIX * PARTS; i += block) sh_hist[i] = 0u;
    barrier();
    KEY t = threshold_key();
    uvec2 mask = uvec2(p.mask_lo, p.mask_hi);
    // After a filter the candidates' buffer is the source, spread over the same workgroups.
    uint m = state[S_M];
    bool buffered = m != NONE;
    uint len = buffered ? m : p.n;
    uint chunk = p.tiles;
    if (buffered) {
        uint step = BATCH * block;
        uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
        chunk = ((m + groups - 1u) / groups + step - 1u) / step * step;
    }
    uint start = xw_group() * chunk;
    uint stop = min(start + chunk, len);
    for (uint base = start; base < stop; base += BATCH * block) {
        // The loads, from one source or the other (a branch outside the loops).
        KEY raw[BATCH];
        if (buffered) {
            [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
                uint i = base + j * block + local;
                raw[j] = i < stop ? buf_key(i) : KEY(0u);
            }
        } else {
            [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
                uint i = base + j * block + local;
                raw[j] = i < stop ? keys[i] : KEY(0u);
            }
        }
        uint b[BATCH];
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
            uint i = base + j * block + local;
            b[j] = NONE;
            if (i < stop) {
                KEY mk = xw_sort_map(raw[j], p.key_kind, p.descending != 0u);
                if (key_and(mk, mask) == key_and(t, mask)) b[j] = xw_digit(mk, p.shift, 0xffu);
            }
        }
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
            if (b[j] != NONE) atomicAdd(sh_hist[b[j] * PARTS + local % PARTS], 1u);
        }
    }
    barrier();
    for (uint i = local; i < RADIX; i += block) {
        uint c = 0u;
        [[unroll]] for (uint q = 0u; q < PARTS; ++q) c += sh_hist[i * PARTS + q];
        if (c != 0u) atomicAdd(state[S_HIST + i], c);
    }
}

void clear_step() {
    uint local = gl_LocalInvocationIndex;
    for (uint i = local; i < S_HIST + RADIX; i += gl_WorkGroupSize.x) {
        state[i] = i == S_REST ? p.k : (i == S_M ? NONE : 0u);
    }
}

// Inclusive sums of a and b over the workgroup (in place): subgroup scans by shuffles, then
// the subgroups' totals through shared memory (`sh_hist`, one word a subgroup and value);
// `total_a`, `total_b` get the workgroup's. Uniform control flow.
void block_scan2(inout uint a, inout uint b, out uint total_a, out uint total_b) {
    uint id = gl_SubgroupInvocationID;
    for (uint off = 1u; off < gl_SubgroupSize; off <<= 1u) {
        uint from = id >= off ? id - off : id;
        uint xa = subgroupShuffle(a, from);
        uint xb = subgroupShuffle(b, from);
        if (id >= off) {
            a += xa;
            b += xb;
        }
    }
    uint sg = xw_subgroup_id();
    uint groups = xw_num_subgroups();
    if (id == gl_SubgroupSize - 1u) {
        sh_hist[sg] = a;
        sh_hist[RADIX + sg] = b;
    }
    barrier();
    uint pa = 0u;
    uint pb = 0u;
    total_a = 0u;
    total_b = 0u;
    for (uint s = 0u; s < groups; ++s) {
        uint x = sh_hist[s];
        uint y = sh_hist[RADIX + s];
        if (s < sg) {
            pa += x;
            pb += y;
        }
        total_a += x;
        total_b += y;
    }
    a += pa;
    b += pb;
    barrier();
}

// Invocation d holds bin d; the one whose bins up to it reach the count still to take is the
// digit.
void select_step() {
    uint local = gl_LocalInvocationIndex;
    uint rest = state[S_REST];
    uint at = local < RADIX ? state[S_HIST + local] : 0u;
    uint upto = at;
    uint unused = 0u;
    uint total;
    uint total_unused;
    block_scan2(upto, unused, total, total_unused);
    if (local < RADIX) state[S_HIST + local] = 0u;
    uint below = upto - at;
    if (!(local < RADIX && below < rest && upto >= rest)) return;
    uint digit = local;
    // The filter runs once, after the first digit whose keys fit the buffer.
    bool filtered = p.filtering != 0u && state[S_M] == NONE && at <= p.cap;
    state[S_DO] = filtered ? 1u : 0u;
    if (filtered) {
        state[S_M] = at;
        state[S_BASE] = state[S_LESS] + below;
    }
    if (p.shift >= 32u) {
        state[S_THRESHOLD + 1u] |= digit << (p.shift - 32u);
    } else {
        state[S_THRESHOLD] |= digit << p.shift;
    }
    state[S_REST] = rest - below;
    state[S_LESS] += below;
}

// Bits j of `lo` and `eq`: the key of step j of the caller's run in the tile from key
// `tile_first` (of `len` keys, from the
// buffer when `buffered`), its bits in `mask`, is below T's or equal to them; `c_lo` and `c_eq`
// get the subgroup's counts.
void classify(uint tile_first, KEY thr, uvec2 mask, bool buffered, uint len, out uint lo,
              out uint eq, out uint c_lo, out uint c_eq) {
    uint first = tile_first + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
    lo = 0u;
    eq = 0u;
    c_lo = 0u;
    c_eq = 0u;
    KEY tm = key_and(thr, mask);
    // The loads, from one source or the other (a branch outside the loops).
    KEY raw[ITEMS];
    if (buffered) {
        [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
            uint i = first + j * gl_SubgroupSize;
            raw[j] = i < len ? buf_key(i) : KEY(0u);
        }
    } else {
        [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
            uint i = first + j * gl_SubgroupSize;
            raw[j] = i < len ? keys[i] : KEY(0u);
        }
    }
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        uint i = first + j * gl_SubgroupSize;
        bool below = false;
        bool equal = false;
        if (i < len) {
            KEY m = key_and(xw_sort_map(raw[j], p.key_kind, p.descending != 0u), mask);
            below = key_less(m, tm);
            equal = m == tm;
        }
        lo |= uint(below) << j;
        eq |= uint(equal) << j;
    }
    // The subgroup's counts: each invocation's, summed across the subgroup.
    c_lo = bitCount(lo);
    c_eq = bitCount(eq);
    for (uint off = gl_SubgroupSize / 2u; off > 0u; off >>= 1u) {
        c_lo += subgroupShuffleXor(c_lo, off);
        c_eq += subgroupShuffleXor(c_eq, off);
    }
}

// What key i carries (word w) to place `pos` of the candidates or (`to_buffer`) the buffer.
void carry(bool buffered, bool to_buffer, uint i, uint pos) {
    for (uint w = 0u; w < VALUE_WORDS; ++w) {
        uint v;
        if (buffered) {
            v = buf[buf_value_at(i, w)];
        } else if (p.indices != 0u) {
            v = w == 0u ? i : 0u;
        } else {
            v = values[VALUE_WORDS * i + w];
        }
        if (to_buffer) {
            buf[buf_value_at(pos, w)] = v;
        } else {
            cand_values[VALUE_WORDS * pos + w] = v;
        }
    }
}

// The exclusive sums of the tiles' two counts, in rounds of (workgroup size) * SCAN_ITEMS
// tiles, invocation i taking SCAN_ITEMS consecutive ones.
const uint SCAN_ITEMS = 4u;
void scan_step() {
    if (p.filtering != 0u && state[S_DO] == 0u) return;
    // The last step scans only the tiles the buffer fills.
    uint tiles = p.tiles;
    if (p.filtering == 0u && state[S_M] != NONE) {
        uint keys_a_group = buffer_span() * TILE;
        tiles = min(tiles, (state[S_M] + keys_a_group - 1u) / keys_a_group);
    }
    uint local = gl_LocalInvocationIndex;
    uint carry_a = 0u;
    uint carry_b = 0u;
    for (uint base = 0u; base < tiles; base += gl_WorkGroupSize.x * SCAN_ITEMS) {
        uint first = base + local * SCAN_ITEMS;
        uint va[SCAN_ITEMS];
        uint vb[SCAN_ITEMS];
        uint sa = 0u;
        uint sb = 0u;
        // Two tiles' counts a 16-byte load (the buffers hold an even number of tiles).
        [[unroll]] for (uint j = 0u; j < SCAN_ITEMS; j += 2u) {
            uint t = first + j;
            uvec4 v = uvec4(0u);
            if (t < tiles) v = counts4[t / 2u];
            bool second = t + 1u < tiles;
            va[j] = v.x;
            vb[j] = v.y;
            va[j + 1u] = second ? v.z : 0u;
            vb[j + 1u] = second ? v.w : 0u;
        }
        [[unroll]] for (uint j = 0u; j < SCAN_ITEMS; ++j) {
            sa += va[j];
            sb += vb[j];
        }
        uint ia = sa;
        uint ib = sb;
        uint ta;
        uint tb;
        block_scan2(ia, ib, ta, tb);
        uint ea = carry_a + ia - sa;
        uint eb = carry_b + ib - sb;
        [[unroll]] for (uint j = 0u; j < SCAN_ITEMS; ++j) {
            uint t = first + j;
            if (t < tiles) {
                before[2u * t] = ea;
                before[2u * t + 1u] = eb;
            }
            ea += va[j];
            eb += vb[j];
        }
        carry_a += ta;
        carry_b += tb;
    }
}

void main() {
    if (OP == OP_SCAN) {
        scan_step();
        return;
    }
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
    // COUNT, SCATTER: the filter (p.filtering: keys by the bits at and above the digit, after the
    // SELECT that chose to filter) or the last step (keys by all bits, from the candidates'
    // buffer after a filter). Workgroup t takes tiles t * span .. (t + 1) * span - 1 in turn.
    uint t = xw_group();
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (t >= p.tiles) return;
    bool filtered = p.filtering != 0u;
    if (filtered && state[S_DO] == 0u) return;
    uint m = filtered ? NONE : state[S_M];
    bool buffered = m != NONE;
    uint len = buffered ? m : p.n;
    uint local = gl_LocalInvocationIndex;
    uint span = buffered ? buffer_span() : p.span;
    uint tile_first = t * span * TILE;
    if (tile_first >= len) {
        if (OP == OP_COUNT && local == 0u) {
            counts[2u * t] = 0u;
            counts[2u * t + 1u] = 0u;
        }
        return;
    }
    // SCATTER: the workgroup's places, loaded before its keys are classified.
    uint at_lo = 0u;
    uint at_eq = 0u;
    uint eq_end = p.cap;
    if (OP == OP_SCATTER) {
        at_lo = before[2u * t];
        at_eq = before[2u * t + 1u];
        if (!filtered) {
            at_lo += state[S_BASE];
            at_eq += state[S_LESS];
            eq_end = p.k;
        }
    }
    uvec2 mask = filtered ? uvec2(p.mask_lo, p.mask_hi) : uvec2(0xffffffffu);
    KEY thr = threshold_key();
    uint sg = xw_subgroup_id();
    uint lo_block = 0u;
    uint eq_block = 0u;
    for (uint s = 0u; s < span; ++s) {
        uint sub_first = tile_first + s * TILE;
        if (sub_first >= len) break;
        uint lo;
        uint eq;
        uint c_lo;
        uint c_eq;
        classify(sub_first, thr, mask, buffered, len, lo, eq, c_lo, c_eq);
        if (subgroupElect()) {
            sg_counts[2u * sg] = c_lo;
            sg_counts[2u * sg + 1u] = c_eq;
        }
        barrier();
        uint lo_below = 0u;
        uint eq_below = 0u;
        uint lo_tile = 0u;
        uint eq_tile = 0u;
        for (uint q = 0u; q < xw_num_subgroups(); ++q) {
            uint a = sg_counts[2u * q];
            uint b = sg_counts[2u * q + 1u];
            if (q < gl_SubgroupID) {
                lo_below += a;
                eq_below += b;
            }
            lo_tile += a;
            eq_tile += b;
        }
        // The next tile's counts overwrite these.
        barrier();
        if (OP == OP_COUNT) {
            lo_block += lo_tile;
            eq_block += eq_tile;
            continue;
        }
        // SCATTER: ranks in input order within each class. Keys below go to the candidates
        // (after those a filter placed); equal keys to the candidates' buffer (filter) or after
        // the keys below T while places are left.
        uint w_lo = at_lo + lo_below;
        uint w_eq = at_eq + eq_below;
        at_lo += lo_tile;
        at_eq += eq_tile;
        uint first = sub_first + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
        [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
            bool below = ((lo >> j) & 1u) != 0u;
            bool equal = ((eq >> j) & 1u) != 0u;
            // Most steps of a filter place nothing.
            if (subgroupBallot(below || equal) == uvec4(0u)) continue;
            uvec4 bb = subgroupBallot(below);
            uvec4 be = subgroupBallot(equal);
            uint i = first + j * gl_SubgroupSize;
            if (below) {
                uint pos = w_lo + ballot_rank(bb);
                if (pos < p.k) {
                    cand_keys[pos] = source(buffered, i);
                    carry(buffered, false, i, pos);
                }
            } else if (equal) {
                uint pos = w_eq + ballot_rank(be);
                if (pos < eq_end) {
                    if (filtered) {
                        set_buf_key(pos, keys[i]);
                    } else {
                        cand_keys[pos] = source(buffered, i);
                    }
                    carry(buffered, filtered, i, pos);
                }
            }
            w_lo += ballot_count(bb);
            w_eq += ballot_count(be);
        }
    }
    if (OP == OP_COUNT && local == 0u) {
        counts[2u * t] = lo_block;
        counts[2u * t + 1u] = eq_block;
    }
}
