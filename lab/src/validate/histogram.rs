//! Histogram cases: every sample type with `u32` and `u64` counts, bin counts from 1 to past
//! what shared memory holds (the global-memory path), ranges whose width the bins divide and
//! ones they do not (the 64-bit long division), and samples of several patterns: spread over
//! the range and beyond it, all in one bin, on the bins' edges, all outside, and for floats
//! hard values (NaN payloads, ±∞, ±0, subnormals). Every count is compared with the CPU twin,
//! into counts poisoned first.

use super::{check_case, CaseReport, Tally};
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, HardValues, Rng};
use xwarp::error::Result;
use xwarp::histogram::{self, Sample, SHARED_BINS};

/// How a case's samples are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SamplePattern {
    /// Uniform over a range a quarter wider than `[lower, upper)` on each side.
    Spread,
    /// Every sample in one bin (a random one).
    OneBin,
    /// Every sample on a bin's lower edge (`lower + k · width`), and `upper` itself.
    Edges,
    /// Every sample below `lower` or at or above `upper`.
    Outside,
    /// Hard values: for floats NaN payloads, ±∞, ±0, subnormals and every magnitude; for
    /// integers the edge values.
    Hard,
}

impl SamplePattern {
    /// Every pattern.
    pub const ALL: [SamplePattern; 5] = [
        SamplePattern::Spread,
        SamplePattern::OneBin,
        SamplePattern::Edges,
        SamplePattern::Outside,
        SamplePattern::Hard,
    ];
}

impl fmt::Display for SamplePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SamplePattern::Spread => "spread",
            SamplePattern::OneBin => "one bin",
            SamplePattern::Edges => "bin edges",
            SamplePattern::Outside => "outside",
            SamplePattern::Hard => "hard",
        })
    }
}

/// Which range a case counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeKind {
    /// `[-1000, 3000)` (unsigned: `[1000, 5000)`): widths the usual bin counts divide.
    Small,
    /// Most of the type's range (integers `[MIN + 3, MAX - 5)`, floats `[-1e30, 3e30)`): widths
    /// no bin count divides, 64-bit products.
    Wide,
}

/// One histogram case.
#[derive(Clone, Copy, Debug)]
pub struct HistogramCase {
    /// Sample type.
    pub elem: ElemKind,
    /// `u32` or `u64` counts.
    pub wide_counts: bool,
    /// Number of bins.
    pub bins: usize,
    /// The range.
    pub range: RangeKind,
    /// The samples.
    pub pattern: SamplePattern,
    /// Number of samples.
    pub n: usize,
}

impl fmt::Display for HistogramCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "histogram {} counts {} bins {} {:?} range, {} samples n={}",
            self.elem,
            if self.wide_counts { "u64" } else { "u32" },
            self.bins,
            self.range,
            self.pattern,
            self.n
        )
    }
}

/// The lengths: empty, one, a partial warp, a warp and one, a tile and one, and about a
/// million.
pub const HISTOGRAM_LENGTHS: [usize; 6] = [0, 1, 31, 33, 4097, 1_000_003];

/// The bin counts: one, a prime, a power of two, the most shared memory holds, and more (device
/// memory).
pub const BIN_COUNTS: [usize; 5] = [1, 7, 256, SHARED_BINS, SHARED_BINS + 904];

/// Every case: each sample type, count type and pattern at every length with 256 bins over the
/// small range; each bin count over both ranges; the long lengths with both ranges (fewer in
/// `quick` mode). `large` adds 2^24 + 1 samples.
pub fn histogram_cases(quick: bool, large: bool) -> Vec<HistogramCase> {
    let lengths: &[usize] = if quick {
        &[0, 1, 33, 4097]
    } else {
        &HISTOGRAM_LENGTHS
    };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        for wide_counts in [false, true] {
            let case = |bins, range, pattern, n| HistogramCase {
                elem,
                wide_counts,
                bins,
                range,
                pattern,
                n,
            };
            for pattern in SamplePattern::ALL {
                for &n in lengths {
                    cases.push(case(256, RangeKind::Small, pattern, n));
                }
            }
            for bins in BIN_COUNTS {
                for range in [RangeKind::Small, RangeKind::Wide] {
                    for pattern in [SamplePattern::Spread, SamplePattern::Edges] {
                        cases.push(case(bins, range, pattern, 4097));
                    }
                }
            }
            if !quick {
                cases.push(case(7, RangeKind::Wide, SamplePattern::Spread, 1_000_003));
                cases.push(case(
                    SHARED_BINS + 904,
                    RangeKind::Small,
                    SamplePattern::OneBin,
                    1_000_003,
                ));
            }
            if large {
                cases.push(case(
                    256,
                    RangeKind::Small,
                    SamplePattern::Spread,
                    (1 << 24) + 1,
                ));
                cases.push(case(
                    256,
                    RangeKind::Small,
                    SamplePattern::OneBin,
                    (1 << 24) + 1,
                ));
            }
        }
    }
    cases
}

/// The sample types with what the cases need of them.
pub trait HistogramSample: Sample {
    /// `[lower, upper)` of `range`.
    fn range(range: RangeKind) -> (Self, Self);
    /// A value drawn uniformly between `a` and `b` (roughly, for floats).
    fn between(a: Self, b: Self, rng: &mut Rng) -> Self;
    /// The lower edge of bin `k` of `bins` over `[lower, upper)`: the least value in it.
    fn edge(lower: Self, upper: Self, bins: usize, k: usize) -> Self;
    /// A value below `lower` or at or above `upper`.
    fn outside(lower: Self, upper: Self, rng: &mut Rng) -> Self;
}

macro_rules! int_sample {
    ($($t:ty),*) => {$(
        impl HistogramSample for $t {
            fn range(range: RangeKind) -> (Self, Self) {
                match (range, <$t>::MIN == 0) {
                    (RangeKind::Small, false) => ((-1000i32) as $t, 3000 as $t),
                    (RangeKind::Small, true) => (1000 as $t, 5000 as $t),
                    (RangeKind::Wide, _) => (<$t>::MIN + 3, <$t>::MAX - 5),
                }
            }
            fn between(a: Self, b: Self, rng: &mut Rng) -> Self {
                let span = b.wrapping_sub(a) as u64;
                a.wrapping_add((rng.next_u64() % span.max(1)) as $t)
            }
            fn edge(lower: Self, upper: Self, bins: usize, k: usize) -> Self {
                // The least d with floor(d * bins / range) >= k: ceil(k * range / bins).
                let range = upper.wrapping_sub(lower) as u64 as u128;
                let d = ((k as u128 * range).div_ceil(bins as u128)) as u64;
                lower.wrapping_add(d as $t)
            }
            fn outside(lower: Self, upper: Self, rng: &mut Rng) -> Self {
                match rng.below(4) {
                    0 if lower > <$t>::MIN => lower - 1,
                    1 => upper,
                    2 if upper < <$t>::MAX => upper + 1,
                    _ => <$t>::MAX,
                }
            }
        }
    )*};
}
int_sample!(i32, u32, i64, u64);

macro_rules! float_sample {
    ($($t:ty),*) => {$(
        impl HistogramSample for $t {
            fn range(range: RangeKind) -> (Self, Self) {
                match range {
                    RangeKind::Small => (-1000.0, 3000.0),
                    RangeKind::Wide => (-1e30, 3e30),
                }
            }
            fn between(a: Self, b: Self, rng: &mut Rng) -> Self {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                (a as f64 + (b as f64 - a as f64) * u) as $t
            }
            fn edge(lower: Self, upper: Self, bins: usize, k: usize) -> Self {
                // The least value whose bin is at least k, by bisection over the values between
                // lower and upper (the bin never decreases as the value grows).
                if k == 0 {
                    return lower;
                }
                let (mut lo, mut hi) = (lower, upper);
                for _ in 0..200 {
                    let mid = lo + (hi - lo) / 2.0;
                    if mid <= lo || mid >= hi {
                        break;
                    }
                    match <$t>::bin(mid, lower, upper, bins) {
                        Some(b) if b >= k => hi = mid,
                        _ => lo = mid,
                    }
                }
                // hi is in bin >= k: step down while its predecessor is too.
                let mut v = hi;
                while v.next_down() >= lower
                    && <$t>::bin(v.next_down(), lower, upper, bins).is_some_and(|b| b >= k)
                {
                    v = v.next_down();
                }
                v
            }
            fn outside(lower: Self, upper: Self, rng: &mut Rng) -> Self {
                match rng.below(5) {
                    0 => lower - (lower.abs() + 1.0) * (rng.below(100) as $t + 1.0),
                    1 => upper,
                    2 => upper * 2.0 + 1.0,
                    3 => <$t>::NAN,
                    _ => <$t>::NEG_INFINITY,
                }
            }
        }
    )*};
}
float_sample!(f32, f64);

/// `n` samples of `pattern` for `bins` bins over `[lower, upper)`.
pub fn samples<T: HistogramSample>(
    pattern: SamplePattern,
    lower: T,
    upper: T,
    bins: usize,
    n: usize,
    rng: &mut Rng,
) -> Vec<T> {
    let edge = |rng: &mut Rng| T::edge(lower, upper, bins, rng.below(bins as u64) as usize);
    match pattern {
        SamplePattern::Spread => (0..n)
            .map(|_| {
                if rng.below(4) == 0 {
                    T::outside(lower, upper, rng)
                } else {
                    T::between(lower, upper, rng)
                }
            })
            .collect(),
        SamplePattern::OneBin => {
            let v = T::between(lower, upper, rng);
            vec![v; n]
        }
        SamplePattern::Edges => (0..n)
            .map(|_| if rng.below(16) == 0 { upper } else { edge(rng) })
            .collect(),
        SamplePattern::Outside => (0..n).map(|_| T::outside(lower, upper, rng)).collect(),
        SamplePattern::Hard => (0..n)
            .map(|_| T::random_hard(rng, HardValues::ALL))
            .collect(),
    }
}

/// Runs a histogram on `dev` into counts poisoned with `0xcdcdcdcd…`: the counts as `u64`.
pub fn run_histogram<T: Sample>(
    dev: &dyn Device,
    samples: &[T],
    bins: usize,
    lower: T,
    upper: T,
    wide_counts: bool,
) -> Result<Vec<u64>> {
    let input = DeviceVec::from_slice(dev, samples)?;
    if wide_counts {
        let mut counts = DeviceVec::<u64>::alloc(dev, bins)?;
        counts.fill(dev, 0xcdcd_cdcd_cdcd_cdcd)?;
        histogram::histogram_even(dev, &input, &mut counts, lower, upper)?;
        counts.to_vec(dev)
    } else {
        let mut counts = DeviceVec::<u32>::alloc(dev, bins)?;
        counts.fill(dev, 0xcdcd_cdcd)?;
        histogram::histogram_even(dev, &input, &mut counts, lower, upper)?;
        Ok(counts.to_vec(dev)?.into_iter().map(u64::from).collect())
    }
}

fn case_on<T: HistogramSample>(
    devices: &[(String, &dyn Device)],
    case: &HistogramCase,
    rng: &mut Rng,
) -> CaseReport {
    let (lower, upper) = T::range(case.range);
    let input = samples(case.pattern, lower, upper, case.bins, case.n, rng);
    let want = cpu::histogram::histogram_even(&input, case.bins, lower, upper);
    check_case(
        devices,
        format!("{case} [{lower:?}, {upper:?})"),
        &want,
        |dev| run_histogram(dev, &input, case.bins, lower, upper, case.wide_counts),
    )
}

/// Runs one case on every device.
pub fn histogram_case_on(
    devices: &[(String, &dyn Device)],
    case: &HistogramCase,
    rng: &mut Rng,
) -> CaseReport {
    match case.elem {
        ElemKind::I32 => case_on::<i32>(devices, case, rng),
        ElemKind::U32 => case_on::<u32>(devices, case, rng),
        ElemKind::F32 => case_on::<f32>(devices, case, rng),
        ElemKind::I64 => case_on::<i64>(devices, case, rng),
        ElemKind::U64 => case_on::<u64>(devices, case, rng),
        ElemKind::F64 => case_on::<f64>(devices, case, rng),
    }
}

/// Runs every histogram case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in histogram_cases(quick, large) {
        let r = histogram_case_on(devices, &case, rng);
        tally.add(&r, report);
    }
}
