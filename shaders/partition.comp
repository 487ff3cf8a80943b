#version 450
// Stable two-way partition; the twin of cuda/partition.cu, modelled by src/cpu/partition.rs. Its
// text is in partition.glsl.
#include "partition.glsl"
