//! Every kernel on every given device against the CPU reference and against each other: what
//! `xwarp validate` runs. Inputs are fresh random values from a seed the report prints, output
//! buffers are poisoned before each run so unwritten elements are caught, and results are
//! compared bit for bit.

use crate::cpu;
use crate::device::{Device, DeviceVec};
use crate::element::{ElemKind, Element, Rng};
use crate::error::Result;
use crate::shfl::{self, ShflOp, SEGM};
use std::collections::HashSet;
use std::fmt;

/// Calls `$f::<T>(args)` with `T` the Rust type of an [`ElemKind`].
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

/// One shuffle case.
#[derive(Clone, Copy, Debug)]
pub struct ShflCase {
    /// The shuffle.
    pub op: ShflOp,
    /// Segment width.
    pub width: u32,
    /// Values per lane: 1, or [`SEGM`] for the register-array exchange.
    pub segm: usize,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for ShflCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.segm == 1 {
            "shfl"
        } else {
            "shfl_xor_array"
        };
        write!(
            f,
            "{name} {} width={} {} n={}",
            self.op, self.width, self.elem, self.n
        )
    }
}

/// The lane arguments worth testing for each shuffle: both ends of the range, small values,
/// and values that cross segment boundaries.
pub fn shfl_ops() -> Vec<ShflOp> {
    let mut ops = Vec::new();
    for a in [0, 2, 13, 31, 100] {
        ops.push(ShflOp::Broadcast { src_lane: a });
    }
    for a in [0, 1, 2, 7, 31] {
        ops.push(ShflOp::Up { delta: a });
        ops.push(ShflOp::Down { delta: a });
    }
    for a in [-31, -2, 1, 2, 17] {
        ops.push(ShflOp::Wrap { offset: a });
    }
    for a in [0, 1, 6, 16, 31] {
        ops.push(ShflOp::Xor { lane_mask: a });
    }
    ops
}

/// Every shuffle case: all ops, widths and types at small awkward lengths, and each op and
/// type at a length of about a million (all at one width and length in `quick` mode).
pub fn shfl_cases(quick: bool) -> Vec<ShflCase> {
    let mut cases = Vec::new();
    let small: &[usize] = if quick { &[33] } else { &[1, 31, 33, 1000] };
    let widths: &[u32] = if quick { &[8, 32] } else { &[2, 4, 8, 16, 32] };
    for elem in ElemKind::ALL {
        for &width in widths {
            for op in shfl_ops() {
                for &n in small {
                    cases.push(ShflCase {
                        op,
                        width,
                        segm: 1,
                        elem,
                        n,
                    });
                }
            }
            for lane_mask in [1, 3, 16] {
                for &n in small {
                    let op = ShflOp::Xor { lane_mask };
                    cases.push(ShflCase {
                        op,
                        width,
                        segm: SEGM,
                        elem,
                        n: n * 2 + 1,
                    });
                }
            }
        }
        if !quick {
            for op in [
                ShflOp::Broadcast { src_lane: 5 },
                ShflOp::Up { delta: 3 },
                ShflOp::Down { delta: 3 },
                ShflOp::Wrap { offset: -5 },
                ShflOp::Xor { lane_mask: 9 },
            ] {
                cases.push(ShflCase {
                    op,
                    width: 16,
                    segm: 1,
                    elem,
                    n: 1_000_003,
                });
            }
            let op = ShflOp::Xor { lane_mask: 5 };
            cases.push(ShflCase {
                op,
                width: 32,
                segm: SEGM,
                elem,
                n: 1_000_003,
            });
        }
    }
    cases
}

/// Runs a shuffle case on `dev` with `input`: poisons the output, runs, downloads.
pub fn run_shfl<T: Element>(dev: &dyn Device, case: &ShflCase, input: &[T]) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    dst.fill(dev, poison_value(input))?;
    if case.segm == 1 {
        shfl::shfl(dev, case.op, case.width, &src, &mut dst)?;
    } else {
        shfl::shfl_xor_array(dev, case.op.arg(), case.width, &src, &mut dst)?;
    }
    dst.to_vec(dev)
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

fn shfl_case_on<T: Element>(
    devices: &[(String, &dyn Device)],
    case: &ShflCase,
    rng: &mut Rng,
) -> CaseReport {
    let input: Vec<T> = rng.vec(case.n);
    let expected = cpu::shfl::shfl(case.op, case.width, case.segm, &input);
    let mut outputs = Vec::new();
    let outcomes = devices
        .iter()
        .map(|(label, dev)| {
            let o = match run_shfl(*dev, case, &input) {
                Ok(out) => {
                    let o = match first_mismatch(&expected, &out) {
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
        case: case.to_string(),
        outcomes,
        devices_agree,
    }
}

/// Runs every case on every device, calling `report` once per case; returns (passed, failed).
pub fn run_all(
    devices: &[(String, &dyn Device)],
    quick: bool,
    seed: u64,
    report: &mut dyn FnMut(&CaseReport),
) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut passed, mut failed) = (0, 0);
    for case in shfl_cases(quick) {
        let r = with_elem!(case.elem, shfl_case_on(devices, &case, &mut rng));
        if r.passed() {
            passed += 1;
        } else {
            failed += 1;
        }
        report(&r);
    }
    (passed, failed)
}
