#version 450
// The stable partition of partition.glsl with the one-launch step's tile states tagged by
// epochs in the device's epochs buffer (XW_EPOCHS): no count of tiles done and no zeroing after
// the call. Needs shaderBufferInt64Atomics; src/partition.rs takes it where the device has it,
// else partition.comp. The CUDA twin is cuda/partition.cu (its count of tiles done fences with
// acquire-release).
#extension GL_EXT_shader_atomic_int64 : require
#define XW_EPOCHS 1
#include "partition.glsl"
