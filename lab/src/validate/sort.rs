//! Radix sort cases: keys, pairs and argsort of every key type, ascending and descending, over
//! every bit and over narrow bit ranges (the lowest bit, the second byte, the top bit), on keys
//! of several patterns (uniform, all equal, few distinct, already sorted, reversed, and hard
//! values: NaN payloads, ±0, ±∞ and subnormals for floats, edge values for integers), every
//! output poisoned first and compared bit for bit with the CPU twin ([`xwarp::cpu::sort`]) and
//! between devices.
//!
//! The sort only moves bit patterns (floats are ordered by their bits, never computed with), so
//! hard float keys keep their subnormals on every device, those that flush subnormals in
//! arithmetic included.

use super::{check_case, CaseReport, Tally};
use crate::with_elem;
use std::fmt;
use std::ops::Range;
use xwarp::cpu::sort as cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element, HardValues, Rng};
use xwarp::error::Result;
use xwarp::sort::{all_bits, SortOrder, Sorter, Tuning};

/// What a case sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOp {
    /// [`Sorter::sort_keys`].
    Keys,
    /// [`Sorter::sort_pairs`] with values of this type (`u32` or `u64`), each value made from
    /// its key's input index ([`pair_value`]), so that the values show stability.
    Pairs(ElemKind),
    /// [`Sorter::argsort`] with `u32` indices.
    Argsort,
}

impl fmt::Display for SortOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortOp::Keys => write!(f, "sort_keys"),
            SortOp::Pairs(v) => write!(f, "sort_pairs (values {v})"),
            SortOp::Argsort => write!(f, "argsort"),
        }
    }
}

/// Which bits of the mapped key decide the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bits {
    /// Every bit: `0 .. width`.
    All,
    /// The lowest bit, `0 .. 1`: one pass of one bit.
    Lowest,
    /// The second byte, `8 .. 16`: one pass, not from bit 0.
    SecondByte,
    /// The top bit, `width - 1 .. width`: the (inverted) sign of signed and float keys.
    Top,
}

impl Bits {
    /// The range for keys of `elem`.
    pub fn range(self, elem: ElemKind) -> Range<u32> {
        let width = elem.size() as u32 * 8;
        match self {
            Bits::All => 0..width,
            Bits::Lowest => 0..1,
            Bits::SecondByte => 8..16,
            Bits::Top => width - 1..width,
        }
    }
}

/// How a case's keys are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// [`Element::random`]: integers of uniform random bits, floats finite of random sign and
    /// magnitude.
    Uniform,
    /// One random value repeated.
    AllEqual,
    /// Three random values: long runs of equal keys in every digit.
    FewDistinct,
    /// Uniform keys already in the case's order (over every bit).
    Sorted,
    /// Uniform keys in the opposite order.
    Reversed,
    /// [`Element::random_hard`] with every kind of hard value: for floats NaNs of both signs
    /// with random payloads, ±∞, ±0, subnormals and every magnitude; for integers the edge
    /// values among random ones.
    Hard,
}

impl Pattern {
    /// Every pattern.
    pub const ALL: [Pattern; 6] = [
        Pattern::Uniform,
        Pattern::AllEqual,
        Pattern::FewDistinct,
        Pattern::Sorted,
        Pattern::Reversed,
        Pattern::Hard,
    ];

    /// `n` keys of this pattern for a sort in `order`.
    pub fn keys<K: Element>(self, n: usize, order: SortOrder, rng: &mut Rng) -> Vec<K> {
        match self {
            Pattern::Uniform => rng.vec(n),
            Pattern::AllEqual => vec![K::random(rng); n],
            Pattern::FewDistinct => {
                let values: Vec<K> = rng.vec(3);
                (0..n).map(|_| values[rng.below(3) as usize]).collect()
            }
            Pattern::Sorted | Pattern::Reversed => {
                let reversed = match order {
                    SortOrder::Ascending => SortOrder::Descending,
                    SortOrder::Descending => SortOrder::Ascending,
                };
                let by = if self == Pattern::Sorted {
                    order
                } else {
                    reversed
                };
                cpu::sort_keys(&rng.vec::<K>(n), by, all_bits::<K>())
            }
            Pattern::Hard => (0..n)
                .map(|_| K::random_hard(rng, HardValues::ALL))
                .collect(),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pattern::Uniform => "uniform",
            Pattern::AllEqual => "all equal",
            Pattern::FewDistinct => "few distinct",
            Pattern::Sorted => "sorted",
            Pattern::Reversed => "reversed",
            Pattern::Hard => "hard",
        })
    }
}

/// One sort case.
#[derive(Clone, Copy, Debug)]
pub struct SortCase {
    /// Keys, pairs or argsort.
    pub op: SortOp,
    /// Key type.
    pub elem: ElemKind,
    /// Ascending or descending.
    pub order: SortOrder,
    /// The bits that decide the order.
    pub bits: Bits,
    /// How the keys are made.
    pub pattern: Pattern,
    /// Number of keys.
    pub n: usize,
}

impl fmt::Display for SortCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = self.bits.range(self.elem);
        write!(
            f,
            "{} {} {} bits {}..{} {} keys n={}",
            self.op, self.elem, self.order, bits.start, bits.end, self.pattern, self.n
        )
    }
}

/// The sort lengths: one key, a partial warp, a warp and one, a partial tile after a full one
/// (at every tile size the planner picks on small devices), and about a million (many tiles,
/// look-back across them; not in `quick` mode).
pub const SORT_SIZES: [usize; 5] = [1, 31, 33, 4097, 1_000_003];

/// Every sort case:
/// - every bit: each key type, operation (keys, pairs with `u32` values, argsort), order and
///   pattern at every length of [`SORT_SIZES`] (the longest only for uniform and hard keys, and
///   not in `quick` mode: the other patterns are no harder long than at 4097 keys);
/// - pairs with `u64` values: each key type and order, uniform and hard keys, every length;
/// - the narrow bit ranges: each key type, operation (keys, pairs with `u32` values,
///   argsort), order and range on uniform and few-distinct keys (hard ones for floats, whose
///   low bits are then all kinds of payloads and fractions) at 33 and 4097 keys, and uniform
///   keys at 1000003 outside `quick` mode;
/// - `large`: keys and pairs of 2^24 + 1 uniform `u32` and `f64` keys.
pub fn sort_cases(quick: bool, large: bool) -> Vec<SortCase> {
    let sizes: &[usize] = if quick { &SORT_SIZES[..4] } else { &SORT_SIZES };
    let ops = [SortOp::Keys, SortOp::Pairs(ElemKind::U32), SortOp::Argsort];
    let orders = [SortOrder::Ascending, SortOrder::Descending];
    let mut cases = Vec::new();
    for elem in ElemKind::ALL {
        let float = matches!(elem, ElemKind::F32 | ElemKind::F64);
        for op in ops {
            for order in orders {
                for pattern in Pattern::ALL {
                    let long = matches!(pattern, Pattern::Uniform | Pattern::Hard);
                    for &n in sizes.iter().filter(|&&n| long || n < SORT_SIZES[4]) {
                        cases.push(SortCase {
                            op,
                            elem,
                            order,
                            bits: Bits::All,
                            pattern,
                            n,
                        });
                    }
                }
            }
        }
        for order in orders {
            for pattern in [Pattern::Uniform, Pattern::Hard] {
                for &n in sizes {
                    cases.push(SortCase {
                        op: SortOp::Pairs(ElemKind::U64),
                        elem,
                        order,
                        bits: Bits::All,
                        pattern,
                        n,
                    });
                }
            }
        }
        let second = if float {
            Pattern::Hard
        } else {
            Pattern::FewDistinct
        };
        for op in ops {
            for order in orders {
                for bits in [Bits::Lowest, Bits::SecondByte, Bits::Top] {
                    for pattern in [Pattern::Uniform, second] {
                        for n in [33, 4097] {
                            cases.push(SortCase {
                                op,
                                elem,
                                order,
                                bits,
                                pattern,
                                n,
                            });
                        }
                    }
                    if !quick {
                        cases.push(SortCase {
                            op,
                            elem,
                            order,
                            bits,
                            pattern: Pattern::Uniform,
                            n: SORT_SIZES[4],
                        });
                    }
                }
            }
        }
    }
    if large {
        for elem in [ElemKind::U32, ElemKind::F64] {
            for op in [SortOp::Keys, SortOp::Pairs(ElemKind::U32)] {
                cases.push(SortCase {
                    op,
                    elem,
                    order: SortOrder::Ascending,
                    bits: Bits::All,
                    pattern: Pattern::Uniform,
                    n: (1 << 24) + 1,
                });
            }
        }
    }
    cases
}

/// The value of a pair whose key is at input index `i`: the index in the low word, and for
/// 64-bit values a different word above it, so that a value's two halves are checked apart.
pub fn pair_value<V: Element>(i: usize) -> V {
    let i = i as u64;
    let bits = i | ((i ^ 0x5a5a_5a5a) << 32);
    if V::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, V>(&[bits as u32])[0]
    } else {
        bytemuck::cast_slice::<u64, V>(&[bits])[0]
    }
}

/// A bit pattern of `T` that is none of `values`, from `0xcdcd…`: the poison of an output.
fn poison<T: Element>(values: &[T]) -> T {
    super::poison_value(values)
}

/// A sort's outputs as one list of bit patterns: the keys (or indices), then the values.
fn bits_of<T: Element>(v: &[T]) -> impl Iterator<Item = u64> + '_ {
    v.iter().map(|x| x.to_bits64())
}

/// Runs `case` on `dev` with `keys` into outputs poisoned with `key_poison` (keys) and
/// `value_poison` (indices, and pair values as [`pair_value`] makes them of it): the outputs'
/// bits, keys first.
pub fn run_sort<K: Element>(
    dev: &dyn Device,
    case: &SortCase,
    keys: &[K],
    key_poison: K,
    value_poison: u32,
) -> Result<Vec<u64>> {
    let n = keys.len();
    let bits = case.bits.range(K::KIND);
    let keys_in = DeviceVec::from_slice(dev, keys)?;
    let mut sorter = Sorter::<K>::with_tuning(Tuning::default());
    match case.op {
        SortOp::Keys => {
            let mut out = DeviceVec::<K>::alloc(dev, n)?;
            out.fill(dev, key_poison)?;
            sorter.sort_keys(dev, &keys_in, &mut out, case.order, bits)?;
            Ok(bits_of(&out.to_vec(dev)?).collect())
        }
        SortOp::Pairs(ElemKind::U64) => {
            run_pairs::<K, u64>(dev, &mut sorter, case, &keys_in, key_poison, value_poison)
        }
        SortOp::Pairs(_) => {
            run_pairs::<K, u32>(dev, &mut sorter, case, &keys_in, key_poison, value_poison)
        }
        SortOp::Argsort => {
            let mut out = DeviceVec::<u32>::alloc(dev, n)?;
            out.fill(dev, value_poison)?;
            sorter.argsort(dev, &keys_in, &mut out, case.order, bits)?;
            Ok(bits_of(&out.to_vec(dev)?).collect())
        }
    }
}

fn run_pairs<K: Element, V: Element>(
    dev: &dyn Device,
    sorter: &mut Sorter<K>,
    case: &SortCase,
    keys_in: &DeviceVec<K>,
    key_poison: K,
    value_poison: u32,
) -> Result<Vec<u64>> {
    let n = keys_in.len();
    let values: Vec<V> = (0..n).map(pair_value).collect();
    let values_in = DeviceVec::from_slice(dev, &values)?;
    let mut keys_out = DeviceVec::<K>::alloc(dev, n)?;
    let mut values_out = DeviceVec::<V>::alloc(dev, n)?;
    keys_out.fill(dev, key_poison)?;
    values_out.fill(dev, pair_value::<V>(value_poison as usize))?;
    sorter.sort_pairs(
        dev,
        keys_in,
        &mut keys_out,
        &values_in,
        &mut values_out,
        case.order,
        case.bits.range(K::KIND),
    )?;
    let mut out: Vec<u64> = bits_of(&keys_out.to_vec(dev)?).collect();
    out.extend(bits_of(&values_out.to_vec(dev)?));
    Ok(out)
}

/// The CPU twin's outputs of `case` on `keys`, as [`run_sort`] gives them.
pub fn expected<K: Element>(case: &SortCase, keys: &[K]) -> Vec<u64> {
    let bits = case.bits.range(K::KIND);
    match case.op {
        SortOp::Keys => bits_of(&cpu::sort_keys(keys, case.order, bits)).collect(),
        SortOp::Pairs(value) => {
            let (k, v) = if value == ElemKind::U64 {
                let values: Vec<u64> = (0..keys.len()).map(pair_value).collect();
                let (k, v) = cpu::sort_pairs(keys, &values, case.order, bits);
                (k, bits_of(&v).collect::<Vec<u64>>())
            } else {
                let values: Vec<u32> = (0..keys.len()).map(pair_value).collect();
                let (k, v) = cpu::sort_pairs(keys, &values, case.order, bits);
                (k, bits_of(&v).collect())
            };
            bits_of(&k).chain(v).collect()
        }
        SortOp::Argsort => cpu::argsort(keys, case.order, bits)
            .into_iter()
            .map(|i| i as u64)
            .collect(),
    }
}

fn sort_case_on<K: Element>(
    devices: &[(String, &dyn Device)],
    case: &SortCase,
    rng: &mut Rng,
) -> CaseReport {
    let keys: Vec<K> = case.pattern.keys(case.n, case.order, rng);
    let key_poison = poison(&keys);
    // Indices and the low words of pair values are below 2^30: never this one.
    let value_poison = 0xcdcd_cdcd;
    let want = expected(case, &keys);
    let name = match case.op {
        SortOp::Keys | SortOp::Argsort => case.to_string(),
        SortOp::Pairs(_) => format!("{case} (keys, then values)"),
    };
    check_case(devices, name, &want, |dev| {
        run_sort(dev, case, &keys, key_poison, value_poison)
    })
}

/// Runs every sort case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in sort_cases(quick, large) {
        let r = with_elem!(case.elem, sort_case_on(devices, &case, rng));
        tally.add(&r, report);
    }
}
