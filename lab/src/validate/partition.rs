//! Partition cases: the count and the whole output (the passing elements in input order, then
//! the others in input order) of every type, predicate spec and awkward length, with the output's
//! slack past its end poisoned and checked untouched; for floats also on hard inputs
//! ([`HardInput`]: NaN payloads, ±0, ±∞, subnormals).

use super::reduce::HARD_SIZES;
use super::vote::{case_input, hard_case_input, PredSpec};
use super::{check_case, hard_values, poison_value, slack_output, CaseReport, HardInput, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Rng};
use xwarp::error::Result;
use xwarp::partition;
use xwarp::vote::{Predicate, PredicateElement};

/// One partition case.
#[derive(Clone, Copy, Debug)]
pub struct PartitionCase {
    /// How the input and predicate are chosen.
    pub spec: PredSpec,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for PartitionCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition {} {} n={}", self.spec, self.elem, self.n)
    }
}

/// The partition lengths: empty, one, a partial warp, a warp and one, a tile and one, and
/// about a million.
pub const PARTITION_LENGTHS: [usize; 6] = [0, 1, 31, 33, 4097, 1_000_003];

/// Every partition case: each type and spec at every length of [`PARTITION_LENGTHS`] (short
/// lengths and one spec in two in `quick` mode); `large` adds 2^24 + 1 elements of `i32` and
/// `f64`.
pub fn partition_cases(quick: bool, large: bool) -> Vec<PartitionCase> {
    let lengths: &[usize] = if quick {
        &[0, 33, 4097]
    } else {
        &PARTITION_LENGTHS
    };
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        for (k, spec) in PredSpec::ALL.into_iter().enumerate() {
            if quick && k % 2 == 1 {
                continue;
            }
            for &n in lengths {
                cases.push(PartitionCase { spec, elem, n });
            }
        }
        if large && matches!(elem, ElemKind::I32 | ElemKind::F64) {
            cases.push(PartitionCase {
                spec: PredSpec::GreaterMedian,
                elem,
                n: (1 << 24) + 1,
            });
        }
    }
    cases
}

/// Runs a partition on `dev` into an output poisoned with `poison` (its slack too): the count,
/// then the output's bits and its slack's.
pub fn run_partition<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &[T],
    poison: T,
) -> Result<Vec<u64>> {
    run_partition_tuned(dev, pred, input, poison, partition::Tuning::default())
}

/// [`run_partition`] planned by `tuning` (the tile offsets scanned in the count pass or by a
/// launch of their own).
pub fn run_partition_tuned<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &[T],
    poison: T,
    tuning: partition::Tuning,
) -> Result<Vec<u64>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let (mut out, whole) = slack_output(dev, input.len(), poison)?;
    let mut count = DeviceVec::from_slice(dev, &[u64::MAX])?;
    partition::partition_tuned(dev, pred, &src, &mut out, &mut count, tuning)?;
    let mut words = count.to_vec(dev)?;
    words.extend(whole.to_vec(dev)?.iter().map(|v| v.to_bits64()));
    Ok(words)
}

/// What [`run_partition`] must return: the CPU twin's count and output, then the poison in the
/// slack.
pub fn expected<T: PredicateElement>(pred: Predicate<T>, input: &[T], poison: T) -> Vec<u64> {
    let (count, out) = cpu::partition::partition(pred, input);
    let mut words = vec![count as u64];
    words.extend(out.iter().map(|v| v.to_bits64()));
    words.extend(std::iter::repeat_n(poison.to_bits64(), super::OUTPUT_SLACK));
    words
}

fn partition_case_on<T: PredicateElement>(
    devices: &[(String, &dyn Device)],
    case: &PartitionCase,
    rng: &mut Rng,
) -> CaseReport {
    let (input, pred) = case_input::<T>(case.spec, case.n, rng);
    let poison = poison_value(&input);
    let want = expected(pred, &input, poison);
    check_case(
        devices,
        format!("{case} ({pred}; count, output)"),
        &want,
        |dev| run_partition(dev, pred, &input, poison),
    )
}

/// A hard-value case (NaN payloads and ±∞ included) on every float type; `None` where a
/// device flushes subnormals and the case is made of them ([`HardInput::Tiny`]).
fn hard_case_on<T: PredicateElement>(
    devices: &[(String, &dyn Device)],
    spec: PredSpec,
    kind: HardInput,
    n: usize,
    rng: &mut Rng,
) -> Option<CaseReport> {
    let values = hard_values(devices, T::KIND, true);
    if kind == HardInput::Tiny && !values.subnormals {
        return None;
    }
    let (input, pred) = hard_case_input::<T>(spec, kind, values, n, rng);
    let poison = poison_value(&input);
    let want = expected(pred, &input, poison);
    let name = format!(
        "partition {spec} {} n={n} ({pred}), {}",
        T::KIND,
        kind.describe(values)
    );
    Some(check_case(devices, name, &want, |dev| {
        run_partition(dev, pred, &input, poison)
    }))
}

/// Runs every partition case, then the hard-value ones: each float type, spec (one in two in
/// `quick` mode) and kind of hard input at [`HARD_SIZES`].
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in partition_cases(quick, large) {
        let r = with_elem!(case.elem, partition_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
    for elem in [ElemKind::F32, ElemKind::F64] {
        for (k, spec) in PredSpec::ALL.into_iter().enumerate() {
            if quick && k % 2 == 1 {
                continue;
            }
            for kind in HardInput::ALL {
                for n in HARD_SIZES {
                    let r = match elem {
                        ElemKind::F32 => hard_case_on::<f32>(devices, spec, kind, n, rng),
                        _ => hard_case_on::<f64>(devices, spec, kind, n, rng),
                    };
                    if let Some(r) = r {
                        tally.add(&r, report);
                    }
                }
            }
        }
    }
}
