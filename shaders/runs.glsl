// Runs of equal consecutive keys, single pass: the text of unique.comp (XW_RUNS_UNIQUE),
// run_length.comp (XW_RUNS_RLE) and reduce_by_key.comp (XW_RUNS_RBK); the twin of
// cuda/runs.cuh, modelled by src/cpu/runs.rs. Keys are compared by their bits (KEY_WORDS
// 32-bit words each), so a float key equals only a key of the same bits: +0.0 and -0.0 differ,
// and a NaN equals a NaN of the same payload.
//
// Element i is a head when i = 0 or key[i] differs from key[i - 1], a tail when i = n - 1 or
// key[i] differs from key[i + 1]; run r spans head r .. tail r. UNIQUE writes the key of head r
// to keys_out[r]; RLE writes the key of tail r and the run's length to keys_out[r] and
// values_out[r]; RBK writes the key of tail r and the reduction of the run's values. Every mode
// writes the number of runs (u64) to `runs`.
//
// Tiles of TILE = gl_WorkGroupSize.x * ITEMS elements; invocation l (gl_LocalInvocationIndex)
// owns the ITEMS consecutive elements from l * ITEMS: its *thread piece*. The canonical order of
// a run's reduction (README, "Deterministic floats"): the run is cut into thread pieces and
// tile pieces (at global indices that are multiples of ITEMS and of TILE); each thread piece
// folds its values left to right from its first value, each tile piece folds its thread pieces
// left to right, and the run folds its tile pieces left to right. No identity enters.
//
// In a tile:
//   1. each invocation reads its keys (and the key before and after its piece) and values: its
//      heads, tails, head count and *trail* (the fold of its values from its last head, or its
//      first value, to its end);
//   2. invocation 0 folds the thread pieces in order: C[l] is the fold of the trails of the
//      invocations before l since the last head before l (C[0]: none), and H[l] the heads
//      before l. The tile's aggregate is A = (heads of the tile, C[BLOCK]): its head count and
//      the tile piece of its last run;
//   3. the tile's exclusive prefix E = (heads before the tile, the fold of the tile pieces of
//      the run that enters the tile) by decoupled look-back over the tile states, with the
//      operator (h1, v1) + (h2, v2) = (h1 + h2, h2 > 0 ? v2 : op(v1, v2)), which folds tile
//      pieces left to right; E(k) is always the left fold A(0) + ... + A(k - 1), whichever
//      published prefix the look-back finds (as in scan_device.glsl), so its bits do not depend
//      on timing;
//   4. each invocation walks its elements again: a tail's run value is its thread piece's
//      partial fold, after C[l] when the run began in an earlier invocation, after E's value
//      when it began in an earlier tile; its run index is E's heads + H[l] + the heads of the
//      piece so far - 1.
//
// Tile states live in `work`: word 0 the tile ticket counter, then a flag word per tile (0
// nothing yet, 1 the aggregate, 2 the inclusive prefix; words only grow, by atomicMax), then four
// words per tile of aggregate and four of inclusive prefix (heads, the value's two words). A
// value is written before its flag, with a buffer barrier between; a reader polls the flag with
// a relaxed atomic load, then reads the value after a barrier (XW_RUNS_PACKED: the aggregate and
// the inclusive prefix are each one 64-bit word, written and read by single atomics, without
// barriers: see publish; XW_RUNS_EPOCHS: the states tagged with the call's epoch in the device's
// epochs buffer, see there). The look-back polls a window of
// up to BLOCK predecessors at once, one per invocation, until every tile above the window's
// nearest inclusive prefix has published its aggregate. Tiles are numbered in the order
// workgroups take a ticket, so a tile's predecessors have started. Vulkan promises no forward
// progress between workgroups: after `spin` polls in all (one budget per look-back; llvmpipe
// ends an invocation's loops after 65535 iterations in total), the workgroup computes every
// unpublished predecessor of the window itself (the very bits its owner will publish) and
// publishes its aggregate. It cannot deadlock on any conformant device.
//
// The including kernel includes common.glsl first; reduce_by_key.comp also declares OP and
// includes reduce_op.glsl (the operators on the value type T).
#extension GL_KHR_memory_scope_semantics : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KEY_WORDS = 1u;  // 32-bit words per key: 1 or 2
layout(constant_id = 2) const uint ITEMS = 16u;     // elements per invocation
// 1: the launch's work words lie in the device's counters buffer, zero when it starts, and the
// last tile done zeroes them again (src/runs.rs; no clearing launch). A constant, so that the
// other variants compile without that code.
layout(constant_id = 4) const uint SELF_CLEARING = 0u;

#if defined(XW_RUNS_RBK)
#define VT T
#else
#define VT uint
#endif

const uint FLAG_AGGREGATE = 1u;
const uint FLAG_INCLUSIVE = 2u;
const uint W_FLAGS = 4u;  // the first flag word; word 0 is the ticket counter
const uint W_DONE = 1u;   // SELF_CLEARING: the tiles done with the tile states

layout(std430, binding = 0) readonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) readonly buffer Values { VT values[]; };  // RBK only
layout(std430, binding = 2) writeonly buffer KeysOut { uint keys_out[]; };
layout(std430, binding = 3) writeonly buffer ValuesOut { VT values_out[]; };  // RLE, RBK
layout(std430, binding = 4) writeonly buffer Runs { uint runs[]; };  // the u64 count, low first
layout(std430, binding = 5) coherent buffer Work { uint work[]; };
#if defined(XW_RUNS_PACKED)
// The same words, two at a time: a tile's aggregate and inclusive prefix each one 64-bit word
// (see publish).
layout(std430, binding = 5) coherent buffer Work64 { uint64_t work64[]; };
#endif
layout(push_constant) uniform Params {
    uint n;      // elements
    uint tiles;  // tiles of the input
    uint spin;   // polls of unpublished predecessors per look-back before computing them here
    uint clear;  // CLEAR_LAUNCH, SELF_CLEARING_LAUNCH or 0
    uint epoch_wrap;   // XW_RUNS_EPOCHS: the number of epochs (after the last comes 0)
    uint epoch_tiles;  // XW_RUNS_EPOCHS: the states the epochs buffer holds (a multiple of SCRUB)
} p;

// p.clear: only zero the ticket, the done count, the flags and the run count (the clearing
// launch ahead of the tiles where the work words are fresh memory).
const uint CLEAR_LAUNCH = 1u;
// p.clear: the tiles of a SELF_CLEARING variant: word W_DONE counts the tiles done with the
// states (each as soon as its inclusive prefix is published, so the count's round trip overlaps
// the tile's output), and the last of them zeroes every work word after its output.
const uint SELF_CLEARING_LAUNCH = 2u;

const uint BLOCK = gl_WorkGroupSize.x;
const uint TILE = BLOCK * ITEMS;
const uint CHUNK = 16u;  // invocations whose heads one invocation sums in step 2
// 32-bit words of a value (reduce-by-key's; the other kernels load none) and of the largest
// element, keys or values, that a tile stages in shared memory.
#if defined(XW_RUNS_RBK) && defined(XW_T_64)
const uint VALUE_WORDS = 2u;
#else
const uint VALUE_WORDS = 1u;
#endif
// XW_STAGE_ALL (the exact float variants): every element of a piece stages its output or, if it
// has none, a word at the invocation's own scratch place TILE + 1 + l (stage_outputs), with no
// branch an element. NVIDIA's driver (580, H200) ran the exact f32 reduce-by-key 4% faster so
// at 2^24-2^26, but took the i32 kernel from 74 to 82 registers (two workgroups an SM, 1.2x
// the time), so the other variants branch.
#if defined(XW_RUNS_RBK) && defined(XW_SUBNORMALS_EXACT)
#define XW_STAGE_ALL 1
const uint STAGE_PLACES = TILE + 1u + BLOCK;
#else
const uint STAGE_PLACES = TILE + 1u;
#endif
const uint STAGE_WORDS = STAGE_PLACES * (KEY_WORDS > VALUE_WORDS ? KEY_WORDS : VALUE_WORDS);

// A tile's aggregate or prefix: heads, and the value of its last run (none when heads is 0 and
// nothing came before).
struct Carry {
    uint heads;
    VT v;
};

shared uint inv_heads[BLOCK];  // step 1: each invocation's heads
shared VT inv_trail[BLOCK];    // step 1: each invocation's trail
shared uint inv_before[BLOCK]; // step 2: H[l]
shared VT inv_carry[BLOCK];    // step 2: C[l]
shared uint lb_flag[BLOCK];    // the look-back window's flags
shared uint inv_chunk[BLOCK / CHUNK];  // step 2: heads of each chunk of CHUNK invocations
// A tile's keys, then its values, as words; one padding word after every 32 (stage_at), so that
// the invocations of a subgroup reading words ITEMS * KEY_WORDS apart hit different banks.
shared uint stage[STAGE_WORDS + STAGE_WORDS / 32u];
shared uint out_lo;  // the tile's first output place
shared uint out_hi;  // one past its last
shared Carry lb_val[BLOCK];    // a window's values, read at once
shared uint lb_m;              // the window's nearest inclusive prefix
shared uint lb_gap;            // a tile above it has published nothing
shared uint lb_heads;          // the heads of the values read, summed
shared uint lb_head;           // the nearest value read with a head, by its window index
shared uint lb_ok;             // the near look-back found the prefix
shared uint lb_polls;          // polls the near look-back spent
shared uint s_word;
shared uint s_last;  // SELF_CLEARING: this tile was the last to count itself done
#if defined(XW_RUNS_EPOCHS)
shared uint s_tag;    // the high word of the call's states: its epoch times 4 plus 2
shared uint s_scrub;  // the last ticket's first state to zero, plus one; else 0
#endif
shared Carry s_carry;
// The near look-back's prefix: not in s_carry, which subgroups still leaving the tile's own
// summary may be reading as its aggregate while subgroup 0 looks back.
shared Carry lb_near;

uint w_aggregates() { return W_FLAGS + (p.tiles + 3u) / 4u * 4u; }
uint w_inclusives() { return w_aggregates() + 4u * p.tiles; }

uvec2 key_at(uint i) {
    return KEY_WORDS == 2u ? uvec2(keys[2u * i], keys[2u * i + 1u]) : uvec2(keys[i], 0u);
}

#if defined(XW_RUNS_RBK)
VT value_at(uint i) { return values[i]; }
VT vop(VT a, VT b) { return xw_op(a, b); }
#if defined(XW_T_64)
uvec2 vt_bits(VT v) {
#if defined(XW_T_FLOAT)
    return unpackDouble2x32(v);
#else
    return unpackUint2x32(uint64_t(v));
#endif
}
VT vt_from(uvec2 b) {
#if defined(XW_T_FLOAT)
    return packDouble2x32(b);
#else
    return VT(packUint2x32(b));
#endif
}
#else
uvec2 vt_bits(VT v) {
#if defined(XW_T_FLOAT)
    return uvec2(floatBitsToUint(v), 0u);
#else
    return uvec2(uint(v), 0u);
#endif
}
VT vt_from(uvec2 b) {
#if defined(XW_T_FLOAT)
    return uintBitsToFloat(b.x);
#else
    return VT(b.x);
#endif
}
#endif
#else
// RLE counts the elements of a run; UNIQUE carries no value.
VT value_at(uint i) { return 1u; }
VT vop(VT a, VT b) { return a + b; }
uvec2 vt_bits(VT v) { return uvec2(v, 0u); }
VT vt_from(uvec2 b) { return b.x; }
#endif

Carry carry_op(Carry a, Carry b) {
    Carry c;
    c.heads = a.heads + b.heads;
    c.v = b.heads > 0u ? b.v : vop(a.v, b.v);
    return c;
}

uint stage_at(uint w) { return w + w / 32u; }

// Element e of the tile's keys in the stage.
uvec2 stage_key(uint e) {
    return KEY_WORDS == 2u ? uvec2(stage[stage_at(2u * e)], stage[stage_at(2u * e + 1u)])
                           : uvec2(stage[stage_at(e)], 0u);
}

// One thread piece: its keys and values, which of its elements are heads and tails (bit j),
// and how many of its elements lie below n. Read through shared memory: the tile's keys (then
// its values) are loaded by all invocations at once, consecutive invocations reading
// consecutive words, and each invocation then takes its ITEMS consecutive elements from
// shared memory (each loading its own ITEMS elements used 4.5 of every 32 bytes fetched, on
// the CUDA twin of an H100). v[j] is the fold of the piece's values from its last head at or
// before j (or from its first element) through j, in element order, and past the piece's end
// its trail: the only form in which the summary and the outputs use them. Uniform control flow.
// (The CUDA twin specialises full tiles, without bounds checks: here that took NVIDIA's driver to
// 79 registers for i32 and 86 for f32, two workgroups an SM, 1.24-1.27x the f32 kernel's time at
// 2^24-2^26 on an H200.)
void load_piece(uint t, uint l, out uvec2 k[ITEMS], out VT v[ITEMS], out uint heads,
                out uint tails, out uint len) {
    uint tile_first = t * TILE;
    uint tile_len = min(TILE, p.n - tile_first);
    uint first = tile_first + l * ITEMS;
    len = first < p.n ? min(ITEMS, p.n - first) : 0u;
    heads = 0u;
    tails = 0u;
    // The keys either side of the piece, from global memory (L2 hits, loaded while the stage
    // fills; taking them from the stage after its barrier cost 4-10% on the CUDA twin, H100).
    uvec2 prev = first > 0u && first < p.n ? key_at(first - 1u) : uvec2(0u);
    uvec2 next = len > 0u && first + len < p.n ? key_at(first + len) : uvec2(0u);
    // Called once a workgroup, after the ticket's barrier: no earlier reader of the stage.
    for (uint w = l; w < tile_len * KEY_WORDS; w += BLOCK) {
        stage[stage_at(w)] = keys[tile_first * KEY_WORDS + w];
    }
    barrier();
    // Heads as the keys are taken, against the key before (a running value, never k[j - 1]):
    // NVIDIA's Vulkan driver did not unroll a loop that indexed k by j - 1 and j + 1, and kept
    // the whole array in local memory for it (128 bytes an invocation, read back three times an
    // element). Element j < len - 1 is a tail where element j + 1 is a head; the last one where
    // the piece ends the input or the next key differs.
    uvec2 before = prev;
    uvec2 last = uvec2(0u);
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        uint e = l * ITEMS + j;
        uvec2 key = j < len ? stage_key(e) : uvec2(0u);
        k[j] = key;
        if (j < len) {
            heads |= uint(first + j == 0u || key != before) << j;
            if (j + 1u == len) last = key;
        }
        before = key;
    }
    if (len > 0u) {
        tails = (heads >> 1u) & ((1u << (len - 1u)) - 1u);
        tails |= uint(first + len == p.n || last != next) << (len - 1u);
    }
#if defined(XW_RUNS_RBK)
    barrier();  // every invocation has read its keys
    // (The CUDA twin loads the values with the keys, into registers, and copies in unrolled
    // steps at constant offsets: here NVIDIA's driver took 90 and 89 registers for either
    // against 62, a workgroup an SM fewer, and 1.30-1.34x the time at 2^24 on an H200.)
    for (uint e = l; e < tile_len; e += BLOCK) {
        uvec2 b = vt_bits(values[tile_first + e]);
        stage[stage_at(VALUE_WORDS * e)] = b.x;
        if (VALUE_WORDS == 2u) stage[stage_at(VALUE_WORDS * e + 1u)] = b.y;
    }
    barrier();
#endif
    VT acc = VT(0);
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        if (j < len) {
#if defined(XW_RUNS_RBK)
            uint e = l * ITEMS + j;
            VT x = vt_from(uvec2(stage[stage_at(VALUE_WORDS * e)],
                                 VALUE_WORDS == 2u ? stage[stage_at(VALUE_WORDS * e + 1u)] : 0u));
#else
            VT x = value_at(first + j);
#endif
            acc = j == 0u || ((heads >> j) & 1u) != 0u ? x : vop(acc, x);
        }
        v[j] = acc;
    }
}

// Step 2's left fold of the trails, which a head restarts, run as one fold per segment:
// invocation r < pieces with a head (or r = 0) folds from its trail on through the invocations
// after it until the next head, writing C[q] (the value before q) for each q it passes; the
// last segment's invocation stops at `pieces` and writes the tile's value into s_carry.v,
// which no other invocation reaches. Every C[q] is the serial fold's value, bit for bit, and
// no invocation folds what another does. (C[q] of an invocation past `pieces` is never read:
// it has no elements.)
void segment_fold(uint r, uint pieces, bool own) {
    VT acc = inv_trail[r];
    for (uint q = r + 1u; q < pieces; ++q) {
        if (own) inv_carry[q] = acc;
        if (inv_heads[q] > 0u) return;
        acc = vop(acc, inv_trail[q]);
    }
    s_carry.v = acc;
}

// Step 1 for a tile whose piece the caller does not hold (a predecessor computed in the
// look-back's fallback): the head count and trail of invocation l's piece, read element by
// element from global memory (rare; no array per element beside the caller's piece).
void piece_stats(uint t, uint l, out uint heads, out VT trail) {
    uint first = t * TILE + l * ITEMS;
    heads = 0u;
    trail = VT(0);
    if (first < p.n) {
        uint len = min(ITEMS, p.n - first);
        uvec2 prev = first > 0u ? key_at(first - 1u) : uvec2(0u);
        for (uint j = 0u; j < len; ++j) {
            uvec2 k = key_at(first + j);
            VT v = value_at(first + j);
            bool head = first + j == 0u || k != prev;
            heads += uint(head);
            trail = head || j == 0u ? v : vop(trail, v);
            prev = k;
        }
    }
}

// Step 2 for tile t, from each invocation's head count and trail (step 1): the tile's aggregate
// (every invocation gets it); with `own`, also H[l] and C[l] in inv_before and inv_carry.
// Uniform control flow. Step 2 is the left fold of the pieces' (heads, trail) in invocation
// order, computed in parallel: H[l] sums integers (through per-chunk sums), C[l] and the
// aggregate's value come from segment_fold. (One invocation folding all BLOCK pieces in turn
// kept every tile waiting on a chain of BLOCK shared-memory reads; now the chain is as long as
// the longest run of invocations without a head.)
Carry tile_summary(uint t, uint l, bool own, uint heads_l, VT trail_l) {
    // inv_heads, inv_trail and inv_chunk may still be read by an earlier summary (the tile's
    // own, before the look-back's fallback computes a predecessor's; `own` is uniform).
    if (!own) barrier();
    inv_heads[l] = heads_l;
    inv_trail[l] = trail_l;
    barrier();
    if (l < BLOCK / CHUNK) {
        uint sum = 0u;
        [[unroll]] for (uint i = 0u; i < CHUNK; ++i) sum += inv_heads[l * CHUNK + i];
        inv_chunk[l] = sum;
    }
    // Invocations with elements: the first `pieces` (one past the end has no heads, and the
    // fold skips it).
    uint valid = p.n - t * TILE;  // elements of the tile (at least one)
    uint pieces = min((valid + ITEMS - 1u) / ITEMS, BLOCK);
    if (own && l == 0u) inv_carry[0] = VT(0);
    if (l < pieces && (l == 0u || inv_heads[l] > 0u)) segment_fold(l, pieces, own);
    barrier();
    if (own) {
        uint h = 0u;
        uint c = l / CHUNK;
        for (uint i = 0u; i < c; ++i) h += inv_chunk[i];
        for (uint r = c * CHUNK; r < l; ++r) h += inv_heads[r];
        inv_before[l] = h;
    }
    if (l == 0u) {
        uint heads = 0u;
        [[unroll]] for (uint i = 0u; i < BLOCK / CHUNK; ++i) heads += inv_chunk[i];
        s_carry.heads = heads;
    }
    barrier();
    return s_carry;
}

#if defined(XW_RUNS_EPOCHS)
// XW_RUNS_EPOCHS (reduce_by_key_e64.comp: 4-byte values, 64-bit buffer atomics, a launch of more
// than one tile): `work` is the device's epochs buffer (src/device.rs, Device::epochs; the scans'
// scheme, scan_device.glsl): its header's 64-bit word 0 the ticket (low) and the epoch (high),
// its 32-bit word 2 the first state the last ticket zeroes, then 64-bit states from EPOCH_BASE. A tile's
// aggregate and inclusive prefix are two states each, the value's bits and the heads, each with
// the call's tag (its epoch times 4 plus 2) in its high word: a state of another call reads as
// unpublished, so nothing is zeroed after the call and nothing counts the tiles done (that
// count's acquire-release is a MEMBAR.SC.GPU on NVIDIA's Vulkan driver: NOTES.md, version 68).
// Each state is stored by one relaxed atomic and read by one; a reader polls a state until it
// bears the tag (the two states of a pair need no order between them). Every state of the
// call's tiles is written (tile 0 publishes its aggregate too), so each is renewed or zeroed
// within the epochs' wrap.
const uint EPOCH_BASE = 32u;  // 64-bit words of the header (src/device.rs, EPOCH_HEADER_BYTES)
const uint SCRUB = 1024u;     // the states the last ticket zeroes (xwarp::scan::EPOCH_SCRUB)

uint state_at(uint tile, uint flag) {
    return EPOCH_BASE + 4u * tile + (flag == FLAG_INCLUSIVE ? 2u : 0u);
}

void publish(uint tile, uint flag, Carry c) {
    uint at = state_at(tile, flag);
    uint64_t tag = uint64_t(s_tag) << 32;
    atomicStore(work64[at], tag | uint64_t(vt_bits(c.v).x), gl_ScopeDevice,
                gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
    atomicStore(work64[at + 1u], tag | uint64_t(c.heads), gl_ScopeDevice,
                gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
}

uint64_t load_state(uint at) {
    return atomicLoad(work64[at], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                      gl_SemanticsRelaxed);
}

bool tagged(uint64_t w) { return uint(w >> 32) == s_tag; }

// By the heads' states (a value state may arrive later: read_seen polls it).
uint poll_flag(uint tile) {
    uint64_t a = load_state(state_at(tile, FLAG_AGGREGATE) + 1u);
    uint64_t i = load_state(state_at(tile, FLAG_INCLUSIVE) + 1u);
    return tagged(i) ? FLAG_INCLUSIVE : tagged(a) ? FLAG_AGGREGATE : 0u;
}

Carry read_seen(uint tile, uint flag) {
    uint at = state_at(tile, flag);
    uint64_t v = load_state(at);
    uint64_t h = load_state(at + 1u);
    while (!tagged(v)) v = load_state(at);
    while (!tagged(h)) h = load_state(at + 1u);
    Carry c;
    c.heads = uint(h);
    c.v = vt_from(uvec2(uint(v), 0u));
    return c;
}

Carry read_published(uint tile, uint flag) { return read_seen(tile, flag); }

// The near look-back's poll: a tile's four states in one round trip; its inclusive prefix
// where both of its states bear the tag, else its aggregate where both of those do (into c),
// else 0 (a pair seen in part is polled again).
uint read_state(uint tile, out Carry c) {
    uint at = state_at(tile, FLAG_AGGREGATE);
    uint64_t av = load_state(at);
    uint64_t ah = load_state(at + 1u);
    uint64_t iv = load_state(at + 2u);
    uint64_t ih = load_state(at + 3u);
    bool inclusive = tagged(iv) && tagged(ih);
    c.heads = uint(inclusive ? ih : ah);
    c.v = vt_from(uvec2(uint(inclusive ? iv : av), 0u));
    return inclusive ? FLAG_INCLUSIVE : tagged(av) && tagged(ah) ? FLAG_AGGREGATE : 0u;
}
#else
uint state_at(uint tile, uint flag) {
    return (flag == FLAG_INCLUSIVE ? w_inclusives() : w_aggregates()) + 4u * tile;
}
#endif

#if defined(XW_RUNS_EPOCHS)
#elif defined(XW_RUNS_PACKED)
// XW_RUNS_PACKED (reduce_by_key_p64.comp: 4-byte values, 64-bit buffer atomics): a state is one
// 64-bit word, its high half the heads + 1 (at most 2^30 + 1: never zero once published), its low
// half the value's bits, stored by one atomic and read by one, so neither side needs a buffer
// barrier: NVIDIA's Vulkan driver (580) makes every device-scope barrier and every release or
// acquire atomic a sequentially consistent fence (MEMBAR.SC.GPU); with one-word states the
// kernel takes 0.90-0.96x the time of the two-word form at 2^14-2^26 on an H200 (NOTES.md,
// version 68). The flag words stay zero; a tile's flag is the nonzero one of its two words.
void publish(uint tile, uint flag, Carry c) {
    uint64_t w = (uint64_t(c.heads + 1u) << 32) | uint64_t(vt_bits(c.v).x);
    // The owner's and a fallback's aggregate are the same bits: either order leaves them.
    atomicMax(work64[state_at(tile, flag) / 2u], w);
}

uint64_t load_state(uint at) {
    return atomicLoad(work64[at / 2u], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                      gl_SemanticsRelaxed);
}

uint poll_flag(uint tile) {
    uint64_t a = load_state(state_at(tile, FLAG_AGGREGATE));
    uint64_t i = load_state(state_at(tile, FLAG_INCLUSIVE));
    return i != 0ul ? FLAG_INCLUSIVE : a != 0ul ? FLAG_AGGREGATE : 0u;
}

// The value `tile` published with `flag` (its own word: an inclusive prefix seen does not make
// the aggregate's word visible, so it is polled until it is).
Carry read_seen(uint tile, uint flag) {
    uint at = state_at(tile, flag);
    uint64_t w = load_state(at);
    while (w == 0ul) w = load_state(at);
    Carry c;
    c.heads = uint(w >> 32) - 1u;
    c.v = vt_from(uvec2(uint(w), 0u));
    return c;
}

Carry read_published(uint tile, uint flag) { return read_seen(tile, flag); }
#else
void publish(uint tile, uint flag, Carry c) {
    uint at = state_at(tile, flag);
    uvec2 b = vt_bits(c.v);
    work[at] = c.heads;
    work[at + 1u] = b.x;
    work[at + 2u] = b.y;
    memoryBarrierBuffer();
    atomicMax(work[W_FLAGS + tile], flag);
}

uint poll_flag(uint tile) {
    return atomicLoad(work[W_FLAGS + tile], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                      gl_SemanticsRelaxed);
}

// The value `tile` published with `flag`, once this invocation's poll has seen the flag and a
// barrier has followed.
Carry read_seen(uint tile, uint flag) {
    uint at = state_at(tile, flag);
    Carry c;
    c.heads = work[at];
    c.v = vt_from(uvec2(work[at + 1u], work[at + 2u]));
    return c;
}

// The published value of `tile` for `flag`, once its flag has reached it.
Carry read_published(uint tile, uint flag) {
    while (poll_flag(tile) < flag) {
    }
    memoryBarrierBuffer();
    return read_seen(tile, flag);
}
#endif

// The exclusive prefix E of tile k > 0 (every invocation gets it), whose aggregate is `agg`;
// publishes the tile's inclusive prefix. Uniform control flow.
Carry look_back(uint k, Carry agg, uint l) {
    // The near look-back, by subgroup 0 alone: lane i polls the flag of tile k - 1 - i until
    // every tile of the window up to the nearest inclusive prefix (lane m) has published; then
    // lane i <= m reads its tile's value and one lane folds the window from lane m down to lane
    // 0: the window's left fold, bit for bit the first-window path's below, with subgroup
    // barriers in place of the four workgroup barriers a poll below (the basic subgroup
    // operations only). The other subgroups stage their keys meanwhile (see main). A window
    // without an inclusive prefix, or a budget run out, leaves the look-back to the window path
    // below (with the polls left): walking down a subgroup's window at a time (integers) took
    // 1.07-1.14x the time of leaving at once on the CUDA twin (H200, 2^20-2^24).
    if (gl_SubgroupID == 0u) {
        uint lane = xw_bound(gl_SubgroupInvocationID);
        uint count = min(min(gl_SubgroupSize, BLOCK), k);
        uint top = k - 1u;
        uint polls = 0u;
        uint m;
        bool gap;
#if defined(XW_RUNS_EPOCHS)
        // XW_RUNS_EPOCHS: each poll reads a tile's four states at once and keeps the nearest
        // complete pair (read_state), so the window's values need no second round trip; the
        // window's nearest inclusive prefix and its gaps by ballots (the kernel's device has
        // them).
        Carry c;
        while (true) {
            uint f = lane < count ? read_state(top - lane, c) : 0u;
            uvec4 inclusive = subgroupBallot(f == FLAG_INCLUSIVE);
            m = inclusive == uvec4(0u) ? count : subgroupBallotFindLSB(inclusive);
            gap = subgroupAny(lane < m && f == 0u);
            if (!gap || polls >= p.spin) break;
            ++polls;
        }
#else
        while (true) {
            if (lane == 0u) {
                lb_m = count;
                lb_gap = 0u;
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint f = lane < count ? poll_flag(top - lane) : 0u;
            if (f == FLAG_INCLUSIVE) atomicMin(lb_m, lane);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            m = lb_m;
            if (lane < m && f == 0u) atomicOr(lb_gap, 1u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            gap = lb_gap != 0u;
            subgroupBarrier();  // every lane has read lb_m and lb_gap
            if (!gap || polls >= p.spin) break;
            ++polls;
        }
#endif
        bool ok = !gap && m < count;
        if (ok) {
            // The window's fold, from its nearest inclusive prefix down. Every lane up to m has
            // seen its tile's flag in the last poll (XW_RUNS_EPOCHS: read its value with it).
#if defined(XW_RUNS_EPOCHS)
            if (lane <= m) lb_val[lane] = c;
#else
#if !defined(XW_RUNS_PACKED)
            memoryBarrierBuffer();
#endif
            if (lane <= m) {
                lb_val[lane] = read_seen(top - lane, lane == m ? FLAG_INCLUSIVE : FLAG_AGGREGATE);
            }
#endif
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            if (lane == 0u) {
                Carry w = lb_val[m];
                for (int i = int(m) - 1; i >= 0; --i) w = carry_op(w, lb_val[i]);
                lb_near = w;
                publish(k, FLAG_INCLUSIVE, carry_op(w, agg));
            }
        }
        if (lane == 0u) {
            lb_ok = uint(ok);
            lb_polls = polls;
        }
    }
    barrier();
    if (lb_ok != 0u) return lb_near;
    int hi = int(k) - 1;
    int j = -1;
    uint polls = lb_polls;
    while (hi >= 0) {
        uint count = uint(min(hi + 1, int(BLOCK)));
        uint m;
        bool gap;
        while (true) {
            if (l == 0u) {
                lb_m = count;
                lb_gap = 0u;
                lb_heads = 0u;
                lb_head = BLOCK;
            }
            barrier();
            if (l < count) {
                uint f = poll_flag(uint(hi) - l);
                lb_flag[l] = f;
                if (f == FLAG_INCLUSIVE) atomicMin(lb_m, l);
            }
            barrier();
            m = lb_m;
            if (l < m && lb_flag[l] == 0u) atomicOr(lb_gap, 1u);
            barrier();
            gap = lb_gap != 0u;
            barrier();
            if (!gap || polls >= p.spin) break;
            ++polls;
        }
        if (!gap && m < count && hi == int(k) - 1) {
            // The usual case: the nearest inclusive prefix in the first window and every tile
            // after it published. Their values are read at once, one per invocation (each
            // flag already seen), and folded from shared memory in the same order as below:
            // one thread reading them one after another made the look-back a chain of memory
            // round trips (the toolbox's runs at 0.02-0.03x CUB's speed at 2^24 on an H100).
            // The fold (from m down to 0) is the heads' sum and, for the value, the fold from
            // the nearest value with a head (lb_head) down: what it skips, a head overwrites.
            if (l <= m) {
                Carry c = read_published(uint(hi) - l, l == m ? FLAG_INCLUSIVE : FLAG_AGGREGATE);
                lb_val[l] = c;
                atomicAdd(lb_heads, c.heads);
                if (l < m && c.heads > 0u) atomicMin(lb_head, l);
            }
            barrier();
            if (l == 0u) {
                uint from = min(lb_head, m);
                Carry e;
                e.heads = lb_heads;
                e.v = lb_val[from].v;
                for (int i = int(from) - 1; i >= 0; --i) e.v = vop(e.v, lb_val[i].v);
                s_carry = e;
                publish(k, FLAG_INCLUSIVE, carry_op(e, agg));
            }
            barrier();
            return s_carry;
        }
        if (gap) {
            // Predecessors above the nearest inclusive prefix that published nothing within the
            // budget: computed here and published (lb_flag is uniform: shared, read after a
            // barrier).
            for (uint i = 0u; i < m; ++i) {
                if (lb_flag[i] != 0u) continue;
                uint tile = uint(hi) - i;
                uint h;
                VT trail;
                piece_stats(tile, l, h, trail);
                Carry a = tile_summary(tile, l, false, h, trail);
                if (l == 0u) publish(tile, FLAG_AGGREGATE, a);
            }
        }
        if (m < count) {
            j = hi - int(m);
            break;
        }
        hi -= int(count);
    }
    // Fold forward from the nearest inclusive prefix P(j) (or from tile 0): E = P(j) + A(j + 1)
    // + ... + A(k - 1), the same left fold whichever j was found. Tile 0 has a head, so the
    // start without a prefix is never combined with a value. Every tile after j has published at
    // least its aggregate (the walk above saw it, or published it): a window of them is read at
    // once, one per invocation, and folded from shared memory by one invocation in order.
    if (l == 0u) {
        Carry e;
        e.heads = 0u;
        e.v = VT(0);
        if (j >= 0) e = read_published(uint(j), FLAG_INCLUSIVE);
        s_carry = e;
        lb_heads = 0u;
        lb_head = 0u;
    }
    for (uint lo = uint(j + 1); lo < k; lo += BLOCK) {
        uint c = min(k - lo, BLOCK);
        barrier();  // the previous window's fold has read lb_val
        if (l < c) {
            Carry a = read_published(lo + l, FLAG_AGGREGATE);
            lb_val[l] = a;
            atomicAdd(lb_heads, a.heads);
            if (a.heads > 0u) atomicMax(lb_head, l + 1u);
        }
        barrier();
        if (l == 0u) {
            // The window's fold: the heads' sum, and the value folded from the last value
            // with a head (index lb_head - 1), or from the carry when none has one.
            Carry e = s_carry;
            uint last = lb_head;
            e.heads += lb_heads;
            if (last > 0u) e.v = lb_val[last - 1u].v;
            for (uint i = last; i < c; ++i) e.v = vop(e.v, lb_val[i].v);
            s_carry = e;
            lb_heads = 0u;
            lb_head = 0u;
        }
    }
    if (l == 0u) publish(k, FLAG_INCLUSIVE, carry_op(s_carry, agg));
    barrier();
    return s_carry;
}

// SELF_CLEARING, by invocation 0 once the tile has published its last state and every
// invocation has read its last one (the barrier that ends look_back; tile 0 reads none): counts
// the tile done, and s_last tells whether it was the last (every other tile is then past the
// states). Release: the tile's publications come before its count.
void count_tile_done() {
    uint before = atomicAdd(work[W_DONE], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                            gl_SemanticsRelease);
    s_last = before + 1u == p.tiles ? 1u : 0u;
}

// SELF_CLEARING, at the end of the tile: the last tile to count itself done zeroes every work
// word (the ticket, the count, the flags and the published values). Uniform control flow.
void zero_work_if_last(uint l) {
    barrier();
    if (s_last == 0u) return;
    // Acquire: every other tile's count, and so its use of the states, before the zeroing.
    memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
    uint words = w_inclusives() + 4u * p.tiles;
    for (uint i = l; i < words; i += BLOCK) work[i] = 0u;
}

// Step 4 for one piece: stages what the piece outputs (unique: a key at each head; the others:
// a key, or with `values` the run's value, at each tail) at its place in the tile's output,
// r - e.heads; returns the places it covers as [x, y) (y = 0: none).
uvec2 stage_outputs(uvec2 k[ITEMS], VT v[ITEMS], uint heads, uint tails, uint len, Carry e,
                    uint before, VT carry, uint l, bool values) {
#if defined(XW_RUNS_UNIQUE)
    uint outs = heads;
#else
    uint outs = tails;
#endif
    // Element j's place is before + the piece's heads up to j: the first and last outputs'
    // places bound the piece's range.
    uint lo = TILE + 1u;
    uint hi = 0u;
    if (outs != 0u) {
        uint f = uint(findLSB(outs));
        uint z = uint(findMSB(outs));
        lo = before + bitCount(heads & ((2u << f) - 1u));
        hi = before + bitCount(heads & ((2u << z) - 1u)) + 1u;
    }
    uint seen = 0u;  // heads of the piece so far
#if defined(XW_STAGE_ALL)
    // Every element stores, a non-output to the invocation's own scratch place TILE + 1 + l,
    // which no write-out reads (elements past the piece's end are neither heads nor tails).
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        bool head = ((heads >> j) & 1u) != 0u;
        seen += uint(head);
        bool emit = ((tails >> j) & 1u) != 0u;
        uint at = emit ? before + seen : TILE + 1u + l;  // the run's index + 1 - e.heads
        if (!values) {
            stage[stage_at(KEY_WORDS * at)] = k[j].x;
            if (KEY_WORDS == 2u) stage[stage_at(KEY_WORDS * at + 1u)] = k[j].y;
        } else {
            // The fold within the piece; a run that began before the piece is completed below.
            uvec2 b = vt_bits(v[j]);
            stage[stage_at(VALUE_WORDS * at)] = b.x;
            if (VALUE_WORDS == 2u) stage[stage_at(VALUE_WORDS * at + 1u)] = b.y;
        }
    }
#else
    [[unroll]] for (uint j = 0u; j < ITEMS; ++j) {
        if (j < len) {
            bool head = ((heads >> j) & 1u) != 0u;
            seen += uint(head);
            VT partial = v[j];
            uint at = before + seen;  // the run's index + 1 - e.heads
#if defined(XW_RUNS_UNIQUE)
            bool emit = head;
#else
            bool emit = ((tails >> j) & 1u) != 0u;
#endif
            if (emit) {
                if (!values) {
                    stage[stage_at(KEY_WORDS * at)] = k[j].x;
                    if (KEY_WORDS == 2u) stage[stage_at(KEY_WORDS * at + 1u)] = k[j].y;
                } else {
                    // The fold within the piece; a run that began before the piece is
                    // completed below.
                    uvec2 b = vt_bits(partial);
                    stage[stage_at(VALUE_WORDS * at)] = b.x;
                    if (VALUE_WORDS == 2u) stage[stage_at(VALUE_WORDS * at + 1u)] = b.y;
                }
            }
        }
    }
#endif
    // The piece's entering run (its elements before its first head) began in an earlier piece
    // of the tile or in an earlier tile; its output, if the piece has it (a tail before the first
    // head), is the only one whose value needs the carry C[l] or the prefix e: read back from its
    // place `before` (this invocation's own store) and completed there, in the canonical order.
    uint entering = tails & ((heads & (0u - heads)) - 1u);
    if (values && entering != 0u) {
        uint at = stage_at(VALUE_WORDS * before);
        uint at_hi = stage_at(VALUE_WORDS * before + 1u);
        VT partial = vt_from(uvec2(stage[at], VALUE_WORDS == 2u ? stage[at_hi] : 0u));
        VT local = l == 0u ? partial : vop(carry, partial);
        VT value = before == 0u ? vop(e.v, local) : local;
        uvec2 b = vt_bits(value);
        stage[at] = b.x;
        if (VALUE_WORDS == 2u) stage[at_hi] = b.y;
    }
    return uvec2(lo, hi);
}

void main() {
    uint l = gl_LocalInvocationIndex;
    if (p.clear == CLEAR_LAUNCH) {
        uint i = xw_group() * BLOCK + l;
#if defined(XW_RUNS_PACKED)
        // Every state word too (the flags tell nothing here), by a stride of the whole grid.
        uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * BLOCK;
        for (uint w = i; w < w_inclusives() + 4u * p.tiles; w += stride) work[w] = 0u;
#else
        if (i < W_FLAGS + p.tiles) work[i] = 0u;
#endif
        if (i == 0u) {
            runs[0] = 0u;
            runs[1] = 0u;
        }
        return;
    }
    // Whole workgroups leave together, so the barriers below stay uniform.
    if (xw_group() >= p.tiles) return;
    // Tiles are numbered in the order workgroups take a ticket, so a tile's predecessors have
    // started. A call of one tile touches no work word: no ticket, no state (no tile reads it),
    // no count of tiles done and nothing to zero; each of them costs a round trip, and every
    // barrier around a state a fence on NVIDIA's Vulkan driver (see publish).
#if defined(XW_RUNS_EPOCHS)
    // The ticket and the epoch in one atomic; the last ticket sets the next epoch (no tile of
    // the launch takes a ticket after it) and moves the zeroing on (the states it zeroes at the
    // tile's end).
    if (l == 0u) {
        uint64_t ticket = atomicAdd(work64[0], uint64_t(1));
        uint epoch = uint(ticket >> 32);
        s_word = uint(ticket);
        s_tag = (epoch << 2u) + 2u;
        s_scrub = 0u;
        if (uint(ticket) + 1u == p.tiles) {
            uint next = epoch + 1u >= p.epoch_wrap ? 0u : epoch + 1u;
            atomicExchange(work64[0], uint64_t(next) << 32);
            uint at = work[2];
            work[2] = at + SCRUB >= p.epoch_tiles ? 0u : at + SCRUB;
            s_scrub = at + 1u;
        }
    }
#else
    if (l == 0u) s_word = p.tiles == 1u ? 0u : atomicAdd(work[0], 1u);
#endif
    barrier();
    uint t = s_word;
    // The tile's output range, widened in step 4 (the summary's barriers publish these).
    if (l == 0u) {
        out_lo = TILE + 1u;
        out_hi = 0u;
    }
    // The invocation's piece, loaded once: its summary now, its outputs after the look-back.
    uvec2 k[ITEMS];
    VT v[ITEMS];
    uint heads, tails, len;
    load_piece(t, l, k, v, heads, tails, len);
    Carry agg = tile_summary(t, l, true, bitCount(heads), len > 0u ? v[ITEMS - 1u] : VT(0));
    uint before = inv_before[l];
    VT carry = inv_carry[l];
    Carry e;
    e.heads = 0u;
    e.v = VT(0);
#if defined(XW_RUNS_EPOCHS)
    if (l == 0u) publish(t, FLAG_AGGREGATE, agg);  // tile 0's too: every state renewed
#else
    if (t > 0u && l == 0u) publish(t, FLAG_AGGREGATE, agg);
#endif
    // Step 4: the tile's outputs take consecutive places from e.heads - 1 on; each is staged in
    // shared memory at its place in the tile's range (r - e.heads, 0 to TILE) and the range is
    // then written by all invocations at once, consecutive invocations writing consecutive
    // words (each storing its own outputs used 4 of every 32 bytes written, on the CUDA twin).
    // The keys' places do not depend on the look-back, so they are staged before it (while
    // subgroup 0 looks back, the others stage theirs). Every invocation read its piece from the
    // stage before the summary's barriers.
    uvec2 range = stage_outputs(k, v, heads, tails, len, e, before, carry, l, false);
    if (range.y > 0u) {
        atomicMin(out_lo, range.x);
        atomicMax(out_hi, range.y);
    }
    if (t == 0u) {
        if (l == 0u && p.tiles > 1u) publish(0u, FLAG_INCLUSIVE, agg);
    } else {
        e = look_back(t, agg, l);
    }
    if (SELF_CLEARING != 0u && p.tiles > 1u && l == 0u) count_tile_done();
    if (t + 1u == p.tiles && l == 0u) {
        runs[0] = e.heads + agg.heads;
        runs[1] = 0u;
    }
    barrier();
    uint lo = out_lo;
    uint hi = out_hi;
    // Place `at` of the tile is output e.heads + at - 1 (at >= 1 where e.heads is 0).
    for (uint w = lo * KEY_WORDS + l; w < hi * KEY_WORDS; w += BLOCK) {
        keys_out[e.heads * KEY_WORDS + w - KEY_WORDS] = stage[stage_at(w)];
    }
#if !defined(XW_RUNS_UNIQUE)
    barrier();  // the keys are written out
    stage_outputs(k, v, heads, tails, len, e, before, carry, l, true);
    barrier();
    for (uint i = lo + l; i < hi; i += BLOCK) {
        values_out[e.heads + i - 1u] =
            vt_from(uvec2(stage[stage_at(VALUE_WORDS * i)],
                          VALUE_WORDS == 2u ? stage[stage_at(VALUE_WORDS * i + 1u)] : 0u));
    }
#endif
    if (SELF_CLEARING != 0u && p.tiles > 1u) zero_work_if_last(l);
#if defined(XW_RUNS_EPOCHS)
    // The last ticket's tile zeroes SCRUB states from the zeroing's place, but for the call's
    // own (each written with its tag above).
    if (s_scrub != 0u) {
        for (uint i = l; i < SCRUB; i += BLOCK) {
            uint at = s_scrub - 1u + i;
            if (at >= 4u * p.tiles) work64[EPOCH_BASE + at] = uint64_t(0);
        }
    }
#endif
}
