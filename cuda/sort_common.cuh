// Radix sort building blocks shared by sort_histogram.cu and sort_onesweep.cu; the twin of
// shaders/sort_common.glsl (see there for the mapped key that every pass sorts, and the tile
// state words), modelled by src/cpu/sort.rs. Keys are handled as unsigned words of the key's
// width: the kernels only move, compare and shift bits.

#define RADIX 256u
#define XW_SORT_HIST 0u         // histogram rows: word XW_SORT_HIST + pass * RADIX + digit
#define XW_SORT_COUNTERS 2048u  // tile counters, one word per pass

// Key kinds, as src/sort.rs passes them.
#define KIND_UNSIGNED 0u
#define KIND_SIGNED 1u
#define KIND_FLOAT 2u

#define FLAG_AGGREGATE (1u << 30)
#define FLAG_INCLUSIVE (2u << 30)
#define VALUE_MASK (FLAG_AGGREGATE - 1u)

template <int BYTES> struct XwSortWord;
template <> struct XwSortWord<4> { typedef unsigned int type; };
template <> struct XwSortWord<8> { typedef unsigned long long type; };
typedef XwSortWord<sizeof(XW_T)>::type KEY;
#define KEY_WORDS ((unsigned)(sizeof(KEY) / 4))
#define KEY_MAX (~(KEY)0)
#define SIGN ((KEY)1 << (8 * sizeof(KEY) - 1))

// The mapped key of `k`.
__device__ __forceinline__ KEY xw_sort_map(KEY k, unsigned kind, bool descending) {
    if (kind == KIND_SIGNED) {
        k ^= SIGN;
    } else if (kind == KIND_FLOAT) {
        k = (k & SIGN) != 0 ? ~k : k ^ SIGN;
    }
    return descending ? ~k : k;
}

// The key whose mapped key is `m`.
__device__ __forceinline__ KEY xw_sort_unmap(KEY m, unsigned kind, bool descending) {
    if (descending) m = ~m;
    if (kind == KIND_SIGNED) {
        m ^= SIGN;
    } else if (kind == KIND_FLOAT) {
        m = (m & SIGN) != 0 ? m ^ SIGN : ~m;
    }
    return m;
}

// Bits shift .. shift + log2(mask + 1) of the mapped key (shift is below the key's width).
__device__ __forceinline__ unsigned xw_digit(KEY m, unsigned shift, unsigned mask) {
    return (unsigned)(m >> shift) & mask;
}

// The mask of the digit whose lowest bit is `shift` in a bit range ending at `end`.
__device__ __forceinline__ unsigned xw_digit_mask(unsigned shift, unsigned end) {
    return (1u << min(8u, end - shift)) - 1u;
}
