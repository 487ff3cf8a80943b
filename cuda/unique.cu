// Unique (CUB's DeviceSelect::Unique) with CUDA's own intrinsics: the key of each run's head,
// in input order, and the number of runs; the twin of shaders/unique.comp, modelled by
// src/cpu/runs.rs. Its text is in runs.cuh.

#define XW_RUNS_UNIQUE 1
#include "runs.cuh"

extern "C" __global__ __launch_bounds__(BLOCK, XW_RUNS_MIN_BLOCKS) void unique(
    const unsigned int* __restrict__ keys, const unsigned int* __restrict__ values,
    unsigned int* __restrict__ keys_out, unsigned int* __restrict__ values_out,
    unsigned long long* __restrict__ runs, unsigned int* work, RunsParams p) {
    xw_runs(RunsArgs{keys, values, keys_out, values_out, runs, work, p});
}
