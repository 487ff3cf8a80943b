//! Roofline cases: the copy and the read-only fold of every element type, at lengths around
//! the 16-byte vector, the workgroup's tile and powers of two.

use super::{check_case, poison_value, CaseReport, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, Rng};
use xwarp::error::Result;
use xwarp::roofline::{self, TILE_WORDS};

/// Which roofline kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RooflineKernel {
    /// [`roofline::copy`].
    Copy,
    /// [`roofline::read`].
    Read,
}

impl RooflineKernel {
    /// Both kernels.
    pub const ALL: [RooflineKernel; 2] = [RooflineKernel::Copy, RooflineKernel::Read];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            RooflineKernel::Copy => "copy",
            RooflineKernel::Read => "read",
        }
    }
}

/// One roofline case.
#[derive(Clone, Copy, Debug)]
pub struct RooflineCase {
    /// Copy or read.
    pub kernel: RooflineKernel,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for RooflineCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "roofline {} {} n={}",
            self.kernel.name(),
            self.elem,
            self.n
        )
    }
}

/// Lengths every run covers: below and around one 16-byte vector (1, 3, 4, 5), one warp
/// (31, 33), one workgroup (257), one tile of [`TILE_WORDS`] words in 4- and 8-byte elements
/// (2^11 ± 1, 2^12 and 2^12 ± 1), several tiles (2^16 ± 1), about a million and 2^20.
pub const SIZES: [usize; 16] = [
    1,
    3,
    4,
    5,
    31,
    33,
    257,
    (1 << 11) - 1,
    (1 << 11) + 1,
    (1 << 12) - 1,
    1 << 12,
    (1 << 12) + 1,
    (1 << 16) - 1,
    (1 << 16) + 1,
    1_000_003,
    1 << 20,
];

/// Every roofline case: both kernels × every type × [`SIZES`] (a few in `quick` mode);
/// `large` adds 2^28 + 3 elements (for GPUs; beyond one binding on most).
pub fn roofline_cases(quick: bool, large: bool) -> Vec<RooflineCase> {
    let mut sizes: Vec<usize> = if quick {
        vec![1, 33, TILE_WORDS + 1, 1_000_003]
    } else {
        SIZES.to_vec()
    };
    if large {
        sizes.push((1 << 28) + 3);
    }
    let mut cases = Vec::new();
    for kernel in RooflineKernel::ALL {
        for elem in ElemKind::ALL {
            for &n in &sizes {
                cases.push(RooflineCase { kernel, elem, n });
            }
        }
    }
    cases
}

/// Runs [`roofline::copy`] on `dev`: poisons the output, copies, downloads.
pub fn run_copy<T: Element>(dev: &dyn Device, input: &[T]) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    dst.fill(dev, poison_value(input))?;
    roofline::copy(dev, &src, &mut dst)?;
    dst.to_vec(dev)
}

/// Runs [`roofline::read`] on `dev`: fills the folds with `poison` (a value the result must not
/// hold), reads, downloads the folds.
pub fn run_read<T: Element>(dev: &dyn Device, input: &[T], poison: u32) -> Result<Vec<u32>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut folds = DeviceVec::alloc(dev, roofline::read_folds(input.len(), T::KIND))?;
    folds.fill(dev, poison)?;
    roofline::read(dev, &src, &mut folds)?;
    folds.to_vec(dev)
}

fn case_on<T: Element>(
    devices: &[(String, &dyn Device)],
    case: &RooflineCase,
    rng: &mut Rng,
) -> CaseReport {
    let input: Vec<T> = rng.vec(case.n);
    match case.kernel {
        RooflineKernel::Copy => {
            let expected = cpu::roofline::copy(&input);
            check_case(devices, case.to_string(), &expected, |dev| {
                run_copy(dev, &input)
            })
        }
        RooflineKernel::Read => {
            let expected = cpu::roofline::read(&input);
            let poison = poison_value(&expected);
            check_case(devices, case.to_string(), &expected, |dev| {
                run_read(dev, &input, poison)
            })
        }
    }
}

/// Runs every roofline case (`large` adds the GPU-sized ones).
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in roofline_cases(quick, large) {
        let r = with_elem!(case.elem, case_on(devices, &case, rng));
        tally.add(&r, report);
    }
}
