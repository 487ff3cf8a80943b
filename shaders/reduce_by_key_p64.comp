#version 450
// Reduce-by-key of 4-byte values with each tile state in one 64-bit word (XW_RUNS_PACKED in
// runs.glsl): published and read by single atomics, with no buffer barrier around them. Needs
// shaderBufferInt64Atomics; src/reduce_by_key.rs takes it where the device has it, else
// reduce_by_key.comp. The CUDA twin is cuda/reduce_by_key.cu (its fences are acquire-release).
#extension GL_EXT_shader_atomic_int64 : require
#define XW_RUNS_RBK 1
#define XW_RUNS_PACKED 1
#include "common.glsl"
layout(constant_id = 3) const uint OP = 0u;  // reduce_op.glsl codes
#include "reduce_op.glsl"
#include "runs.glsl"
