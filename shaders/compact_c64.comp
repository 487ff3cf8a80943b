#version 450
// The stream compaction of compact.glsl with the unordered step's count and tiles done in one
// 64-bit word (XW_COUNT64), one atomic per tile, as the CUDA twin keeps them. Needs
// shaderBufferInt64Atomics; src/compact.rs takes it where the device has it, else
// compact.comp.
#extension GL_EXT_shader_atomic_int64 : require
#define XW_COUNT64 1
// 1 (with HEADS, LENGTHS and EPOCHS: run-length encoding of one chunk and one window): each
// tile closes the run before its first head itself, from one word a tile carried through the
// look-back (see look_back in compact.glsl); no last launch, no count of tiles done.
layout(constant_id = 7) const uint CARRY = 0u;
#include "compact.glsl"
