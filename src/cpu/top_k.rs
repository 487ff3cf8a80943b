//! CPU twin of `shaders/top_k.comp` and `cuda/top_k.cu`: the first `k` places of the stable
//! argsort ([`crate::cpu::sort::argsort`]) over every bit, so the keys come sorted in the
//! sort's order (IEEE totalOrder for floats) and equal keys by their input index.

use crate::cpu::sort::argsort;
use crate::element::Element;
use crate::sort::SortOrder;

/// The input indices of the `k` smallest (`Ascending`) or largest (`Descending`) keys, in that
/// order, ties by the lower index.
pub fn top_k_indices<K: Element>(keys: &[K], k: usize, order: SortOrder) -> Vec<usize> {
    let mut idx = argsort(keys, order, 0..K::KIND.size() as u32 * 8);
    idx.truncate(k);
    idx
}

/// The `k` smallest or largest keys, sorted.
pub fn top_k<K: Element>(keys: &[K], k: usize, order: SortOrder) -> Vec<K> {
    top_k_indices(keys, k, order)
        .into_iter()
        .map(|i| keys[i])
        .collect()
}

/// The `k` smallest or largest keys, sorted, with their values.
pub fn top_k_pairs<K: Element, V: Element>(
    keys: &[K],
    values: &[V],
    k: usize,
    order: SortOrder,
) -> (Vec<K>, Vec<V>) {
    top_k_indices(keys, k, order)
        .into_iter()
        .map(|i| (keys[i], values[i]))
        .unzip()
}
