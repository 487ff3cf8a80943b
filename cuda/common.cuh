// Shared by every xwarp CUDA kernel. The backend prepends this file to each kernel source and
// compiles with -DXW_T=<element type> plus one -DNAME=value per variant constant.
#pragma once

#define XW_FULL_MASK 0xffffffffu
#define XW_WARP 32

// Grids are two-dimensional so that launches may exceed 65535 groups on every backend alike;
// the group index is linearised the same way in GLSL (xw_group in shaders/common.glsl).
__device__ __forceinline__ unsigned long long xw_group() {
    return (unsigned long long)blockIdx.y * gridDim.x + blockIdx.x;
}
