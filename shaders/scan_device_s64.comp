#version 450
// The device scan of scan_device.glsl for 32-bit types, with each tile's flag and value in one
// 64-bit word (XW_STATE64), as the CUDA twin keeps them. Needs shaderBufferInt64Atomics;
// src/scan.rs takes it where the device has it, else scan_device.comp.
#extension GL_EXT_shader_atomic_int64 : require
#define XW_STATE64 1
#include "scan_device.glsl"
