// Warp scan (SCOPE 0) and block scan (SCOPE 1), inclusive or EXCLUSIVE; the twin of
// shaders/scan.comp. Variant constants: OP (0 sum, 2 min, 3 max), SCOPE, EXCLUSIVE.

#include "reduce_op.cuh"
#include "scan_common.cuh"

struct ScanParams {
    unsigned int n;
    unsigned int groups;
};

extern "C" __global__ void scan(const T* __restrict__ src, T* __restrict__ dst, ScanParams p) {
    __shared__ T warp_totals[XW_SCAN_BLOCK / XW_WARP];
    const unsigned group = (unsigned)xw_group();
    if (group >= p.groups) return;
    const unsigned i = group * blockDim.x + threadIdx.x;
    const T x = i < p.n ? src[i] : xw_identity(T(0));
    T y;
#if SCOPE == 0
    const T incl = warp_inclusive(x);
    y = EXCLUSIVE ? warp_shift_up_one(incl) : incl;
#else
    T prefix, total;
    block_prefix(x, warp_totals, prefix, total);
    y = EXCLUSIVE ? prefix : xw_op(prefix, x);
#endif
    if (i < p.n) dst[i] = y;
}
