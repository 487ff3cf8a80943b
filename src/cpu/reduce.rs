//! CPU twin of `shaders/reduce.comp` and `cuda/reduce.cu`: the same operators, identities and
//! association orders, so float results agree bit for bit.

pub use crate::spec::reduce::Reduce;
use crate::spec::reduce::{ReduceOp, BLOCK, ITEMS, TILE};

const WARP: usize = 32;

/// The value every lane ends with after the xor butterfly over `lanes` (a power of two): a
/// pairwise tree, lower half on the left.
fn butterfly<T: Reduce>(op: ReduceOp, lanes: &[T]) -> T {
    let mut level = lanes.to_vec();
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|p| T::combine(op, p[0], p[1]))
            .collect();
    }
    level[0]
}

/// Lane 0's value after CUDA's shift-down reduce of one 32-lane warp.
fn warp_down<T: Reduce>(op: ReduceOp, lanes: &[T; WARP]) -> T {
    let mut v = *lanes;
    let mut s = WARP / 2;
    while s > 0 {
        // A lane whose source lies past the warp combines with its own value.
        v = std::array::from_fn(|l| {
            T::combine(op, v[l], if l + s < WARP { v[l + s] } else { v[l] })
        });
        s /= 2;
    }
    v[0]
}

fn padded<T: Reduce>(op: ReduceOp, data: &[T], base: usize) -> [T; WARP] {
    std::array::from_fn(|l| {
        data.get(base + l)
            .copied()
            .unwrap_or_else(|| T::identity(op))
    })
}

/// Warp butterfly: every element gets its warp's total (missing lanes hold the identity).
pub fn warp_reduce_butterfly<T: Reduce>(op: ReduceOp, data: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    for (w, warp) in data.chunks(WARP).enumerate() {
        let total = butterfly(op, &padded(op, data, w * WARP));
        out.extend(std::iter::repeat_n(total, warp.len()));
    }
    out
}

/// Warp shift-down: one total per warp.
pub fn warp_reduce_down<T: Reduce>(op: ReduceOp, data: &[T]) -> Vec<T> {
    (0..data.len().div_ceil(WARP))
        .map(|w| warp_down(op, &padded(op, data, w * WARP)))
        .collect()
}

/// Block reduce: shift-down per warp, then the first warp reduces the warp totals; one total
/// per block of [`BLOCK`] elements.
pub fn block_reduce<T: Reduce>(op: ReduceOp, data: &[T]) -> Vec<T> {
    data.chunks(BLOCK as usize)
        .map(|block| {
            let warps = BLOCK as usize / WARP;
            let totals: Vec<T> = (0..warps)
                .map(|w| warp_down(op, &padded(op, block, w * WARP)))
                .collect();
            warp_down(op, &padded(op, &totals, 0))
        })
        .collect()
}

/// One device-reduce tile: each of the [`BLOCK`] threads folds [`ITEMS`] elements strided by
/// [`BLOCK`], in order from the identity; then the butterfly over the threads.
pub fn tile<T: Reduce>(op: ReduceOp, data: &[T]) -> T {
    let block = BLOCK as usize;
    let threads: Vec<T> = (0..block)
        .map(|t| {
            (0..ITEMS as usize)
                .filter_map(|k| data.get(k * block + t))
                .fold(T::identity(op), |acc, &x| T::combine(op, acc, x))
        })
        .collect();
    butterfly(op, &threads)
}

/// Device reduce: tiles of [`TILE`] elements, then tiles of the tile totals, until one value
/// remains; the identity for an empty input.
pub fn device_reduce<T: Reduce>(op: ReduceOp, data: &[T]) -> T {
    if data.len() <= TILE {
        return tile(op, data);
    }
    let totals: Vec<T> = data.chunks(TILE).map(|t| tile(op, t)).collect();
    device_reduce(op, &totals)
}
