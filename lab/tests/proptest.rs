//! Property tests: every algorithm family, with arbitrary variants (operators, widths, lane
//! arguments, predicates, scopes, rungs, block sizes, tunings, key types, sort orders and bit
//! ranges), lengths from 1 (0 for the sort) to about 50,000
//! (often at the edges 2^k - 1, 2^k, 2^k + 1 and multiples of the warp) and values (edge values
//! included), on every test device, against the CPU reference, bit for bit.
//!
//! Float inputs of every property come, case by case, from one of three palettes ([`Arb`]):
//! representative values, hard values (`xwarp::Element::random_hard`: every magnitude,
//! subnormals, zeros, halves, integers around 2^24 and 2^53; NaN payloads and ±∞ where values
//! are only compared or moved), or values about subnormals (`xwarp_lab::validate::tiny_value`).
//! Where a test device flushes subnormals, its type's palettes leave them out (said once). Sums
//! and products that end in NaN match any NaN (the documented rule:
//! `xwarp_lab::validate::first_mismatch_nan_as_class`); everything else is compared bit for bit.
//!
//! `XWARP_PROPTEST_CASES` sets the cases per property (default [`DEFAULT_CASES`]). A failure is
//! shrunk to a small case, which is printed with the seed that replays the run
//! (`XWARP_SEED`).

mod common;

use common::{for_each_device, hard_values, seed};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;
use xwarp::compact::{self, Order, Tuning as CompactTuning, MIN_BINDING_ELEMS};
use xwarp::cpu;
use xwarp::cpu::ladder::LadderElem;
use xwarp::cpu::reduce::Reduce;
use xwarp::cpu::stencil::{StencilElement, POINTS};
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{ReduceOp, WarpForm};
use xwarp::runs::Tuning as RunsTuning;
use xwarp::scan::{self, ScanKind, Tuning as ScanTuning, DEFAULT_SPIN, TILE};
use xwarp::shfl::{ShflOp, SEGM};
use xwarp::sort::{SortIndex, SortOrder, Sorter, Tuning as SortTuning};
use xwarp::stencil::StencilVariant;
use xwarp::vote::{Predicate, PredicateElement};
use xwarp::{Device, DeviceVec, Element, HardValues, Rng};
use xwarp_lab::validate::compact::{comparable, expected_output, run_compact};
use xwarp_lab::validate::ladder::{run_ladder, LadderCase};
use xwarp_lab::validate::reduce::{comparison, run_reduce, ReduceCase, Scope as ReduceScope};
use xwarp_lab::validate::scan::{run_scan, ScanCase, Scope as ScanScope};
use xwarp_lab::validate::shfl::{run_shfl, ShflCase};
use xwarp_lab::validate::sort::pair_value;
use xwarp_lab::validate::stencil::run_stencil;
use xwarp_lab::validate::vote::run_vote;
use xwarp_lab::validate::{
    first_mismatch, first_mismatch_nan_as_class, poison_value, tiny_value, Compare,
};

/// Cases per property when `XWARP_PROPTEST_CASES` is unset: what keeps this file within about
/// a minute on llvmpipe with the validation layer.
const DEFAULT_CASES: u32 = 64;
/// Longest input.
const MAX_LEN: usize = 50_000;

fn cases() -> u32 {
    std::env::var("XWARP_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// One seed for the whole run, printed once.
fn run_seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(seed)
}

/// Runs `test` on every case `strategy` makes, on every test device; a failure is shrunk and
/// reported with its device, the minimal case and the seed.
fn property<S>(name: &str, strategy: S, test: impl Fn(&dyn Device, S::Value) -> Result<(), String>)
where
    S: Strategy,
    S::Value: fmt::Debug,
{
    let seed = run_seed();
    for_each_device(|d| {
        let config = Config {
            cases: cases(),
            rng_seed: RngSeed::Fixed(seed),
            failure_persistence: None,
            max_shrink_iters: 400,
            max_shrink_time: 120_000,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let dev = &*d.dev;
        if let Err(e) = runner.run(&strategy, |case| {
            test(dev, case).map_err(TestCaseError::fail)
        }) {
            panic!(
                "{}: {name}: {e}\nreplay with XWARP_SEED={seed} XWARP_PROPTEST_CASES={}",
                d.label,
                cases()
            );
        }
    });
}

/// Compares bit for bit, saying where the first difference is.
fn exact<T: Element>(what: impl fmt::Display, want: &[T], got: &[T]) -> Result<(), String> {
    compared(what, want, got, first_mismatch)
}

/// Compares with `compare`, saying where the first difference is.
fn compared<T: Element>(
    what: impl fmt::Display,
    want: &[T],
    got: &[T],
    compare: Compare<T>,
) -> Result<(), String> {
    match compare(want, got) {
        None => Ok(()),
        Some(m) => Err(format!("{what}: {m}")),
    }
}

/// An input; long ones print as their length and ends, so a failure report stays readable.
#[derive(Clone)]
struct Data<T>(Vec<T>);

impl<T: fmt::Debug> fmt::Debug for Data<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.0;
        if v.len() <= 48 {
            write!(f, "{v:?}")
        } else {
            write!(
                f,
                "[{} elements: {:?} .. {:?}]",
                v.len(),
                &v[..8],
                &v[v.len() - 8..]
            )
        }
    }
}

/// Lengths from `min` to `max`, often at 2^k - 1, 2^k, 2^k + 1, near multiples of the warp,
/// and short.
fn length(min: usize, max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => min..=max,
        3 => (0u32..=15, -1i64..=1).prop_map(|(k, d)| ((1i64 << k) + d) as usize),
        2 => (1usize..=max / 32, -1i64..=1).prop_map(|(w, d)| (w as i64 * 32 + d) as usize),
        2 => min..=70usize,
    ]
    .prop_map(move |n| n.clamp(min, max))
}

/// Inputs of `min` to [`MAX_LEN`] elements ([`length`]) drawn from `elems`.
fn data<T: fmt::Debug + Clone + 'static>(
    elems: BoxedStrategy<T>,
    min: usize,
) -> impl Strategy<Value = Data<T>> {
    data_upto(elems, min, MAX_LEN)
}

/// Inputs of `min` to `max` elements drawn from `elems`.
fn data_upto<T: fmt::Debug + Clone + 'static>(
    elems: BoxedStrategy<T>,
    min: usize,
    max: usize,
) -> impl Strategy<Value = Data<T>> {
    length(min, max).prop_flat_map(move |n| vec(elems.clone(), n).prop_map(Data))
}

/// How a type's values are drawn for each use.
trait Arb: Element + PredicateElement + Reduce {
    /// Any bit pattern, edge values often, hard values among them (data that is only moved).
    fn bits() -> BoxedStrategy<Self>;
    /// Representative values for `op`: for floats, finite sums of mixed magnitudes, products
    /// near ±1 (and zeros), and anything (NaN, infinities, signed zeros) for min and max; for
    /// integers any value.
    fn for_op(op: ReduceOp) -> BoxedStrategy<Self>;
    /// Representative values for predicates: integers, and for floats integer-valued and
    /// mixed values, zeros of both signs, infinities and NaN.
    fn for_pred() -> BoxedStrategy<Self>;
    /// The palettes a case draws its values for `op` from, one per case: [`Arb::for_op`]; for
    /// floats also hard values (finite for sums and products: a sum that meets ±∞ or NaN
    /// shows little of its other inputs; for sums without the largest magnitudes, so that
    /// results stay numbers, and in a last palette with them, so that sums overflow; for
    /// products mostly among values near ±1, so that not every product overflows or vanishes)
    /// and values about subnormals (sums, differences, comparisons or products of subnormal
    /// size), the latter only where every test device keeps subnormals.
    fn palettes_for_op(op: ReduceOp) -> Vec<BoxedStrategy<Self>>;
    /// The same for predicates: [`Arb::for_pred`]; for floats also hard values with NaN
    /// payloads and ±∞, and subnormals with the smallest normals and zeros.
    fn palettes_for_pred() -> Vec<BoxedStrategy<Self>>;
}

/// Values of `hard` from the crate's generator, one seed each (shrinking tries other seeds).
fn hard<T: Element>(hard: HardValues) -> BoxedStrategy<T> {
    any::<u64>()
        .prop_map(move |s| T::random_hard(&mut Rng::new(s), hard))
        .boxed()
}

/// Values about subnormals ([`tiny_value`]), for products or for the rest.
fn tiny<T: Element>(products: bool) -> BoxedStrategy<T> {
    any::<u64>()
        .prop_map(move |s| tiny_value(&mut Rng::new(s), products))
        .boxed()
}

/// Which of `k` palettes a case takes: the first (the representative values) in half of the
/// cases, the others in turn.
fn palette(k: usize) -> BoxedStrategy<usize> {
    if k < 2 {
        return Just(0).boxed();
    }
    // 2(k - 1) draws: the first k - 1 take the representative palette, one each the others.
    (0..2 * (k - 1))
        .prop_map(move |p| (p + 2).saturating_sub(k))
        .boxed()
}

/// Inputs of `min` to [`MAX_LEN`] elements, each case from one of `palettes` ([`palette`]).
fn from_palettes<T: fmt::Debug + Clone + 'static>(
    palettes: Vec<BoxedStrategy<T>>,
    min: usize,
) -> BoxedStrategy<Data<T>> {
    palette(palettes.len())
        .prop_flat_map(move |p| data(palettes[p].clone(), min))
        .boxed()
}

macro_rules! int_arb {
    ($($t:ty),*) => {$(
        impl Arb for $t {
            fn bits() -> BoxedStrategy<Self> {
                prop_oneof![
                    6 => any::<$t>(),
                    2 => (0 as $t)..=(64 as $t),
                    1 => Just(<$t>::MIN),
                    1 => Just(<$t>::MAX),
                    1 => Just(0 as $t),
                    1 => Just(!(0 as $t)),
                ]
                .boxed()
            }
            fn for_op(_: ReduceOp) -> BoxedStrategy<Self> {
                Self::bits()
            }
            fn for_pred() -> BoxedStrategy<Self> {
                Self::bits()
            }
            fn palettes_for_op(op: ReduceOp) -> Vec<BoxedStrategy<Self>> {
                vec![Self::for_op(op)]
            }
            fn palettes_for_pred() -> Vec<BoxedStrategy<Self>> {
                vec![Self::for_pred()]
            }
        }
    )*};
}
int_arb!(i32, u32, i64, u64);

macro_rules! float_arb {
    ($($t:ident, $bits:ty);*) => {$(
        impl Arb for $t {
            fn bits() -> BoxedStrategy<Self> {
                prop_oneof![
                    4 => any::<$bits>().prop_map(<$t>::from_bits),
                    4 => finite::<$t>(),
                    4 => hard(hard_values(Self::KIND, true)),
                    1 => Just($t::NAN),
                    1 => Just($t::INFINITY),
                    1 => Just($t::NEG_INFINITY),
                    1 => Just($t::MAX),
                    1 => Just($t::MIN_POSITIVE),
                ]
                .boxed()
            }
            fn for_op(op: ReduceOp) -> BoxedStrategy<Self> {
                match op {
                    ReduceOp::Product => prop_oneof![
                        8 => (any::<bool>(), 0u32..4096).prop_map(|(neg, k)| {
                            // At most 1 + 2^-12: 50,000 factors stay far from overflow.
                            let m = 1.0 + k as $t * (2.0 as $t).powi(-24);
                            if neg { -m } else { m }
                        }),
                        1 => Just(1.0),
                        1 => Just(-1.0),
                        1 => Just(0.0),
                        1 => Just(-0.0),
                    ]
                    .boxed(),
                    ReduceOp::Min | ReduceOp::Max => prop_oneof![
                        6 => finite::<$t>(),
                        1 => Just($t::NAN),
                        1 => Just($t::INFINITY),
                        1 => Just($t::NEG_INFINITY),
                        1 => Just($t::MAX),
                        1 => Just($t::MIN),
                        1 => Just(0.0),
                        1 => Just(-0.0),
                    ]
                    .boxed(),
                    _ => finite::<$t>(),
                }
            }
            fn for_pred() -> BoxedStrategy<Self> {
                prop_oneof![
                    6 => finite::<$t>(),
                    1 => Just($t::NAN),
                    1 => Just($t::INFINITY),
                    1 => Just($t::NEG_INFINITY),
                    1 => Just(-0.0),
                ]
                .boxed()
            }
            fn palettes_for_op(op: ReduceOp) -> Vec<BoxedStrategy<Self>> {
                let specials = matches!(op, ReduceOp::Min | ReduceOp::Max);
                let values = hard_values(Self::KIND, specials);
                let mixed = match op {
                    // Products of hard values may be subnormal: where a device flushes them,
                    // only the representative ones.
                    ReduceOp::Product if !values.subnormals => Self::for_op(op),
                    ReduceOp::Product => prop_oneof![
                        7 => Self::for_op(op),
                        1 => hard(values),
                    ]
                    .boxed(),
                    // Sums stay numbers (compared bit for bit) without the largest magnitudes;
                    // the last palette has them, and sums overflow.
                    ReduceOp::Sum => {
                        prop_oneof![Self::for_op(op), hard(values.without_huge())].boxed()
                    }
                    _ => prop_oneof![Self::for_op(op), hard(values)].boxed(),
                };
                let mut palettes = vec![Self::for_op(op), mixed];
                if values.subnormals {
                    palettes.push(tiny(op == ReduceOp::Product));
                }
                if op == ReduceOp::Sum {
                    palettes.push(prop_oneof![Self::for_op(op), hard(values)].boxed());
                }
                palettes
            }
            fn palettes_for_pred() -> Vec<BoxedStrategy<Self>> {
                let values = hard_values(Self::KIND, true);
                let mut palettes = vec![
                    Self::for_pred(),
                    prop_oneof![Self::for_pred(), hard(values)].boxed(),
                ];
                if values.subnormals {
                    palettes.push(tiny(false));
                }
                palettes
            }
        }
    )*};
}
float_arb!(f32, u32; f64, u64);

/// Finite floats of mixed signs and magnitudes (2^-20 .. 2^21), integer values, ±0 and ±1.
fn finite<T: From<f32> + fmt::Debug + Clone + 'static>() -> BoxedStrategy<T>
where
    f64: Into<Mixed<T>>,
{
    prop_oneof![
        6 => (any::<bool>(), any::<u64>(), -20i32..=20).prop_map(|(neg, m, e)| {
            let mantissa = 1.0 + (m >> 11) as f64 / (1u64 << 53) as f64;
            let v = mantissa * 2f64.powi(e);
            let Mixed(x) = (if neg { -v } else { v }).into();
            x
        }),
        3 => (-(1i32 << 20)..=(1i32 << 20)).prop_map(|i| {
            let Mixed(x) = f64::from(i).into();
            x
        }),
        1 => Just(T::from(0.0)),
        1 => Just(T::from(-0.0)),
        1 => Just(T::from(1.0)),
        1 => Just(T::from(-1.0)),
    ]
    .boxed()
}

/// An `f64` rounded to `T`.
struct Mixed<T>(T);

impl From<f64> for Mixed<f32> {
    fn from(v: f64) -> Self {
        Mixed(v as f32)
    }
}

impl From<f64> for Mixed<f64> {
    fn from(v: f64) -> Self {
        Mixed(v)
    }
}

/// Any predicate, with thresholds from `values` (ranges ordered, never with a NaN bound).
fn predicate<T: Arb>(values: BoxedStrategy<T>) -> BoxedStrategy<Predicate<T>> {
    prop_oneof![
        Just(Predicate::Even),
        Just(Predicate::Odd),
        Just(Predicate::NonZero),
        values.clone().prop_map(Predicate::Greater),
        values.clone().prop_map(Predicate::Less),
        (values.clone(), values).prop_filter_map("a range needs two ordered bounds", |(a, b)| {
            match a.partial_cmp(&b)? {
                std::cmp::Ordering::Greater => Some(Predicate::InRange { lo: b, hi: a }),
                _ => Some(Predicate::InRange { lo: a, hi: b }),
            }
        }),
    ]
    .boxed()
}

fn shfl_prop<T: Arb + fmt::Debug>() {
    let lane_op = prop_oneof![
        prop_oneof![
            0..=40i32,
            Just(i32::MAX),
            any::<i32>().prop_map(|x| x & i32::MAX)
        ]
        .prop_map(|src_lane| ShflOp::Broadcast { src_lane }),
        (0..=31i32).prop_map(|delta| ShflOp::Up { delta }),
        (0..=31i32).prop_map(|delta| ShflOp::Down { delta }),
        (-31..=31i32).prop_map(|offset| ShflOp::Wrap { offset }),
        (0..=31i32).prop_map(|lane_mask| ShflOp::Xor { lane_mask }),
    ];
    let op_segm = prop_oneof![
        3 => lane_op.prop_map(|op| (op, 1usize)),
        1 => (0..=31i32).prop_map(|lane_mask| (ShflOp::Xor { lane_mask }, SEGM)),
    ];
    let strategy = (
        op_segm,
        select(vec![2u32, 4, 8, 16, 32]),
        data(T::bits(), 1),
    );
    property(
        &format!("shfl {}", T::KIND),
        strategy,
        |dev, ((op, segm), width, Data(input))| {
            let case = ShflCase {
                op,
                width,
                segm,
                elem: T::KIND,
                n: input.len(),
            };
            let got = run_shfl(dev, &case, &input).map_err(|e| format!("{case}: {e}"))?;
            exact(case, &cpu::shfl::shfl(op, width, segm, &input), &got)
        },
    );
}

/// A predicate with thresholds from one of `palettes` ([`palette`]) and an input of `min` to
/// `max` elements from the same palette.
fn predicate_and_data<T: Arb>(
    palettes: Vec<BoxedStrategy<T>>,
    min: usize,
    max: usize,
) -> BoxedStrategy<(Predicate<T>, Data<T>)> {
    palette(palettes.len())
        .prop_flat_map(move |p| {
            let values = palettes[p].clone();
            (predicate(values.clone()), data_upto(values, min, max))
        })
        .boxed()
}

fn vote_prop<T: Arb>() {
    let strategy = predicate_and_data(T::palettes_for_pred(), 1, MAX_LEN);
    property(
        &format!("vote {}", T::KIND),
        strategy,
        |dev, (pred, Data(input))| {
            let want = cpu::vote::vote(pred, &input).to_words();
            let poison = poison_value(&want);
            let what = format!("vote {pred} {} n={}", T::KIND, input.len());
            let got = run_vote(dev, pred, &input, poison).map_err(|e| format!("{what}: {e}"))?;
            exact(&what, &want, &got)
        },
    );
}

fn compact_prop<T: Arb>() {
    // Small bindings make many chunks and output windows (launches grow with their square):
    // the smallest goes with inputs of up to 3 * MIN_BINDING_ELEMS elements. Spin 0 forces the
    // stable compaction's look-back fallback.
    let tuned = (
        select(vec![
            None,
            Some(MIN_BINDING_ELEMS),
            Some(4 * MIN_BINDING_ELEMS),
        ]),
        select(vec![0, compact::DEFAULT_SPIN]),
        // The stable tile: the device's, and two others (ignored by the unordered order and
        // 8-byte elements; at most 16 with the smallest binding).
        select(vec![None, Some(5), Some(9)]),
        // The epochs' wrap (the stable order's tile states of one chunk; the tags come back
        // soonest at the least).
        select(vec![None, Some(xwarp::scan::MIN_EPOCH_WRAP)]),
    )
        .prop_flat_map(|(max, spin, stable_items, epoch_wrap)| {
            let longest = if max == Some(MIN_BINDING_ELEMS) {
                3 * MIN_BINDING_ELEMS
            } else {
                MAX_LEN
            };
            (
                Just(CompactTuning {
                    max_binding_elems: max,
                    spin,
                    stable_items,
                    epoch_wrap,
                }),
                predicate_and_data(T::palettes_for_pred(), 0, longest),
            )
        });
    let strategy = (select(vec![Order::Stable, Order::Unordered]), tuned);
    property(
        &format!("compact {}", T::KIND),
        strategy,
        |dev, (order, (tuning, (pred, Data(input))))| {
            let poison = poison_value(&input);
            let (count, out) = expected_output(order, pred, &input, poison);
            let what = format!(
                "compact {order} {pred} {} n={} {tuning:?}",
                T::KIND,
                input.len()
            );
            let (got_count, got_out) = run_compact(dev, order, pred, &input, poison, tuning)
                .map_err(|e| format!("{what}: {e}"))?;
            // Index 0 is the count; element k of the output is index k + 1.
            exact(
                &what,
                &comparable(order, count, &out),
                &comparable(order, got_count, &got_out),
            )
        },
    );
}

fn partition_prop<T: Arb>() {
    let strategy = predicate_and_data(T::palettes_for_pred(), 0, MAX_LEN);
    property(
        &format!("partition {}", T::KIND),
        strategy,
        |dev, (pred, Data(input))| {
            let poison = poison_value(&input);
            let what = format!("partition {pred} {} n={}", T::KIND, input.len());
            let got = xwarp_lab::validate::partition::run_partition(dev, pred, &input, poison)
                .map_err(|e| format!("{what}: {e}"))?;
            // Index 0 is the count; output element k is index k + 1, the slack after it.
            exact(
                &what,
                &xwarp_lab::validate::partition::expected(pred, &input, poison),
                &got,
            )
        },
    );
}

/// Keys with runs: any bits (runs of one, mostly), runs of random lengths of any bits, or a
/// few distinct values; 0 to [`MAX_LEN`] of them.
fn run_keys<T: Arb>() -> BoxedStrategy<Data<T>> {
    let runs = vec((T::bits(), 1usize..=64), 0..=1500).prop_map(|runs| {
        Data(
            runs.into_iter()
                .flat_map(|(k, len)| std::iter::repeat_n(k, len))
                .take(MAX_LEN)
                .collect(),
        )
    });
    let few = vec(T::bits(), 1..=3).prop_flat_map(|values| data(select(values).boxed(), 0));
    prop_oneof![data(T::bits(), 0), runs, few].boxed()
}

/// Unique and run-length encoding of keys of `T`, with and without the look-back's fallback
/// forced (spin 0); unique each way it runs.
fn unique_rle_prop<T: Arb>() {
    use xwarp_lab::validate::runs::{
        expected_run_length, expected_unique, run_unique_or_rle, UniqueWay,
    };
    let strategy = (
        any::<bool>(),
        select(vec![RunsTuning::default().spin, 0]),
        select(vec![
            UniqueWay::Planned,
            UniqueWay::Chunks(xwarp::compact::MIN_BINDING_ELEMS),
            UniqueWay::RunsKernel,
        ]),
        run_keys::<T>(),
    );
    property(
        &format!("unique and run_length {}", T::KIND),
        strategy,
        |dev, (rle, spin, way, Data(keys))| {
            let poison = poison_value(&keys);
            let what = format!(
                "{} {} n={} spin {spin} {way:?}",
                if rle { "run_length" } else { "unique" },
                T::KIND,
                keys.len()
            );
            let want = if rle {
                expected_run_length(&keys, poison)
            } else {
                expected_unique(&keys, poison)
            };
            let got = run_unique_or_rle(
                dev,
                rle,
                &keys,
                poison,
                RunsTuning {
                    spin,
                    ..Default::default()
                },
                way,
            )
            .map_err(|e| format!("{what}: {e}"))?;
            // Index 0 is the run count; then the keys output, then the lengths.
            exact(&what, &want, &got)
        },
    );
}

/// Reduce-by-key of values of `T` by every operator of the type, keyed by `u32` or `f64` keys
/// with runs, with and without the look-back's fallback forced (spin 0).
fn reduce_by_key_prop<T: Arb>() {
    use xwarp_lab::validate::runs::{expected_reduce_by_key, run_reduce_by_key};
    let float = !T::KIND.name().starts_with(['i', 'u']);
    let ops: Vec<ReduceOp> = ReduceOp::ALL
        .into_iter()
        .filter(|op| !float || op.for_floats())
        .collect();
    let strategy = (
        select(ops),
        select(vec![RunsTuning::default().spin, 0]),
        any::<bool>(),
    )
        .prop_flat_map(|(op, spin, wide)| {
            let keys = if wide {
                run_keys::<f64>()
                    .prop_map(|Data(k)| (Vec::new(), k))
                    .boxed()
            } else {
                run_keys::<u32>()
                    .prop_map(|Data(k)| (k, Vec::new()))
                    .boxed()
            };
            let palettes = T::palettes_for_op(op);
            (
                Just(op),
                Just(spin),
                keys,
                palette(palettes.len()),
                Just(palettes),
            )
        })
        .prop_flat_map(|(op, spin, (narrow, wide), p, palettes)| {
            let n = narrow.len().max(wide.len());
            (
                Just(op),
                Just(spin),
                Just(Data(narrow)),
                Just(Data(wide)),
                vec(palettes[p].clone(), n).prop_map(Data),
            )
        });
    property(
        &format!("reduce_by_key {}", T::KIND),
        strategy,
        |dev, (op, spin, Data(narrow), Data(wide), Data(values))| {
            let what = format!(
                "reduce_by_key {op} {} n={} spin {spin}",
                T::KIND,
                values.len()
            );
            let tuning = RunsTuning {
                spin,
                ..Default::default()
            };
            let poison = poison_value(&values);
            let (want, got) = if wide.is_empty() {
                let poisons = (poison_value(&narrow), poison);
                (
                    expected_reduce_by_key(op, &narrow, &values, poisons),
                    run_reduce_by_key(dev, op, &narrow, &values, poisons, tuning),
                )
            } else {
                let poisons = (poison_value(&wide), poison);
                (
                    expected_reduce_by_key(op, &wide, &values, poisons),
                    run_reduce_by_key(dev, op, &wide, &values, poisons, tuning),
                )
            };
            let got = got.map_err(|e| format!("{what}: {e}"))?;
            // Index 0 is the run count; then the keys output, then the values (NaN sums and
            // products as one NaN).
            exact(&what, &want, &got)
        },
    );
}

/// The histogram of samples of `T` (any bits, hard values, or drawn from a few values: skewed)
/// over a range from the same values, in 1 to 64, 256, 4096 or 5000 bins, `u32` or `u64`
/// counts.
fn histogram_prop<T: Arb + xwarp::histogram::Sample>() {
    use xwarp_lab::validate::histogram::run_histogram;
    let few = vec(T::bits(), 1..=3).prop_flat_map(|values| data(select(values).boxed(), 0));
    let samples = prop_oneof![
        data(T::bits(), 0),
        data(hard(hard_values(T::KIND, true)), 0),
        few
    ];
    let bins = prop_oneof![4 => 1usize..=64, 1 => select(vec![256, 4096, 5000])];
    let strategy = (samples, bins, T::bits(), T::bits(), any::<bool>())
        .prop_filter("a range the bins can split", |(_, bins, a, b, _)| {
            T::plan(*a, *b, *bins).is_ok()
        });
    property(
        &format!("histogram {}", T::KIND),
        strategy,
        |dev, (Data(samples), bins, lower, upper, wide)| {
            let what = format!(
                "histogram {} n={} bins {bins} [{lower:?}, {upper:?}) {} counts",
                T::KIND,
                samples.len(),
                if wide { "u64" } else { "u32" }
            );
            let want = cpu::histogram::histogram_even(&samples, bins, lower, upper);
            let got = run_histogram(dev, &samples, bins, lower, upper, wide)
                .map_err(|e| format!("{what}: {e}"))?;
            exact(&what, &want, &got)
        },
    );
}

/// The segmented reduce of `T` by every operator of the type, over offsets drawn as segment
/// lengths (empty ones often, both sides of the one-invocation limit, tiles), gaps included.
fn segmented_reduce_prop<T: Arb + xwarp_lab::validate::reduce::ReduceInput>() {
    use xwarp_lab::validate::segmented_reduce::{expected, run_segmented};
    let float = !T::KIND.name().starts_with(['i', 'u']);
    let ops: Vec<ReduceOp> = ReduceOp::ALL
        .into_iter()
        .filter(|op| !float || op.for_floats())
        .collect();
    let lengths = vec(
        prop_oneof![3 => 0usize..=3, 3 => 0usize..=40, 1 => 0usize..=6000],
        0..=120,
    );
    let strategy = (select(ops), lengths, 0usize..=5, 0usize..=5).prop_flat_map(
        |(op, lengths, head, tail)| {
            let n = head + lengths.iter().sum::<usize>() + tail;
            let palettes = T::palettes_for_op(op);
            (
                Just(op),
                Just(lengths),
                Just(head),
                palette(palettes.len())
                    .prop_flat_map(move |p| vec(palettes[p].clone(), n).prop_map(Data)),
            )
        },
    );
    property(
        &format!("segmented_reduce {}", T::KIND),
        strategy,
        |dev, (op, lengths, head, Data(input))| {
            let mut offsets = vec![head as u32];
            for len in &lengths {
                offsets.push(offsets[offsets.len() - 1] + *len as u32);
            }
            let what = format!(
                "segmented_reduce {op} {} n={} offsets {offsets:?}",
                T::KIND,
                input.len()
            );
            let want = cpu::segmented_reduce::segmented_reduce(op, &input, &offsets);
            let poison = poison_value(&want);
            let got = run_segmented(dev, op, &input, &offsets, poison)
                .map_err(|e| format!("{what}: {e}"))?;
            compared(
                &what,
                &expected(op, &input, &offsets, poison),
                &got,
                comparison(op),
            )
        },
    );
}

/// Top-k of keys of `T` (any bits, hard values, or a few distinct: ties across the k-th
/// place), either order, keys only, `u32` values or `u32` indices, any k from 1 to n.
fn top_k_prop<T: Arb>() {
    use xwarp_lab::validate::top_k::{expected, run_top_k, TopKOp};
    let few = vec(T::bits(), 1..=3).prop_flat_map(|values| data(select(values).boxed(), 1));
    let keys = prop_oneof![data(T::bits(), 1), data(hard(HardValues::ALL), 1), few];
    let strategy = (
        select(vec![
            TopKOp::Keys,
            TopKOp::Pairs(xwarp::ElemKind::U32),
            TopKOp::Indices(xwarp::ElemKind::U32),
        ]),
        select(vec![SortOrder::Descending, SortOrder::Ascending]),
        keys,
    )
        .prop_flat_map(|(op, order, Data(keys))| {
            let n = keys.len();
            (Just(op), Just(order), Just(Data(keys)), 1..=n)
        });
    property(
        &format!("top_k {}", T::KIND),
        strategy,
        |dev, (op, order, Data(keys), k)| {
            let what = format!("{op} {} {order} n={} k={k}", T::KIND, keys.len());
            let got = run_top_k(dev, op, &keys, k, order).map_err(|e| format!("{what}: {e}"))?;
            exact(&what, &expected(op, &keys, k, order), &got)
        },
    );
}

fn reduce_prop<T: Arb>() {
    let float = !T::KIND.name().starts_with(['i', 'u']);
    let ops: Vec<ReduceOp> = ReduceOp::ALL
        .into_iter()
        .filter(|op| !float || op.for_floats())
        .collect();
    let scopes = vec![
        ReduceScope::Warp(WarpForm::Butterfly),
        ReduceScope::Warp(WarpForm::ShiftDown),
        ReduceScope::Block,
        ReduceScope::Device,
    ];
    let strategy = (select(ops), select(scopes)).prop_flat_map(|(op, scope)| {
        let min = usize::from(scope != ReduceScope::Device);
        (
            Just(op),
            Just(scope),
            from_palettes(T::palettes_for_op(op), min),
        )
    });
    property(
        &format!("reduce {}", T::KIND),
        strategy,
        |dev, (op, scope, Data(input))| {
            let case = ReduceCase {
                op,
                scope,
                elem: T::KIND,
                n: input.len(),
            };
            let want = xwarp_lab::validate::reduce::expected(&case, &input);
            let got = run_reduce(dev, &case, &input, poison_value(&want))
                .map_err(|e| format!("{case}: {e}"))?;
            compared(case, &want, &got, comparison(op))
        },
    );
}

fn scan_prop<T: Arb>() {
    let tuning = (
        select(vec![DEFAULT_SPIN, 0, 1]),
        select(vec![None, Some(TILE), Some(3 * TILE)]),
        select(vec![None, Some(1), Some(2), Some(scan::MAX_LOOKBACK_TILES)]),
        // The staging kernel where the device would keep the tile in registers.
        select(vec![None, Some(false)]),
        select(vec![None, Some(1), Some(4)]),
        // Epochs that come back as soon as the device's zeroing allows.
        select(vec![
            None,
            Some(scan::MIN_EPOCH_WRAP),
            Some(scan::MIN_EPOCH_WRAP + 1),
        ]),
        // f32 sums gated or not where subnormals are kept in software.
        select(vec![None, Some(true), Some(false)]),
    )
        .prop_map(
            |(spin, max_launch_elems, lookback_tiles, registers, near_depth, epoch_wrap, gated)| {
                ScanTuning {
                    spin,
                    max_launch_elems,
                    lookback_tiles,
                    items: None,
                    registers,
                    near_depth,
                    epoch_wrap,
                    gated,
                }
            },
        );
    let scope = prop_oneof![
        Just(ScanScope::Warp),
        Just(ScanScope::Block),
        tuning.prop_map(ScanScope::Device),
    ];
    let strategy = (
        select(vec![ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max]),
        select(vec![ScanKind::Inclusive, ScanKind::Exclusive]),
        scope,
    )
        .prop_flat_map(|(op, kind, scope)| {
            let min = usize::from(!matches!(scope, ScanScope::Device(_)));
            (
                Just(op),
                Just(kind),
                Just(scope),
                from_palettes(T::palettes_for_op(op), min),
            )
        });
    property(
        &format!("scan {}", T::KIND),
        strategy,
        |dev, (op, kind, scope, Data(input))| {
            let case = ScanCase {
                op,
                kind,
                scope,
                elem: T::KIND,
                n: input.len(),
            };
            let want = xwarp_lab::validate::scan::expected(&case, &input);
            let got = run_scan(dev, &case, &input, poison_value(&want))
                .map_err(|e| format!("{case}: {e}"))?;
            compared(case, &want, &got, comparison(op))
        },
    );
}

fn ladder_prop<T: Arb + LadderElem>() {
    let strategy = (
        select(LadderKernel::ALL.to_vec()),
        0usize..ladder::BLOCKS.len(),
        data(T::bits(), 1),
    );
    property(
        &format!("ladder {}", T::KIND),
        strategy,
        |dev, (kernel, b, Data(input))| {
            // The block sizes this device accepts for the rung; the case picks one.
            let blocks = ladder::blocks::<T>(dev.info(), kernel);
            let block = *blocks
                .get(b % blocks.len().max(1))
                .ok_or_else(|| format!("{kernel}: no block size fits `{}`", dev.info().name))?;
            let case = LadderCase {
                kernel,
                block,
                elem: T::KIND,
                n: input.len(),
            };
            let want = xwarp_lab::validate::ladder::expected(&case, &input);
            let got = run_ladder(dev, &case, &input, poison_value(&want))
                .map_err(|e| format!("{case}: {e}"))?;
            exact(case, &want, &got)
        },
    );
}

fn stencil_prop<T: Arb + StencilElement>() {
    // Weights and input from one palette per case ([`palette`]): representative values,
    // finite hard values (with integer weights from -8 to 8 where a device flushes
    // subnormals: their products and sums with hard values without subnormals are never
    // subnormal), or values whose products are subnormal.
    let values = hard_values(T::KIND, false);
    let weights = if values.subnormals {
        hard(values)
    } else {
        (-8i32..=8)
            .prop_map(|w| common::float_from_f64::<T>(f64::from(w)))
            .boxed()
    };
    let mut palettes = vec![
        (T::for_op(ReduceOp::Sum), T::for_op(ReduceOp::Sum)),
        (weights, hard(values)),
    ];
    if values.subnormals {
        palettes.push((tiny(true), tiny(true)));
    }
    let strategy = (
        select(StencilVariant::ALL.to_vec()),
        palette(palettes.len()).prop_flat_map(move |p| {
            let (weights, input) = palettes[p].clone();
            (proptest::array::uniform5(weights), data(input, 1))
        }),
    );
    property(
        &format!("stencil {}", T::KIND),
        strategy,
        |dev, (variant, (weights, Data(input)))| {
            let weights: [T; POINTS] = weights;
            let want = cpu::stencil::moving_average(weights, &input);
            let what = format!(
                "stencil {variant} {} n={} weights {weights:?}",
                T::KIND,
                input.len()
            );
            // Never a NaN poison: a NaN result would match it.
            let got = run_stencil(dev, variant, weights, &input, poison_value(&want))
                .map_err(|e| format!("{what}: {e}"))?;
            compared(&what, &want, &got, first_mismatch_nan_as_class)
        },
    );
}

/// What a sort case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SortRun {
    Keys,
    /// Pairs with `u32` values.
    Pairs32,
    /// Pairs with `u64` values.
    Pairs64,
    /// Argsort with `u32` indices.
    Argsort32,
    /// Argsort with `u64` indices.
    Argsort64,
}

/// The keys of a sort case, of one of the key types.
#[derive(Clone, Debug)]
enum SortKeys {
    I32(Data<i32>),
    U32(Data<u32>),
    F32(Data<f32>),
    I64(Data<i64>),
    U64(Data<u64>),
    F64(Data<f64>),
}

/// Keys of `T` (any bit patterns with the edge values often, hard values with NaN payloads,
/// ±0 and ±∞ for floats, or a few distinct ones: long runs of equal digits), of 0 to
/// [`MAX_LEN`], and a bit range: every bit often, else any range within the key.
fn sort_keys_of<T: Arb>() -> BoxedStrategy<(Data<T>, Range<u32>)> {
    let width = T::KIND.size() as u32 * 8;
    let few = vec(T::bits(), 1..=3).prop_flat_map(|values| data(select(values).boxed(), 0));
    let keys = prop_oneof![data(T::bits(), 0), data(hard(HardValues::ALL), 0), few,];
    let bits = prop_oneof![
        2 => Just(0..width),
        1 => (0..width).prop_flat_map(move |b| (b + 1..=width).prop_map(move |e| b..e)),
        1 => select(vec![0..1, width - 1..width, 8..16]),
    ];
    (keys, bits).boxed()
}

/// One sort case on `dev` into poisoned outputs, compared bit for bit with the CPU twin.
fn sort_check<K: Element>(
    dev: &dyn Device,
    run: SortRun,
    order: SortOrder,
    bits: Range<u32>,
    spin: u32,
    keys: &[K],
) -> Result<(), String> {
    let what = format!(
        "{run:?} {} {order} bits {}..{} spin {spin} n={}",
        K::KIND,
        bits.start,
        bits.end,
        keys.len()
    );
    let fail = |e: xwarp::Error| format!("{what}: {e}");
    let keys_in = DeviceVec::from_slice(dev, keys).map_err(fail)?;
    let mut sorter = Sorter::<K>::with_tuning(SortTuning {
        spin,
        ..SortTuning::default()
    });
    match run {
        SortRun::Keys => {
            let want = cpu::sort::sort_keys(keys, order, bits.clone());
            let mut out = DeviceVec::<K>::alloc(dev, keys.len()).map_err(fail)?;
            out.fill(dev, poison_value(&want)).map_err(fail)?;
            sorter
                .sort_keys(dev, &keys_in, &mut out, order, bits)
                .map_err(fail)?;
            exact(&what, &want, &out.to_vec(dev).map_err(fail)?)
        }
        SortRun::Pairs32 => {
            pairs_check::<K, u32>(dev, &what, &mut sorter, order, bits, keys, &keys_in)
        }
        SortRun::Pairs64 => {
            pairs_check::<K, u64>(dev, &what, &mut sorter, order, bits, keys, &keys_in)
        }
        SortRun::Argsort32 => {
            argsort_check::<K, u32>(dev, &what, &mut sorter, order, bits, keys, &keys_in)
        }
        SortRun::Argsort64 => {
            argsort_check::<K, u64>(dev, &what, &mut sorter, order, bits, keys, &keys_in)
        }
    }
}

/// [`sort_check`] of pairs with values of `V`, each made from its key's input index.
#[allow(clippy::too_many_arguments)]
fn pairs_check<K: Element, V: Element>(
    dev: &dyn Device,
    what: &str,
    sorter: &mut Sorter<K>,
    order: SortOrder,
    bits: Range<u32>,
    keys: &[K],
    keys_in: &DeviceVec<K>,
) -> Result<(), String> {
    let fail = |e: xwarp::Error| format!("{what}: {e}");
    let values: Vec<V> = (0..keys.len()).map(pair_value).collect();
    let (want_keys, want_values) = cpu::sort::sort_pairs(keys, &values, order, bits.clone());
    let values_in = DeviceVec::from_slice(dev, &values).map_err(fail)?;
    let mut keys_out = DeviceVec::<K>::alloc(dev, keys.len()).map_err(fail)?;
    let mut values_out = DeviceVec::<V>::alloc(dev, keys.len()).map_err(fail)?;
    keys_out.fill(dev, poison_value(&want_keys)).map_err(fail)?;
    values_out
        .fill(dev, poison_value(&want_values))
        .map_err(fail)?;
    sorter
        .sort_pairs(
            dev,
            keys_in,
            &mut keys_out,
            &values_in,
            &mut values_out,
            order,
            bits,
        )
        .map_err(fail)?;
    exact(
        format!("{what} keys"),
        &want_keys,
        &keys_out.to_vec(dev).map_err(fail)?,
    )?;
    exact(
        format!("{what} values"),
        &want_values,
        &values_out.to_vec(dev).map_err(fail)?,
    )
}

/// [`sort_check`] of the argsort with indices of `I`.
#[allow(clippy::too_many_arguments)]
fn argsort_check<K: Element, I: SortIndex + TryFrom<usize>>(
    dev: &dyn Device,
    what: &str,
    sorter: &mut Sorter<K>,
    order: SortOrder,
    bits: Range<u32>,
    keys: &[K],
    keys_in: &DeviceVec<K>,
) -> Result<(), String> {
    let fail = |e: xwarp::Error| format!("{what}: {e}");
    let want: Vec<I> = cpu::sort::argsort(keys, order, bits.clone())
        .into_iter()
        .map(|i| I::try_from(i).map_err(|_| format!("{what}: index {i} does not fit")))
        .collect::<Result<_, _>>()?;
    let mut out = DeviceVec::<I>::alloc(dev, keys.len()).map_err(fail)?;
    out.fill(dev, poison_value(&want)).map_err(fail)?;
    sorter
        .argsort(dev, keys_in, &mut out, order, bits)
        .map_err(fail)?;
    exact(what, &want, &out.to_vec(dev).map_err(fail)?)
}

/// The sort: a random key type, operation, order, bit range, look-back spin (0 forces every
/// tile that finds a predecessor unpublished to count it itself) and keys.
#[test]
fn sort() {
    let keys = prop_oneof![
        sort_keys_of::<i32>().prop_map(|(k, b)| (SortKeys::I32(k), b)),
        sort_keys_of::<u32>().prop_map(|(k, b)| (SortKeys::U32(k), b)),
        sort_keys_of::<f32>().prop_map(|(k, b)| (SortKeys::F32(k), b)),
        sort_keys_of::<i64>().prop_map(|(k, b)| (SortKeys::I64(k), b)),
        sort_keys_of::<u64>().prop_map(|(k, b)| (SortKeys::U64(k), b)),
        sort_keys_of::<f64>().prop_map(|(k, b)| (SortKeys::F64(k), b)),
    ];
    let strategy = (
        select(vec![
            SortRun::Keys,
            SortRun::Pairs32,
            SortRun::Pairs64,
            SortRun::Argsort32,
            SortRun::Argsort64,
        ]),
        select(vec![SortOrder::Ascending, SortOrder::Descending]),
        select(vec![xwarp::sort::DEFAULT_SPIN, 0]),
        keys,
    );
    property(
        "sort",
        strategy,
        |dev, (run, order, spin, (keys, bits))| match keys {
            SortKeys::I32(Data(k)) => sort_check(dev, run, order, bits, spin, &k),
            SortKeys::U32(Data(k)) => sort_check(dev, run, order, bits, spin, &k),
            SortKeys::F32(Data(k)) => sort_check(dev, run, order, bits, spin, &k),
            SortKeys::I64(Data(k)) => sort_check(dev, run, order, bits, spin, &k),
            SortKeys::U64(Data(k)) => sort_check(dev, run, order, bits, spin, &k),
            SortKeys::F64(Data(k)) => sort_check(dev, run, order, bits, spin, &k),
        },
    );
}

macro_rules! per_type {
    ($prop:ident: $($name:ident => $t:ty),* $(,)?) => {$(
        #[test]
        fn $name() {
            $prop::<$t>();
        }
    )*};
}

per_type!(shfl_prop:
    shfl_u32 => u32, shfl_f32 => f32, shfl_i64 => i64, shfl_f64 => f64);
per_type!(vote_prop:
    vote_i32 => i32, vote_u32 => u32, vote_f32 => f32, vote_i64 => i64, vote_u64 => u64,
    vote_f64 => f64);
per_type!(compact_prop:
    compact_i32 => i32, compact_u32 => u32, compact_f32 => f32, compact_i64 => i64,
    compact_u64 => u64, compact_f64 => f64);
per_type!(partition_prop:
    partition_i32 => i32, partition_u32 => u32, partition_f32 => f32, partition_i64 => i64,
    partition_u64 => u64, partition_f64 => f64);
per_type!(unique_rle_prop:
    unique_rle_i32 => i32, unique_rle_u32 => u32, unique_rle_f32 => f32, unique_rle_i64 => i64,
    unique_rle_u64 => u64, unique_rle_f64 => f64);
per_type!(reduce_by_key_prop:
    reduce_by_key_i32 => i32, reduce_by_key_u32 => u32, reduce_by_key_f32 => f32,
    reduce_by_key_i64 => i64, reduce_by_key_u64 => u64, reduce_by_key_f64 => f64);
per_type!(histogram_prop:
    histogram_i32 => i32, histogram_u32 => u32, histogram_f32 => f32, histogram_i64 => i64,
    histogram_u64 => u64, histogram_f64 => f64);
per_type!(segmented_reduce_prop:
    segmented_reduce_i32 => i32, segmented_reduce_u32 => u32, segmented_reduce_f32 => f32,
    segmented_reduce_i64 => i64, segmented_reduce_u64 => u64, segmented_reduce_f64 => f64);
per_type!(top_k_prop:
    top_k_i32 => i32, top_k_u32 => u32, top_k_f32 => f32, top_k_i64 => i64, top_k_u64 => u64,
    top_k_f64 => f64);
per_type!(reduce_prop:
    reduce_i32 => i32, reduce_u32 => u32, reduce_f32 => f32, reduce_i64 => i64,
    reduce_u64 => u64, reduce_f64 => f64);
per_type!(scan_prop:
    scan_i32 => i32, scan_u32 => u32, scan_f32 => f32, scan_i64 => i64, scan_u64 => u64,
    scan_f64 => f64);
per_type!(ladder_prop:
    ladder_i32 => i32, ladder_u32 => u32, ladder_i64 => i64, ladder_u64 => u64);
per_type!(stencil_prop: stencil_f32 => f32, stencil_f64 => f64);
