//! Compaction cases: count and contents (stable: in order; unordered: as a multiset), and the
//! output past the count left untouched; for floats also on hard inputs ([`HardInput`]).

use super::reduce::HARD_SIZES;
use super::vote::{case_input, hard_case_input, PredSpec};
use super::{check_case, hard_values, poison_value, CaseReport, HardInput, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::compact::{self, Order, Tuning};
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, Rng};
use xwarp::error::Result;
use xwarp::vote::{Predicate, PredicateElement};

/// Output slots beyond the input's length in every case, poisoned, to catch writes past the end.
pub const SLACK: usize = 3;

/// One compaction case.
#[derive(Clone, Copy, Debug)]
pub struct CompactCase {
    /// Stable or unordered.
    pub order: Order,
    /// How the input and predicate are chosen.
    pub spec: PredSpec,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
    /// Planning limits (small ones force many chunks and output windows).
    pub tuning: Tuning,
}

impl fmt::Display for CompactCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "compact {} {} {} n={}",
            self.order, self.spec, self.elem, self.n
        )?;
        if let Some(m) = self.tuning.max_binding_elems {
            write!(f, " max_binding_elems={m}")?;
        }
        if self.tuning.spin != Tuning::default().spin {
            write!(f, " spin={}", self.tuning.spin)?;
        }
        Ok(())
    }
}

/// The compaction lengths: empty, one, a partial warp, a warp and one, a partial tile, and
/// about a million.
pub const COMPACT_LENGTHS: [usize; 6] = [0, 1, 31, 33, 1000, 1_000_003];

/// Every compaction case: each order, spec and type at every length of [`COMPACT_LENGTHS`],
/// and per order and type a long input planned with a small binding limit, so that it runs in
/// many chunks and output windows, the stable order once more with the look-back's fallback
/// forced by spin 0 (short lengths and one spec in two in `quick` mode). `large`
/// adds GPU-sized inputs.
pub fn compact_cases(quick: bool, large: bool) -> Vec<CompactCase> {
    let lengths: &[usize] = if quick {
        &[0, 33, 1000]
    } else {
        &COMPACT_LENGTHS
    };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        for order in [Order::Stable, Order::Unordered] {
            for (k, spec) in PredSpec::ALL.into_iter().enumerate() {
                if quick && k % 2 == 1 {
                    continue;
                }
                for &n in lengths {
                    cases.push(CompactCase {
                        order,
                        spec,
                        elem,
                        n,
                        tuning: Tuning::default(),
                    });
                }
            }
            let tuning = Tuning {
                max_binding_elems: Some(1 << 16),
                ..Tuning::default()
            };
            if large && matches!(elem, ElemKind::I32 | ElemKind::F64) {
                // GPU-sized: one launch chunk of 2^24 + 1, and for the stable order 2^28 + 3.
                let mut lengths = vec![(1 << 24) + 1];
                if order == Order::Stable && elem == ElemKind::I32 {
                    lengths.push((1 << 28) + 3);
                }
                for n in lengths {
                    cases.push(CompactCase {
                        order,
                        spec: PredSpec::GreaterMedian,
                        elem,
                        n,
                        tuning: Tuning::default(),
                    });
                }
            }
            for spec in [PredSpec::GreaterMedian, PredSpec::AllPass] {
                cases.push(CompactCase {
                    order,
                    spec,
                    elem,
                    n: if quick { 70_001 } else { 300_007 },
                    tuning,
                });
            }
            if order == Order::Stable {
                // Every look-back that finds a predecessor unpublished counts its tile itself.
                cases.push(CompactCase {
                    order,
                    spec: PredSpec::GreaterMedian,
                    elem,
                    n: if quick { 70_001 } else { 300_007 },
                    tuning: Tuning { spin: 0, ..tuning },
                });
            }
        }
    }
    cases
}

/// A compaction case on hard inputs.
#[derive(Clone, Copy, Debug)]
pub struct HardCompactCase {
    /// Order, spec, type, length and tuning.
    pub case: CompactCase,
    /// Which hard values.
    pub input: HardInput,
}

/// Every hard-value compaction case: each order, spec and float type with both kinds of hard
/// input at [`HARD_SIZES`] and (not in `quick` mode) 1000003 elements (one spec in two in
/// `quick` mode).
pub fn hard_compact_cases(quick: bool) -> Vec<HardCompactCase> {
    let long = (!quick).then_some(1_000_003);
    let mut cases = Vec::new();
    for elem in [ElemKind::F32, ElemKind::F64] {
        for order in [Order::Stable, Order::Unordered] {
            for (k, spec) in PredSpec::ALL.into_iter().enumerate() {
                if quick && k % 2 == 1 {
                    continue;
                }
                for input in HardInput::ALL {
                    for n in HARD_SIZES.into_iter().chain(long) {
                        let case = CompactCase {
                            order,
                            spec,
                            elem,
                            n,
                            tuning: Tuning::default(),
                        };
                        cases.push(HardCompactCase { case, input });
                    }
                }
            }
        }
    }
    cases
}

/// Runs a compaction on `dev` into an output of `input.len() + SLACK` elements poisoned with
/// `poison`: the count and the whole output.
pub fn run_compact<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &[T],
    poison: T,
    tuning: Tuning,
) -> Result<(u64, Vec<T>)> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len() + SLACK)?;
    dst.fill(dev, poison)?;
    let mut count = DeviceVec::from_slice(dev, &[u64::MAX])?;
    compact::compact_tuned(dev, order, pred, &src, &mut dst, &mut count, tuning)?;
    Ok((count.to_vec(dev)?[0], dst.to_vec(dev)?))
}

/// What a compaction is compared by: the count, then the output's bits, where for
/// [`Order::Unordered`] the first `count` (the multiset) are sorted.
pub fn comparable<T: Element>(order: Order, count: u64, output: &[T]) -> Vec<u64> {
    let mut bits: Vec<u64> = output.iter().map(|v| v.to_bits64()).collect();
    if order == Order::Unordered {
        let k = (count as usize).min(bits.len());
        bits[..k].sort_unstable();
    }
    let mut words = vec![count];
    words.extend(bits);
    words
}

/// The expected output of a case: the CPU result, then `poison` in every other slot.
pub fn expected_output<T: PredicateElement>(
    order: Order,
    pred: Predicate<T>,
    input: &[T],
    poison: T,
) -> (u64, Vec<T>) {
    let mut out = match order {
        Order::Stable => cpu::compact::stable(pred, input),
        Order::Unordered => cpu::compact::unordered(pred, input),
    };
    let count = out.len() as u64;
    out.resize(input.len() + SLACK, poison);
    (count, out)
}

fn compact_case_on<T: PredicateElement>(
    devices: &[(String, &dyn Device)],
    case: &CompactCase,
    rng: &mut Rng,
) -> CaseReport {
    let (input, pred) = case_input::<T>(case.spec, case.n, rng);
    let poison = poison_value(&input);
    let (count, out) = expected_output(case.order, pred, &input, poison);
    let expected = comparable(case.order, count, &out);
    check_case(devices, format!("{case} ({pred})"), &expected, |dev| {
        let (count, out) = run_compact(dev, case.order, pred, &input, poison, case.tuning)?;
        Ok(comparable(case.order, count, &out))
    })
}

/// A hard-value case on every device (NaN payloads and ±∞ included); `None` where a device
/// flushes subnormals and the case is made of them ([`HardInput::Tiny`]).
fn hard_compact_case_on<T: PredicateElement>(
    devices: &[(String, &dyn Device)],
    hard: &HardCompactCase,
    rng: &mut Rng,
) -> Option<CaseReport> {
    let (case, values) = (&hard.case, hard_values(devices, hard.case.elem, true));
    if hard.input == HardInput::Tiny && !values.subnormals {
        return None;
    }
    let (input, pred) = hard_case_input::<T>(case.spec, hard.input, values, case.n, rng);
    let poison = poison_value(&input);
    let (count, out) = expected_output(case.order, pred, &input, poison);
    let expected = comparable(case.order, count, &out);
    let name = format!("{case} ({pred}), {}", hard.input.describe(values));
    Some(check_case(devices, name, &expected, |dev| {
        let (count, out) = run_compact(dev, case.order, pred, &input, poison, case.tuning)?;
        Ok(comparable(case.order, count, &out))
    }))
}

/// Runs every compaction case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in compact_cases(quick, large) {
        let r = with_elem!(case.elem, compact_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
    for case in hard_compact_cases(quick) {
        if let Some(r) = with_elem!(case.case.elem, hard_compact_case_on(devices, &case, rng)) {
            tally.add(&r, report);
        }
    }
}
