//! Reduce-by-key: a worked example, randomized cases against the CPU reference on every backend
//! for every operator and value type and for keys of every type (every key distinct, all equal,
//! short and long runs, hard values repeated: NaN payloads, ±0, subnormals) at every awkward
//! length, float results bit-identical whatever the look-back finds (spin 0 against the
//! default, repeatedly), and every bad parameter refused with the outputs untouched.

mod common;

use common::{devices, for_each_device, seed};
use xwarp::reduce::ReduceOp;
use xwarp::reduce_by_key::{reduce_by_key, reduce_by_key_host, reduce_by_key_tuned, Tuning};
use xwarp::{cpu, DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::runs::RunsOp;

#[test]
fn sums_of_each_run() {
    let keys = [1u32, 1, 2, 2, 2, 1];
    let values = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let want = (vec![1, 2, 1], vec![3.0, 12.0, 6.0]);
    assert_eq!(
        cpu::runs::reduce_by_key(ReduceOp::Sum, &keys, &values),
        want
    );
    for_each_device(|d| {
        let got = reduce_by_key_host(&*d.dev, ReduceOp::Sum, &keys, &values).unwrap();
        assert_eq!(got, want, "{}", d.label);
        // A run of one value keeps its bits: no identity enters (-0.0 stays -0.0).
        let got = reduce_by_key_host(&*d.dev, ReduceOp::Sum, &[5u64, 6], &[-0.0f64, 1.0]).unwrap();
        assert_eq!(got.1[0].to_bits(), (-0.0f64).to_bits(), "{}", d.label);
    });
}

fn values_of(value: ElemKind) {
    common::runs_cases_for(
        "reduce_by_key",
        |c| matches!(c.op, RunsOp::ReduceByKey(_, v) if v == value),
    );
}

#[test]
fn values_i32_every_operator() {
    values_of(ElemKind::I32);
}

#[test]
fn values_u32_every_operator() {
    values_of(ElemKind::U32);
}

#[test]
fn values_f32_every_operator_and_key_type() {
    values_of(ElemKind::F32);
}

#[test]
fn values_i64_every_operator() {
    values_of(ElemKind::I64);
}

#[test]
fn values_u64_every_operator() {
    values_of(ElemKind::U64);
}

#[test]
fn values_f64_every_operator_and_key_type() {
    values_of(ElemKind::F64);
}

/// Float sums over long runs whose tile pieces the look-back folds: the same bits with the
/// fallback forced (spin 0) and without, call after call.
#[test]
fn float_sums_are_the_same_bits_whatever_the_look_back_finds() {
    let mut rng = Rng::new(seed());
    let n = 400_003;
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        let len = (1 + rng.below(50_000) as usize).min(n - keys.len());
        keys.extend(std::iter::repeat_n(rng.next_u64() as u32, len));
    }
    let values: Vec<f32> = (0..n)
        .map(|_| (rng.next_u64() as i32 as f32) * 2f32.powi(-(rng.below(40) as i32)))
        .collect();
    let (want_keys, want) = cpu::runs::reduce_by_key(ReduceOp::Sum, &keys, &values);
    for_each_device(|d| {
        let dev = &*d.dev;
        let k_in = DeviceVec::from_slice(dev, &keys).unwrap();
        let v_in = DeviceVec::from_slice(dev, &values).unwrap();
        let mut k_out = DeviceVec::<u32>::alloc(dev, n).unwrap();
        let mut v_out = DeviceVec::<f32>::alloc(dev, n).unwrap();
        let mut count = DeviceVec::alloc(dev, 1).unwrap();
        for rep in 0..6 {
            let tuning = Tuning {
                spin: if rep % 2 == 0 {
                    0
                } else {
                    Tuning::default().spin
                },
                ..Default::default()
            };
            v_out.fill(dev, f32::from_bits(0x7fcd_cdcd)).unwrap();
            reduce_by_key_tuned(
                dev,
                ReduceOp::Sum,
                &k_in,
                &v_in,
                &mut k_out,
                &mut v_out,
                &mut count,
                tuning,
            )
            .unwrap();
            let runs = want.len();
            assert_eq!(count.to_vec(dev).unwrap(), [runs as u64], "{}", d.label);
            assert_eq!(
                k_out.to_vec(dev).unwrap()[..runs],
                want_keys[..],
                "{}",
                d.label
            );
            let got: Vec<u32> = v_out.to_vec(dev).unwrap()[..runs]
                .iter()
                .map(|v| v.to_bits())
                .collect();
            let want_bits: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want_bits, "{}: rep {rep} {tuning:?}", d.label);
        }
    });
}

/// Calls of up to `xwarp::runs::SELF_CLEARING_MAX_TILES` tiles keep their work words in the
/// device's counters buffer (with no tiles tagged by epochs: `Tuning::epoch_max_tiles` 0; the
/// tagged path is `calls_of_several_tiles_tag_their_states_with_epochs`'), and the last tile
/// done zeroes them: each result must equal the
/// CPU's and the buffer be zero again after each call; sizes from one element to the most tiles
/// kept there and one tile more (fresh memory and a clearing launch), 4- and 8-byte keys and
/// values, short runs and all keys equal (one run through every tile's look-back), with and
/// without the fallback; unique and run-length encoding by the same kernel.
#[test]
fn calls_of_one_launch_leave_the_device_counters_zero() {
    use xwarp_lab::validate::runs::{
        expected_reduce_by_key, expected_run_length, expected_unique, run_reduce_by_key,
        run_unique_or_rle, KeyPattern, UniqueWay,
    };
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        if dev.counters().is_none() {
            return;
        }
        for (i, bytes) in [4usize, 8].into_iter().enumerate() {
            let tile = xwarp::runs::tile(bytes, bytes);
            let most = xwarp::runs::SELF_CLEARING_MAX_TILES * tile;
            let sizes = [
                1,
                tile - 1,
                tile + 1,
                37 * tile + 5,
                most - 1,
                most,
                most + 1,
            ];
            for (j, &n) in sizes.iter().enumerate() {
                let tuning = Tuning {
                    spin: if (i + j) % 2 == 0 {
                        0
                    } else {
                        Tuning::default().spin
                    },
                    epoch_max_tiles: Some(0),
                    ..Default::default()
                };
                let pattern = if j % 3 == 1 {
                    KeyPattern::AllEqual
                } else {
                    KeyPattern::Short
                };
                let label = format!("{}: {bytes}-byte n={n} {pattern} {tuning:?}", d.label);
                let (got, want) = if bytes == 4 {
                    let keys: Vec<u32> = pattern.keys(n, &mut rng);
                    let values: Vec<f32> = (0..n)
                        .map(|_| {
                            (rng.next_u64() as i32 as f32) * 2f32.powi(-(rng.below(30) as i32))
                        })
                        .collect();
                    let poisons = (7u32, f32::from_bits(0x7fcd_cdcd));
                    let got =
                        run_reduce_by_key(dev, ReduceOp::Sum, &keys, &values, poisons, tuning);
                    (
                        got,
                        expected_reduce_by_key(ReduceOp::Sum, &keys, &values, poisons),
                    )
                } else {
                    let keys: Vec<f64> = pattern.keys(n, &mut rng);
                    let values: Vec<i64> = (0..n).map(|_| rng.next_u64() as i64).collect();
                    let poisons = (0.5f64, -5i64);
                    let got =
                        run_reduce_by_key(dev, ReduceOp::Max, &keys, &values, poisons, tuning);
                    (
                        got,
                        expected_reduce_by_key(ReduceOp::Max, &keys, &values, poisons),
                    )
                };
                assert!(got.unwrap() == want, "{label}: wrong reduction");
                common::assert_counters_zero(dev, &label);
            }
        }
        // Unique and run-length encoding through the runs kernel, 4-byte keys.
        let tile = xwarp::runs::tile(4, 4);
        for (j, n) in [tile + 3, xwarp::runs::SELF_CLEARING_MAX_TILES * tile]
            .into_iter()
            .enumerate()
        {
            let keys: Vec<u32> = KeyPattern::Short.keys(n, &mut rng);
            let tuning = Tuning {
                spin: if j == 0 { 0 } else { Tuning::default().spin },
                ..Default::default()
            };
            let label = format!("{}: n={n} {tuning:?}", d.label);
            let got = run_unique_or_rle(dev, false, &keys, 7, tuning, UniqueWay::RunsKernel);
            assert!(
                got.unwrap() == expected_unique(&keys, 7),
                "{label}: wrong unique keys"
            );
            common::assert_counters_zero(dev, &label);
            let got = run_unique_or_rle(dev, true, &keys, 7, tuning, UniqueWay::RunsKernel);
            assert!(
                got.unwrap() == expected_run_length(&keys, 7),
                "{label}: wrong encoding"
            );
            common::assert_counters_zero(dev, &label);
        }
    });
}

/// One checked reduce-by-key of `n` elements (4-byte values: the form that tags its states
/// with epochs where the device can) under epoch wrap `wrap` and at most `most` tiles tagged
/// (`Tuning::epoch_max_tiles`); call `i` picks the key and value
/// types, the operator, the key pattern and whether the look-back falls back at once. Returns
/// the device's epochs buffer after it and the states the call tags: four a tile.
fn epoch_reduce_by_key(
    dev: &dyn xwarp::Device,
    label: &str,
    i: usize,
    n: usize,
    (wrap, most): (u32, Option<usize>),
    rng: &mut Rng,
) -> (Vec<u32>, usize) {
    use xwarp_lab::validate::runs::{expected_reduce_by_key, run_reduce_by_key, KeyPattern};
    let tuning = Tuning {
        spin: if i.is_multiple_of(2) {
            0
        } else {
            Tuning::default().spin
        },
        epoch_wrap: Some(wrap),
        epoch_max_tiles: most,
    };
    let pattern = [KeyPattern::Short, KeyPattern::AllEqual, KeyPattern::Long][i % 3];
    let what = format!("{label}: call {i}, n={n} {pattern} {tuning:?}");
    let key_bytes = if i % 4 == 3 { 8 } else { 4 };
    let ok = match i % 4 {
        0 | 2 => {
            let keys: Vec<u32> = pattern.keys(n, rng);
            let values: Vec<f32> = (0..n)
                .map(|_| (rng.next_u64() as i32 as f32) * 2f32.powi(-(rng.below(30) as i32)))
                .collect();
            let poisons = (7u32, f32::from_bits(0x7fcd_cdcd));
            run_reduce_by_key(dev, ReduceOp::Sum, &keys, &values, poisons, tuning).unwrap()
                == expected_reduce_by_key(ReduceOp::Sum, &keys, &values, poisons)
        }
        1 => {
            let keys: Vec<i32> = pattern.keys(n, rng);
            let values: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32).collect();
            let poisons = (-9i32, 5i32);
            run_reduce_by_key(dev, ReduceOp::Max, &keys, &values, poisons, tuning).unwrap()
                == expected_reduce_by_key(ReduceOp::Max, &keys, &values, poisons)
        }
        _ => {
            let keys: Vec<f64> = pattern.keys(n, rng);
            let values: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
            let poisons = (0.5f64, 3u32);
            run_reduce_by_key(dev, ReduceOp::Xor, &keys, &values, poisons, tuning).unwrap()
                == expected_reduce_by_key(ReduceOp::Xor, &keys, &values, poisons)
        }
    };
    assert!(ok, "{what}: wrong reduction");
    let tiles = n.div_ceil(xwarp::runs::tile(key_bytes, 4));
    (common::epoch_words(dev).unwrap(), 4 * tiles)
}

/// Where reduce-by-key of 4-byte values keeps a tile state in 64-bit words (Vulkan with 64-bit
/// buffer atomics), a call of several tiles keeps its states in the device's epochs buffer: four
/// a tile, each tagged with the call's epoch (`common::EpochTrack::step`: the tile counter back
/// at 0, the epoch advanced, the next states zeroed and the zeroing moved on), and nothing else
/// of the buffer changed by a call of one tile; the results checked against the CPU, with and
/// without the fallback, 4- and 8-byte keys, short and long runs and one run through every tile;
/// a scan between the calls (the epochs are shared); then a wrap at the least epoch wrap: a big
/// call, calls of one tile (scans) until its tag comes back, its states zeroed before that, and
/// the big call again.
#[test]
fn calls_of_several_tiles_tag_their_states_with_epochs() {
    let mut rng = Rng::new(seed());
    common::on_epoch_devices(|label, dev, track| {
        if dev.info().backend == xwarp::BackendKind::Cuda {
            eprintln!("{label}: the CUDA reduce-by-key counts its tiles done (no epochs)");
            return;
        }
        let tile = xwarp::runs::tile(4, 4);
        let wrap = xwarp::scan::EPOCH_WRAP;
        let mut sizes = vec![
            tile + 1,
            5 * tile - 3,
            1,
            300 * tile,
            33,
            2 * tile,
            1_000_003,
            2049,
        ];
        if std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1") {
            // The most tiles the epochs hold (4-byte keys: calls 8 and 9), and one more (the
            // clearing launch's path: the epochs as they were).
            let most = xwarp::runs::EPOCH_MAX_TILES * tile;
            sizes.extend([most, most + 1]);
        }
        for (i, &n) in sizes.iter().enumerate() {
            let before = common::epoch_words(dev).unwrap();
            // Call 5 (2 tiles) beyond its tuning's most tiles tagged: the counters' path.
            let most = (i == 5).then_some(1);
            let (words, states) = epoch_reduce_by_key(dev, label, i, n, (wrap, most), &mut rng);
            let tagged_most = most.unwrap_or(xwarp::runs::EPOCH_MAX_TILES);
            if states == 4 || states / 4 > tagged_most {
                assert_eq!(words, before, "{label}: call {i} without epochs (n={n})");
            } else {
                track.step(&words, states, wrap, label);
            }
            if i == 3 {
                let a: Vec<f32> = (0..100).map(|k| k as f32 * 0.5 - 7.0).collect();
                let what = format!("{label}: between reductions");
                track.step(&common::epoch_scan(dev, &what, &a, wrap), 1, wrap, label);
            }
        }
        track.wrap_round(label, 40 * tile + 7, tile, |i, n, wrap| {
            if n > tile {
                epoch_reduce_by_key(dev, label, 4 * i, n, (wrap, None), &mut rng)
            } else {
                let a: Vec<f32> = (0..n).map(|_| rng.next_u64() as u16 as f32 - 3e4).collect();
                let what = format!("{label}: scan {i} of {n} between reductions");
                (common::epoch_scan(dev, &what, &a, wrap), 1)
            }
        });
    });
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let keys = DeviceVec::from_slice(dev, &[3u32, 3, 4]).unwrap();
        let values = DeviceVec::from_slice(dev, &[1.0f32, 2.0, 3.0]).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[99u64]).unwrap();
        let mut k_out = DeviceVec::from_slice(dev, &[7u32; 3]).unwrap();
        let mut v_out = DeviceVec::from_slice(dev, &[8.0f32; 3]).unwrap();
        let two = DeviceVec::from_slice(dev, &[1.0f32, 2.0]).unwrap();
        match reduce_by_key(
            dev,
            ReduceOp::Sum,
            &keys,
            &two,
            &mut k_out,
            &mut v_out,
            &mut count,
        ) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => assert_eq!((name, expected, actual), ("values", 3, 2)),
            other => panic!(
                "{}: expected LengthMismatch(values), got {other:?}",
                d.label
            ),
        }
        let mut short = DeviceVec::from_slice(dev, &[8.0f32; 2]).unwrap();
        assert!(matches!(
            reduce_by_key(
                dev,
                ReduceOp::Sum,
                &keys,
                &values,
                &mut k_out,
                &mut short,
                &mut count
            ),
            Err(Error::LengthMismatch {
                name: "values_out",
                ..
            })
        ));
        assert!(matches!(
            reduce_by_key(
                dev,
                ReduceOp::Xor,
                &keys,
                &values,
                &mut k_out,
                &mut v_out,
                &mut count
            ),
            Err(Error::InvalidParameter { name: "op", .. })
        ));
        let mut alias = DeviceVec::<f32>::from_raw(values.raw().clone(), 3).unwrap();
        assert!(matches!(
            reduce_by_key(
                dev,
                ReduceOp::Max,
                &keys,
                &values,
                &mut k_out,
                &mut alias,
                &mut count
            ),
            Err(Error::InvalidParameter {
                name: "values_out",
                ..
            })
        ));
        let mut none = DeviceVec::<u64>::alloc(dev, 0).unwrap();
        assert!(matches!(
            reduce_by_key(
                dev,
                ReduceOp::Sum,
                &keys,
                &values,
                &mut k_out,
                &mut v_out,
                &mut none
            ),
            Err(Error::LengthMismatch {
                name: "num_runs",
                ..
            })
        ));
        // Epoch tunings out of range, on every device (a call checks them wherever its states
        // lie).
        let bad_tunings = [
            (
                "epoch_wrap",
                Tuning {
                    epoch_wrap: Some(xwarp::scan::MIN_EPOCH_WRAP - 1),
                    ..Default::default()
                },
            ),
            (
                "epoch_wrap",
                Tuning {
                    epoch_wrap: Some(xwarp::scan::EPOCH_WRAP + 1),
                    ..Default::default()
                },
            ),
            (
                "epoch_max_tiles",
                Tuning {
                    epoch_max_tiles: Some(xwarp::runs::EPOCH_CAPACITY_TILES + 1),
                    ..Default::default()
                },
            ),
        ];
        for (want, tuning) in bad_tunings {
            let got = reduce_by_key_tuned(
                dev,
                ReduceOp::Sum,
                &keys,
                &values,
                &mut k_out,
                &mut v_out,
                &mut count,
                tuning,
            );
            match got {
                Err(Error::InvalidParameter { name, allowed, .. }) => {
                    assert_eq!(name, want, "{}", d.label);
                    assert!(allowed.contains("..="), "{}: {allowed}", d.label);
                }
                other => panic!(
                    "{}: expected InvalidParameter({want}), got {other:?}",
                    d.label
                ),
            }
        }
        assert_eq!(k_out.to_vec(dev).unwrap(), [7, 7, 7], "{}", d.label);
        assert_eq!(v_out.to_vec(dev).unwrap(), [8.0; 3], "{}", d.label);
        assert_eq!(short.to_vec(dev).unwrap(), [8.0; 2], "{}", d.label);
        assert_eq!(count.to_vec(dev).unwrap(), [99], "{}", d.label);
        let got = reduce_by_key_host(dev, ReduceOp::Sum, &[3u32, 3, 4], &[1.0f32, 2.0, 3.0]);
        assert_eq!(got.unwrap(), (vec![3, 4], vec![3.0, 3.0]), "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
