#version 450
// Reduce-by-key of 4-byte values, a launch of more than one tile, with its tile states in the
// device's epochs buffer tagged with the call's epoch (XW_RUNS_EPOCHS in runs.glsl): no count of
// tiles done and no zeroing after the call. Needs shaderBufferInt64Atomics and the subgroup
// ballot and vote operations; src/runs.rs takes it where the device has them and the states
// fit, else reduce_by_key_p64.comp. The CUDA twin is
// cuda/reduce_by_key.cu (its count of tiles done fences with acquire-release).
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_vote : require
#define XW_RUNS_RBK 1
#define XW_RUNS_PACKED 1
#define XW_RUNS_EPOCHS 1
#include "common.glsl"
layout(constant_id = 3) const uint OP = 0u;  // reduce_op.glsl codes
#include "reduce_op.glsl"
#include "runs.glsl"
