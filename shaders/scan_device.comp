#version 450
// variants: i32 u32 f32 i64 u64 f64
//
// The device scan, single pass with decoupled look-back; the twin of cuda/scan_device.cu,
// modelled by src/cpu/scan.rs. Its text is in scan_device.glsl.
#include "scan_device.glsl"
