// Shared by the reduction-ladder kernels cuda/reduce_*.cu; the twin of
// shaders/ladder_common.glsl.

typedef XW_T T;

struct LadderParams {
    unsigned int n;         // elements in this launch
    unsigned int groups;    // blocks that have work; any beyond leave at once
    unsigned int dst_index; // index of the first partial in dst
};

__device__ __forceinline__ int xw_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ unsigned xw_add(unsigned a, unsigned b) { return a + b; }
__device__ __forceinline__ long long xw_add(long long a, long long b) {
    return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ unsigned long long xw_add(unsigned long long a, unsigned long long b) {
    return a + b;
}

// The sum of the `items` data blocks this thread starts with (elements idx, idx + block, ...
// of the block's tile of items * blockDim.x elements); every load is guarded, so a ragged tail
// contributes zeros.
__device__ __forceinline__ T ladder_load(const T* __restrict__ src, unsigned n, unsigned group,
                                         unsigned tid, unsigned items) {
    const unsigned block = blockDim.x;
    const unsigned idx = group * block * items + tid;
    T sum = T(0);
    for (unsigned k = 0; k < items; ++k) {
        const unsigned i = idx + k * block;
        if (i < n) sum = xw_add(sum, src[i]);
    }
    return sum;
}

// The last warp unrolled (strides 32..1, threads tid < 32 of warp 0). The book writes
// `vmem[tid] += vmem[tid + 16]; ...` through a volatile pointer and relies on the 32 lanes
// running in lockstep. That is unsafe since Volta: lanes are scheduled independently, so a
// lane may read its neighbour's element before or after the neighbour has updated it.
// __syncwarp() between each step's read and write (and after the write) restores the order;
// volatile keeps every value in memory as in the book.
__device__ __forceinline__ void ladder_last_warp(volatile T* vmem, unsigned tid) {
    T v = vmem[tid];
#pragma unroll
    for (unsigned stride = 32; stride > 0; stride >>= 1) {
        v = xw_add(v, vmem[tid + stride]);
        __syncwarp();
        vmem[tid] = v;
        __syncwarp();
    }
}
