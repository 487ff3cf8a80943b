//! Run-length encoding: a worked example, randomized cases against the CPU reference on every
//! backend for every key type and pattern (every key distinct, all equal, short and long runs,
//! hard values repeated: NaN payloads, ±0, subnormals) at every awkward length, the look-back's
//! fallback forced by spin 0, and every bad parameter refused with the outputs untouched.

mod common;

use common::{devices, for_each_device};
use xwarp::run_length::{encode, encode_host};
use xwarp::{cpu, DeviceVec, ElemKind, Error};

#[test]
fn keys_and_lengths_of_each_run() {
    let keys = [7i32, 7, 7, -1, 7, 7];
    let want = (vec![7, -1, 7], vec![3, 1, 2]);
    assert_eq!(cpu::runs::run_length(&keys), want);
    for_each_device(|d| {
        assert_eq!(encode_host(&*d.dev, &keys).unwrap(), want, "{}", d.label);
        // One run of every key (length n) and n runs of length 1.
        let same = vec![2.5f64; 5000];
        assert_eq!(
            encode_host(&*d.dev, &same).unwrap(),
            (vec![2.5], vec![5000]),
            "{}",
            d.label
        );
        let distinct: Vec<u64> = (0..5000).collect();
        assert_eq!(
            encode_host(&*d.dev, &distinct).unwrap(),
            (distinct.clone(), vec![1; 5000]),
            "{}",
            d.label
        );
    });
}

#[test]
fn keys_i32() {
    common::runs_cases_for("run_length", |c| c.key == ElemKind::I32);
}

#[test]
fn keys_u32() {
    common::runs_cases_for("run_length", |c| c.key == ElemKind::U32);
}

#[test]
fn keys_f32() {
    common::runs_cases_for("run_length", |c| c.key == ElemKind::F32);
}

#[test]
fn keys_i64() {
    common::runs_cases_for("run_length", |c| c.key == ElemKind::I64);
}

#[test]
fn keys_u64() {
    common::runs_cases_for("run_length", |c| c.key == ElemKind::U64);
}

#[test]
fn keys_f64() {
    common::runs_cases_for("run_length", |c| c.key == ElemKind::F64);
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let keys = DeviceVec::from_slice(dev, &[3i32, 3, 4]).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[99u64]).unwrap();
        let mut out = DeviceVec::from_slice(dev, &[7i32; 3]).unwrap();
        let mut lengths = DeviceVec::from_slice(dev, &[8u32; 3]).unwrap();
        let mut short = DeviceVec::from_slice(dev, &[8u32; 2]).unwrap();
        match encode(dev, &keys, &mut out, &mut short, &mut count) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => assert_eq!((name, expected, actual), ("lengths", 3, 2)),
            other => panic!(
                "{}: expected LengthMismatch(lengths), got {other:?}",
                d.label
            ),
        }
        let mut none = DeviceVec::<u64>::alloc(dev, 0).unwrap();
        assert!(matches!(
            encode(dev, &keys, &mut out, &mut lengths, &mut none),
            Err(Error::LengthMismatch {
                name: "num_runs",
                ..
            })
        ));
        let mut alias = DeviceVec::<i32>::from_raw(keys.raw().clone(), 3).unwrap();
        assert!(matches!(
            encode(dev, &keys, &mut alias, &mut lengths, &mut count),
            Err(Error::InvalidParameter {
                name: "keys_out",
                ..
            })
        ));
        let mut lengths_alias = DeviceVec::<u32>::from_raw(out.raw().clone(), 3).unwrap();
        assert!(matches!(
            encode(dev, &keys, &mut out, &mut lengths_alias, &mut count),
            Err(Error::InvalidParameter {
                name: "lengths",
                ..
            })
        ));
        assert_eq!(out.to_vec(dev).unwrap(), [7, 7, 7], "{}", d.label);
        assert_eq!(lengths.to_vec(dev).unwrap(), [8, 8, 8], "{}", d.label);
        assert_eq!(count.to_vec(dev).unwrap(), [99], "{}", d.label);
        assert_eq!(
            encode_host(dev, &[3i32, 3, 4]).unwrap(),
            (vec![3, 4], vec![2, 1]),
            "{}",
            d.label
        );
    });
}

#[test]
fn encodings_of_one_pass_leave_the_device_counters_zero() {
    // Encodings whose pass keeps its tile states and two words a tile in the device's counters
    // buffer close their runs in the pass's last tile, which zeroes those words (where the
    // states are one 64-bit word, on CUDA and on Vulkan with 64-bit buffer atomics, each tile
    // closes the run before its first head instead, its states tagged by epochs; interop.rs
    // runs these sizes on a Vulkan device without those atomics too): the result must equal
    // the CPU's and the buffer be zero again after each; sizes from one key to the most tiles
    // closed in the pass and one tile more (a last launch, the states still in the counters
    // buffer), to the most tiles kept there and one more, 4- and 8-byte keys, short runs and
    // all keys equal, with and without the fallback.
    use xwarp_lab::validate::runs::{planned_rle_matches, rotating_case};
    let mut rng = xwarp::Rng::new(common::seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        if dev.counters().is_none() {
            return;
        }
        for (i, elem_bytes) in [4usize, 8].into_iter().enumerate() {
            let tile = xwarp::compact::tile_elems(elem_bytes);
            let most = xwarp::compact::SELF_CLEARING_MAX_TILES * tile;
            let closed = xwarp::compact::CLOSE_IN_PASS_MAX_TILES * tile;
            let sizes = [
                1,
                tile - 1,
                tile + 1,
                31 * tile + 5,
                closed,
                closed + 1,
                most,
                most + 1,
            ];
            for (j, &n) in sizes.iter().enumerate() {
                let (tuning, pattern) = rotating_case(i, j);
                let label = format!("{}: {elem_bytes}-byte n={n} {pattern} {tuning:?}", d.label);
                let ok = planned_rle_matches(dev, elem_bytes, n, pattern, tuning, &mut rng);
                assert!(ok.unwrap(), "{label}: wrong encoding");
                common::assert_counters_zero(dev, &label);
            }
        }
    });
}

#[test]
fn runs_longer_than_a_tile_close_in_the_tile_of_the_next_head() {
    // Runs of up to three tiles between short ones, so that tiles without a head sit between
    // tiles with heads: on CUDA, and on Vulkan where the device has 64-bit buffer atomics,
    // each tile carries the place of the last head at or before it through its tile state, and
    // a tile's first head closes the run before it from there
    // (crate::tuning::lengths_carry_max_tiles). Also, where it carries, the most tiles that
    // carry and one more (the clearing and last launches), all keys equal and long runs, 4- and
    // 8-byte keys,
    // with and without the fallback, and sizes either side of 2^19 on CUDA and 2^18 on Vulkan
    // (4-byte tiles of 2048 to them).
    use xwarp::BackendKind;
    use xwarp_lab::validate::runs::KeyPattern;
    let mut rng = xwarp::Rng::new(common::seed() ^ 0x5eed);
    for_each_device(|d| {
        let dev = &*d.dev;
        for (i, elem_bytes) in [4usize, 8].into_iter().enumerate() {
            let tile = xwarp::compact::tile_elems(elem_bytes);
            let mut sizes = vec![(40 * tile + 3, None), (3 * tile, None)];
            // The twins carry where their states are tagged by epochs in one 64-bit word.
            if dev.info().backend == BackendKind::Cuda || dev.info().int64_atomics {
                let most = 2048 * tile;
                sizes.extend([
                    (most, None),
                    (most + 1, None),
                    (most, Some(KeyPattern::AllEqual)),
                ]);
            }
            // Either side of the tile's change (crate::tuning::lengths_items).
            let half_tiles_max = match dev.info().backend {
                BackendKind::Cuda => 1 << 19,
                BackendKind::Vulkan => 1 << 18,
            };
            sizes.extend([(half_tiles_max, None), (half_tiles_max + 1, None)]);
            for (j, &(n, pattern)) in sizes.iter().enumerate() {
                let tuning = xwarp::runs::Tuning {
                    spin: if (i + j) % 2 == 0 { 0 } else { 1 << 12 },
                    ..Default::default()
                };
                let label = format!(
                    "{}: {elem_bytes}-byte n={n} {pattern:?} {tuning:?}",
                    d.label
                );
                if elem_bytes == 4 {
                    let keys: Vec<u32> = long_runs(n, tile, pattern, &mut rng);
                    check_encoding(dev, &keys, 7, tuning, &label);
                } else {
                    let keys: Vec<u64> = long_runs(n, tile, pattern, &mut rng);
                    check_encoding(dev, &keys, 9, tuning, &label);
                }
            }
        }
    });
}

/// `n` keys of `pattern`, or without one runs of five random keys in turn, one run in four up
/// to three tiles long, the others 1 to 4.
fn long_runs<K: xwarp::Element>(
    n: usize,
    tile: usize,
    pattern: Option<xwarp_lab::validate::runs::KeyPattern>,
    rng: &mut xwarp::Rng,
) -> Vec<K> {
    if let Some(p) = pattern {
        return p.keys(n, rng);
    }
    let palette: Vec<K> = (0..5).map(|_| K::random(rng)).collect();
    let mut keys = Vec::with_capacity(n);
    let mut run = 0;
    while keys.len() < n {
        let len = if rng.below(4) == 0 {
            1 + rng.below(3 * tile as u64) as usize
        } else {
            1 + rng.below(4) as usize
        };
        let len = len.min(n - keys.len());
        keys.extend(std::iter::repeat_n(palette[run % 5], len));
        run += 1;
    }
    keys
}

/// The planned encoding of `keys` (outputs poisoned with `poison`) equals the CPU's.
fn check_encoding<K: xwarp::Element>(
    dev: &dyn xwarp::Device,
    keys: &[K],
    poison: K,
    tuning: xwarp::runs::Tuning,
    label: &str,
) {
    use xwarp_lab::validate::runs::{expected_run_length, run_unique_or_rle, UniqueWay};
    let got = run_unique_or_rle(dev, true, keys, poison, tuning, UniqueWay::Planned);
    assert!(
        got.unwrap() == expected_run_length(keys, poison),
        "{label}: wrong encoding"
    );
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
