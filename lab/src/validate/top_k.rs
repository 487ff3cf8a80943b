//! Top-k cases: keys of every type, the k largest and the k smallest, with keys only, `u32` and
//! `u64` values and `u32` and `u64` indices, `k` of 1, a few, about half and `n`, on keys of
//! several patterns (uniform, all equal, a few distinct so that ties cross the k-th place, and
//! hard values: NaN payloads, ±∞, ±0, subnormals), every output poisoned first and compared bit
//! for bit with the CPU twin ([`xwarp::cpu::top_k`]).

use super::sort::{pair_value, Pattern};
use super::{check_case, CaseReport, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, Rng};
use xwarp::error::Result;
use xwarp::sort::SortOrder;
use xwarp::top_k;

/// What a case returns with the keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopKOp {
    /// [`top_k::top_k`].
    Keys,
    /// [`top_k::top_k_pairs`] with values of this type made from the keys' input indices
    /// ([`pair_value`]).
    Pairs(ElemKind),
    /// [`top_k::top_k_indices`] with indices of this type.
    Indices(ElemKind),
}

impl fmt::Display for TopKOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopKOp::Keys => write!(f, "top_k"),
            TopKOp::Pairs(v) => write!(f, "top_k_pairs (values {v})"),
            TopKOp::Indices(i) => write!(f, "top_k_indices ({i})"),
        }
    }
}

/// Which `k` a case asks for, of `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KChoice {
    /// 1.
    One,
    /// A random k from 2 to 40.
    Few,
    /// About half.
    Half,
    /// Every key.
    All,
}

impl KChoice {
    /// Every choice.
    pub const ALL: [KChoice; 4] = [KChoice::One, KChoice::Few, KChoice::Half, KChoice::All];

    /// The `k` of `n` keys (at least 1).
    pub fn k(self, n: usize, rng: &mut Rng) -> usize {
        match self {
            KChoice::One => 1,
            KChoice::Few => (2 + rng.below(39) as usize).min(n),
            KChoice::Half => n.div_ceil(2),
            KChoice::All => n,
        }
    }
}

/// One top-k case.
#[derive(Clone, Copy, Debug)]
pub struct TopKCase {
    /// What comes with the keys.
    pub op: TopKOp,
    /// Key type.
    pub elem: ElemKind,
    /// `Descending`: the k largest; `Ascending`: the k smallest.
    pub order: SortOrder,
    /// How the keys are made.
    pub pattern: Pattern,
    /// The k.
    pub k: KChoice,
    /// Number of keys.
    pub n: usize,
}

impl fmt::Display for TopKCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {} keys k={:?} n={}",
            self.op, self.elem, self.order, self.pattern, self.k, self.n
        )
    }
}

/// The lengths: one, a partial warp, a warp and one, a tile and one, about a million.
pub const TOP_K_LENGTHS: [usize; 5] = [1, 31, 33, 4097, 1_000_003];

/// The key patterns of top-k cases.
pub const TOP_K_PATTERNS: [Pattern; 4] = [
    Pattern::Uniform,
    Pattern::AllEqual,
    Pattern::FewDistinct,
    Pattern::Hard,
];

/// Every case: each key type, order, pattern and k with keys only at every length (the longest
/// for uniform and hard keys with a few taken), and each pair and index form at 4097 keys (and
/// outside `quick` mode 1000003 uniform keys: `u64` values of the smallest, `u32` indices of the
/// largest); `large` adds 2^24 + 1 uniform `u32` and
/// `u64` keys with a few taken.
pub fn top_k_cases(quick: bool, large: bool) -> Vec<TopKCase> {
    let lengths: &[usize] = if quick {
        &TOP_K_LENGTHS[..4]
    } else {
        &TOP_K_LENGTHS
    };
    let forms = [
        TopKOp::Pairs(ElemKind::U32),
        TopKOp::Pairs(ElemKind::U64),
        TopKOp::Indices(ElemKind::U32),
        TopKOp::Indices(ElemKind::U64),
    ];
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        for order in [SortOrder::Descending, SortOrder::Ascending] {
            for pattern in TOP_K_PATTERNS {
                let long = matches!(pattern, Pattern::Uniform | Pattern::Hard);
                for k in KChoice::ALL {
                    // A million keys with small k only: k near n sorts them all, which the
                    // shorter lengths already do.
                    let small_k = k == KChoice::Few;
                    for &n in lengths
                        .iter()
                        .filter(|&&n| n < 1_000_000 || (long && small_k))
                    {
                        cases.push(TopKCase {
                            op: TopKOp::Keys,
                            elem,
                            order,
                            pattern,
                            k,
                            n,
                        });
                    }
                }
            }
            for op in forms {
                for pattern in [Pattern::Uniform, Pattern::FewDistinct] {
                    // A million keys: values with the smallest, indices with the largest.
                    let long = !quick
                        && pattern == Pattern::Uniform
                        && matches!(
                            (op, order),
                            (TopKOp::Pairs(ElemKind::U64), SortOrder::Ascending)
                                | (TopKOp::Indices(ElemKind::U32), SortOrder::Descending)
                        );
                    for n in [4097].into_iter().chain(long.then_some(1_000_003)) {
                        cases.push(TopKCase {
                            op,
                            elem,
                            order,
                            pattern,
                            k: KChoice::Few,
                            n,
                        });
                    }
                }
            }
        }
    }
    if large {
        for elem in [ElemKind::U32, ElemKind::U64] {
            cases.push(TopKCase {
                op: TopKOp::Indices(ElemKind::U32),
                elem,
                order: SortOrder::Descending,
                pattern: Pattern::Uniform,
                k: KChoice::Few,
                n: (1 << 24) + 1,
            });
        }
    }
    cases
}

/// The outputs' bits as one list: the keys, then the values or indices.
fn bits<T: Element>(v: &[T]) -> impl Iterator<Item = u64> + '_ {
    v.iter().map(|x| x.to_bits64())
}

/// Runs `op` on `dev` into outputs poisoned with `0xcd…` patterns: the keys' bits, then the
/// values' or indices'.
pub fn run_top_k<K: Element>(
    dev: &dyn Device,
    op: TopKOp,
    keys: &[K],
    k: usize,
    order: SortOrder,
) -> Result<Vec<u64>> {
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut keys_out = DeviceVec::<K>::alloc(dev, k)?;
    keys_out.fill(dev, super::poison_value(keys))?;
    match op {
        TopKOp::Keys => {
            top_k::top_k(dev, &input, k, order, &mut keys_out)?;
            Ok(bits(&keys_out.to_vec(dev)?).collect())
        }
        TopKOp::Pairs(ElemKind::U64) => run_pairs::<K, u64>(dev, &input, k, order, keys_out),
        TopKOp::Pairs(_) => run_pairs::<K, u32>(dev, &input, k, order, keys_out),
        TopKOp::Indices(ElemKind::U64) => run_indices::<K, u64>(dev, &input, k, order, keys_out),
        TopKOp::Indices(_) => run_indices::<K, u32>(dev, &input, k, order, keys_out),
    }
}

fn run_pairs<K: Element, V: Element>(
    dev: &dyn Device,
    input: &DeviceVec<K>,
    k: usize,
    order: SortOrder,
    mut keys_out: DeviceVec<K>,
) -> Result<Vec<u64>> {
    let values: Vec<V> = (0..input.len()).map(pair_value).collect();
    let values_in = DeviceVec::from_slice(dev, &values)?;
    let mut values_out = DeviceVec::<V>::alloc(dev, k)?;
    values_out.fill(dev, pair_value(0xcdcd_cdcd))?;
    top_k::top_k_pairs(
        dev,
        input,
        &values_in,
        k,
        order,
        &mut keys_out,
        &mut values_out,
    )?;
    let mut out: Vec<u64> = bits(&keys_out.to_vec(dev)?).collect();
    out.extend(bits(&values_out.to_vec(dev)?));
    Ok(out)
}

fn run_indices<K: Element, I: xwarp::sort::SortIndex>(
    dev: &dyn Device,
    input: &DeviceVec<K>,
    k: usize,
    order: SortOrder,
    mut keys_out: DeviceVec<K>,
) -> Result<Vec<u64>> {
    let mut indices = DeviceVec::<I>::alloc(dev, k)?;
    indices.fill(dev, pair_value(0xcdcd_cdcd))?;
    top_k::top_k_indices(dev, input, k, order, &mut keys_out, &mut indices)?;
    let mut out: Vec<u64> = bits(&keys_out.to_vec(dev)?).collect();
    out.extend(bits(&indices.to_vec(dev)?));
    Ok(out)
}

/// The CPU twin's result as [`run_top_k`] returns it.
pub fn expected<K: Element>(op: TopKOp, keys: &[K], k: usize, order: SortOrder) -> Vec<u64> {
    let idx = cpu::top_k::top_k_indices(keys, k, order);
    let mut out: Vec<u64> = idx.iter().map(|&i| keys[i].to_bits64()).collect();
    match op {
        TopKOp::Keys => {}
        TopKOp::Pairs(v) => out.extend(idx.iter().map(|&i| {
            if v == ElemKind::U64 {
                pair_value::<u64>(i)
            } else {
                u64::from(pair_value::<u32>(i))
            }
        })),
        TopKOp::Indices(_) => out.extend(idx.iter().map(|&i| i as u64)),
    }
    out
}

fn case_on<K: Element>(
    devices: &[(String, &dyn Device)],
    case: &TopKCase,
    rng: &mut Rng,
) -> CaseReport {
    let keys: Vec<K> = case.pattern.keys(case.n, case.order, rng);
    let k = case.k.k(case.n, rng);
    let want = expected(case.op, &keys, k, case.order);
    check_case(
        devices,
        format!("{case} (k = {k}; keys, then values)"),
        &want,
        |dev| run_top_k(dev, case.op, &keys, k, case.order),
    )
}

/// Runs one case on every device.
pub fn top_k_case_on(
    devices: &[(String, &dyn Device)],
    case: &TopKCase,
    rng: &mut Rng,
) -> CaseReport {
    with_elem!(case.elem, case_on(devices, case, rng))
}

/// Runs every top-k case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in top_k_cases(quick, large) {
        let r = top_k_case_on(devices, &case, rng);
        tally.add(&r, report);
    }
}
