//! Stencil cases: both variants and float types at lengths around the edges, the warp and the
//! workgroup, with random weights; also with hard weights and inputs ([`HardInput`]).

use super::reduce::HARD_SIZES;
use super::{
    check_case, check_case_by, first_mismatch_nan_as_class, hard_values, poison_value, tiny_value,
    CaseReport, HardInput, Tally,
};
use std::fmt;
use xwarp::cpu::stencil::{self as cpu, StencilElement, POINTS};
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, HardValues, Rng};
use xwarp::error::Result;
use xwarp::stencil::{self, StencilVariant};

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

/// A stencil case on hard weights and inputs.
#[derive(Clone, Copy, Debug)]
pub struct HardStencilCase {
    /// Variant, type and length.
    pub case: StencilCase,
    /// Which hard values.
    pub input: HardInput,
}

/// Every hard-value stencil case: both variants and float types with both kinds of hard input
/// at [`HARD_SIZES`] and (not in `quick` mode) 1000003 elements.
pub fn hard_stencil_cases(quick: bool) -> Vec<HardStencilCase> {
    let long = (!quick).then_some(1_000_003);
    let mut cases = Vec::new();
    for elem in [ElemKind::F32, ElemKind::F64] {
        for variant in StencilVariant::ALL {
            for input in HardInput::ALL {
                for n in HARD_SIZES.into_iter().chain(long) {
                    let case = StencilCase { variant, elem, n };
                    cases.push(HardStencilCase { case, input });
                }
            }
        }
    }
    cases
}

/// Hard weights and an input of `n` elements of `kind`, from the values `hard` allows (never
/// NaN or ±∞: the stencil only multiplies and adds).
///
/// - [`HardInput::Mixed`] (and [`HardInput::Overflow`], the same here) with subnormals: weights
///   and inputs from [`xwarp::Element::random_hard`] (with `hard`'s largest magnitudes some
///   products overflow, and `∞ - ∞` is NaN; each output meets only five products, so most
///   stay numbers). Without subnormals: inputs without them
///   (multiples of the smallest normal, [`HardValues::subnormals`]) and integer weights from -8
///   to 8, whose products and sums stay such multiples: never subnormal, even where a device
///   flushes them.
/// - [`HardInput::Tiny`]: weights and inputs from [`tiny_value`] for products: small normals
///   whose products are subnormal, subnormals, values near ±1 and large ones.
pub fn hard_weights_and_input<T: StencilElement>(
    kind: HardInput,
    hard: HardValues,
    n: usize,
    rng: &mut Rng,
) -> ([T; POINTS], Vec<T>) {
    let finite = HardValues {
        specials: false,
        ..hard
    };
    let one = |rng: &mut Rng| match kind {
        HardInput::Mixed | HardInput::Overflow => T::random_hard(rng, finite),
        HardInput::Tiny => tiny_value(rng, true),
    };
    let weights = std::array::from_fn(|_| match kind {
        HardInput::Mixed | HardInput::Overflow if !hard.subnormals => {
            let w = rng.below(17) as i32 - 8;
            if T::KIND == ElemKind::F32 {
                bytemuck::cast::<f32, T>(w as f32)
            } else {
                bytemuck::cast::<f64, T>(f64::from(w))
            }
        }
        _ => one(rng),
    });
    let input = (0..n).map(|_| one(rng)).collect();
    (weights, input)
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
    run_stencil_tuned(
        dev,
        variant,
        weights,
        input,
        poison,
        stencil::Tuning::default(),
    )
}

/// [`run_stencil`] with explicit [`stencil::Tuning`] (the layers per workgroup).
pub fn run_stencil_tuned<T: StencilElement>(
    dev: &dyn Device,
    variant: StencilVariant,
    weights: [T; POINTS],
    input: &[T],
    poison: T,
    tuning: stencil::Tuning,
) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    dst.fill(dev, poison)?;
    stencil::moving_average_tuned(dev, variant, weights, &src, &mut dst, tuning)?;
    dst.to_vec(dev)
}

fn case_on<T: StencilElement>(
    devices: &[(String, &dyn Device)],
    case: &StencilCase,
    rng: &mut Rng,
) -> CaseReport {
    let weights = random_weights::<T>(rng);
    let input: Vec<T> = rng.vec(case.n);
    let want = cpu::moving_average(weights, &input);
    let poison = poison_value(&want);
    check_case(devices, case.to_string(), &want, |dev| {
        run_stencil(dev, case.variant, weights, &input, poison)
    })
}

/// A hard-value case on every device, compared with NaN as a class (products and sums:
/// [`first_mismatch_nan_as_class`]); `None` where a device flushes subnormals and the case is
/// made of them ([`HardInput::Tiny`]).
fn hard_case_on<T: StencilElement>(
    devices: &[(String, &dyn Device)],
    hard: &HardStencilCase,
    rng: &mut Rng,
) -> Option<CaseReport> {
    let (case, values) = (&hard.case, hard_values(devices, hard.case.elem, false));
    if hard.input == HardInput::Tiny && !values.subnormals {
        return None;
    }
    let (weights, input) = hard_weights_and_input::<T>(hard.input, values, case.n, rng);
    let want = cpu::moving_average(weights, &input);
    let poison = poison_value(&want);
    let name = format!("{case}, {}", hard.input.describe(values));
    Some(check_case_by(
        devices,
        name,
        &want,
        first_mismatch_nan_as_class,
        |dev| run_stencil(dev, case.variant, weights, &input, poison),
    ))
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
    for case in hard_stencil_cases(quick) {
        let r = match case.case.elem {
            ElemKind::F64 => hard_case_on::<f64>(devices, &case, rng),
            _ => hard_case_on::<f32>(devices, &case, rng),
        };
        if let Some(r) = r {
            tally.add(&r, report);
        }
    }
}
