#version 450
#include "stencil.glsl"
