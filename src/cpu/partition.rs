//! CPU twin of `shaders/partition.comp` and `cuda/partition.cu`: per tile of
//! [`tile_elems`] elements the passing count, their exclusive prefix over the tiles, then each
//! tile's passing elements at the prefix and its failing ones after every passing element and
//! the failing elements of the tiles before it, both in input order.

use crate::spec::compact::tile_elems;
use crate::spec::vote::{Predicate, PredicateElement};

/// The stable partition of `input` by `pred`: the number of passing elements, and the output
/// (the passing elements in input order, then the others in input order).
pub fn partition<T: PredicateElement>(pred: Predicate<T>, input: &[T]) -> (usize, Vec<T>) {
    let tile = tile_elems(T::KIND.size());
    // COUNT, then the exclusive scan of the tile counts.
    let counts: Vec<usize> = input
        .chunks(tile)
        .map(|t| t.iter().filter(|&&v| pred.eval(v)).count())
        .collect();
    let selected: usize = counts.iter().sum();
    let mut out = vec![T::zeroed(); input.len()];
    // SCATTER.
    let mut prefix = 0;
    for (t, (chunk, &count)) in input.chunks(tile).zip(&counts).enumerate() {
        let mut pass = prefix;
        let mut fail = selected + t * tile - prefix;
        for &v in chunk {
            if pred.eval(v) {
                out[pass] = v;
                pass += 1;
            } else {
                out[fail] = v;
                fail += 1;
            }
        }
        prefix += count;
    }
    (selected, out)
}
