//! CPU twin of `shaders/segmented_reduce.comp` and `cuda/segmented_reduce.cu`: each segment's
//! value is the device reduce of its elements ([`crate::cpu::reduce::device_reduce`], the
//! canonical order), so an empty segment gives the identity.

use crate::cpu::reduce::device_reduce;
use crate::spec::reduce::{Reduce, ReduceOp};

/// One value per segment `offsets[s] .. offsets[s + 1]` of `input` (offsets non-decreasing and
/// at most `input.len()`).
pub fn segmented_reduce<T: Reduce>(op: ReduceOp, input: &[T], offsets: &[u32]) -> Vec<T> {
    offsets
        .windows(2)
        .map(|w| device_reduce(op, &input[w[0] as usize..w[1] as usize]))
        .collect()
}
