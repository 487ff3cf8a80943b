//! CPU twin of `shaders/sort_histogram.comp`, `shaders/sort_onesweep.comp` and their CUDA
//! twins: a stable sort by the bits of the mapped key that lie in the bit range (see
//! [`crate::sort`] for the mapping and the order it gives). The GPU sort is a stable LSD radix
//! sort over exactly those bits, so its result is unique and equal to this one bit for bit.

use crate::element::{ElemKind, Element};
use crate::sort::SortOrder;
use std::ops::Range;

/// The mapped key: an unsigned bit pattern of the key's width whose numeric order is the wanted
/// order of keys of kind `kind` with bits `bits` (as [`Element::to_bits64`] gives them).
///
/// Unsigned integers keep their bits; signed integers get their sign bit flipped; floats get
/// every bit flipped when the sign bit is set and only the sign bit flipped otherwise (IEEE 754
/// totalOrder); [`SortOrder::Descending`] then inverts every bit of the key's width.
pub fn mapped_key(kind: ElemKind, bits: u64, order: SortOrder) -> u64 {
    let width = kind.size() as u32 * 8;
    let all = u64::MAX >> (64 - width);
    let sign = 1u64 << (width - 1);
    let bits = bits & all;
    let mapped = match kind {
        ElemKind::U32 | ElemKind::U64 => bits,
        ElemKind::I32 | ElemKind::I64 => bits ^ sign,
        ElemKind::F32 | ElemKind::F64 => {
            if bits & sign != 0 {
                !bits & all
            } else {
                bits ^ sign
            }
        }
    };
    match order {
        SortOrder::Ascending => mapped,
        SortOrder::Descending => !mapped & all,
    }
}

/// The bits `bits.start .. bits.end` of `key`'s mapped key, shifted down: what decides the
/// key's place. An empty or out-of-width range gives 0 for every key (input order kept).
pub fn sort_field<K: Element>(key: K, order: SortOrder, bits: &Range<u32>) -> u64 {
    let width = bits.end.saturating_sub(bits.start);
    if width == 0 || bits.end > K::KIND.size() as u32 * 8 {
        return 0;
    }
    let mask = u64::MAX >> (64 - width);
    (mapped_key(K::KIND, key.to_bits64(), order) >> bits.start) & mask
}

/// The permutation that sorts `keys` stably: `keys[p[0]], keys[p[1]], ...` is sorted, and
/// equal fields keep their input order.
pub fn argsort<K: Element>(keys: &[K], order: SortOrder, bits: Range<u32>) -> Vec<usize> {
    let fields: Vec<u64> = keys.iter().map(|&k| sort_field(k, order, &bits)).collect();
    let mut perm: Vec<usize> = (0..keys.len()).collect();
    // `sort_by_key` is stable: equal fields keep their input order.
    perm.sort_by_key(|&i| fields[i]);
    perm
}

/// `keys` sorted stably by the bits `bits` of their mapped keys.
pub fn sort_keys<K: Element>(keys: &[K], order: SortOrder, bits: Range<u32>) -> Vec<K> {
    argsort(keys, order, bits)
        .into_iter()
        .map(|i| keys[i])
        .collect()
}

/// `keys` and `values` (of the same length) sorted stably by the keys, each value moving with
/// its key.
pub fn sort_pairs<K: Element, V: Copy>(
    keys: &[K],
    values: &[V],
    order: SortOrder,
    bits: Range<u32>,
) -> (Vec<K>, Vec<V>) {
    let perm = argsort(keys, order, bits);
    let k = perm.iter().map(|&i| keys[i]).collect();
    let v = perm
        .iter()
        .filter_map(|&i| values.get(i).copied())
        .collect();
    (k, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_map_to_total_order() {
        let order = [
            f32::from_bits(0xffc0_0001), // -NaN with a payload
            f32::from_bits(0xff80_0001), // -sNaN
            f32::NEG_INFINITY,
            -f32::MAX,
            -1.0,
            -f32::from_bits(1),
            -0.0,
            0.0,
            f32::from_bits(1),
            1.0,
            f32::MAX,
            f32::INFINITY,
            f32::from_bits(0x7f80_0001),
            f32::NAN,
            f32::from_bits(0x7fff_ffff),
        ];
        let mapped: Vec<u64> = order
            .iter()
            .map(|v| mapped_key(ElemKind::F32, v.to_bits64(), SortOrder::Ascending))
            .collect();
        assert!(mapped.windows(2).all(|w| w[0] < w[1]), "{mapped:x?}");
        let down: Vec<u64> = order
            .iter()
            .map(|v| mapped_key(ElemKind::F32, v.to_bits64(), SortOrder::Descending))
            .collect();
        assert!(down.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn integers_map_to_numeric_order() {
        let v = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        let m: Vec<u64> = v
            .iter()
            .map(|x| mapped_key(ElemKind::I64, x.to_bits64(), SortOrder::Ascending))
            .collect();
        assert!(m.windows(2).all(|w| w[0] < w[1]));
        let v = [i32::MIN, -1, 0, i32::MAX];
        let m: Vec<u64> = v
            .iter()
            .map(|x| mapped_key(ElemKind::I32, x.to_bits64(), SortOrder::Ascending))
            .collect();
        assert!(m.windows(2).all(|w| w[0] < w[1]));
        assert!(m.iter().all(|&x| x <= u32::MAX as u64));
    }

    #[test]
    fn a_bit_range_sorts_by_its_bits_only_and_stably() {
        let keys = [0x0102u32, 0x0201, 0x0301, 0x0002];
        assert_eq!(argsort(&keys, SortOrder::Ascending, 0..8), [1, 2, 0, 3]);
        assert_eq!(argsort(&keys, SortOrder::Ascending, 8..16), [3, 0, 1, 2]);
        assert_eq!(argsort(&keys, SortOrder::Descending, 0..8), [0, 3, 1, 2]);
        assert_eq!(argsort(&keys, SortOrder::Ascending, 4..4), [0, 1, 2, 3]);
        let (k, v) = sort_pairs(&keys, &['a', 'b', 'c', 'd'], SortOrder::Ascending, 0..32);
        assert_eq!(k, [0x0002, 0x0102, 0x0201, 0x0301]);
        assert_eq!(v, ['d', 'a', 'b', 'c']);
    }
}
