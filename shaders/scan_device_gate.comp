#version 450
// The gate of a gated f32 sum scan (scan_device.glsl, GATE_ARGS; src/scan.rs says where it is
// taken): scan_device_vec.comp in the driver's arithmetic, whose tiles also test their inputs
// and, where one may take the driver's flushing sums away from the exact ones, set the
// workgroups of the exact launch that follows it. Only the `f32` variant exists.
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#define XW_STATE64 1
#define XW_VEC 1
#define XW_GATE 1
#include "scan_device.glsl"
