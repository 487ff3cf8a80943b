//! CPU twin of `shaders/histogram.comp` and `cuda/histogram.cu`: each sample's bin by the
//! definition in [`crate::spec::histogram`], counted.

use crate::spec::histogram::Sample;

/// The counts of `bins` even bins over `[lower, upper)` (the parameters checked by
/// [`Sample::plan`]).
pub fn histogram_even<T: Sample>(samples: &[T], bins: usize, lower: T, upper: T) -> Vec<u64> {
    let mut counts = vec![0u64; bins];
    for &x in samples {
        if let Some(b) = T::bin(x, lower, upper, bins) {
            counts[b] += 1;
        }
    }
    counts
}
