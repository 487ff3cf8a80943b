#version 450
// The gate of gated f32 averages (stencil.glsl; src/stencil.rs says where it is taken): the
// stencil in the driver's arithmetic, whose subgroups also test the values they loaded and,
// where one is not plain, set the workgroups of the exact launch that follows. Only `f32`.
#extension GL_KHR_shader_subgroup_vote : require
#define XW_STENCIL_GATE 1
#include "stencil.glsl"
