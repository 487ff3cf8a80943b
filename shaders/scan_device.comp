#version 450
// The device scan, single pass with decoupled look-back; the twin of cuda/scan_device.cu,
// modelled by src/cpu/scan.rs. Its text is in scan_device.glsl.
#include "scan_device.glsl"
