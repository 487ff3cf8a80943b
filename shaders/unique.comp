#version 450
// Unique (CUB's DeviceSelect::Unique): the key of each run's head, in input order, and the
// number of runs; the twin of cuda/unique.cu, modelled by src/cpu/runs.rs. Its text is in
// runs.glsl.
#define XW_RUNS_UNIQUE 1
#include "common.glsl"
#include "runs.glsl"
