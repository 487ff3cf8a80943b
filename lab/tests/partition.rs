//! Stable partition: a worked example, randomized cases against the CPU reference on every
//! backend for every type, predicate and awkward length (the whole output and its slack past
//! the end compared bit for bit), float edge values (NaN payloads, ±0, subnormals), and every
//! bad parameter refused before any GPU work with the outputs untouched.

mod common;

use common::{devices, for_each_device, seed};
use xwarp::partition::{
    self, partition, partition_host, ONE_LAUNCH_MAX_TILES, ONE_LAUNCH_SPIN, SCAN_IN_PASS_MAX_TILES,
};
use xwarp::vote::{Predicate, PredicateElement};
use xwarp::{cpu, DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::first_mismatch;
use xwarp_lab::validate::partition::{
    expected, partition_cases, run_partition_tuned, PartitionCase, PARTITION_LENGTHS,
};
use xwarp_lab::validate::poison_value;
use xwarp_lab::validate::vote::{case_input, PredSpec};
use xwarp_lab::with_elem;

#[test]
fn odd_numbers_first_then_even_ones() {
    let input: Vec<u32> = (0..10).collect();
    let want = [1, 3, 5, 7, 9, 0, 2, 4, 6, 8];
    assert_eq!(
        cpu::partition::partition(Predicate::Odd, &input),
        (5, want.to_vec())
    );
    for_each_device(|d| {
        let got = partition_host(&*d.dev, Predicate::Odd, &input).unwrap();
        assert_eq!(got, (5, want.to_vec()), "{}", d.label);
    });
}

/// Runs `cases` on every device: count, output and slack, bit for bit.
fn check<T: PredicateElement>(what: &str, input: &[T], pred: Predicate<T>) {
    check_tuned(what, input, pred, partition::Tuning::default());
}

fn check_tuned<T: PredicateElement>(
    what: &str,
    input: &[T],
    pred: Predicate<T>,
    tuning: partition::Tuning,
) {
    let poison = poison_value(input);
    let want = expected(pred, input, poison);
    let mut outputs = Vec::new();
    for_each_device(|d| {
        let got = run_partition_tuned(&*d.dev, pred, input, poison, tuning)
            .unwrap_or_else(|e| panic!("{}: {what} ({pred}): {e}", d.label));
        if let Some(m) = first_mismatch(&want, &got) {
            // Index 0 is the count; output element k is index k + 1, the slack after it.
            let place = match m.index {
                0 => "the count".to_string(),
                i if i <= input.len() => format!("output element {}", i - 1),
                i => format!("slack element {} past the end", i - 1 - input.len()),
            };
            panic!("{}: {what} ({pred}): {place}: {m}", d.label);
        }
        outputs.push(got);
    });
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "{what}: backends differ"
    );
}

fn check_cases<T: PredicateElement>(cases: &[PartitionCase], rng: &mut Rng) {
    for case in cases {
        let (input, pred) = case_input::<T>(case.spec, case.n, rng);
        check(&case.to_string(), &input, pred);
    }
}

fn random_cases_for(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<PartitionCase> = partition_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    for n in PARTITION_LENGTHS {
        for spec in PredSpec::ALL {
            assert!(cases.iter().any(|c| c.n == n && c.spec == spec));
        }
    }
    with_elem!(elem, check_cases(&cases, &mut rng));
}

#[test]
fn random_i32_every_predicate_and_length() {
    random_cases_for(ElemKind::I32);
}

#[test]
fn random_u32_every_predicate_and_length() {
    random_cases_for(ElemKind::U32);
}

#[test]
fn random_f32_every_predicate_and_length() {
    random_cases_for(ElemKind::F32);
}

#[test]
fn random_i64_every_predicate_and_length() {
    random_cases_for(ElemKind::I64);
}

#[test]
fn random_u64_every_predicate_and_length() {
    random_cases_for(ElemKind::U64);
}

#[test]
fn random_f64_every_predicate_and_length() {
    random_cases_for(ElemKind::F64);
}

/// Float edges (NaN payloads, ±0, ±∞, subnormals, every magnitude) by parity, sign and
/// comparison: NaN passes only `NonZero`, -0.0 equals 0.0, and every value keeps its bits.
#[test]
fn float_edges_keep_their_bits() {
    fn run<T: PredicateElement>(input: &[T], zero: T) {
        for pred in [
            Predicate::Even,
            Predicate::Odd,
            Predicate::NonZero,
            Predicate::Greater(zero),
            Predicate::Less(zero),
        ] {
            check(
                &format!("float edges {} n={}", T::KIND, input.len()),
                input,
                pred,
            );
            // The edges repeated over several tiles, through every path: the one launch, the
            // scatter's sums of every count, groups of two tiles, the scan launch.
            let tile = partition::tile_elems(T::KIND.size());
            let long: Vec<T> = input.iter().copied().cycle().take(3 * tile + 5).collect();
            for (one, most, group_max_tiles) in [
                (Some(0), SCAN_IN_PASS_MAX_TILES, None),
                (Some(ONE_LAUNCH_MAX_TILES), SCAN_IN_PASS_MAX_TILES, None),
                (Some(0), 2, Some(SCAN_IN_PASS_MAX_TILES)),
                (Some(0), 0, None),
            ] {
                let tuning = partition::Tuning {
                    one_launch_max_tiles: one,
                    scan_in_pass_max_tiles: most,
                    group_max_tiles,
                    ..Default::default()
                };
                check_tuned(
                    &format!(
                        "float edges {} n={}, one launch {one:?}, at most {most} sums",
                        T::KIND,
                        long.len()
                    ),
                    &long,
                    pred,
                    tuning,
                );
            }
        }
    }
    run(&common::float_edges(), 0.0);
    run(&common::float_edges_f32(), 0.0f32);
}

/// A partition that passes 2^24 + 1 elements, half of them; more than a million in the
/// default run, GPU sizes with `XWARP_LARGE=1`.
#[test]
fn long_input_with_a_skewed_predicate() {
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let n = if large { (1 << 24) + 1 } else { 1_000_003 };
    let mut rng = Rng::new(seed());
    // Long runs of passing and failing elements, of random lengths.
    let mut input = Vec::with_capacity(n);
    while input.len() < n {
        let run = 1 + rng.below(9000) as usize;
        let sign = if rng.below(2) == 0 { 1 } else { -1 };
        input.extend((0..run.min(n - input.len())).map(|k| sign * (k as i32 + 1)));
    }
    check(
        "runs of passing and failing elements",
        &input,
        Predicate::Greater(0),
    );
}

/// The tile offsets summed by the scatter step from every count (one tile, two, and the most
/// tiles it takes), from the sums of groups of tiles (one group of every tile; at most 16
/// groups, the last one partial, of 2–512 tiles; groups of up to 1024 tiles; the device's
/// default groups), and scanned by a launch of their own (0) give the same output, at 4- and
/// 8-byte elements; each case runs twice.
#[test]
fn offsets_summed_in_the_scatter_or_scanned_by_a_launch_agree() {
    fn run<T: PredicateElement>(input: &[T]) {
        let any = Some(SCAN_IN_PASS_MAX_TILES);
        for (most, group_max_tiles) in [
            (0, None),
            (1, any),
            (16, any),
            (SCAN_IN_PASS_MAX_TILES, any),
            (SCAN_IN_PASS_MAX_TILES, None),
        ] {
            let tuning = partition::Tuning {
                scan_in_pass_max_tiles: most,
                group_max_tiles,
                one_launch_max_tiles: Some(0),
                ..Default::default()
            };
            for _ in 0..2 {
                check_tuned(
                    &format!(
                        "n = {} {}, at most {most} sums in the scatter, groups of at most \
                         {group_max_tiles:?} tiles",
                        input.len(),
                        T::KIND
                    ),
                    input,
                    Predicate::Odd,
                    tuning,
                );
            }
        }
    }
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let tile = partition::tile_elems(4);
    let mut sizes = vec![1, 33, tile, tile + 1, 17 * tile + 3, 1_000_003];
    if large {
        // Past the sums of every count: groups of 4 tiles, the last of one (the default on
        // CUDA); groups of 8 tiles, the last of one; at most 16 groups: nine of 512 tiles; at
        // most one: the scan launch. And the limit of the sums of every count.
        sizes.extend([(1 << 23) + 1, (1 << 24) + 1, SCAN_IN_PASS_MAX_TILES * tile]);
    }
    let mut rng = Rng::new(seed());
    for n in sizes {
        let input: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32).collect();
        run(&input);
    }
    let wide: Vec<u64> = (0..1_000_003).map(|_| rng.next_u64()).collect();
    run(&wide);
}

/// The one-launch path (forced on every device, whether or not its workgroups all run at once:
/// where they do not, tiles count the tiles they wait for themselves) against the CPU twin, for
/// every type and predicate, at one tile, a partial one, several, a million elements and its
/// limit; with the default spin and with none (every unpublished tile counted at once). Each
/// case runs twice: the states a call leaves (zeroed in the device's counters buffer, or tagged
/// with its epoch in the epochs buffer) must not disturb the next.
#[test]
fn one_launch_path_agrees_with_the_reference() {
    fn run<T: PredicateElement>(n: usize, rng: &mut Rng) {
        let tile = partition::tile_elems(T::KIND.size());
        let lengths = [
            1,
            33,
            tile,
            tile + 1,
            5 * tile - 3,
            n,
            ONE_LAUNCH_MAX_TILES * tile,
        ];
        for (k, spec) in PredSpec::ALL.into_iter().enumerate() {
            for &len in &lengths {
                // The long inputs at one predicate a type: the slowest cases on a CPU device.
                if len >= n && k > 0 {
                    continue;
                }
                let (input, pred) = case_input::<T>(spec, len, rng);
                for spin in [ONE_LAUNCH_SPIN, 0] {
                    let tuning = partition::Tuning {
                        one_launch_max_tiles: Some(ONE_LAUNCH_MAX_TILES),
                        spin,
                        ..Default::default()
                    };
                    for _ in 0..2 {
                        check_tuned(
                            &format!("one launch, n = {len}, spin {spin}"),
                            &input,
                            pred,
                            tuning,
                        );
                    }
                }
            }
        }
    }
    let mut rng = Rng::new(seed());
    for elem in ElemKind::ALL {
        // 200 tiles: a million elements of 4 bytes.
        let n = 200 * partition::tile_elems(elem.size()) + 3;
        with_elem!(elem, run(n, &mut rng));
    }
}

/// Past the one-launch path's limit (and on a device whose residency is unknown) the plan
/// takes its launches; the device's own limit never exceeds the kernels'.
#[test]
fn one_launch_limit_by_the_device() {
    for_each_device(|d| {
        let info = d.dev.info();
        let most = partition::one_launch_max_tiles(info, partition::Tuning::default());
        assert!(most <= ONE_LAUNCH_MAX_TILES, "{}: {most}", d.label);
        if info.compute_units == 0 {
            assert_eq!(most, 0, "{}: no compute units known", d.label);
        }
        let forced = partition::Tuning {
            one_launch_max_tiles: Some(usize::MAX),
            ..Default::default()
        };
        assert_eq!(
            partition::one_launch_max_tiles(info, forced),
            ONE_LAUNCH_MAX_TILES
        );
    });
    let mut rng = Rng::new(seed());
    let n = ONE_LAUNCH_MAX_TILES * partition::tile_elems(4) + 1;
    let input: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32).collect();
    let tuning = partition::Tuning {
        one_launch_max_tiles: Some(usize::MAX),
        ..Default::default()
    };
    check_tuned(
        "one tile past the one-launch limit",
        &input,
        Predicate::Odd,
        tuning,
    );
}

/// One checked one-launch partition of `n` elements (`i`: the call, which picks the type, the
/// predicate and the spin) under epoch wrap `wrap`; returns the device's epochs buffer after it
/// and the call's tiles.
fn epoch_partition(
    dev: &dyn xwarp::Device,
    label: &str,
    i: usize,
    n: usize,
    wrap: u32,
    rng: &mut Rng,
) -> (Vec<u32>, usize) {
    fn run<T: PredicateElement>(
        dev: &dyn xwarp::Device,
        label: &str,
        i: usize,
        n: usize,
        wrap: u32,
        rng: &mut Rng,
    ) -> usize {
        let spec = PredSpec::ALL[i % PredSpec::ALL.len()];
        let (input, pred) = case_input::<T>(spec, n, rng);
        let poison = poison_value(&input);
        let tuning = partition::Tuning {
            one_launch_max_tiles: Some(ONE_LAUNCH_MAX_TILES),
            spin: if i.is_multiple_of(2) {
                0
            } else {
                ONE_LAUNCH_SPIN
            },
            epoch_wrap: Some(wrap),
            ..Default::default()
        };
        let got = run_partition_tuned(dev, pred, &input, poison, tuning).unwrap();
        if let Some(m) = first_mismatch(&expected(pred, &input, poison), &got) {
            panic!("{label}: call {i}, {} {pred} of {n}: {m}", T::KIND);
        }
        n.div_ceil(partition::tile_elems(T::KIND.size()))
    }
    let tiles = match i % 3 {
        0 => run::<i32>(dev, label, i, n, wrap, rng),
        1 => run::<f32>(dev, label, i, n, wrap, rng),
        _ => run::<u64>(dev, label, i, n, wrap, rng),
    };
    (common::epoch_words(dev).unwrap(), tiles)
}

/// Where the device keeps a tile state in one 64-bit word and its partition tags them (Vulkan
/// with 64-bit buffer atomics), the one-launch path of several tiles keeps its states in the
/// device's epochs buffer, each tagged with the call's epoch and holding its tile's count, none
/// zeroed for the call; a call of one tile reads none and leaves the epochs as they were. Calls
/// of many tiles and of fewer in turn (`i32`, `f32`, `u64`; with and without the fallback; a
/// scan between them: the device's epochs are shared) read the states the earlier left, of
/// older epochs, each against the CPU with its output poisoned. With the least wrap, a call of
/// the path's most tiles, as many one-tile scans as bring its tag back (its states then all
/// zeroed) and a call of many tiles again. Devices of their own.
#[test]
fn one_launch_path_tags_its_states_with_epochs() {
    let mut rng = Rng::new(seed());
    common::on_epoch_devices(|label, dev, track| {
        if dev.info().backend == xwarp::BackendKind::Cuda {
            eprintln!("{label}: the CUDA partition counts its tiles done (no epochs)");
            return;
        }
        let tile = partition::tile_elems(4);
        let most = ONE_LAUNCH_MAX_TILES * tile;
        let wrap = xwarp::scan::EPOCH_WRAP;
        for (i, &n) in [
            tile + 1,
            5 * tile - 3,
            1,
            most,
            33,
            2 * tile,
            1_000_003,
            most - 1,
        ]
        .iter()
        .enumerate()
        {
            let before = common::epoch_words(dev).unwrap();
            let (words, tiles) = epoch_partition(dev, label, i, n, wrap, &mut rng);
            if tiles == 1 {
                assert_eq!(words, before, "{label}: call {i} of one tile");
            } else {
                track.step(&words, tiles, wrap, label);
            }
            if i == 3 {
                let a: Vec<f32> = (0..100).map(|k| k as f32 * 0.5 - 7.0).collect();
                let what = format!("{label}: between partitions");
                track.step(&common::epoch_scan(dev, &what, &a, wrap), 1, wrap, label);
            }
        }
        // The scans' tile of `f32` is 4096 elements, as the partition's of 4-byte ones.
        track.wrap_round(label, most, tile, |i, n, wrap| {
            if n > tile {
                epoch_partition(dev, label, 3 * i, n, wrap, &mut rng)
            } else {
                let a: Vec<f32> = (0..n).map(|_| rng.next_u64() as u16 as f32 - 3e4).collect();
                let what = format!("{label}: scan {i} of {n} between partitions");
                (common::epoch_scan(dev, &what, &a, wrap), 1)
            }
        });
    });
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let input: Vec<i32> = (0..40).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[99u64]).unwrap();
        let mut short = DeviceVec::from_slice(dev, &[-7i32; 39]).unwrap();
        match partition(dev, Predicate::Odd, &src, &mut short, &mut count) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => assert_eq!((name, expected, actual), ("output", 40, 39)),
            other => panic!(
                "{}: expected LengthMismatch(output), got {other:?}",
                d.label
            ),
        }
        let mut out = DeviceVec::from_slice(dev, &[-7i32; 40]).unwrap();
        let mut no_count = DeviceVec::<u64>::alloc(dev, 0).unwrap();
        assert!(matches!(
            partition(dev, Predicate::Odd, &src, &mut out, &mut no_count),
            Err(Error::LengthMismatch { name: "count", .. })
        ));
        let bad = Predicate::InRange { lo: 3, hi: 2 };
        assert!(matches!(
            partition(dev, bad, &src, &mut out, &mut count),
            Err(Error::InvalidParameter { name: "lo", .. })
        ));
        // The output aliasing the input, and the count aliasing the output.
        let mut alias = DeviceVec::<i32>::from_raw(src.raw().clone(), 40).unwrap();
        match partition(dev, Predicate::Odd, &src, &mut alias, &mut count) {
            Err(Error::InvalidParameter { name, allowed, .. }) => {
                assert_eq!(name, "output");
                assert!(allowed.contains("no other argument"), "{allowed}");
            }
            other => panic!(
                "{}: expected InvalidParameter(output), got {other:?}",
                d.label
            ),
        }
        let mut count_alias = DeviceVec::<u64>::from_raw(out.raw().clone(), 1).unwrap();
        assert!(matches!(
            partition(dev, Predicate::Odd, &src, &mut out, &mut count_alias),
            Err(Error::InvalidParameter { name: "count", .. })
        ));
        // An epoch wrap out of range (the device's epochs are shared with the scans').
        for wrap in [
            0,
            xwarp::scan::MIN_EPOCH_WRAP - 1,
            xwarp::scan::EPOCH_WRAP + 1,
        ] {
            let tuning = partition::Tuning {
                epoch_wrap: Some(wrap),
                ..Default::default()
            };
            match partition::partition_tuned(
                dev,
                Predicate::Odd,
                &src,
                &mut out,
                &mut count,
                tuning,
            ) {
                Err(Error::InvalidParameter { name, allowed, .. }) => {
                    assert_eq!(name, "epoch_wrap");
                    assert!(allowed.contains("..="), "{allowed}");
                }
                other => panic!(
                    "{}: expected InvalidParameter(epoch_wrap), got {other:?}",
                    d.label
                ),
            }
        }
        // Nothing was written, and the device keeps working.
        assert_eq!(short.to_vec(dev).unwrap(), vec![-7; 39], "{}", d.label);
        assert_eq!(out.to_vec(dev).unwrap(), vec![-7; 40], "{}", d.label);
        assert_eq!(count.to_vec(dev).unwrap(), [99], "{}", d.label);
        let (n, got) = partition_host(dev, Predicate::Even, &input).unwrap();
        assert_eq!(n, 20, "{}", d.label);
        assert_eq!(got, cpu::partition::partition(Predicate::Even, &input).1);
    });
}

#[test]
fn empty_input_gives_count_0() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let src = DeviceVec::<f64>::alloc(dev, 0).unwrap();
        let mut dst = DeviceVec::<f64>::alloc(dev, 0).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[77u64]).unwrap();
        partition(dev, Predicate::NonZero, &src, &mut dst, &mut count).unwrap();
        assert_eq!(count.to_vec(dev).unwrap(), [0], "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
