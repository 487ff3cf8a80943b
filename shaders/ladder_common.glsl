// Shared by the reduction-ladder shaders (shaders/reduce_<rung>.comp), the rungs of the
// parallel-reduction walkthrough of Professional CUDA C Programming (chapter 3's
// reduceInteger.cu, chapter 5's shared-memory and shuffle reduces). Twins: cuda/reduce_<rung>.cu
// (each self-contained); CPU model: src/cpu/ladder.rs.
//
// Include after common.glsl and after `layout(local_size_x_id = 0) in;` (so that any array
// sized by gl_WorkGroupSize gets the real size). Before including, define
//   LADDER_AT(i)     the block's element i that the in-place tree works on: `work[ladder_base + i]`
//                    (a scratch copy in device memory: the chapter-3 rungs) or `smem[i]` (shared
//                    memory: reduce_smem);
//   LADDER_GLOBAL    when LADDER_AT lies in device memory (then barriers also order buffer
//                    memory, and the scratch buffer must be declared XW_WORKGROUP_COHERENT:
//                    `workgroupcoherent` in the `_vmm` variants, else `coherent`).
// Sums wrap on overflow, as the kernels of the book do on int (OpIAdd wraps).

layout(push_constant) uniform Params {
    uint n;         // elements in this launch
    uint groups;    // workgroups that have work; any beyond leave at once
    uint dst_index; // index of the first partial in dst
} p;

// The first element of this workgroup's slice of the scratch buffer (chapter-3 rungs).
uint ladder_base;

// A workgroup-wide step boundary: __syncthreads() of the CUDA twin. Under the Vulkan memory
// model (the `_vmm` variants) a workgroup-scope barrier that releases and acquires buffer
// memory, which is what __syncthreads() promises for global memory; otherwise a device-scope
// buffer barrier on a `coherent` buffer.
void ladder_barrier() {
#if defined(LADDER_GLOBAL) && defined(XW_VULKAN_MEMORY_MODEL)
    controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsBuffer,
                   gl_SemanticsAcquireRelease);
#elif defined(LADDER_GLOBAL)
    memoryBarrierBuffer();
    barrier();
#else
    memoryBarrierShared();
    barrier();
#endif
}

// A subgroup-wide step boundary: what __syncwarp() is in the CUDA twin, for the steps that
// stay inside one subgroup.
void ladder_subgroup_barrier() {
#if defined(LADDER_GLOBAL) && defined(XW_VULKAN_MEMORY_MODEL)
    controlBarrier(gl_ScopeSubgroup, gl_ScopeSubgroup, gl_StorageSemanticsBuffer,
                   gl_SemanticsAcquireRelease);
#elif defined(LADDER_GLOBAL)
    subgroupMemoryBarrierBuffer();
    subgroupBarrier();
#else
    subgroupMemoryBarrierShared();
    subgroupBarrier();
#endif
}

// The sum of the `items` data blocks this thread starts with (unrolling 2/4/8: elements
// idx, idx + block, ..., idx + (items-1)*block of the workgroup's tile of items*block
// elements). Every load is guarded: a ragged tail contributes zeros.
T ladder_load(uint group, uint tid, uint items) {
    uint block = gl_WorkGroupSize.x;
    uint idx = group * block * items + tid;
    T sum = T(0);
    for (uint k = 0u; k < items; ++k) {
        uint i = idx + k * block;
        if (i < p.n) sum += src[i];
    }
    return sum;
}

// One step of the interleaved tree: `if (tid < stride) idata[tid] += idata[tid + stride];
// __syncthreads();`. Call in uniform control flow.
void ladder_tree_step(uint tid, uint stride) {
    if (tid < stride) LADDER_AT(tid) += LADDER_AT(tid + stride);
    ladder_barrier();
}

// One step of the book's unrolled last warp (`vmem[tid] += vmem[tid + stride]` for tid < 32),
// on ANY subgroup size S. CUDA relies on the 32 lanes of warp 0 running together; Vulkan gives
// no such warp, so:
// - while stride >= S the step's readers and writers may lie in different subgroups: it is a
//   whole-workgroup step with a workgroup barrier (uniform control flow: stride and S are
//   uniform);
// - once stride < S every lane that matters (tid < 2 * stride <= S) lies in subgroup 0, which
//   holds invocations 0..S-1 (xw_local counts through subgroups): subgroup 0 alone reads, waits
//   at a subgroup barrier, writes and waits again, exactly as the CUDA twin separates read and
//   write with __syncwarp(). Other subgroups skip these steps; the branch is uniform per
//   subgroup, as subgroupBarrier requires.
// S = 4, 8, 16 (llvmpipe) take barriers down to stride 4, 8, 16; S = 32 (NVIDIA) does the
// stride-32 step with a barrier and the rest in the subgroup; S >= 64 (AMD) all six in the
// subgroup.
void ladder_warp_step(uint tid, uint stride) {
    if (stride >= gl_SubgroupSize) {
        ladder_tree_step(tid, stride);
    } else if (gl_SubgroupID == 0u) {
        T v = T(0);
        if (tid < stride) v = LADDER_AT(tid) + LADDER_AT(tid + stride);
        ladder_subgroup_barrier();
        if (tid < stride) LADDER_AT(tid) = v;
        ladder_subgroup_barrier();
    }
}

// The last warp unrolled (strides 32, 16, 8, 4, 2, 1); needs a block of at least 64. Call in
// uniform control flow; afterwards invocation 0 holds the total in LADDER_AT(0).
void ladder_last_warp(uint tid) {
    ladder_warp_step(tid, 32u);
    ladder_warp_step(tid, 16u);
    ladder_warp_step(tid, 8u);
    ladder_warp_step(tid, 4u);
    ladder_warp_step(tid, 2u);
    ladder_warp_step(tid, 1u);
}
