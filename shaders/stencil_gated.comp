#version 450
// The exact launch of gated f32 averages (stencil.glsl): the stencil's exact variant, launched
// with the workgroup counts its gate set, which its first invocation sets back to none. Only
// `f32_exact`.
#define XW_STENCIL_GATED 1
#include "stencil.glsl"
