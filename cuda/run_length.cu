// Run-length encoding (CUB's DeviceRunLengthEncode::Encode) with CUDA's own intrinsics: each
// run's key and length, and the number of runs; the twin of shaders/run_length.comp, modelled
// by src/cpu/runs.rs. Its text is in runs.cuh.

#define XW_RUNS_RLE 1
#include "runs.cuh"

extern "C" __global__ __launch_bounds__(BLOCK, XW_RUNS_MIN_BLOCKS) void run_length(
    const unsigned int* __restrict__ keys, const unsigned int* __restrict__ values,
    unsigned int* __restrict__ keys_out, unsigned int* __restrict__ lengths,
    unsigned long long* __restrict__ runs, unsigned int* work, RunsParams p) {
    xw_runs(RunsArgs{keys, values, keys_out, lengths, runs, work, p});
}
