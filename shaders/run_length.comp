#version 450
// Run-length encoding (CUB's DeviceRunLengthEncode::Encode): each run's key and length, and
// the number of runs; the twin of cuda/run_length.cu, modelled by src/cpu/runs.rs. Its text is
// in runs.glsl.
#define XW_RUNS_RLE 1
#include "common.glsl"
#include "runs.glsl"
