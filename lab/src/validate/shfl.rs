//! Shuffle cases. Integers move random bits; floats move hard values (NaN payloads, ±∞,
//! subnormals, signed zeros), which a shuffle must deliver with every bit unchanged.

use super::{check_case, hard_values, poison_value, CaseReport, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, Rng};
use xwarp::error::Result;
use xwarp::shfl::{self, ShflOp, SEGM};

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

fn shfl_case_on<T: Element>(
    devices: &[(String, &dyn Device)],
    case: &ShflCase,
    rng: &mut Rng,
) -> CaseReport {
    let input: Vec<T> = match T::KIND {
        ElemKind::F32 | ElemKind::F64 => rng.hard_vec(case.n, hard_values(devices, T::KIND, true)),
        _ => rng.vec(case.n),
    };
    let expected = cpu::shfl::shfl(case.op, case.width, case.segm, &input);
    check_case(devices, case.to_string(), &expected, |dev| {
        run_shfl(dev, case, &input)
    })
}

/// Runs every shuffle case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in shfl_cases(quick) {
        let r = with_elem!(case.elem, shfl_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
}
