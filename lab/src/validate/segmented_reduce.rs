//! Segmented reduce cases: every operator of every type over segment layouts that reach every
//! path (empty segments, segments of one, short ones below and above the one-invocation limit,
//! tiles and partial tiles, one segment of the whole input, gaps before the first and after the
//! last offset), on representative and hard values, each compared with the CPU twin (sums and
//! products that end in NaN as any NaN, the documented rule), with the output's slack past its
//! end poisoned and checked untouched.

use super::reduce::{comparison, ReduceInput};
use super::{check_case_by, hard_values, poison_value, slack_output, CaseReport, HardInput, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Rng};
use xwarp::error::Result;
use xwarp::reduce::ReduceOp;
use xwarp::segmented_reduce::{self, Segments};

/// How a case's segments are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Lengths 0 to 8, many empty.
    Tiny,
    /// Lengths 0 to 80: both sides of the one-invocation limit.
    Short,
    /// Lengths from 0, 1, 31, 32, 33, 4095, 4096, 4097 and 10000, shuffled.
    Mixed,
    /// One segment of the whole input.
    One,
    /// Gaps before the first offset and after the last, empty segments between long ones.
    Gaps,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 5] = [
        Layout::Tiny,
        Layout::Short,
        Layout::Mixed,
        Layout::One,
        Layout::Gaps,
    ];

    /// The offsets of segments over an input of `n` elements.
    pub fn offsets(self, n: usize, rng: &mut Rng) -> Vec<u32> {
        let mut offsets = vec![0u32];
        let fill =
            |offsets: &mut Vec<u32>, start: usize, end: usize, len: &mut dyn FnMut() -> usize| {
                let mut at = start;
                offsets[0] = start as u32;
                while at < end {
                    at = (at + len()).min(end);
                    offsets.push(at as u32);
                }
            };
        match self {
            Layout::Tiny => fill(&mut offsets, 0, n, &mut || rng.below(9) as usize),
            Layout::Short => fill(&mut offsets, 0, n, &mut || rng.below(81) as usize),
            Layout::Mixed => {
                const LENGTHS: [usize; 9] = [0, 1, 31, 32, 33, 4095, 4096, 4097, 10_000];
                fill(&mut offsets, 0, n, &mut || LENGTHS[rng.below(9) as usize])
            }
            Layout::One => offsets.push(n as u32),
            Layout::Gaps => {
                let start = n / 7;
                let end = n - n / 5;
                fill(&mut offsets, start, end, &mut || {
                    if rng.below(2) == 0 {
                        0
                    } else {
                        rng.below(6000) as usize
                    }
                });
                offsets.push(end as u32);
            }
        }
        offsets
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Tiny => "tiny segments",
            Layout::Short => "short segments",
            Layout::Mixed => "mixed segments",
            Layout::One => "one segment",
            Layout::Gaps => "segments with gaps",
        })
    }
}

/// One segmented reduce case.
#[derive(Clone, Copy, Debug)]
pub struct SegmentedCase {
    /// The operator.
    pub op: ReduceOp,
    /// Element type.
    pub elem: ElemKind,
    /// The segments.
    pub layout: Layout,
    /// Input length.
    pub n: usize,
    /// Hard values instead of representative ones (floats).
    pub hard: bool,
}

impl fmt::Display for SegmentedCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "segmented_reduce {} {} {} n={}{}",
            self.op,
            self.elem,
            self.layout,
            self.n,
            if self.hard { " (hard values)" } else { "" }
        )
    }
}

/// The lengths: empty, one, a partial warp, a warp and one, a tile and one, and about a
/// million.
pub const SEGMENTED_LENGTHS: [usize; 6] = [0, 1, 31, 33, 4097, 1_000_003];

/// Every case: each operator of each type, layout and length (the longest for the mixed and the
/// one-segment layouts only), floats on hard values too (short lengths and fewer layouts in
/// `quick` mode). `large` adds one segment of 2^24 + 1 elements (three levels of tiles).
pub fn segmented_cases(quick: bool, large: bool) -> Vec<SegmentedCase> {
    let lengths: &[usize] = if quick {
        &[0, 1, 33, 4097]
    } else {
        &SEGMENTED_LENGTHS
    };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        let float = matches!(elem, ElemKind::F32 | ElemKind::F64);
        for op in ReduceOp::ALL
            .into_iter()
            .filter(|op| !float || op.for_floats())
        {
            for hard in [false, true] {
                if hard && !float {
                    continue;
                }
                for layout in Layout::ALL {
                    if quick && matches!(layout, Layout::Tiny | Layout::Gaps) {
                        continue;
                    }
                    let long = matches!(layout, Layout::Mixed | Layout::One);
                    for &n in lengths.iter().filter(|&&n| long || n < 1_000_000) {
                        cases.push(SegmentedCase {
                            op,
                            elem,
                            layout,
                            n,
                            hard,
                        });
                    }
                }
            }
            if large && matches!(op, ReduceOp::Sum | ReduceOp::Max) {
                cases.push(SegmentedCase {
                    op,
                    elem,
                    layout: Layout::One,
                    n: (1 << 24) + 1,
                    hard: false,
                });
            }
        }
    }
    cases
}

/// Runs a segmented reduce on `dev` into an output (and slack past it) poisoned with `poison`:
/// the whole output, slack included.
pub fn run_segmented<T: ReduceInput>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &[T],
    offsets: &[u32],
    poison: T,
) -> Result<Vec<T>> {
    let segments = Segments::new(dev, offsets, input.len())?;
    let src = DeviceVec::from_slice(dev, input)?;
    let (mut out, whole) = slack_output(dev, segments.len(), poison)?;
    segmented_reduce::segmented_reduce(dev, op, &src, &segments, &mut out)?;
    whole.to_vec(dev)
}

/// What [`run_segmented`] must return.
pub fn expected<T: ReduceInput>(op: ReduceOp, input: &[T], offsets: &[u32], poison: T) -> Vec<T> {
    let mut want = cpu::segmented_reduce::segmented_reduce(op, input, offsets);
    want.extend(std::iter::repeat_n(poison, super::OUTPUT_SLACK));
    want
}

fn case_on<T: ReduceInput>(
    devices: &[(String, &dyn Device)],
    case: &SegmentedCase,
    rng: &mut Rng,
) -> CaseReport {
    let input: Vec<T> = if case.hard {
        let specials = matches!(case.op, ReduceOp::Min | ReduceOp::Max);
        let values = hard_values(devices, T::KIND, specials);
        T::hard_input(case.op, HardInput::Mixed, values, case.n, rng)
    } else {
        T::input(case.op, case.n, rng)
    };
    let offsets = case.layout.offsets(case.n, rng);
    let poison = poison_value(&cpu::segmented_reduce::segmented_reduce(
        case.op, &input, &offsets,
    ));
    let want = expected(case.op, &input, &offsets, poison);
    let name = format!("{case} ({} segments)", offsets.len() - 1);
    check_case_by(devices, name, &want, comparison(case.op), |dev| {
        run_segmented(dev, case.op, &input, &offsets, poison)
    })
}

/// Runs one case on every device.
pub fn segmented_case_on(
    devices: &[(String, &dyn Device)],
    case: &SegmentedCase,
    rng: &mut Rng,
) -> CaseReport {
    with_elem!(case.elem, case_on(devices, case, rng))
}

/// Runs every segmented reduce case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in segmented_cases(quick, large) {
        let r = segmented_case_on(devices, &case, rng);
        tally.add(&r, report);
    }
}
