//! Vote cases, and the inputs and predicates the vote and compaction cases share; for floats
//! also on hard inputs ([`HardInput`]).

use super::reduce::HARD_SIZES;
use super::{check_case, hard_values, tiny_value, CaseReport, HardInput, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, HardValues, Rng};
use xwarp::error::Result;
use xwarp::vote::{self, Predicate, PredicateElement, RECORD_WORDS};

/// How a case picks its input and predicate: about half the lanes pass, or all, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PredSpec {
    /// [`Predicate::Even`] on values of which about half are even (floats: a quarter of them
    /// random, the rest integers, so some pass neither even nor odd).
    Even,
    /// [`Predicate::Odd`] on the same kind of values.
    Odd,
    /// [`Predicate::NonZero`] on values of which about half are zero (floats: `0.0` and `-0.0`).
    NonZero,
    /// [`Predicate::Greater`] than the median.
    GreaterMedian,
    /// [`Predicate::Less`] than the median.
    LessMedian,
    /// [`Predicate::InRange`] from the first to the third quartile.
    MiddleHalf,
    /// [`Predicate::InRange`] from the least to the greatest value: every lane passes.
    AllPass,
    /// [`Predicate::Greater`] than the greatest value: no lane passes.
    NonePass,
}

impl PredSpec {
    /// Every spec.
    pub const ALL: [PredSpec; 8] = [
        PredSpec::Even,
        PredSpec::Odd,
        PredSpec::NonZero,
        PredSpec::GreaterMedian,
        PredSpec::LessMedian,
        PredSpec::MiddleHalf,
        PredSpec::AllPass,
        PredSpec::NonePass,
    ];
}

impl fmt::Display for PredSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PredSpec::Even => "even",
            PredSpec::Odd => "odd",
            PredSpec::NonZero => "nonzero",
            PredSpec::GreaterMedian => "greater(median)",
            PredSpec::LessMedian => "less(median)",
            PredSpec::MiddleHalf => "in_range(q1..=q3)",
            PredSpec::AllPass => "in_range(min..=max)",
            PredSpec::NonePass => "greater(max)",
        })
    }
}

/// Random values where floats are a mix of random reals and integers (so even and odd pass
/// for some of them), and, for [`PredSpec::NonZero`], about half are zeros.
fn values<T: PredicateElement>(spec: PredSpec, n: usize, rng: &mut Rng) -> Vec<T> {
    let mut v: Vec<T> = rng.vec(n);
    for x in v.iter_mut() {
        let r = rng.below(4);
        if spec == PredSpec::NonZero {
            if r < 2 {
                // Integer zero, or a float's +0.0 / -0.0.
                *x = signed_zero(r == 1);
            }
        } else if r > 0 {
            let int = rng.below(1 << 21) as i64 - (1 << 20);
            *x = integer_valued(int, *x);
        }
    }
    v
}

/// Zero, or for floats `-0.0` when `negative`.
fn signed_zero<T: Element>(negative: bool) -> T {
    let sign = if negative {
        1u64 << (T::KIND.size() * 8 - 1)
    } else {
        0
    };
    match T::KIND {
        ElemKind::F32 => bytemuck::cast_slice::<u32, T>(&[sign as u32])[0],
        ElemKind::F64 => bytemuck::cast_slice::<u64, T>(&[sign])[0],
        _ => T::zeroed(),
    }
}

/// For floats, the float of the integer `int`; other types keep `x`.
fn integer_valued<T: Element>(int: i64, x: T) -> T {
    match T::KIND {
        ElemKind::F32 => bytemuck::cast_slice::<f32, T>(&[int as f32])[0],
        ElemKind::F64 => bytemuck::cast_slice::<f64, T>(&[int as f64])[0],
        _ => x,
    }
}

/// A fresh input of `n` values for `spec`, and the predicate to test it with.
pub fn case_input<T: PredicateElement>(
    spec: PredSpec,
    n: usize,
    rng: &mut Rng,
) -> (Vec<T>, Predicate<T>) {
    let input = values::<T>(spec, n, rng);
    let pred = predicate_for(spec, &input);
    (input, pred)
}

/// A fresh hard input of `n` values of `kind` for `spec` (from the values `hard` allows; for
/// [`PredSpec::NonZero`] about half of them zeros of either sign), and the predicate to test
/// it with: thresholds are quantiles of the input's values other than NaN, so they are hard
/// values too (subnormal ones, for [`HardInput::Tiny`]).
pub fn hard_case_input<T: PredicateElement>(
    spec: PredSpec,
    kind: HardInput,
    hard: HardValues,
    n: usize,
    rng: &mut Rng,
) -> (Vec<T>, Predicate<T>) {
    let input: Vec<T> = (0..n)
        .map(|_| {
            if spec == PredSpec::NonZero && rng.below(2) == 0 {
                return signed_zero(rng.below(2) == 0);
            }
            match kind {
                HardInput::Mixed | HardInput::Overflow => T::random_hard(rng, hard),
                HardInput::Tiny => tiny_value(rng, false),
            }
        })
        .collect();
    let pred = predicate_for(spec, &input);
    (input, pred)
}

/// The predicate of `spec` for `input`.
fn predicate_for<T: PredicateElement>(spec: PredSpec, input: &[T]) -> Predicate<T> {
    // NaN has no rank (and would make the order inconsistent): quantiles of the others.
    #[allow(clippy::eq_op)]
    let ordered: Vec<T> = input.iter().copied().filter(|v| v == v).collect();
    let n = ordered.len();
    // The value of rank q * (n - 1) / 4: the least, the quartiles, the greatest.
    let quantile = |q: usize| -> T {
        if n == 0 {
            return T::zeroed();
        }
        let mut v = ordered.clone();
        let (_, &mut x, _) = v.select_nth_unstable_by(q * (n - 1) / 4, |a, b| {
            a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
        });
        x
    };
    match spec {
        PredSpec::Even => Predicate::Even,
        PredSpec::Odd => Predicate::Odd,
        PredSpec::NonZero => Predicate::NonZero,
        PredSpec::GreaterMedian => Predicate::Greater(quantile(2)),
        PredSpec::LessMedian => Predicate::Less(quantile(2)),
        PredSpec::MiddleHalf => Predicate::InRange {
            lo: quantile(1),
            hi: quantile(3),
        },
        PredSpec::AllPass => Predicate::InRange {
            lo: quantile(0),
            hi: quantile(4),
        },
        PredSpec::NonePass => Predicate::Greater(quantile(4)),
    }
}

/// One vote case.
#[derive(Clone, Copy, Debug)]
pub struct VoteCase {
    /// How the input and predicate are chosen.
    pub spec: PredSpec,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for VoteCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vote {} {} n={}", self.spec, self.elem, self.n)
    }
}

/// The vote lengths: one lane, a partial warp, a warp, a warp and one lane, many warps with a
/// partial last one, and about a million.
pub const VOTE_LENGTHS: [usize; 6] = [1, 31, 32, 33, 1000, (1 << 20) + 7];

/// Every vote case: each spec and type at every length of [`VOTE_LENGTHS`] (two short lengths
/// in `quick` mode).
pub fn vote_cases(quick: bool) -> Vec<VoteCase> {
    let lengths: &[usize] = if quick { &[33, 1000] } else { &VOTE_LENGTHS };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        for spec in PredSpec::ALL {
            for &n in lengths {
                cases.push(VoteCase { spec, elem, n });
            }
        }
    }
    cases
}

/// A vote case on hard inputs.
#[derive(Clone, Copy, Debug)]
pub struct HardVoteCase {
    /// Spec, type and length.
    pub case: VoteCase,
    /// Which hard values.
    pub input: HardInput,
}

/// Every hard-value vote case: each spec and float type with both kinds of hard input at
/// [`HARD_SIZES`] and (not in `quick` mode) 1000003 elements.
pub fn hard_vote_cases(quick: bool) -> Vec<HardVoteCase> {
    let long = (!quick).then_some(1_000_003);
    let mut cases = Vec::new();
    for elem in [ElemKind::F32, ElemKind::F64] {
        for spec in PredSpec::ALL {
            for input in HardInput::ALL {
                for n in HARD_SIZES.into_iter().chain(long) {
                    let case = VoteCase { spec, elem, n };
                    cases.push(HardVoteCase { case, input });
                }
            }
        }
    }
    cases
}

/// Runs a vote on `dev` with outputs poisoned with `poison`: the records' words, then the ranks.
pub fn run_vote<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &[T],
    poison: u32,
) -> Result<Vec<u32>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut records = DeviceVec::alloc(dev, vote::warps(input.len()) * RECORD_WORDS)?;
    let mut ranks = DeviceVec::alloc(dev, input.len())?;
    records.fill(dev, poison)?;
    ranks.fill(dev, poison)?;
    vote::vote(dev, pred, &src, &mut records, &mut ranks)?;
    let mut words = records.to_vec(dev)?;
    words.extend(ranks.to_vec(dev)?);
    Ok(words)
}

fn vote_case_on<T: PredicateElement>(
    devices: &[(String, &dyn Device)],
    case: &VoteCase,
    rng: &mut Rng,
) -> CaseReport {
    let (input, pred) = case_input::<T>(case.spec, case.n, rng);
    let expected = cpu::vote::vote(pred, &input).to_words();
    let poison = super::poison_value(&expected);
    check_case(devices, format!("{case} ({pred})"), &expected, |dev| {
        run_vote(dev, pred, &input, poison)
    })
}

/// A hard-value case on every device (NaN payloads and ±∞ included); `None` where a device
/// flushes subnormals and the case is made of them ([`HardInput::Tiny`]).
fn hard_vote_case_on<T: PredicateElement>(
    devices: &[(String, &dyn Device)],
    hard: &HardVoteCase,
    rng: &mut Rng,
) -> Option<CaseReport> {
    let (case, values) = (&hard.case, hard_values(devices, hard.case.elem, true));
    if hard.input == HardInput::Tiny && !values.subnormals {
        return None;
    }
    let (input, pred) = hard_case_input::<T>(case.spec, hard.input, values, case.n, rng);
    let expected = cpu::vote::vote(pred, &input).to_words();
    let poison = super::poison_value(&expected);
    let name = format!("{case} ({pred}), {}", hard.input.describe(values));
    Some(check_case(devices, name, &expected, |dev| {
        run_vote(dev, pred, &input, poison)
    }))
}

/// Runs every vote case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in vote_cases(quick) {
        let r = with_elem!(case.elem, vote_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
    for case in hard_vote_cases(quick) {
        if let Some(r) = with_elem!(case.case.elem, hard_vote_case_on(devices, &case, rng)) {
            tally.add(&r, report);
        }
    }
}
