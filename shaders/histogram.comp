#version 450
// Even-bin histogram (CUB's HistogramEven); the twin of cuda/histogram.cu, modelled by
// src/cpu/histogram.rs. Which bin a sample falls in is src/spec/histogram.rs: integers
// floor((x - lower) * bins / (upper - lower)) exactly, in 64-bit arithmetic (a division by the
// bin width where the bins divide the range evenly; for 64-bit samples otherwise a bitwise long
// division on 96-bit products); floats floor((x - lower) * scale), each operation rounded on its
// own, the top edge's rounding counted in the last bin. NaN and samples outside
// [lower, upper) are not counted.
//
// OP selects one step of the plan in src/histogram.rs:
//   CLEAR   zero counts[0 .. bins) (32-bit counts: the output, or the scratch of a u64 output);
//   SHARED  workgroup g counts samples g * chunk .. (g + 1) * chunk into bins in shared memory,
//           then adds its nonzero bins to counts with one atomic each (bins <= SHARED_WORDS);
//   GLOBAL  the same straight into counts (more bins than shared memory holds);
//   WIDEN   wide[b] = counts[b] as u64 (two words, low first);
//   SELF    SHARED's count without a clearing launch: `counts` is bins + 1 words of the
//           device's counters buffer (zero whenever no launch runs), the bins' totals and a
//           count of the workgroups done; the last workgroup done takes each total, zeroing its
//           word, writes it to the output `wide` (u32, or u64 where p.wide is set) and zeroes
//           the count, so the words are zero again when the launch ends (src/histogram.rs).
// Samples are read in coalesced steps of BATCH loads per invocation, all issued before the
// step's first sample is binned (where the step lies wholly inside the chunk). Each invocation
// counts its BATCH bins by runs: consecutive equal bins add one atomic for the run. Its last run
// is counted warp-aggregated: where every invocation of the subgroup ends on the same bin with
// the same count (samples that all fall in one bin), one invocation adds them all with one
// atomic; otherwise each adds its own. So samples that all fall in one bin cost one atomic per
// subgroup step instead of one per sample, and spread samples cost one each, with no subgroup
// operation per sample.
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
#include "vote_predicate.glsl"
#include "tile_ballot.glsl"

layout(constant_id = 1) const uint OP = 0u;
// Words of the shared bins (SHARED: the bins rounded up to a power of two, 64 .. 4096, the
// SHARED_BINS of src/histogram.rs; other steps 64): no more shared memory than the bins need,
// so that a histogram of 256 bins keeps as many workgroups on an SM as its registers allow
// (NVIDIA's Vulkan driver gives a compute queue about 100 KiB of shared memory an SM: 16 KiB
// of bins held five).
layout(constant_id = 2) const uint SHARED_WORDS = 4096u;
// How the exact float variant (SUBNORMALS 1) bins, chosen by the host from the bounds
// (`fast_bins` in src/histogram.rs): 0 every sample tested for subnormal operands (below);
// 1 the driver's arithmetic alone: lower and upper are normal, |lower| >= 2^-101 (f64:
// 2^-968) and the scale normal, so every difference x - lower is zero or normal and a
// subnormal sample, flushed or not, compares and subtracts as zero would, as IEEE 754 says;
// 2 as 1 with lower = +-0, the scale below 2^126 (f64: 2^1022): a positive subnormal sample
// lands in bin 0 either way, a negative one is tested by its bits. Other variants ignore it.
layout(constant_id = 3) const uint FAST_BINS = 0u;

const uint OP_CLEAR = 0u;
const uint OP_SHARED = 1u;
const uint OP_GLOBAL = 2u;
const uint OP_WIDEN = 3u;
const uint OP_SELF = 4u;

layout(std430, binding = 0) readonly buffer Samples { T samples[]; };
layout(std430, binding = 1) buffer Counts { uint counts[]; };
layout(std430, binding = 2) writeonly buffer Wide { uint wide[]; };
layout(push_constant) uniform Params {
    uint n;         // samples
    uint bins;
    uint chunk;     // samples per workgroup (a multiple of the workgroup size times BATCH)
    uint wide;      // SELF: nonzero where the output's counts are u64
    uint lower_lo;  // lower, upper, the float scale, the integer range and bin width: two words
    uint lower_hi;  // each, low first
    uint upper_lo;
    uint upper_hi;
    uint scale_lo;
    uint scale_hi;
    uint range_lo;
    uint range_hi;
    uint width_lo;
    uint width_hi;
    uint pad1;
    uint pad2;
} p;

const uint BATCH = 8u;
const uint NONE = 0xffffffffu;

shared uint sh[SHARED_WORDS];
shared uint s_last;  // SELF: this workgroup was the last to count itself done

#if !defined(XW_T_FLOAT) && defined(XW_T_64)
// The 96-bit product of a and b: (the low 64 bits, the high 32).
void mul96(uint64_t a, uint b, out uint64_t lo, out uint hi) {
    uvec2 w = unpackUint2x32(a);
    uint64_t p0 = uint64_t(w.x) * b;
    uint64_t p1 = uint64_t(w.y) * b;
    lo = p0 + (p1 << 32);
    hi = uint(p1 >> 32) + uint(lo < p0);
}
#endif

// The bin of sample x, or NONE.
uint bin_of(T x) {
    T lower = xw_pred_operand(p.lower_lo, p.lower_hi);
    T upper = xw_pred_operand(p.upper_lo, p.upper_hi);
#if defined(XW_T_FLOAT)
    T scale = xw_pred_operand(p.scale_lo, p.scale_hi);
    // Nested rather than `SUBNORMALS == 1u && FAST_BINS != 0u`: glslang makes that a
    // specialization-constant `LogicalAnd` of `true` and FAST_BINS's test, which NVIDIA's
    // driver (580) took as true with FAST_BINS 0 (the subnormals test's bins came out flushed).
    if (SUBNORMALS == 1u) {
        if (FAST_BINS != 0u) {
            if (FAST_BINS == 2u) {
                if (xw_sign(x) != 0u && xw_subnormal(x)) return NONE;
            }
            if (!(lower <= x && x < upper)) return NONE;
            precise T d = x - lower;
            precise T r = d * scale;
            return min(uint(floor(r)), p.bins - 1u);
        }
    }
    if (SUBNORMALS == 1u) {
        // The driver's arithmetic where no subnormal enters it: a sample, bounds and scale
        // normal, infinite, NaN or zero compare and subtract exactly, and a difference that is
        // normal or an exact zero multiplies exactly; a product below the normal range floors
        // to bin 0 either way. Otherwise (a subnormal operand, or a difference the driver may
        // have flushed) the exact arithmetic below.
        // Every test a plain variable first: glslang makes `a || <expression>` a branch (NOTES.md
        // version 34).
        bool sx = xw_subnormal(x);
        bool sl = xw_subnormal(lower);
        bool su = xw_subnormal(upper);
        bool ss = xw_subnormal(scale);
        bool sub = sx || sl || su || ss;
        if (!sub) {
            bool above = lower <= x;
            bool below = x < upper;
            if (!(above && below)) return NONE;
            precise T d = x - lower;
            bool normal = !(abs(d) < XW_MIN_NORMAL);
            bool same = x == lower;
            if (normal || same) {
                precise T r = d * scale;
                return min(uint(floor(r)), p.bins - 1u);
            }
        }
    }
    // Compared and computed by float_ops.glsl, so that subnormal samples, bounds and
    // differences bin as IEEE 754 says on a driver that flushes them too (the variant _exact).
    if (!(xw_less_equal(lower, x) && xw_less(x, upper))) return NONE;
    return min(uint(floor(xw_mul(xw_add(x, xw_negate(lower)), scale))), p.bins - 1u);
#elif defined(XW_T_64)
    if (!(x >= lower && x < upper)) return NONE;
    uint64_t d = uint64_t(x) - uint64_t(lower);
    uint64_t width = packUint2x32(uvec2(p.width_lo, p.width_hi));
    if (width != 0ul) return uint(d / width);
    // q = floor(d * bins / range) < bins <= 2^24, bit by bit: the largest q with
    // q * range <= d * bins.
    uint64_t range = packUint2x32(uvec2(p.range_lo, p.range_hi));
    uint64_t dl;
    uint dh;
    mul96(d, p.bins, dl, dh);
    uint q = 0u;
    for (int bit = findMSB(p.bins); bit >= 0; --bit) {
        uint t = q | (1u << uint(bit));
        uint64_t tl;
        uint th;
        mul96(range, t, tl, th);
        if (th < dh || (th == dh && tl <= dl)) q = t;
    }
    return q;
#else
    if (!(x >= lower && x < upper)) return NONE;
    uint d = uint(x) - uint(lower);
    if (p.width_lo != 0u) return d / p.width_lo;
    uint64_t range = packUint2x32(uvec2(p.range_lo, p.range_hi));
    return uint((uint64_t(d) * uint64_t(p.bins)) / range);
#endif
}

void add(uint b, uint c) {
    if (OP == OP_SHARED || OP == OP_SELF) {
        atomicAdd(sh[min(b, SHARED_WORDS - 1u)], c);
    } else {
        atomicAdd(counts[b], c);
    }
}

// Counts c samples in bin b (NONE: nothing) for each invocation: where the whole subgroup holds
// one bin and one count, one invocation adds them all. Uniform control flow.
void count_run(uint b, uint c) {
    uint b0 = subgroupBroadcastFirst(b);
    uint c0 = subgroupBroadcastFirst(c);
    if (subgroupAll(b == b0 && c == c0)) {
        uint lanes = subgroupBallotBitCount(subgroupBallot(true));
        if (b0 != NONE && subgroupElect()) add(b0, c0 * lanes);
    } else if (b != NONE) {
        add(b, c);
    }
}

// Counts an invocation's BATCH bins by runs of equal bins, its last run by count_run. Uniform
// control flow.
void count_step(uint b[BATCH]) {
    uint run = b[0];
    uint c = 1u;
    [[unroll]] for (uint j = 1u; j < BATCH; ++j) {
        if (b[j] != run) {
            if (run != NONE) add(run, c);
            run = b[j];
            c = 0u;
        }
        ++c;
    }
    count_run(run, c);
}

// SELF, by every invocation once its adds to the totals are issued: invocation 0 counts the
// workgroup done (release: the workgroup's adds come before its count); the last workgroup
// (acquire: every other workgroup's adds before its reads) takes each bin's total, zeroing its
// word, writes it to the output, and zeroes the count. Uniform control flow.
void finish_if_last(uint local, uint block) {
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                   gl_SemanticsAcquireRelease);
    if (local == 0u) {
        uint groups = (p.n - 1u) / p.chunk + 1u;  // the launch's workgroups (p.n > 0)
        uint before = atomicAdd(counts[p.bins], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                                gl_SemanticsRelease);
        s_last = before + 1u == groups ? 1u : 0u;
    }
    barrier();
    if (s_last == 0u) return;
    memoryBarrier(gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsAcquire);
    for (uint i = local; i < p.bins; i += block) {
        uint c = atomicExchange(counts[i], 0u);
        if (p.wide != 0u) {
            wide[2u * i] = c;
            wide[2u * i + 1u] = 0u;
        } else {
            wide[i] = c;
        }
    }
    if (local == 0u) counts[p.bins] = 0u;
}

void main() {
    uint local = gl_LocalInvocationIndex;
    uint block = gl_WorkGroupSize.x;
    uint i0 = xw_group() * block + local;
    if (OP == OP_CLEAR) {
        if (i0 < p.bins) counts[i0] = 0u;
        return;
    }
    if (OP == OP_WIDEN) {
        if (i0 < p.bins) {
            wide[2u * i0] = counts[i0];
            wide[2u * i0 + 1u] = 0u;
        }
        return;
    }
    if (OP == OP_SHARED || OP == OP_SELF) {
        for (uint i = local; i < p.bins; i += block) sh[i] = 0u;
        barrier();
    }
    uint start = xw_group() * p.chunk;
    uint stop = min(start + p.chunk, p.n);
    // Where the chunk's whole steps end (start < stop: the launch has no empty workgroup).
    uint whole = stop - (stop - start) % (BATCH * block);
    for (uint base = start; base < whole; base += BATCH * block) {
        // A whole step: every load issued before any sample is binned (a bin's branches would
        // otherwise keep each load behind the one before).
        T x[BATCH];
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) x[j] = samples[base + j * block + local];
        uint b[BATCH];
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) b[j] = bin_of(x[j]);
        count_step(b);
    }
    // The chunk's partial last step (the input's end, in the last workgroup only): every load
    // in flight at once (places past the end read the input's last sample and count nowhere),
    // then the samples binned one at a time, taken from the loaded ones by selects (one copy
    // of the binning's code rather than BATCH more, and no array indexed at run time). (One
    // load at a time, the step took an input of 2^10 samples 1.3x the time of one of 2^12;
    // through the whole steps' loop, whose loads then needed a bound each, it cost inputs of
    // 2^24-2^26 3-8%, NOTES.md version 57.)
    if (whole < stop) {
        T x[BATCH];
        [[unroll]] for (uint j = 0u; j < BATCH; ++j) {
            x[j] = samples[min(whole + j * block + local, p.n - 1u)];
        }
        [[dont_unroll]] for (uint j = 0u; j < BATCH; ++j) {
            T v = x[0];
            [[unroll]] for (uint q = 1u; q < BATCH; ++q) v = j == q ? x[q] : v;
            count_run(whole + j * block + local < stop ? bin_of(v) : NONE, 1u);
        }
    }
    if (OP == OP_SHARED || OP == OP_SELF) {
        barrier();
        for (uint i = local; i < p.bins; i += block) {
            uint c = sh[i];
            if (c != 0u) atomicAdd(counts[i], c);
        }
    }
    if (OP == OP_SELF) finish_if_last(local, block);
}
