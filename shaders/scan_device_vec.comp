#version 450
// The device scan of scan_device.glsl for 4-byte types with the one-word tile state
// (XW_STATE64, as scan_device_s64.comp) and the tile in registers (XW_VEC): no staging area in
// shared memory, 16-byte loads and stores; integers through the subgroups' inclusive scans, f32
// in its documented order (vec_cin). Needs shaderBufferInt64Atomics and the subgroup arithmetic
// operations; src/tuning.rs says where src/scan.rs takes it.
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define XW_STATE64 1
#define XW_VEC 1
#include "scan_device.glsl"
