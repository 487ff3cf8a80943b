#version 450
// Reduce-by-key (CUB's DeviceReduce::ReduceByKey): each run's key and the reduction of its
// values in the canonical order, and the number of runs; the twin of cuda/reduce_by_key.cu,
// modelled by src/cpu/runs.rs. Its text is in runs.glsl.
#define XW_RUNS_RBK 1
#include "common.glsl"
layout(constant_id = 3) const uint OP = 0u;  // reduce_op.glsl codes
#include "reduce_op.glsl"
#include "runs.glsl"
