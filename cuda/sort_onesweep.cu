// One digit pass of the radix sort (Onesweep); the twin of shaders/sort_onesweep.comp (see
// there for the tiles, the stable ranking, the look-back and its fallback, the alternating
// tile states and the scatter), modelled by src/cpu/sort.rs. A warp is the subgroup: warp w
// owns the w-th run of 32 * ITEMS keys of the tile.
// Variant constants: ITEMS, VALUE_WORDS (0 keys only; 1 or 2 words per value), HIST_SG (warps
// per block), STAGE_WORDS (shared words for counts and staging), MATCH_ANY (1: a digit's lanes
// from __match_any_sync; 0: from one __ballot_sync per digit bit, as the Vulkan twin),
// BLOCK (threads per block), MIN_BLOCKS (blocks per multiprocessor for __launch_bounds__; 0: none),
// WHOLE (1: the whole sort of a single tile, every pass, in one launch; 0: one digit pass),
// COUNTS_IN_STAGE (1: the digit pass's warp digit counts share their words with the staging
// area, whose keys then wait until every key is ranked; 0: the two side by side),
// DYNAMIC_SHARED (0: SortShared is a static array, within 48 KiB; else the bytes of dynamic
// shared memory the launch gives each block, which then holds SortShared: the larger tiles of
// 32-bit pairs, src/sort.rs PAIRS_ITEMS).

#include "sort_common.cuh"

// The key order of the variant (constant KEY_ORDER = 2 * kind + descending).
#define XW_KEY_KIND ((unsigned)(KEY_ORDER) / 2u)
#define XW_DESCENDING (((unsigned)(KEY_ORDER) & 1u) != 0u)

struct SortOnesweepParams {
    unsigned int n;           // keys
    unsigned int tiles;       // tiles of the pass
    unsigned int pass;        // the pass: its tile counter and histogram row
    unsigned int shift;       // lowest bit of the pass's digit in the mapped key
    unsigned int digit_bits;  // width of the digit, 1 .. 8
    unsigned int state_cur;   // first word of this pass's tile states
    unsigned int state_next;  // first word of the next pass's tile states, cleared here
    unsigned int clear_next;  // nonzero: clear this tile's row of the next pass's states
    unsigned int spin;        // polls of unpublished states per thread before counting tiles here
    unsigned int flags;       // FLAG_INDEX_VALUES | FLAG_WRITE_KEYS
    unsigned int passes;      // WHOLE: the passes of the bit range, from shift on
    unsigned int end_bit;     // WHOLE: the bit range's end
};

#define FLAG_INDEX_VALUES 1u  // the values are the keys' input indices (argsort's first pass)
#define FLAG_WRITE_KEYS 2u    // store the sorted keys (argsort's last pass does not)

#define TILE (BLOCK * ITEMS)
// Places of the sorted tile the staging area holds at once, and the rounds that stage the
// tile (1, or 2 for keys where the host halves STAGE_WORDS; see the Vulkan twin's scatter),
// each taking PLACES / BLOCK of a thread's scatter steps.
#define PLACES (STAGE_WORDS / KEY_WORDS)
#define ROUNDS ((TILE + PLACES - 1u) / PLACES)
#define ROUND_STEPS (PLACES / BLOCK)
// Digits per thread where the block is narrower than the radix.
#define DPT ((RADIX + BLOCK - 1u) / BLOCK)
// Pairs keep each key's place in the tile (below 2^16: TILE <= 1024 * 32) two to a register,
// and each place's digit four to a register, until the values follow: 15 registers for 20
// keys where whole words took 40.
#define RANK_WORDS ((ITEMS + 1u) / 2u)
#define DIGIT_WORDS ((ITEMS + 3u) / 4u)
// How many of this thread's places first, first + stride, ... lie below `valid`: a bound the
// partial tile's loops compare with their constant step (no predicate kept per step).
__device__ __forceinline__ unsigned steps_below(unsigned valid, unsigned first, unsigned stride) {
    return valid > first ? (valid - first + stride - 1u) / stride : 0u;
}
__device__ __forceinline__ unsigned packed_rank(const unsigned (&ranks)[RANK_WORDS], unsigned i) {
    return (ranks[i / 2] >> (16 * (i % 2))) & 0xffffu;
}

struct __align__(16) SortShared {
#if COUNTS_IN_STAGE && !WHOLE
    // The counts live until the last key is ranked, the staged keys from then on (the digit
    // pass; the sort in one launch, which ranks and stages each pass's keys together, keeps
    // the two apart).
    union {
        unsigned offsets[HIST_SG * RADIX];
        unsigned stage[STAGE_WORDS];
    };
#else
    unsigned offsets[HIST_SG * RADIX];  // per warp and digit: its count, then its running place
    unsigned stage[STAGE_WORDS];  // the sorted tile: its keys, later its values
#endif
    unsigned count[RADIX];        // the tile's count of each digit
    unsigned scan[2][RADIX];      // [0] where each digit starts in the tile; [1] global offsets
    unsigned acc[RADIX];          // per digit: the tile's exclusive global prefix, then its base
    unsigned next[RADIX];         // per digit: the next predecessor to read, plus one (0: done)
    unsigned fb[RADIX];           // digit counts of a tile counted here (the fallback)
    unsigned sgsum[HIST_SG];
    unsigned tile;
    unsigned stuck;
    unsigned shift;  // the pass's shift read back for the ranking (see the Vulkan twin)
};

#if DYNAMIC_SHARED > 0
static_assert(sizeof(SortShared) <= DYNAMIC_SHARED, "DYNAMIC_SHARED: the launch's shared memory holds SortShared");
#endif

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

// The lanes of the warp whose digit has bit BIT equal to this lane's: the ballot of the bit,
// complemented where this lane's bit is clear. Written in PTX so that the bit tests of all
// eight calls become predicates taken from the digit at once (`R2P`), leaving a vote, a
// predicated complement and an AND per bit (C++ spent two more instructions per bit on
// shifts and selects, Nsight Compute on an H100).
template <unsigned BIT>
__device__ __forceinline__ unsigned same_bit_lanes(unsigned d) {
    unsigned lanes;
    asm("{\n\t.reg .pred p;\n\t.reg .b32 t;\n\t"
        "and.b32 t, %1, %2;\n\t"
        "setp.ne.u32 p, t, 0;\n\t"
        "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t"
        "@!p not.b32 %0, %0;\n\t}"
        : "=r"(lanes)
        : "r"(d), "n"(1u << BIT));
    return lanes;
}

// s.scan[0] (each digit's count) becomes where each digit starts in the tile, and s.offsets
// (each warp's count of each digit) where each warp's keys of the digit start: the digit's
// start, then the warps before. Every thread calls it.
__device__ void warp_places(SortShared& s) {
    scan_digits(s, 0);
    for (unsigned b = threadIdx.x; b < RADIX; b += BLOCK) {
        unsigned at = s.scan[0][b];
        for (unsigned w = 0; w < HIST_SG; ++w) {
            const unsigned c = s.offsets[w * RADIX + b];
            s.offsets[w * RADIX + b] = at;
            at += c;
        }
    }
    __syncthreads();
}

// The place in the tile of the key with digit `d` of this lane, in this step: where the warp's
// next key of digit `d` goes (`offsets[d]`, the warp's running offset of the digit) plus the
// lanes below with the same digit. The highest lane of the digit moves the offset on by their
// number, which is its own count of matching lanes at or below it, so one population count
// serves both; an atomic add, so the next step's highest lane (maybe another lane) sees it
// without a warp barrier. Every lane of the warp calls it.
__device__ __forceinline__ unsigned rank_in_warp(unsigned d, unsigned* offsets, unsigned lane,
                                                 unsigned lane_le) {
    unsigned match;
    if (MATCH_ANY) {
        match = __match_any_sync(XW_FULL_MASK, d);
    } else {
        // A fixed eight ballots: a narrower last digit has zeros above, where all lanes agree.
        match = same_bit_lanes<0>(d) & same_bit_lanes<1>(d) & same_bit_lanes<2>(d) &
                same_bit_lanes<3>(d) & same_bit_lanes<4>(d) & same_bit_lanes<5>(d) &
                same_bit_lanes<6>(d) & same_bit_lanes<7>(d);
    }
    const unsigned upto = __popc(match & lane_le);  // matching lanes at or below this one
    const unsigned leader = 31u - __clz(match);
    unsigned old = 0;
    if (lane == leader) old = atomicAdd(&offsets[d], upto);
    return __shfl_sync(XW_FULL_MASK, old, leader) + upto - 1u;
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
    const unsigned base = j * TILE;
    for (unsigned x = threadIdx.x; x < TILE; x += BLOCK) {
        if (base + x < p.n) {
            const KEY m = xw_sort_map(keys_in[base + x], XW_KEY_KIND, XW_DESCENDING);
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
            // Once a state read was an aggregate (the walk goes on), each round trip reads the
            // next two states: a walk averaged about 16 states a digit (NOTES.md, version 58).
            // Not with 8-byte values, whose passes took 1.02-1.04x the time so from 2^24 keys
            // (H200, version 59), for reasons not measured.
            constexpr bool deeper = VALUE_WORDS < 2;
            bool deep = false;
            while (next != 0) {
                // Published by other blocks: read past the L1 cache.
                const unsigned* const at = &work[p.state_cur + (next - 1) * RADIX + b];
                const unsigned w = *(const volatile unsigned*)at;
                const unsigned w2 = deep && next >= 2 ? *(const volatile unsigned*)(at - RADIX) : 0u;
                if (w == 0) {
                    if (budget == 0) break;
                    --budget;
                    continue;
                }
                acc += w & VALUE_MASK;
                if ((w & FLAG_INCLUSIVE) != 0) {
                    next = 0;
                    break;
                }
                --next;
                deep = deeper;
                // A state is never unpublished again: one read before its turn is as good.
                if (w2 != 0) {
                    acc += w2 & VALUE_MASK;
                    next = (w2 & FLAG_INCLUSIVE) != 0 ? 0 : next - 1;
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

// The values of this thread's keys (places first, first + 32, ... of the tile; the first
// `valid` exist; FULL: all) go to their keys' places `ranks` in the staging area.
template <bool FULL>
__device__ __forceinline__ void stage_values(SortShared& s, const unsigned* __restrict__ vals_in,
                                             const unsigned (&ranks)[RANK_WORDS], unsigned tile_base,
                                             unsigned first, unsigned valid, bool index_values) {
    const unsigned steps = FULL ? ITEMS : steps_below(valid, first, XW_WARP);
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned pos = first + i * XW_WARP;
        const unsigned src = tile_base + pos;
        const unsigned at = packed_rank(ranks, i);
        // Values of two words: one 8-byte load (and shared store) each (see the Vulkan twin).
        if (VALUE_WORDS == 2) {
            const uint2 v = !FULL && i >= steps ? make_uint2(0u, 0u)
                            : index_values      ? make_uint2(src, 0u)
                                                : reinterpret_cast<const uint2*>(vals_in)[src];
            reinterpret_cast<uint2*>(s.stage)[at] = v;
            continue;
        }
#pragma unroll
        for (unsigned w = 0; w < VALUE_WORDS; ++w) {
            s.stage[at * VALUE_WORDS + w] = !FULL && i >= steps ? 0u
                                                  : index_values ? (w == 0 ? src : 0u)
                                                                 : vals_in[src * VALUE_WORDS + w];
        }
    }
}

// Places local, local + BLOCK, ... of the sorted tile (the first `valid`; FULL: all) that
// round ROUND staged go to s.acc[d] + place, d the key's digit; pairs keep each place's digit
// in `digits` (four to a register) for its value. Every thread calls it.
template <bool FULL, unsigned ROUND>
__device__ __forceinline__ void scatter_keys(const SortShared& s, KEY* __restrict__ keys_out,
                                             const SortOnesweepParams& p, unsigned valid,
                                             bool write_keys, unsigned (&digits)[DIGIT_WORDS]) {
    const unsigned mask = (1u << p.digit_bits) - 1u;
    const unsigned steps = FULL ? ITEMS : steps_below(valid, threadIdx.x, BLOCK);
    constexpr unsigned end = (ROUND + 1u) * ROUND_STEPS < ITEMS ? (ROUND + 1u) * ROUND_STEPS : ITEMS;
#pragma unroll
    for (unsigned r = ROUND * ROUND_STEPS; r < end; ++r) {
        const unsigned at = threadIdx.x + r * BLOCK;
        if (FULL || r < steps) {
            const KEY m = staged_key(s, at - ROUND * PLACES);
            const unsigned d = xw_digit(m, p.shift, mask);
            if (VALUE_WORDS != 0) digits[r / 4] |= d << (8 * (r % 4));
            if (write_keys) keys_out[s.acc[d] + at] = xw_sort_unmap(m, XW_KEY_KIND, XW_DESCENDING);
        }
    }
}

// The staged values of the places scatter_keys wrote go to the same destinations (their
// digits' bases in s.acc, kept, plus the place).
template <bool FULL>
__device__ __forceinline__ void scatter_values(const SortShared& s, unsigned* __restrict__ vals_out,
                                               unsigned valid, const unsigned (&digits)[DIGIT_WORDS]) {
    const unsigned steps = FULL ? ITEMS : steps_below(valid, threadIdx.x, BLOCK);
#pragma unroll
    for (unsigned r = 0; r < ITEMS; ++r) {
        const unsigned at = threadIdx.x + r * BLOCK;
        if (FULL || r < steps) {
            const unsigned dest = s.acc[(digits[r / 4] >> (8 * (r % 4))) & 0xffu] + at;
            if (VALUE_WORDS == 2) {
                reinterpret_cast<uint2*>(vals_out)[dest] = reinterpret_cast<const uint2*>(s.stage)[at];
                continue;
            }
#pragma unroll
            for (unsigned w = 0; w < VALUE_WORDS; ++w) {
                vals_out[dest * VALUE_WORDS + w] = s.stage[at * VALUE_WORDS + w];
            }
        }
    }
}

// The tile's keys, then (pairs) its values, go out from the staging area (see scatter_keys).
template <bool FULL>
__device__ __forceinline__ void scatter(SortShared& s, const KEY* __restrict__ keys_in,
                                        KEY* __restrict__ keys_out,
                                        const unsigned* __restrict__ vals_in,
                                        unsigned* __restrict__ vals_out,
                                        const SortOnesweepParams& p, unsigned valid,
                                        const unsigned (&ranks)[RANK_WORDS], unsigned tile_base,
                                        unsigned first) {
    unsigned digits[DIGIT_WORDS] = {};
    scatter_keys<FULL, 0>(s, keys_out, p, valid, (p.flags & FLAG_WRITE_KEYS) != 0, digits);
    if (ROUNDS > 1) {
        // The second half of the sorted tile (keys only): its keys read again, staged at their
        // places less PLACES once the first half has left.
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            const unsigned at = packed_rank(ranks, i);
            if (at >= PLACES && (FULL || first + i * XW_WARP < valid)) {
                stage_key(s, at - PLACES,
                          xw_sort_map(keys_in[tile_base + first + i * XW_WARP], XW_KEY_KIND, XW_DESCENDING));
            }
        }
        __syncthreads();
        scatter_keys<FULL, 1>(s, keys_out, p, valid, (p.flags & FLAG_WRITE_KEYS) != 0, digits);
    }
    if (VALUE_WORDS != 0) {
        // The values take the keys' places in the staging area once every key has left it.
        __syncthreads();
        // The tile's base read back here: the values' loads cannot then move up to the keys'
        // (where they would hold a register each through the ranking).
        stage_values<FULL>(s, vals_in, ranks, s.tile * TILE, first, valid,
                           (p.flags & FLAG_INDEX_VALUES) != 0);
        __syncthreads();
        scatter_values<FULL>(s, vals_out, valid, digits);
    }
}

// The whole sort in one block (variant WHOLE: one tile holds every key; see the Vulkan twin):
// every pass of the bit range ranks the tile as a digit pass does and takes it back from the
// staging area in the ranked order, which the next pass's ranking then keeps for equal digits;
// no histogram launch, no look-back. Each pass writes its digit's histogram row, as the
// histogram launch would. Every thread calls it.
__device__ void sort_whole(SortShared& s, const KEY* __restrict__ keys_in, KEY* __restrict__ keys_out,
                           const unsigned* __restrict__ vals_in, unsigned* __restrict__ vals_out,
                           unsigned* work, const SortOnesweepParams& p) {
    const unsigned local = threadIdx.x;
    const unsigned sg = local / XW_WARP;
    const unsigned lane = local % XW_WARP;
    const unsigned run = sg * XW_WARP * ITEMS;
    const unsigned valid = p.n;
    unsigned* offsets = &s.offsets[sg * RADIX];
    unsigned lane_le;
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(lane_le));
    const bool index_values = (p.flags & FLAG_INDEX_VALUES) != 0;
    KEY keys[ITEMS];
    unsigned v[ITEMS][VALUE_WORDS == 0 ? 1 : VALUE_WORDS];
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned pos = run + i * XW_WARP + lane;
        keys[i] = pos < valid ? xw_sort_map(keys_in[pos], XW_KEY_KIND, XW_DESCENDING) : KEY_MAX;
#pragma unroll
        for (unsigned w = 0; w < VALUE_WORDS; ++w) {
            v[i][w] = pos >= valid ? 0u
                      : index_values ? (w == 0 ? pos : 0u)
                                     : vals_in[pos * VALUE_WORDS + w];
        }
    }
    for (unsigned pass = 0; pass < p.passes; ++pass) {
        const unsigned shift = p.shift + 8u * pass;
        const unsigned mask = xw_digit_mask(shift, p.end_bit);
        for (unsigned i = local; i < HIST_SG * RADIX; i += BLOCK) s.offsets[i] = 0;
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) atomicAdd(&offsets[xw_digit(keys[i], shift, mask)], 1u);
        __syncthreads();
        for (unsigned b = local; b < RADIX; b += BLOCK) {
            unsigned sum = 0;
            for (unsigned w = 0; w < HIST_SG; ++w) sum += s.offsets[w * RADIX + b];
            s.scan[0][b] = sum;
            // The padding keys (all ones in every digit) are not the input's.
            work[XW_SORT_HIST + pass * RADIX + b] = sum - (b == mask ? TILE - valid : 0u);
        }
        __syncthreads();
        warp_places(s);
        unsigned ranks[ITEMS];
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            ranks[i] = rank_in_warp(xw_digit(keys[i], shift, mask), offsets, lane, lane_le);
            stage_key(s, ranks[i], keys[i]);
        }
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) keys[i] = staged_key(s, run + i * XW_WARP + lane);
        if (VALUE_WORDS != 0) {
            __syncthreads();
#pragma unroll
            for (unsigned i = 0; i < ITEMS; ++i) {
#pragma unroll
                for (unsigned w = 0; w < VALUE_WORDS; ++w) s.stage[ranks[i] * VALUE_WORDS + w] = v[i][w];
            }
            __syncthreads();
#pragma unroll
            for (unsigned i = 0; i < ITEMS; ++i) {
#pragma unroll
                for (unsigned w = 0; w < VALUE_WORDS; ++w) {
                    v[i][w] = s.stage[(run + i * XW_WARP + lane) * VALUE_WORDS + w];
                }
            }
        }
        __syncthreads();
    }
    const bool write_keys = (p.flags & FLAG_WRITE_KEYS) != 0;
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned pos = run + i * XW_WARP + lane;
        if (pos < valid) {
            if (write_keys) keys_out[pos] = xw_sort_unmap(keys[i], XW_KEY_KIND, XW_DESCENDING);
#pragma unroll
            for (unsigned w = 0; w < VALUE_WORDS; ++w) vals_out[pos * VALUE_WORDS + w] = v[i][w];
        }
    }
}

#if MIN_BLOCKS > 0
#define XW_SORT_BOUNDS __launch_bounds__(BLOCK, MIN_BLOCKS)
#else
#define XW_SORT_BOUNDS __launch_bounds__(BLOCK)
#endif

extern "C" __global__ XW_SORT_BOUNDS void sort_onesweep(
    const KEY* __restrict__ keys_in, KEY* __restrict__ keys_out,
    const unsigned* __restrict__ vals_in, unsigned* __restrict__ vals_out, unsigned* work,
    SortOnesweepParams p) {
#if DYNAMIC_SHARED > 0
    extern __shared__ __align__(16) unsigned char xw_dynamic_shared[];
    SortShared& s = *reinterpret_cast<SortShared*>(xw_dynamic_shared);
#else
    __shared__ SortShared s;
#endif
    const unsigned local = threadIdx.x;
    if ((unsigned)xw_group() >= p.tiles) return;
    if (WHOLE) {
        sort_whole(s, keys_in, keys_out, vals_in, vals_out, work, p);
        return;
    }
    if (local == 0) {
        s.tile = atomicAdd(&work[XW_SORT_COUNTERS + p.pass], 1u);
        s.shift = p.shift;
    }
    for (unsigned i = local; i < HIST_SG * RADIX; i += BLOCK) s.offsets[i] = 0;
    __syncthreads();
    const unsigned k = s.tile;
    const bool last = k + 1 == p.tiles;
    const unsigned tile_base = k * TILE;
    const unsigned valid = min(TILE, p.n - tile_base);
    const unsigned sg = local / XW_WARP;
    const unsigned lane = local % XW_WARP;
    const unsigned run = sg * XW_WARP * ITEMS;
    unsigned* offsets = &s.offsets[sg * RADIX];
    const unsigned mask = (1u << p.digit_bits) - 1u;

    if (p.clear_next) {
        for (unsigned b = local; b < RADIX; b += BLOCK) work[p.state_next + k * RADIX + b] = 0;
    }

    KEY keys[ITEMS];
    if (valid == TILE) {
        // A whole tile (all but maybe the last): no bounds, one base address.
        const KEY* __restrict__ src = keys_in + tile_base + run + lane;
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) keys[i] = xw_sort_map(src[i * XW_WARP], XW_KEY_KIND, XW_DESCENDING);
    } else {
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            const unsigned pos = run + i * XW_WARP + lane;
            keys[i] = pos < valid ? xw_sort_map(keys_in[tile_base + pos], XW_KEY_KIND, XW_DESCENDING) : KEY_MAX;
        }
    }
    // Early counts: each warp counts its keys' digits, so the tile's counts are published
    // before the ranking, long before any successor's look-back needs them.
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) atomicAdd(&offsets[xw_digit(keys[i], p.shift, mask)], 1u);
    __syncthreads();
    for (unsigned b = local; b < RADIX; b += BLOCK) {
        unsigned sum = 0;
        for (unsigned w = 0; w < HIST_SG; ++w) sum += s.offsets[w * RADIX + b];
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
    warp_places(s);

    // Each key goes to its place in the sorted tile as soon as it is known; pairs keep the
    // places for their values, which are loaded once the keys have left (see scatter).
    unsigned lane_le;  // this lane and the lanes below it
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(lane_le));
    unsigned ranks[RANK_WORDS] = {};  // pairs keep them for the values (keys only: optimised away)
    const unsigned shift = s.shift;
#pragma unroll
    for (unsigned i = 0; i < ITEMS; ++i) {
        const unsigned at = rank_in_warp(xw_digit(keys[i], shift, mask), offsets, lane, lane_le);
        // Two rounds: only the first half's keys now (a branch: the warp's next ballots
        // reconverge it; the Vulkan twin writes spare places instead).
        if (!COUNTS_IN_STAGE && (ROUNDS == 1 || at < PLACES)) stage_key(s, at, keys[i]);
        ranks[i / 2] |= at << (16 * (i % 2));
    }
    if (COUNTS_IN_STAGE) {
        // Every warp's counts read: their words take the keys (the barrier before the scatter
        // orders these stores before its loads).
        __syncthreads();
#pragma unroll
        for (unsigned i = 0; i < ITEMS; ++i) {
            const unsigned at = packed_rank(ranks, i);
            if (ROUNDS == 1 || at < PLACES) stage_key(s, at, keys[i]);
        }
    }
    if (k > 0) look_back(s, keys_in, work, p, k, last);
    for (unsigned b = local; b < RADIX; b += BLOCK) s.acc[b] -= s.scan[0][b];
    __syncthreads();

    // Place t of the sorted tile, of digit d, goes to s.acc[d] + t, its value with it.
    if (valid == TILE) {
        scatter<true>(s, keys_in, keys_out, vals_in, vals_out, p, TILE, ranks, tile_base, run + lane);
    } else {
        scatter<false>(s, keys_in, keys_out, vals_in, vals_out, p, valid, ranks, tile_base, run + lane);
    }
}
