#version 450
// The 5-point weighted moving average (Professional CUDA C Programming, chapter 5); the twin of
// cuda/stencil.cu, modelled by src/cpu/stencil.rs:
//
//   y[i] = ((((w0*x[i-2] + w1*x[i-1]) + w2*x[i]) + w3*x[i+1]) + w4*x[i+2])   for 2 <= i < n-2,
//   y[i] = +0.0 for the two outputs at each end (every output when n <= 4).
//
// The sum is evaluated in exactly that order, every product and sum rounded on its own (`precise`
// in float_ops.glsl forbids contracting a product and a sum into an FMA), subnormals kept on
// every device: that is what makes the result bit-identical to CUDA (__fmul_rn/__fadd_rn) and the
// CPU reference at every subgroup size.
//
// SMEM 0, the shuffle version: each 32-lane logical warp loads its 32 centre values plus two
// halo values on each side into registers (lanes 0 and 1 load x[i-2], lanes 30 and 31 load
// x[i+2]) and gets its neighbours by shift up/down shuffles.
// SMEM 1, the shared-memory version: the workgroup loads its tile plus two halo values on each
// side into shared memory, waits at a barrier, and reads its neighbours from there.
//
// Invocation t of the launch computes output t; the host plans the bindings (src/stencil.rs).
#include "common.glsl"
#include "shuffle.glsl"
#include "float_ops.glsl"

// Declared before the shared arrays sized by gl_WorkGroupSize (else glslang sizes them as 1).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SMEM = 0u; // 0 shuffle version, 1 shared-memory version
layout(constant_id = 2) const uint ROWS = 8u; // layers of a workgroup's width per workgroup

layout(std430, binding = 0) readonly buffer Src { T src[]; };
layout(std430, binding = 1) writeonly buffer Dst { T dst[]; };
layout(push_constant) uniform Params {
    uint count;   // outputs in this launch
    uint in_off;  // index in src of output 0's centre element x[i]
    uint in_len;  // elements src holds; anything before 0 or from in_len on lies past the signal
    uint lo;      // outputs lo .. hi-1 are averages, the others the edge value +0.0
    uint hi;
    uint out_off; // index in dst of output 0
    uint w[10];   // weights w0 .. w4, two words each, low first (f32: the low word)
} p;

const uint HALO = 2u;
// Shared version: the tile and its halo. Shuffle version on subgroups narrower than a warp:
// the centre values, staged for lanes whose neighbour lies in another subgroup.
shared T tile[gl_WorkGroupSize.x + 2u * HALO];
// Shuffle version on narrow subgroups: the halo registers, staged likewise.
shared T halo[gl_WorkGroupSize.x];

T weight(uint k) {
#if defined(XW_TYPE_F64)
    return packDouble2x32(uvec2(p.w[2u * k], p.w[2u * k + 1u]));
#else
    return uintBitsToFloat(p.w[2u * k]);
#endif
}

// x at offset d from output t's centre; past either end of the bound input it is never used
// for an average, and reads as 0 so nothing out of bounds is touched.
T load(uint t, int d) {
    int q = int(p.in_off + t) + d;
    return q >= 0 && q < int(p.in_len) ? src[q] : T(0);
}

// The average in the driver's arithmetic, with xw_add's and xw_mul's tests beside the chain
// (float_ops.glsl): `slow` set where a test failed, where the exact average may differ.
T average_fast(T m2, T m1, T c, T p1, T p2, inout bool slow) {
    T y = xw_sum_fast(xw_mul_fast(weight(0u), m2, slow), xw_mul_fast(weight(1u), m1, slow), slow);
    y = xw_sum_fast(y, xw_mul_fast(weight(2u), c, slow), slow);
    y = xw_sum_fast(y, xw_mul_fast(weight(3u), p1, slow), slow);
    return xw_sum_fast(y, xw_mul_fast(weight(4u), p2, slow), slow);
}

// The documented order, no contraction, by xw_add and xw_mul alone (float_ops.glsl: exact
// where SUBNORMALS is 1).
T average_exact(T m2, T m1, T c, T p1, T p2) {
    T y = xw_add(xw_mul(weight(0u), m2), xw_mul(weight(1u), m1));
    y = xw_add(y, xw_mul(weight(2u), c));
    y = xw_add(y, xw_mul(weight(3u), p1));
    return xw_add(y, xw_mul(weight(4u), p2));
}

// The documented order, no contraction: bit-identical on every device.
T average(T m2, T m1, T c, T p1, T p2) {
    if (SUBNORMALS == 1u) {
        // The exact arithmetic in one batch (float_ops.glsl): the driver's products and sums
        // with their tests beside, and the exact ones only where a test failed.
        bool slow = false;
        T y = average_fast(m2, m1, c, p1, p2, slow);
        if (!slow) return y;
    }
    return average_exact(m2, m1, c, p1, p2);
}

void main() {
    uint block = gl_WorkGroupSize.x;
    // A workgroup computes ROWS layers of `block` consecutive outputs each; every layer is
    // aligned like a workgroup of its own, so warps start at multiples of 32 outputs.
    uint first = xw_group() * block * ROWS;
    // Whole workgroups past the end leave together, so the barriers below see every
    // invocation of the workgroups that stay.
    if (first >= p.count) return;
    uint local = xw_local();
    uint lane = local % XW_WARP;
    // Every load of every layer is issued before the first average. Invocations past `count`
    // still load: their centre values are the right-hand neighbours of the last outputs. The
    // halo registers: in the shuffle version lanes 0 and 1 hold x[i-2] (x[base-2], x[base-1] of
    // the warp starting at `base`), lanes 30 and 31 hold x[i+2] (x[base+32], x[base+33]); in
    // the shared-memory version the first and last two invocations of the layer do.
    T c[ROWS];
    T h[ROWS];
    bool slow = false;  // SUBNORMALS 1, SMEM 1: a test of this invocation's averages failed
    bool left = SMEM == 1u ? local < HALO : lane < HALO;
    bool right = SMEM == 1u ? local >= block - HALO : lane >= XW_WARP - HALO;
    // A workgroup whose every load (halo included) lies inside the bound input loads without
    // bounds checks or branches: each invocation's halo load reads x[i-2], x[i+2] or, for
    // those that need none, its own centre again (no extra memory traffic). Only the
    // workgroups at the ends of the input take the checked path.
    uint base = p.in_off + first;
    if (base >= HALO && base + ROWS * block + HALO <= p.in_len) {
        uint s = base + local;
        uint hs = left ? s - HALO : (right ? s + HALO : s);
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            c[r] = src[s + r * block];
            h[r] = src[hs + r * block];
        }
    } else {
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            uint t = first + r * block + local;
            c[r] = load(t, 0);
            h[r] = left ? load(t, -int(HALO)) : (right ? load(t, int(HALO)) : T(0));
        }
    }
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        uint t = first + r * block + local;
        T m2, m1, p1, p2;
        if (SMEM == 1u) {
            tile[local + HALO] = c[r];
            if (left) tile[local] = h[r];
            if (right) tile[local + 2u * HALO] = h[r];
            // Each invocation reads slots that other invocations wrote (its neighbours, the
            // halo loaders at the layer's edges), possibly in other subgroups: the barrier
            // makes every write visible before any read.
            barrier();
            m2 = tile[local];
            m1 = tile[local + 1u];
            p1 = tile[local + 3u];
            p2 = tile[local + 4u];
            // The next layer overwrites the tile.
            barrier();
        } else {
            // Every invocation shuffles (a shuffle reads only active invocations); the fix-ups
            // below discard what the lanes at the warp's edges got.
            T up2 = xw_shuffle_up(c[r], 2u);
            T up1 = xw_shuffle_up(c[r], 1u);
            T dn1 = xw_shuffle_down(c[r], 1u);
            T dn2 = xw_shuffle_down(c[r], 2u);
            T h_dn1 = xw_shuffle_down(h[r], 1u);
            T h_up1 = xw_shuffle_up(h[r], 1u);
            if (gl_SubgroupSize < XW_WARP) {
                // A warp spans several subgroups: a neighbour in another subgroup of the same
                // warp is out of the shuffle's reach (Vulkan leaves the value undefined), so it
                // comes through shared memory. The condition is uniform, so the barriers are
                // too; the first makes every staged value visible before any is read, the
                // second keeps the next layer from overwriting them early.
                tile[local] = c[r];
                halo[local] = h[r];
                barrier();
                uint s = gl_SubgroupInvocationID;
                uint sg = gl_SubgroupSize;
                if (lane >= 2u && s < 2u) up2 = tile[local - 2u];
                if (lane >= 1u && s < 1u) up1 = tile[local - 1u];
                if (lane + 1u < XW_WARP && s + 1u >= sg) dn1 = tile[local + 1u];
                if (lane + 2u < XW_WARP && s + 2u >= sg) dn2 = tile[local + 2u];
                if (lane == 0u && s + 1u >= sg) h_dn1 = halo[local + 1u];
                if (lane == XW_WARP - 1u && s < 1u) h_up1 = halo[local - 1u];
                barrier();
            }
            // The fix-ups: a lane whose neighbour lies outside its warp takes it from the halo
            // registers. Lanes 0 and 1 use their own x[i-2]; lane 0's x[i-1] is lane 1's
            // x[i-2]. Lanes 30 and 31 use their own x[i+2]; lane 31's x[i+1] is lane 30's x[i+2].
            m2 = lane >= 2u ? up2 : h[r];
            m1 = lane >= 1u ? up1 : h_dn1;
            p1 = lane + 1u < XW_WARP ? dn1 : h_up1;
            p2 = lane + 2u < XW_WARP ? dn2 : h[r];
        }
        bool inside = t >= p.lo && t < p.hi;
        if (SUBNORMALS == 1u && SMEM == 1u) {
            // The driver's arithmetic for every layer, tested; the exact one below only for
            // an invocation where a test of its averages failed. (The shuffle version keeps
            // the test and the exact path by each average: there this form took 1.04-1.06x
            // the time from 2^24 on an H200, and the shared-memory version 0.95-0.98x;
            // NOTES.md, version 62.)
            bool s = false;
            T y = average_fast(m2, m1, c[r], p1, p2, s);
            // (`a || b` without a branch only where b is a plain variable: float_ops.glsl.)
            bool failed = inside && s;
            slow = slow || failed;
            if (t < p.count) dst[p.out_off + t] = inside ? y : T(0);
        } else if (t < p.count) {
            dst[p.out_off + t] = inside ? average(m2, m1, c[r], p1, p2) : T(0);
        }
    }
    if (SUBNORMALS == 1u && SMEM == 1u && slow) {
        // This invocation's averages again, exactly, from the input (they replace the ones it
        // stored above; no other invocation writes them). The driver's arithmetic and its
        // tests are not repeated: where they passed, the exact chain gives the same bits.
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
            uint t = first + r * block + local;
            if (t < p.count && t >= p.lo && t < p.hi) {
                dst[p.out_off + t] =
                    average_exact(load(t, -2), load(t, -1), load(t, 0), load(t, 1), load(t, 2));
            }
        }
    }
}
