//! The benchmark's checks at size: pieces of work spread over every core, element-wise
//! comparison in parallel, and exact property checks of a sort that need no CPU sort.
//!
//! A sort's output is checked by what defines it rather than against a sorted copy:
//! - **keys** ([`check_sorted_keys`]): every mapped key at most the next one (the sort's
//!   order), and the output's multiset equal to the input's ([`Fingerprint`]: two independent
//!   sums of a keyed 64-bit mix over every key's bits, and a product of `(r - key)` modulo the
//!   prime 2^61 - 1 at a random point `r`). A lost, duplicated or altered key changes the
//!   multiset; a swapped pair breaks the order.
//! - **pairs whose values name the input indices** ([`check_sorted_pairs`], values of
//!   [`PairValue`]: the `u32` index itself, or for 8-byte keys a `u64` whose two words both
//!   encode it): every value one an index makes (a `u64` whose words disagree was moved or
//!   written wrong in one of them), the indices a permutation of `0..n` (a bitmap: each index
//!   seen once), each key the input's key at its value's index, and each pair after the one
//!   before it in the order *(mapped key, input index)*: sorted, and stable (equal keys in
//!   increasing input index). Those properties have exactly one solution, the stable sort, so
//!   this check is exact.
//!
//! Each check names the first place it fails. The multiset fingerprint is the one part that is
//! probabilistic: two different multisets of `n` keys agree on the product at most at `n` of
//! the 2^61 - 1 points (a polynomial of degree `n`), and on each keyed sum by chance (2^-64),
//! so a wrong output passes with probability below `n` / 2^61 · 2^-128 for a fresh random key.

use crate::validate::{Compare, Mismatch};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use xwarp::cpu::sort::mapped_key;
use xwarp::element::{Element, Rng};
use xwarp::sort::SortOrder;

/// Fewest elements a thread of [`par_ranges`] takes: below it one thread does all.
const MIN_PIECE: usize = 1 << 16;

/// Threads the checks use: every core.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Splits `0..n` into at most [`threads`] contiguous ranges of at least [`MIN_PIECE`]
/// elements, runs `f` on each on its own thread, and returns the results in range order.
pub(crate) fn par_ranges<R: Send>(n: usize, f: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    let pieces = n.div_ceil(MIN_PIECE).clamp(1, threads());
    if pieces == 1 {
        return vec![f(0..n)];
    }
    let step = n.div_ceil(pieces);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .step_by(step)
            .map(|lo| {
                let f = &f;
                s.spawn(move || f(lo..(lo + step).min(n)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a check thread panicked"))
            .collect()
    })
}

/// Fills a vector of `n` elements from `f(range, piece)` on every core.
pub(crate) fn par_fill<T: bytemuck::Pod + Send + Sync>(
    n: usize,
    f: impl Fn(Range<usize>, &mut [T]) + Sync,
) -> Vec<T> {
    let mut out = vec![T::zeroed(); n];
    let pieces = n.div_ceil(MIN_PIECE).clamp(1, threads());
    let step = n.div_ceil(pieces).max(1);
    std::thread::scope(|s| {
        for (i, chunk) in out.chunks_mut(step).enumerate() {
            let f = &f;
            s.spawn(move || f(i * step..i * step + chunk.len(), chunk));
        }
    });
    out
}

/// `n` random values from `seed`, bit for bit [`Rng::vec`]'s, drawn on every core: each piece
/// starts its own generator where the sequence reaches it ([`Rng::skip`]).
pub(crate) fn random_values<T: Element>(seed: u64, n: usize) -> Vec<T> {
    par_fill(n, |range, out| {
        let mut rng = Rng::new(seed);
        rng.skip(range.start as u64 * Rng::draws_per_value(T::KIND));
        for v in out.iter_mut() {
            *v = T::random(&mut rng);
        }
    })
}

/// The first index in `0..n` where `same(i)` is false, and how many there are, on every core.
pub(crate) fn par_first_difference(
    n: usize,
    same: impl Fn(usize) -> bool + Sync,
) -> Option<(usize, usize)> {
    let found = par_ranges(n, |r| {
        let mut first = None;
        let mut count = 0;
        for i in r {
            if !same(i) {
                first.get_or_insert(i);
                count += 1;
            }
        }
        (first, count)
    });
    let count: usize = found.iter().map(|f| f.1).sum();
    found.into_iter().find_map(|(f, _)| f).map(|i| (i, count))
}

/// `compare(want, got)` on every core: the first mismatch over the whole slices, with the
/// count of wrong elements of all of them.
pub(crate) fn par_compare<T: Element>(
    compare: Compare<T>,
    want: &[T],
    got: &[T],
) -> Option<Mismatch> {
    if want.len() != got.len() {
        return compare(want, got);
    }
    let found = par_ranges(want.len(), |r| {
        compare(&want[r.clone()], &got[r.clone()]).map(|m| (r.start, m))
    });
    let wrong: usize = found.iter().flatten().map(|(_, m)| m.wrong).sum();
    found
        .into_iter()
        .flatten()
        .next()
        .map(|(start, m)| Mismatch {
            index: start + m.index,
            wrong,
            ..m
        })
}

/// A multiset fingerprint of keys' bit patterns (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    sums: [u64; 2],
    product: u64,
    len: usize,
}

/// The Mersenne prime 2^61 - 1 the product is taken modulo.
const P61: u64 = (1 << 61) - 1;

/// `a * b` modulo [`P61`], for `a`, `b` below it.
fn mul61(a: u64, b: u64) -> u64 {
    let p = a as u128 * b as u128;
    let r = (p as u64 & P61) + (p >> 61) as u64;
    if r >= P61 {
        r - P61
    } else {
        r
    }
}

/// SplitMix64's finaliser: a bijective mix of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The random points of one run's fingerprints: two sum keys and the product's point.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FingerprintKey {
    sum_keys: [u64; 2],
    point: u64,
}

impl FingerprintKey {
    /// Keys from `seed` (each run draws its own).
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0xf1_6e59_7a1c);
        FingerprintKey {
            sum_keys: [rng.next_u64(), rng.next_u64()],
            point: rng.next_u64() % P61,
        }
    }
}

impl Fingerprint {
    /// The fingerprint of `values` under `key`, on every core.
    pub(crate) fn of<T: Element>(values: &[T], key: FingerprintKey) -> Self {
        let parts = par_ranges(values.len(), |r| {
            let mut f = Fingerprint {
                sums: [0; 2],
                product: 1,
                len: r.len(),
            };
            for v in &values[r] {
                let bits = v.to_bits64();
                f.sums[0] = f.sums[0].wrapping_add(mix(bits ^ key.sum_keys[0]));
                f.sums[1] = f.sums[1].wrapping_add(mix(mix(bits).wrapping_add(key.sum_keys[1])));
                // Bits folded below the prime first: 64-bit keys differing by a multiple of it
                // share a factor, which the keyed sums then still tell apart.
                let x = (bits & P61) + (bits >> 61);
                f.product = mul61(f.product, (key.point + P61 - x % P61) % P61);
            }
            f
        });
        parts.into_iter().fold(
            Fingerprint {
                sums: [0; 2],
                product: 1,
                len: 0,
            },
            |a, b| Fingerprint {
                sums: [
                    a.sums[0].wrapping_add(b.sums[0]),
                    a.sums[1].wrapping_add(b.sums[1]),
                ],
                product: mul61(a.product, b.product),
                len: a.len + b.len,
            },
        )
    }
}

/// The first place where `keys` is not in `order` by mapped key, if any.
fn first_unsorted<T: Element>(keys: &[T], order: SortOrder) -> Option<(usize, usize)> {
    let n = keys.len();
    let map = |i: usize| mapped_key(T::KIND, keys[i].to_bits64(), order);
    par_first_difference(n.saturating_sub(1), |i| map(i) <= map(i + 1))
}

/// Checks a sort of keys ascending or descending over every bit: `got` in order, and the same
/// multiset as the input whose fingerprint is `input` (made with `key`). `Err` says what and
/// where.
pub(crate) fn check_sorted_keys<T: Element>(
    input: &Fingerprint,
    key: FingerprintKey,
    got: &[T],
    order: SortOrder,
) -> Result<(), String> {
    if got.len() != input.len {
        return Err(format!("{} keys, expected {}", got.len(), input.len));
    }
    if let Some((i, count)) = first_unsorted(got, order) {
        return Err(format!(
            "keys out of order: element {} is {:?}, element {} is {:?} ({count} such places)",
            i,
            got[i],
            i + 1,
            got[i + 1]
        ));
    }
    if Fingerprint::of(got, key) != *input {
        return Err(
            "the sorted keys are not the input's keys (another multiset: a key lost, \
             duplicated or altered)"
                .into(),
        );
    }
    Ok(())
}

/// The word the low half of a `u64` pair value holds the index xor'ed with.
pub(crate) const PAIR_CHECK_WORD: u64 = 0x9e37_79b9;

/// The values of the benchmark's pair sorts: each names the input place of its key, so that
/// after the sort a wrong or unstable move shows ([`check_sorted_pairs`]).
pub(crate) trait PairValue: Element {
    /// What the output is filled with before a sort: the value of no index below 2^30 (the
    /// most keys a sort takes), so a value left unwritten shows.
    const POISON: Self;

    /// The value of the key at input place `i` (below 2^32).
    fn of_index(i: usize) -> Self;

    /// The input place `self` names, or `None` where it is no place's value (a `u64` whose two
    /// words disagree).
    fn index(self) -> Option<usize>;
}

/// `u32` values (the pair sorts of 4-byte keys): the index itself.
impl PairValue for u32 {
    const POISON: Self = 0xcdcd_cdcd;

    fn of_index(i: usize) -> Self {
        i as u32
    }

    fn index(self) -> Option<usize> {
        Some(self as usize)
    }
}

/// `u64` values (the pair sorts of 8-byte keys): the index in the high word and the index xor
/// [`PAIR_CHECK_WORD`] in the low one, `(i << 32) | (i ^ 0x9e37_79b9)`, so that a word moved
/// apart from its other half, or either word written wrong, makes the two disagree.
impl PairValue for u64 {
    const POISON: Self = 0xcdcd_cdcd_cdcd_cdcd;

    fn of_index(i: usize) -> Self {
        let i = i as u64;
        (i << 32) | ((i ^ PAIR_CHECK_WORD) & 0xffff_ffff)
    }

    fn index(self) -> Option<usize> {
        let high = self >> 32;
        (self & 0xffff_ffff == high ^ PAIR_CHECK_WORD).then_some(high as usize)
    }
}

/// Checks a stable sort of pairs whose values were [`PairValue::of_index`] of the input
/// indices `0..n`, over every bit: exact (see the module documentation). `Err` says what and
/// where.
pub(crate) fn check_sorted_pairs<T: Element, V: PairValue>(
    input: &[T],
    keys: &[T],
    values: &[V],
    order: SortOrder,
) -> Result<(), String> {
    let n = input.len();
    if keys.len() != n || values.len() != n {
        return Err(format!(
            "{} keys and {} values, expected {n} of each",
            keys.len(),
            values.len()
        ));
    }
    // Each value one an index makes, of an index below n.
    if let Some((i, count)) = par_first_difference(n, |i| values[i].index().is_some_and(|v| v < n))
    {
        let v = values[i];
        return Err(match v.index() {
            None => format!(
                "value {i} is {:#x}, whose two words name different input indices (a word moved \
                 or written apart from its other half; {count} bad values)",
                v.to_bits64()
            ),
            Some(at) => format!(
                "value {i} is {:#x}, of index {at}, not an input index below {n} ({count} bad \
                 values)",
                v.to_bits64()
            ),
        });
    }
    // From here every value names an index below n.
    let index = |i: usize| values[i].index().unwrap_or(usize::MAX);
    // The indices: a permutation of 0..n.
    let seen: Vec<AtomicU64> = (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
    if let Some((i, count)) = par_first_difference(n, |i| {
        let v = index(i);
        let bit = 1u64 << (v % 64);
        seen[v / 64].fetch_or(bit, Ordering::Relaxed) & bit == 0
    }) {
        return Err(format!(
            "value of index {} appears twice (again at {i}): an element duplicated and another \
             lost ({count} repeats)",
            index(i)
        ));
    }
    // Each key the input's key at its value's index.
    if let Some((i, count)) =
        par_first_difference(n, |i| keys[i].to_bits64() == input[index(i)].to_bits64())
    {
        return Err(format!(
            "key {i} is {:?}, but its value names index {}, whose key is {:?} ({count} such keys)",
            keys[i],
            index(i),
            input[index(i)]
        ));
    }
    // Sorted by (mapped key, input index): in order, and stable.
    let map = |i: usize| mapped_key(T::KIND, keys[i].to_bits64(), order);
    if let Some((i, count)) = par_first_difference(n.saturating_sub(1), |i| {
        (map(i), index(i)) < (map(i + 1), index(i + 1))
    }) {
        let what = if map(i) == map(i + 1) {
            "equal keys out of input order (unstable)"
        } else {
            "keys out of order"
        };
        return Err(format!(
            "{what}: element {i} is {:?} from input index {}, element {} is {:?} from {} \
             ({count} such places)",
            keys[i],
            index(i),
            i + 1,
            keys[i + 1],
            index(i + 1)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random keys with many repeats (few distinct values), and their stable ascending sort
    /// with the input indices as values.
    fn sorted_pairs(n: usize, distinct: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let mut rng = Rng::new(5);
        let input: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32 % distinct).collect();
        let mut idx: Vec<u32> = (0..n as u32).collect();
        idx.sort_by_key(|&i| input[i as usize]);
        let keys = idx.iter().map(|&i| input[i as usize]).collect();
        (input, keys, idx)
    }

    const ASC: SortOrder = SortOrder::Ascending;

    /// The pair check over values of `V` ([`PairValue::of_index`] of the input indices):
    /// passes the stable sort, catches each kind of error.
    fn pair_check_catches_each_kind_of_error<V: PairValue>() {
        // At least 8 keys of 7 values: two keys are equal, and (random) two differ.
        for n in [10, 1000, 200_003] {
            let (input, keys, idx) = sorted_pairs(n, 7);
            let values: Vec<V> = idx.iter().map(|&i| V::of_index(i as usize)).collect();
            assert_eq!(check_sorted_pairs(&input, &keys, &values, ASC), Ok(()));
            // A swapped pair of different keys.
            let i = (1..n).find(|&i| keys[i] != keys[i - 1]).unwrap();
            let (mut k, mut v) = (keys.clone(), values.clone());
            k.swap(i - 1, i);
            v.swap(i - 1, i);
            let e = check_sorted_pairs(&input, &k, &v, ASC).unwrap_err();
            assert!(e.contains("keys out of order"), "{e}");
            // A lost element (its place holds a copy of its neighbour).
            let (mut k, mut v) = (keys.clone(), values.clone());
            k[i] = k[i - 1];
            v[i] = v[i - 1];
            let e = check_sorted_pairs(&input, &k, &v, ASC).unwrap_err();
            assert!(e.contains("appears twice"), "{e}");
            // A duplicated element written over another of the same key: the same.
            let j = (1..n).find(|&j| keys[j] == keys[j - 1]).unwrap();
            let (mut k, mut v) = (keys.clone(), values.clone());
            k[j] = k[j - 1];
            v[j] = v[j - 1];
            assert!(check_sorted_pairs(&input, &k, &v, ASC).is_err());
            // An unstable run: two equal keys in the wrong input order.
            let mut v = values.clone();
            v.swap(j - 1, j);
            let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
            assert!(e.contains("unstable"), "{e}");
            // A key that is not its value's input key.
            let mut k = keys.clone();
            k[i] = k[i].wrapping_add(1);
            assert!(check_sorted_pairs(&input, &k, &values, ASC).is_err());
            // An unwritten, poisoned slot.
            let mut v = values.clone();
            v[n / 2] = V::POISON;
            let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
            assert!(
                e.contains("not an input index") || e.contains("two words"),
                "{e}"
            );
            // The value of an index past the end.
            let mut v = values.clone();
            v[n / 2] = V::of_index(n);
            let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
            assert!(e.contains("not an input index"), "{e}");
        }
    }

    #[test]
    fn the_pair_check_passes_the_stable_sort_and_catches_each_kind_of_error() {
        pair_check_catches_each_kind_of_error::<u32>();
        pair_check_catches_each_kind_of_error::<u64>();
    }

    /// `u64` values: both words encode the index, and each index's value is the pattern
    /// `(i << 32) | (i ^ 0x9e37_79b9)` (the CUB program's too: its self-test pins the same
    /// values); a word moved or written apart from its other half fails the check.
    #[test]
    fn u64_pair_values_catch_a_wrong_move_in_either_word() {
        assert_eq!(u64::of_index(0), 0x0000_0000_9e37_79b9);
        assert_eq!(u64::of_index(1), 0x0000_0001_9e37_79b8);
        assert_eq!(u64::of_index(0x3fff_ffff), 0x3fff_ffff_a1c8_8646);
        for i in [0, 1, 77, (1 << 30) - 1, u32::MAX as usize] {
            assert_eq!(u64::of_index(i).index(), Some(i));
            assert_eq!(u32::of_index(i).index(), Some(i));
        }
        assert_eq!(u64::POISON.index(), None);
        // 64-bit keys of few distinct values, sorted stably, with u64 values.
        let n = 100_003;
        let (input32, _, idx) = sorted_pairs(n, 7);
        let wide = |k: u32| (u64::from(k) << 40) | u64::from(k);
        let input: Vec<u64> = input32.iter().map(|&k| wide(k)).collect();
        let keys: Vec<u64> = idx.iter().map(|&i| input[i as usize]).collect();
        let values: Vec<u64> = idx.iter().map(|&i| u64::of_index(i as usize)).collect();
        assert_eq!(check_sorted_pairs(&input, &keys, &values, ASC), Ok(()));
        let j = (1..n).find(|&j| keys[j] == keys[j - 1]).unwrap();
        let low = 0xffff_ffffu64;
        // The low words of two equal keys' values swapped (an unstable move of one word only).
        let mut v = values.clone();
        let (a, b) = (v[j - 1], v[j]);
        v[j - 1] = (a & !low) | (b & low);
        v[j] = (b & !low) | (a & low);
        let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
        assert!(e.contains("two words"), "{e}");
        // The high words swapped instead.
        let mut v = values.clone();
        v[j - 1] = (b & !low) | (a & low);
        v[j] = (a & !low) | (b & low);
        let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
        assert!(e.contains("two words"), "{e}");
        // One word left unwritten (poisoned), the other right.
        for mask in [low, !low] {
            let mut v = values.clone();
            v[n / 3] = (v[n / 3] & !mask) | (u64::POISON & mask);
            let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
            assert!(e.contains("two words"), "{e}");
        }
        // Both words moved together, wrongly: the unstable run shows as with u32 values.
        let mut v = values.clone();
        v.swap(j - 1, j);
        let e = check_sorted_pairs(&input, &keys, &v, ASC).unwrap_err();
        assert!(e.contains("unstable"), "{e}");
    }

    #[test]
    fn the_key_check_passes_the_sort_and_catches_each_kind_of_error() {
        let key = FingerprintKey::new(11);
        for n in [10, 1000, 200_003] {
            let (input, keys, _) = sorted_pairs(n, 1000);
            let fp = Fingerprint::of(&input, key);
            assert_eq!(check_sorted_keys(&fp, key, &keys, ASC), Ok(()));
            let i = (1..n).find(|&i| keys[i] != keys[i - 1]).unwrap();
            // Swapped.
            let mut k = keys.clone();
            k.swap(i - 1, i);
            let e = check_sorted_keys(&fp, key, &k, ASC).unwrap_err();
            assert!(e.contains("out of order"), "{e}");
            // Lost (replaced by a copy of its neighbour: still sorted).
            let mut k = keys.clone();
            k[i] = k[i - 1];
            let e = check_sorted_keys(&fp, key, &k, ASC).unwrap_err();
            assert!(e.contains("multiset"), "{e}");
            // Duplicated at the end in place of the largest key.
            let mut k = keys.clone();
            let last = k[n - 1];
            if let Some(j) = (0..n).rev().find(|&j| k[j] != last) {
                k[n - 1] = k[j];
                k[j + 1..].sort_unstable();
                assert!(check_sorted_keys(&fp, key, &k, ASC).is_err());
            }
            // One short.
            assert!(check_sorted_keys(&fp, key, &keys[1..], ASC).is_err());
        }
        // Descending order is checked as descending.
        let (input, mut keys, _) = sorted_pairs(5000, 100);
        let fp = Fingerprint::of(&input, key);
        assert!(check_sorted_keys(&fp, key, &keys, SortOrder::Descending).is_err());
        keys.reverse();
        assert_eq!(
            check_sorted_keys(&fp, key, &keys, SortOrder::Descending),
            Ok(())
        );
    }

    #[test]
    fn floats_order_by_total_order_and_fingerprints_tell_zeros_and_nans_apart() {
        let key = FingerprintKey::new(3);
        let input = [0.0f32, -0.0, f32::NAN, 1.0, -f32::INFINITY];
        let sorted = [-f32::INFINITY, -0.0, 0.0, 1.0, f32::NAN];
        let fp = Fingerprint::of(&input, key);
        assert_eq!(check_sorted_keys(&fp, key, &sorted, ASC), Ok(()));
        let zeros = [-f32::INFINITY, 0.0, 0.0, 1.0, f32::NAN];
        assert!(check_sorted_keys(&fp, key, &zeros, ASC).is_err());
        let swapped = [-f32::INFINITY, 0.0, -0.0, 1.0, f32::NAN];
        assert!(check_sorted_keys(&fp, key, &swapped, ASC).is_err());
    }

    #[test]
    fn parallel_values_equal_the_sequence() {
        for n in [0, 1, 65_537, 300_001] {
            let a: Vec<f32> = random_values(42, n);
            let b: Vec<f32> = Rng::new(42).vec(n);
            assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
            let a: Vec<u64> = random_values(42, n);
            assert_eq!(a, Rng::new(42).vec::<u64>(n));
        }
    }

    #[test]
    fn the_first_difference_is_the_lowest_index() {
        let n = 1 << 20;
        let bad = [77_777usize, 500_000, 1_000_000];
        assert_eq!(
            par_first_difference(n, |i| !bad.contains(&i)),
            Some((77_777, 3))
        );
        assert_eq!(par_first_difference(n, |_| true), None);
    }
}
