#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// Stream compaction; the twin of cuda/compact.cu, modelled by src/cpu/compact.rs. Its text is
// in compact.glsl.
#include "compact.glsl"
