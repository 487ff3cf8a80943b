#version 450
// The stream compaction of compact.glsl with the unordered step's count and tiles done in one
// 64-bit word (XW_COUNT64), one atomic per tile, as the CUDA twin keeps them. Needs
// shaderBufferInt64Atomics; src/compact.rs takes it where the device has it, else
// compact.comp.
#extension GL_EXT_shader_atomic_int64 : require
#define XW_COUNT64 1
#include "compact.glsl"
