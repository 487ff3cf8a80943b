// The 32-lane logical warp's ballot on any subgroup size: CUDA's __ballot_sync for the vote and
// compaction kernels. Needs GL_KHR_shader_subgroup_ballot, and the workgroup size declared
// (layout(local_size_x_id = 0) in;) before this file: glslang sizes the array below with the
// gl_WorkGroupSize in force where it is declared, (1, 1, 1) if none is yet.

// One entry per subgroup (a subgroup has at least one invocation).
shared uvec2 xw_subgroup_bits[gl_WorkGroupSize.x];

// The ballots of `pass` (x) and `live` (y: the active lanes) over the caller's logical warp,
// bit l for lane l.
// A subgroup of 32 or more invocations holds whole warps, whose 32 bits are one word of the
// uvec4 ballot; narrower subgroups publish their bits in shared memory and every lane gathers
// the 32 / gl_SubgroupSize pieces of its warp. Call it from the whole workgroup in uniform
// control flow: the narrow path has barriers.
uvec2 xw_warp_ballot(bool pass, bool live) {
    uvec4 b = subgroupBallot(pass);
    uvec4 a = subgroupBallot(live);
    if (gl_SubgroupSize >= XW_WARP) {
        uint word = gl_SubgroupInvocationID / XW_WARP;
        return uvec2(b[word], a[word]);
    }
    if (subgroupElect()) xw_subgroup_bits[xw_subgroup_id()] = uvec2(b.x, a.x);
    barrier();
    uint pieces = XW_WARP / gl_SubgroupSize;
    uint first = xw_local() / XW_WARP * pieces;
    uvec2 bits = uvec2(0u);
    for (uint k = 0u; k < pieces; ++k) {
        bits |= xw_subgroup_bits[xw_bound(first + k)] << (k * gl_SubgroupSize);
    }
    // The entries may be written again by the caller's next ballot.
    barrier();
    return bits;
}
