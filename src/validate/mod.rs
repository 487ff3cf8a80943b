//! Every kernel on every given device against the CPU reference and against each other: what
//! `xwarp validate` runs. Inputs are fresh random values from a seed the report prints, output
//! buffers are poisoned before each run so unwritten elements are caught, and results are
//! compared bit for bit.

use crate::device::Device;
use crate::element::{Element, Rng};
use crate::error::Result;
use std::collections::HashSet;
use std::fmt;

pub use crate::cpu::par::par_each;

pub mod compact;
pub mod ladder;
pub mod reduce;
pub mod roofline;
pub mod scan;
pub mod shfl;
pub mod stencil;
pub mod throughput;
pub mod vote;

/// Calls `$f::<T>(args)` with `T` the Rust type of an [`ElemKind`](crate::ElemKind).
#[macro_export]
macro_rules! with_elem {
    ($kind:expr, $f:ident ( $($arg:expr),* $(,)? )) => {
        match $kind {
            $crate::ElemKind::I32 => $f::<i32>($($arg),*),
            $crate::ElemKind::U32 => $f::<u32>($($arg),*),
            $crate::ElemKind::F32 => $f::<f32>($($arg),*),
            $crate::ElemKind::I64 => $f::<i64>($($arg),*),
            $crate::ElemKind::U64 => $f::<u64>($($arg),*),
            $crate::ElemKind::F64 => $f::<f64>($($arg),*),
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

/// Compares bit patterns; `None` when equal.
pub fn first_mismatch<T: Element>(expected: &[T], actual: &[T]) -> Option<Mismatch> {
    if expected.len() != actual.len() {
        return Some(Mismatch {
            index: expected.len().min(actual.len()),
            expected: format!("{} elements", expected.len()),
            actual: format!("{} elements", actual.len()),
            wrong: expected.len().abs_diff(actual.len()),
        });
    }
    let wrong: Vec<usize> = (0..expected.len())
        .filter(|&i| expected[i].to_bits64() != actual[i].to_bits64())
        .collect();
    wrong.first().map(|&i| Mismatch {
        index: i,
        expected: format!("{:?}", expected[i]),
        actual: format!("{:?}", actual[i]),
        wrong: wrong.len(),
    })
}

/// A value that occurs nowhere in `values`, to fill outputs with before a run.
pub fn poison_value<T: Element>(values: &[T]) -> T {
    let present: HashSet<u64> = values.iter().map(|v| v.to_bits64()).collect();
    let mut bits = 0xcdcd_cdcd_cdcd_cdcdu64;
    loop {
        let candidate: T = if T::KIND.size() == 4 {
            bytemuck::cast_slice::<u32, T>(&[bits as u32])[0]
        } else {
            bytemuck::cast_slice::<u64, T>(&[bits])[0]
        };
        if !present.contains(&candidate.to_bits64()) {
            return candidate;
        }
        bits = bits.wrapping_add(0x0101_0101_0101_0101);
    }
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
    mut run: impl FnMut(&dyn Device) -> Result<Vec<T>>,
) -> CaseReport {
    let mut outputs = Vec::new();
    let outcomes = devices
        .iter()
        .map(|(label, dev)| {
            let o = match run(*dev) {
                Ok(out) => {
                    let o = match first_mismatch(expected, &out) {
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
            && outputs
                .windows(2)
                .all(|w| first_mismatch(&w[0], &w[1]).is_none())
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
pub const FAMILIES: [&str; 9] = [
    "shfl",
    "vote",
    "compact",
    "reduce",
    "ladder",
    "scan",
    "stencil",
    "roofline",
    "throughput",
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
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    let on = |name: &str| families.contains(&name);
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
    tally
}

/// Checks family names against [`FAMILIES`].
pub fn check_families(names: &[String]) -> crate::error::Result<()> {
    match names.iter().find(|n| !FAMILIES.contains(&n.as_str())) {
        Some(bad) => Err(crate::error::Error::invalid(
            "family",
            bad,
            FAMILIES.join(", "),
        )),
        None => Ok(()),
    }
}
