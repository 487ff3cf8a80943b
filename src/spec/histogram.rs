//! What the even-bin histogram computes: which bin a sample falls in, for every sample type,
//! shared by the algorithm layer ([`crate::histogram`]) and the CPU reference
//! ([`crate::cpu::histogram`]).
//!
//! `bins` bins split `[lower, upper)` evenly (CUB's `HistogramEven` with `bins + 1` levels).
//! A sample `x` with `lower ≤ x < upper` falls in bin
//! - integers: `floor((x - lower) · bins / (upper - lower))`, exactly (no rounding anywhere);
//! - floats: `floor((x - lower) · scale)` with `scale = bins / (upper - lower)`, the difference,
//!   the quotient and the product each rounded to the sample's type on its own (no fused
//!   multiply-add); a result of `bins` or more (rounding at the top edge) counts in the last
//!   bin.
//!
//! Samples outside `[lower, upper)` are not counted, nor is NaN (it compares false with
//! everything). For floats `lower` and `upper` are finite with a finite, nonzero `scale`.

use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};

/// The most bins one histogram counts.
pub const MAX_BINS: usize = 1 << 24;

/// The sample types of the histogram (every element type).
pub trait Sample: Element + PartialOrd {
    /// The words of the kernel parameters for `[lower, upper)` in `bins` bins, after checking
    /// them: `(scale, range, width)` as bit patterns (`scale` for floats; `range = upper -
    /// lower` and `width = range / bins` when `bins` divides `range`, else 0, for integers).
    fn plan(lower: Self, upper: Self, bins: usize) -> Result<(u64, u64, u64)>;

    /// The bin of `x`, if it is counted.
    fn bin(x: Self, lower: Self, upper: Self, bins: usize) -> Option<usize>;
}

fn check_bins(bins: usize) -> Result<()> {
    if bins == 0 || bins > MAX_BINS {
        return Err(Error::invalid(
            "counts.len()",
            bins,
            format!("1..={MAX_BINS} (the number of bins)"),
        ));
    }
    Ok(())
}

fn check_order<T: Element + PartialOrd>(lower: T, upper: T) -> Result<()> {
    if lower.partial_cmp(&upper) != Some(std::cmp::Ordering::Less) {
        return Err(Error::invalid(
            "lower",
            format!("{lower:?} (upper {upper:?})"),
            "below upper: the range [lower, upper) must hold a value",
        ));
    }
    Ok(())
}

macro_rules! int_sample {
    ($($t:ty: $u:ty),*) => {$(
        impl Sample for $t {
            fn plan(lower: Self, upper: Self, bins: usize) -> Result<(u64, u64, u64)> {
                check_bins(bins)?;
                check_order(lower, upper)?;
                // The difference in the unsigned type of the same width, exact.
                let range = upper.wrapping_sub(lower) as $u as u64;
                let width = if range % bins as u64 == 0 { range / bins as u64 } else { 0 };
                Ok((0, range, width))
            }

            fn bin(x: Self, lower: Self, upper: Self, bins: usize) -> Option<usize> {
                if !(lower <= x && x < upper) {
                    return None;
                }
                let range = upper.wrapping_sub(lower) as $u as u128;
                let d = x.wrapping_sub(lower) as $u as u128;
                Some((d * bins as u128 / range) as usize)
            }
        }
    )*};
}
int_sample!(i32: u32, u32: u32, i64: u64, u64: u64);

macro_rules! float_sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn plan(lower: Self, upper: Self, bins: usize) -> Result<(u64, u64, u64)> {
                check_bins(bins)?;
                for (name, v) in [("lower", lower), ("upper", upper)] {
                    if !v.is_finite() {
                        return Err(Error::invalid(name, v, "a finite value"));
                    }
                }
                check_order(lower, upper)?;
                let scale = bins as $t / (upper - lower);
                if !scale.is_finite() || scale == 0.0 {
                    return Err(Error::invalid(
                        "upper",
                        format!("{upper:?} (lower {lower:?})"),
                        format!(
                            "a range whose width divides {bins} bins into a finite, nonzero \
                             scale (bins / (upper - lower) is {scale:?})"
                        ),
                    ));
                }
                Ok((scale.to_bits64(), 0, 0))
            }

            fn bin(x: Self, lower: Self, upper: Self, bins: usize) -> Option<usize> {
                if !(lower <= x && x < upper) {
                    return None;
                }
                let scale = bins as $t / (upper - lower);
                let b = ((x - lower) * scale).floor();
                Some((b as usize).min(bins - 1))
            }
        }
    )*};
}
float_sample!(f32, f64);

/// Whether `elem` is an integer type (whose bins the kernels compute in 64-bit arithmetic).
pub fn integer(elem: ElemKind) -> bool {
    !matches!(elem, ElemKind::F32 | ElemKind::F64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_of_every_type() {
        assert_eq!(i32::bin(-5, -10, 10, 4), Some(1));
        assert_eq!(i32::bin(10, -10, 10, 4), None);
        assert_eq!(i32::bin(i32::MAX - 1, i32::MIN, i32::MAX, 3), Some(2));
        assert_eq!(u64::bin(u64::MAX - 1, 0, u64::MAX, 1000), Some(999));
        assert_eq!(f32::bin(f32::NAN, 0.0, 1.0, 10), None);
        assert_eq!(f32::bin(-0.0, 0.0, 1.0, 10), Some(0));
        // 0.3 is 0.29999999999999998..., but (0.3 - 0) * 10 rounds to 3.0000000000000004: the
        // documented rounded product, not the exact quotient, decides.
        assert_eq!(f64::bin(0.3, 0.0, 1.0, 10), Some(3));
        assert_eq!(i64::plan(0, 100, 10).unwrap(), (0, 100, 10));
        assert_eq!(u32::plan(0, 100, 7).unwrap(), (0, 100, 0));
        assert!(f32::plan(1.0, 1.0, 3).is_err());
        assert!(f32::plan(f32::MIN, f32::MAX, 3).is_err());
        assert!(u32::plan(0, 1, 0).is_err());
    }
}
