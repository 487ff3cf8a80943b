// The device scan's text, included by scan_device.comp (every type, the tile state below) and
// scan_device_s64.comp (32-bit types with the state in one 64-bit word per tile, XW_STATE64).
//
// Device scan, single pass: each workgroup scans a tile of BLOCK * ITEMS elements and finds
// the tile's exclusive prefix E by decoupled look-back; the twin of cuda/scan_device.cu,
// modelled by src/cpu/scan.rs.
//
// Data movement: 32-bit types load the tile coalesced (element i * BLOCK + local in round i)
// into shared memory and transpose it there, so each invocation gets its ITEMS consecutive
// elements; outputs go back the same way. The shared index is padded by one word per 32, so
// neither direction has bank conflicts. 64-bit types (whose tile would not fit in the 32 KiB
// of shared memory some devices offer) load their consecutive elements directly.
//
// Canonical floats: E(k) is always the left fold A(0) + A(1) + ... + A(k-1) of the tile totals.
// The look-back finds the nearest published inclusive prefix P(j) (itself that fold up to j)
// and folds the aggregates A(j+1) .. A(k-1) onto it in order, one invocation doing the
// arithmetic, so the bits do not depend on which j it found, that is on timing.
//
// 32-bit types look back first with subgroup 0 alone over its nearest predecessors
// (look_back_near, below), the CUDA twin's near look-back. The window path:
// the look-back reads a window of LB_TILES predecessors per invocation at once (invocation i
// reads tiles hi - i - r * BLOCK, r < LB_TILES), polling until every tile above the window's
// nearest inclusive prefix has published at least its aggregate; with no inclusive prefix in
// the window, the whole window must be published and the look-back moves on to the tiles
// below. The workgroup meets in shared memory (no subgroup operation is involved), so the
// window does not depend on the subgroup size. State words are polled with relaxed atomic
// loads: an atomicOr(x, 0) would be a read-modify-write that every waiting workgroup serialises
// on the same few words (measured 2x slower on an H200).
//
// Tile state: 64-bit types keep a flag per tile (flags[t]) and the values in `aggregates` and
// `inclusives`. 32-bit types keep flag and value together in flags[2t] and flags[2t + 1], each
// word holding the flag in its high half and 16 bits of the value in its low half, and each
// written by a 32-bit atomicMax: a tile's value for a given flag is unique, so a reader whose
// two words carry the same flag has a value that is whole, in one round trip and without
// fences; two different flags (a publication under way) read as unpublished. With XW_STATE64
// (where the device has 64-bit buffer atomics) the two halves are one 64-bit word instead,
// flags[t], the flag in its high half and the value in its low half, published by one 64-bit
// atomicMax and polled by one 64-bit load, as the CUDA twin keeps it: it is never read torn,
// and it halves the look-back's loads and atomics (the scan 24-32% faster at 2^28 on an
// H100, NOTES.md version 8). The first window is folded from the values it polled; a deeper
// look-back reads the words again on its way up, and a tile that has meanwhile replaced its
// aggregate by its inclusive prefix restarts the fold from that prefix (the same left fold).
//
// No deadlock on any conformant device: Vulkan promises no forward progress between
// workgroups, so after `spin` polls of a window with unpublished tiles, the workgroup reduces
// those tiles itself (in the canonical order: the very bits their owners will publish) and
// publishes their aggregates. Flags only grow (atomicMax), so two publishers of the same
// aggregate cannot set a flag back.
//
// Fresh states: a launch needs every state it reads to be unpublished until its tile publishes.
// The clearing launch zeroes them ahead of a scan whose states are fresh memory; SELF_CLEARING
// (below) zeroes them after, the tile that counts itself done last; EPOCH_STATES (XW_STATE64
// only) zeroes none of the launch's own: the states lie in the device's epochs buffer
// (src/device.rs, Device::epochs), and each state's high word is the epoch of the launch that
// published it times 4 plus the flag (g_eb below), so a state of an earlier launch reads as
// unpublished (read_state). A tile's own first publication replaces whatever an earlier launch
// left by an exchange (a state of an earlier launch may carry a larger tag once the epochs have
// wrapped); every later one, and a fallback's for another tile, takes the maximum as without
// epochs, so that within a launch no state goes back from an inclusive prefix to an aggregate,
// which the look-back's walk relies on (plain stores for all gave wrong sums on an H200). The
// tile counter and the epoch are one 64-bit word (counters[chunk] and counters[chunk + 1]): a
// tile takes its number and the launch's epoch in one atomic, and the tile that takes the last
// number sets the word to the next epoch (modulo p.epoch_wrap, 2^30 by default, where the tag
// would overflow) and number 0 at once, since no tile of the launch takes a number after it.
// That tile also zeroes SCRUB states from counters[chunk + 2] on that the launch does not use,
// moving that place on: every state is zeroed, or written again by a launch, at least once in
// p.epoch_tiles / SCRUB launches, fewer than the epochs before a tag recurs, so no state can
// carry the tag of a later launch. So a launch costs one atomic a tile, as with fresh states;
// counting every tile done, as SELF_CLEARING does, cost 4-10% at 2048-65536 tiles on an H200
// (NOTES.md version 52).
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;  // 0 sum, 2 min, 3 max (reduce_op.glsl codes)
layout(constant_id = 2) const uint EXCLUSIVE = 0u;
layout(constant_id = 3) const uint ITEMS = 16u;
layout(constant_id = 4) const uint LB_TILES = 1u;  // look-back window: tiles per invocation
// 1: launches with p.clear == EPOCH_STATES (XW_STATE64 only), whose code only this variant has
// (the others' kernels are those from before it).
layout(constant_id = 6) const uint EPOCHS = 0u;
// Constant 5 (PARTIALS_IN_SHARED) is the CUDA twin's choice between shared memory and registers
// for the partial folds; this kernel always keeps them in shared memory (32-bit types): NVIDIA's
// Vulkan compiler gave the kernel 85-87 registers with the register path present behind a
// specialization constant, and 61-66 without it.

const uint FLAG_AGGREGATE = 1u;
const uint FLAG_INCLUSIVE = 2u;

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) coherent buffer Counters { uint counters[]; };
#if defined(XW_STATE64)
// EPOCH_STATES: the tile counter and the epoch as one word (p.chunk is 0 there).
layout(std430, binding = 2) coherent buffer Counters64 { uint64_t counters64[]; };
#endif
#if defined(XW_STATE64)
layout(std430, binding = 3) coherent buffer Flags { uint64_t flags[]; };  // one word per tile
#else
layout(std430, binding = 3) coherent buffer Flags { uint flags[]; };
#endif
layout(std430, binding = 4) coherent buffer Aggregates { T aggregates[]; };
layout(std430, binding = 5) coherent buffer Inclusives { T inclusives[]; };
layout(push_constant) uniform Params {
    uint n;       // elements in this launch (a chunk of whole tiles)
    uint tiles;   // tiles in this launch; clearing: flag words (two per tile of the scan)
    uint tile0;   // global index of the launch's first tile
    uint chunk;   // this launch's tile counter; clearing: the number of counters
    uint spin;    // polls of a window with unpublished tiles before reducing them here
    uint clear;   // CLEAR_LAUNCH, SELF_CLEARING, EPOCH_STATES or 0 (see below)
    uint epoch_wrap;   // EPOCH_STATES: the number of epochs (after the last comes 0)
    uint epoch_tiles;  // EPOCH_STATES: the states `flags` holds (a multiple of SCRUB)
    // A gated call (XW_GATE below): the exact launch's workgroups, x and y; 0 in other calls.
    uint gate_x;
    uint gate_y;
} p;

// p.clear: only zero flags[0 .. tiles) and counters[0 .. chunk) (the clearing launch ahead of a
// scan whose temporaries are fresh memory).
const uint CLEAR_LAUNCH = 1u;
// p.clear: a scan of one launch whose tile states and counters lie in the device's counters
// buffer (src/scan.rs), zero when the launch starts and zero again when it ends: counters[chunk]
// numbers the tiles, counters[chunk + 1] counts the tiles done with the states (each as soon as
// its prefix is published, so the count's round trip overlaps the tile's output), and the last
// of them zeroes the states and both counters after its output (no clearing launch).
const uint SELF_CLEARING = 2u;
// p.clear: a scan of one launch of 32-bit states in one word (XW_STATE64) whose states and
// counters lie in the device's epochs buffer (see the top): counters[chunk] numbers the tiles,
// counters[chunk + 1] is the epoch, counters[chunk + 2] the first state the last number
// zeroes. Only the variant EPOCHS = 1 runs it.
const uint EPOCH_STATES = 3u;
// This launch's epoch times 4, the tag of its states' flags (EPOCH_STATES).
uint g_eb = 0u;
// Gated f32 sums (src/scan.rs, on devices whose driver flushes subnormals): the call runs the
// driver's arithmetic in the gate kernel (scan_device_gate.comp, XW_GATE), which also tests
// every input, and after it the exact variant of this kernel as an indirect launch whose
// workgroup counts are words GATE_ARGS .. GATE_ARGS + 2 of the epochs buffer's header. They are
// zero (no workgroup) unless a subgroup of the gate found an input the driver's sums may get
// wrong (xw_sum_key below XW_SUM_KEY_SAFE), which sets them to p.gate_x, p.gate_y and 1; then
// the exact launch computes the whole scan again under the next epoch, and its tile that takes
// the last number sets word GATE_ARGS back to zero. Where every input is zero, infinite, NaN or
// of magnitude 2^-103 or more, every sum is a multiple of 2^-126 (XW_INPUT_TESTS below): the
// gate's bits are the exact variant's.
const uint GATE_ARGS = 4u;

shared T stage[gl_WorkGroupSize.x];
shared T warp_totals[gl_WorkGroupSize.x / XW_WARP];
shared uint s_word;
// The look-back: one window of LB_WINDOW tiles.
const uint LB_WINDOW = gl_WorkGroupSize.x * LB_TILES;
shared T lb_values[LB_WINDOW];   // lb_values[i]: the value of the window's i-th tile
shared uint lb_flags[LB_WINDOW];  // its flag as read (the fallback's list)
shared uint lb_m[2];    // nearest inclusive prefix of the window, per poll parity
shared uint lb_gap[2];  // a tile above it has not published, per poll parity
shared uint s_last;     // the last inclusive prefix of a window read upwards, plus one
shared uint s_last_tile;  // SELF_CLEARING: this tile was the last to count itself done
shared uint s_eb;         // EPOCH_STATES: the launch's epoch times 4
shared uint s_scrub;      // EPOCH_STATES: the last number's first state to zero, plus one
shared T s_value;

#if !defined(XW_T_64)
#define XW_PACKED 1
#if !defined(XW_VEC)
#define XW_TRANSPOSE 1
shared T tile_stage[gl_WorkGroupSize.x * ITEMS + gl_WorkGroupSize.x * ITEMS / 32u];
#endif
#endif
#if defined(XW_VEC)
#if defined(XW_T_64) || !defined(XW_STATE64)
#error "XW_VEC is the 4-byte types' tile in registers, with the one-word state"
#endif
// The tile in registers (scan_device_vec.comp): ITEMS / 4 vectors of four consecutive elements
// an invocation (the host takes this kernel only where ITEMS is a multiple of 4; for f32 only
// at ITEMS = 16, the documented order's), read and written by one 16-byte access each, through
// these views of bindings 0 and 1.
layout(std430, binding = 0) readonly buffer Src4 { uvec4 src4[]; };
layout(std430, binding = 1) writeonly buffer Dst4 { uvec4 dst4[]; };
#if defined(XW_TYPE_I32)
#define TV ivec4
#elif defined(XW_TYPE_F32)
#define TV vec4
#else
#define TV uvec4
#endif
const uint VECS = ITEMS / 4u;
#endif
#if defined(XW_STATE64) && !defined(XW_PACKED)
#error "XW_STATE64 is the 32-bit types' state"
#endif

#include "reduce_op.glsl"
#include "scan_common.glsl"

#if (defined(XW_TRANSPOSE) || defined(XW_VEC)) && defined(XW_TYPE_F32) && \
    (defined(XW_SUBNORMALS_EXACT) || defined(XW_GATE))
// Below XW_SUM_KEY_SAFE: the nonzero magnitudes below 2^-103 (biased exponent 24); a zero's
// key wraps to the largest.
uint xw_sum_key(T v) { return (floatBitsToUint(v) & 0x7fffffffu) - 1u; }
const uint XW_SUM_KEY_SAFE = (24u << 23) - 1u;
#endif
#if (defined(XW_TRANSPOSE) || defined(XW_VEC)) && defined(XW_TYPE_F32) && defined(XW_SUBNORMALS_EXACT)
// Exact f32 sums (OP 0) of an invocation's elements tested by their operands rather than by
// each sum: an invocation whose ITEMS inputs are all zero, infinite, NaN or of magnitude
// 2^-103 or more (xw_sum_key) folds them in the driver's arithmetic with no test, and so does
// its output pass where its prefix is not finite or a multiple of 2^-126, zero included
// (xw_sum_safe). Every finite such value is a multiple of 2^-126, and so is every sum of two
// (below 2^-103 the sum is exact; above it the float grid's spacing is a multiple of 2^-126):
// zero or normal, so no operand or result of the driver's sum is subnormal and it is xw_add's
// sum. An invocation that fails either test computes its folds again exactly, as where a
// sum's own test fails. The same bits either way. H200 (NOTES.md version 34): with
// fold_window's branch-free tests, the exact scans at 2^28 from 1.25-1.30x the native
// kernel's time to 1.06x.
#define XW_INPUT_TESTS 1
// Whether v is infinite, NaN, or a multiple of 2^-126 (zero included).
bool xw_sum_safe(T v) {
    uint a = floatBitsToUint(v) & 0x7fffffffu;
    uint e = a >> 23;
    return e >= 24u || (a & ((1u << min(24u - e, 24u)) - 1u)) == 0u;
}
#endif

// Index in tile_stage of tile element i: one pad word per 32.
uint xw_pad(uint i) {
    return i + (i >> 5u);
}

#if !defined(XW_STATE64)
// A relaxed atomic load of flags[i].
uint poll_word(uint i) {
    return atomicLoad(flags[i], gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
}
#endif

#if defined(XW_PACKED)
uint xw_to_u32(T v) {
#if defined(XW_T_FLOAT)
    return floatBitsToUint(v);
#else
    return uint(v);
#endif
}

T xw_from_u32(uint u) {
#if defined(XW_T_FLOAT)
    return uintBitsToFloat(u);
#else
    return T(u);
#endif
}

#if defined(XW_STATE64)
// Tile `tile`'s flag and value, from one relaxed 64-bit atomic load; a state of an earlier
// launch (another epoch's tag, EPOCH_STATES) reads as 0.
uint read_state(uint tile, out T v) {
    uint64_t w =
        atomicLoad(flags[tile], gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
    v = xw_from_u32(uint(w));
    uint f = uint(w >> 32);
    if (EPOCHS != 0u) {
        f -= g_eb;
        f = f < 3u ? f : 0u;
    }
    return f;
}
#else
// Tile `tile`'s flag (0 while its two words disagree) and value.
uint read_state(uint tile, out T v) {
    uint lo = poll_word(2u * tile);
    uint hi = poll_word(2u * tile + 1u);
    v = xw_from_u32((hi << 16u) | (lo & 0xffffu));
    uint f = lo >> 16u;
    return f == (hi >> 16u) ? f : 0u;
}
#endif
#endif

// Publishes tile `tile`'s aggregate or inclusive prefix `v` with flag `flag`. EPOCH_STATES:
// the tile's own first publication (`first`) replaces whatever an earlier launch left by an
// exchange, every other takes the maximum (see the top).
void publish(uint tile, uint flag, T v, bool inclusive, bool first) {
#if defined(XW_PACKED)
    uint b = xw_to_u32(v);
#if defined(XW_STATE64)
    if (EPOCHS != 0u && first) {
        atomicExchange(flags[tile], (uint64_t(flag + g_eb) << 32) | uint64_t(b));
    } else if (EPOCHS != 0u) {
        atomicMax(flags[tile], (uint64_t(flag + g_eb) << 32) | uint64_t(b));
    } else {
        atomicMax(flags[tile], (uint64_t(flag) << 32) | uint64_t(b));
    }
#else
    atomicMax(flags[2u * tile], (flag << 16u) | (b & 0xffffu));
    atomicMax(flags[2u * tile + 1u], (flag << 16u) | (b >> 16u));
#endif
#else
    if (inclusive) {
        inclusives[tile] = v;
    } else {
        aggregates[tile] = v;
    }
    memoryBarrierBuffer();
    atomicMax(flags[tile], flag);
#endif
}

// The canonical total of tile `t` of this launch (every invocation gets it).
T tile_total(uint t, uint local) {
    uint base = (t * gl_WorkGroupSize.x + local) * ITEMS;
    T acc = xw_identity();
    for (uint j = 0u; j < ITEMS; ++j) {
        if (base + j < p.n) acc = xw_op(acc, src[base + j]);
    }
    T prefix;
    T total;
    block_prefix(acc, local, prefix, total);
    return total;
}

// The tile's value for flag `f` (nonzero) read by this invocation before a buffer barrier.
#if !defined(XW_PACKED)
T read_value(uint tile, uint f) {
    return f == FLAG_INCLUSIVE ? inclusives[tile] : aggregates[tile];
}
#endif

// Reduces the window's tiles i < m whose flag reads 0 (tile hi - i, or lo + i upwards) here,
// publishes their aggregates and puts them in lb_values. Uniform control flow.
void reduce_missing(uint hi_or_lo, bool down, uint m, uint local) {
    for (uint i = 0u; i < m; ++i) {
        if (lb_flags[i] != 0u) continue;  // uniform: shared memory, written before a barrier
        // Tiles of earlier launches have all finished, so this one belongs to this launch.
        uint tile = down ? hi_or_lo - i : hi_or_lo + i;
        T a = tile_total(tile - p.tile0, local);
        if (local == 0u) {
            publish(tile, FLAG_AGGREGATE, a, false, false);
            lb_values[i] = a;
        }
    }
    barrier();
}

// Invocation i polls tiles hi - i - r * BLOCK (window offsets below `count`) until every tile
// above the window's nearest inclusive prefix (offset m, `count` if none) has published, or
// `spin` polls have passed; then the tiles' values are in lb_values and their flags in
// lb_flags. Returns m; `complete` tells whether every tile above m published. Uniform control
// flow.
uint poll_window(uint hi, uint count, uint local, out bool complete) {
    if (local == 0u) {
        lb_m[0] = count;
        lb_gap[0] = 0u;
    }
    barrier();
    uint m = count;
    for (uint poll = 0u;; ++poll) {
        uint s = poll & 1u;
        // Each invocation writes only its own slots, read by others after the barriers below.
        for (uint r = 0u; r < LB_TILES; ++r) {
            uint w = local + r * gl_WorkGroupSize.x;
            if (w >= count) break;
            T v = xw_identity();
#if defined(XW_PACKED)
            uint f = read_state(hi - w, v);
#else
            uint f = poll_word(hi - w);
#endif
            if (f == FLAG_INCLUSIVE) atomicMin(lb_m[s], w);
            lb_values[w] = v;
            lb_flags[w] = f;
        }
        barrier();
        m = lb_m[s];
        // The other slots were last read before this poll's first barrier.
        if (local == 0u) {
            lb_m[s ^ 1u] = count;
            lb_gap[s ^ 1u] = 0u;
        }
        bool gap = false;
        for (uint r = 0u; r < LB_TILES; ++r) {
            uint w = local + r * gl_WorkGroupSize.x;
            if (w < m && lb_flags[w] == 0u) gap = true;
        }
        if (gap) atomicOr(lb_gap[s], 1u);
        barrier();
        complete = lb_gap[s] == 0u;
        if (complete || poll >= p.spin) break;
    }
#if !defined(XW_PACKED)
    memoryBarrierBuffer();
    for (uint r = 0u; r < LB_TILES; ++r) {
        uint w = local + r * gl_WorkGroupSize.x;
        if (w < count && lb_flags[w] != 0u) lb_values[w] = read_value(hi - w, lb_flags[w]);
    }
#endif
    barrier();
    return m;
}

// e folded with count values of the window, lb_values[from], lb_values[from + step], ... in
// that order (the canonical left fold). The fold is one invocation's chain of dependent
// operations on the look-back's critical path, and for floats its cost per value sets how fast
// the tiles' inclusive prefixes can follow each other (NOTES.md version 44): floats read their
// values FOLD_BATCH at a time before they fold them, so that a link of the chain is one
// operation, not a shared-memory read and an operation (integers, whose look-back folds a
// window by subgroup operations where it can, keep the plain loop: batches cost their kernel
// registers). Exact float sums (SUBNORMALS 1) would put the exact sum's test and branch into
// every link (the f32 scan took 3.1x the time of its native variant at 2^28 on an H100), so
// they fold in the driver's arithmetic first, testing each sum beside the chain as xw_add
// does, and fold again exactly only where a sum left the range where the driver's sum is the
// exact one: the same bits either way.
const int FOLD_BATCH = 4;

T fold_window(T e, int from, int count, int step) {
#if defined(XW_T_FLOAT)
    int i = 0;
    if (OP == 0u && SUBNORMALS == 1u) {
        T x = e;
        bool slow = false;
        for (; i + FOLD_BATCH <= count; i += FOLD_BATCH) {
            T v[FOLD_BATCH];
            [[unroll]] for (int j = 0; j < FOLD_BATCH; ++j) v[j] = lb_values[from + (i + j) * step];
            [[unroll]] for (int j = 0; j < FOLD_BATCH; ++j) x = xw_sum_fast(x, v[j], slow);
        }
        for (; i < count; ++i) x = xw_sum_fast(x, lb_values[from + i * step], slow);
        if (!slow) return x;
        i = 0;
    }
    for (; i + FOLD_BATCH <= count; i += FOLD_BATCH) {
        T v[FOLD_BATCH];
        [[unroll]] for (int j = 0; j < FOLD_BATCH; ++j) v[j] = lb_values[from + (i + j) * step];
        [[unroll]] for (int j = 0; j < FOLD_BATCH; ++j) e = xw_op(e, v[j]);
    }
    for (; i < count; ++i) e = xw_op(e, lb_values[from + i * step]);
    return e;
#else
    for (int i = 0; i < count; ++i) e = xw_op(e, lb_values[from + i * step]);
    return e;
#endif
}

#if defined(XW_PACKED)
// The near look-back of tile k > 0, by subgroup 0 alone (the CUDA twin's look_back_near; the
// basic subgroup operations only, as runs.glsl's): lane i polls tile top - i (top = k - 1
// first) until every tile of its window up to the nearest inclusive prefix (lane m; the whole
// window without one) has published, with subgroup barriers where the window below takes four
// workgroup barriers a poll; the state's one word gives flag and value together. Then lane 0
// folds the window from lane m down to lane 0: P(k - 1 - m) and the aggregates after it, the
// window path's left fold bit for bit. A window without an inclusive prefix is folded and the
// walk moves down a window where the operator is associative (integers); for floats its values
// are kept in lb_values and the walk moves down until a window holds an inclusive prefix, then
// folds from it up through every value kept, in the window path's order (at most LB_WINDOW
// tiles; beyond, the window path takes over). Leaves s_value and publishes on success;
// near_ok tells the workgroup. At most NEAR_POLLS polls and windows (polls: at most spin + 1
// a window): a stalled predecessor is the window path's to wait for and compute. Called by
// subgroup 0 only. H100 (NOTES.md version 30): `i32` scans 5-9% faster from 2^21, `f32` 3-10%.
const uint NEAR_POLLS = 64u;
#if defined(XW_VEC) && !defined(XW_T_FLOAT)
// The subgroup's reduction of x by the scan's operator (integers: any association).
T vec_reduce(T x) {
    if (OP == 0u) return subgroupAdd(x);
    if (OP == 2u) return subgroupMin(x);
    return subgroupMax(x);
}
#endif
shared uint near_ok;
// Whether the walk folds each window as soon as it has read it (any association), so that it
// is not bounded by LB_WINDOW: integers, and f32 min and max in the kernel with the subgroup
// arithmetic operations (minNum and maxNum with -0.0 below +0.0 are associative: a window's
// left fold, onto the carry of the windows above, gives the left fold's bits). H200 (NOTES.md
// version 72): the f32 max scan of 2^26 in 0.45x the time of the walk bounded by LB_WINDOW.
const bool XW_NEAR_ASSOC =
#if defined(XW_VEC) && defined(XW_T_FLOAT)
    OP == 2u || OP == 3u;
#elif defined(XW_T_FLOAT)
    false;
#else
    true;
#endif

void look_back_near(uint k, T total) {
    uint lane = gl_SubgroupInvocationID;
    uint size = min(gl_SubgroupSize, gl_WorkGroupSize.x);
    int top = int(k) - 1;
    uint polls = 0u;
    bool ok = false;
    bool have = false;
    uint below = 0u;  // floats: tiles read by the windows above this one
    T carry = xw_identity();
    while (top >= 0) {
        uint count = uint(min(top + 1, int(size)));
        uint m;
        bool gap;
        T v = xw_identity();
        while (true) {
#if defined(XW_VEC) && defined(XW_T_FLOAT)
            // f32 in the kernel with the subgroup arithmetic operations: the nearest inclusive
            // prefix and the gaps above it by two subgroup reductions (the CUDA twin's
            // ballots), no shared memory and no barrier a poll. H200 (NOTES.md version 71):
            // 0.96-1.00x the time at 2^18-2^28; integers took 1.04-1.08x from 2^25 (their
            // tiles of 8192) and keep the loop below.
            v = xw_identity();
            uint f = lane < count ? read_state(uint(top) - lane, v) : 0u;
            m = subgroupMin(f == FLAG_INCLUSIVE ? lane : count);
            gap = subgroupMax(lane < m && f == 0u ? 1u : 0u) != 0u;
#else
            if (lane == 0u) {
                lb_m[0] = count;
                lb_gap[0] = 0u;
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            v = xw_identity();
            uint f = lane < count ? read_state(uint(top) - lane, v) : 0u;
            if (f == FLAG_INCLUSIVE) atomicMin(lb_m[0], lane);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            m = lb_m[0];
            if (lane < m && f == 0u) atomicOr(lb_gap[0], 1u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            gap = lb_gap[0] != 0u;
            subgroupBarrier();  // every lane has read lb_m and lb_gap
#endif
            if (!gap || polls >= min(p.spin, NEAR_POLLS - 1u)) break;
            ++polls;
        }
        bool incl = m < count;
        if (gap) break;
        uint last = incl ? m : count - 1u;
        if (!XW_NEAR_ASSOC) {
            // Floats: each window's values below the ones above (lb_values[d]: tile k - 1 - d)
            // until a window holds an inclusive prefix, then one left fold from it, as the
            // window path's; at most LB_WINDOW tiles.
            if (!incl && below + 2u * size > LB_WINDOW) break;
            if (lane <= last) lb_values[below + lane] = v;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            if (incl) {
                uint d = below + last;
                if (lane == 0u) carry = fold_window(lb_values[d], int(d) - 1, int(d), -1);
                ok = true;
                break;
            }
            below += size;
            top -= int(size);
            if (++polls >= NEAR_POLLS) break;
            continue;
        }
#if defined(XW_VEC)
        // The kernel with the subgroup arithmetic operations: each window folded as it is read,
        // with no lane folding alone.
        {
#if !defined(XW_T_FLOAT)
            // Integers: the window's fold by one subgroup operation, in any association
            // (NOTES.md version 44: 3-6% off the i32 scan at 2^22-2^24 on an H200).
            T w = vec_reduce(lane <= last ? v : xw_identity());
#else
            // f32 min and max: every lane folds the window from shared memory (the same reads,
            // the same bits) and lane 0's fold is taken by a shuffle: with lane 0 folding alone
            // in a branch, the next window's poll by subgroup reductions without a barrier gave
            // wrong bits on NVIDIA's driver (NOTES.md version 71, D).
            if (lane <= last) lb_values[lane] = v;
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            T w = fold_window(lb_values[last], int(last) - 1, int(last), -1);
            subgroupBarrier();  // every lane has read lb_values
            w = subgroupShuffle(w, 0u);
#endif
            carry = have ? xw_op(w, carry) : w;
            have = true;
            if (incl) {
                ok = true;
                break;
            }
            top -= int(size);
            if (++polls >= NEAR_POLLS) break;
            continue;
        }
#endif
        if (lane <= last) lb_values[lane] = v;
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        if (lane == 0u) {
            T w = fold_window(lb_values[last], int(last) - 1, int(last), -1);
            carry = have ? xw_op(w, carry) : w;
        }
        have = true;
        subgroupMemoryBarrierShared();
        subgroupBarrier();  // lane 0 has read lb_values
        if (incl) {
            ok = true;
            break;
        }
        top -= int(size);
        if (++polls >= NEAR_POLLS) break;
    }
    if (lane == 0u) {
        if (ok) {
            s_value = carry;
            publish(k, FLAG_INCLUSIVE, xw_op(carry, total), true, false);
        }
        near_ok = ok ? 1u : 0u;
    }
}
#endif

// The exclusive prefix of global tile k > 0 (every invocation gets it), whose total is `total`;
// publishes the tile's inclusive prefix as soon as it is known. Uniform control flow.
T look_back(uint k, T total, uint local) {
#if defined(XW_PACKED)
    if (gl_SubgroupID == 0u) look_back_near(k, total);
    barrier();
    if (near_ok != 0u) return s_value;
#endif
    // Find the nearest inclusive prefix j (-1: none), making sure every tile after it has
    // published its aggregate. Usually it lies in the first window: then the fold is done here.
    int hi = int(k) - 1;
    int j = -1;
    while (hi >= 0) {
        uint count = uint(min(hi + 1, int(LB_WINDOW)));
        bool complete;
        uint m = poll_window(uint(hi), count, local, complete);
        if (!complete) reduce_missing(uint(hi), true, m, local);
        if (m < count && hi == int(k) - 1) {
            // lb_values[m] is P(k - 1 - m); lb_values[m - 1] .. lb_values[0] the aggregates
            // after it.
            if (local == 0u) {
                T e = lb_values[m];
                e = fold_window(e, int(m) - 1, int(m), -1);
                s_value = e;
                publish(k, FLAG_INCLUSIVE, xw_op(e, total), true, false);
            }
            barrier();
            return s_value;
        }
        if (m < count) {
            j = hi - int(m);
            break;
        }
        hi -= int(count);
    }
    // Fold the aggregates after j onto P(j) in order, a window at a time. A tile may have
    // replaced its aggregate by its inclusive prefix since the walk down: the fold then restarts
    // from that prefix, which is the same left fold. One whose two words disagree (a
    // publication under way) is reduced here.
    memoryBarrierBuffer();
    T e = xw_identity();
    if (local == 0u && j >= 0) {
#if defined(XW_PACKED)
        // P(j) was published in full and only an inclusive prefix follows an inclusive prefix.
        T v;
        read_state(uint(j), v);
        e = v;
#else
        e = inclusives[j];
#endif
    }
    for (uint lo = uint(j + 1); lo < k; lo += LB_WINDOW) {
        uint c = min(k - lo, LB_WINDOW);
        if (local == 0u) {
            s_last = 0u;
            lb_gap[0] = 0u;
        }
        barrier();
        for (uint r = 0u; r < LB_TILES; ++r) {
            uint w = local + r * gl_WorkGroupSize.x;
            if (w >= c) break;
            T v = xw_identity();
#if defined(XW_PACKED)
            uint f = read_state(lo + w, v);
#else
            uint f = poll_word(lo + w);
            memoryBarrierBuffer();
            if (f != 0u) v = read_value(lo + w, f);
#endif
            if (f == FLAG_INCLUSIVE) atomicMax(s_last, w + 1u);
            if (f == 0u) atomicOr(lb_gap[0], 1u);
            lb_values[w] = v;
            lb_flags[w] = f;
        }
        barrier();
        uint last = s_last;
        bool gap = lb_gap[0] != 0u;
        barrier();
        if (gap) reduce_missing(lo, false, c, local);
        if (local == 0u) {
            if (last != 0u) e = lb_values[last - 1u];
            e = fold_window(e, int(last), int(c) - int(last), 1);
        }
        barrier();
    }
    if (local == 0u) {
        s_value = e;
        publish(k, FLAG_INCLUSIVE, xw_op(e, total), true, false);
    }
    barrier();
    return s_value;
}

// SELF_CLEARING, by invocation 0 once the tile has published its last state and every
// invocation has read its last one (the barrier that ends look_back; tile 0 reads none): counts
// the tile done, and s_last_tile tells whether it was the last of the launch (every other tile
// is then past its states). Release: the tile's publications come before its count.
void count_tile_done() {
    uint before = atomicAdd(counters[p.chunk + 1u], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                            gl_SemanticsRelease);
    s_last_tile = before + 1u == p.tiles ? 1u : 0u;
}

// SELF_CLEARING, at the end of the tile: the last tile to count itself done zeroes the tile
// states and the launch's two counters. Uniform control flow.
void zero_states_if_last(uint local) {
    barrier();
    if (s_last_tile == 0u) return;
    // Acquire: every other tile's count, and so its use of the states, before the zeroing.
    memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
    uint tiles = p.tile0 + p.tiles;
#if defined(XW_STATE64)
    for (uint i = local; i < tiles; i += gl_WorkGroupSize.x) flags[i] = uint64_t(0);
#elif defined(XW_PACKED)
    for (uint i = local; i < 2u * tiles; i += gl_WorkGroupSize.x) flags[i] = 0u;
#else
    for (uint i = local; i < tiles; i += gl_WorkGroupSize.x) {
        flags[i] = 0u;
        aggregates[i] = T(0);
        inclusives[i] = T(0);
    }
#endif
    if (local == 0u) {
        counters[p.chunk] = 0u;
        counters[p.chunk + 1u] = 0u;
    }
}

#if defined(XW_STATE64)
// EPOCH_STATES: the states the last number zeroes (see the top).
const uint SCRUB = 1024u;

// EPOCH_STATES, by every invocation of the tile with the last number (s_scrub nonzero): zeroes
// the SCRUB states from s_scrub - 1 on that the launch does not use. Uniform control flow.
void scrub_states(uint local) {
    if (s_scrub == 0u) return;
    for (uint i = local; i < SCRUB; i += gl_WorkGroupSize.x) {
        uint at = s_scrub - 1u + i;
        if (at >= p.tiles) flags[at] = uint64_t(0);
    }
}
#endif

#if defined(XW_VEC)
// The scan's subgroup step on the invocations' vector totals: the inclusive scan.
T vec_inclusive(T x) {
    if (OP == 0u) return subgroupInclusiveAdd(x);
    if (OP == 2u) return subgroupInclusiveMin(x);
    return subgroupInclusiveMax(x);
}

// The tile from element tile_base with its elements in registers. Subgroup g owns the run of
// gl_SubgroupSize * ITEMS elements at g * gl_SubgroupSize * ITEMS in the tile; in round r its lane
// l holds the run's vector r * gl_SubgroupSize + l (vec_x[r]), so each round's loads and stores
// are one contiguous stretch of the subgroup's (coalesced, as the transposing kernel's are). Per
// round each lane scans its vector, the subgroup scans the lanes' totals, and the vector becomes
// its elements' inclusive (or exclusive) prefixes within the run; the runs' totals meet in
// shared memory; after the look-back (main) each vector takes the tile's and the run's prefix on
// its way out. Integers only: any association gives the same bits, and the tile's total is the
// one tile_total (the fallback) computes. Uniform control flow.
TV vec_x[VECS];

// Round r's vector of this invocation, as an index of the tile's vectors: bounded to the tile
// whatever the driver reports.
uint vec_at(uint r) {
    uint first = xw_subgroup_id() * gl_SubgroupSize * VECS + gl_SubgroupInvocationID;
    return min(first + r * gl_SubgroupSize, gl_WorkGroupSize.x * VECS - 1u);
}

// A vector from its bits, and back.
TV vec_from_bits(uvec4 u) {
#if defined(XW_TYPE_F32)
    return uintBitsToFloat(u);
#else
    return TV(u);
#endif
}

uvec4 vec_to_bits(TV v) {
#if defined(XW_TYPE_F32)
    return floatBitsToUint(v);
#else
    return uvec4(v);
#endif
}

// Loads the tile into vec_x, elements past the input's end the identity.
void vec_load(uint tile_base) {
    if (tile_base + gl_WorkGroupSize.x * ITEMS <= p.n) {
        [[unroll]] for (uint r = 0u; r < VECS; ++r) {
            vec_x[r] = vec_from_bits(src4[tile_base / 4u + vec_at(r)]);
        }
    } else {
        [[unroll]] for (uint r = 0u; r < VECS; ++r) {
            uint e = tile_base + 4u * vec_at(r);
            TV y;
            [[unroll]] for (uint c = 0u; c < 4u; ++c) y[c] = e + c < p.n ? src[e + c] : xw_identity();
            vec_x[r] = y;
        }
    }
}

#if !defined(XW_T_FLOAT)
// Loads the tile and scans each run; `run_prefix` is the runs' total before this invocation's,
// `total` the tile's.
void vec_load_and_scan(uint tile_base, out T run_prefix, out T total) {
    uint lane = gl_SubgroupInvocationID;
    uint sg = xw_subgroup_id();
    vec_load(tile_base);
    T carry = xw_identity();
    [[unroll]] for (uint r = 0u; r < VECS; ++r) {
        TV y = vec_x[r];
        y.y = xw_op(y.x, y.y);
        y.z = xw_op(y.y, y.z);
        y.w = xw_op(y.z, y.w);
        T incl = vec_inclusive(y.w);
        T ex;
        if (OP == 0u) {
            ex = incl - y.w;
        } else {
            T up = subgroupShuffleUp(incl, 1u);
            ex = lane == 0u ? xw_identity() : up;
        }
        T pre = xw_op(carry, ex);
        carry = xw_op(carry, subgroupShuffle(incl, gl_SubgroupSize - 1u));
        vec_x[r] = EXCLUSIVE != 0u ? TV(pre, xw_op(pre, y.x), xw_op(pre, y.y), xw_op(pre, y.z))
                                   : TV(xw_op(pre, y.x), xw_op(pre, y.y), xw_op(pre, y.z), xw_op(pre, y.w));
    }
    // The runs' totals (stage: a T per invocation, at most one per subgroup used here).
    if (lane == 0u) stage[sg] = carry;
    barrier();
    run_prefix = xw_identity();
    total = xw_identity();
    uint groups = xw_num_subgroups();
    for (uint g = 0u; g < groups; ++g) {
        if (g == sg) run_prefix = total;
        total = xw_op(total, stage[g]);
    }
    barrier();  // stage is the fallback's (tile_total) in the look-back
}
#endif

#if !defined(XW_T_FLOAT)
// Stores the tile, each element with `pre` (the tile's and the run's prefix) before it.
void vec_store(uint tile_base, T pre) {
    if (tile_base + gl_WorkGroupSize.x * ITEMS <= p.n) {
        [[unroll]] for (uint r = 0u; r < VECS; ++r) {
            TV y = vec_x[r];
            dst4[tile_base / 4u + vec_at(r)] =
                vec_to_bits(TV(xw_op(pre, y.x), xw_op(pre, y.y), xw_op(pre, y.z), xw_op(pre, y.w)));
        }
    } else {
        [[unroll]] for (uint r = 0u; r < VECS; ++r) {
            uint e = tile_base + 4u * vec_at(r);
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                if (e + c < p.n) dst[e + c] = xw_op(pre, vec_x[r][c]);
            }
        }
    }
}
#else
// f32 in registers, in the documented order (README.md, "Device scan"): the tile's thread t
// (t = 0 .. 255) folds its ITEMS = 16 consecutive elements 16t .. 16t + 15 in order, and this
// layout keeps that arithmetic while moving them as vec_x does. Subgroup g's run is the
// documented threads gS .. gS + S - 1 (S = gl_SubgroupSize; their 16 S elements); thread
// gS + i lies in round i / (S / 4), in lanes 4 (i % (S / 4)) .. + 3, one vector each. The
// lanes fold their vectors in sequence: in three steps each lane folds its vector onto its
// carry and hands the result up one lane, where the next lane of the thread takes it as its
// carry (vec_cin: the thread's fold before the vector). Then invocation gS + i gathers
// thread gS + i's total, so that block_prefix sees the transposing kernel's values in the
// same invocations, and after the look-back each lane takes its thread's prefix back. The
// same operations on the same operands as the transposing kernel: the same bits.
T vec_cin[VECS];
// Exact f32 sums: a subgroup whose run holds an element below 2^-103 that is not zero
// (xw_sum_key) folds in xw_add's arithmetic, the others in the driver's (XW_INPUT_TESTS).
bool vec_exact = false;

// op(a, b): xw_op, or where `exact` is false and the sums are exact f32 ones, the driver's
// sum (taken only where its operands make it xw_add's).
T vec_op(T a, T b, bool exact) {
#if defined(XW_INPUT_TESTS)
    if (OP == 0u && !exact) {
        precise T r = a + b;
        return r;
    }
#endif
    return xw_op(a, b);
}

// Folds x onto c in order, its last partial fold.
T vec_fold(T c, TV x, bool exact) {
    return vec_op(vec_op(vec_op(vec_op(c, x.x, exact), x.y, exact), x.z, exact), x.w, exact);
}

// The carry into this lane's vector x: its documented thread's fold before it.
T vec_carry(TV x, bool exact) {
    T c = xw_identity();
    [[unroll]] for (uint step = 1u; step < 4u; ++step) {
        T up = subgroupShuffleUp(vec_fold(c, x, exact), 1u);
        if ((gl_SubgroupInvocationID & 3u) == step) c = up;
    }
    return c;
}

// Round r's vector read from the input again (the exact sums' path, which keeps its code
// short: one round in a loop, no array indexed at run time).
TV vec_reload(uint tile_base, uint r) {
    if (tile_base + gl_WorkGroupSize.x * ITEMS <= p.n) {
        return vec_from_bits(src4[tile_base / 4u + vec_at(r)]);
    }
    uint e = tile_base + 4u * vec_at(r);
    TV y;
    [[unroll]] for (uint c = 0u; c < 4u; ++c) y[c] = e + c < p.n ? src[e + c] : xw_identity();
    return y;
}

// Round r's contribution to this invocation's documented thread's total: the fold of the
// thread's 16 elements, from the lane that holds its last vector.
T vec_gather_total(uint r, T last, T acc) {
    uint lane = gl_SubgroupInvocationID;
    uint per = gl_SubgroupSize / 4u;  // documented threads a round
    T total = subgroupShuffle(last, 4u * (lane % per) + 3u);
    return lane / per == r ? total : acc;
}

#if defined(XW_GATE)
// The gate's test of the tile's inputs (see GATE_ARGS): one invocation of a subgroup that holds
// an input below XW_SUM_KEY_SAFE sets the exact launch's workgroups (the same words from every
// such subgroup).
void gate_test() {
    uint least = 0xffffffffu;
    [[unroll]] for (uint r = 0u; r < VECS; ++r) {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) least = min(least, xw_sum_key(vec_x[r][c]));
    }
    if (subgroupAny(least < XW_SUM_KEY_SAFE) && subgroupElect()) {
        atomicExchange(counters[GATE_ARGS], p.gate_x);
        atomicExchange(counters[GATE_ARGS + 1u], p.gate_y);
        atomicExchange(counters[GATE_ARGS + 2u], 1u);
    }
}
#endif

// Loads the tile; vec_cin for every round; this invocation's documented thread's total.
T vec_load_and_fold(uint tile_base) {
    vec_load(tile_base);
#if defined(XW_GATE)
    if (OP == 0u) gate_test();
#endif
#if defined(XW_INPUT_TESTS)
    if (OP == 0u) {
        uint least = 0xffffffffu;
        [[unroll]] for (uint r = 0u; r < VECS; ++r) {
            [[unroll]] for (uint c = 0u; c < 4u; ++c) least = min(least, xw_sum_key(vec_x[r][c]));
        }
        vec_exact = subgroupAny(least < XW_SUM_KEY_SAFE);
    }
    if (vec_exact) {
        // xw_add's sums; vec_cin is left to the output's exact path, which computes it again.
        T acc = xw_identity();
        [[dont_unroll]] for (uint r = 0u; r < VECS; ++r) {
            TV x = vec_reload(tile_base, r);
            acc = vec_gather_total(r, vec_fold(vec_carry(x, true), x, true), acc);
        }
        return acc;
    }
#endif
    T acc = xw_identity();
    [[unroll]] for (uint r = 0u; r < VECS; ++r) {
        T c = vec_carry(vec_x[r], false);
        vec_cin[r] = c;
        acc = vec_gather_total(r, vec_fold(c, vec_x[r], false), acc);
    }
    return acc;
}

// The output vector of a round whose vector is x and carry c, `pre` being this invocation's
// documented thread's prefix.
TV vec_output(uint r, TV x, T c, T pre, bool exact) {
    uint lane = gl_SubgroupInvocationID;
    T p_ = subgroupShuffle(pre, r * (gl_SubgroupSize / 4u) + (lane >> 2u));
    T s0 = vec_op(c, x.x, exact);
    T s1 = vec_op(s0, x.y, exact);
    T s2 = vec_op(s1, x.z, exact);
    if (EXCLUSIVE != 0u) {
        T y0 = (lane & 3u) == 0u ? p_ : vec_op(p_, c, exact);
        return TV(y0, vec_op(p_, s0, exact), vec_op(p_, s1, exact), vec_op(p_, s2, exact));
    }
    T s3 = vec_op(s2, x.w, exact);
    return TV(vec_op(p_, s0, exact), vec_op(p_, s1, exact), vec_op(p_, s2, exact),
              vec_op(p_, s3, exact));
}

// Stores round r's output vector y.
void vec_store_round(uint tile_base, uint r, TV y) {
    if (tile_base + gl_WorkGroupSize.x * ITEMS <= p.n) {
        dst4[tile_base / 4u + vec_at(r)] = vec_to_bits(y);
    } else {
        uint e = tile_base + 4u * vec_at(r);
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
            if (e + c < p.n) dst[e + c] = y[c];
        }
    }
}

// Stores the tile, `pre` being this invocation's documented thread's prefix.
void vec_store(uint tile_base, T pre) {
#if defined(XW_INPUT_TESTS)
    // The driver's sums onto the prefixes are xw_add's where every prefix is infinite, NaN or
    // a multiple of 2^-126 (xw_sum_safe) and the partial folds are (the inputs' test); else
    // every sum of the output is xw_add's, from the input read again (an in-place scan reads
    // each vector before it writes it).
    bool unsafe = !xw_sum_safe(pre);
    if (OP == 0u && subgroupAny(vec_exact || unsafe)) {
        [[dont_unroll]] for (uint r = 0u; r < VECS; ++r) {
            TV x = vec_reload(tile_base, r);
            vec_store_round(tile_base, r, vec_output(r, x, vec_carry(x, true), pre, true));
        }
        return;
    }
#endif
    [[unroll]] for (uint r = 0u; r < VECS; ++r) {
        vec_store_round(tile_base, r, vec_output(r, vec_x[r], vec_cin[r], pre, false));
    }
}
#endif
#endif

#if defined(XW_VEC) && defined(XW_T_FLOAT)
// f32 min and max in the integers' layout (vec_load_and_scan): minNum and maxNum with -0.0
// below +0.0 are associative, so any association of the documented left fold gives its bits,
// and the subgroup's scan may run on order keys (float_ops.glsl) with one unsigned min. Keys:
// min's key, or the complement of max's, so that for both operators the least key wins and
// every NaN's key is at least XW_MIN_KEY_NAN. A fold of keys whose least key is a NaN's was a
// run of NaNs only: its value is the run's last element ("a NaN `a` yields `b`"), so the fold
// of keys a then b is mm_op. The flushing variant (SUBNORMALS 2) flushes each input first, as
// its xw_op does. H200 (NOTES.md version 72): the documented layout's chains of xw_op (several
// integer operations each) took 2-3x the time of this path.
bool vec_minmax() { return OP == 2u || OP == 3u; }
uint mm_key(T v) {
    if (SUBNORMALS == 2u) v = xw_flush(v);
    return OP == 2u ? xw_min_key(v) : ~xw_max_key(v);
}
T mm_value(uint k) { return OP == 2u ? xw_from_min_key(k) : xw_from_max_key(~k); }
uint mm_op(uint a, uint b) { return a >= XW_MIN_KEY_NAN && b >= XW_MIN_KEY_NAN ? b : min(a, b); }

// vec_load_and_scan's twin for min and max: vec_x keeps each element's key (its bits as a
// float, moved only) with its run's prefix before it.
void vec_load_and_scan_minmax(uint tile_base, out T run_prefix, out T total) {
    uint lane = gl_SubgroupInvocationID;
    uint sg = xw_subgroup_id();
    vec_load(tile_base);
    uint id = mm_key(xw_identity());
    uint carry = id;
    [[unroll]] for (uint r = 0u; r < VECS; ++r) {
        TV x = vec_x[r];
        uvec4 y = uvec4(mm_key(x.x), mm_key(x.y), mm_key(x.z), mm_key(x.w));
        y.y = mm_op(y.x, y.y);
        y.z = mm_op(y.y, y.z);
        y.w = mm_op(y.z, y.w);
        uint least = subgroupInclusiveMin(y.w);
        uint incl = least >= XW_MIN_KEY_NAN ? y.w : least;
        uint up = subgroupShuffleUp(incl, 1u);
        uint pre = lane == 0u ? carry : mm_op(carry, up);  // round 0's lane 0: nothing yet
        carry = mm_op(carry, subgroupShuffle(incl, gl_SubgroupSize - 1u));
        uvec4 o = EXCLUSIVE != 0u ? uvec4(pre, mm_op(pre, y.x), mm_op(pre, y.y), mm_op(pre, y.z))
                                  : uvec4(mm_op(pre, y.x), mm_op(pre, y.y), mm_op(pre, y.z),
                                          mm_op(pre, y.w));
        vec_x[r] = uintBitsToFloat(o);
    }
    if (lane == 0u) stage[sg] = mm_value(carry);
    barrier();
    run_prefix = xw_identity();
    total = xw_identity();
    uint groups = xw_num_subgroups();
    for (uint g = 0u; g < groups; ++g) {
        if (g == sg) run_prefix = total;
        total = xw_op(total, stage[g]);
    }
    barrier();  // stage is the fallback's (tile_total) in the look-back
}

// Stores the tile of vec_load_and_scan_minmax, each element with the fold of the tile's
// exclusive prefix `e` and the run's `prefix` before it. The identity (NaN) is not neutral on
// its right: xw_op(a, NaN) is the NaN where `a` is a NaN. So the folds here leave out the
// identities that stand for nothing (tile 0's `e`, subgroup 0's prefix, the run's first
// exclusive element) and put back the one the documented order has: an exclusive element that
// opens one of the tile's warps of XW_WARP threads (every ITEMS * XW_WARP elements) takes
// xw_op(e, xw_op(w, NaN)), w the fold of the tile's elements before it, which is the identity
// wherever everything before it is NaN.
void vec_store_minmax(uint tile_base, T e, T prefix) {
    uint lane = gl_SubgroupInvocationID;
    uint kp = mm_key(xw_subgroup_id() == 0u ? e : xw_op(e, prefix));
    uint id = mm_key(xw_identity());
    [[unroll]] for (uint r = 0u; r < VECS; ++r) {
        uvec4 y = floatBitsToUint(vec_x[r]);
        uvec4 o = uvec4(mm_op(kp, y.x), mm_op(kp, y.y), mm_op(kp, y.z), mm_op(kp, y.w));
        if (EXCLUSIVE != 0u) {
            if (r == 0u && lane == 0u) o.x = kp;
            if (vec_at(r) % (ITEMS * XW_WARP / 4u) == 0u && o.x >= XW_MIN_KEY_NAN) o.x = id;
        }
        vec_store_round(tile_base, r, TV(mm_value(o.x), mm_value(o.y), mm_value(o.z), mm_value(o.w)));
    }
}
#endif

void main() {
    uint local = xw_local();
    if (p.clear == CLEAR_LAUNCH) {
        uint i = xw_group() * gl_WorkGroupSize.x + local;
#if defined(XW_STATE64)
        // p.tiles counts 32-bit words, two per tile: one 64-bit word here.
        if (2u * i < p.tiles) flags[i] = uint64_t(0);
#else
        if (i < p.tiles) flags[i] = 0u;
#endif
        if (i < p.chunk) counters[i] = 0u;
        return;
    }
    uint group = xw_group();
    if (group >= p.tiles) return;
    // Tiles are numbered in the order workgroups start, so a tile's predecessors have started.
    if (local == 0u) {
#if defined(XW_STATE64)
        if (EPOCHS != 0u) {
            uint64_t w = atomicAdd(counters64[p.chunk >> 1u], uint64_t(1));
            uint epoch = uint(w >> 32);
            s_word = uint(w);
            s_eb = epoch << 2u;
            s_scrub = 0u;
            if (uint(w) + 1u == p.tiles) {
                uint next = epoch + 1u >= p.epoch_wrap ? 0u : epoch + 1u;
                atomicExchange(counters64[p.chunk >> 1u], uint64_t(next) << 32);
                uint at = counters[p.chunk + 2u];
                counters[p.chunk + 2u] = at + SCRUB >= p.epoch_tiles ? 0u : at + SCRUB;
                s_scrub = at + 1u;
#if !defined(XW_GATE)
                // A gated call's exact launch: no workgroups for the next call's unless its
                // gate sets them again (see GATE_ARGS).
                if (p.gate_x != 0u) counters[GATE_ARGS] = 0u;
#endif
            }
        } else
#endif
        s_word = atomicAdd(counters[p.chunk], 1u);
    }
    barrier();
    uint t = s_word;
#if defined(XW_STATE64)
    if (EPOCHS != 0u) {
        g_eb = s_eb;
        scrub_states(local);
    }
#endif
    uint k = p.tile0 + t;
    uint tile_base = t * gl_WorkGroupSize.x * ITEMS;
    uint base = tile_base + local * ITEMS;

#if defined(XW_VEC) && !defined(XW_T_FLOAT)
    T prefix;
    T total;
    vec_load_and_scan(tile_base, prefix, total);
#else
#if defined(XW_VEC)
    T prefix;
    T total;
    T acc = xw_identity();
    if (vec_minmax()) {
        vec_load_and_scan_minmax(tile_base, prefix, total);
    } else {
        acc = vec_load_and_fold(tile_base);
    }
#else
    T acc = xw_identity();
#if defined(XW_TRANSPOSE)
#if defined(XW_INPUT_TESTS)
    uint least = 0xffffffffu;
#endif
    for (uint i = 0u; i < ITEMS; ++i) {
        uint idx = i * gl_WorkGroupSize.x + local;
        tile_stage[xw_pad(idx)] = tile_base + idx < p.n ? src[tile_base + idx] : xw_identity();
    }
    barrier();
    // The invocation's elements stay in shared memory through the look-back, and their partial
    // folds are computed again at the end (the same fold, so the same bits): ITEMS fewer live
    // registers while the tile waits.
    // Exact float sums: natively with their tests, again exactly where one failed (the same
    // bits; reduce_op.glsl's xw_op_fast).
    bool slow = false;
#if defined(XW_INPUT_TESTS)
    if (OP == 0u) {
        // Exact f32 sums tested by their operands (XW_INPUT_TESTS above).
        for (uint j = 0u; j < ITEMS; ++j) {
            T x = tile_stage[xw_pad(local * ITEMS + j)];
            least = min(least, xw_sum_key(x));
            precise T r = acc + x;
            acc = r;
        }
        slow = least < XW_SUM_KEY_SAFE;
    } else
#endif
    for (uint j = 0u; j < ITEMS; ++j) {
        acc = xw_op_fast(acc, tile_stage[xw_pad(local * ITEMS + j)], slow);
    }
    // Invocations past the input's end fold the identity alone: -0.0, exactly.
#if defined(XW_SUBNORMALS_EXACT)
    bool live = base < p.n;
#define XW_IF_LIVE(c) ((c) && live)
#else
#define XW_IF_LIVE(c) (c)
#endif
    if (XW_IF_LIVE(slow)) {
        acc = xw_identity();
        [[dont_unroll]] for (uint j = 0u; j < ITEMS; ++j) {
            acc = xw_op(acc, tile_stage[xw_pad(local * ITEMS + j)]);
        }
    }
#else
    T s[ITEMS];
    for (uint j = 0u; j < ITEMS; ++j) {
        acc = xw_op(acc, base + j < p.n ? src[base + j] : xw_identity());
        s[j] = acc;
    }
#endif
#endif
#if defined(XW_VEC)
    if (!vec_minmax()) {
#else
    T prefix;
    T total;
    {
#endif
#if defined(XW_SUBNORMALS_EXACT)
        // A partial tile (the input's last) tells the exact sums which invocations hold
        // input; the fallback's tile_total, for full tiles, must not see it.
        if (tile_base + gl_WorkGroupSize.x * ITEMS > p.n) {
            xw_live = (p.n - tile_base + ITEMS - 1u) / ITEMS;
        }
        block_prefix(acc, local, prefix, total);
        xw_live = 0xffffffffu;
#else
        block_prefix(acc, local, prefix, total);
#endif
    }
#endif

    T e = xw_identity();
    if (k > 0u) {
        if (local == 0u) publish(k, FLAG_AGGREGATE, total, false, true);
        e = look_back(k, total, local);
    } else if (local == 0u) {
        publish(k, FLAG_INCLUSIVE, total, true, true);
    }
    if (p.clear == SELF_CLEARING && local == 0u) count_tile_done();

    T pre = xw_op(e, prefix);
#if defined(XW_VEC) && defined(XW_T_FLOAT)
    if (vec_minmax()) {
        vec_store_minmax(tile_base, e, prefix);
    } else {
        vec_store(tile_base, pre);
    }
#elif defined(XW_VEC)
    vec_store(tile_base, pre);
#elif defined(XW_TRANSPOSE)
    // Each invocation rewrites only its own elements, in place; where an exact float sum's
    // test failed, it writes them again exactly from the input (which the first pass
    // overwrote in shared memory).
    T part = xw_identity();
    bool slow_out = false;
#if defined(XW_INPUT_TESTS)
    if (OP == 0u) {
        for (uint j = 0u; j < ITEMS; ++j) {
            uint at = xw_pad(local * ITEMS + j);
            T before = part;
            precise T r = part + tile_stage[at];
            part = r;
            precise T y = pre + (EXCLUSIVE != 0u ? before : part);
            tile_stage[at] = EXCLUSIVE != 0u && j == 0u ? pre : y;
        }
        bool t = !xw_sum_safe(pre);  // (`slow || !xw_sum_safe(pre)` would branch)
        slow_out = slow || t;
    } else
#endif
    for (uint j = 0u; j < ITEMS; ++j) {
        uint at = xw_pad(local * ITEMS + j);
        T before = part;
        part = xw_op_fast(part, tile_stage[at], slow_out);
        tile_stage[at] = EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op_fast(pre, before, slow_out))
                                         : xw_op_fast(pre, part, slow_out);
    }
    if (XW_IF_LIVE(slow_out)) {
        part = xw_identity();
        [[dont_unroll]] for (uint j = 0u; j < ITEMS; ++j) {
            uint i = tile_base + local * ITEMS + j;
            T before = part;
            part = xw_op(part, i < p.n ? src[i] : xw_identity());
            tile_stage[xw_pad(local * ITEMS + j)] =
                EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op(pre, before)) : xw_op(pre, part);
        }
    }
    barrier();
    for (uint i = 0u; i < ITEMS; ++i) {
        uint idx = i * gl_WorkGroupSize.x + local;
        if (tile_base + idx < p.n) dst[tile_base + idx] = tile_stage[xw_pad(idx)];
    }
#else
    for (uint j = 0u; j < ITEMS; ++j) {
        T y = EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op(pre, s[j - 1u])) : xw_op(pre, s[j]);
        if (base + j < p.n) dst[base + j] = y;
    }
#endif
    if (p.clear == SELF_CLEARING) zero_states_if_last(local);
}
