// The device-reduce tile of reduce.cu (SCOPE 3) in the canonical order of src/reduce.rs; the
// twin of shaders/reduce_tile.glsl. Needs reduce_op.cuh and ITEMS.

template <typename A, typename B> struct xw_same_type { static constexpr bool value = false; };
template <typename A> struct xw_same_type<A, A> { static constexpr bool value = true; };

// f32 min and max fold and reduce as unsigned integer keys, as the GLSL twin does
// (shaders/reduce_tile.glsl, float_ops.glsl): the key is the IEEE order with -0.0 below +0.0,
// rotated so that every NaN orders above every other value, and for max complemented, so that
// the least key is the result for both. Keys are a bijection of the bits: the fold of a run by
// xw_op from a NaN accumulator is the value of its least key unless every element is NaN, and
// then the run's last element.
constexpr bool XW_KEY_FOLD = (OP == 2 || OP == 3) && xw_same_type<T, float>::value;
constexpr unsigned XW_KEY_ROTATE = 0x007fffffu;  // the order key of -inf
constexpr unsigned XW_LEAST_KEY_NAN = 0xff000002u;  // least keys from here on are NaN
__device__ __forceinline__ unsigned xw_least_key(float v) {
    const unsigned u = __float_as_uint(v);
    const unsigned order = (u >> 31) != 0 ? ~u : u | 0x80000000u;
    return OP == 2 ? order - XW_KEY_ROTATE : ~(order + XW_KEY_ROTATE);
}
__device__ __forceinline__ float xw_from_least_key(unsigned k) {
    const unsigned order = OP == 2 ? k + XW_KEY_ROTATE : ~k - XW_KEY_ROTATE;
    return __uint_as_float((order >> 31) != 0 ? order & 0x7fffffffu : ~order);
}
// Only float calls reach these (XW_KEY_FOLD); the overloads keep other types compiling.
template <typename U> __device__ __forceinline__ unsigned xw_least_key(U) { return 0; }
template <typename U> __device__ __forceinline__ U xw_from_least_key_as(unsigned) { return U(0); }
template <> __device__ __forceinline__ float xw_from_least_key_as<float>(unsigned k) {
    return xw_from_least_key(k);
}
template <typename U> __device__ __forceinline__ bool xw_key_isnan(U) { return false; }
template <> __device__ __forceinline__ bool xw_key_isnan<float>(float v) { return xw_isnan(v); }

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
    if constexpr (XW_KEY_FOLD) {
        // The tree's total by integer minima of keys (the GLSL twin's xw_key_total): the value
        // of the least key among the threads' non-NaN values, or where every value is NaN the
        // last thread's (a NaN `a` yields `b`, lower blocks on the left). A NaN offers
        // 0xffffffff - local, above every non-NaN key and least for the last NaN; its bits come
        // from the thread that held it, through `stage`.
        __shared__ unsigned warp_keys[32];
        unsigned key = xw_key_isnan(v) ? 0xffffffffu - local : xw_least_key(v);
        for (unsigned s = 1; s < XW_WARP; s <<= 1) key = min(key, __shfl_xor_sync(XW_FULL_MASK, key, s));
        stage[local] = v;
        if (local % XW_WARP == 0) warp_keys[local / XW_WARP] = key;
        __syncthreads();
        if (local < XW_WARP) {
            if (local < blockDim.x / XW_WARP) key = warp_keys[local];
            for (unsigned s = 1; s < XW_WARP; s <<= 1) key = min(key, __shfl_xor_sync(XW_FULL_MASK, key, s));
            v = key > 0xffffffffu - blockDim.x ? stage[0xffffffffu - key] : xw_from_least_key_as<T>(key);
        }
        return v;
    }
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

// acc folded with x[0] .. x[ITEMS - 1] in order; f32 min and max as keys, one integer min an
// element.
__device__ __forceinline__ T fold_items(T acc, const T (&x)[ITEMS]) {
    if constexpr (XW_KEY_FOLD) {
        unsigned m = 0xffffffffu;
#pragma unroll
        for (unsigned k = 0; k < ITEMS; ++k) m = min(m, xw_least_key(x[k]));
        return xw_op(acc, m >= XW_LEAST_KEY_NAN ? x[ITEMS - 1] : xw_from_least_key_as<T>(m));
    }
#pragma unroll
    for (unsigned k = 0; k < ITEMS; ++k) acc = xw_op(acc, x[k]);
    return acc;
}

// A partial tile's part of f32 min and max in one batch of keys, as the GLSL twin does: the
// missing elements are loads of the thread's last element again, which min and max do not
// change (a NaN run's result, its last element, included). The other operators skip them one
// by one: nvcc predicates those loads, and a batch (the GLSL twin's for every integer
// operator, with the identity in place of the repeats) made integer sums 7-13% slower at
// 2^10-2^20 on an H100 (NOTES.md, version 29).
constexpr bool XW_IDEMPOTENT = OP >= 2 && OP <= 5;
constexpr bool XW_BATCH_PARTIAL = XW_KEY_FOLD;

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
        acc = fold_items(acc, x);
    } else if (XW_BATCH_PARTIAL) {
        // A thread past the end holds no element: acc stays the identity.
        if (base + local < n) {
            const unsigned last = min((unsigned)ITEMS - 1u, (n - base - local - 1) / block);
            T x[ITEMS];
#pragma unroll
            for (unsigned k = 0; k < ITEMS; ++k) {
                x[k] = tile_load<CG>(a, base + min(k, last) * block + local);
                if (!XW_IDEMPOTENT && k > last) x[k] = xw_identity(T(0));
            }
            acc = fold_items(acc, x);
        }
    } else {
#pragma unroll
        for (unsigned k = 0; k < ITEMS; ++k) {
            const unsigned i = base + k * block + local;
            if (i < n) acc = xw_op(acc, tile_load<CG>(a, i));
        }
    }
    return acc;
}
