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
// words past the end counting as zero, and writes the one word dst[fold0 + g]); 2 digest (each
// word adds its two hashes to two sums, which each block adds to dst[0] and dst[1]; see the
// Vulkan twin).

#define VECS 4

struct RooflineParams {
    unsigned int n;      // words in this launch
    unsigned int fold0;  // read: index in dst of this launch's first fold
    unsigned int word0;  // digest: index of this launch's first word in the whole input
    unsigned int pad1;
};

// MurmurHash3's finaliser: a bijection of 32 bits.
__device__ __forceinline__ unsigned int xw_fmix32(unsigned int h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
}

// The two hashes of word w at index i, added to (a, b).
__device__ __forceinline__ void xw_digest_add(unsigned int i, unsigned int w, unsigned int& a,
                                              unsigned int& b) {
    a += xw_fmix32(w ^ xw_fmix32(i));
    b += xw_fmix32(w ^ xw_fmix32(i ^ 0x5bd1e995u));
}

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
#elif MODE == 1
            v[0].x ^= x;
#endif
        }
    }
#if MODE == 2
    unsigned int ha = 0, hb = 0;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const unsigned int i = first + k * B;
        if (i < nv) {
            const unsigned int w = p.word0 + 4 * i;
            xw_digest_add(w, v[k].x, ha, hb);
            xw_digest_add(w + 1, v[k].y, ha, hb);
            xw_digest_add(w + 2, v[k].z, ha, hb);
            xw_digest_add(w + 3, v[k].w, ha, hb);
        }
    }
    if (g * (VECS * B) + VECS * B > nv && t < p.n % 4) {
        const unsigned int w = nv * 4 + t;
        xw_digest_add(p.word0 + w, src[w], ha, hb);
    }
    __shared__ unsigned int partial_a[1024 / XW_WARP];
    __shared__ unsigned int partial_b[1024 / XW_WARP];
#pragma unroll
    for (int o = XW_WARP / 2; o > 0; o /= 2) {
        ha += __shfl_xor_sync(XW_FULL_MASK, ha, o);
        hb += __shfl_xor_sync(XW_FULL_MASK, hb, o);
    }
    if (t % XW_WARP == 0) {
        partial_a[t / XW_WARP] = ha;
        partial_b[t / XW_WARP] = hb;
    }
    __syncthreads();
    if (t == 0) {
        unsigned int sa = 0, sb = 0;
        for (unsigned int s = 0; s < B / XW_WARP; ++s) {
            sa += partial_a[s];
            sb += partial_b[s];
        }
        atomicAdd(&dst[0], sa);
        atomicAdd(&dst[1], sb);
    }
#endif
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
#elif MODE != 0 && MODE != 2
#error "unknown MODE"
#endif
}
