//! CPU twin of `shaders/runs.glsl` and `cuda/runs.cuh` (unique, run-length encoding,
//! reduce-by-key): runs of equal consecutive keys, compared by their bits, and each run's
//! reduction in the canonical order: values folded left to right within each thread piece
//! (the run's elements between multiples of [`items`]), thread pieces folded left to right
//! within each tile piece (between multiples of [`tile`]), tile pieces folded left to right.
//! No identity enters.

use crate::element::Element;
use crate::spec::reduce::{Reduce, ReduceOp};
pub use crate::spec::runs::{items, tile};
use std::ops::Range;

/// The runs of equal consecutive keys (by bits), as index ranges, in order.
pub fn runs<K: Element>(keys: &[K]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        (start < keys.len()).then(|| {
            let bits = keys[start].to_bits64();
            let len = keys[start..]
                .iter()
                .take_while(|k| k.to_bits64() == bits)
                .count();
            let run = start..start + len;
            start += len;
            run
        })
    })
}

/// The first key of each run (CUB's `DeviceSelect::Unique`).
pub fn unique<K: Element>(keys: &[K]) -> Vec<K> {
    runs(keys).map(|r| keys[r.start]).collect()
}

/// Each run's key and length (CUB's `DeviceRunLengthEncode::Encode`).
pub fn run_length<K: Element>(keys: &[K]) -> (Vec<K>, Vec<u32>) {
    runs(keys).map(|r| (keys[r.start], r.len() as u32)).unzip()
}

/// The left fold of `items` by `f` from its first item (`None` when empty).
fn fold<T>(items: impl Iterator<Item = T>, f: impl Fn(T, T) -> T) -> Option<T> {
    items.reduce(f)
}

/// The pieces of `run` between multiples of `size`.
fn pieces(run: Range<usize>, size: usize) -> impl Iterator<Item = Range<usize>> {
    let mut start = run.start;
    std::iter::from_fn(move || {
        (start < run.end).then(|| {
            let end = ((start / size + 1) * size).min(run.end);
            let piece = start..end;
            start = end;
            piece
        })
    })
}

/// The reduction of one run's values in the canonical order.
fn run_value<V: Reduce>(
    op: ReduceOp,
    values: &[V],
    run: Range<usize>,
    item: usize,
    tile: usize,
) -> V {
    let f = |a, b| V::combine(op, a, b);
    let tile_piece = |t: Range<usize>| {
        fold(
            pieces(t, item).map(|p| fold(values[p].iter().copied(), f).expect("non-empty piece")),
            f,
        )
        .expect("non-empty tile piece")
    };
    fold(pieces(run, tile).map(tile_piece), f).expect("non-empty run")
}

/// Each run's key and the reduction of its values by `op` in the canonical order (CUB's
/// `DeviceReduce::ReduceByKey`); `values` has one value per key.
pub fn reduce_by_key<K: Element, V: Reduce>(
    op: ReduceOp,
    keys: &[K],
    values: &[V],
) -> (Vec<K>, Vec<V>) {
    assert_eq!(keys.len(), values.len(), "one value per key");
    let (k, v) = (K::KIND.size(), V::KIND.size());
    let (item, tile) = (items(k, v) as usize, tile(k, v));
    runs(keys)
        .map(|r| (keys[r.start], run_value(op, values, r, item, tile)))
        .unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_compare_bits() {
        let keys = [0.0f32, -0.0, -0.0, f32::NAN, f32::NAN, 1.0];
        assert_eq!(
            runs(&keys).collect::<Vec<_>>(),
            vec![0..1, 1..3, 3..5, 5..6]
        );
        assert_eq!(run_length(&keys).1, vec![1, 2, 2, 1]);
        assert_eq!(runs::<u32>(&[]).count(), 0);
    }

    #[test]
    fn pieces_split_at_multiples() {
        let p: Vec<_> = pieces(5..40, 16).collect();
        assert_eq!(p, vec![5..16, 16..32, 32..40]);
    }

    #[test]
    fn a_run_folds_its_pieces_left_to_right() {
        // Thread pieces of 2, tile pieces of 4: (((1 - 2) - 3) ...) written with a
        // non-associative operation shows the grouping: sums of floats that round.
        let big = 16_777_216.0f32;
        let values = [big, 1.0, 1.0, 1.0, 1.0, 1.0];
        let v = run_value(ReduceOp::Sum, &values, 0..6, 2, 4);
        // Thread pieces: big+1 = big, 1+1 = 2, 1+1 = 2; tile 0: big + 2 = big + 2; tile 1: 2.
        assert_eq!(v, big + 4.0);
        let left = values.iter().skip(1).fold(big, |a, &b| a + b);
        assert_eq!(left, big);
    }
}
