// Scan building blocks shared by scan.cu and scan_device.cu; the twin of
// shaders/scan_common.glsl (see there for the canonical order). Needs reduce_op.cuh and
// XW_SCAN_BLOCK, the block size.

#define XW_SCAN_BLOCK 256

// Inclusive Kogge-Stone scan of a warp with shift-up shuffles.
__device__ __forceinline__ T warp_inclusive(T v) {
    const unsigned lane = threadIdx.x % XW_WARP;
#pragma unroll
    for (unsigned d = 1; d < XW_WARP; d <<= 1) {
        const T o = __shfl_up_sync(XW_FULL_MASK, v, d);
        if (lane >= d) v = xw_op(o, v);
    }
    return v;
}

// The inclusive value of the lane below; the identity for lane 0.
__device__ __forceinline__ T warp_shift_up_one(T incl) {
    const T o = __shfl_up_sync(XW_FULL_MASK, incl, 1);
    return threadIdx.x % XW_WARP == 0 ? xw_identity(T(0)) : o;
}

// The exclusive prefix of each thread's total within the block, and the block's total.
__device__ __forceinline__ void block_prefix(T thread_total, T* warp_totals, T& prefix, T& total) {
    const T incl = warp_inclusive(thread_total);
    const T excl = warp_shift_up_one(incl);
    const unsigned warp = threadIdx.x / XW_WARP;
    if (threadIdx.x % XW_WARP == XW_WARP - 1) warp_totals[warp] = incl;
    __syncthreads();
    T wp = xw_identity(T(0));
    T all = xw_identity(T(0));
    const unsigned warps = blockDim.x / XW_WARP;
    for (unsigned w = 0; w < warps; ++w) {
        if (w == warp) wp = all;
        all = xw_op(all, warp_totals[w]);
    }
    __syncthreads();
    prefix = xw_op(wp, excl);
    total = all;
}
