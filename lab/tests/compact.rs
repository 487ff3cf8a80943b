//! Stream compaction: a worked example, randomized cases against the CPU reference on every
//! backend for both orders and every type, predicate and awkward length (stable: exact order;
//! unordered: the same multiset), long inputs in many chunks, untouched output past the count,
//! the look-back fallback forced by spin 0, and every bad parameter.

mod common;

use common::{assert_counters_zero, devices, for_each_device, seed};
use xwarp::compact::{compact, compact_host, compact_tuned, Order, Tuning, MIN_BINDING_ELEMS};
use xwarp::vote::{Predicate, PredicateElement};
use xwarp::{cpu, DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::compact::{
    compact_cases, comparable, expected_output, run_compact, CompactCase, COMPACT_LENGTHS,
};
use xwarp_lab::validate::first_mismatch;
use xwarp_lab::validate::poison_value;
use xwarp_lab::validate::vote::{case_input, hard_case_input, PredSpec};
use xwarp_lab::with_elem;

#[test]
fn odd_numbers_of_0_to_99() {
    let input: Vec<u32> = (0..100).collect();
    let odd: Vec<u32> = (0..50).map(|k| 2 * k + 1).collect();
    assert_eq!(cpu::compact::stable(Predicate::Odd, &input), odd);
    assert_eq!(cpu::compact::unordered(Predicate::Odd, &input), odd);
    for_each_device(|d| {
        let (count, got) = compact_host(&*d.dev, Order::Stable, Predicate::Odd, &input).unwrap();
        assert_eq!((count, &got), (50, &odd), "{}", d.label);
        let (count, mut got) =
            compact_host(&*d.dev, Order::Unordered, Predicate::Odd, &input).unwrap();
        got.sort_unstable();
        assert_eq!((count, &got), (50, &odd), "{}", d.label);
    });
}

fn check_cases<T: PredicateElement>(cases: &[CompactCase], rng: &mut Rng) {
    for case in cases {
        let (input, pred) = case_input::<T>(case.spec, case.n, rng);
        let poison = poison_value(&input);
        let (count, out) = expected_output(case.order, pred, &input, poison);
        let expected = comparable(case.order, count, &out);
        for_each_device(|d| {
            let (got_count, got_out) =
                run_compact(&*d.dev, case.order, pred, &input, poison, case.tuning)
                    .unwrap_or_else(|e| panic!("{}: {case} ({pred}): {e}", d.label));
            assert_eq!(
                got_count, count,
                "{}: {case} ({pred}): count {got_count}, expected {count}",
                d.label
            );
            let got = comparable(case.order, got_count, &got_out);
            if let Some(m) = first_mismatch(&expected, &got) {
                // Index 0 is the count; element k of the output is index k + 1.
                let what = if m.index > count as usize {
                    "past the count (must still hold the poison)"
                } else if case.order == Order::Unordered {
                    "in the sorted passing elements"
                } else {
                    "in the compacted elements"
                };
                panic!(
                    "{}: {case} ({pred}): output element {}: {what}: {m}",
                    d.label,
                    m.index.saturating_sub(1)
                );
            }
        });
    }
}

fn random_cases_for(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<CompactCase> = compact_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    for order in [Order::Stable, Order::Unordered] {
        for n in COMPACT_LENGTHS {
            for spec in PredSpec::ALL {
                assert!(cases
                    .iter()
                    .any(|c| c.n == n && c.spec == spec && c.order == order));
            }
        }
        assert!(cases
            .iter()
            .any(|c| c.order == order && c.tuning.max_binding_elems.is_some()));
    }
    with_elem!(elem, check_cases(&cases, &mut rng));
}

#[test]
fn random_i32_both_orders_every_predicate_and_length() {
    random_cases_for(ElemKind::I32);
}

#[test]
fn random_u32_both_orders_every_predicate_and_length() {
    random_cases_for(ElemKind::U32);
}

#[test]
fn random_f32_both_orders_every_predicate_and_length() {
    random_cases_for(ElemKind::F32);
}

#[test]
fn random_i64_both_orders_every_predicate_and_length() {
    random_cases_for(ElemKind::I64);
}

#[test]
fn random_u64_both_orders_every_predicate_and_length() {
    random_cases_for(ElemKind::U64);
}

#[test]
fn random_f64_both_orders_every_predicate_and_length() {
    random_cases_for(ElemKind::F64);
}

/// The even/odd predicates decide from the bits in the compaction kernels too, on every edge
/// magnitude (subnormals, NaN payloads, 2^-1074 .. 2^1023 and neighbours), in both orders.
#[test]
fn float_parity_from_bits_at_every_magnitude() {
    fn run<T: PredicateElement>(input: &[T]) {
        for order in [Order::Stable, Order::Unordered] {
            for pred in [Predicate::Even, Predicate::Odd] {
                let poison = poison_value(input);
                let (count, out) = expected_output(order, pred, input, poison);
                let expected = comparable(order, count, &out);
                for_each_device(|d| {
                    let (got_count, got) =
                        run_compact(&*d.dev, order, pred, input, poison, Tuning::default())
                            .unwrap_or_else(|e| panic!("{}: {order:?} {pred}: {e}", d.label));
                    let got = comparable(order, got_count, &got);
                    if let Some(m) = first_mismatch(&expected, &got) {
                        panic!(
                            "{}: {} {order:?} {pred}: count {got_count} (expected {count}); {m}",
                            d.label,
                            T::KIND
                        );
                    }
                });
            }
        }
    }
    run(&common::float_edges());
    run(&common::float_edges_f32());
}

#[test]
fn many_chunks_and_windows_at_the_smallest_binding() {
    // Chunks of one workgroup, each scattered through one launch per window it may start in.
    let mut rng = Rng::new(seed());
    let tuning = Tuning {
        max_binding_elems: Some(MIN_BINDING_ELEMS),
        ..Tuning::default()
    };
    let mut cases = Vec::new();
    for order in [Order::Stable, Order::Unordered] {
        for spec in [PredSpec::MiddleHalf, PredSpec::AllPass, PredSpec::NonePass] {
            for n in [5000, MIN_BINDING_ELEMS + 1, 5 * MIN_BINDING_ELEMS + 77] {
                cases.push(CompactCase {
                    order,
                    spec,
                    elem: ElemKind::U64,
                    n,
                    tuning,
                });
            }
        }
    }
    check_cases::<u64>(&cases, &mut rng);
}

#[test]
fn multi_chunk_outputs_in_every_type() {
    // Chunks of one to three tiles, outputs spanning several windows, every element type.
    let mut rng = Rng::new(seed());
    for elem in ElemKind::ALL {
        let tile = xwarp::compact::tile_elems(elem.size());
        let mut cases = Vec::new();
        for order in [Order::Stable, Order::Unordered] {
            for max in [MIN_BINDING_ELEMS, 3 * MIN_BINDING_ELEMS] {
                for (spec, n) in [
                    (PredSpec::GreaterMedian, 7 * tile + 5),
                    (PredSpec::AllPass, 3 * MIN_BINDING_ELEMS + 1),
                ] {
                    cases.push(CompactCase {
                        order,
                        spec,
                        elem,
                        n,
                        tuning: Tuning {
                            max_binding_elems: Some(max),
                            ..Tuning::default()
                        },
                    });
                }
            }
        }
        with_elem!(elem, check_cases(&cases, &mut rng));
    }
}

#[test]
fn stable_look_back_fallback_at_spin_0() {
    // spin 0: every look-back that finds a predecessor that has published nothing counts that
    // tile from the input itself. Many tiles per chunk, one chunk and many chunks.
    let mut rng = Rng::new(seed());
    for elem in [ElemKind::I32, ElemKind::F64] {
        let mut cases = Vec::new();
        for spec in [
            PredSpec::GreaterMedian,
            PredSpec::AllPass,
            PredSpec::NonePass,
            PredSpec::MiddleHalf,
        ] {
            for max_binding_elems in [None, Some(1 << 16)] {
                cases.push(CompactCase {
                    order: Order::Stable,
                    spec,
                    elem,
                    n: 400_003,
                    tuning: Tuning {
                        max_binding_elems,
                        spin: 0,
                        ..Tuning::default()
                    },
                });
            }
        }
        with_elem!(elem, check_cases(&cases, &mut rng));
    }
}

#[test]
fn stable_fallback_gives_the_same_bits_repeatedly() {
    // The same stable compaction many times with and without the fallback: identical outputs.
    let mut rng = Rng::new(seed());
    let input: Vec<i32> = (0..300_001).map(|_| rng.next_u64() as i32).collect();
    let want = cpu::compact::stable(Predicate::Greater(0), &input);
    for_each_device(|d| {
        let dev = &*d.dev;
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut out = DeviceVec::<i32>::alloc(dev, input.len()).unwrap();
        let mut count = DeviceVec::alloc(dev, 1).unwrap();
        for rep in 0..8 {
            let tuning = Tuning {
                spin: if rep % 2 == 0 { 0 } else { 1 << 14 },
                ..Tuning::default()
            };
            compact_tuned(
                dev,
                Order::Stable,
                Predicate::Greater(0),
                &src,
                &mut out,
                &mut count,
                tuning,
            )
            .unwrap();
            assert_eq!(
                count.to_vec(dev).unwrap(),
                [want.len() as u64],
                "{}",
                d.label
            );
            assert_eq!(
                out.to_vec(dev).unwrap()[..want.len()],
                want[..],
                "{}: rep {rep}",
                d.label
            );
        }
    });
}

#[test]
fn compactions_of_one_chunk_leave_the_device_counters_zero() {
    // Compactions of one chunk and window keep their counter words (and, stable, their tile
    // states) in the device's counters buffer and launch no RESET: the count must still be
    // written (poisoned before), the elements right, and the buffer zero again after each:
    // sizes from one element to the most tiles a stable one keeps there and one tile more,
    // 4- and 8-byte types, both orders, with and without the fallback.
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        if dev.counters().is_none() {
            return;
        }
        for (i, elem_bytes) in [4usize, 8].into_iter().enumerate() {
            let tile = xwarp::compact::tile_elems(elem_bytes);
            let most = xwarp::compact::SELF_CLEARING_MAX_TILES * tile;
            for (j, &n) in [1, tile - 1, tile + 1, 31 * tile + 5, most, most + 1]
                .iter()
                .enumerate()
            {
                for order in [Order::Stable, Order::Unordered] {
                    let tuning = Tuning {
                        spin: if (i + j) % 2 == 0 { 0 } else { 1 << 14 },
                        ..Tuning::default()
                    };
                    let label =
                        format!("{}: {elem_bytes}-byte n={n} {order:?} {tuning:?}", d.label);
                    let (count, sorted) = if elem_bytes == 4 {
                        let input: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32).collect();
                        run_once(dev, order, Predicate::Greater(0), &input, tuning)
                    } else {
                        let input: Vec<i64> = (0..n).map(|_| rng.next_u64() as i64).collect();
                        run_once(dev, order, Predicate::Greater(0), &input, tuning)
                    };
                    assert!(sorted, "{label}: wrong elements (count {count})");
                    assert_counters_zero(dev, &label);
                }
            }
        }
    });
}

/// One compaction of `input` on `dev` with its count poisoned first: the count, and whether the
/// elements (sorted, for the unordered order) and the count equal the CPU's.
fn run_once<T: PredicateElement + PartialOrd + Copy>(
    dev: &dyn xwarp::Device,
    order: Order,
    pred: Predicate<T>,
    input: &[T],
    tuning: Tuning,
) -> (u64, bool) {
    let want = cpu::compact::stable(pred, input);
    let src = DeviceVec::from_slice(dev, input).unwrap();
    let mut out = DeviceVec::<T>::alloc(dev, input.len()).unwrap();
    let mut count = DeviceVec::alloc(dev, 1).unwrap();
    count.fill(dev, u64::MAX).unwrap();
    compact_tuned(dev, order, pred, &src, &mut out, &mut count, tuning).unwrap();
    let count = count.to_vec(dev).unwrap()[0];
    if count != want.len() as u64 {
        return (count, false);
    }
    let mut got = out.to_vec(dev).unwrap()[..want.len()].to_vec();
    let mut want = want;
    if order == Order::Unordered {
        got.sort_by(|a, b| a.partial_cmp(b).unwrap());
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
    }
    (count, got == want)
}

#[test]
fn device_results_chain_without_the_host() {
    // The count and elements stay on the device: compact, then compact the result again
    // straight from the device buffer (the slots past the first count hold -1, which the
    // second predicate refuses), with no host copy in between.
    let input: Vec<i32> = (-500..500).collect();
    for_each_device(|d| {
        let dev = &*d.dev;
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut positive = DeviceVec::alloc(dev, input.len()).unwrap();
        positive.fill(dev, -1).unwrap();
        let mut count = DeviceVec::alloc(dev, 1).unwrap();
        compact(
            dev,
            Order::Stable,
            Predicate::Greater(0),
            &src,
            &mut positive,
            &mut count,
        )
        .unwrap();
        let mut again = DeviceVec::alloc(dev, input.len()).unwrap();
        let mut count2 = DeviceVec::alloc(dev, 1).unwrap();
        compact(
            dev,
            Order::Stable,
            Predicate::InRange { lo: 1, hi: 1000 },
            &positive,
            &mut again,
            &mut count2,
        )
        .unwrap();
        assert_eq!(count.to_vec(dev).unwrap(), [499], "{}", d.label);
        assert_eq!(count2.to_vec(dev).unwrap(), [499], "{}", d.label);
        assert_eq!(
            again.to_vec(dev).unwrap()[..499],
            (1..500).collect::<Vec<i32>>()[..],
            "{}",
            d.label
        );
    });
}

#[test]
fn empty_input_gives_count_0() {
    for_each_device(|d| {
        let dev = &*d.dev;
        for order in [Order::Stable, Order::Unordered] {
            assert_eq!(
                compact_host::<f64>(dev, order, Predicate::NonZero, &[]).unwrap(),
                (0, vec![]),
                "{} {order}",
                d.label
            );
            let src = DeviceVec::<f32>::alloc(dev, 0).unwrap();
            let mut dst = DeviceVec::<f32>::alloc(dev, 0).unwrap();
            let mut count = DeviceVec::from_slice(dev, &[77u64]).unwrap();
            compact(dev, order, Predicate::Even, &src, &mut dst, &mut count).unwrap();
            assert_eq!(count.to_vec(dev).unwrap(), [0], "{} {order}", d.label);
        }
    });
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let input: Vec<i32> = (0..40).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[99u64]).unwrap();
        let mut small = DeviceVec::<i32>::alloc(dev, 39).unwrap();
        small.fill(dev, -7).unwrap();
        for order in [Order::Stable, Order::Unordered] {
            match compact(dev, order, Predicate::Odd, &src, &mut small, &mut count) {
                Err(Error::LengthMismatch {
                    name,
                    expected,
                    actual,
                }) => assert_eq!((name, expected, actual), ("output", 40, 39)),
                other => panic!("expected LengthMismatch(output), got {other:?}"),
            }
            let mut out = DeviceVec::<i32>::alloc(dev, 40).unwrap();
            let mut no_count = DeviceVec::<u64>::alloc(dev, 0).unwrap();
            assert!(matches!(
                compact(dev, order, Predicate::Odd, &src, &mut out, &mut no_count),
                Err(Error::LengthMismatch { name: "count", .. })
            ));
            let bad = Predicate::InRange { lo: 3, hi: 2 };
            match compact(dev, order, bad, &src, &mut out, &mut count) {
                Err(Error::InvalidParameter { name, allowed, .. }) => {
                    assert_eq!(name, "lo");
                    assert!(allowed.contains("hi"));
                }
                other => panic!("expected InvalidParameter(lo), got {other:?}"),
            }
            assert!(matches!(
                compact_host(dev, order, bad, &input),
                Err(Error::InvalidParameter { name: "lo", .. })
            ));
            let tiny = Tuning {
                max_binding_elems: Some(MIN_BINDING_ELEMS - 1),
                ..Tuning::default()
            };
            assert!(matches!(
                compact_tuned(dev, order, Predicate::Odd, &src, &mut out, &mut count, tiny),
                Err(Error::InvalidParameter {
                    name: "max_binding_elems",
                    ..
                })
            ));
        }
        // Nothing was written, and the device keeps working.
        assert_eq!(small.to_vec(dev).unwrap(), vec![-7; 39], "{}", d.label);
        assert_eq!(count.to_vec(dev).unwrap(), [99], "{}", d.label);
        let (n, odd) = compact_host(dev, Order::Stable, Predicate::Odd, &input).unwrap();
        assert_eq!(n, 20, "{}", d.label);
        assert_eq!(odd, (0..20).map(|k| 2 * k + 1).collect::<Vec<i32>>());
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}

/// Stable compactions of `T` with `items` elements a thread against the CPU, on one device.
fn stable_items_case<T: PredicateElement>(d: &common::TestDevice, items: u32, rng: &mut Rng) {
    let tile = 256 * items as usize;
    let specs = [
        PredSpec::MiddleHalf,
        PredSpec::GreaterMedian,
        PredSpec::AllPass,
        PredSpec::NonePass,
        PredSpec::Odd,
    ];
    for (k, n) in [1, 31, 33, tile - 1, tile + 1, 7 * tile + 33, 100_003]
        .into_iter()
        .enumerate()
    {
        let spec = specs[k % specs.len()];
        let (input, pred) = case_input::<T>(spec, n, rng);
        let poison = poison_value(&input);
        let (count, out) = expected_output(Order::Stable, pred, &input, poison);
        let tuning = Tuning {
            stable_items: Some(items),
            spin: if k % 2 == 0 { 0 } else { 1 << 14 },
            ..Tuning::default()
        };
        let label = format!("{}: {} n={n} {pred} {tuning:?}", d.label, T::KIND);
        let (got_count, got) = run_compact(&*d.dev, Order::Stable, pred, &input, poison, tuning)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let want = comparable(Order::Stable, count, &out);
        if let Some(m) = first_mismatch(&want, &comparable(Order::Stable, got_count, &got)) {
            panic!("{label}: count {got_count} (expected {count}); {m}");
        }
    }
}

#[test]
fn stable_tiles_of_other_sizes_agree_with_the_cpu() {
    // Tuning::stable_items: tiles of 1 to the device's most elements a thread (above 16 the
    // kernels stage a tile's passing elements before its look-back), the 4-byte types, lengths
    // around the tile, with and without the fallback, the float edges, unique's head predicate
    // too; past the most, a typed error and the output untouched.
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let most = xwarp::compact::max_stable_items(dev.info());
        assert!(most >= 16, "{}: most {most}", d.label);
        for (k, items) in [1, 7, 17, 24, 20, most].into_iter().enumerate() {
            match k % 3 {
                0 => stable_items_case::<i32>(d, items, &mut rng),
                1 => stable_items_case::<f32>(d, items, &mut rng),
                _ => stable_items_case::<u32>(d, items, &mut rng),
            }
        }
        // The float edges (subnormals, NaN payloads, ±0, ±inf, 2^-149 .. 2^127 and neighbours),
        // drawn at random over several tiles, through the larger tiles' early staging.
        let edges = common::float_edges_f32();
        for items in [20, most] {
            let n = 3 * 256 * items as usize + 5;
            let input: Vec<f32> = (0..n)
                .map(|_| edges[rng.next_u64() as usize % edges.len()])
                .collect();
            let poison = poison_value(&input);
            for pred in [Predicate::Odd, Predicate::NonZero, Predicate::Greater(0.0)] {
                let (count, out) = expected_output(Order::Stable, pred, &input, poison);
                let tuning = Tuning {
                    stable_items: Some(items),
                    ..Tuning::default()
                };
                let label = format!("{}: f32 edges n={n} {pred} {tuning:?}", d.label);
                let (got_count, got) =
                    run_compact(dev, Order::Stable, pred, &input, poison, tuning)
                        .unwrap_or_else(|e| panic!("{label}: {e}"));
                let want = comparable(Order::Stable, count, &out);
                if let Some(m) = first_mismatch(&want, &comparable(Order::Stable, got_count, &got))
                {
                    panic!("{label}: count {got_count} (expected {count}); {m}");
                }
            }
        }
        // Unique (the head predicate) takes the same tiles: runs of 1 to 8 equal keys.
        for items in [7, 24, most] {
            for n in [33, 256 * items as usize + 1, 100_003] {
                let mut keys = Vec::with_capacity(n);
                while keys.len() < n {
                    let key = rng.next_u64() as u32 % 5;
                    let run = 1 + rng.next_u64() as usize % 8;
                    keys.extend(std::iter::repeat_n(key, run.min(n - keys.len())));
                }
                let want = cpu::runs::unique(&keys);
                let tuning = Tuning {
                    stable_items: Some(items),
                    spin: if n % 2 == 0 { 0 } else { 1 << 14 },
                    ..Tuning::default()
                };
                let src = DeviceVec::from_slice(dev, &keys).unwrap();
                let mut out = DeviceVec::from_slice(dev, &vec![u32::MAX; n]).unwrap();
                let mut runs = DeviceVec::from_slice(dev, &[u64::MAX]).unwrap();
                xwarp::unique::unique_tuned(dev, &src, &mut out, &mut runs, tuning).unwrap();
                let label = format!("{}: unique n={n} {tuning:?}", d.label);
                assert_eq!(runs.to_vec(dev).unwrap(), [want.len() as u64], "{label}");
                let got = out.to_vec(dev).unwrap();
                assert_eq!(got[..want.len()], want[..], "{label}");
                assert!(got[want.len()..].iter().all(|&v| v == u32::MAX), "{label}");
            }
        }
        let input: Vec<i32> = (0..5000).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut out = DeviceVec::from_slice(dev, &[7i32; 5000]).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[9u64]).unwrap();
        for bad in [0, most + 1] {
            let tuning = Tuning {
                stable_items: Some(bad),
                ..Tuning::default()
            };
            let r = compact_tuned(
                dev,
                Order::Stable,
                Predicate::Odd,
                &src,
                &mut out,
                &mut count,
                tuning,
            );
            assert!(
                matches!(
                    r,
                    Err(Error::InvalidParameter {
                        name: "stable_items",
                        ..
                    })
                ),
                "{}: stable_items {bad}: {r:?}",
                d.label
            );
        }
        assert_eq!(count.to_vec(dev).unwrap(), [9], "{}", d.label);
        assert!(
            out.to_vec(dev).unwrap().iter().all(|&v| v == 7),
            "{}",
            d.label
        );
    });
}

/// One stable compaction of `n` elements of `T` for [`stable_compactions_tag_their_states_with_epochs`]
/// (the predicate by `i`, the fallback for even `i`) of hard values, its output poisoned first and checked
/// against the CPU; returns the epochs buffer's words after and the call's tiles, whose states
/// must hold the passing elements up to each tile's end.
fn epoch_compaction<T: PredicateElement>(
    dev: &dyn xwarp::Device,
    label: &str,
    i: usize,
    n: usize,
    wrap: u32,
    rng: &mut Rng,
) -> (Vec<u32>, usize) {
    const SPECS: [PredSpec; 5] = [
        PredSpec::Odd,
        PredSpec::MiddleHalf,
        PredSpec::NonZero,
        PredSpec::GreaterMedian,
        PredSpec::AllPass,
    ];
    let spec = SPECS[i % SPECS.len()];
    // Hard values (every magnitude, zeros of both signs, halves, values around 2^24 and 2^53,
    // NaN payloads and ±∞), every fourth float call subnormals alone where the device keeps
    // them.
    let values = if xwarp_lab::validate::flushes_subnormals(dev.info(), T::KIND) {
        xwarp::element::HardValues::ALL.without_subnormals()
    } else {
        xwarp::element::HardValues::ALL
    };
    let float = matches!(T::KIND, ElemKind::F32 | ElemKind::F64);
    let kind = if float && i % 4 == 1 && values.subnormals {
        xwarp_lab::validate::HardInput::Tiny
    } else {
        xwarp_lab::validate::HardInput::Mixed
    };
    let (input, pred) = hard_case_input::<T>(spec, kind, values, n, rng);
    let poison = poison_value(&input);
    let four = T::KIND.size() == 4;
    let tuning = Tuning {
        spin: if i.is_multiple_of(2) {
            0
        } else {
            xwarp::compact::DEFAULT_SPIN
        },
        stable_items: four.then_some(16),
        epoch_wrap: Some(wrap),
        ..Tuning::default()
    };
    let what = format!(
        "{label}: call {i}, {} {spec:?} of {n} {kind:?}, {tuning:?}",
        T::KIND
    );
    let (count, out) = run_compact(dev, Order::Stable, pred, &input, poison, tuning)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let words = common::epoch_words(dev).unwrap();
    let (want_count, want_out) = expected_output(Order::Stable, pred, &input, poison);
    assert_eq!(count, want_count, "{what}: the count");
    let (want, got) = (
        comparable(Order::Stable, want_count, &want_out),
        comparable(Order::Stable, count, &out),
    );
    if let Some(m) = first_mismatch(&want, &got) {
        panic!("{what}: {m}");
    }
    let tile = (xwarp::compact::BLOCK * if four { 16 } else { 8 }) as usize;
    let mut passed = 0;
    for (t, part) in input.chunks(tile).enumerate() {
        passed += cpu::compact::stable(pred, part).len();
        let value = common::epoch_value(&words, t);
        assert_eq!(value as usize, passed, "{what}: tile {t}'s inclusive count");
    }
    (words, n.div_ceil(tile))
}

#[test]
fn stable_compactions_tag_their_states_with_epochs() {
    // Stable compactions of one chunk keep their tile states in the device's epochs buffer,
    // as the scans do (the device's epochs are shared): each state tagged with the call's
    // epoch and holding its tile's inclusive count, none zeroed for the call. Calls of many
    // tiles (past those the counters buffer held) and of fewer in turn read the states the
    // earlier left, of older epochs; `i32`, `f32` and `u64`, with and without the fallback, a
    // scan between them, each against the CPU with its output poisoned. With the least wrap,
    // a call of many tiles, as many calls of one tile as bring its tag back (its states then
    // all zeroed) and a call of many tiles again. Devices of their own.
    let mut rng = Rng::new(seed());
    common::on_epoch_devices(|label, dev, track| {
        let tile = (xwarp::compact::BLOCK * 16) as usize;
        let big = 1100 * tile + 3;
        let wrap = xwarp::scan::EPOCH_WRAP;
        for (i, &n) in [1, tile + 1, big, 33, 5 * tile - 1, 1_000_003, 2 * tile]
            .iter()
            .enumerate()
        {
            let (words, tiles) = match i % 3 {
                0 => epoch_compaction::<i32>(dev, label, i, n, wrap, &mut rng),
                1 => epoch_compaction::<f32>(dev, label, i, n, wrap, &mut rng),
                _ => epoch_compaction::<u64>(dev, label, i, n, wrap, &mut rng),
            };
            track.step(&words, tiles, wrap, label);
            if i == 3 {
                // A scan of one tile between compactions takes the next epoch.
                let a: Vec<f32> = (0..100).map(|k| k as f32 * 0.5 - 7.0).collect();
                let what = format!("{label}: between compactions");
                track.step(&common::epoch_scan(dev, &what, &a, wrap), 1, wrap, label);
            }
        }
        track.wrap_round(label, big, tile, |i, n, wrap| {
            if n > tile {
                epoch_compaction::<i32>(dev, label, i, n, wrap, &mut rng)
            } else {
                epoch_compaction::<f32>(dev, label, i, n, wrap, &mut rng)
            }
        });
    });
}
