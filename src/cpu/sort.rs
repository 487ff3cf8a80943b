//! CPU twin of `shaders/sort_histogram.comp`, `shaders/sort_onesweep.comp` and their CUDA
//! twins: a stable sort by the bits of the mapped key that lie in the bit range (see
//! [`crate::sort`] for the mapping and the order it gives). The GPU sort is a stable LSD radix
//! sort over exactly those bits, so its result is unique and equal to this one bit for bit.

use super::par::par_each;
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
    // Each key tagged with its input index: the tagged pairs are all distinct, so ordering them
    // is the stable sort by field (equal fields in input order), whatever sort orders them.
    let mut tagged: Vec<(u64, usize)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (sort_field(k, order, &bits), i))
        .collect();
    sort_distinct(&mut tagged);
    tagged.into_iter().map(|(_, i)| i).collect()
}

/// Sorts distinct items: runs sorted on every core, then merged pairwise (a GPU-sized input,
/// 2^28 keys, sorts in seconds where one core's indirect sort took minutes).
fn sort_distinct<T: Ord + Copy + Send + Sync>(items: &mut [T]) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    sort_distinct_in(items, threads, 1 << 16);
}

/// [`sort_distinct`] in at most `runs` runs of at least `least` items each.
fn sort_distinct_in<T: Ord + Copy + Send + Sync>(items: &mut [T], runs: usize, least: usize) {
    if items.len() <= least || runs <= 1 {
        items.sort_unstable();
        return;
    }
    let run = items.len().div_ceil(runs).max(least);
    par_each(items.chunks_mut(run).collect(), |c: &mut [T]| {
        c.sort_unstable()
    });
    let mut buf = items.to_vec();
    let mut width = run;
    let mut from_items = true;
    while width < items.len() {
        let (src, dst): (&[T], &mut [T]) = if from_items {
            (&*items, &mut buf[..])
        } else {
            (&buf[..], &mut *items)
        };
        let pairs: Vec<(&[T], &mut [T])> = src
            .chunks(2 * width)
            .zip(dst.chunks_mut(2 * width))
            .collect();
        par_each(pairs, |(s, d)| {
            merge(&s[..width.min(s.len())], &s[width.min(s.len())..], d)
        });
        from_items = !from_items;
        width *= 2;
    }
    if !from_items {
        items.copy_from_slice(&buf);
    }
}

/// Merges the sorted `a` and `b` into `out` (of their summed length).
fn merge<T: Ord + Copy>(a: &[T], b: &[T], out: &mut [T]) {
    let (mut i, mut j) = (0, 0);
    for o in out.iter_mut() {
        if j >= b.len() || (i < a.len() && a[i] <= b[j]) {
            *o = a[i];
            i += 1;
        } else {
            *o = b[j];
            j += 1;
        }
    }
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
    fn argsort_is_stable_across_runs_and_merges() {
        // Few distinct keys over many runs: every merge sees long stretches of equal fields.
        let mut rng = crate::Rng::new(7);
        for n in [0usize, 1, 65_535, 65_537, 1_000_003] {
            let keys: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32 % 5).collect();
            let perm = argsort(&keys, SortOrder::Ascending, 0..32);
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| keys[i]);
            assert_eq!(perm, want, "n={n}");
        }
        // Many runs, the last one short: several rounds of merges, some of a lone run.
        for (n, runs) in [(1000usize, 7usize), (4097, 3), (100_000, 16), (33, 5)] {
            let mut items: Vec<(u64, usize)> = (0..n).map(|i| (rng.next_u64() % 9, i)).collect();
            let mut want = items.clone();
            want.sort();
            sort_distinct_in(&mut items, runs, 4);
            assert_eq!(items, want, "n={n} runs={runs}");
        }
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
