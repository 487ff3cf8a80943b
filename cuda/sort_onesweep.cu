// One digit pass of the radix sort (Onesweep); the twin of shaders/sort_onesweep.comp (see
// there for the tiles, the stable ranking, the look-back and its fallback, the alternating
// tile states and the scatter), modelled by src/cpu/sort.rs. A warp is the subgroup: warp w
// owns the w-th run of 32 * ITEMS keys of the tile.
// Variant constants: ITEMS, VALUE_WORDS (0 keys only; 1 or 2 words per value), HIST_SG (warps
// per block), STAGE_WORDS (shared words for counts and staging), MATCH_ANY (1: a digit's lanes
// from __match_any_sync; 0: from one __ballot_sync per digit bit, as the Vulkan twin),
// BLOCK (threads per block).

#include "sort_common.cuh"

struct SortOnesweepParams {
    unsigned int n;           // keys
    unsigned int tiles;       // tiles of the pass
    unsigned int pass;        // the pass: its tile counter and histogram row
    unsigned int shift;       // lowest bit of the pass's digit in the mapped key
    unsigned int digit_bits;  // width of the digit, 1 .. 8
    unsigned int key_kind;    // KIND_*
    unsigned int descending;  // nonzero: descending order
    unsigned int state_cur;   // first word of this pass's tile states
    unsigned int state_next;  // first word of the next pass's tile states, cleared here
    unsigned int clear_next;  // nonzero: clear this tile's row of the next pass's states
    unsigned int spin;        // polls of unpublished states per thread before counting tiles here
    unsigned int flags;       // FLAG_INDEX_VALUES | FLAG_WRITE_KEYS
};

#define FLAG_INDEX_VALUES 1u  // the values are the keys' input indices (argsort's first pass)
#define FLAG_WRITE_KEYS 2u    // store the sorted keys (argsort's last pass does not)

#define TILE (BLOCK * ITEMS)
// Digits per thread where the block is narrower than the radix.
#define DPT ((RADIX + BLOCK - 1u) / BLOCK)

struct SortShared {
    unsigned stage[STAGE_WORDS];  // warp digit counts while ranking, then staged keys/values
    unsigned count[RADIX];        // the tile's count of each digit
    unsigned scan[2][RADIX];      // [0] where each digit starts in the tile; [1] global offsets
    unsigned acc[RADIX];          // per digit: the tile's exclusive global prefix, then its base
    unsigned next[RADIX];         // per digit: the next predecessor to read, plus one (0: done)
    unsigned fb[RADIX];           // digit counts of a tile counted here (the fallback)
    unsigned sgsum[HIST_SG];
    unsigned tile;
    unsigned stuck;
};

// Publishes a tile state word with a relaxed store past the L1 cache (see the Vulkan twin for
// why no atomicMax is needed).
__device__ __forceinline__ void publish(unsigned* work, unsigned at, unsigned w) {
    *(volatile unsigned*)&work[at] = w;
}

// Inclusive sum over the warp with shift-up shuffles.
__device__ __forceinline__ unsigned warp_inclusive_add(unsigned v) {
    const unsigned lane = threadIdx.x % XW_WARP;
#pragma unroll
    for (unsigned d = 1; d < XW_WARP; d <<= 1) {
        const unsigned o = __shfl_up_sync(XW_FULL_MASK, v, d);
        if (lane >= d) v += o;
    }
    return v;
}

// Exclusive prefix sums over the digits of s.scan[which], in place; every thread calls it.
__device__ void scan_digits(SortShared& s, unsigned which) {
    const unsigned first = threadIdx.x * DPT;
    unsigned sum = 0;
    for (unsigned q = 0; q < DPT; ++q) {
        if (first + q < RADIX) sum += s.scan[which][first + q];
    }
    const unsigned incl = warp_inclusive_add(sum);
    const unsigned sg = threadIdx.x / XW_WARP;
    if (threadIdx.x % XW_WARP == XW_WARP - 1) s.sgsum[sg] = incl;
    __syncthreads();
    unsigned run = incl - sum;
    for (unsigned w = 0; w < sg; ++w) run += s.sgsum[w];
    for (unsigned q = 0; q < DPT; ++q) {
        if (first + q < RADIX) {
            const unsigned c = s.scan[which][first + q];
            s.scan[which][first + q] = run;
            run += c;
        }
    }
    __syncthreads();
}

// The rank of digit `d` among the warp's keys of this and earlier steps, counting in the
// warp's digit counts at hist. Every lane of the warp calls it.
__device__ __forceinline__ unsigned rank_in_warp(unsigned d, unsigned* hist, unsigned digit_bits) {
    unsigned match;
    if (MATCH_ANY) {
        match = __match_any_sync(XW_FULL_MASK, d);
    } else {
        match = XW_FULL_MASK;
        for (unsigned bit = 0; bit < digit_bits; ++bit) {
            const bool set = ((d >> bit) & 1u) != 0;
            const unsigned b = __ballot_sync(XW_FULL_MASK, set);
            match &= set ? b : ~b;
        }
    }
    const unsigned lane = threadIdx.x % XW_WARP;
    const unsigned below = __popc(match & ((1u << lane) - 1u));
    const unsigned count = __popc(match);
    unsigned old = 0;
    if (below == 0) {
        old = hist[d];
        hist[d] = old + count;
    }
    old = __shfl_sync(XW_FULL_MASK, old, __ffs(match) - 1);
    // The next step's lowest lane of a digit may be another lane: it must see this count.
    __syncwarp();
    return old + below;
}

// Counts the digits of tile j (not the last) from the pass's input and publishes them: as
// aggregates, or for tile 0 as inclusive prefixes. Every thread calls it.
__device__ void count_tile(SortShared& s, const KEY* __restrict__ keys_in, unsigned* work,
                           const SortOnesweepParams& p, unsigned j) {
    for (unsigned b = threadIdx.x; b < RADIX; b += BLOCK) {
        s.fb[b] = 0;
        if (j == 0) s.scan[1][b] = work[XW_SORT_HIST + p.pass * RADIX + b];
    }
    __syncthreads();
    const unsigned mask = (1u << p.digit_bits) - 1u;
    const bool descending = p.descending != 0;
    const unsigned base = j * TILE;
    for (unsigned x = threadIdx.x; x < TILE; x += BLOCK) {
        if (base + x < p.n) {
            const KEY m = xw_sort_map(keys_in[base + x], p.key_kind, descending);
            atomicAdd(&s.fb[xw_digit(m, p.shift, mask)], 1u);
        }
    }
    if (j == 0) scan_digits(s, 1);
    __syncthreads();
    for (unsigned b = threadIdx.x; b < RADIX; b += BLOCK) {
        const unsigned w = j == 0 ? FLAG_INCLUSIVE | (s.scan[1][b] + s.fb[b]) : FLAG_AGGREGATE | s.fb[b];
        publish(work, p.state_cur + j * RADIX + b, w);
    }
    __syncthreads();
}

// Tile k > 0: s.acc[b] becomes the global place of the tile's first key of digit b; publishes
// the tile's inclusive prefixes unless it is the last tile. Every thread calls it.
__device__ void look_back(SortShared& s, const KEY* __restrict__ keys_in, unsigned* work,
                          const SortOnesweepParams& p, unsigned k, bool last) {
    for (unsigned b = threadIdx.x; b < RADIX; b += BLOCK) {
        s.acc[b] = 0;
        s.next[b] = k;
    }
    if (threadIdx.x == 0) s.stuck = 0;
    __syncthreads();
    // The thread's polls of unpublished states over the whole look-back (see the Vulkan twin).
    unsigned budget = p.spin;
    for (;;) {
        for (unsigned b = threadIdx.x; b < RADIX; b += BLOCK) {
            unsigned next = s.next[b];
            unsigned acc = s.acc[b];
            while (next != 0) {
                // Published by other blocks: read past the L1 cache.
                const unsigned w = *(const volatile unsigned*)&work[p.state_cur + (next - 1) * RADIX + b];
                if (w == 0) {
                    if (budget == 0) break;
                    --budget;
                } else {
                    acc += w & VALUE_MASK;
                    next = (w & FLAG_INCLUSIVE) != 0 ? 0 : next - 1;
                }
            }
            s.acc[b] = acc;
            s.next[b] = next;
            if (next != 0) atomicMax(&s.stuck, next);
        }
        __syncthreads();
        const unsigned stuck = s.stuck;
        __syncthreads();
        if (stuck == 0) break;
        if (threadIdx.x == 0) s.stuck = 0;
        count_tile(s, keys_in, work, p, stuck - 1);
    }
    if (!last) {
        for (unsigned b = threadIdx.x; b < RADIX; b += BLOCK) {
            publish(work, p.state_cur + k * RADIX + b, FLAG_INCLUSIVE | (s.acc[b] + s.count[b]));
        }
    }
}

// Staging in shared memory: KEY_WORDS words per place.
__device__ __forceinline__ void stage_key(SortShared& s, unsigned at, KEY m) {
#pragma unroll
    for (unsigned w = 0; w < KEY_WORDS; ++w) s.stage[KEY_WORDS * at + w] = (unsigned)(m >> (32 * w));
}

__device__ __forceinline__ KEY staged_key(const SortShared& s, unsigned at) {
    KEY m = 0;
#pragma unroll
    for (unsigned w = 0; w < KEY_WORDS; ++w) m |= (KEY)s.stage[KEY_WORDS * at + w] << (32 * w);
    return m;
}

extern "C" __global__ __launch_bounds__(BLOCK) void sort_onesweep(
    const KEY* __restrict__ keys_in, KEY* __restrict__ keys_out,
    const unsigned* __restrict__ vals_in, unsigned* __restrict__ vals_out, unsigned* work,
    SortOnesweepParams p) {
    __shared__ SortShared s;
    const unsigned local = threadIdx.x;
    if ((unsigned)xw_group() >= p.tiles) return;
    if (local == 0) s.tile = atomicAdd(&work[XW_SORT_COUNTERS + p.pass], 1u);
    for (unsigned i = local; i < HIST_SG * RADIX; i += BLOCK) s.stage[i] = 0;
    __syncthreads();
    const unsigned k = s.tile;
    const bool last = k + 1 == p.tiles;
    const unsigned tile_base = k * TILE;
    const unsigned valid = min(TILE, p.n - tile_base);
    const unsigned sg = local / XW_WARP;
    const unsigned lane = local % XW_WARP;
    const unsigned run = sg * XW_WARP * ITEMS;
    unsigned* hist = &s.stage[sg * RADIX];
    const unsigned mask = (1u << p.digit_bits) - 1u;
    const bool descending = p.descending != 0;

    if (p.clear_next) {
        for (unsigned b = local; b < RADIX; b += BLOCK) work[p.state_next + k * RADIX + b] = 0;
    }

    KEY keys[ITEMS];
    unsigned ranks[ITEMS];
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned pos = run + i * XW_WARP + lane;
        keys[i] = pos < valid ? xw_sort_map(keys_in[tile_base + pos], p.key_kind, descending) : KEY_MAX;
    }
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        ranks[i] = rank_in_warp(xw_digit(keys[i], p.shift, mask), hist, p.digit_bits);
    }
    __syncthreads();

    // Per digit: the warps' counts become exclusive prefixes; the tile's counts are published
    // at once.
    for (unsigned b = local; b < RADIX; b += BLOCK) {
        unsigned sum = 0;
        for (unsigned w = 0; w < HIST_SG; ++w) {
            const unsigned c = s.stage[w * RADIX + b];
            s.stage[w * RADIX + b] = sum;
            sum += c;
        }
        s.count[b] = sum;
        s.scan[0][b] = sum;
        if (k == 0) {
            s.scan[1][b] = work[XW_SORT_HIST + p.pass * RADIX + b];
        } else if (!last) {
            publish(work, p.state_cur + k * RADIX + b, FLAG_AGGREGATE | sum);
        }
    }
    __syncthreads();
    if (k == 0) {
        scan_digits(s, 1);
        for (unsigned b = local; b < RADIX; b += BLOCK) {
            const unsigned offset = s.scan[1][b];
            if (!last) publish(work, p.state_cur + b, FLAG_INCLUSIVE | (offset + s.count[b]));
            s.acc[b] = offset;
        }
    }
    scan_digits(s, 0);

#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned d = xw_digit(keys[i], p.shift, mask);
        ranks[i] += s.scan[0][d] + hist[d];
    }
    __syncthreads();
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) stage_key(s, ranks[i], keys[i]);
    if (k > 0) look_back(s, keys_in, work, p, k, last);
    for (unsigned b = local; b < RADIX; b += BLOCK) s.acc[b] -= s.scan[0][b];
    __syncthreads();

    // Place t of the sorted tile, of digit d, goes to s.acc[d] + t.
    unsigned dest[ITEMS];
    const bool write_keys = (p.flags & FLAG_WRITE_KEYS) != 0;
#pragma unroll
    for (unsigned r = 0; r < ITEMS; ++r) {
        const unsigned at = local + r * BLOCK;
        dest[r] = 0;
        if (at < valid) {
            const KEY m = staged_key(s, at);
            dest[r] = s.acc[xw_digit(m, p.shift, mask)] + at;
            if (write_keys) keys_out[dest[r]] = xw_sort_unmap(m, p.key_kind, descending);
        }
    }
    if (VALUE_WORDS == 0) return;
    __syncthreads();
    const bool index_values = (p.flags & FLAG_INDEX_VALUES) != 0;
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned pos = run + i * XW_WARP + lane;
        if (pos < valid) {
            const unsigned src = tile_base + pos;
#pragma unroll
            for (unsigned w = 0; w < VALUE_WORDS; ++w) {
                const unsigned v = index_values ? (w == 0 ? src : 0u) : vals_in[src * VALUE_WORDS + w];
                s.stage[ranks[i] * VALUE_WORDS + w] = v;
            }
        }
    }
    __syncthreads();
#pragma unroll
    for (unsigned r = 0; r < ITEMS; ++r) {
        const unsigned at = local + r * BLOCK;
        if (at < valid) {
#pragma unroll
            for (unsigned w = 0; w < VALUE_WORDS; ++w) {
                vals_out[dest[r] * VALUE_WORDS + w] = s.stage[at * VALUE_WORDS + w];
            }
        }
    }
}
