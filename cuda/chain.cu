// Warp-operation throughput: each thread runs a chain of `iters` dependent warp intrinsics in
// registers; the twin of shaders/chain.comp.
//
// Thread t (lane t % 32) starts from v = (t * 0x9e3779b9) ^ seed, keeps c = that first value,
// and repeats v = op(v) + c with op one of
//   0 __shfl_sync(full, v, 1), 1 __shfl_up_sync(full, v, 1), 2 __shfl_down_sync(full, v, 1),
//   3 __shfl_xor_sync(full, v, 1), 4 __ballot_sync(full, (v & 1) != 0)
// then writes v if t < n. Every thread of the grid runs the chain, so warps are always whole;
// only the stores are bounded.
//
// Variant constant: OP.

struct ChainParams {
    unsigned int n;      // threads that store, in this launch
    unsigned int iters;  // chain length
    unsigned int seed;
    unsigned int first;  // index of this launch's first thread
};

__device__ __forceinline__ unsigned int chain_link(unsigned int v, unsigned int c) {
#if OP == 0
    return __shfl_sync(XW_FULL_MASK, v, 1) + c;
#elif OP == 1
    return __shfl_up_sync(XW_FULL_MASK, v, 1) + c;
#elif OP == 2
    return __shfl_down_sync(XW_FULL_MASK, v, 1) + c;
#elif OP == 3
    return __shfl_xor_sync(XW_FULL_MASK, v, 1) + c;
#elif OP == 4
    return __ballot_sync(XW_FULL_MASK, (v & 1u) != 0u) + c;
#else
#error "unknown OP"
#endif
}

extern "C" __global__ void chain(unsigned int* __restrict__ out, ChainParams p) {
    const unsigned int t = (unsigned int)xw_group() * blockDim.x + threadIdx.x;
    unsigned int v = ((p.first + t) * 0x9e3779b9u) ^ p.seed;
    const unsigned int c = v;
    // Eight links per trip, then the rest one by one.
#pragma unroll 1
    for (unsigned int j = p.iters >> 3; j != 0; --j) {
        v = chain_link(v, c);
        v = chain_link(v, c);
        v = chain_link(v, c);
        v = chain_link(v, c);
        v = chain_link(v, c);
        v = chain_link(v, c);
        v = chain_link(v, c);
        v = chain_link(v, c);
    }
#pragma unroll 1
    for (unsigned int j = p.iters & 7u; j != 0; --j) v = chain_link(v, c);
    if (t < p.n) out[t] = v;
}
