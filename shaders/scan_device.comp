#version 450
// variants: i32 u32 f32 i64 u64 f64
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
// The look-back reads a window of LB = 32 predecessors at once (one invocation each), polling
// until every tile above the window's nearest inclusive prefix has published at least its
// aggregate; with no inclusive prefix in the window, the whole window must be published and
// the look-back moves on to the 32 tiles below.
//
// Tile state: 64-bit types keep a flag per tile (flags[t]) and the values in `aggregates` and
// `inclusives`. 32-bit types keep flag and value together in flags[2t] and flags[2t + 1], each
// word holding the flag in its high half and 16 bits of the value in its low half, and each
// written by a 32-bit atomicMax: a tile's value for a given flag is unique, so a reader whose
// two words carry the same flag has a value that is whole, in one round trip and without
// fences; two different flags (a publication under way) read as unpublished. The first window
// then folds the values it polled; a deeper look-back reads the words again on its way up, and
// a tile that has meanwhile replaced its aggregate by its inclusive prefix restarts the fold
// from that prefix (the same left fold).
//
// No deadlock on any conformant device: Vulkan promises no forward progress between
// workgroups, so after `spin` polls of a window with unpublished tiles, the workgroup reduces
// those tiles itself (in the canonical order: the very bits their owners will publish) and
// publishes their aggregates. Flags only grow (atomicMax), so two publishers of the same
// aggregate cannot set a flag back.
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"
#include "shuffle.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;  // 0 sum, 2 min, 3 max (reduce_op.glsl codes)
layout(constant_id = 2) const uint EXCLUSIVE = 0u;
layout(constant_id = 3) const uint ITEMS = 16u;

const uint FLAG_AGGREGATE = 1u;
const uint FLAG_INCLUSIVE = 2u;
const uint LB = 32u; // predecessors one look-back step reads

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(std430, binding = 2) coherent buffer Counters { uint counters[]; };
layout(std430, binding = 3) coherent buffer Flags { uint flags[]; };
layout(std430, binding = 4) coherent buffer Aggregates { T aggregates[]; };
layout(std430, binding = 5) coherent buffer Inclusives { T inclusives[]; };
layout(push_constant) uniform Params {
    uint n;       // elements in this launch (a chunk of whole tiles)
    uint tiles;   // tiles in this launch; clearing: flag words (two per tile of the scan)
    uint tile0;   // global index of the launch's first tile
    uint chunk;   // this launch's tile counter; clearing: the number of counters
    uint spin;    // polls of a window with unpublished tiles before reducing them here
    uint clear;   // nonzero: only zero flags[0 .. tiles) and counters[0 .. chunk)
} p;

shared T stage[gl_WorkGroupSize.x];
shared T warp_totals[gl_WorkGroupSize.x / XW_WARP];
shared uint s_word;
shared uint s_incl;  // look-back window: bit i set where tile hi - i is inclusive
shared uint s_pub;   // look-back window: bit i set where tile hi - i has published
shared uint s_done;  // the first window gave the exclusive prefix (s_value)
shared uint s_missing;
shared T s_value;
shared T lb_values[LB];

#if !defined(XW_T_64)
#define XW_TRANSPOSE 1
#define XW_PACKED 1
shared T tile_stage[gl_WorkGroupSize.x * ITEMS + gl_WorkGroupSize.x * ITEMS / 32u];
#endif

#include "reduce_op.glsl"
#include "scan_common.glsl"

// Index in tile_stage of tile element i: one pad word per 32.
uint xw_pad(uint i) {
    return i + (i >> 5u);
}

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

// Tile `tile`'s flag (0 while its two words disagree) and value.
uint read_state(uint tile, out T v) {
    uint lo = atomicOr(flags[2u * tile], 0u);
    uint hi = atomicOr(flags[2u * tile + 1u], 0u);
    v = xw_from_u32((hi << 16u) | (lo & 0xffffu));
    uint f = lo >> 16u;
    return f == (hi >> 16u) ? f : 0u;
}
#endif

// Publishes tile `tile`'s aggregate or inclusive prefix `v` with flag `flag`.
void publish(uint tile, uint flag, T v, bool inclusive) {
#if defined(XW_PACKED)
    uint b = xw_to_u32(v);
    atomicMax(flags[2u * tile], (flag << 16u) | (b & 0xffffu));
    atomicMax(flags[2u * tile + 1u], (flag << 16u) | (b >> 16u));
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

// lb_values[m] is an inclusive prefix; folds lb_values[m - 1], ..., lb_values[0] onto it.
T fold_window(uint m) {
    T e = lb_values[m];
    for (int i = int(LB) - 2; i >= 0; --i) {
        if (i < int(m)) e = xw_op(e, lb_values[i]);
    }
    return e;
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

// Tiles above the window's nearest inclusive prefix (all `count` tiles if it has none).
uint needed(uint incl, uint count) {
    uint m = incl != 0u ? uint(findLSB(incl)) : count;
    return m >= 32u ? 0xffffffffu : (1u << m) - 1u;
}

// Polls the flags of tiles hi, hi - 1, ..., hi - count + 1 into s_incl and s_pub until every
// needed tile has published or `spin` polls have passed. Packed state brings the values along
// into lb_values: when the window is the first (hi = k - 1) and complete, it is folded into
// s_value, tile k's inclusive prefix is published (the tile's total being `total`) and s_done
// is set. Call in uniform control flow.
void poll_window(uint hi, uint count, bool first, T total, uint local) {
    if (gl_SubgroupSize >= LB) {
        // One subgroup polls the whole window.
        if (gl_SubgroupID == 0u) {
            uint lane = gl_SubgroupInvocationID;
            bool mine = lane < count;
            uint incl = 0u;
            uint pub = 0u;
            T v = xw_identity();
            for (uint poll = 0u;; ++poll) {
                uint f = 0u;
#if defined(XW_PACKED)
                if (mine) f = read_state(hi - lane, v);
#else
                if (mine) f = atomicOr(flags[hi - lane], 0u);
#endif
                incl = subgroupBallot(f == FLAG_INCLUSIVE).x;
                pub = subgroupBallot(f != 0u).x;
                uint need = needed(incl, count);
                if ((pub & need) == need || poll >= p.spin) break;
            }
            uint done = 0u;
#if defined(XW_PACKED)
            uint need = needed(incl, count);
            if (first && incl != 0u && (pub & need) == need) {
                done = 1u;
                if (lane < LB) lb_values[lane] = v;
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                if (lane == 0u) {
                    T e = fold_window(uint(findLSB(incl)));
                    s_value = e;
                    publish(hi + 1u, FLAG_INCLUSIVE, xw_op(e, total), true);
                }
            }
#else
            memoryBarrierBuffer();
#endif
            if (lane == 0u) {
                s_incl = incl;
                s_pub = pub;
                s_done = done;
            }
        }
        barrier();
    } else {
        // Narrower subgroups: the window's invocations span several subgroups and meet in
        // shared memory.
        uint incl;
        uint pub;
        for (uint poll = 0u;; ++poll) {
            if (local == 0u) {
                s_incl = 0u;
                s_pub = 0u;
            }
            barrier();
            if (local < count) {
#if defined(XW_PACKED)
                T v;
                uint f = read_state(hi - local, v);
                lb_values[local] = v;
#else
                uint f = atomicOr(flags[hi - local], 0u);
#endif
                if (f == FLAG_INCLUSIVE) atomicOr(s_incl, 1u << local);
                if (f != 0u) atomicOr(s_pub, 1u << local);
            }
            memoryBarrierBuffer();
            barrier();
            incl = s_incl;
            pub = s_pub;
            barrier();
            uint need = needed(incl, count);
            if ((pub & need) == need || poll >= p.spin) break;
        }
        uint need = needed(incl, count);
        bool done = false;
#if defined(XW_PACKED)
        done = first && incl != 0u && (pub & need) == need;
#endif
        if (local == 0u) {
            s_incl = incl;
            s_pub = pub;
            s_done = done ? 1u : 0u;
            if (done) {
                T e = fold_window(uint(findLSB(incl)));
                s_value = e;
                publish(hi + 1u, FLAG_INCLUSIVE, xw_op(e, total), true);
            }
        }
        barrier();
    }
}

// The exclusive prefix of global tile k > 0 (every invocation gets it), whose total is `total`;
// publishes the tile's inclusive prefix as soon as it is known. Uniform control flow.
T look_back(uint k, T total, uint local) {
    // Find the nearest inclusive prefix j (-1: none), making sure every tile after it has
    // published its aggregate.
    int hi = int(k) - 1;
    int j = -1;
    while (hi >= 0) {
        uint count = uint(min(hi + 1, int(LB)));
        poll_window(uint(hi), count, hi == int(k) - 1, total, local);
        if (s_done != 0u) return s_value;
        uint incl = s_incl;
        uint pub = s_pub;
        barrier();
        uint missing = needed(incl, count) & ~pub;
        while (missing != 0u) {
            // Tiles of earlier launches have all finished, so this one belongs to this launch.
            uint tile = uint(hi) - uint(findLSB(missing));
            missing &= missing - 1u;
            T a = tile_total(tile - p.tile0, local);
            if (local == 0u) publish(tile, FLAG_AGGREGATE, a, false);
        }
        if (incl != 0u) {
            j = hi - findLSB(incl);
            break;
        }
        hi -= int(count);
    }
    // Fold the aggregates after j onto P(j) in order, LB at a time.
    memoryBarrierBuffer();
    barrier();
    T e = xw_identity();
#if defined(XW_PACKED)
    // A tile after j may have replaced its aggregate by its inclusive prefix since the poll: the
    // fold restarts from that prefix (the same left fold). One whose two words disagree (a
    // publication under way) is reduced here.
    if (local == 0u && j >= 0) {
        T v;
        // P(j) was published in full and only an inclusive prefix follows an inclusive prefix.
        read_state(uint(j), v);
        e = v;
    }
    for (uint first = uint(j + 1); first < k; first += LB) {
        uint c = min(k - first, LB);
        if (local == 0u) {
            s_incl = 0u;
            s_missing = 0u;
        }
        barrier();
        if (local < c) {
            T v;
            uint f = read_state(first + local, v);
            lb_values[local] = v;
            if (f == FLAG_INCLUSIVE) atomicOr(s_incl, 1u << local);
            if (f == 0u) atomicOr(s_missing, 1u << local);
        }
        barrier();
        uint incl = s_incl;
        uint missing = s_missing;
        barrier();
        while (missing != 0u) {
            uint i = uint(findLSB(missing));
            missing &= missing - 1u;
            T a = tile_total(first + i - p.tile0, local);
            if (local == 0u) lb_values[i] = a;
        }
        if (local == 0u) {
            for (uint i = 0u; i < LB; ++i) {
                if (i < c) e = ((incl >> i) & 1u) != 0u ? lb_values[i] : xw_op(e, lb_values[i]);
            }
        }
        barrier();
    }
#else
    if (local == 0u && j >= 0) e = inclusives[j];
    for (uint first = uint(j + 1); first < k; first += LB) {
        uint c = min(k - first, LB);
        if (local < c) lb_values[local] = aggregates[first + local];
        barrier();
        if (local == 0u) {
            // A fixed trip count lets the shared-memory reads go ahead of the dependent ops.
            for (uint i = 0u; i < LB; ++i) {
                if (i < c) e = xw_op(e, lb_values[i]);
            }
        }
        barrier();
    }
#endif
    if (local == 0u) {
        s_value = e;
        publish(k, FLAG_INCLUSIVE, xw_op(e, total), true);
    }
    barrier();
    return s_value;
}

void main() {
    uint local = xw_local();
    if (p.clear != 0u) {
        uint i = xw_group() * gl_WorkGroupSize.x + local;
        if (i < p.tiles) flags[i] = 0u;
        if (i < p.chunk) counters[i] = 0u;
        return;
    }
    uint group = xw_group();
    if (group >= p.tiles) return;
    // Tiles are numbered in the order workgroups start, so a tile's predecessors have started.
    if (local == 0u) s_word = atomicAdd(counters[p.chunk], 1u);
    barrier();
    uint t = s_word;
    uint k = p.tile0 + t;
    uint tile_base = t * gl_WorkGroupSize.x * ITEMS;
    uint base = tile_base + local * ITEMS;

    T s[ITEMS];
#if defined(XW_TRANSPOSE)
    for (uint i = 0u; i < ITEMS; ++i) {
        uint idx = i * gl_WorkGroupSize.x + local;
        tile_stage[xw_pad(idx)] = tile_base + idx < p.n ? src[tile_base + idx] : xw_identity();
    }
    barrier();
    for (uint j = 0u; j < ITEMS; ++j) s[j] = tile_stage[xw_pad(local * ITEMS + j)];
#else
    for (uint j = 0u; j < ITEMS; ++j) s[j] = base + j < p.n ? src[base + j] : xw_identity();
#endif
    T acc = xw_identity();
    for (uint j = 0u; j < ITEMS; ++j) {
        acc = xw_op(acc, s[j]);
        s[j] = acc;
    }
    // block_prefix's barriers also order every read of tile_stage before its reuse below.
    T prefix;
    T total;
    block_prefix(acc, local, prefix, total);

    T e = xw_identity();
    if (k > 0u) {
        if (local == 0u) publish(k, FLAG_AGGREGATE, total, false);
        e = look_back(k, total, local);
    } else if (local == 0u) {
        publish(k, FLAG_INCLUSIVE, total, true);
    }

    T pre = xw_op(e, prefix);
#if defined(XW_TRANSPOSE)
    for (uint j = 0u; j < ITEMS; ++j) {
        T y = EXCLUSIVE != 0u ? (j == 0u ? pre : xw_op(pre, s[j - 1u])) : xw_op(pre, s[j]);
        tile_stage[xw_pad(local * ITEMS + j)] = y;
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
}
