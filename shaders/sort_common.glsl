// Radix sort building blocks shared by sort_histogram.comp and sort_onesweep.comp; the twin of
// cuda/sort_common.cuh, modelled by src/cpu/sort.rs.
//
// Keys are sorted as unsigned bit patterns whose numeric order is the wanted order (the mapped
// key): unsigned integers as they are; signed integers with the sign bit flipped; floats with
// every bit flipped when the sign bit is set and only the sign bit flipped otherwise, which
// orders them as IEEE 754 totalOrder (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN,
// NaNs by payload); descending inverts the mapped key. Kernels map on every load and undo the
// mapping on every store, so every buffer between passes holds keys as the caller wrote them.
//
// 64-bit keys are two 32-bit words (uvec2: x the low word, y the high one), so no kernel needs
// 64-bit integer arithmetic in the shader; the CUDA twin uses unsigned long long. Where the
// device has shaderInt64 the kernels' b64_int64 variant takes a key's digit by one 64-bit shift
// (xw_digit), the same bits.
//
// The work buffer (32-bit words) holds the digit histograms, one row of RADIX words per digit
// pass, the tile counters of the passes, and the tile states of two passes: see
// src/sort.rs for the layout.

const uint RADIX = 256u;
const uint XW_SORT_HIST = 0u;          // histogram rows: word XW_SORT_HIST + pass * RADIX + digit
const uint XW_SORT_COUNTERS = 2048u;   // tile counters, one word per pass

// Key kinds, as src/sort.rs passes them.
const uint KIND_UNSIGNED = 0u;
const uint KIND_SIGNED = 1u;
const uint KIND_FLOAT = 2u;

// A tile state word: the flag in bits 31..30 (0 nothing yet, 1 the tile's own count of the
// digit, 2 the inclusive prefix: the global position after the tile's keys of that digit) and
// the value in bits 29..0, so a value never travels apart from its flag and one 32-bit load
// reads both.
const uint FLAG_AGGREGATE = 1u << 30u;
const uint FLAG_INCLUSIVE = 2u << 30u;
const uint VALUE_MASK = FLAG_AGGREGATE - 1u;

const uint SIGN = 0x80000000u;

#if defined(XW_TYPE_B64)
#define KEY uvec2
const uint KEY_WORDS = 2u;
const KEY KEY_MAX = uvec2(0xffffffffu);

// The mapped key of `k` (see the top of this file).
KEY xw_sort_map(KEY k, uint kind, bool descending) {
    if (kind == KIND_SIGNED) {
        k.y ^= SIGN;
    } else if (kind == KIND_FLOAT) {
        k = (k.y & SIGN) != 0u ? ~k : uvec2(k.x, k.y ^ SIGN);
    }
    return descending ? ~k : k;
}

// The key whose mapped key is `m`.
KEY xw_sort_unmap(KEY m, uint kind, bool descending) {
    if (descending) m = ~m;
    if (kind == KIND_SIGNED) {
        m.y ^= SIGN;
    } else if (kind == KIND_FLOAT) {
        m = (m.y & SIGN) != 0u ? uvec2(m.x, m.y ^ SIGN) : ~m;
    }
    return m;
}

// Bits shift .. shift + log2(mask + 1) of the mapped key (a digit may straddle the two words).
uint xw_digit(KEY m, uint shift, uint mask) {
#if defined(XW_BITS_INT64)
    // One 64-bit shift (a funnel shift on NVIDIA): no branch on the shift, which the ranking
    // reads from shared memory, so that NVIDIA's driver took it for a divergent one and
    // recomputed the active invocations (MATCH.ANY) before each step's ballots (H200, 64-bit
    // keys: the digit pass 0.93-0.94x the time, the histogram 0.77x; NOTES.md version 73).
    return uint(pack64(m) >> shift) & mask;
#else
    if (shift >= 32u) return (m.y >> (shift - 32u)) & mask;
    // A shift by 32 is undefined, so the high word joins only when it contributes.
    uint high = shift == 0u ? 0u : m.y << (32u - shift);
    return ((m.x >> shift) | high) & mask;
#endif
}

#if defined(XW_BITS_INT64)
// The same bits by 32-bit shifts of the two words (xw_digit without shaderInt64): the one-launch
// sort of pairs keeps it (sort_onesweep.comp, whole_digit).
uint xw_digit_words(KEY m, uint shift, uint mask) {
    if (shift >= 32u) return (m.y >> (shift - 32u)) & mask;
    uint high = shift == 0u ? 0u : m.y << (32u - shift);
    return ((m.x >> shift) | high) & mask;
}
#endif
#else
#define KEY uint
const uint KEY_WORDS = 1u;
const KEY KEY_MAX = 0xffffffffu;

// The mapped key of `k` (see the top of this file).
KEY xw_sort_map(KEY k, uint kind, bool descending) {
    if (kind == KIND_SIGNED) {
        k ^= SIGN;
    } else if (kind == KIND_FLOAT) {
        k = (k & SIGN) != 0u ? ~k : k ^ SIGN;
    }
    return descending ? ~k : k;
}

// The key whose mapped key is `m`.
KEY xw_sort_unmap(KEY m, uint kind, bool descending) {
    if (descending) m = ~m;
    if (kind == KIND_SIGNED) {
        m ^= SIGN;
    } else if (kind == KIND_FLOAT) {
        m = (m & SIGN) != 0u ? m ^ SIGN : ~m;
    }
    return m;
}

// Bits shift .. shift + log2(mask + 1) of the mapped key.
uint xw_digit(KEY m, uint shift, uint mask) {
    return (m >> shift) & mask;
}
#endif

// The mask of the digit whose lowest bit is `shift` in a bit range ending at `end`: 8 bits, or
// fewer for the last digit of a range whose width is not a multiple of 8.
uint xw_digit_mask(uint shift, uint end) {
    return (1u << min(8u, end - shift)) - 1u;
}
