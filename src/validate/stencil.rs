//! Stencil cases: both variants and float types at lengths around the edges, the warp and the
//! workgroup, with random weights.

use super::{check_case, poison_value, CaseReport, Tally};
use crate::cpu::stencil::{self as cpu, StencilElement, POINTS};
use crate::device::{Device, DeviceVec};
use crate::element::{ElemKind, Rng};
use crate::error::Result;
use crate::stencil::{self, StencilVariant};
use std::fmt;

/// One stencil case.
#[derive(Clone, Copy, Debug)]
pub struct StencilCase {
    /// Shuffle or shared-memory version.
    pub variant: StencilVariant,
    /// Element type (`f32` or `f64`).
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for StencilCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stencil {} {} n={}",
            self.variant.name(),
            self.elem,
            self.n
        )
    }
}

/// Lengths every run covers: all-edge inputs (1 to 4), the first with an average (5), around
/// one warp (31 to 34), many warps and workgroups (1000, 1000003).
pub const SIZES: [usize; 11] = [1, 2, 3, 4, 5, 31, 32, 33, 34, 1000, 1_000_003];

/// Every stencil case: both variants × `f32`/`f64` × [`SIZES`] (a few in `quick` mode);
/// `large` adds 2^24 + 1 and 2^28 elements (for GPUs).
pub fn stencil_cases(quick: bool, large: bool) -> Vec<StencilCase> {
    let mut sizes: Vec<usize> = if quick {
        vec![4, 5, 33, 1000]
    } else {
        SIZES.to_vec()
    };
    if large {
        sizes.extend([(1 << 24) + 1, 1 << 28]);
    }
    let mut cases = Vec::new();
    for elem in [ElemKind::F32, ElemKind::F64] {
        for variant in StencilVariant::ALL {
            for &n in &sizes {
                cases.push(StencilCase { variant, elem, n });
            }
        }
    }
    cases
}

/// Random weights: finite, of mixed signs and magnitudes (2^-20 .. 2^20), like the inputs.
pub fn random_weights<T: StencilElement>(rng: &mut Rng) -> [T; POINTS] {
    std::array::from_fn(|_| T::random(rng))
}

/// Runs the moving average on `dev`: fills the output with `poison` (a value the result must
/// not hold), computes, downloads.
pub fn run_stencil<T: StencilElement>(
    dev: &dyn Device,
    variant: StencilVariant,
    weights: [T; POINTS],
    input: &[T],
    poison: T,
) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    dst.fill(dev, poison)?;
    stencil::moving_average(dev, variant, weights, &src, &mut dst)?;
    dst.to_vec(dev)
}

/// A value the expected output does not hold: [`poison_value`] for ordinary lengths; for
/// GPU-sized ones (where a set of every value would cost gigabytes) a quiet NaN with a marked
/// payload, which finite weights and inputs of magnitude at most 2^20 can never produce.
pub fn poison_for<T: StencilElement>(want: &[T]) -> T {
    if want.len() <= 1 << 22 {
        return poison_value(want);
    }
    if T::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, T>(&[0x7fcd_cdcd])[0]
    } else {
        bytemuck::cast_slice::<u64, T>(&[0x7ff9_cdcd_cdcd_cdcd])[0]
    }
}

fn case_on<T: StencilElement>(
    devices: &[(String, &dyn Device)],
    case: &StencilCase,
    rng: &mut Rng,
) -> CaseReport {
    let weights = random_weights::<T>(rng);
    let input: Vec<T> = rng.vec(case.n);
    let want = cpu::moving_average(weights, &input);
    let poison = poison_for(&want);
    check_case(devices, case.to_string(), &want, |dev| {
        run_stencil(dev, case.variant, weights, &input, poison)
    })
}

/// Runs every stencil case (`large` adds the GPU-sized ones).
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in stencil_cases(quick, large) {
        let r = match case.elem {
            ElemKind::F64 => case_on::<f64>(devices, &case, rng),
            _ => case_on::<f32>(devices, &case, rng),
        };
        tally.add(&r, report);
    }
}
