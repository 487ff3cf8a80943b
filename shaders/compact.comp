#version 450
// Stream compaction; the twin of cuda/compact.cu, modelled by src/cpu/compact.rs. Its text is
// in compact.glsl.
#include "compact.glsl"
