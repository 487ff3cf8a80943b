// Scan building blocks shared by scan.comp and scan_device.comp; the twin of
// cuda/scan_common.cuh, modelled by src/cpu/scan.rs. Needs `stage` (a T per invocation) and
// `warp_totals` (a T per 32 invocations) in shared memory, OP, and reduce_op.glsl.
//
// The canonical order inside a tile of BLOCK threads holding ITEMS consecutive elements each:
//   s[j]   = op(s[j-1], x[j])                      each thread, in order (s[0] = x[0])
//   incl   = Kogge-Stone over each 32-lane warp:    v = op(v[lane - d], v) for d = 1, 2, 4, 8, 16
//   excl   = incl of the lane below (identity for lane 0)
//   WP[w]  = op(...op(identity, W[0])..., W[w-1])   the warp totals W, folded in order
//   TP     = op(WP[w], excl)                        the thread's exclusive prefix in the tile
//   A      = op(...op(identity, W[0])..., W[last])  the tile's total
//   out[j] = op(op(E, TP), s[j])                    E: the tile's exclusive prefix (inclusive
//            (exclusive: op(E, TP) for j = 0,       scan); op(op(E, TP), s[j-1]) otherwise)
// Every step keeps lower elements on the left. Identities enter as written (op(WP, id) in
// lane 0, op(E, id) for the first tile): for min/max after an all-NaN prefix that gives the
// identity's NaN, not the input's payload, on every backend and in the CPU reference alike.

#if defined(XW_SUBNORMALS_EXACT)
#extension GL_KHR_shader_subgroup_vote : require

// Invocations holding elements of the input: 0 .. xw_live - 1 (a partial last tile sets it;
// the others hold only the identity). Exact float sums skip the test of a sum whose source
// lane is past them: its operands are -0.0 and a value already tested (or -0.0), so the
// driver's sum is exact, and a partial tile does not fold its padding again exactly.
uint xw_live = 0xffffffffu;
#endif

// Inclusive Kogge-Stone scan of a 32-lane logical warp. When the warp spans several subgroups
// every level goes through shared memory (a shift up crosses subgroups); call in uniform
// control flow.
T warp_inclusive(T v, uint local) {
    uint lane = local % XW_WARP;
#if defined(XW_SUBNORMALS_EXACT)
    if (OP == 0u && gl_SubgroupSize >= XW_WARP) {
        // Exact float sums in one batch (reduce_op.glsl's xw_op_fast): the driver's sums with
        // their tests, kept unless a test failed in the subgroup (whose shuffles the exact
        // steps below need).
        bool slow = false;
        T x = v;
        if (xw_live == 0xffffffffu) {
            // A whole tile: every sum tested (the loop of kernels without partial tiles).
            for (uint d = 1u; d < XW_WARP; d <<= 1u) {
                T o = xw_shuffle_up(x, d);
                if (lane >= d) x = xw_op_fast(o, x, slow);
            }
        } else {
            for (uint d = 1u; d < XW_WARP; d <<= 1u) {
                T o = xw_shuffle_up(x, d);
                bool t = false;
                if (lane >= d) x = xw_op_fast(o, x, t);
                slow = slow || (t && local - d < xw_live);
            }
        }
        if (!subgroupAny(slow)) return x;
    }
#endif
    for (uint d = 1u; d < XW_WARP; d <<= 1u) {
        T o;
        if (gl_SubgroupSize >= XW_WARP) {
            o = xw_shuffle_up(v, d);
        } else {
            stage[local] = v;
            barrier();
            o = lane >= d ? stage[local - d] : v;
            barrier();
        }
        // A lane with no source keeps its value, as after __shfl_up_sync.
        if (lane >= d) v = xw_op(o, v);
    }
    return v;
}

// The inclusive value of the lane below; the identity for lane 0.
T warp_shift_up_one(T incl, uint local) {
    uint lane = local % XW_WARP;
    T o;
    if (gl_SubgroupSize >= XW_WARP) {
        o = xw_shuffle_up(incl, 1u);
    } else {
        stage[local] = incl;
        barrier();
        o = lane >= 1u ? stage[local - 1u] : incl;
        barrier();
    }
    return lane == 0u ? xw_identity() : o;
}

// The exclusive prefix (TP) of each thread's total within the workgroup, and the workgroup's
// total (A). Call in uniform control flow.
void block_prefix(T thread_total, uint local, out T prefix, out T total) {
    T incl = warp_inclusive(thread_total, local);
    T excl = warp_shift_up_one(incl, local);
    uint warp = local / XW_WARP;
    if (local % XW_WARP == XW_WARP - 1u) warp_totals[warp] = incl;
    barrier();
    T wp = xw_identity();
    T all = xw_identity();
    uint warps = gl_WorkGroupSize.x / XW_WARP;
    // Exact float sums: natively with their tests first, again exactly where one failed.
    bool slow = false;
    for (uint w = 0u; w < warps; ++w) {
        if (w == warp) wp = all;
        all = xw_op_fast(all, warp_totals[w], slow);
    }
    if (slow) {
        all = xw_identity();
        for (uint w = 0u; w < warps; ++w) {
            if (w == warp) wp = all;
            all = xw_op(all, warp_totals[w]);
        }
    }
    barrier();
    prefix = xw_op(wp, excl);
    total = all;
}
