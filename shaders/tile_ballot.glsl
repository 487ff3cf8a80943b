// Ballot counting for the kernels that rank a tile's elements by subgroup ballots (compaction,
// partition, unique, run-length encoding, reduce-by-key, top-k): the lanes a ballot holds, and
// those below the caller. A subgroup of 32 counts its one-word ballot with scalar bit
// operations. Needs GL_KHR_shader_subgroup_ballot.
uint ballot_count(uvec4 b) {
    if (gl_SubgroupSize == 32u) return uint(bitCount(b.x));
    return subgroupBallotBitCount(b);
}
uint ballot_rank(uvec4 b) {
    if (gl_SubgroupSize == 32u) return uint(bitCount(b.x & gl_SubgroupLtMask.x));
    return subgroupBallotExclusiveBitCount(b);
}
