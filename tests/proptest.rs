//! Property tests: every algorithm family, with arbitrary variants (operators, widths, lane
//! arguments, predicates, scopes, rungs, block sizes, tunings), lengths from 1 to about 50,000
//! (often at the edges 2^k - 1, 2^k, 2^k + 1 and multiples of the warp) and values (edge values
//! included), on every test device, against the CPU reference, bit for bit.
//!
//! `XWARP_PROPTEST_CASES` sets the cases per property (default [`DEFAULT_CASES`]). A failure is
//! shrunk to a small case, which is printed with the seed that replays the run
//! (`XWARP_SEED`).

mod common;

use common::{for_each_device, seed};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::fmt;
use std::sync::OnceLock;
use xwarp::compact::{self, Order, Tuning as CompactTuning, MIN_BINDING_ELEMS};
use xwarp::cpu;
use xwarp::cpu::ladder::LadderElem;
use xwarp::cpu::reduce::Reduce;
use xwarp::cpu::stencil::{StencilElement, POINTS};
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{ReduceOp, WarpForm};
use xwarp::scan::{self, ScanKind, Tuning as ScanTuning, DEFAULT_SPIN, TILE};
use xwarp::shfl::{ShflOp, SEGM};
use xwarp::stencil::StencilVariant;
use xwarp::validate::compact::{comparable, expected_output, run_compact};
use xwarp::validate::ladder::{run_ladder, LadderCase};
use xwarp::validate::reduce::{run_reduce, ReduceCase, Scope as ReduceScope};
use xwarp::validate::scan::{run_scan, ScanCase, Scope as ScanScope};
use xwarp::validate::shfl::{run_shfl, ShflCase};
use xwarp::validate::stencil::{poison_for, run_stencil};
use xwarp::validate::vote::run_vote;
use xwarp::validate::{first_mismatch, poison_value};
use xwarp::vote::{Predicate, PredicateElement};
use xwarp::{Device, Element};

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
    match first_mismatch(want, got) {
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
    /// Any bit pattern, edge values often (data that is only moved).
    fn bits() -> BoxedStrategy<Self>;
    /// Values for `op` that the reference and every device agree on bit for bit: for floats,
    /// finite sums of mixed magnitudes, products near ±1 (and zeros), and anything (NaN,
    /// infinities, signed zeros) for min and max; for integers any value.
    fn for_op(op: ReduceOp) -> BoxedStrategy<Self>;
    /// Values for predicates: integers, and for floats integer-valued and mixed values, zeros
    /// of both signs, infinities and NaN (subnormals, which devices may flush, left out).
    fn for_pred() -> BoxedStrategy<Self>;
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

fn vote_prop<T: Arb>() {
    let strategy = (predicate(T::for_pred()), data(T::for_pred(), 1));
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
    )
        .prop_flat_map(|(max, spin)| {
            let longest = if max == Some(MIN_BINDING_ELEMS) {
                3 * MIN_BINDING_ELEMS
            } else {
                MAX_LEN
            };
            (
                Just(CompactTuning {
                    max_binding_elems: max,
                    spin,
                }),
                data_upto(T::for_pred(), 0, longest),
            )
        });
    let strategy = (
        select(vec![Order::Stable, Order::Unordered]),
        predicate(T::for_pred()),
        tuned,
    );
    property(
        &format!("compact {}", T::KIND),
        strategy,
        |dev, (order, pred, (tuning, Data(input)))| {
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
        (Just(op), Just(scope), data(T::for_op(op), min))
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
            let want = xwarp::validate::reduce::expected(&case, &input);
            let got = run_reduce(dev, &case, &input, poison_value(&want))
                .map_err(|e| format!("{case}: {e}"))?;
            exact(case, &want, &got)
        },
    );
}

fn scan_prop<T: Arb>() {
    let tuning = (
        select(vec![DEFAULT_SPIN, 0, 1]),
        select(vec![None, Some(TILE), Some(3 * TILE)]),
        select(vec![None, Some(1), Some(2), Some(scan::MAX_LOOKBACK_TILES)]),
    )
        .prop_map(|(spin, max_launch_elems, lookback_tiles)| ScanTuning {
            spin,
            max_launch_elems,
            lookback_tiles,
        });
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
            (Just(op), Just(kind), Just(scope), data(T::for_op(op), min))
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
            let want = xwarp::validate::scan::expected(&case, &input);
            let got = run_scan(dev, &case, &input, poison_value(&want))
                .map_err(|e| format!("{case}: {e}"))?;
            exact(case, &want, &got)
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
            let want = xwarp::validate::ladder::expected(&case, &input);
            let got = run_ladder(dev, &case, &input, poison_value(&want))
                .map_err(|e| format!("{case}: {e}"))?;
            exact(case, &want, &got)
        },
    );
}

fn stencil_prop<T: Arb + StencilElement>() {
    let weights = proptest::array::uniform5(T::for_op(ReduceOp::Sum));
    let strategy = (
        select(StencilVariant::ALL.to_vec()),
        weights,
        data(T::for_op(ReduceOp::Sum), 1),
    );
    property(
        &format!("stencil {}", T::KIND),
        strategy,
        |dev, (variant, weights, Data(input))| {
            let weights: [T; POINTS] = weights;
            let want = cpu::stencil::moving_average(weights, &input);
            let what = format!(
                "stencil {variant} {} n={} weights {weights:?}",
                T::KIND,
                input.len()
            );
            let got = run_stencil(dev, variant, weights, &input, poison_for(&want))
                .map_err(|e| format!("{what}: {e}"))?;
            exact(&what, &want, &got)
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
per_type!(reduce_prop:
    reduce_i32 => i32, reduce_u32 => u32, reduce_f32 => f32, reduce_i64 => i64,
    reduce_u64 => u64, reduce_f64 => f64);
per_type!(scan_prop:
    scan_i32 => i32, scan_u32 => u32, scan_f32 => f32, scan_i64 => i64, scan_u64 => u64,
    scan_f64 => f64);
per_type!(ladder_prop:
    ladder_i32 => i32, ladder_u32 => u32, ladder_i64 => i64, ladder_u64 => u64);
per_type!(stencil_prop: stencil_f32 => f32, stencil_f64 => f64);
