// The memory roofline: a copy and a read-only pass that move data as fast as the device's
// memory allows, the yardsticks of `xwarp bench`; the twin of shaders/roofline.comp.
//
// Data are 32-bit words, whatever the element type. Block g owns the tile of VECS * blockDim.x
// 16-byte vectors (4096 words, 16 KiB, at 256 threads) that starts at vector
// g * VECS * blockDim.x; thread t moves vectors g * VECS * blockDim.x + k * blockDim.x + t,
// k = 0 .. VECS-1, all loads issued before any store. Only the last block checks bounds: it
// skips vectors past the end, and its threads 0 .. n%4-1 move the words after the last whole
// vector one each.
//
// Variant constant MODE: 0 copy (dst = src); 1 read (each block XORs all the words of its tile,
// words past the end counting as zero, and writes the one word dst[fold0 + g]).

#define VECS 4

struct RooflineParams {
    unsigned int n;      // words in this launch
    unsigned int fold0;  // read: index in dst of this launch's first fold
    unsigned int pad0;
    unsigned int pad1;
};

extern "C" __global__ void roofline(const unsigned int* __restrict__ src,
                                    unsigned int* __restrict__ dst, RooflineParams p) {
    const unsigned int B = blockDim.x;
    const unsigned int g = (unsigned int)xw_group();
    const unsigned int t = threadIdx.x;
    const unsigned int nv = p.n / 4;
    const unsigned int first = g * (VECS * B) + t;
    // Binding offsets are multiples of the 16 KiB tile: the vectors are aligned.
    const uint4* __restrict__ src4 = reinterpret_cast<const uint4*>(src);
    uint4 v[VECS];
    if (g * (VECS * B) + VECS * B <= nv) {
        // A whole tile: four unconditional vector loads, then four vector stores.
#pragma unroll
        for (int k = 0; k < VECS; ++k) v[k] = src4[first + k * B];
#if MODE == 0
        uint4* __restrict__ dst4 = reinterpret_cast<uint4*>(dst);
#pragma unroll
        for (int k = 0; k < VECS; ++k) dst4[first + k * B] = v[k];
#endif
    } else {
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
            const unsigned int i = first + k * B;
            v[k] = i < nv ? src4[i] : make_uint4(0, 0, 0, 0);
        }
#if MODE == 0
        uint4* __restrict__ dst4 = reinterpret_cast<uint4*>(dst);
#pragma unroll
        for (int k = 0; k < VECS; ++k) {
            const unsigned int i = first + k * B;
            if (i < nv) dst4[i] = v[k];
        }
#endif
        if (t < p.n % 4) {
            const unsigned int w = nv * 4 + t;
            const unsigned int x = src[w];
#if MODE == 0
            dst[w] = x;
#else
            v[0].x ^= x;
#endif
        }
    }
#if MODE == 1
    __shared__ unsigned int partial[1024 / XW_WARP];
    unsigned int x = 0;
#pragma unroll
    for (int k = 0; k < VECS; ++k) x ^= (v[k].x ^ v[k].y) ^ (v[k].z ^ v[k].w);
#pragma unroll
    for (int o = XW_WARP / 2; o > 0; o /= 2) x ^= __shfl_xor_sync(XW_FULL_MASK, x, o);
    if (t % XW_WARP == 0) partial[t / XW_WARP] = x;
    __syncthreads();
    if (t == 0) {
        unsigned int f = 0;
        for (unsigned int s = 0; s < B / XW_WARP; ++s) f ^= partial[s];
        dst[p.fold0 + g] = f;
    }
#elif MODE != 0
#error "unknown MODE"
#endif
}
