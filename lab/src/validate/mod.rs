//! Every kernel on every given device against the CPU reference and against each other: what
//! `xwarp validate` runs. Inputs are fresh random values from a seed the report prints, output
//! buffers are poisoned before each run so unwritten elements are caught, and results are
//! compared bit for bit (where a sum or product gives NaN, as any NaN: see
//! [`first_mismatch_nan_as_class`]).
//!
//! Besides representative random inputs every float operation also gets hard ones
//! ([`HardInput`]): values of every magnitude with subnormals, zeros, halves and integers at the
//! edge of exactness, NaN payloads and infinities where values are only compared or moved, and
//! inputs whose exact sums and products are subnormal. Where a device flushes subnormals
//! ([`xwarp::DeviceInfo::keeps_subnormals`]) its results are documented to differ there, so the
//! hard inputs of that type leave subnormals out on every device ([`subnormal_notes`] says so).

use std::fmt;
use xwarp::device::Device;
use xwarp::element::{ElemKind, Element, HardValues, Rng};
use xwarp::error::Result;

pub use xwarp::cpu::par::par_each;

pub mod compact;
pub mod group;
pub mod histogram;
pub mod ladder;
pub mod partition;
pub mod reduce;
pub mod roofline;
pub mod runs;
pub mod scan;
pub mod segmented_reduce;
pub mod shfl;
pub mod sort;
pub mod stencil;
pub mod throughput;
pub mod top_k;
pub mod vote;

/// Calls `$f::<T>(args)` with `T` the Rust type of an [`ElemKind`](xwarp::ElemKind).
#[macro_export]
macro_rules! with_elem {
    ($kind:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $kind {
            xwarp::ElemKind::I32 => $f::<i32>($($arg),*),
            xwarp::ElemKind::U32 => $f::<u32>($($arg),*),
            xwarp::ElemKind::F32 => $f::<f32>($($arg),*),
            xwarp::ElemKind::I64 => $f::<i64>($($arg),*),
            xwarp::ElemKind::U64 => $f::<u64>($($arg),*),
            xwarp::ElemKind::F64 => $f::<f64>($($arg),*),
        }
    };
}

/// Where a result first differs from the expected one.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Index of the first wrong element.
    pub index: usize,
    /// Expected value, formatted.
    pub expected: String,
    /// Actual value, formatted.
    pub actual: String,
    /// How many elements are wrong in all.
    pub wrong: usize,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "first wrong index {}: expected {}, got {} ({} wrong)",
            self.index, self.expected, self.actual, self.wrong
        )
    }
}

/// How a check compares a result with the expected one: [`first_mismatch`] or
/// [`first_mismatch_nan_as_class`].
pub type Compare<T> = fn(&[T], &[T]) -> Option<Mismatch>;

/// Compares bit patterns; `None` when equal.
pub fn first_mismatch<T: Element>(expected: &[T], actual: &[T]) -> Option<Mismatch> {
    mismatch_by(expected, actual, |a, b| a.to_bits64() == b.to_bits64())
}

/// Compares bit patterns, except that any NaN matches any NaN; `None` when equal.
///
/// For what a float sum or product computes (reductions, scans, the stencil): the documented
/// rule is that a sum or product that meets a NaN, or computes `∞ - ∞` or `0 · ∞` (which hard
/// inputs reach by overflow), is NaN with a payload that may differ between devices, because
/// hardware either makes its own canonical NaN or passes one operand's on, and which operand
/// depends on the instruction. So NaN against NaN is a match whatever the payloads; NaN against
/// a number, and every other pair, is compared bit for bit. Min, max and everything that only
/// moves values select an operand and never make a NaN: they keep [`first_mismatch`].
pub fn first_mismatch_nan_as_class<T: Element>(expected: &[T], actual: &[T]) -> Option<Mismatch> {
    mismatch_by(expected, actual, |a, b| {
        a.to_bits64() == b.to_bits64() || (is_nan(a) && is_nan(b))
    })
}

/// Whether `v` is a float NaN, from its bits (integers never are).
pub fn is_nan<T: Element>(v: T) -> bool {
    let bits = v.to_bits64();
    match T::KIND {
        ElemKind::F32 => bits as u32 & 0x7fff_ffff > 0x7f80_0000,
        ElemKind::F64 => bits & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000,
        _ => false,
    }
}

/// A value for a report: floats with their bits too (a NaN's payload, a subnormal's scale).
fn shown<T: Element>(v: T) -> String {
    match T::KIND {
        ElemKind::F32 => format!("{v:?} (bits {:#010x})", v.to_bits64()),
        ElemKind::F64 => format!("{v:?} (bits {:#018x})", v.to_bits64()),
        _ => format!("{v:?}"),
    }
}

fn mismatch_by<T: Element>(
    expected: &[T],
    actual: &[T],
    same: impl Fn(T, T) -> bool,
) -> Option<Mismatch> {
    if expected.len() != actual.len() {
        return Some(Mismatch {
            index: expected.len().min(actual.len()),
            expected: format!("{} elements", expected.len()),
            actual: format!("{} elements", actual.len()),
            wrong: expected.len().abs_diff(actual.len()),
        });
    }
    let wrong: Vec<usize> = (0..expected.len())
        .filter(|&i| !same(expected[i], actual[i]))
        .collect();
    wrong.first().map(|&i| Mismatch {
        index: i,
        expected: shown(expected[i]),
        actual: shown(actual[i]),
        wrong: wrong.len(),
    })
}

/// Which hard inputs a case draws (for float types; see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HardInput {
    /// [`Element::random_hard`]: every magnitude, subnormals, zeros, halves, integers around
    /// 2^24 and 2^53; NaN payloads and ±∞ where values are only compared (min, max,
    /// predicates); for sums without the largest magnitudes ([`HardValues::huge`]), so that
    /// every result is a number compared bit for bit; for products mostly values near ±1 among
    /// them, so that not every product overflows or vanishes.
    Mixed,
    /// [`tiny_value`]: subnormals and the smallest normals, so that sums, differences and
    /// comparisons are of subnormals; for products (and the stencil) small normals whose
    /// products are subnormal.
    Tiny,
    /// For sums only: [`HardInput::Mixed`] with the largest magnitudes, so that sums overflow
    /// to ±∞ and opposite infinities make NaN (which matches any NaN).
    Overflow,
}

impl HardInput {
    /// The kinds for every operation.
    pub const ALL: [HardInput; 2] = [HardInput::Mixed, HardInput::Tiny];
    /// The kinds for sums.
    pub const SUMS: [HardInput; 3] = [HardInput::Mixed, HardInput::Tiny, HardInput::Overflow];

    /// The kinds for reductions and scans with `op`.
    pub fn for_op(op: xwarp::reduce::ReduceOp) -> &'static [HardInput] {
        match op {
            xwarp::reduce::ReduceOp::Sum => &HardInput::SUMS,
            _ => &HardInput::ALL,
        }
    }

    /// The kind in a case's name, with what `hard` left out.
    pub fn describe(self, hard: HardValues) -> String {
        let what = match self {
            HardInput::Mixed => "hard values",
            HardInput::Tiny => "subnormal inputs and results",
            HardInput::Overflow => "hard values up to the largest (overflow)",
        };
        if hard.subnormals {
            what.to_string()
        } else {
            format!("{what} without subnormals (a device flushes them)")
        }
    }
}

/// Whether kernels on `elem` flush subnormals on the device of `info` (never for integers, nor
/// where the device has no kernels of the type, which then fail on their own).
pub fn flushes_subnormals(info: &xwarp::DeviceInfo, elem: ElemKind) -> bool {
    let how = match elem {
        ElemKind::F32 => info.subnormals_f32,
        ElemKind::F64 => info.subnormals_f64,
        _ => return false,
    };
    !how.kept() && how != xwarp::Subnormals::Unsupported
}

/// The hard values for `elem` that every device in `devices` computes like the CPU reference:
/// subnormals only where none of them flushes them ([`flushes_subnormals`]), NaN and ±∞ where
/// `specials`.
pub fn hard_values(
    devices: &[(String, &dyn Device)],
    elem: ElemKind,
    specials: bool,
) -> HardValues {
    let hard = if specials {
        HardValues::ALL
    } else {
        HardValues::FINITE
    };
    if !devices
        .iter()
        .any(|(_, d)| flushes_subnormals(d.info(), elem))
    {
        hard
    } else {
        hard.without_subnormals()
    }
}

/// One line per device and float type whose kernels flush subnormals, saying that the hard
/// inputs of that type leave subnormals out (on every device, so that devices stay comparable)
/// and skip the cases made of subnormals; empty where every device keeps them.
pub fn subnormal_notes(devices: &[(String, &dyn Device)]) -> Vec<String> {
    let mut notes = Vec::new();
    for (label, dev) in devices {
        for elem in [ElemKind::F32, ElemKind::F64] {
            if flushes_subnormals(dev.info(), elem) {
                let how = match elem {
                    ElemKind::F32 => dev.info().subnormals_f32,
                    _ => dev.info().subnormals_f64,
                };
                notes.push(format!(
                    "note: {label}: {elem} subnormals {how}: {elem} hard-value cases leave \
                     subnormals out on every device, and the cases of subnormal inputs and \
                     results are skipped"
                ));
            }
        }
    }
    notes
}

/// A value whose sums, differences, comparisons (and with `products`, products) are about
/// subnormals, for [`HardInput::Tiny`]; integers get [`Element::random_hard`].
///
/// Without `products`: half subnormals of every scale down to the smallest, a quarter normals
/// below 4 × the smallest normal (so that opposite ones leave subnormal differences), an eighth
/// the boundary values (the largest subnormal, the smallest normal and its successor), an
/// eighth signed zeros. With `products`: an eighth normals near the square root of the
/// smallest normal (2^-79 .. 2^-58 for `f32`, 2^-527 .. 2^-506 for `f64`), whose pairwise
/// products are subnormal or vanish, an eighth subnormals, an eighth normals of 2^20 .. 2^61
/// (`f64`: 2^200 .. 2^501), which lift such products back into the normals (and two of which
/// never overflow), and the rest in ±[1/2, 2), which carry a product on, rounding it at every
/// step.
pub fn tiny_value<T: Element>(rng: &mut Rng, products: bool) -> T {
    let (frac, exp) = match T::KIND {
        ElemKind::F32 => (23u32, 8u32),
        ElemKind::F64 => (52, 11),
        _ => return T::random_hard(rng, HardValues::ALL),
    };
    let frac_mask = (1u64 << frac) - 1;
    let bias = (1u64 << (exp - 1)) - 1;
    let sign = (rng.next_u64() & 1) << (frac + exp);
    let subnormal = |rng: &mut Rng| {
        let shift = rng.below(frac as u64);
        ((rng.next_u64() & frac_mask) >> shift).max(1)
    };
    // A biased exponent from lo to hi, with a random significand.
    let normal = |rng: &mut Rng, lo: u64, hi: u64| {
        (lo + rng.below(hi - lo + 1)) << frac | (rng.next_u64() & frac_mask)
    };
    let magnitude = if products {
        let half = bias / 2;
        match rng.below(8) {
            0 => normal(rng, bias - half - 16, bias - half + 4),
            1 => subnormal(rng),
            2 => {
                let (lo, hi) = if frac == 23 { (20, 60) } else { (200, 500) };
                normal(rng, bias + lo, bias + hi)
            }
            _ => normal(rng, bias - 1, bias),
        }
    } else {
        match rng.below(8) {
            0..=3 => subnormal(rng),
            4 | 5 => normal(rng, 1, 2),
            6 => [frac_mask, 1 << frac, 1 << frac | 1][rng.below(3) as usize],
            _ => 0,
        }
    };
    let bits = sign | magnitude;
    if T::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, T>(&[bits as u32])[0]
    } else {
        bytemuck::cast_slice::<u64, T>(&[bits])[0]
    }
}

/// A value that occurs nowhere in `values`, to fill outputs with before a run. Never a NaN, so
/// that an unwritten output is caught where NaN results match any NaN too.
pub fn poison_value<T: Element>(values: &[T]) -> T {
    let mut bits = 0xcdcd_cdcd_cdcd_cdcdu64;
    loop {
        let candidate: T = if T::KIND.size() == 4 {
            bytemuck::cast_slice::<u32, T>(&[bits as u32])[0]
        } else {
            bytemuck::cast_slice::<u64, T>(&[bits])[0]
        };
        // One pass over the values per candidate (almost always the first one): a set of
        // 2^28 values costs far more to build than the pass.
        let c = candidate.to_bits64();
        if !is_nan(candidate) && !values.iter().any(|v| v.to_bits64() == c) {
            return candidate;
        }
        bits = bits.wrapping_add(0x0101_0101_0101_0101);
    }
}

/// Output slots past an output's length that the toolbox families' cases poison too (an output
/// of length `n` is a view of the first `n` elements of a longer buffer), so that a write past
/// the end shows.
pub const OUTPUT_SLACK: usize = 3;

/// An output of `len` elements on `dev`, a view of a buffer [`OUTPUT_SLACK`] elements longer,
/// all of it filled with `poison`; returns the view and the whole buffer (read it back to see
/// the slack too).
pub fn slack_output<T: Element>(
    dev: &dyn Device,
    len: usize,
    poison: T,
) -> Result<(xwarp::DeviceVec<T>, xwarp::DeviceVec<T>)> {
    let mut whole = xwarp::DeviceVec::<T>::alloc(dev, len + OUTPUT_SLACK)?;
    whole.fill(dev, poison)?;
    let view = xwarp::DeviceVec::from_raw(whole.raw().clone(), len)?;
    Ok((view, whole))
}

/// What one device gave for one case.
#[derive(Debug)]
pub enum Outcome {
    /// Equal to the CPU reference, bit for bit.
    Match,
    /// Differs from the CPU reference.
    Mismatch(Mismatch),
    /// The run failed.
    Error(String),
}

/// One case on every device.
#[derive(Debug)]
pub struct CaseReport {
    /// The case, in words.
    pub case: String,
    /// Each device's label and outcome.
    pub outcomes: Vec<(String, Outcome)>,
    /// Whether every device returned the same bits (`None` with fewer than two devices).
    pub devices_agree: Option<bool>,
}

impl CaseReport {
    /// Whether everything matched.
    pub fn passed(&self) -> bool {
        self.outcomes
            .iter()
            .all(|(_, o)| matches!(o, Outcome::Match))
            && self.devices_agree != Some(false)
    }
}

impl fmt::Display for CaseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}:",
            if self.passed() { "ok  " } else { "FAIL" },
            self.case
        )?;
        for (label, o) in &self.outcomes {
            match o {
                Outcome::Match => write!(f, " {label}=cpu")?,
                Outcome::Mismatch(m) => write!(f, " {label}!=cpu ({m})")?,
                Outcome::Error(e) => write!(f, " {label} error ({e})")?,
            }
        }
        match self.devices_agree {
            Some(true) => write!(f, "; backends agree bit for bit"),
            Some(false) => write!(f, "; BACKENDS DIFFER"),
            None => Ok(()),
        }
    }
}

/// Runs one case on every device: `run` gives each device's output, which is compared with
/// `expected` and with the other devices' outputs, bit for bit.
pub fn check_case<T: Element>(
    devices: &[(String, &dyn Device)],
    case: String,
    expected: &[T],
    run: impl FnMut(&dyn Device) -> Result<Vec<T>>,
) -> CaseReport {
    check_case_by(devices, case, expected, first_mismatch, run)
}

/// [`check_case`], comparing with `compare` (with the expected output and between devices).
pub fn check_case_by<T: Element>(
    devices: &[(String, &dyn Device)],
    case: String,
    expected: &[T],
    compare: Compare<T>,
    mut run: impl FnMut(&dyn Device) -> Result<Vec<T>>,
) -> CaseReport {
    let mut outputs = Vec::new();
    let outcomes = devices
        .iter()
        .map(|(label, dev)| {
            let o = match run(*dev) {
                Ok(out) => {
                    let o = match compare(expected, &out) {
                        None => Outcome::Match,
                        Some(m) => Outcome::Mismatch(m),
                    };
                    outputs.push(out);
                    o
                }
                Err(e) => Outcome::Error(e.to_string()),
            };
            (label.clone(), o)
        })
        .collect();
    let devices_agree = (devices.len() > 1).then(|| {
        outputs.len() == devices.len()
            && outputs.windows(2).all(|w| compare(&w[0], &w[1]).is_none())
    });
    CaseReport {
        case,
        outcomes,
        devices_agree,
    }
}

/// Passed and failed cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Cases where every device matched the CPU and each other.
    pub passed: usize,
    /// The others.
    pub failed: usize,
}

impl Tally {
    /// Counts `r` and hands it to `report`.
    pub fn add(&mut self, r: &CaseReport, report: &mut dyn FnMut(&CaseReport)) {
        if r.passed() {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        report(r);
    }
}

/// Runs every case of every family on every device, calling `report` once per case. `large`
/// adds GPU-sized inputs (hundreds of millions of elements).
pub fn run_all(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    seed: u64,
    report: &mut dyn FnMut(&CaseReport),
) -> Tally {
    run_families(devices, &FAMILIES, quick, large, seed, report)
}

/// The algorithm families `validate` knows, in the order it runs them.
pub const FAMILIES: [&str; 18] = [
    "shfl",
    "vote",
    "compact",
    "reduce",
    "ladder",
    "scan",
    "stencil",
    "roofline",
    "throughput",
    "sort",
    "group",
    "partition",
    "unique",
    "run_length",
    "reduce_by_key",
    "histogram",
    "segmented_reduce",
    "top_k",
];

/// Like [`run_all`], for the named families only (names from [`FAMILIES`]; others are
/// ignored, so check them first with [`check_families`]).
pub fn run_families(
    devices: &[(String, &dyn Device)],
    families: &[&str],
    quick: bool,
    large: bool,
    seed: u64,
    report: &mut dyn FnMut(&CaseReport),
) -> Tally {
    run_families_observed(devices, families, quick, large, seed, &mut |_| {}, report)
}

/// [`run_families`], calling `start` with a family's name before its first case: every case
/// `report` gets until the next call belongs to that family. Cases are not known before they
/// run (which ones run depends on what each device accepts), so this is how a caller shows
/// progress and sums up per family. The cases and their inputs are those of [`run_families`].
pub fn run_families_observed(
    devices: &[(String, &dyn Device)],
    families: &[&str],
    quick: bool,
    large: bool,
    seed: u64,
    start: &mut dyn FnMut(&str),
    report: &mut dyn FnMut(&CaseReport),
) -> Tally {
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    let mut on = |name: &str| {
        let on = families.contains(&name);
        if on {
            start(name);
        }
        on
    };
    if on("shfl") {
        shfl::run(devices, quick, &mut rng, &mut tally, report);
    }
    if on("vote") {
        vote::run(devices, quick, &mut rng, &mut tally, report);
    }
    if on("compact") {
        compact::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("reduce") {
        reduce::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("ladder") {
        ladder::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("scan") {
        scan::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("stencil") {
        stencil::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("roofline") {
        roofline::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("throughput") {
        throughput::run(devices, quick, &mut rng, &mut tally, report);
    }
    if on("sort") {
        sort::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("group") {
        group::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("partition") {
        partition::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    for family in ["unique", "run_length", "reduce_by_key"] {
        if on(family) {
            runs::run(family, devices, quick, large, &mut rng, &mut tally, report);
        }
    }
    if on("histogram") {
        histogram::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("segmented_reduce") {
        segmented_reduce::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    if on("top_k") {
        top_k::run(devices, quick, large, &mut rng, &mut tally, report);
    }
    tally
}

/// Checks family names against [`FAMILIES`].
pub fn check_families(names: &[String]) -> xwarp::error::Result<()> {
    match names.iter().find(|n| !FAMILIES.contains(&n.as_str())) {
        Some(bad) => Err(xwarp::error::Error::invalid(
            "family",
            bad,
            FAMILIES.join(", "),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_matches_any_nan_and_nothing_else() {
        let quiet = f32::NAN;
        let payload = f32::from_bits(0xffc0_1234);
        assert!(first_mismatch_nan_as_class(&[quiet, 1.0], &[payload, 1.0]).is_none());
        // Bit for bit elsewhere: a NaN is not a number, -0.0 is not +0.0.
        let m = first_mismatch_nan_as_class(&[quiet, 0.0], &[1.0, -0.0]).unwrap();
        assert_eq!((m.index, m.wrong), (0, 2));
        assert!(m.expected.contains("0x7fc00000"), "{}", m.expected);
        // The exact comparison tells payloads apart.
        assert!(first_mismatch(&[quiet], &[payload]).is_some());
        assert!(first_mismatch_nan_as_class(&[1u32], &[2u32]).is_some());
    }

    #[test]
    fn poison_is_never_a_nan() {
        // Every candidate before the first NaN one (0xffffffff, the 0x33rd) is taken.
        let taken: Vec<f32> = (0..0x32u32)
            .map(|k| f32::from_bits(0xcdcd_cdcdu32.wrapping_add(k.wrapping_mul(0x0101_0101))))
            .collect();
        assert!(taken.iter().all(|&v| !is_nan(v)));
        assert!(!is_nan(poison_value(&taken)));
    }

    #[test]
    fn tiny_values_are_about_subnormals() {
        let mut rng = Rng::new(3);
        let sums: Vec<f32> = (0..10_000).map(|_| tiny_value(&mut rng, false)).collect();
        assert!(sums.iter().all(|v| v.abs() < 4.0 * f32::MIN_POSITIVE));
        assert!(sums.iter().filter(|v| v.is_subnormal()).count() > 4000);
        let products: Vec<f64> = (0..10_000).map(|_| tiny_value(&mut rng, true)).collect();
        // Pairs of the small normals multiply to subnormals.
        let small: Vec<f64> = products
            .iter()
            .copied()
            .filter(|v| v.is_normal() && v.abs() < 1e-150)
            .collect();
        assert!(small.len() > 1000);
        assert!(small.windows(2).any(|w| (w[0] * w[1]).is_subnormal()));
    }
}
