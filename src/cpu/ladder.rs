//! CPU twin of the reduction ladder ([`crate::ladder`]; `shaders/reduce_<rung>.comp`,
//! `cuda/reduce_<rung>.cu`).
//!
//! Every rung sums integers with wrapping addition, which is associative and commutative: the
//! neighbored, interleaved, unrolled and shuffle trees all give the same bits as a plain
//! wrapping sum of the same elements. So the model of a rung is which elements each block sums
//! (its tile of `block * items` consecutive elements, the last one ragged) and the wrapping sum
//! of the partials, exactly what CUDA computes for the book's `int` kernels on any tree.

use crate::spec::ladder::LadderKernel;
use crate::spec::reduce::Reduce;

/// The element types of the ladder: the integers of the book's `reduceInteger`, summed with
/// wrapping addition (`i32`, `u32`, `i64`, `u64`).
pub trait LadderElem: Reduce {
    /// `a + b`, wrapping on overflow.
    fn wrapping_add(self, other: Self) -> Self;
}

macro_rules! ladder_elem {
    ($($t:ty),*) => {$(
        impl LadderElem for $t {
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
        }
    )*};
}
ladder_elem!(i32, u32, i64, u64);

/// The wrapping sum of `data` (0 when empty).
pub fn sum<T: LadderElem>(data: &[T]) -> T {
    data.iter().fold(T::zeroed(), |acc, &x| acc.wrapping_add(x))
}

/// The per-block partials of `kernel` at `block` threads: the wrapping sum of each tile of
/// `block * kernel.items()` consecutive elements (the last tile may be short).
pub fn block_sums<T: LadderElem>(kernel: LadderKernel, block: u32, data: &[T]) -> Vec<T> {
    data.chunks(kernel.tile(block)).map(sum).collect()
}

/// What [`crate::ladder::reduce`] leaves in `output[0]`: the wrapping sum of all of `data`.
pub fn reduce<T: LadderElem>(data: &[T]) -> T {
    sum(data)
}
