//! Scan cases: sum, min and max, inclusive and exclusive, at warp, block and device scope, for
//! every type; device scans also through the look-back fallback and over many launches; for
//! floats also on hard inputs ([`HardInput`]).

use super::reduce::{hard_op_case_on, op_case_on, OpCase, HARD_SIZES};
use super::{CaseReport, HardInput, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu::reduce::Reduce;
use xwarp::cpu::scan as cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Rng};
use xwarp::error::Result;
use xwarp::reduce::ReduceOp;
use xwarp::scan::{self, ScanKind, Tuning, TILE};

/// Where a scan acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// [`scan::warp_scan`].
    Warp,
    /// [`scan::block_scan`].
    Block,
    /// [`scan::device_scan_tuned`].
    Device(Tuning),
}

/// One scan case.
#[derive(Clone, Copy, Debug)]
pub struct ScanCase {
    /// Sum, min or max.
    pub op: ReduceOp,
    /// Inclusive or exclusive.
    pub kind: ScanKind,
    /// Scope.
    pub scope: Scope,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for ScanCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            ScanKind::Inclusive => "inclusive",
            ScanKind::Exclusive => "exclusive",
        };
        match self.scope {
            Scope::Warp => write!(f, "warp_scan")?,
            Scope::Block => write!(f, "block_scan")?,
            Scope::Device(t) => {
                write!(f, "device_scan")?;
                if t.spin != Tuning::default().spin {
                    write!(f, " spin={}", t.spin)?;
                }
                if let Some(m) = t.max_launch_elems {
                    write!(f, " max_launch_elems={m}")?;
                }
                if let Some(r) = t.registers {
                    write!(f, " registers={r}")?;
                }
            }
        }
        write!(f, " {kind} {} {} n={}", self.op, self.elem, self.n)
    }
}

/// Every scan case; `large` adds device scans of 2^24 + 1 and 2^28 elements (for GPUs).
pub fn scan_cases(quick: bool, large: bool) -> Vec<ScanCase> {
    let sizes: &[usize] = if quick {
        &[33, 1000]
    } else {
        &[1, 2, 3, 31, 33, 1000, 4099]
    };
    let fallback = Tuning {
        spin: 0,
        ..Tuning::default()
    };
    let launches = Tuning {
        max_launch_elems: Some(3 * TILE),
        ..Tuning::default()
    };
    // The staging kernel where the device would keep the tile in registers.
    let staged = Tuning {
        registers: Some(false),
        ..Tuning::default()
    };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max] {
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                for scope in [Scope::Warp, Scope::Block, Scope::Device(Tuning::default())] {
                    for &n in sizes {
                        cases.push(ScanCase {
                            op,
                            kind,
                            scope,
                            elem,
                            n,
                        });
                    }
                }
                if !quick {
                    let n = 1_000_003;
                    cases.push(ScanCase {
                        op,
                        kind,
                        scope: Scope::Device(Tuning::default()),
                        elem,
                        n,
                    });
                    cases.push(ScanCase {
                        op,
                        kind,
                        scope: Scope::Device(fallback),
                        elem,
                        n: 100_003,
                    });
                    cases.push(ScanCase {
                        op,
                        kind,
                        scope: Scope::Device(launches),
                        elem,
                        n: 20 * TILE + 5,
                    });
                    cases.push(ScanCase {
                        op,
                        kind,
                        scope: Scope::Device(staged),
                        elem,
                        n: 20 * TILE + 5,
                    });
                }
                if large {
                    for n in [(1 << 24) + 1, 1 << 28] {
                        cases.push(ScanCase {
                            op,
                            kind,
                            scope: Scope::Device(Tuning::default()),
                            elem,
                            n,
                        });
                    }
                }
            }
        }
    }
    cases
}

/// A scan case on hard inputs.
#[derive(Clone, Copy, Debug)]
pub struct HardScanCase {
    /// Operator, kind, scope, type and length.
    pub case: ScanCase,
    /// Which hard values.
    pub input: HardInput,
}

/// Every hard-value scan case: each float operator, kind and scope with each kind of hard
/// input for it ([`HardInput::for_op`]) at [`HARD_SIZES`], and (not in `quick` mode) the
/// device scan of 1000003 elements and the staging kernel's device scan at [`HARD_SIZES`].
pub fn hard_scan_cases(quick: bool) -> Vec<HardScanCase> {
    // The staging kernel where the device would keep the tile in registers (f32), at
    // HARD_SIZES.
    let staged = Tuning {
        registers: Some(false),
        ..Tuning::default()
    };
    let scopes = [
        Scope::Warp,
        Scope::Block,
        Scope::Device(Tuning::default()),
        Scope::Device(staged),
    ];
    let mut cases = Vec::new();
    for elem in [ElemKind::F32, ElemKind::F64] {
        for op in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max] {
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                for &input in HardInput::for_op(op) {
                    for scope in scopes.into_iter().take(if quick { 3 } else { 4 }) {
                        let device = matches!(scope, Scope::Device(t) if t.registers.is_none());
                        let long = (!quick && device).then_some(1_000_003);
                        for n in HARD_SIZES.into_iter().chain(long) {
                            let case = ScanCase {
                                op,
                                kind,
                                scope,
                                elem,
                                n,
                            };
                            cases.push(HardScanCase { case, input });
                        }
                    }
                }
            }
        }
    }
    cases
}

/// The CPU reference's result for a case.
pub fn expected<T: Reduce>(case: &ScanCase, input: &[T]) -> Vec<T> {
    match case.scope {
        Scope::Warp => cpu::warp_scan(case.op, case.kind, input),
        Scope::Block => cpu::block_scan(case.op, case.kind, input),
        Scope::Device(_) => cpu::device_scan(case.op, case.kind, input),
    }
}

/// Runs a case on `dev` with the output poisoned with `poison`.
pub fn run_scan<T: Reduce>(
    dev: &dyn Device,
    case: &ScanCase,
    input: &[T],
    poison: T,
) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    dst.fill(dev, poison)?;
    match case.scope {
        Scope::Warp => scan::warp_scan(dev, case.op, case.kind, &src, &mut dst)?,
        Scope::Block => scan::block_scan(dev, case.op, case.kind, &src, &mut dst)?,
        Scope::Device(t) => scan::device_scan_tuned(dev, case.op, case.kind, &src, &mut dst, t)?,
    }
    dst.to_vec(dev)
}

impl OpCase for ScanCase {
    fn op(&self) -> ReduceOp {
        self.op
    }
    fn input_len(&self) -> usize {
        self.n
    }
    fn expected<T: Reduce>(&self, input: &[T]) -> Vec<T> {
        expected(self, input)
    }
    fn run<T: Reduce>(&self, dev: &dyn Device, input: &[T], poison: T) -> Result<Vec<T>> {
        run_scan(dev, self, input, poison)
    }
}

/// Runs every scan case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in scan_cases(quick, large) {
        let r = with_elem!(case.elem, op_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
    for hard in hard_scan_cases(quick) {
        let (case, elem) = (&hard.case, hard.case.elem);
        if let Some(r) = with_elem!(elem, hard_op_case_on(devices, case, elem, hard.input, rng)) {
            tally.add(&r, report);
        }
    }
}
