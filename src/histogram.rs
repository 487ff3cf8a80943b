//! Even-bin histogram (CUB's `DeviceHistogram::HistogramEven`): `bins` equal bins over
//! `[lower, upper)`, for samples of every element type, counts in `u32` or `u64`.
//!
//! Which bin a sample falls in is [`crate::spec::histogram`]: for integers exactly
//! `floor((x - lower) · bins / (upper - lower))`; for floats `floor((x - lower) · scale)` with
//! `scale = bins / (upper - lower)`, each operation rounded to the sample's type on its own (the
//! top edge's rounding counts in the last bin). Samples outside `[lower, upper)` and NaN are not
//! counted. Subnormal samples, bounds and differences bin as IEEE 754 says on every device:
//! where the driver flushes them (`DeviceInfo::subnormals_f32` is `Emulated`) the float
//! comparisons and the two operations run in the exact arithmetic the other float kernels use.
//!
//! Each workgroup counts a contiguous chunk of samples into bins in shared memory (up to
//! [`SHARED_BINS`] bins; more go straight to device memory) and then adds its nonzero bins to
//! the totals, one atomic each. Where the totals (and a count of the workgroups done) fit the
//! device's counters buffer ([`Device::counter_slot`]), they are kept there and the last
//! workgroup done writes them to the output and zeroes them again: one launch a call, with no
//! clearing launch and no temporary. Otherwise (more than [`SHARED_BINS`] bins, or a device
//! without counters) the totals are the output itself (`u32` counts) or a temporary of `u32`
//! counts widened to the output (`u64`), zeroed by a clearing launch first.
//!
//! An invocation counts its eight samples of a step by runs of equal bins, one atomic a run,
//! and its last run warp-aggregated: where every invocation of the subgroup ends on the same
//! bin with the same count, one atomic adds them all; so samples that all fall in one bin do
//! not serialize on one counter.
//!
//! On a device that flushes subnormals (`Subnormals::Emulated`) float samples bin with the
//! driver's own arithmetic where the bounds guarantee that flushing cannot move a sample (both
//! bounds normal and the lower one zero or at least `2^-101` in magnitude for `f32`, `2^-968`
//! for `f64`: see `fast_bins`); between other bounds every sample's comparisons and operations
//! are tested for subnormal operands and computed exactly where one is.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::histogram::histogram_even_host;
//! let dev = xwarp::backend::open_default()?;
//! let samples = [0.5f32, 1.5, 1.7, 9.0, -1.0, f32::NAN, 10.0];
//! let counts: Vec<u32> = histogram_even_host(&*dev, &samples, 5, 0.0, 10.0)?;
//! assert_eq!(counts, [3, 0, 0, 0, 1]); // 0.5, 1.5 and 1.7 in [0, 2); 9.0 in [8, 10)
//! # Ok(()) }
//! ```
//!
//! # Limits
//! At most [`plan::MAX_LAUNCH_ELEMS`] samples (no more than one binding spans) and
//! [`MAX_BINS`] bins. Integer samples need 64-bit integer arithmetic in kernels (Vulkan
//! `shaderInt64`). Every check happens before anything is launched, so a refused call leaves
//! its counts untouched.

use crate::device::{BackendKind, Binding, Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::element::{ElemKind, Element};
use crate::error::Result;
use crate::kernels::HistogramParams;
use crate::plan;
pub use crate::spec::histogram::{Sample, MAX_BINS};

/// The most bins a workgroup counts in shared memory (`SHARED_BINS` in the kernels).
pub const SHARED_BINS: usize = 4096;
/// Loads in flight per invocation (`BATCH` in the kernels).
const BATCH: usize = 8;
/// Threads per workgroup.
const BLOCK: u32 = plan::BLOCK;

/// The steps of the plan: `OP` in `shaders/histogram.comp` and `cuda/histogram.cu`.
#[derive(Clone, Copy)]
enum Step {
    Clear = 0,
    Shared = 1,
    Global = 2,
    Widen = 3,
    SelfClearing = 4,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The count types: `u32` or `u64`.
pub trait Count: Element + sealed::Sealed {}
impl Count for u32 {}
impl Count for u64 {}

/// Counts the samples of `samples` in `counts.len()` even bins over `[lower, upper)`: `counts[b]`
/// gets the number of samples in bin `b` (every bin is written). `counts` is a buffer of its
/// own.
pub fn histogram_even<T: Sample, C: Count>(
    dev: &dyn Device,
    samples: &DeviceVec<T>,
    counts: &mut DeviceVec<C>,
    lower: T,
    upper: T,
) -> Result<()> {
    let bins = counts.len();
    let (scale, range, width) = T::plan(lower, upper, bins)?;
    plan::check_distinct(
        "histogram",
        &[("counts", counts.raw())],
        &[("samples", samples.raw())],
    )?;
    let info = dev.info();
    let n = samples.len();
    plan::check_launch_len(info, "samples.len()", n, T::KIND.size())?;
    let ops = SubgroupFeatures::BASIC
        | SubgroupFeatures::VOTE
        | SubgroupFeatures::BALLOT
        | SubgroupFeatures::SHUFFLE;
    plan::require(info, T::KIND, ops)?;
    if crate::spec::histogram::integer(T::KIND) {
        // The bins of integer samples are computed in 64-bit arithmetic.
        plan::require(info, ElemKind::U64, ops)?;
    }
    let wide = C::KIND.size() == 8;
    // Bins counted in shared memory whose totals (and a count of the workgroups done) fit the
    // device's counters buffer take one launch: no clearing launch, no widening launch and no
    // scratch (Step::SelfClearing).
    let slot = (n > 0 && bins <= SHARED_BINS)
        .then(|| dev.counter_slot(4 * (bins as u64 + 1)))
        .flatten();
    let bytes = |v: T| v.to_bits64();
    let word = |w: u64| (w as u32, (w >> 32) as u32);
    let (lower_lo, lower_hi) = word(bytes(lower));
    let (upper_lo, upper_hi) = word(bytes(upper));
    let (scale_lo, scale_hi) = word(scale);
    let (range_lo, range_hi) = word(range);
    let (width_lo, width_hi) = word(width);
    // Which of the exact float variant's ways of binning the bounds allow (the others ignore
    // it, so they compile one pipeline).
    let exact = info.emulates_subnormals(T::KIND);
    let fast = fast_bins(T::KIND, bytes(lower), bytes(upper), scale);
    let step = BATCH * BLOCK as usize;
    let chunk = n
        .div_ceil(crate::tuning::histogram_max_groups(n))
        .next_multiple_of(step)
        .max(step);
    let params = HistogramParams {
        n: n as u32,
        bins: bins as u32,
        chunk: chunk as u32,
        wide: u32::from(wide),
        lower_lo,
        lower_hi,
        upper_lo,
        upper_hi,
        scale_lo,
        scale_hi,
        range_lo,
        range_hi,
        width_lo,
        width_hi,
        ..HistogramParams::default()
    };
    let run = |step: Step, groups: usize, bindings: &[Binding<'_>]| -> Result<()> {
        // Shared memory for the bins only where they are counted there, and no more than they
        // need (fewer bytes keep more workgroups on an SM).
        let shared_words = match step {
            Step::Shared | Step::SelfClearing => {
                bins.next_power_of_two().clamp(64, SHARED_BINS) as u32
            }
            _ => 64,
        };
        let mut consts = vec![("OP", step as u32), ("SHARED_WORDS", shared_words)];
        // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs); only
        // the Vulkan twin's exact float variant FAST_BINS (CUDA keeps subnormals).
        if info.backend == BackendKind::Cuda {
            consts.push(("BLOCK", BLOCK));
        } else if exact && matches!(step, Step::Shared | Step::Global | Step::SelfClearing) {
            consts.push(("FAST_BINS", fast));
        }
        dev.launch(&Launch {
            kernel: Kernel {
                name: "histogram",
                elem: T::KIND,
                consts: &consts,
            },
            block: BLOCK,
            groups: plan::grid(info, groups as u64)?,
            bindings,
            params: bytemuck::bytes_of(&params),
        })
    };
    let groups = n.div_ceil(chunk);
    if let Some(slot) = slot {
        let totals = Binding {
            buffer: slot,
            offset: 0,
            bytes: 4 * (bins as u64 + 1),
        };
        let bindings = [samples.binding(0, n), totals, counts.binding(0, bins)];
        return run(Step::SelfClearing, groups, &bindings);
    }
    let scratch = if wide {
        Some(DeviceVec::<u32>::alloc(dev, bins)?)
    } else {
        None
    };
    // 32-bit counts: the output itself, or the scratch a u64 output is widened from.
    let narrow = match &scratch {
        Some(s) => s.binding(0, bins),
        None => counts.binding(0, bins),
    };
    let bindings = [samples.binding(0, n), narrow, counts.binding(0, bins)];
    let per_bin = bins.div_ceil(BLOCK as usize);
    run(Step::Clear, per_bin, &bindings)?;
    if n > 0 {
        let step = if bins <= SHARED_BINS {
            Step::Shared
        } else {
            Step::Global
        };
        run(step, groups, &bindings)?;
    }
    if wide {
        run(Step::Widen, per_bin, &bindings)?;
    }
    Ok(())
}

/// How the exact float variant (a device that flushes subnormals, `Subnormals::Emulated`) may
/// bin samples between the float bounds with bits `lower` and `upper` and the scale with bits
/// `scale`: `FAST_BINS` of `shaders/histogram.comp`.
///
/// - 1: the driver's arithmetic alone, whatever it does with subnormals: both bounds normal,
///   `|lower| ≥ 2^(e + p + 2)` (`2^-101` for `f32`, `2^-968` for `f64`; smallest normal
///   `2^e`, `p` fraction bits) and the scale normal. A difference `x - lower` of a sample at
///   least half as large as `lower` is of two multiples of `2^e`, so zero or normal, and of a
///   smaller sample at least `|lower| / 2`: never subnormal. A subnormal sample lies strictly
///   between `-2^e` and `2^e`, below half the spacing of floats next to `lower`, so it compares
///   with the bounds as zero does and `x - lower` rounds to `-lower` as `0 - lower` is; a
///   product below the normal range floors to bin 0 flushed or not.
/// - 2: the same with `lower = ±0` and the scale below `2^-e` (`2^126`, `f64`: `2^1022`): a
///   positive subnormal sample then lands in bin 0 either way (its product with the scale
///   rounds below 1), a negative one is outside the range, which the kernel tests by its bits.
/// - 0: otherwise (a subnormal or tiny bound or scale): every sample's operations are tested
///   for subnormal operands and run exactly where one is.
///
/// Integer kinds give 0 (they have no such variant).
fn fast_bins(kind: ElemKind, lower: u64, upper: u64, scale: u64) -> u32 {
    // (exponent bits, fraction bits) of the type.
    let (exp_bits, frac_bits) = match kind {
        ElemKind::F32 => (8u32, 23u32),
        ElemKind::F64 => (11, 52),
        _ => return 0,
    };
    let bias = (1i64 << (exp_bits - 1)) - 1;
    let sign = 1u64 << (exp_bits + frac_bits);
    let exponent = |bits: u64| ((bits & !sign) >> frac_bits) as i64 - bias;
    let max_exp = (1i64 << exp_bits) - 1 - bias;
    let min_exp = 1 - bias;
    let normal = |bits: u64| (min_exp..max_exp).contains(&exponent(bits));
    if !(normal(upper) && normal(scale)) {
        return 0;
    }
    if normal(lower) && exponent(lower) >= min_exp + frac_bits as i64 + 2 {
        return 1;
    }
    if lower & !sign == 0 && exponent(scale) < max_exp - 2 {
        return 2;
    }
    0
}

/// [`histogram_even`] of host samples into `bins` bins.
pub fn histogram_even_host<T: Sample, C: Count>(
    dev: &dyn Device,
    samples: &[T],
    bins: usize,
    lower: T,
    upper: T,
) -> Result<Vec<C>> {
    T::plan(lower, upper, bins)?;
    let input = DeviceVec::from_slice(dev, samples)?;
    let mut counts = DeviceVec::alloc(dev, bins)?;
    histogram_even(dev, &input, &mut counts, lower, upper)?;
    counts.to_vec(dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which flushes a driver's arithmetic may apply: to operands (`daz`), to results (`ftz`).
    #[derive(Clone, Copy)]
    struct Flushes {
        daz: bool,
        ftz: bool,
    }

    macro_rules! fast_path_model {
        ($name:ident, $t:ty) => {
            /// The exact variant's bin under `FAST_BINS = fast` on a driver with `flushes`.
            fn $name(
                fast: u32,
                f: Flushes,
                x: $t,
                lower: $t,
                upper: $t,
                bins: usize,
            ) -> Option<usize> {
                let flush = |v: $t| {
                    if v != 0.0 && v.abs() < <$t>::MIN_POSITIVE {
                        0.0 * v.signum()
                    } else {
                        v
                    }
                };
                let arg = |v: $t| if f.daz { flush(v) } else { v };
                let res = |v: $t| if f.ftz { flush(v) } else { v };
                if fast == 2 && x.is_sign_negative() && x != 0.0 && x.abs() < <$t>::MIN_POSITIVE {
                    return None;
                }
                if !(arg(lower) <= arg(x) && arg(x) < arg(upper)) {
                    return None;
                }
                let (scale, _, _) = <$t as Sample>::plan(lower, upper, bins).unwrap();
                let scale = <$t>::from_bits(scale as _);
                let d = res(arg(x) - arg(lower));
                let r = res(arg(d) * arg(scale));
                Some((r.floor() as usize).min(bins - 1))
            }
        };
    }
    fast_path_model!(model_f32, f32);
    fast_path_model!(model_f64, f64);

    /// A small deterministic generator (xorshift).
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    macro_rules! fast_bins_check {
        ($test:ident, $t:ty, $kind:expr, $model:ident, $bits:ty, $tiny:expr) => {
            #[test]
            fn $test() {
                let min = <$t>::MIN_POSITIVE;
                let sub = <$t>::from_bits(1);
                let tiny: $t = $tiny; // 2^(e + p + 2), the least |lower| of FAST_BINS 1
                let mut bounds: Vec<$t> = vec![
                    0.0, min, sub, sub * 3.0, min * 0.75, tiny, tiny * 0.5, tiny * 0.75,
                    tiny * 2.0, tiny * 1.5, min * 2.0, 1.0, 0.5, 3.0, 536870912.0, 1e30,
                    <$t>::MAX / 4.0,
                ];
                bounds.extend(bounds.clone().into_iter().map(|v| -v));
                let mut state = 0x9e37_79b9_7f4a_7c15u64;
                let mut seen = [0usize; 3];
                for &lower in &bounds {
                    for &upper in &bounds {
                        for bins in [1usize, 3, 256] {
                            let Ok((scale, _, _)) = <$t as Sample>::plan(lower, upper, bins) else {
                                continue;
                            };
                            let fast = fast_bins(
                                $kind,
                                lower.to_bits() as u64,
                                upper.to_bits() as u64,
                                scale,
                            );
                            seen[fast as usize] += 1;
                            if fast == 0 {
                                continue;
                            }
                            // Samples: subnormals of both signs, zeros, the bounds and their
                            // neighbours, random bit patterns and random values in the range.
                            let mut xs: Vec<$t> = vec![0.0, -0.0, sub, -sub, min, -min,
                                min * 0.5, -min * 0.5, min * 0.999, -min * 0.999, lower, upper,
                                <$t>::NAN];
                            for v in [lower, upper] {
                                let b = v.to_bits();
                                for k in 1..4 {
                                    xs.push(<$t>::from_bits(b.wrapping_add(k)));
                                    xs.push(<$t>::from_bits(b.wrapping_sub(k)));
                                }
                            }
                            for _ in 0..200 {
                                let r = next(&mut state);
                                xs.push(<$t>::from_bits(r as $bits));
                                let u = (r >> 11) as $t / (1u64 << 53) as $t;
                                xs.push(lower + (upper - lower) * u);
                                xs.push(<$t>::from_bits((r as $bits) & (<$t>::MIN_POSITIVE.to_bits() - 1)));
                            }
                            for &x in &xs {
                                let want = <$t as Sample>::bin(x, lower, upper, bins);
                                for (daz, ftz) in [(false, false), (true, false), (false, true), (true, true)] {
                                    let got = $model(fast, Flushes { daz, ftz }, x, lower, upper, bins);
                                    assert_eq!(
                                        got, want,
                                        "x {x:e} in [{lower:e}, {upper:e}), {bins} bins, FAST_BINS {fast}, daz {daz}, ftz {ftz}"
                                    );
                                }
                            }
                        }
                    }
                }
                // Every way was chosen by some bounds.
                assert!(seen.iter().all(|&c| c > 0), "{seen:?}");
            }
        };
    }
    fast_bins_check!(
        fast_bins_f32_agree_with_ieee_under_flushes,
        f32,
        ElemKind::F32,
        model_f32,
        u32,
        2f32.powi(-101)
    );
    fast_bins_check!(
        fast_bins_f64_agree_with_ieee_under_flushes,
        f64,
        ElemKind::F64,
        model_f64,
        u64,
        2f64.powi(-968)
    );

    #[test]
    fn fast_bins_of_common_ranges() {
        let f = |l: f32, u: f32| {
            let (s, _, _) = <f32 as Sample>::plan(l, u, 256).unwrap();
            fast_bins(ElemKind::F32, l.to_bits() as u64, u.to_bits() as u64, s)
        };
        assert_eq!(f(-536870912.0, 536870912.0), 1);
        assert_eq!(f(-1.0, 1.0), 1);
        assert_eq!(f(2f32.powi(-101), 1.0), 1);
        assert_eq!(f(2f32.powi(-102), 1.0), 0);
        assert_eq!(f(0.0, 1.0), 2);
        assert_eq!(f(-0.0, 1.0), 2);
        assert_eq!(f(-1.0, 0.0), 0);
        assert_eq!(f(-1.0, f32::from_bits(5)), 0);
        assert_eq!(fast_bins(ElemKind::I32, 0, 1, 0), 0);
    }
}
