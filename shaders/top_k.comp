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
//            nonzero bins to state's histogram and stores its row: the histogram's inclusive
//            sums over the bins (`counts`: RADIX words per workgroup, two passes' rows in turn).
//            Workgroup g reads chunk g of the keys (`tiles` keys each) or, after a filter, of
//            the candidates' buffer (its keys spread over the same workgroups: buffer_chunk); a
//            workgroup past them counts and stores nothing. The
//            launch's last workgroup to finish (S_DONE counts them) then selects: invocation d
//            holding bin d, the digit where the remaining count is reached (a workgroup scan of
//            the bins); the keys of the smaller digits are taken (`less` grows by them), the
//            threshold gets the digit, and the histogram is zeroed for the next pass. With
//            `filtering`, it also decides the filter: once, where the digit's bucket fits the
//            buffer (`cap` keys), it records the bucket's size (S_M), the keys below it
//            (S_BASE) and the pass (S_FILTERED). Where the filter runs, and after the last pass,
//            it writes each workgroup's keys below the bucket (the threshold) and in it (equal to
//            it), as exclusive sums over the workgroups to `before` (pass_scan): from the row of
//            this pass and a count each workgroup keeps of its keys below the threshold in the
//            earlier passes over the same keys (each pass adds what the last pass's row has
//            below its digit). After the last pass the threshold T is the k-th
//            smallest mapped key, `less` counts the keys below it and `rest` the keys equal to it
//            still to take;
//   SCATTER  workgroup g over HIST's chunk g (in tiles): the keys below T at (S_BASE + below
//            before the workgroup) + rank, the keys equal to T at less + (equal before the
//            workgroup) + rank while that is below k, each with its value (pairs) or input
//            index: the k candidates, each class in input order (keys of different classes
//            differ, so the stable sort after gives ties in input order). With `filtering`
//            (nothing unless the pass chose to filter), the keys below the bucket (the bits in
//            the mask: at and above the digit) go to the candidates and those in it to the
//            buffer, each with what it carries, in input order. After a filter the last
//            SCATTER reads only the buffer;
//   CLEAR    one workgroup: the state starts (threshold 0, k still to take, none below, no
//            buffer, no workgroup done, the histogram zero).
// The host then sorts the k candidates by key with the radix sort (stable: equal keys keep the
// candidates' order, which is input order).
//
// Tiles for SCATTER are laid out as in compact.glsl and partition.comp: subgroup s
// owns the s-th run of gl_SubgroupSize * ITEMS consecutive keys, read in ITEMS coalesced steps,
// ranked by one ballot per step and class where the step has a key of either class.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"
#include "sort_common.glsl"

layout(local_size_x_id = 0) in;
#include "tile_ballot.glsl"

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint ITEMS = 16u;
layout(constant_id = 3) const uint VALUE_WORDS = 0u;  // 32-bit words per value: 0 (keys), 1 or 2

const uint OP_HIST = 0u;
const uint OP_SCATTER = 1u;
const uint OP_CLEAR = 2u;

// State words: the threshold's mapped bits (low, high), the count still to take, the keys taken
// below the threshold, the candidates in the buffer (NONE before a filter), the keys below that
// the filter placed, whether the current filter runs, the workgroups of the current launch done,
// the pass that filtered; then the histogram of the current pass.
const uint S_THRESHOLD = 0u;
const uint S_REST = 2u;
const uint S_LESS = 3u;
const uint S_M = 4u;
const uint S_BASE = 5u;
const uint S_DO = 6u;
const uint S_DONE = 7u;
const uint S_FILTERED = 8u;
const uint S_HIST = 16u;

layout(std430, binding = 0) readonly buffer Keys { KEY keys[]; };
layout(std430, binding = 1) readonly buffer Values { uint values[]; };
layout(std430, binding = 2) writeonly buffer CandKeys { KEY cand_keys[]; };
layout(std430, binding = 3) writeonly buffer CandValues { uint cand_values[]; };
layout(std430, binding = 4) coherent buffer State { uint state[]; };
// The HIST workgroups' rows (RADIX words per workgroup, two passes in turn), then their counts of
// keys below the threshold (below_word); coherent, as a launch's last workgroup reads what the
// others wrote.
layout(std430, binding = 5) coherent buffer Counts { uint counts[]; };
// Per SCATTER workgroup, the keys below and equal before it.
layout(std430, binding = 6) buffer Before { uint before[]; };
// The candidates' buffer: cap keys, then what each carries.
layout(std430, binding = 7) buffer Buf { uint buf[]; };
layout(push_constant) uniform Params {
    uint n;           // keys
    uint k;
    uint tiles;       // HIST, SCATTER: keys per workgroup (a multiple of BATCH * BLOCK)
    uint shift;       // HIST: the digit's lowest bit
    uint mask_lo;     // HIST: the mapped bits above the digit (low, high word)
    uint mask_hi;
    uint key_kind;    // KIND_*
    uint descending;  // nonzero: the k largest
    uint indices;     // nonzero: the candidates' values are input indices
    uint cap;         // keys the candidates' buffer holds (0: no buffer)
    uint filtering;   // HIST: a filter may follow; SCATTER: the filter
    uint digit;       // HIST: the pass (0: the most significant digit)
} p;

const uint TILE = gl_WorkGroupSize.x * ITEMS;
const uint BATCH = 16u;
// Copies of each bin: invocation i counts into copy i % PARTS, so lanes that share a digit
// (equal or skewed keys) mostly add to different words.
const uint PARTS = 8u;
const uint NONE = 0xffffffffu;

shared uint sh_hist[RADIX * PARTS];
shared uint sg_counts[2u * gl_WorkGroupSize.x];
shared uint s_flag;   // last_group's answer, then the selection's: whether the filter runs
shared uint s_digit;  // the selected digit

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

// Word w of what candidate i of the buffer carries.
uint buf_value_at(uint i, uint w) { return KEY_WORDS * p.cap + VALUE_WORDS * i + w; }

// Workgroups of the launch (at most MAX_GROUPS, so one dimension).
uint num_groups() { return gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z; }

// Keys of the candidates' buffer (m of them) per workgroup, HIST's and SCATTER's alike.
uint buffer_chunk(uint m) {
    uint step = BATCH * gl_WorkGroupSize.x;
    uint groups = num_groups();
    return ((m + groups - 1u) / groups + step - 1u) / step * step;
}

// Word `bin` of HIST workgroup g's row in pass d (two passes' rows, in turn).
uint row_word(uint d, uint groups, uint g, uint bin) {
    return ((d & 1u) * groups + g) * RADIX + bin;
}
// HIST workgroup g's keys below the threshold in the digits of the passes before this one that
// read the same keys (every pass, or those over the candidates' buffer).
uint below_word(uint groups, uint g) { return 2u * groups * RADIX + g; }

// Whether this workgroup is the last of the launch's `groups` to get here (uniform): every
// invocation's writes are made visible device-wide before invocation 0 counts the workgroup
// done, and the last workgroup acquires the others' before it reads them.
bool last_group(uint groups) {
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationIndex == 0u) {
        uint before = atomicAdd(state[S_DONE], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                gl_SemanticsAcquireRelease);
        s_flag = before + 1u == groups ? 1u : 0u;
    }
    barrier();
    bool last = s_flag != 0u;
    if (last) memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
    return last;
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

// By the launch's last HIST workgroup, invocation d holding bin d: the one whose bins up to it
// reach the count still to take is the digit (s_digit; s_flag: whether the filter runs, where
// `filtering`). Uniform control flow.
void select_step(bool filtering) {
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
    bool filtered = filtering && at <= p.cap;
    state[S_DO] = filtered ? 1u : 0u;
    s_flag = filtered ? 1u : 0u;
    s_digit = digit;
    if (filtered) {
        state[S_M] = at;
        state[S_BASE] = state[S_LESS] + below;
        state[S_FILTERED] = p.digit;
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
void classify(uint tile_first, KEY thr, uvec2 mask, bool buffered, uint len, out KEY raw[ITEMS],
              out uint lo, out uint eq, out uint c_lo, out uint c_eq) {
    uint first = tile_first + gl_SubgroupID * gl_SubgroupSize * ITEMS + gl_SubgroupInvocationID;
    lo = 0u;
    eq = 0u;
    c_lo = 0u;
    c_eq = 0u;
    KEY tm = key_and(thr, mask);
    // The loads, from one source or the other (a branch outside the loops).
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

// One round of the exclusive sums of two counts over `tiles` HIST workgroups ((workgroup size)
// * SCAN_ITEMS of them a round; at most MAX_GROUPS, one round, in src/top_k.rs): invocation i
// holds those of the SCAN_ITEMS consecutive workgroups from `first` (va, vb; zero past `tiles`)
// and writes their sums to `before`; `carry_a`, `carry_b` carry the rounds' totals. Uniform
// control flow.
const uint SCAN_ITEMS = 4u;
void scan_round(uint first, uint tiles, uint va[SCAN_ITEMS], uint vb[SCAN_ITEMS],
                inout uint carry_a, inout uint carry_b) {
    uint sa = 0u;
    uint sb = 0u;
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

// By the last HIST workgroup of a pass that filters or of the last pass, this pass's digit
// being `sel`: each workgroup's keys below the bucket (below the threshold in an earlier pass's
// digit, or below `sel` in this one) and in it, as exclusive sums over the workgroups to
// `before`. Workgroups from `with_keys` on had no keys (and stored nothing).
void pass_scan(uint groups, uint with_keys, uint sel) {
    uint local = gl_LocalInvocationIndex;
    uint carry_a = 0u;
    uint carry_b = 0u;
    for (uint base = 0u; base < groups; base += gl_WorkGroupSize.x * SCAN_ITEMS) {
        uint first = base + local * SCAN_ITEMS;
        uint va[SCAN_ITEMS];
        uint vb[SCAN_ITEMS];
        [[unroll]] for (uint j = 0u; j < SCAN_ITEMS; ++j) {
            uint g = first + j;
            va[j] = 0u;
            vb[j] = 0u;
            if (g < with_keys) {
                uint lo = counts[below_word(groups, g)];
                uint lo_here = sel != 0u ? counts[row_word(p.digit, groups, g, sel - 1u)] : 0u;
                va[j] = lo + lo_here;
                vb[j] = counts[row_word(p.digit, groups, g, sel)] - lo_here;
            }
        }
        scan_round(first, groups, va, vb, carry_a, carry_b);
    }
}

void hist_step() {
    uint local = gl_LocalInvocationIndex;
    uint block = gl_WorkGroupSize.x;
    KEY t = threshold_key();
    uvec2 mask = uvec2(p.mask_lo, p.mask_hi);
    // After a filter the candidates' buffer is the source, spread over the same workgroups.
    uint m = state[S_M];
    bool buffered = m != NONE;
    uint len = buffered ? m : p.n;
    uint chunk = buffered ? buffer_chunk(m) : p.tiles;
    uint g = xw_group();
    uint groups = num_groups();
    uint start = g * chunk;
    uint stop = min(start + chunk, len);
    // A workgroup past the keys (over a small buffer, most of them) counts and stores nothing.
    if (start < len) {
        // The workgroup's keys below the threshold in the earlier passes' digits: those before
        // the last pass and, from the last pass's row, those below its digit (none in the
        // first pass and in the first over the buffer).
        uint below = 0u;
        if (local == 0u && p.digit != 0u && !(buffered && state[S_FILTERED] + 1u == p.digit)) {
            uint last = xw_digit(t, p.shift + 8u, 0xffu);
            below = counts[below_word(groups, g)];
            if (last != 0u) below += counts[row_word(p.digit - 1u, groups, g, last - 1u)];
        }
        for (uint i = local; i < RADIX * PARTS; i += block) sh_hist[i] = 0u;
        barrier();
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
                    if (key_and(mk, mask) == key_and(t, mask)) {
                        b[j] = xw_digit(mk, p.shift, 0xffu);
                    }
                }
            }
            [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
                if (b[j] != NONE) atomicAdd(sh_hist[b[j] * PARTS + local % PARTS], 1u);
            }
        }
        barrier();
        // Invocation d holds bin d (the workgroup has at least RADIX invocations).
        uint c = 0u;
        if (local < RADIX) {
            [[unroll]] for (uint q = 0u; q < PARTS; ++q) c += sh_hist[local * PARTS + q];
            if (c != 0u) atomicAdd(state[S_HIST + local], c);
        }
        // The workgroup's row (block_scan2 reuses sh_hist).
        barrier();
        uint cum = c;
        uint unused = 0u;
        uint total;
        uint total_unused;
        block_scan2(cum, unused, total, total_unused);
        if (local < RADIX) counts[row_word(p.digit, groups, g, local)] = cum;
        if (local == 0u) counts[below_word(groups, g)] = below;
    }
    if (!last_group(groups)) return;
    if (local == 0u) state[S_DONE] = 0u;
    bool filtering = p.filtering != 0u && !buffered;
    select_step(filtering);
    barrier();
    if (p.shift == 0u || s_flag != 0u) pass_scan(groups, (len + chunk - 1u) / chunk, s_digit);
}

// SCATTER: the filter (p.filtering: keys by the bits at and above the digit, after the
// selection that chose to filter) or the last step (keys by all bits, from the candidates'
// buffer after a filter). Workgroup t takes HIST's chunk t, tile by tile.
void scatter_step() {
    uint t = xw_group();
    bool filtered = p.filtering != 0u;
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (filtered && state[S_DO] == 0u) return;
    uint m = filtered ? NONE : state[S_M];
    bool buffered = m != NONE;
    uint len = buffered ? m : p.n;
    uint span = (buffered ? buffer_chunk(m) : p.tiles) / TILE;
    uint tile_first = t * span * TILE;
    if (tile_first >= len) return;
    // The workgroup's places, loaded before its keys are classified.
    uint at_lo = before[2u * t];
    uint at_eq = before[2u * t + 1u];
    uint eq_end = p.cap;
    if (!filtered) {
        at_lo += state[S_BASE];
        at_eq += state[S_LESS];
        eq_end = p.k;
    }
    uvec2 mask = filtered ? uvec2(p.mask_lo, p.mask_hi) : uvec2(0xffffffffu);
    KEY thr = threshold_key();
    uint sg = xw_subgroup_id();
    for (uint s = 0u; s < span; ++s) {
        uint sub_first = tile_first + s * TILE;
        if (sub_first >= len) break;
        uint lo;
        uint eq;
        uint c_lo;
        uint c_eq;
        KEY raw[ITEMS];
        classify(sub_first, thr, mask, buffered, len, raw, lo, eq, c_lo, c_eq);
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
        // Ranks in input order within each class. Keys below go to the candidates
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
                    cand_keys[pos] = raw[j];
                    carry(buffered, false, i, pos);
                }
            } else if (equal) {
                uint pos = w_eq + ballot_rank(be);
                if (pos < eq_end) {
                    if (filtered) {
                        set_buf_key(pos, raw[j]);
                    } else {
                        cand_keys[pos] = raw[j];
                    }
                    carry(buffered, filtered, i, pos);
                }
            }
            w_lo += ballot_count(bb);
            w_eq += ballot_count(be);
        }
    }
}

void main() {
    if (OP == OP_HIST) {
        hist_step();
        return;
    }
    if (OP == OP_CLEAR) {
        clear_step();
        return;
    }
    scatter_step();
}
