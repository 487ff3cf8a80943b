// The device-reduce tile of reduce.cu (SCOPE 3) in the canonical order of src/reduce.rs; the
// twin of shaders/reduce_tile.glsl. Needs reduce_op.cuh and ITEMS.

// The xor butterfly over aligned blocks of `span` threads (32 or the block); levels of 32 and
// more go through shared memory.
__device__ __forceinline__ T butterfly(T v, unsigned local, unsigned span, T* stage) {
    for (unsigned s = 1; s < span; s <<= 1) {
        T o;
        if (s < XW_WARP) {
            o = __shfl_xor_sync(XW_FULL_MASK, v, s);
        } else {
            stage[local] = v;
            __syncthreads();
            o = stage[local ^ s];
            __syncthreads();
        }
        v = (local & s) == 0 ? xw_op(v, o) : xw_op(o, v);
    }
    return v;
}

// Thread 0's result of butterfly(v, local, blockDim.x, stage), the block's total, with one
// barrier: the warp levels by shuffles, then the first warp combines the warp totals by the same
// pairwise tree (lower block always on the left), so the bits are the same. Other threads'
// results are unspecified. Needs blockDim.x / 32 <= 32.
__device__ __forceinline__ T block_total(T v, unsigned local, T* stage) {
    v = butterfly(v, local, XW_WARP, stage);
    const unsigned warps = blockDim.x / XW_WARP;
    if (local % XW_WARP == 0) stage[local / XW_WARP] = v;
    __syncthreads();
    if (local < XW_WARP) {
        v = local < warps ? stage[local] : v;
        for (unsigned s = 1; s < warps; s <<= 1) {
            const T o = __shfl_xor_sync(XW_FULL_MASK, v, s);
            v = (local & s) == 0 ? xw_op(v, o) : xw_op(o, v);
        }
    }
    return v;
}

// One element of a tile: through the read-only path, or with CG through L2 only (for values
// other blocks of the same launch wrote).
template <bool CG>
__device__ __forceinline__ T tile_load(const T* a, unsigned i) {
    if (CG) return __ldcg(a + i);
    return __ldg(a + i);
}

// The fold, in order, of a[base + k * blockDim.x + threadIdx.x] for k = 0 .. ITEMS-1 (elements
// at or past n skipped): this thread's part of the tile starting at `base`. A whole tile issues
// every load before the first fold.
template <bool CG = false>
__device__ __forceinline__ T tile_fold(const T* a, unsigned base, unsigned n) {
    const unsigned block = blockDim.x;
    const unsigned local = threadIdx.x;
    T acc = xw_identity(T(0));
    if (base + block * ITEMS <= n) {
        T x[ITEMS];
#pragma unroll
        for (unsigned k = 0; k < ITEMS; ++k) x[k] = tile_load<CG>(a, base + k * block + local);
#pragma unroll
        for (unsigned k = 0; k < ITEMS; ++k) acc = xw_op(acc, x[k]);
    } else {
#pragma unroll
        for (unsigned k = 0; k < ITEMS; ++k) {
            const unsigned i = base + k * block + local;
            if (i < n) acc = xw_op(acc, tile_load<CG>(a, i));
        }
    }
    return acc;
}
