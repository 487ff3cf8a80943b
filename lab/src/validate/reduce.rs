//! Reduction cases: every operator and type at every scope, at awkward lengths; for floats
//! also on hard inputs ([`HardInput`]).

use super::{
    check_case_by, first_mismatch, first_mismatch_nan_as_class, hard_values, poison_value,
    tiny_value, CaseReport, Compare, HardInput, Tally,
};
use crate::with_elem;
use std::fmt;
use xwarp::cpu::reduce::{self as cpu, Reduce};
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, HardValues, Rng};
use xwarp::error::Result;
use xwarp::reduce::{self, ReduceOp, WarpForm};

/// Where a reduction acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// [`reduce::warp_reduce`] in one of its forms.
    Warp(WarpForm),
    /// [`reduce::block_reduce`].
    Block,
    /// [`reduce::device_reduce`].
    Device,
}

/// One reduction case.
#[derive(Clone, Copy, Debug)]
pub struct ReduceCase {
    /// Operator.
    pub op: ReduceOp,
    /// Scope.
    pub scope: Scope,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for ReduceCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match self.scope {
            Scope::Warp(WarpForm::Butterfly) => "warp_reduce butterfly",
            Scope::Warp(WarpForm::ShiftDown) => "warp_reduce shift_down",
            Scope::Block => "block_reduce",
            Scope::Device => "device_reduce",
        };
        write!(f, "{scope} {} {} n={}", self.op, self.elem, self.n)
    }
}

/// Inputs for an operator. Representative ones ([`ReduceInput::one`]) keep every result
/// informative: sums of finite mixed magnitudes; products of values near ±1 (floats) or of odd
/// integers (which never collapse to 0); min/max with NaN, -0.0 and +0.0 sprinkled in; bitwise
/// operators with bits that survive many elements. Hard ones ([`ReduceInput::hard_one`]) go
/// where kernels break: every magnitude, subnormals, overflow (whose NaN is compared as any
/// NaN: [`comparison`]), NaN payloads for min and max.
pub trait ReduceInput: Reduce {
    /// One random element for `op`.
    fn one(op: ReduceOp, rng: &mut Rng) -> Self;

    /// One hard element for `op`, of `kind`, from the values `hard` allows (sums and products
    /// never get NaN or ±∞ from it: see [`HardValues::specials`]). Integers give
    /// [`Element::random_hard`].
    fn hard_one(op: ReduceOp, kind: HardInput, hard: HardValues, rng: &mut Rng) -> Self;

    /// A random input of length `n` for `op`. Long inputs are made in blocks of 2^20 elements,
    /// each from its own generator seeded from `rng`, on all cores; the result depends only on
    /// `rng`'s state, never on the number of threads.
    fn input(op: ReduceOp, n: usize, rng: &mut Rng) -> Vec<Self> {
        generate(n, rng, |r| Self::one(op, r))
    }

    /// A hard input of length `n` for `op` ([`ReduceInput::hard_one`]), made like
    /// [`ReduceInput::input`].
    fn hard_input(
        op: ReduceOp,
        kind: HardInput,
        hard: HardValues,
        n: usize,
        rng: &mut Rng,
    ) -> Vec<Self> {
        generate(n, rng, |r| Self::hard_one(op, kind, hard, r))
    }
}

/// `n` values of `one`, in blocks of 2^20 each from its own generator seeded from `rng`, on all
/// cores: the result depends only on `rng`'s state, never on the number of threads.
fn generate<T: Element>(n: usize, rng: &mut Rng, one: impl Fn(&mut Rng) -> T + Sync) -> Vec<T> {
    const BLOCK: usize = 1 << 20;
    if n <= BLOCK {
        return (0..n).map(|_| one(rng)).collect();
    }
    let seeds: Vec<u64> = (0..n.div_ceil(BLOCK)).map(|_| rng.next_u64()).collect();
    let mut out = vec![T::zeroed(); n];
    let blocks: Vec<(u64, &mut [T])> = seeds.into_iter().zip(out.chunks_mut(BLOCK)).collect();
    super::par_each(blocks, |(seed, block)| {
        let mut r = Rng::new(seed);
        for x in block.iter_mut() {
            *x = one(&mut r);
        }
    });
    out
}

/// How results of `op` are compared: a float sum or product that ends in NaN matches any NaN
/// (the documented rule, [`first_mismatch_nan_as_class`]); min and max select operands and are
/// compared bit for bit, NaN payloads included. Integers are never NaN.
pub fn comparison<T: Element>(op: ReduceOp) -> Compare<T> {
    match op {
        ReduceOp::Sum | ReduceOp::Product => first_mismatch_nan_as_class,
        _ => first_mismatch,
    }
}

macro_rules! int_input {
    ($($t:ty),*) => {$(
        impl ReduceInput for $t {
            fn one(op: ReduceOp, rng: &mut Rng) -> Self {
                let bits = <$t>::BITS as u64;
                let r = rng.next_u64() as $t;
                match op {
                    ReduceOp::Product => r | 1,
                    ReduceOp::And => !((1 as $t) << rng.below(8) * (bits / 8)),
                    ReduceOp::Or => (1 as $t) << rng.below(8) * (bits / 8),
                    _ => r,
                }
            }
            fn hard_one(_: ReduceOp, _: HardInput, hard: HardValues, rng: &mut Rng) -> Self {
                Self::random_hard(rng, hard)
            }
        }
    )*};
}
int_input!(i32, u32, i64, u64);

macro_rules! float_input {
    ($($t:ty),*) => {$(
        impl ReduceInput for $t {
            fn one(op: ReduceOp, rng: &mut Rng) -> Self {
                match op {
                    ReduceOp::Product => {
                        let m = 1.0 + (rng.next_f64_mixed() / (1u64 << 21) as f64).clamp(-1e-3, 1e-3);
                        (if rng.next_u64() & 1 == 0 { m } else { -m }) as $t
                    }
                    ReduceOp::Min | ReduceOp::Max => match rng.below(64) {
                        0 => <$t>::NAN,
                        1 => -0.0,
                        2 => 0.0,
                        _ => rng.next_f64_mixed() as $t,
                    },
                    _ => rng.next_f64_mixed() as $t,
                }
            }
            fn hard_one(op: ReduceOp, kind: HardInput, hard: HardValues, rng: &mut Rng) -> Self {
                let finite = HardValues { specials: false, ..hard };
                match (kind, op) {
                    (HardInput::Tiny, ReduceOp::Product) => tiny_value(rng, true),
                    (HardInput::Tiny, _) => tiny_value(rng, false),
                    // Products of hard values may be subnormal: where a device flushes them,
                    // only the values near ±1.
                    (HardInput::Mixed, ReduceOp::Product) if !hard.subnormals => {
                        Self::one(op, rng)
                    }
                    // One hard value in eight among values near ±1: a product of them all
                    // still overflows, vanishes or goes subnormal, but not always at once.
                    (HardInput::Mixed, ReduceOp::Product) => {
                        if rng.below(8) == 0 {
                            Self::random_hard(rng, finite)
                        } else {
                            Self::one(op, rng)
                        }
                    }
                    (HardInput::Mixed, ReduceOp::Min | ReduceOp::Max) => {
                        Self::random_hard(rng, hard)
                    }
                    // Sums stay finite: every result is compared bit for bit.
                    (HardInput::Mixed, _) => Self::random_hard(rng, finite.without_huge()),
                    (HardInput::Overflow, _) => Self::random_hard(rng, finite),
                }
            }
        }
    )*};
}
float_input!(f32, f64);

/// Every reduction case: every scope at small awkward lengths, the device reduce also at
/// 0 and 2^20 + 7 elements. `large` adds device reduces of 2^24 and 2^28 + 3 elements and one
/// i32 sum of 2^31 + 5 (for GPUs).
pub fn reduce_cases(quick: bool, large: bool) -> Vec<ReduceCase> {
    let sizes: &[usize] = if quick {
        &[33, 1000]
    } else {
        &[1, 31, 32, 33, 1000, 4099]
    };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        let float = matches!(elem, ElemKind::F32 | ElemKind::F64);
        for op in ReduceOp::ALL
            .into_iter()
            .filter(|op| !float || op.for_floats())
        {
            for scope in [
                Scope::Warp(WarpForm::Butterfly),
                Scope::Warp(WarpForm::ShiftDown),
                Scope::Block,
                Scope::Device,
            ] {
                for &n in sizes {
                    cases.push(ReduceCase { op, scope, elem, n });
                }
            }
            cases.push(ReduceCase {
                op,
                scope: Scope::Device,
                elem,
                n: 0,
            });
            if !quick {
                cases.push(ReduceCase {
                    op,
                    scope: Scope::Device,
                    elem,
                    n: (1 << 20) + 7,
                });
            }
            if large {
                for n in [1 << 24, (1 << 28) + 3] {
                    cases.push(ReduceCase {
                        op,
                        scope: Scope::Device,
                        elem,
                        n,
                    });
                }
            }
        }
    }
    if large {
        // Beyond 2^31 elements: 64-bit indexing on the host, chunked launches on the device.
        cases.push(ReduceCase {
            op: ReduceOp::Sum,
            scope: Scope::Device,
            elem: ElemKind::I32,
            n: (1 << 31) + 5,
        });
    }
    cases
}

/// A reduction case on hard inputs.
#[derive(Clone, Copy, Debug)]
pub struct HardReduceCase {
    /// Operator, scope, type and length.
    pub case: ReduceCase,
    /// Which hard values.
    pub input: HardInput,
}

/// The lengths of hard-value cases: one element, a partial warp, a warp and one, a tile and one.
pub const HARD_SIZES: [usize; 4] = [1, 31, 33, 4097];

/// Every hard-value reduction case: each float operator and scope with each kind of hard
/// input for it ([`HardInput::for_op`]) at [`HARD_SIZES`], and (not in `quick` mode) the device
/// reduce of 1000003 elements.
pub fn hard_reduce_cases(quick: bool) -> Vec<HardReduceCase> {
    let mut cases = Vec::new();
    for elem in [ElemKind::F32, ElemKind::F64] {
        for op in ReduceOp::ALL.into_iter().filter(|op| op.for_floats()) {
            for &input in HardInput::for_op(op) {
                for scope in [
                    Scope::Warp(WarpForm::Butterfly),
                    Scope::Warp(WarpForm::ShiftDown),
                    Scope::Block,
                    Scope::Device,
                ] {
                    let long = (!quick && scope == Scope::Device).then_some(1_000_003);
                    for n in HARD_SIZES.into_iter().chain(long) {
                        let case = ReduceCase { op, scope, elem, n };
                        cases.push(HardReduceCase { case, input });
                    }
                }
            }
        }
    }
    cases
}

/// The CPU reference's result for a case.
pub fn expected<T: Reduce>(case: &ReduceCase, input: &[T]) -> Vec<T> {
    match case.scope {
        Scope::Warp(WarpForm::Butterfly) => cpu::warp_reduce_butterfly(case.op, input),
        Scope::Warp(WarpForm::ShiftDown) => cpu::warp_reduce_down(case.op, input),
        Scope::Block => cpu::block_reduce(case.op, input),
        Scope::Device => vec![cpu::device_reduce(case.op, input)],
    }
}

/// Runs a case on `dev`: fills the output with `poison` (a value the result must not hold),
/// reduces, downloads.
pub fn run_reduce<T: Reduce>(
    dev: &dyn Device,
    case: &ReduceCase,
    input: &[T],
    poison: T,
) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let out_len = match case.scope {
        Scope::Warp(WarpForm::Butterfly) => input.len(),
        Scope::Warp(WarpForm::ShiftDown) => input.len().div_ceil(32),
        Scope::Block => input.len().div_ceil(reduce::BLOCK as usize),
        Scope::Device => 1,
    };
    let mut dst = DeviceVec::alloc(dev, out_len)?;
    dst.fill(dev, poison)?;
    match case.scope {
        Scope::Warp(form) => reduce::warp_reduce(dev, case.op, form, &src, &mut dst)?,
        Scope::Block => reduce::block_reduce(dev, case.op, &src, &mut dst)?,
        Scope::Device => reduce::device_reduce(dev, case.op, &src, &mut dst, 0)?,
    }
    dst.to_vec(dev)
}

/// A case of a family over [`ReduceInput`]s (reductions, scans): what [`op_case_on`] and
/// [`hard_op_case_on`] need to check it on every device.
pub trait OpCase: fmt::Display {
    /// The operator.
    fn op(&self) -> ReduceOp;
    /// The input's length.
    fn input_len(&self) -> usize;
    /// The CPU reference's output for `input`.
    fn expected<T: Reduce>(&self, input: &[T]) -> Vec<T>;
    /// `dev`'s output for `input`, the output poisoned with `poison` first.
    fn run<T: Reduce>(&self, dev: &dyn Device, input: &[T], poison: T) -> Result<Vec<T>>;
}

impl OpCase for ReduceCase {
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
        run_reduce(dev, self, input, poison)
    }
}

/// `case` on every device, on fresh random input.
pub fn op_case_on<T: ReduceInput>(
    devices: &[(String, &dyn Device)],
    case: &impl OpCase,
    rng: &mut Rng,
) -> CaseReport {
    let input = T::input(case.op(), case.input_len(), rng);
    let want = case.expected(&input);
    let poison = poison_value(&want);
    check_case_by(
        devices,
        case.to_string(),
        &want,
        comparison(case.op()),
        |dev| case.run(dev, &input, poison),
    )
}

/// `case` on every device with hard values of kind `hard` ([`HardInput`]); `None` where a
/// device flushes subnormals and the case is made of them ([`HardInput::Tiny`]).
pub fn hard_op_case_on<T: ReduceInput>(
    devices: &[(String, &dyn Device)],
    case: &impl OpCase,
    elem: ElemKind,
    hard: HardInput,
    rng: &mut Rng,
) -> Option<CaseReport> {
    let values = hard_values(devices, elem, true);
    if hard == HardInput::Tiny && !values.subnormals {
        return None;
    }
    let input = T::hard_input(case.op(), hard, values, case.input_len(), rng);
    let want = case.expected(&input);
    let poison = poison_value(&want);
    let name = format!("{case}, {}", hard.describe(values));
    Some(check_case_by(
        devices,
        name,
        &want,
        comparison(case.op()),
        |dev| case.run(dev, &input, poison),
    ))
}

/// Runs every reduction case (`large` adds the GPU-sized ones).
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in reduce_cases(quick, large) {
        let r = with_elem!(case.elem, op_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
    for hard in hard_reduce_cases(quick) {
        let (case, elem) = (&hard.case, hard.case.elem);
        if let Some(r) = with_elem!(elem, hard_op_case_on(devices, case, elem, hard.input, rng)) {
            tally.add(&r, report);
        }
    }
}
