//! Cases of the families over runs of equal consecutive keys: unique, run-length encoding and
//! reduce-by-key. Keys of every type in several patterns (every key distinct, all equal, short
//! runs, long runs of random lengths, and hard values repeated: NaN payloads, ±0, ±∞ and
//! subnormals next to each other), at every awkward length, with the look-back's fallback
//! forced by spin 0 too; every output is longer than the input by [`OUTPUT_SLACK`] and
//! poisoned, so that whatever lies past the run count must come back untouched. Results are
//! compared bit for bit with the CPU twins ([`xwarp::cpu::runs`]), reduce-by-key's float sums
//! and products that end in NaN as any NaN (the documented rule).

use super::reduce::ReduceInput;
use super::{check_case, hard_values, poison_value, CaseReport, HardInput, Tally, OUTPUT_SLACK};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, HardValues, Rng};
use xwarp::error::Result;
use xwarp::reduce::ReduceOp;
use xwarp::runs::Tuning;

/// How a case's keys are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPattern {
    /// [`Element::random`]: every key distinct (almost surely), runs of length 1.
    Distinct,
    /// One random key repeated: one run of length n.
    AllEqual,
    /// Keys from three random values: runs of about 1.5.
    Short,
    /// Runs of random lengths from 1 to 300 of random keys (a key may repeat after another).
    Long,
    /// Hard values (for floats: NaN payloads of both signs, ±0, ±∞, subnormals; for integers
    /// the edge values), each repeated 1 to 4 times, with `+0.0` next to `-0.0` and NaNs of
    /// other payloads next to each other often.
    Hard,
}

impl KeyPattern {
    /// Every pattern.
    pub const ALL: [KeyPattern; 5] = [
        KeyPattern::Distinct,
        KeyPattern::AllEqual,
        KeyPattern::Short,
        KeyPattern::Long,
        KeyPattern::Hard,
    ];

    /// `n` keys of this pattern.
    pub fn keys<K: Element>(self, n: usize, rng: &mut Rng) -> Vec<K> {
        match self {
            KeyPattern::Distinct => rng.vec(n),
            KeyPattern::AllEqual => vec![K::random(rng); n],
            KeyPattern::Short => {
                let values: Vec<K> = rng.vec(3);
                (0..n).map(|_| values[rng.below(3) as usize]).collect()
            }
            KeyPattern::Long => {
                let mut keys = Vec::with_capacity(n);
                while keys.len() < n {
                    let len = (1 + rng.below(300) as usize).min(n - keys.len());
                    keys.extend(std::iter::repeat_n(K::random(rng), len));
                }
                keys
            }
            KeyPattern::Hard => {
                let neighbours: Vec<K> = twins::<K>();
                let mut keys = Vec::with_capacity(n);
                while keys.len() < n {
                    let v = if rng.below(4) == 0 {
                        neighbours[rng.below(neighbours.len() as u64) as usize]
                    } else {
                        K::random_hard(rng, HardValues::ALL)
                    };
                    let len = (1 + rng.below(4) as usize).min(n - keys.len());
                    keys.extend(std::iter::repeat_n(v, len));
                }
                keys
            }
        }
    }
}

/// Keys equal as numbers but not as bits (floats: `0.0`, `-0.0`, NaNs of several payloads and
/// signs), or edge values for integers.
fn twins<K: Element>() -> Vec<K> {
    let bits: &[u64] = match K::KIND {
        ElemKind::F32 => &[
            0,
            0x8000_0000,
            0x7fc0_0000,
            0x7fc0_0001,
            0xffc0_0000,
            0x7f80_0001,
        ],
        ElemKind::F64 => &[
            0,
            0x8000_0000_0000_0000,
            0x7ff8_0000_0000_0000,
            0x7ff8_0000_0000_0001,
            0xfff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
        ],
        _ => &[0, 1, u64::MAX, 1 << 31, 1 << 63],
    };
    bits.iter()
        .map(|&b| {
            if K::KIND.size() == 4 {
                bytemuck::cast_slice::<u32, K>(&[b as u32])[0]
            } else {
                bytemuck::cast_slice::<u64, K>(&[b])[0]
            }
        })
        .collect()
}

impl fmt::Display for KeyPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyPattern::Distinct => "distinct",
            KeyPattern::AllEqual => "all equal",
            KeyPattern::Short => "short runs",
            KeyPattern::Long => "long runs",
            KeyPattern::Hard => "hard repeated",
        })
    }
}

/// Which family a case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunsOp {
    /// [`xwarp::unique::unique`].
    Unique,
    /// [`xwarp::run_length::encode`].
    RunLength,
    /// [`xwarp::reduce_by_key::reduce_by_key`] with values of this type.
    ReduceByKey(ReduceOp, ElemKind),
}

impl fmt::Display for RunsOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunsOp::Unique => write!(f, "unique"),
            RunsOp::RunLength => write!(f, "run_length"),
            RunsOp::ReduceByKey(op, v) => write!(f, "reduce_by_key {op} (values {v})"),
        }
    }
}

/// One case.
#[derive(Clone, Copy, Debug)]
pub struct RunsCase {
    /// The family and, for reduce-by-key, its operator and value type.
    pub op: RunsOp,
    /// Key type.
    pub key: ElemKind,
    /// How the keys are made.
    pub pattern: KeyPattern,
    /// Number of keys.
    pub n: usize,
    /// Look-back spin (0 forces the fallback wherever a predecessor has not published).
    pub tuning: Tuning,
    /// Unique and run-length encoding: how they run ([`UniqueWay`]); reduce-by-key ignores it.
    pub way: UniqueWay,
}

/// How a unique or run-length encoding case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueWay {
    /// [`xwarp::unique::unique_tuned`] as planned for the device.
    Planned,
    /// Planned as if one kernel binding spanned at most this many elements: unique in many
    /// chunks, each reading the key before it, and many output windows; run-length encoding
    /// then takes the runs kernel.
    Chunks(usize),
    /// [`xwarp::unique::unique_runs_kernel`] or [`xwarp::run_length::encode_runs_kernel`]:
    /// what 64-bit keys take on a device without 64-bit integers in kernels.
    RunsKernel,
}

impl fmt::Display for RunsCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} keys {} {} n={}",
            self.op, self.key, self.pattern, self.n
        )?;
        if self.tuning != Tuning::default() {
            write!(f, " spin={}", self.tuning.spin)?;
        }
        match self.way {
            UniqueWay::Planned => {}
            UniqueWay::Chunks(b) => write!(f, " bindings of {b} elements")?,
            UniqueWay::RunsKernel => write!(f, " by the runs kernel")?,
        }
        Ok(())
    }
}

/// The lengths: empty, one, a partial warp, a warp and one, a tile and one, and about a
/// million.
pub const RUNS_LENGTHS: [usize; 6] = [0, 1, 31, 33, 4097, 1_000_003];

/// The operators and value types of reduce-by-key cases: every operator of every value type.
pub fn rbk_ops() -> Vec<(ReduceOp, ElemKind)> {
    let mut v = Vec::new();
    for elem in ElemKind::ALL {
        let float = matches!(elem, ElemKind::F32 | ElemKind::F64);
        for op in ReduceOp::ALL {
            if !float || op.for_floats() {
                v.push((op, elem));
            }
        }
    }
    v
}

/// The cases of `family` (`unique`, `run_length` or `reduce_by_key`):
/// - unique and run-length encoding: every key type and pattern at every length of
///   [`RUNS_LENGTHS`], and at 300007 with spin 0; also planned for bindings of a few tiles
///   (long runs, all keys equal, and short runs with spin 0, at 50001) and by the runs kernel
///   (hard values at 4097, long runs at 300007 with spin 0);
/// - reduce-by-key: every operator of every value type with `u32` keys, and `f32` and `f64`
///   sums with keys of every type, each pattern at every length (the longest for long runs
///   only), and at 300007 with spin 0;
///
/// short lengths and fewer patterns in `quick` mode; `large` adds 2^24 + 1 keys.
pub fn runs_cases(family: &str, quick: bool, large: bool) -> Vec<RunsCase> {
    let lengths: &[usize] = if quick {
        &[0, 1, 33, 4097]
    } else {
        &RUNS_LENGTHS
    };
    let patterns: &[KeyPattern] = if quick {
        &[KeyPattern::Short, KeyPattern::Long, KeyPattern::Hard]
    } else {
        &KeyPattern::ALL
    };
    let spin0 = Tuning {
        spin: 0,
        ..Default::default()
    };
    let mut cases = Vec::new();
    let mut add = |op: RunsOp, key: ElemKind, every_length: bool| {
        for &pattern in patterns {
            let long = every_length || pattern == KeyPattern::Long;
            for &n in lengths.iter().filter(|&&n| long || n < 1_000_000) {
                cases.push(RunsCase {
                    op,
                    key,
                    pattern,
                    n,
                    tuning: Tuning::default(),
                    way: UniqueWay::Planned,
                });
            }
        }
        let n = if quick { 70_001 } else { 300_007 };
        let case = |pattern, n, tuning, way| RunsCase {
            op,
            key,
            pattern,
            n,
            tuning,
            way,
        };
        cases.push(case(KeyPattern::Long, n, spin0, UniqueWay::Planned));
        if matches!(op, RunsOp::Unique | RunsOp::RunLength) {
            let chunks = UniqueWay::Chunks(xwarp::compact::MIN_BINDING_ELEMS);
            let d = Tuning::default();
            cases.push(case(KeyPattern::Long, 50_001, d, chunks));
            cases.push(case(KeyPattern::AllEqual, 50_001, d, chunks));
            cases.push(case(KeyPattern::Short, 50_001, spin0, chunks));
            cases.push(case(KeyPattern::Hard, 4097, d, UniqueWay::RunsKernel));
            cases.push(case(KeyPattern::Long, n, spin0, UniqueWay::RunsKernel));
        }
        if large {
            let d = Tuning::default();
            cases.push(case(KeyPattern::Long, (1 << 24) + 1, d, UniqueWay::Planned));
        }
    };
    match family {
        "unique" | "run_length" => {
            let op = if family == "unique" {
                RunsOp::Unique
            } else {
                RunsOp::RunLength
            };
            for key in ElemKind::ALL {
                add(op, key, true);
            }
        }
        _ => {
            for (op, value) in rbk_ops() {
                add(RunsOp::ReduceByKey(op, value), ElemKind::U32, false);
            }
            for value in [ElemKind::F32, ElemKind::F64] {
                for key in ElemKind::ALL.into_iter().filter(|&k| k != ElemKind::U32) {
                    add(RunsOp::ReduceByKey(ReduceOp::Sum, value), key, false);
                }
            }
        }
    }
    cases
}

/// A result as one list of words: the run count, then every slot of the keys output, then
/// every slot of the lengths or values output (reduce-by-key's float sums and products with
/// each NaN as one pattern: they match any NaN).
fn words<K: Element, V: Element>(
    count: u64,
    keys: &[K],
    values: &[V],
    nan_class: bool,
) -> Vec<u64> {
    let mut w = vec![count];
    w.extend(keys.iter().map(|k| k.to_bits64()));
    w.extend(values.iter().map(|&v| {
        if nan_class && super::is_nan(v) {
            u64::MAX
        } else {
            v.to_bits64()
        }
    }));
    w
}

/// Pads the CPU's outputs to the outputs' length with their poison.
fn padded<T: Element>(mut v: Vec<T>, len: usize, poison: T) -> Vec<T> {
    v.resize(len, poison);
    v
}

/// Runs unique or run-length encoding (`run_length`) on `dev` into outputs of
/// `keys.len() + OUTPUT_SLACK` elements poisoned with `poison` (lengths with `0xcdcdcdcd`):
/// the result as [`expected_unique`] and [`expected_run_length`] give it.
pub fn run_unique_or_rle<K: Element>(
    dev: &dyn Device,
    run_length: bool,
    keys: &[K],
    poison: K,
    tuning: Tuning,
    way: UniqueWay,
) -> Result<Vec<u64>> {
    let len = keys.len() + OUTPUT_SLACK;
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut keys_out = DeviceVec::<K>::alloc(dev, len)?;
    keys_out.fill(dev, poison)?;
    let mut count = DeviceVec::from_slice(dev, &[u64::MAX])?;
    let compact = |max_binding_elems| xwarp::compact::Tuning {
        spin: tuning.spin,
        max_binding_elems,
        ..Default::default()
    };
    if run_length {
        let mut lengths = DeviceVec::<u32>::alloc(dev, len)?;
        lengths.fill(dev, 0xcdcd_cdcd)?;
        let (k, l, c) = (&mut keys_out, &mut lengths, &mut count);
        match way {
            UniqueWay::Planned => {
                xwarp::run_length::encode_tuned(dev, &input, k, l, c, compact(None))?
            }
            UniqueWay::Chunks(b) => {
                xwarp::run_length::encode_tuned(dev, &input, k, l, c, compact(Some(b)))?
            }
            UniqueWay::RunsKernel => {
                xwarp::run_length::encode_runs_kernel(dev, &input, k, l, c, tuning)?
            }
        }
        Ok(words(
            count.to_vec(dev)?[0],
            &keys_out.to_vec(dev)?,
            &lengths.to_vec(dev)?,
            false,
        ))
    } else {
        match way {
            UniqueWay::Planned => {
                xwarp::unique::unique_tuned(dev, &input, &mut keys_out, &mut count, compact(None))?
            }
            UniqueWay::Chunks(b) => xwarp::unique::unique_tuned(
                dev,
                &input,
                &mut keys_out,
                &mut count,
                compact(Some(b)),
            )?,
            UniqueWay::RunsKernel => {
                xwarp::unique::unique_runs_kernel(dev, &input, &mut keys_out, &mut count, tuning)?
            }
        }
        Ok(words::<K, u32>(
            count.to_vec(dev)?[0],
            &keys_out.to_vec(dev)?,
            &[],
            false,
        ))
    }
}

/// The CPU twin's unique keys as [`run_unique_or_rle`] returns them.
pub fn expected_unique<K: Element>(keys: &[K], poison: K) -> Vec<u64> {
    let u = cpu::runs::unique(keys);
    let count = u.len() as u64;
    words::<K, u32>(
        count,
        &padded(u, keys.len() + OUTPUT_SLACK, poison),
        &[],
        false,
    )
}

/// The CPU twin's run-length encoding as [`run_unique_or_rle`] returns it.
pub fn expected_run_length<K: Element>(keys: &[K], poison: K) -> Vec<u64> {
    let (k, l) = cpu::runs::run_length(keys);
    let (count, len) = (k.len() as u64, keys.len() + OUTPUT_SLACK);
    words(
        count,
        &padded(k, len, poison),
        &padded(l, len, 0xcdcd_cdcd),
        false,
    )
}

/// Case `j` of a row `i` of sizes in the tests of run-length encoding's paths: the look-back's
/// fallback forced (spin 0) every other case, all keys equal every third, else short runs.
pub fn rotating_case(i: usize, j: usize) -> (Tuning, KeyPattern) {
    let tuning = Tuning {
        spin: if (i + j).is_multiple_of(2) {
            0
        } else {
            1 << 12
        },
        ..Default::default()
    };
    let pattern = if j % 3 == 2 {
        KeyPattern::AllEqual
    } else {
        KeyPattern::Short
    };
    (tuning, pattern)
}

/// Run-length encodes `n` fresh keys of `pattern` on `dev` by the planned path (4-byte keys as
/// `u32`, 8-byte ones as `f64`), into poisoned outputs: whether it equals the CPU twin's.
pub fn planned_rle_matches(
    dev: &dyn Device,
    elem_bytes: usize,
    n: usize,
    pattern: KeyPattern,
    tuning: Tuning,
    rng: &mut Rng,
) -> Result<bool> {
    if elem_bytes == 4 {
        let keys: Vec<u32> = pattern.keys(n, rng);
        let got = run_unique_or_rle(dev, true, &keys, 7, tuning, UniqueWay::Planned)?;
        Ok(got == expected_run_length(&keys, 7))
    } else {
        let keys: Vec<f64> = pattern.keys(n, rng);
        let got = run_unique_or_rle(dev, true, &keys, 0.5, tuning, UniqueWay::Planned)?;
        Ok(got == expected_run_length(&keys, 0.5))
    }
}

/// Whether `op`'s float results are compared with NaN as a class.
fn nan_class<V: Element>(op: ReduceOp) -> bool {
    matches!(V::KIND, ElemKind::F32 | ElemKind::F64)
        && matches!(op, ReduceOp::Sum | ReduceOp::Product)
}

/// Runs reduce-by-key on `dev` into outputs of `keys.len() + OUTPUT_SLACK` elements poisoned
/// with `key_poison` and `value_poison`: the result as [`expected_reduce_by_key`] gives it.
pub fn run_reduce_by_key<K: Element, V: xwarp::cpu::reduce::Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    keys: &[K],
    values: &[V],
    poisons: (K, V),
    tuning: Tuning,
) -> Result<Vec<u64>> {
    let len = keys.len() + OUTPUT_SLACK;
    let k_in = DeviceVec::from_slice(dev, keys)?;
    let v_in = DeviceVec::from_slice(dev, values)?;
    let mut k_out = DeviceVec::<K>::alloc(dev, len)?;
    let mut v_out = DeviceVec::<V>::alloc(dev, len)?;
    k_out.fill(dev, poisons.0)?;
    v_out.fill(dev, poisons.1)?;
    let mut count = DeviceVec::from_slice(dev, &[u64::MAX])?;
    xwarp::reduce_by_key::reduce_by_key_tuned(
        dev, op, &k_in, &v_in, &mut k_out, &mut v_out, &mut count, tuning,
    )?;
    Ok(words(
        count.to_vec(dev)?[0],
        &k_out.to_vec(dev)?,
        &v_out.to_vec(dev)?,
        nan_class::<V>(op),
    ))
}

/// The CPU twin's reduce-by-key as [`run_reduce_by_key`] returns it.
pub fn expected_reduce_by_key<K: Element, V: xwarp::cpu::reduce::Reduce>(
    op: ReduceOp,
    keys: &[K],
    values: &[V],
    poisons: (K, V),
) -> Vec<u64> {
    let (k, v) = cpu::runs::reduce_by_key(op, keys, values);
    let (count, len) = (k.len() as u64, keys.len() + OUTPUT_SLACK);
    words(
        count,
        &padded(k, len, poisons.0),
        &padded(v, len, poisons.1),
        nan_class::<V>(op),
    )
}

/// Values for reduce-by-key with `op`: representative ones, or for floats in one case in two
/// hard ones (finite for sums and products), from the values every device computes like the
/// CPU.
pub fn rbk_values<V: ReduceInput>(
    devices: &[(String, &dyn Device)],
    op: ReduceOp,
    n: usize,
    rng: &mut Rng,
) -> Vec<V> {
    let float = matches!(V::KIND, ElemKind::F32 | ElemKind::F64);
    if float && rng.below(2) == 0 {
        let specials = matches!(op, ReduceOp::Min | ReduceOp::Max);
        let hard = hard_values(devices, V::KIND, specials);
        let hard = if op == ReduceOp::Sum {
            hard.without_huge()
        } else {
            hard
        };
        V::hard_input(op, HardInput::Mixed, hard, n, rng)
    } else {
        V::input(op, n, rng)
    }
}

fn unique_or_rle_on<K: Element>(
    devices: &[(String, &dyn Device)],
    case: &RunsCase,
    rng: &mut Rng,
) -> CaseReport {
    let keys: Vec<K> = case.pattern.keys(case.n, rng);
    let poison = poison_value(&keys);
    let rle = case.op == RunsOp::RunLength;
    let want = if rle {
        expected_run_length(&keys, poison)
    } else {
        expected_unique(&keys, poison)
    };
    check_case(
        devices,
        format!("{case} (count, keys, lengths)"),
        &want,
        |dev| run_unique_or_rle(dev, rle, &keys, poison, case.tuning, case.way),
    )
}

fn rbk_on<K: Element>(
    devices: &[(String, &dyn Device)],
    case: &RunsCase,
    rng: &mut Rng,
) -> CaseReport {
    let RunsOp::ReduceByKey(op, value) = case.op else {
        unreachable!("reduce-by-key cases only")
    };
    let keys: Vec<K> = case.pattern.keys(case.n, rng);
    match value {
        ElemKind::I32 => rbk_typed::<K, i32>(devices, case, op, &keys, rng),
        ElemKind::U32 => rbk_typed::<K, u32>(devices, case, op, &keys, rng),
        ElemKind::F32 => rbk_typed::<K, f32>(devices, case, op, &keys, rng),
        ElemKind::I64 => rbk_typed::<K, i64>(devices, case, op, &keys, rng),
        ElemKind::U64 => rbk_typed::<K, u64>(devices, case, op, &keys, rng),
        ElemKind::F64 => rbk_typed::<K, f64>(devices, case, op, &keys, rng),
    }
}

fn rbk_typed<K: Element, V: ReduceInput>(
    devices: &[(String, &dyn Device)],
    case: &RunsCase,
    op: ReduceOp,
    keys: &[K],
    rng: &mut Rng,
) -> CaseReport {
    let values: Vec<V> = rbk_values(devices, op, keys.len(), rng);
    let poisons = (poison_value(keys), poison_value(&values));
    let want = expected_reduce_by_key(op, keys, &values, poisons);
    check_case(
        devices,
        format!("{case} (count, keys, values)"),
        &want,
        |dev| run_reduce_by_key(dev, op, keys, &values, poisons, case.tuning),
    )
}

/// Runs one case on every device.
pub fn case_on(devices: &[(String, &dyn Device)], case: &RunsCase, rng: &mut Rng) -> CaseReport {
    match case.op {
        RunsOp::ReduceByKey(..) => with_elem!(case.key, rbk_on(devices, case, rng)),
        _ => with_elem!(case.key, unique_or_rle_on(devices, case, rng)),
    }
}

/// Runs every case of `family` (`unique`, `run_length` or `reduce_by_key`).
pub fn run(
    family: &str,
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in runs_cases(family, quick, large) {
        let r = case_on(devices, &case, rng);
        tally.add(&r, report);
    }
}
