//! Radix sort: keys, pairs and argsort of every key type, both orders, bit ranges, sizes from 0
//! to 1000003 (2^24 + 1 and 2^28 with XWARP_LARGE=1), adversarial key patterns, the look-back
//! fallback, storage reuse and every refused input, each output poisoned first and compared
//! bit for bit with the CPU twin and between backends.

mod common;

use common::{devices, float_edges, float_edges_f32, for_each_device, open_vulkan, seed};
use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use xwarp::cpu::sort as cpu;
use xwarp::device::MemoryUsage;
use xwarp::sort::{
    all_bits, argsort_host, max_len, sort_keys_host, sort_pairs_host, SortIndex, SortOrder, Sorter,
    TilePlan, Tuning, ITEMS_BY_LEN, LARGE_SORT, PAIRS_BLOCK_FROM, WIDE_TWO_ROUNDS_FROM,
};
use xwarp::{BackendKind, Device, DeviceVec, ElemKind, Element, Error, Rng};
use xwarp_lab::validate::poison_value;
use xwarp_lab::with_elem;

fn large() -> bool {
    std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1")
}

/// A key of `K` from the low bits of `bits`.
fn from_bits<K: Element>(bits: u64) -> K {
    if K::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, K>(&[bits as u32])[0]
    } else {
        bytemuck::cast_slice::<u64, K>(&[bits])[0]
    }
}

fn width<K: Element>() -> u32 {
    K::KIND.size() as u32 * 8
}

/// How the keys of a case are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    /// `Element::random`: integers over all bits, floats finite of mixed magnitudes.
    Uniform,
    /// Random bit patterns (floats: NaNs with payloads, infinities, subnormals).
    Bits,
    /// One value repeated.
    AllEqual,
    /// Ascending in the sort's order of all bits.
    Sorted,
    /// Descending in that order.
    Reversed,
    /// Three distinct values: the multi-split's largest groups.
    FewDistinct,
    /// Only the top byte varies.
    TopByte,
    /// Edge values: integer extremes, or float edges (NaN payloads, ±0.0, ±inf, subnormals).
    Edges,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

const PATTERNS: [Pattern; 8] = [
    Pattern::Uniform,
    Pattern::Bits,
    Pattern::AllEqual,
    Pattern::Sorted,
    Pattern::Reversed,
    Pattern::FewDistinct,
    Pattern::TopByte,
    Pattern::Edges,
];

fn edges<K: Element>() -> Vec<K> {
    match K::KIND {
        ElemKind::F32 => float_edges_f32()
            .into_iter()
            .map(|v| from_bits(v.to_bits64()))
            .collect(),
        ElemKind::F64 => float_edges()
            .into_iter()
            .map(|v| from_bits(v.to_bits()))
            .collect(),
        _ => {
            let w = width::<K>();
            let top = 1u64 << (w - 1);
            let all = u64::MAX >> (64 - w);
            [
                0,
                1,
                2,
                all,
                all - 1,
                top,
                top - 1,
                top + 1,
                0x80,
                0xff,
                0x100,
            ]
            .into_iter()
            .map(from_bits)
            .collect()
        }
    }
}

fn make_keys<K: Element>(pattern: Pattern, n: usize, rng: &mut Rng) -> Vec<K> {
    let w = width::<K>();
    let all = u64::MAX >> (64 - w);
    match pattern {
        Pattern::Uniform => rng.vec(n),
        Pattern::Bits => (0..n).map(|_| from_bits(rng.next_u64() & all)).collect(),
        Pattern::AllEqual => {
            let v = from_bits(rng.next_u64());
            vec![v; n]
        }
        Pattern::Sorted | Pattern::Reversed => {
            let order = if pattern == Pattern::Sorted {
                SortOrder::Ascending
            } else {
                SortOrder::Descending
            };
            cpu::sort_keys(&rng.vec::<K>(n), order, all_bits::<K>())
        }
        Pattern::FewDistinct => {
            let values: Vec<K> = rng.vec(3);
            (0..n).map(|_| values[rng.below(3) as usize]).collect()
        }
        Pattern::TopByte => {
            let base = rng.next_u64() & (all >> 8);
            (0..n)
                .map(|_| from_bits(base | (rng.below(256) << (w - 8))))
                .collect()
        }
        Pattern::Edges => {
            let e = edges::<K>();
            (0..n)
                .map(|_| {
                    if rng.below(4) == 0 {
                        K::random(rng)
                    } else {
                        e[rng.below(e.len() as u64) as usize]
                    }
                })
                .collect()
        }
    }
}

/// What a case sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Keys,
    /// Pairs with values of this type: each value is its key's input index (spread over both
    /// words of 8-byte values), so the values show that the sort is stable.
    Pairs(ElemKind),
    /// Argsort with `u32` (false) or `u64` (true) indices.
    Argsort(bool),
}

#[derive(Clone, Debug)]
struct Case {
    op: Op,
    n: usize,
    pattern: Pattern,
    order: SortOrder,
    bits: Range<u32>,
    tuning: Tuning,
}

impl Case {
    fn new(op: Op, n: usize, pattern: Pattern, order: SortOrder, bits: Range<u32>) -> Self {
        Case {
            op,
            n,
            pattern,
            order,
            bits,
            tuning: Tuning::default(),
        }
    }

    fn label<K: Element>(&self) -> String {
        let op = match self.op {
            Op::Keys => "sort_keys".to_string(),
            Op::Pairs(v) => format!("sort_pairs (values {v})"),
            Op::Argsort(wide) => format!("argsort ({})", if wide { "u64" } else { "u32" }),
        };
        let tuning = if self.tuning == Tuning::default() {
            String::new()
        } else {
            format!(" {:?}", self.tuning)
        };
        format!(
            "{op} of {} keys, n={}, {} keys, {}, bits {}..{}{tuning}",
            K::KIND,
            self.n,
            self.pattern,
            self.order,
            self.bits.start,
            self.bits.end
        )
    }
}

/// A case's result: each output's name and its elements' bits, with the elements formatted.
/// Named outputs as bit patterns, each with how to show one of its elements.
type Outputs = Vec<(&'static str, Vec<u64>, fn(u64) -> String)>;

fn output<T: Element>(name: &'static str, v: &[T]) -> (&'static str, Vec<u64>, fn(u64) -> String) {
    (name, v.iter().map(|x| x.to_bits64()).collect(), show::<T>)
}

/// An element of `T` from its bits, as `{:?}` shows it (made only for a difference found:
/// strings for 2^28 elements cost minutes).
fn show<T: Element>(bits: u64) -> String {
    format!("{:?}", from_bits::<T>(bits))
}

/// The first difference between two results, in words.
fn first_difference(want: &Outputs, got: &Outputs) -> Option<String> {
    for ((name, w, wf), (_, g, gf)) in want.iter().zip(got) {
        if w.len() != g.len() {
            return Some(format!(
                "{name}: {} elements, expected {}",
                g.len(),
                w.len()
            ));
        }
        if let Some(i) = (0..w.len()).find(|&i| w[i] != g[i]) {
            let wrong = (0..w.len()).filter(|&i| w[i] != g[i]).count();
            return Some(format!(
                "{name}[{i}]: expected {} ({:#x}), got {} ({:#x}); {wrong} of {} wrong",
                wf(w[i]),
                w[i],
                gf(g[i]),
                g[i],
                w.len()
            ));
        }
    }
    None
}

/// Runs `run` on every device: each result must equal `want`, and the devices each other.
fn check_everywhere(case: &str, want: &Outputs, mut run: impl FnMut(&dyn Device) -> Outputs) {
    let mut results: Vec<(String, Outputs)> = Vec::new();
    for_each_device(|d| {
        let got = run(&*d.dev);
        if let Some(diff) = first_difference(want, &got) {
            panic!("{}: {case}: {diff}", d.label);
        }
        results.push((d.label.clone(), got));
    });
    for pair in results.windows(2) {
        if let Some(diff) = first_difference(&pair[0].1, &pair[1].1) {
            panic!("{case}: {} and {} differ: {diff}", pair[0].0, pair[1].0);
        }
    }
}

/// The value of input index `i` in a pairs case.
fn index_value<V: Element>(i: usize) -> V {
    let i = i as u64;
    from_bits(i | ((i ^ 0x5a5a) << 32))
}

fn pairs_case<K: Element, V: Element>(case: &Case, keys: &[K]) {
    let values: Vec<V> = (0..keys.len()).map(index_value).collect();
    let (wk, wv) = cpu::sort_pairs(keys, &values, case.order, case.bits.clone());
    let want = vec![output("keys_out", &wk), output("values_out", &wv)];
    let (pk, pv) = (poison_value(&wk), poison_value(&wv));
    let label = case.label::<K>();
    check_everywhere(&label, &want, |dev| {
        let run = || -> xwarp::Result<Outputs> {
            let keys_in = DeviceVec::from_slice(dev, keys)?;
            let values_in = DeviceVec::from_slice(dev, &values)?;
            let mut keys_out = DeviceVec::<K>::alloc(dev, keys.len())?;
            let mut values_out = DeviceVec::<V>::alloc(dev, keys.len())?;
            keys_out.fill(dev, pk)?;
            values_out.fill(dev, pv)?;
            let mut sorter = Sorter::<K>::with_tuning(case.tuning);
            sorter.sort_pairs(
                dev,
                &keys_in,
                &mut keys_out,
                &values_in,
                &mut values_out,
                case.order,
                case.bits.clone(),
            )?;
            Ok(vec![
                output("keys_out", &keys_out.to_vec(dev)?),
                output("values_out", &values_out.to_vec(dev)?),
            ])
        };
        run().unwrap_or_else(|e| panic!("{label}: {e}"))
    });
}

fn argsort_case<K: Element, I: SortIndex + TryFrom<usize>>(case: &Case, keys: &[K]) {
    let want: Vec<I> = cpu::argsort(keys, case.order, case.bits.clone())
        .into_iter()
        .map(|i| I::try_from(i).unwrap_or_else(|_| panic!("index {i} fits")))
        .collect();
    let poison = poison_value(&want);
    let want = vec![output("indices_out", &want)];
    let label = case.label::<K>();
    check_everywhere(&label, &want, |dev| {
        let run = || -> xwarp::Result<Outputs> {
            let keys_in = DeviceVec::from_slice(dev, keys)?;
            let mut out = DeviceVec::<I>::alloc(dev, keys.len())?;
            out.fill(dev, poison)?;
            let mut sorter = Sorter::<K>::with_tuning(case.tuning);
            sorter.argsort(dev, &keys_in, &mut out, case.order, case.bits.clone())?;
            Ok(vec![output("indices_out", &out.to_vec(dev)?)])
        };
        run().unwrap_or_else(|e| panic!("{label}: {e}"))
    });
}

fn keys_case<K: Element>(case: &Case, keys: &[K]) {
    let want = cpu::sort_keys(keys, case.order, case.bits.clone());
    let poison = poison_value(&want);
    let want = vec![output("keys_out", &want)];
    let label = case.label::<K>();
    check_everywhere(&label, &want, |dev| {
        let run = || -> xwarp::Result<Outputs> {
            let keys_in = DeviceVec::from_slice(dev, keys)?;
            let mut out = DeviceVec::<K>::alloc(dev, keys.len())?;
            out.fill(dev, poison)?;
            let mut sorter = Sorter::<K>::with_tuning(case.tuning);
            sorter.sort_keys(dev, &keys_in, &mut out, case.order, case.bits.clone())?;
            Ok(vec![output("keys_out", &out.to_vec(dev)?)])
        };
        run().unwrap_or_else(|e| panic!("{label}: {e}"))
    });
}

fn run_case<K: Element>(case: &Case, rng: &mut Rng) {
    let keys = make_keys::<K>(case.pattern, case.n, rng);
    match case.op {
        Op::Keys => keys_case(case, &keys),
        Op::Pairs(v) => match v {
            ElemKind::I32 => pairs_case::<K, i32>(case, &keys),
            ElemKind::U32 => pairs_case::<K, u32>(case, &keys),
            ElemKind::F32 => pairs_case::<K, f32>(case, &keys),
            ElemKind::I64 => pairs_case::<K, i64>(case, &keys),
            ElemKind::U64 => pairs_case::<K, u64>(case, &keys),
            ElemKind::F64 => pairs_case::<K, f64>(case, &keys),
        },
        Op::Argsort(false) => argsort_case::<K, u32>(case, &keys),
        Op::Argsort(true) => argsort_case::<K, u64>(case, &keys),
    }
}

fn run_cases<K: Element>(cases: &[Case]) {
    let mut rng = Rng::new(seed());
    for case in cases {
        run_case::<K>(case, &mut rng);
    }
}

const SMALL: [usize; 8] = [0, 1, 2, 31, 33, 700, 3000, 4097];
const ORDERS: [SortOrder; 2] = [SortOrder::Ascending, SortOrder::Descending];

/// Every pattern and order at the small sizes, keys, pairs and argsort; one large case.
fn every_pattern(elem: ElemKind, big: Case) {
    let ops = [
        Op::Keys,
        Op::Pairs(ElemKind::U32),
        Op::Argsort(false),
        Op::Pairs(ElemKind::F64),
    ];
    let bits = 0..elem.size() as u32 * 8;
    let mut cases = Vec::new();
    for (p, &pattern) in PATTERNS.iter().enumerate() {
        for &order in &ORDERS {
            let sizes: &[usize] = if pattern == Pattern::Uniform {
                &SMALL
            } else {
                &[33, 4097]
            };
            for (s, &n) in sizes.iter().enumerate() {
                let op = ops[(p + s) % ops.len()];
                cases.push(Case::new(op, n, pattern, order, bits.clone()));
            }
        }
    }
    cases.push(big);
    with_elem!(elem, run_cases(&cases));
}

#[test]
fn every_pattern_u32() {
    let big = Case::new(
        Op::Keys,
        1_000_003,
        Pattern::Uniform,
        SortOrder::Ascending,
        0..32,
    );
    every_pattern(ElemKind::U32, big);
}

#[test]
fn every_pattern_i32() {
    let big = Case::new(
        Op::Pairs(ElemKind::I32),
        1_000_003,
        Pattern::FewDistinct,
        SortOrder::Descending,
        0..32,
    );
    every_pattern(ElemKind::I32, big);
}

#[test]
fn every_pattern_f32() {
    let big = Case::new(
        Op::Argsort(false),
        1_000_003,
        Pattern::Bits,
        SortOrder::Ascending,
        0..32,
    );
    every_pattern(ElemKind::F32, big);
}

#[test]
fn every_pattern_u64() {
    let big = Case::new(
        Op::Keys,
        1_000_003,
        Pattern::TopByte,
        SortOrder::Descending,
        0..64,
    );
    every_pattern(ElemKind::U64, big);
}

#[test]
fn every_pattern_i64() {
    let big = Case::new(
        Op::Pairs(ElemKind::U64),
        100_003,
        Pattern::Uniform,
        SortOrder::Ascending,
        0..64,
    );
    every_pattern(ElemKind::I64, big);
}

#[test]
fn every_pattern_f64() {
    let big = Case::new(
        Op::Argsort(true),
        1_000_003,
        Pattern::Edges,
        SortOrder::Descending,
        0..64,
    );
    every_pattern(ElemKind::F64, big);
}

/// Values of every type move with their keys, and equal keys keep their input order.
#[test]
fn pairs_of_every_value_type_are_stable() {
    let values = ElemKind::ALL;
    let mut cases = Vec::new();
    for (i, &v) in values.iter().enumerate() {
        for &pattern in &[Pattern::FewDistinct, Pattern::AllEqual, Pattern::TopByte] {
            let order = ORDERS[i % 2];
            cases.push(Case::new(Op::Pairs(v), 4097, pattern, order, 0..32));
        }
    }
    run_cases::<f32>(&cases);
    let cases: Vec<Case> = cases
        .into_iter()
        .map(|c| Case { bits: 0..64, ..c })
        .collect();
    run_cases::<u64>(&cases);
}

/// Argsort with u32 and u64 indices, every key type.
#[test]
fn argsort_with_both_index_types() {
    for elem in ElemKind::ALL {
        let cases: Vec<Case> = [(false, 4097), (true, 4097), (true, 33), (false, 1)]
            .into_iter()
            .enumerate()
            .map(|(i, (wide, n))| {
                Case::new(
                    Op::Argsort(wide),
                    n,
                    PATTERNS[i + 4],
                    ORDERS[i % 2],
                    0..elem.size() as u32 * 8,
                )
            })
            .collect();
        with_elem!(elem, run_cases(&cases));
    }
}

/// Every bit-range edge of every key type: the bits outside the range never decide.
#[test]
fn bit_range_edges() {
    for elem in ElemKind::ALL {
        let w = elem.size() as u32 * 8;
        let mut ranges = vec![0..1, 0..32, 8..16, 31..32, 3..29, w - 8..w, w - 1..w, 0..w];
        if w == 64 {
            ranges.extend([0..64, 32..64, 28..36, 63..64, 1..64, 40..41]);
        }
        let mut cases = Vec::new();
        for (i, bits) in ranges.into_iter().enumerate() {
            let pattern = [Pattern::Uniform, Pattern::TopByte, Pattern::Bits][i % 3];
            let op = [Op::Keys, Op::Pairs(ElemKind::U32), Op::Argsort(false)][i % 3];
            cases.push(Case::new(op, 4097, pattern, ORDERS[i % 2], bits));
        }
        with_elem!(elem, run_cases(&cases));
    }
}

/// Sizes around the tile of each device (exactly one tile, one key more or less, two tiles)
/// and around the most keys a sort in one launch takes, for keys and values of 4 and 8 bytes.
#[test]
fn sizes_at_tile_edges() {
    // Sizes of the tiles of 4-byte and of 8-byte words, then of one word of each.
    let edges = |widths: &[(usize, usize)]| {
        let mut sizes = Vec::new();
        for d in devices() {
            let t = Tuning::default();
            for &(kb, vb) in widths {
                // The tile of the shortest sorts (ITEMS_BY_LEN's first class), which these
                // sizes are.
                let plan = TilePlan::for_len(d.dev.info(), &t, kb, vb, 1).unwrap();
                let tile = plan.tile();
                let most = plan.whole_max(d.dev.info(), &t);
                sizes.extend([tile - 1, tile, tile + 1, 2 * tile, 3 * tile - 1]);
                sizes.extend([most - 1, most, most + 1]);
            }
        }
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    };
    let mut rng = Rng::new(seed());
    for (i, &n) in edges(&[(8, 4), (4, 8)]).iter().enumerate() {
        // One 8-byte word and one 4-byte one (CUDA's wide pairs tile; see TilePlan).
        let order = ORDERS[i % 2];
        run_case::<i64>(
            &Case::new(
                Op::Pairs(ElemKind::F32),
                n,
                Pattern::FewDistinct,
                order,
                0..64,
            ),
            &mut rng,
        );
        run_case::<f32>(
            &Case::new(
                Op::Argsort(true),
                n,
                Pattern::Bits,
                ORDERS[(i + 1) % 2],
                0..32,
            ),
            &mut rng,
        );
    }
    for (i, &n) in edges(&[(4, 0), (8, 8)]).iter().enumerate() {
        let order = ORDERS[i % 2];
        run_case::<u32>(
            &Case::new(Op::Pairs(ElemKind::U32), n, Pattern::Uniform, order, 0..32),
            &mut rng,
        );
        run_case::<f64>(
            &Case::new(Op::Pairs(ElemKind::I64), n, Pattern::Bits, order, 0..64),
            &mut rng,
        );
    }
}

/// Sorts of lengths at each step of the default tile by length (`ITEMS_BY_LEN`, `LARGE_SORT`;
/// with `XWARP_LARGE=1` also the 64-bit keys' staging rounds, `WIDE_TWO_ROUNDS_FROM`): one key
/// fewer, the step, one more, with keys alone, 4- and 8-byte pairs and argsort; and a sorter
/// made for the longest serves every shorter length (the shorter tiles' states fit).
#[test]
fn sizes_at_each_tile_step() {
    let mut rng = Rng::new(seed());
    let mut steps: Vec<usize> = ITEMS_BY_LEN.iter().map(|&(below, _, _)| below).collect();
    steps.push(LARGE_SORT);
    for (i, &step) in steps.iter().enumerate() {
        for (j, n) in [step - 1, step, step + 1].into_iter().enumerate() {
            let order = ORDERS[(i + j) % 2];
            let pattern = PATTERNS[(i + 3 * j) % PATTERNS.len()];
            match (i + j) % 3 {
                0 => {
                    run_case::<u32>(&Case::new(Op::Keys, n, pattern, order, 0..32), &mut rng);
                    run_case::<f64>(
                        &Case::new(Op::Pairs(ElemKind::U64), n, pattern, order, 0..64),
                        &mut rng,
                    );
                }
                1 => {
                    run_case::<i32>(
                        &Case::new(Op::Pairs(ElemKind::I32), n, pattern, order, 0..32),
                        &mut rng,
                    );
                    run_case::<u64>(&Case::new(Op::Keys, n, pattern, order, 3..61), &mut rng);
                }
                _ => {
                    run_case::<f32>(
                        &Case::new(Op::Argsort(true), n, pattern, order, 0..32),
                        &mut rng,
                    );
                    run_case::<i64>(
                        &Case::new(Op::Pairs(ElemKind::F32), n, pattern, order, 0..64),
                        &mut rng,
                    );
                }
            }
        }
    }
    if large() {
        for (j, n) in [WIDE_TWO_ROUNDS_FROM - 1, WIDE_TWO_ROUNDS_FROM + 1]
            .into_iter()
            .enumerate()
        {
            run_case::<u64>(
                &Case::new(Op::Keys, n, Pattern::Uniform, ORDERS[j], 0..64),
                &mut rng,
            );
        }
    }
    // One sorter for the longest step serves each step's shorter sorts without growing.
    let longest = LARGE_SORT + 1;
    let keys: Vec<u32> = make_keys(Pattern::Uniform, longest, &mut rng);
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut sorter = Sorter::<u32>::new(dev, longest).unwrap();
        let words = |s: &Sorter<u32>| format!("{s:?}");
        let made = words(&sorter);
        for &step in &steps {
            let n = step - 1;
            let keys_in = DeviceVec::from_slice(dev, &keys[..n]).unwrap();
            let want = cpu::sort_keys(&keys[..n], SortOrder::Ascending, 0..32);
            let mut out = DeviceVec::<u32>::alloc(dev, n).unwrap();
            out.fill(dev, poison_value(&want)).unwrap();
            sorter
                .sort_keys(dev, &keys_in, &mut out, SortOrder::Ascending, 0..32)
                .unwrap();
            assert_eq!(out.to_vec(dev).unwrap(), want, "{}: n={n}", d.label);
            assert_eq!(words(&sorter), made, "{}: n={n}: the storage grew", d.label);
        }
    });
}

/// The look-back's fallback (a tile counts unpublished predecessors itself) gives the same bits,
/// with the default workgroup and with the smallest one.
#[test]
fn lookback_fallback_gives_the_same_bits() {
    let fallback = Tuning {
        spin: 0,
        ..Tuning::default()
    };
    let mut cases = vec![Case {
        tuning: fallback,
        ..Case::new(
            Op::Pairs(ElemKind::U32),
            1_000_003,
            Pattern::Uniform,
            SortOrder::Ascending,
            0..32,
        )
    }];
    // Workgroups of 32 or 64 invocations (whichever the device's subgroups allow): each
    // invocation looks back over several digits.
    let unit = devices()
        .iter()
        .map(|d| d.dev.info().max_subgroup_size.max(32))
        .max()
        .unwrap_or(32);
    for spin in [0, 1, Tuning::default().spin] {
        cases.push(Case {
            tuning: Tuning {
                spin,
                block: Some(unit),
                ..Tuning::default()
            },
            ..Case::new(
                Op::Argsort(false),
                100_003,
                Pattern::FewDistinct,
                SortOrder::Descending,
                0..32,
            )
        });
    }
    run_cases::<u32>(&cases);
}

/// Workgroups that are not a power of two give the same bits: 96 invocations (fewer than the
/// 256 digits, so each invocation scans and looks back over several) and 384 (12 subgroups of
/// 32, more than the digits; CUDA's default for pairs of 32-bit keys and values from
/// `PAIRS_BLOCK_FROM` keys), where every test device takes them: pairs and argsort, whole and partial
/// tiles, both orders, the look-back's fallback, a bit range; then, where a device plans them
/// in a workgroup of their own, the default plan of large pairs and argsorts.
#[test]
fn workgroups_of_any_width_give_the_same_bits() {
    let mut cases = Vec::new();
    for block in [96, 384] {
        let tuning = Tuning {
            block: Some(block),
            ..Tuning::default()
        };
        if !devices()
            .iter()
            .all(|d| TilePlan::new(d.dev.info(), &tuning, 4, 4).is_ok())
        {
            eprintln!("workgroups of {block}: more than a test device takes; skipped");
            continue;
        }
        for (n, pattern, order, spin, bits) in [
            (
                33,
                Pattern::Uniform,
                SortOrder::Ascending,
                tuning.spin,
                0..32,
            ),
            (
                100_003,
                Pattern::FewDistinct,
                SortOrder::Descending,
                0,
                0..32,
            ),
            (
                300_007,
                Pattern::Uniform,
                SortOrder::Ascending,
                tuning.spin,
                0..32,
            ),
            (
                65_537,
                Pattern::Bits,
                SortOrder::Descending,
                tuning.spin,
                5..27,
            ),
        ] {
            let tuning = Tuning { spin, ..tuning };
            cases.push(Case {
                tuning,
                ..Case::new(Op::Pairs(ElemKind::U32), n, pattern, order, bits.clone())
            });
            cases.push(Case {
                tuning,
                ..Case::new(Op::Argsort(false), n, pattern, order, bits)
            });
        }
    }
    // The default plan of large pairs, where it differs from the digit passes' usual
    // workgroup on some test device (CUDA): beside every other device's default.
    let own_block = devices().iter().any(|d| {
        let plan = |value_bytes| {
            TilePlan::for_len(
                d.dev.info(),
                &Tuning::default(),
                4,
                value_bytes,
                PAIRS_BLOCK_FROM,
            )
            .map(|p| p.block)
            .ok()
        };
        plan(4) != plan(0)
    });
    if own_block {
        cases.push(Case::new(
            Op::Pairs(ElemKind::U32),
            PAIRS_BLOCK_FROM + 7297,
            Pattern::Uniform,
            SortOrder::Descending,
            0..32,
        ));
        cases.push(Case::new(
            Op::Argsort(false),
            PAIRS_BLOCK_FROM + 1,
            Pattern::FewDistinct,
            SortOrder::Ascending,
            0..32,
        ));
    } else {
        eprintln!("no test device plans large pairs in a workgroup of its own; skipped");
    }
    run_cases::<u32>(&cases);
    let floats: Vec<Case> = cases
        .iter()
        .filter(|c| matches!(c.pattern, Pattern::Bits) || c.n < PAIRS_BLOCK_FROM)
        .cloned()
        .collect();
    run_cases::<f32>(&floats);
}

/// The tile of 32-bit pairs in dynamic shared memory (CUDA from `PAIRS_BLOCK_FROM` keys,
/// `PAIRS_ITEMS` keys a thread where the device's opt-in shared memory holds them), where a
/// test device plans it: at the step's edge (one key fewer takes the static tile), around
/// whole multiples of the tile, partial last tiles, every 32-bit key type with each value
/// type and argsort, both orders, skewed and edge keys, a bit range and the look-back's
/// fallback; beside every other device's default plan, bit for bit.
#[test]
fn pairs_in_dynamic_shared_memory_give_the_same_bits() {
    let tiles: Vec<usize> = devices()
        .iter()
        .filter_map(|d| {
            TilePlan::for_len(d.dev.info(), &Tuning::default(), 4, 4, PAIRS_BLOCK_FROM)
                .ok()
                .filter(|p| p.dynamic_shared)
                .map(|p| p.tile())
        })
        .collect();
    let Some(&tile) = tiles.first() else {
        eprintln!("no test device plans pairs in dynamic shared memory; skipped");
        return;
    };
    // The first whole multiple of the tile past the step.
    let whole = PAIRS_BLOCK_FROM.div_ceil(tile) * tile;
    let fallback = Tuning {
        spin: 0,
        ..Tuning::default()
    };
    let mut cases = Vec::new();
    for (i, (n, pattern, bits, tuning)) in [
        (
            PAIRS_BLOCK_FROM - 1,
            Pattern::Uniform,
            0..32,
            Tuning::default(),
        ),
        (
            PAIRS_BLOCK_FROM,
            Pattern::FewDistinct,
            0..32,
            Tuning::default(),
        ),
        (whole - 1, Pattern::Edges, 0..32, Tuning::default()),
        (whole, Pattern::Bits, 0..32, fallback),
        (whole + 1, Pattern::TopByte, 0..32, Tuning::default()),
        (3 * whole + 4097, Pattern::Uniform, 7..29, Tuning::default()),
        (PAIRS_BLOCK_FROM + 33, Pattern::AllEqual, 0..32, fallback),
    ]
    .into_iter()
    .enumerate()
    {
        let order = ORDERS[i % 2];
        let op = match i % 3 {
            0 => Op::Pairs(ElemKind::U32),
            1 => Op::Pairs(ElemKind::F32),
            _ => Op::Argsort(false),
        };
        cases.push(Case {
            tuning,
            ..Case::new(op, n, pattern, order, bits)
        });
    }
    run_cases::<u32>(&cases);
    run_cases::<i32>(&cases[..4]);
    run_cases::<f32>(&cases[2..]);
}

/// Key sorts of every 32-bit `(n, pattern)` with `tuning`, the orders alternating from the
/// `i`-th.
fn key_cases(tuning: Tuning, i: usize, sizes: &[(usize, Pattern)]) -> Vec<Case> {
    sizes
        .iter()
        .enumerate()
        .map(|(j, &(n, pattern))| Case {
            tuning,
            ..Case::new(Op::Keys, n, pattern, ORDERS[(i + j) % 2], 0..32)
        })
        .collect()
}

/// Keys staged in one round or in two (half the tile at a time, the second half read again)
/// give the same bits on every backend, whichever the backend's default: whole and partial
/// tiles, the small sorts' and the large sorts' tiles, both orders, the fallback, 32- and
/// 64-bit keys (float edges: NaN payloads, ±0, ±inf, subnormals); pairs and odd keys a thread
/// keep one round.
#[test]
fn staging_rounds_give_the_same_bits() {
    let mut cases = Vec::new();
    for (i, rounds) in [1, 2].into_iter().enumerate() {
        let tuning = Tuning {
            stage_rounds: rounds,
            ..Tuning::default()
        };
        let order = ORDERS[i % 2];
        cases.extend(key_cases(
            tuning,
            i,
            &[
                (1, Pattern::Uniform),
                (33, Pattern::Uniform),
                (4097, Pattern::Uniform),
                (1_000_003, Pattern::Uniform),
                (100_003, Pattern::FewDistinct),
                (65_537, Pattern::Bits),
                (8_193, Pattern::Edges),
                (40_961, Pattern::AllEqual),
                (50_001, Pattern::Reversed),
            ],
        ));
        // The large sorts' tile of 32 keys a thread, one partial tile.
        cases.push(Case {
            tuning,
            ..Case::new(Op::Keys, (1 << 21) + 4097, Pattern::Uniform, order, 0..32)
        });
        // The fallback (every predecessor counted here), odd keys a thread, pairs.
        cases.push(Case {
            tuning: Tuning { spin: 0, ..tuning },
            ..Case::new(Op::Keys, 300_007, Pattern::Uniform, order, 0..32)
        });
        cases.push(Case {
            tuning: Tuning {
                items: 15,
                ..tuning
            },
            ..Case::new(Op::Keys, 100_003, Pattern::Uniform, order, 3..29)
        });
        cases.push(Case {
            tuning,
            ..Case::new(
                Op::Pairs(ElemKind::U32),
                100_003,
                Pattern::Uniform,
                order,
                0..32,
            )
        });
    }
    run_cases::<u32>(&cases);
    run_cases::<f32>(&cases);
    let wide: Vec<Case> = cases
        .iter()
        .filter(|c| c.n < 1 << 21)
        .map(|c| Case {
            bits: 0..64,
            ..c.clone()
        })
        .collect();
    run_cases::<u64>(&wide);
    // 64-bit floats: NaN payloads, ±0, ±inf, subnormals, the largest magnitudes.
    let floats: Vec<Case> = wide
        .iter()
        .filter(|c| matches!(c.pattern, Pattern::Bits | Pattern::Edges))
        .cloned()
        .collect();
    run_cases::<f64>(&floats);
}

/// The histogram launch's chunks of any size give the same bits: one workgroup for every key
/// (up to `HISTOGRAM_MAX_CHUNK`), and workgroups capped at that many keys each (more of them
/// than `histogram_groups` asks for, the last one partial), on uniform, equal and few distinct
/// keys (the counter copies' worst case), 32- and 64-bit keys, a bit range.
#[test]
fn histogram_chunks_of_any_size_give_the_same_bits() {
    let cap = xwarp::sort::HISTOGRAM_MAX_CHUNK;
    let mut cases = Vec::new();
    for (i, groups) in [1, 2, 3].into_iter().enumerate() {
        let tuning = Tuning {
            histogram_groups: groups,
            ..Tuning::default()
        };
        cases.extend(key_cases(
            tuning,
            i,
            &[
                (40_961, Pattern::Uniform),
                (cap, Pattern::FewDistinct),
                (3 * cap + 17, Pattern::Uniform),
                (2 * cap + 1, Pattern::AllEqual),
                (5 * cap - 255, Pattern::FewDistinct),
            ],
        ));
        cases.push(Case {
            tuning,
            ..Case::new(
                Op::Pairs(ElemKind::U32),
                4 * cap + 3,
                Pattern::Bits,
                ORDERS[i % 2],
                5..27,
            )
        });
    }
    run_cases::<u32>(&cases);
    let wide: Vec<Case> = cases
        .iter()
        .map(|c| Case {
            bits: if c.bits == (0..32) { 0..64 } else { 9..61 },
            ..c.clone()
        })
        .collect();
    run_cases::<u64>(&wide);
}

/// One sorter serves repeated calls of every kind without allocating.
#[test]
fn repeated_sorts_allocate_nothing() {
    let n = 50_001;
    let mut rng = Rng::new(seed());
    let keys: Vec<f32> = make_keys(Pattern::Bits, n, &mut rng);
    let values: Vec<u32> = (0..n as u32).collect();
    let (want_keys, want_values) = cpu::sort_pairs(&keys, &values, SortOrder::Ascending, 0..32);
    let want_perm: Vec<u32> = cpu::argsort(&keys, SortOrder::Descending, 0..32)
        .into_iter()
        .map(|i| i as u32)
        .collect();
    for d in devices() {
        // A device of its own: the other tests of this binary allocate on the shared one
        // meanwhile.
        let (own, vk): (Arc<dyn Device>, _) = match d.dev.info().backend {
            BackendKind::Vulkan => {
                let vk = open_vulkan();
                (vk.clone(), Some(vk))
            }
            BackendKind::Cuda => (
                Arc::new(xwarp::cuda::CudaDevice::new(d.dev.info().index).unwrap()),
                None,
            ),
        };
        let dev = &*own;
        if dev.memory_usage().is_none() {
            eprintln!("{}: memory usage not counted: skipped", d.label);
            continue;
        }
        let keys_in = DeviceVec::from_slice(dev, &keys).unwrap();
        let values_in = DeviceVec::from_slice(dev, &values).unwrap();
        let mut keys_out = DeviceVec::<f32>::alloc(dev, n).unwrap();
        let mut values_out = DeviceVec::<u32>::alloc(dev, n).unwrap();
        let mut indices = DeviceVec::<u32>::alloc(dev, n).unwrap();
        let mut sorter = Sorter::<f32>::for_argsort::<u32>(dev, n).unwrap();
        // Staging buffers of the uploads above are gone once their copies have finished.
        dev.synchronize().unwrap();
        let before = dev.memory_usage().unwrap();
        for _ in 0..3 {
            sorter
                .sort_pairs(
                    dev,
                    &keys_in,
                    &mut keys_out,
                    &values_in,
                    &mut values_out,
                    SortOrder::Ascending,
                    0..32,
                )
                .unwrap();
            sorter
                .argsort(dev, &keys_in, &mut indices, SortOrder::Descending, 0..32)
                .unwrap();
            sorter
                .sort_keys(dev, &keys_in, &mut keys_out, SortOrder::Ascending, 0..32)
                .unwrap();
            allocated_nothing(dev, &before, &d.label, "a sort within the sorter's storage");
        }
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&keys_out.to_vec(dev).unwrap()),
            bits(&want_keys),
            "{}",
            d.label
        );
        assert_eq!(values_out.to_vec(dev).unwrap(), want_values, "{}", d.label);
        assert_eq!(indices.to_vec(dev).unwrap(), want_perm, "{}", d.label);
        // A shorter sort and a narrower bit range fit the same storage.
        let short = DeviceVec::from_slice(dev, &keys[..n / 3]).unwrap();
        let mut short_out = DeviceVec::<f32>::alloc(dev, n / 3).unwrap();
        dev.synchronize().unwrap();
        let before = dev.memory_usage().unwrap();
        sorter
            .sort_keys(dev, &short, &mut short_out, SortOrder::Descending, 4..12)
            .unwrap();
        allocated_nothing(dev, &before, &d.label, "a shorter sort");
        let want = cpu::sort_keys(&keys[..n / 3], SortOrder::Descending, 4..12);
        assert_eq!(
            bits(&short_out.to_vec(dev).unwrap()),
            bits(&want),
            "{}",
            d.label
        );
        // Storage for LARGE_SORT keys (the large tiles) serves a sort of one key fewer, which
        // takes the smaller tiles and so more tile states.
        let big: Vec<u32> = make_keys(Pattern::Uniform, LARGE_SORT - 1, &mut rng);
        let big_in = DeviceVec::from_slice(dev, &big).unwrap();
        let mut big_out = DeviceVec::<u32>::alloc(dev, big.len()).unwrap();
        let mut big_sorter = Sorter::<u32>::new(dev, LARGE_SORT).unwrap();
        dev.synchronize().unwrap();
        let before = dev.memory_usage().unwrap();
        big_sorter
            .sort_keys(dev, &big_in, &mut big_out, SortOrder::Ascending, 0..32)
            .unwrap();
        allocated_nothing(
            dev,
            &before,
            &d.label,
            "a sort below LARGE_SORT in storage for LARGE_SORT",
        );
        assert_eq!(
            big_out.to_vec(dev).unwrap(),
            cpu::sort_keys(&big, SortOrder::Ascending, 0..32),
            "{}",
            d.label
        );
        if let Some(vk) = vk {
            let messages = vk.validation_messages();
            assert!(messages.is_empty(), "{}: {}", d.label, messages.join("\n"));
        }
    }
}

/// Waits for `dev`, then asserts that its memory use is `before`'s: the same buffers and bytes
/// and, on Vulkan, the same reserve (xwarp's own allocator's; CUDA's reserve is the device-wide
/// use the driver reports, which loading a kernel module moves).
fn allocated_nothing(dev: &dyn Device, before: &MemoryUsage, label: &str, what: &str) {
    dev.synchronize().unwrap();
    let after = dev.memory_usage().unwrap();
    assert_eq!(
        (after.buffers, after.bytes),
        (before.buffers, before.bytes),
        "{label}: {what} allocated"
    );
    if dev.info().backend == BackendKind::Vulkan {
        assert_eq!(
            after.reserved_bytes, before.reserved_bytes,
            "{label}: {what}"
        );
    }
}

/// Asserts that `r` is `InvalidParameter` naming `name`, with the allowed range in words.
fn assert_invalid(r: xwarp::Result<()>, name: &str, case: &str) {
    match r {
        Err(Error::InvalidParameter {
            name: n, allowed, ..
        }) if n == name => assert!(!allowed.is_empty(), "{case}"),
        other => panic!("{case}: expected InvalidParameter {{ name: {name} }}, got {other:?}"),
    }
}

fn assert_length(r: xwarp::Result<()>, name: &str, case: &str) {
    match r {
        Err(Error::LengthMismatch { name: n, .. }) if n == name => {}
        other => panic!("{case}: expected LengthMismatch {{ name: {name} }}, got {other:?}"),
    }
}

/// Every refused input: a typed error naming the parameter, and outputs left as they were.
#[test]
fn bad_input_is_a_typed_error_and_touches_no_output() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let case = |what: &str| format!("{}: {what}", d.label);
        let n = 1000;
        let keys: Vec<u32> = Rng::new(7).vec(n);
        let keys_in = DeviceVec::from_slice(dev, &keys).unwrap();
        let poison = 0xdead_beefu32;
        let fresh = |len: usize| {
            let mut v = DeviceVec::<u32>::alloc(dev, len).unwrap();
            v.fill(dev, poison).unwrap();
            v
        };
        let untouched = |v: &DeviceVec<u32>, what: &str| {
            assert!(
                v.to_vec(dev).unwrap().iter().all(|&x| x == poison),
                "{}: an output was written",
                case(what)
            );
        };
        let mut sorter = Sorter::<u32>::for_pairs::<u32>(dev, n).unwrap();
        let asc = SortOrder::Ascending;

        let mut short = fresh(n - 1);
        let r = sorter.sort_keys(dev, &keys_in, &mut short, asc, 0..32);
        assert_length(r, "keys_out", &case("short keys_out"));
        untouched(&short, "short keys_out");

        let mut keys_out = fresh(n);
        let mut values_out = fresh(n);
        let values_short = fresh(n + 1);
        let r = sorter.sort_pairs(
            dev,
            &keys_in,
            &mut keys_out,
            &values_short,
            &mut values_out,
            asc,
            0..32,
        );
        assert_length(r, "values_in", &case("values_in of another length"));
        let mut values_long = fresh(n + 1);
        let values_in = fresh(n);
        let r = sorter.sort_pairs(
            dev,
            &keys_in,
            &mut keys_out,
            &values_in,
            &mut values_long,
            asc,
            0..32,
        );
        assert_length(r, "values_out", &case("values_out of another length"));
        let mut idx_short = fresh(3);
        let r = sorter.argsort(dev, &keys_in, &mut idx_short, asc, 0..32);
        assert_length(r, "indices_out", &case("indices_out of another length"));

        for (bits, name) in [
            (8..8, "begin_bit"),
            (Range { start: 9, end: 8 }, "begin_bit"),
            (0..33, "end_bit"),
            (32..40, "end_bit"),
            (0..0, "end_bit"),
        ] {
            let what = format!("bits {bits:?}");
            let r = sorter.sort_keys(dev, &keys_in, &mut keys_out, asc, bits.clone());
            assert_invalid(r, name, &case(&what));
            let r = sorter.argsort(dev, &keys_in, &mut values_out, asc, bits.clone());
            assert_invalid(r, name, &case(&what));
            let r = sorter.sort_pairs(
                dev,
                &keys_in,
                &mut keys_out,
                &values_in,
                &mut values_out,
                asc,
                bits,
            );
            assert_invalid(r, name, &case(&what));
        }
        let wide: Vec<u64> = Rng::new(3).vec(10);
        let r = sort_keys_host(dev, &wide, asc, 0..65).map(|_| ());
        assert_invalid(r, "end_bit", &case("u64 bits 0..65"));

        // Outputs that share a buffer with an input or with each other.
        let alias = |v: &DeviceVec<u32>| DeviceVec::<u32>::from_raw(v.raw().clone(), n).unwrap();
        let mut same_as_in = alias(&keys_in);
        let r = sorter.sort_keys(dev, &keys_in, &mut same_as_in, asc, 0..32);
        assert_invalid(r, "keys_out", &case("keys_out is keys_in"));
        let mut values_as_keys_out = alias(&keys_out);
        let r = sorter.sort_pairs(
            dev,
            &keys_in,
            &mut keys_out,
            &values_in,
            &mut values_as_keys_out,
            asc,
            0..32,
        );
        assert_invalid(r, "values_out", &case("values_out is keys_out"));
        let mut values_as_values_in = alias(&values_in);
        let r = sorter.sort_pairs(
            dev,
            &keys_in,
            &mut keys_out,
            &values_in,
            &mut values_as_values_in,
            asc,
            0..32,
        );
        assert_invalid(r, "values_out", &case("values_out is values_in"));
        let mut keys_as_values_in = alias(&values_in);
        let r = sorter.sort_pairs(
            dev,
            &keys_in,
            &mut keys_as_values_in,
            &values_in,
            &mut values_out,
            asc,
            0..32,
        );
        assert_invalid(r, "keys_out", &case("keys_out is values_in"));
        let mut idx_as_keys = alias(&keys_in);
        let r = sorter.argsort(dev, &keys_in, &mut idx_as_keys, asc, 0..32);
        assert_invalid(r, "indices_out", &case("indices_out is keys_in"));
        for (v, what) in [
            (&keys_out, "keys_out"),
            (&values_out, "values_out"),
            (&values_in, "values_in"),
        ] {
            untouched(v, what);
        }
        assert_eq!(
            keys_in.to_vec(dev).unwrap(),
            keys,
            "{}",
            case("keys_in changed")
        );

        // More keys than one sort may take on this device (where that fits in a test).
        let tile = TilePlan::new(dev.info(), &Tuning::default(), 4, 8)
            .unwrap()
            .tile();
        let limit = max_len::<u32>(dev.info(), 8, tile);
        if limit < 1 << 26 {
            let big_keys = DeviceVec::<u32>::alloc(dev, limit + 1).unwrap();
            let big_values = DeviceVec::<u64>::alloc(dev, limit + 1).unwrap();
            let mut big_keys_out = DeviceVec::<u32>::alloc(dev, limit + 1).unwrap();
            let mut big_values_out = DeviceVec::<u64>::alloc(dev, limit + 1).unwrap();
            let mut s = Sorter::<u32>::with_tuning(Tuning::default());
            let r = s.sort_pairs(
                dev,
                &big_keys,
                &mut big_keys_out,
                &big_values,
                &mut big_values_out,
                asc,
                0..32,
            );
            assert_invalid(
                r,
                "keys_in.len()",
                &case("more keys than the device may sort"),
            );
        } else {
            eprintln!(
                "{}: the longest sort ({limit} keys) is too long to exceed here",
                d.label
            );
        }
    });
}

/// The host helpers and a few exact answers.
#[test]
fn host_helpers_give_exact_answers() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let keys = [
            3.5f32,
            -0.0,
            f32::NAN,
            0.0,
            -1.0,
            f32::NEG_INFINITY,
            -f32::NAN,
        ];
        let sorted = sort_keys_host(dev, &keys, SortOrder::Ascending, 0..32).unwrap();
        let bits: Vec<u32> = sorted.iter().map(|v| v.to_bits()).collect();
        let want: Vec<u32> = [-f32::NAN, f32::NEG_INFINITY, -1.0, -0.0, 0.0, 3.5, f32::NAN]
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(bits, want, "{}", d.label);
        let perm = argsort_host(dev, &[5i64, -2, 5, 0, -2], SortOrder::Descending, 0..64).unwrap();
        assert_eq!(perm, [0, 2, 3, 1, 4], "{}", d.label);
        let (k, v) = sort_pairs_host(
            dev,
            &[0x0201u32, 0x0102, 0x0301, 0x0002],
            &[1.5f64, 2.5, 3.5, 4.5],
            SortOrder::Ascending,
            0..8,
        )
        .unwrap();
        assert_eq!(k, [0x0201, 0x0301, 0x0102, 0x0002], "{}", d.label);
        assert_eq!(v, [1.5, 3.5, 2.5, 4.5], "{}", d.label);
        assert!(sort_keys_host::<u64>(dev, &[], SortOrder::Ascending, 0..64)
            .unwrap()
            .is_empty());
    });
}

/// 2^24 + 1 and 2^28 keys (XWARP_LARGE=1), where the device may sort that many.
#[test]
fn large_sorts() {
    if !large() {
        eprintln!("XWARP_LARGE=1 runs 2^24 + 1 and 2^28 keys");
        return;
    }
    let mut rng = Rng::new(seed());
    for n in [(1usize << 24) + 1, 1 << 28] {
        let fits = devices().iter().all(|d| {
            let tile = TilePlan::new(d.dev.info(), &Tuning::default(), 4, 4)
                .unwrap()
                .tile();
            max_len::<u32>(d.dev.info(), 4, tile) >= n
        });
        if !fits {
            eprintln!("{n} keys: more than a test device may sort; skipped");
            continue;
        }
        let start = std::time::Instant::now();
        run_case::<u32>(
            &Case::new(Op::Keys, n, Pattern::Uniform, SortOrder::Ascending, 0..32),
            &mut rng,
        );
        eprintln!("{n} u32 keys: {:.1} s", start.elapsed().as_secs_f64());
        let start = std::time::Instant::now();
        run_case::<u32>(
            &Case::new(
                Op::Pairs(ElemKind::U32),
                n,
                Pattern::FewDistinct,
                SortOrder::Descending,
                0..32,
            ),
            &mut rng,
        );
        eprintln!("{n} u32 pairs: {:.1} s", start.elapsed().as_secs_f64());
    }
}
