//! Group cases ([`xwarp::group`]): reduce, scan and sort of vectors sharded over 1, 2, 3, 4 and
//! 8 ranks that share one device (the in-process exchange), in layouts with shards of unequal
//! and zero length, against the CPU reference of the group orders ([`xwarp::cpu::group`]; the
//! sort has one result, [`xwarp::cpu::sort`]'s). Every output shard is poisoned first.

use super::reduce::{comparison, ReduceInput};
use super::sort::{expected as sort_expected, pair_value, Bits, Pattern, SortCase, SortOp};
use super::{check_case, check_case_by, hard_values, poison_value, CaseReport, HardInput, Tally};
use crate::with_elem;
use std::fmt;
use xwarp::cpu::group as cpu;
use xwarp::device::Device;
use xwarp::element::{ElemKind, Element, Rng};
use xwarp::error::Result;
use xwarp::group::{self, Group, GroupSorter, GroupVec, TILE};
use xwarp::reduce::ReduceOp;
use xwarp::scan::ScanKind;
use xwarp::sort::SortOrder;

/// The rank counts of the cases.
pub const RANKS: [usize; 5] = [1, 2, 3, 4, 8];

/// The lengths of the cases.
pub const SIZES: [usize; 6] = [0, 1, 31, 33, 4097, 1_000_003];

/// How a case's vector is spread over its ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// [`group::split_even`]: whole tiles but the last shard, as even as that allows (the
    /// layout with the one-device float bits).
    Even,
    /// Random boundaries at multiples of [`TILE`]: unequal, often empty shards, still with
    /// the one-device float bits for reductions.
    Aligned,
    /// Random boundaries anywhere: shards of any length, zero included.
    Random,
    /// Everything on the last rank, nothing on the others.
    Last,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 4] = [Layout::Even, Layout::Aligned, Layout::Random, Layout::Last];

    /// The shard lengths of `n` elements over `ranks` ranks.
    pub fn lens(self, n: usize, ranks: usize, rng: &mut Rng) -> Vec<usize> {
        let cuts = |rng: &mut Rng, step: usize| -> Vec<usize> {
            let slots = n.div_ceil(step) as u64 + 1;
            let mut c: Vec<usize> = (0..ranks - 1)
                .map(|_| (rng.below(slots) as usize * step).min(n))
                .collect();
            c.sort_unstable();
            let mut lens = Vec::with_capacity(ranks);
            let mut prev = 0;
            for cut in c.into_iter().chain([n]) {
                lens.push(cut - prev);
                prev = cut;
            }
            lens
        };
        match self {
            Layout::Even => group::split_even(n, ranks),
            Layout::Aligned => cuts(rng, TILE),
            Layout::Random => cuts(rng, 1),
            Layout::Last => {
                let mut lens = vec![0; ranks];
                lens[ranks - 1] = n;
                lens
            }
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::Even => "even",
            Layout::Aligned => "tile-aligned",
            Layout::Random => "random",
            Layout::Last => "all on the last rank",
        })
    }
}

/// What a case runs.
#[derive(Clone, Copy, Debug)]
pub enum GroupOp {
    /// [`group::reduce`].
    Reduce(ReduceOp),
    /// [`group::scan`].
    Scan(ReduceOp, ScanKind),
    /// [`GroupSorter`]: keys or pairs (`SortOp::Keys` or `SortOp::Pairs`), order, bits and
    /// pattern from the sort case; its own layout for the output.
    Sort(SortCase, Layout),
}

/// What a reduce or scan case's input is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// [`ReduceInput::input`]: representative values.
    Representative,
    /// [`ReduceInput::hard_input`] of this kind (floats).
    Hard(HardInput),
    /// Float min and max: NaNs of random signs and payloads in the first half (so that whole
    /// shards, and the carries into later ones, are NaN), representative values after.
    NanPrefix,
}

/// One group case.
#[derive(Clone, Copy, Debug)]
pub struct GroupCase {
    /// What runs.
    pub op: GroupOp,
    /// Element (key) type.
    pub elem: ElemKind,
    /// Length of the whole vector.
    pub n: usize,
    /// Ranks sharing the device.
    pub ranks: usize,
    /// The input's layout.
    pub layout: Layout,
    /// What the input is made of (sorts: their pattern).
    pub input: Input,
}

impl fmt::Display for GroupCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            GroupOp::Reduce(op) => write!(f, "group reduce {op} {}", self.elem)?,
            GroupOp::Scan(op, kind) => write!(f, "group scan {kind:?} {op} {}", self.elem)?,
            GroupOp::Sort(s, out) => write!(
                f,
                "group sort {} {} {} bits {:?} {} keys, output {out}",
                s.op,
                self.elem,
                s.order,
                s.bits.range(self.elem),
                s.pattern
            )?,
        }
        write!(
            f,
            " n={} ranks={} layout {}",
            self.n, self.ranks, self.layout
        )
    }
}

/// Every group case. Reductions and scans: every type, operator (and kind) at every length of
/// [`SIZES`] up to 4097 with every rank count of [`RANKS`] and every layout; 1000003 elements
/// over rank counts and layouts in turn (not in `quick` mode); floats also on hard values at
/// 33 and 4097 elements, and float min and max on NaN payloads. Sorts: every key type, keys and
/// pairs (`u32` values; `u64` for some), both orders, every key pattern and four bit ranges,
/// the rank counts and layouts (input and output) in turn. `quick` keeps lengths up to 4097
/// and fewer combinations.
pub fn group_cases(quick: bool, large: bool) -> Vec<GroupCase> {
    let mut cases = Vec::new();
    let mut turn = 0usize;
    // The k-th combination of rank count and layout, in turn.
    let mut next = || {
        turn += 1;
        (
            RANKS[turn % RANKS.len()],
            Layout::ALL[(turn / RANKS.len()) % Layout::ALL.len()],
        )
    };
    let long = SIZES[5];
    for elem in ElemKind::ALL {
        let float = matches!(elem, ElemKind::F32 | ElemKind::F64);
        let reduce_ops = ReduceOp::ALL
            .into_iter()
            .filter(|op| !float || op.for_floats());
        let scan_ops = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max]
            .into_iter()
            .flat_map(|op| {
                [ScanKind::Inclusive, ScanKind::Exclusive].map(|k| GroupOp::Scan(op, k))
            });
        let ops: Vec<GroupOp> = reduce_ops.map(GroupOp::Reduce).chain(scan_ops).collect();
        for &op in &ops {
            for &n in SIZES.iter().filter(|&&n| n < long) {
                for (i, &ranks) in RANKS.iter().enumerate() {
                    for (j, &layout) in Layout::ALL.iter().enumerate() {
                        // `quick`: each rank count with one layout in turn.
                        if quick && (i + n) % Layout::ALL.len() != j {
                            continue;
                        }
                        cases.push(GroupCase {
                            op,
                            elem,
                            n,
                            ranks,
                            layout,
                            input: Input::Representative,
                        });
                    }
                }
            }
            if !quick {
                let (ranks, layout) = next();
                cases.push(GroupCase {
                    op,
                    elem,
                    n: long,
                    ranks,
                    layout,
                    input: Input::Representative,
                });
            }
            if float {
                let r = match op {
                    GroupOp::Reduce(r) | GroupOp::Scan(r, _) => r,
                    GroupOp::Sort(..) => continue,
                };
                for &input in HardInput::for_op(r) {
                    for n in [33, 4097] {
                        let (ranks, layout) = next();
                        cases.push(GroupCase {
                            op,
                            elem,
                            n,
                            ranks,
                            layout,
                            input: Input::Hard(input),
                        });
                    }
                }
                if r != ReduceOp::Sum && r != ReduceOp::Product {
                    for (n, ranks) in [(33, 3), (4097, 4), (20_000, 8)] {
                        cases.push(GroupCase {
                            op,
                            elem,
                            n,
                            ranks,
                            layout: Layout::Random,
                            input: Input::NanPrefix,
                        });
                    }
                }
            }
        }
        // Sorts. Every bit: each pattern, keys and pairs (`u32` values), both orders, at
        // lengths up to 4097; 0 and 31 keys uniform; 1000003 uniform and hard keys, each once
        // (not in `quick` mode); pairs with `u64` values at 4097. Narrow bit ranges: uniform
        // and hard keys at 33 and 4097.
        let mut sort = |op: SortOp, order: SortOrder, bits: Bits, pattern: Pattern, n: usize| {
            let (ranks, layout) = next();
            let (_, out) = next();
            let case = SortCase {
                op,
                elem,
                order,
                bits,
                pattern,
                n,
            };
            cases.push(GroupCase {
                op: GroupOp::Sort(case, out),
                elem,
                n,
                ranks,
                layout,
                input: Input::Representative,
            });
        };
        let (keys, pairs) = (SortOp::Keys, SortOp::Pairs(ElemKind::U32));
        let orders = [SortOrder::Ascending, SortOrder::Descending];
        for op in [keys, pairs] {
            for order in orders {
                for pattern in Pattern::ALL {
                    for n in [1, 33, 4097] {
                        sort(op, order, Bits::All, pattern, n);
                    }
                }
                for n in [0, 31] {
                    sort(op, order, Bits::All, Pattern::Uniform, n);
                }
            }
        }
        if !quick {
            sort(
                keys,
                SortOrder::Ascending,
                Bits::All,
                Pattern::Uniform,
                long,
            );
            sort(pairs, SortOrder::Descending, Bits::All, Pattern::Hard, long);
        }
        for order in orders {
            for pattern in [Pattern::Uniform, Pattern::Hard] {
                sort(
                    SortOp::Pairs(ElemKind::U64),
                    order,
                    Bits::All,
                    pattern,
                    4097,
                );
            }
        }
        for bits in [Bits::SecondByte, Bits::Top, Bits::Lowest] {
            for (i, pattern) in [Pattern::Uniform, Pattern::Hard].into_iter().enumerate() {
                for n in [33, 4097] {
                    let op = if (i + n) % 2 == 0 { keys } else { pairs };
                    sort(op, orders[i], bits, pattern, n);
                }
            }
        }
    }
    if large {
        // GPU-sized: 2^26 + 3 elements over 8 ranks.
        for elem in [ElemKind::U32, ElemKind::F32] {
            let n = (1 << 26) + 3;
            let sort = SortCase {
                op: SortOp::Keys,
                elem,
                order: SortOrder::Ascending,
                bits: Bits::All,
                pattern: Pattern::Uniform,
                n,
            };
            for op in [
                GroupOp::Reduce(ReduceOp::Sum),
                GroupOp::Scan(ReduceOp::Sum, ScanKind::Inclusive),
                GroupOp::Sort(sort, Layout::Even),
            ] {
                cases.push(GroupCase {
                    op,
                    elem,
                    n,
                    ranks: 8,
                    layout: Layout::Random,
                    input: Input::Representative,
                });
            }
        }
    }
    cases
}

/// The ranks `ranks` sharing `dev`.
fn group_on(dev: &dyn Device, ranks: usize) -> Result<Group<'_>> {
    Group::in_process(vec![dev; ranks])
}

/// Runs a reduce or scan case on `ranks` ranks sharing `dev`: the outputs, rank after rank
/// (a reduce gives every rank's copy of the total).
pub fn run_reduce_scan<T: ReduceInput>(
    dev: &dyn Device,
    op: GroupOp,
    ranks: usize,
    input: &[T],
    lens: &[usize],
    poison: T,
) -> Result<Vec<T>> {
    let group = group_on(dev, ranks)?;
    let x = GroupVec::from_slice(&group, input, lens)?;
    let out_lens = match op {
        GroupOp::Reduce(_) => vec![1; ranks],
        _ => lens.to_vec(),
    };
    let mut y = GroupVec::<T>::alloc(&group, &out_lens)?;
    y.fill(&group, poison)?;
    match op {
        GroupOp::Reduce(op) => group::reduce(&group, op, &x, &mut y)?,
        GroupOp::Scan(op, kind) => group::scan(&group, op, kind, &x, &mut y)?,
        GroupOp::Sort(..) => unreachable!("sorts run in run_sort"),
    }
    y.to_vec(&group)
}

/// The CPU reference of a reduce or scan case, as [`run_reduce_scan`] gives it.
pub fn expected_reduce_scan<T: ReduceInput>(op: GroupOp, input: &[T], lens: &[usize]) -> Vec<T> {
    let shards = split(input, lens);
    match op {
        GroupOp::Reduce(op) => vec![cpu::reduce(op, &shards); lens.len()],
        GroupOp::Scan(op, kind) => cpu::scan(op, kind, &shards),
        GroupOp::Sort(..) => unreachable!("sorts have sort_expected"),
    }
}

/// `data` cut into shards of lengths `lens`.
pub fn split<'a, T>(data: &'a [T], lens: &[usize]) -> Vec<&'a [T]> {
    let mut at = 0;
    lens.iter()
        .map(|&n| {
            at += n;
            &data[at - n..at]
        })
        .collect()
}

/// Runs a sort case on `ranks` ranks sharing `dev`, from layout `lens` to `out_lens`: the
/// sorted keys' bits, then the values' (as [`sort_expected`] gives them).
pub fn run_sort<K: Element>(
    dev: &dyn Device,
    case: &SortCase,
    ranks: usize,
    keys: &[K],
    lens: &[usize],
    out_lens: &[usize],
) -> Result<Vec<u64>> {
    let group = group_on(dev, ranks)?;
    let bits = case.bits.range(K::KIND);
    let keys_in = GroupVec::from_slice(&group, keys, lens)?;
    let mut keys_out = GroupVec::<K>::alloc(&group, out_lens)?;
    keys_out.fill(&group, poison_value(keys))?;
    let mut sorter = GroupSorter::<K>::new(&group);
    let args = (&group, case, &keys_in, lens, out_lens);
    let values = match case.op {
        SortOp::Pairs(ElemKind::U64) => sort_pairs::<K, u64>(args, &mut sorter, &mut keys_out)?,
        SortOp::Pairs(_) => sort_pairs::<K, u32>(args, &mut sorter, &mut keys_out)?,
        _ => {
            sorter.sort_keys(&group, &keys_in, &mut keys_out, case.order, bits)?;
            Vec::new()
        }
    };
    let mut out: Vec<u64> = keys_out
        .to_vec(&group)?
        .iter()
        .map(|k| k.to_bits64())
        .collect();
    out.extend(values);
    Ok(out)
}

/// The pair sort of a case, values [`pair_value`]s of the keys' input indices: the sorted
/// values' bits.
fn sort_pairs<K: Element, V: Element>(
    (group, case, keys_in, lens, out_lens): (
        &Group<'_>,
        &SortCase,
        &GroupVec<K>,
        &[usize],
        &[usize],
    ),
    sorter: &mut GroupSorter<K>,
    keys_out: &mut GroupVec<K>,
) -> Result<Vec<u64>> {
    let n = keys_in.len();
    let values: Vec<V> = (0..n).map(pair_value).collect();
    let values_in = GroupVec::from_slice(group, &values, lens)?;
    let mut values_out = GroupVec::<V>::alloc(group, out_lens)?;
    // Indices and the low words of pair values are below 2^30: never this one.
    values_out.fill(group, pair_value::<V>(0xcdcd_cdcd))?;
    sorter.sort_pairs(
        group,
        keys_in,
        keys_out,
        &values_in,
        &mut values_out,
        case.order,
        case.bits.range(K::KIND),
    )?;
    Ok(values_out
        .to_vec(group)?
        .iter()
        .map(|v| v.to_bits64())
        .collect())
}

fn case_on<T: ReduceInput>(
    devices: &[(String, &dyn Device)],
    case: &GroupCase,
    rng: &mut Rng,
) -> Option<CaseReport> {
    let lens = case.layout.lens(case.n, case.ranks, rng);
    match case.op {
        GroupOp::Reduce(op) | GroupOp::Scan(op, _) => {
            let (input, what) = match case.input {
                Input::Representative => (T::input(op, case.n, rng), String::new()),
                Input::Hard(kind) => {
                    let values = hard_values(devices, case.elem, true);
                    if kind == HardInput::Tiny && !values.subnormals {
                        return None;
                    }
                    let what = format!(", {}", kind.describe(values));
                    (T::hard_input(op, kind, values, case.n, rng), what)
                }
                Input::NanPrefix => {
                    let mut input = T::input(op, case.n, rng);
                    let wide = T::KIND.size() == 8;
                    let (exponent, fraction) = if wide {
                        (0x7ff0_0000_0000_0000u64, (1u64 << 52) - 1)
                    } else {
                        (0x7f80_0000, (1 << 23) - 1)
                    };
                    let sign = if wide { 1u64 << 63 } else { 1 << 31 };
                    for x in &mut input[..case.n / 2] {
                        // Exponent all ones, a random nonzero fraction, a random sign.
                        let r = rng.next_u64();
                        let nan = (r & sign) | exponent | (r & fraction).max(1);
                        *x = if wide {
                            bytemuck::cast_slice::<u64, T>(&[nan])[0]
                        } else {
                            bytemuck::cast_slice::<u32, T>(&[nan as u32])[0]
                        };
                    }
                    (input, ", NaN payloads in the first half".into())
                }
            };
            let want = expected_reduce_scan(case.op, &input, &lens);
            let poison = poison_value(&want);
            let name = format!("{case} {lens:?}{what}");
            Some(check_case_by(devices, name, &want, comparison(op), |dev| {
                run_reduce_scan(dev, case.op, case.ranks, &input, &lens, poison)
            }))
        }
        GroupOp::Sort(sort, out_layout) => {
            let out_lens = out_layout.lens(case.n, case.ranks, rng);
            let keys: Vec<T> = sort.pattern.keys(case.n, sort.order, rng);
            let want = sort_expected(&sort, &keys);
            let name = format!("{case} {lens:?} -> {out_lens:?}");
            Some(check_case(devices, name, &want, |dev| {
                run_sort(dev, &sort, case.ranks, &keys, &lens, &out_lens)
            }))
        }
    }
}

/// One case on every device (`None` for a case of subnormals where a device flushes them).
pub fn check(
    devices: &[(String, &dyn Device)],
    case: &GroupCase,
    rng: &mut Rng,
) -> Option<CaseReport> {
    with_elem!(case.elem, case_on(devices, case, rng))
}

/// Runs every group case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in group_cases(quick, large) {
        if let Some(r) = check(devices, &case, rng) {
            tally.add(&r, report);
        }
    }
}
