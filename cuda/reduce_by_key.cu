// Reduce-by-key (CUB's DeviceReduce::ReduceByKey) with CUDA's own intrinsics: each run's key
// and the reduction of its values in the canonical order, and the number of runs; the twin of
// shaders/reduce_by_key.comp, modelled by src/cpu/runs.rs. Its text is in runs.cuh.

#define XW_RUNS_RBK 1
#include "reduce_op.cuh"
#include "runs.cuh"

extern "C" __global__ __launch_bounds__(BLOCK, XW_RUNS_MIN_BLOCKS) void reduce_by_key(
    const unsigned int* __restrict__ keys, const XW_T* __restrict__ values,
    unsigned int* __restrict__ keys_out, XW_T* __restrict__ values_out,
    unsigned long long* __restrict__ runs, unsigned int* work, RunsParams p) {
    xw_runs(RunsArgs{keys, values, keys_out, values_out, runs, work, p});
}
