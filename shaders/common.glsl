// Shared by every xwarp compute shader; the twin of cuda/common.cuh.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require

// Bit containers for kernels that only move data: 64-bit values travel as two 32-bit halves,
// as CUDA moves them through __shfl_*_sync. The variant b64_int64 (devices with shaderInt64) is
// b64 whose kernels may also take 64-bit integer arithmetic on them (XW_BITS_INT64).
#if defined(XW_TYPE_B64_INT64)
#define XW_TYPE_B64 1
#define XW_BITS_INT64 1
#endif
#if defined(XW_TYPE_B32)
#define WORD uint
#define WORD_ZERO 0u
#elif defined(XW_TYPE_B64)
#define WORD uvec2
#define WORD_ZERO uvec2(0u)
#endif

// Element types for kernels that compute: T is the element type; XW_T_64 marks 64-bit types
// (which need shaderInt64 / shaderFloat64), XW_T_FLOAT floating-point ones. The float types'
// variants _exact and _flush set how their arithmetic treats subnormals (float_ops.glsl).
#if defined(XW_TYPE_F32_EXACT) || defined(XW_TYPE_F64_EXACT)
#define XW_SUBNORMALS_EXACT 1
#elif defined(XW_TYPE_F32_FLUSH) || defined(XW_TYPE_F64_FLUSH)
#define XW_SUBNORMALS_FLUSH 1
#endif
#if defined(XW_TYPE_F32_EXACT) || defined(XW_TYPE_F32_FLUSH)
#define XW_TYPE_F32 1
#elif defined(XW_TYPE_F64_EXACT) || defined(XW_TYPE_F64_FLUSH)
#define XW_TYPE_F64 1
#endif
// The reduction ladder's `_vmm` variants (i32_vmm, ...): the same element type, compiled under
// the Vulkan memory model (a device's `vulkanMemoryModel` feature), where a buffer can be
// coherent within the workgroup only (`workgroupcoherent`), as global memory is between the
// threads of a CUDA block at __syncthreads(). Under the GLSL memory model the only coherence a
// buffer can ask for is `coherent`, which is device-wide, and a driver honours it by keeping
// every access out of the SM's cache.
#if defined(XW_TYPE_I32_VMM) || defined(XW_TYPE_U32_VMM) || defined(XW_TYPE_I64_VMM) || \
    defined(XW_TYPE_U64_VMM)
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
#define XW_VULKAN_MEMORY_MODEL 1
#define XW_WORKGROUP_COHERENT workgroupcoherent
#else
#define XW_WORKGROUP_COHERENT coherent
#endif
#if defined(XW_TYPE_I32_VMM)
#define XW_TYPE_I32 1
#elif defined(XW_TYPE_U32_VMM)
#define XW_TYPE_U32 1
#elif defined(XW_TYPE_I64_VMM)
#define XW_TYPE_I64 1
#elif defined(XW_TYPE_U64_VMM)
#define XW_TYPE_U64 1
#endif
#if defined(XW_TYPE_I32)
#define T int
#elif defined(XW_TYPE_U32)
#define T uint
#elif defined(XW_TYPE_F32)
#define T float
#define XW_T_FLOAT 1
#elif defined(XW_TYPE_I64)
#define T int64_t
#define XW_T_64 1
#elif defined(XW_TYPE_U64)
#define T uint64_t
#define XW_T_64 1
#elif defined(XW_TYPE_F64)
#define T double
#define XW_T_64 1
#define XW_T_FLOAT 1
#endif

// The warp of the CUDA programming model, which the CUDA-exact kernels reproduce whatever the
// device's subgroup size.
const uint XW_WARP = 32u;

// Grids are two-dimensional so that launches may exceed 65535 workgroups on every device;
// the group index is linearised as in cuda/common.cuh.
uint xw_group() {
    return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

// Shared-memory indices derived from what the driver reports about subgroups are bounded by
// the workgroup, so that no report, however wrong, sends an access outside its array. The
// self-test at device open refuses a driver whose subgroups are not what it claims (one was
// seen to claim 32 lanes and run 16, which made the unbounded index reach 495 in a workgroup
// of 256); the bound keeps memory safe even so. On a correct driver it changes nothing.
// Macros, not functions: a function defined here, before the kernel declares its workgroup
// size, would see gl_WorkGroupSize as (1, 1, 1).
#define xw_bound(i) min((i), gl_WorkGroupSize.x - 1u)

// The invocation's place in its workgroup, counted through subgroups, so that neighbouring
// lanes of a subgroup handle neighbouring data however the device maps invocations to
// subgroups (pipelines ask for full subgroups where the device allows).
#define xw_local() xw_bound(gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID)

// gl_SubgroupID and gl_NumSubgroups for indexing arrays of one entry per invocation.
#define xw_subgroup_id() xw_bound(gl_SubgroupID)
#define xw_num_subgroups() min(gl_NumSubgroups, gl_WorkGroupSize.x)
