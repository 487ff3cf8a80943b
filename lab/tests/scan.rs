//! Scans: every operator, kind, scope and type against the CPU reference (bit for bit, floats
//! too), the look-back fallback, many launches, in place, and a repeated stress run. Subnormal
//! inputs and results: `lab/tests/subnormals.rs`.

mod common;

use common::{assert_counters_zero, check_on_every_device, for_each_device, seed};
use xwarp::reduce::ReduceOp;
use xwarp::scan::{self, device_scan_host, ScanKind, Tuning, TILE};
use xwarp::{DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::reduce::ReduceInput;
use xwarp_lab::validate::scan::{expected, run_scan, scan_cases, ScanCase, Scope};
use xwarp_lab::validate::{first_mismatch, poison_value};
use xwarp_lab::with_elem;

fn check<T: ReduceInput>(cases: &[ScanCase], rng: &mut Rng) {
    for case in cases {
        let input = T::input(case.op, case.n, rng);
        let want = expected(case, &input);
        let poison = poison_value(&want);
        check_on_every_device(&case.to_string(), &want, |dev| {
            run_scan(dev, case, &input, poison)
        });
    }
}

fn cases_for(elem: ElemKind) {
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<ScanCase> = scan_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    assert!(cases
        .iter()
        .any(|c| matches!(c.scope, Scope::Device(t) if t.spin == 0)));
    let mut rng = Rng::new(seed());
    with_elem!(elem, check(&cases, &mut rng));
}

#[test]
fn every_op_kind_and_scope_i32() {
    cases_for(ElemKind::I32);
}

#[test]
fn every_op_kind_and_scope_u32() {
    cases_for(ElemKind::U32);
}

#[test]
fn every_op_kind_and_scope_f32() {
    cases_for(ElemKind::F32);
}

#[test]
fn every_op_kind_and_scope_i64() {
    cases_for(ElemKind::I64);
}

#[test]
fn every_op_kind_and_scope_u64() {
    cases_for(ElemKind::U64);
}

#[test]
fn every_op_kind_and_scope_f64() {
    cases_for(ElemKind::F64);
}

#[test]
fn small_sums_are_exact() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let x: Vec<i32> = (1..=10).collect();
        let incl = device_scan_host(dev, ReduceOp::Sum, ScanKind::Inclusive, &x).unwrap();
        assert_eq!(incl, [1, 3, 6, 10, 15, 21, 28, 36, 45, 55], "{}", d.label);
        let excl = device_scan_host(dev, ReduceOp::Sum, ScanKind::Exclusive, &x).unwrap();
        assert_eq!(excl, [0, 1, 3, 6, 10, 15, 21, 28, 36, 45], "{}", d.label);
        let max = device_scan_host(
            dev,
            ReduceOp::Max,
            ScanKind::Inclusive,
            &[3u64, 1, 4, 1, 5, 9, 2, 6],
        )
        .unwrap();
        assert_eq!(max, [3, 3, 4, 4, 5, 9, 9, 9], "{}", d.label);
        assert!(
            device_scan_host::<f32>(dev, ReduceOp::Sum, ScanKind::Inclusive, &[])
                .unwrap()
                .is_empty()
        );
    });
}

#[test]
fn in_place_equals_out_of_place() {
    let mut rng = Rng::new(seed());
    let data = f64::input(ReduceOp::Sum, 5 * TILE + 77, &mut rng);
    let want = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Exclusive, &data);
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut v = DeviceVec::from_slice(dev, &data).unwrap();
        scan::device_scan_in_place(dev, ReduceOp::Sum, ScanKind::Exclusive, &mut v).unwrap();
        let got = v.to_vec(dev).unwrap();
        assert!(first_mismatch(&want, &got).is_none(), "{}", d.label);
    });
}

#[test]
fn repeated_scans_of_thousands_of_tiles_never_hang_or_differ() {
    // Thousands of workgroups per scan, repeated: the look-back and its fallback under load.
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let (n, reps) = if large {
        ((1 << 24) + 3, 100)
    } else {
        (1500 * TILE + 17, 4)
    };
    let mut rng = Rng::new(seed());
    let data = f32::input(ReduceOp::Sum, n, &mut rng);
    let want = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &data);
    for_each_device(|d| {
        let dev = &*d.dev;
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let mut dst = DeviceVec::<f32>::alloc(dev, n).unwrap();
        for rep in 0..reps {
            // Both look-back windows the plans choose from, with and without the fallback.
            let tuning = Tuning {
                spin: if rep % 2 == 0 { scan::DEFAULT_SPIN } else { 0 },
                lookback_tiles: Some(1 + (rep / 2 % 2) as u32),
                ..Tuning::default()
            };
            dst.fill(dev, f32::NAN).unwrap();
            scan::device_scan_tuned(
                dev,
                ReduceOp::Sum,
                ScanKind::Inclusive,
                &src,
                &mut dst,
                tuning,
            )
            .unwrap();
            let got = dst.to_vec(dev).unwrap();
            if let Some(m) = first_mismatch(&want, &got) {
                panic!("{}: repetition {rep} ({tuning:?}), n={n}: {m}", d.label);
            }
        }
    });
}

#[test]
fn scans_of_one_launch_leave_the_device_counters_zero() {
    // Scans of one launch keep their tile states in the device's counters buffer, which must
    // be zero again after each (the reduce's one-pass path counts there too): sizes from one
    // tile to the most that take this path and one tile more,
    // 32- and 64-bit types, with and without the fallback, each checked against the CPU, then
    // the whole buffer read back.
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        if dev.counters().is_none() {
            return;
        }
        // The most tiles that take this path (1024 on CUDA, 512 on Vulkan) and one more.
        let cuda = dev.info().backend == xwarp::BackendKind::Cuda;
        let most = if cuda { 1024 } else { 512 } * TILE;
        for (i, &n) in [1, TILE - 1, TILE + 1, 31 * TILE + 5, most, most + 1]
            .iter()
            .enumerate()
        {
            let tuning = Tuning {
                spin: if i % 2 == 0 { 0 } else { scan::DEFAULT_SPIN },
                ..Tuning::default()
            };
            let kind = if i % 2 == 0 {
                ScanKind::Inclusive
            } else {
                ScanKind::Exclusive
            };
            let a = f32::input(ReduceOp::Sum, n, &mut rng);
            let b = i64::input(ReduceOp::Max, n, &mut rng);
            let want_a = xwarp::cpu::scan::device_scan(ReduceOp::Sum, kind, &a);
            let want_b = xwarp::cpu::scan::device_scan(ReduceOp::Max, kind, &b);
            let src_a = DeviceVec::from_slice(dev, &a).unwrap();
            let src_b = DeviceVec::from_slice(dev, &b).unwrap();
            let mut dst_a = DeviceVec::<f32>::alloc(dev, n).unwrap();
            let mut dst_b = DeviceVec::<i64>::alloc(dev, n).unwrap();
            dst_a.fill(dev, f32::NAN).unwrap();
            dst_b.fill(dev, i64::MIN + 7).unwrap();
            scan::device_scan_tuned(dev, ReduceOp::Sum, kind, &src_a, &mut dst_a, tuning).unwrap();
            scan::device_scan_tuned(dev, ReduceOp::Max, kind, &src_b, &mut dst_b, tuning).unwrap();
            let got_a = dst_a.to_vec(dev).unwrap();
            let got_b = dst_b.to_vec(dev).unwrap();
            if let Some(m) = first_mismatch(&want_a, &got_a) {
                panic!("{}: f32 n={n} {tuning:?}: {m}", d.label);
            }
            if let Some(m) = first_mismatch(&want_b, &got_b) {
                panic!("{}: i64 n={n} {tuning:?}: {m}", d.label);
            }
            assert_counters_zero(dev, &format!("{}: scans of n={n} {tuning:?}", d.label));
        }
    });
}

/// One `f32` scan (sum, min or max by `i`; inclusive for even `i`, with the fallback for odd)
/// of `n` hard elements on `dev` (every magnitude, halves, values around 2^24, NaN payloads
/// and ±∞ for min and max; every fourth call's sums of subnormals where the device keeps
/// them), its output poisoned first and checked against the CPU bit for bit; returns the
/// epochs buffer's words after.
fn epoch_call(
    dev: &dyn xwarp::Device,
    label: &str,
    i: usize,
    n: usize,
    wrap: u32,
    rng: &mut Rng,
) -> Vec<u32> {
    let tuning = Tuning {
        spin: if i.is_multiple_of(2) {
            scan::DEFAULT_SPIN
        } else {
            0
        },
        epoch_wrap: Some(wrap),
        ..Tuning::default()
    };
    let kind = if i.is_multiple_of(2) {
        ScanKind::Inclusive
    } else {
        ScanKind::Exclusive
    };
    let op = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min][i % 3];
    let values = if xwarp_lab::validate::flushes_subnormals(dev.info(), ElemKind::F32) {
        xwarp::element::HardValues::ALL.without_subnormals()
    } else {
        xwarp::element::HardValues::ALL
    };
    let input = if i.is_multiple_of(4) && values.subnormals {
        xwarp_lab::validate::HardInput::Tiny
    } else {
        xwarp_lab::validate::HardInput::Mixed
    };
    let a = f32::hard_input(op, input, values, n, rng);
    let want = xwarp::cpu::scan::device_scan(op, kind, &a);
    let src = DeviceVec::from_slice(dev, &a).unwrap();
    let mut dst = DeviceVec::<f32>::alloc(dev, n).unwrap();
    dst.fill(dev, poison_value(&want)).unwrap();
    scan::device_scan_tuned(dev, op, kind, &src, &mut dst, tuning).unwrap();
    let words = common::epoch_words(dev).unwrap();
    if let Some(m) = first_mismatch(&want, &dst.to_vec(dev).unwrap()) {
        panic!("{label}: call {i}, f32 {op:?} {kind:?} of {n} {input:?}, {tuning:?}: {m}");
    }
    words
}

#[test]
fn scans_tag_their_states_with_epochs() {
    // Single-launch scans of 4-byte types keep their states in the device's epochs buffer,
    // tagged with the call's epoch and never zeroed by the call itself: `f32` sums, min and
    // max (the tile of 4096 the order fixes), each against the CPU, with and without the
    // fallback. Calls of many tiles and of fewer in turn read the states the earlier left, of
    // older epochs. The epoch advances by one a call, modulo `epoch_wrap`; each call zeroes
    // `EPOCH_SCRUB` states past its own tiles, in turn. With the least wrap, a call of many
    // tiles, then as many calls of one tile as bring its tag back, then a call of many tiles
    // again, which finds every state but the one-tile calls' zeroed. Devices of their own: the
    // other tests' scans would advance the shared devices' epochs meanwhile.
    let mut rng = Rng::new(seed());
    common::on_epoch_devices(|label, dev, track| {
        let cuda = dev.info().backend == xwarp::BackendKind::Cuda;
        let most = if cuda { 1024 } else { 512 } * TILE;
        let sizes = [
            1,
            TILE + 1,
            most + 1,
            3 * most + 77,
            33,
            most + TILE,
            2 * most - 5,
        ];
        for (i, &n) in sizes.iter().enumerate() {
            let words = epoch_call(dev, label, i, n, scan::EPOCH_WRAP, &mut rng);
            track.step(&words, n.div_ceil(TILE), scan::EPOCH_WRAP, label);
        }
        track.wrap_round(label, 3 * most + 77, TILE, |i, n, wrap| {
            let words = epoch_call(dev, label, i, n, wrap, &mut rng);
            (words, n.div_ceil(TILE))
        });
    });
}

#[test]
fn integer_scans_agree_at_every_tile() {
    // Integer scans may take any tile (`Tuning::items`: their operators are associative), each
    // checked against the CPU at 1, 31 and 33 elements, a tile less one and one more, several
    // tiles, 1000003, and past the
    // tiles whose states the device's counters buffer holds (a clearing launch), with and
    // without the fallback; a float scan refuses any tile but its own, its output untouched.
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let most = scan::max_items(dev.info(), ElemKind::I32);
        let tiles = [1u32, 7, 8, 16, 24, most];
        for (j, items) in tiles.into_iter().filter(|&i| i <= most).enumerate() {
            let tile = (scan::BLOCK * items) as usize;
            for (i, n) in [
                1,
                31,
                33,
                tile - 1,
                tile + 1,
                5 * tile + 3,
                1_000_003,
                1100 * tile + 1,
            ]
            .into_iter()
            .enumerate()
            {
                // Both depths of the CUDA near look-back, each with and without the
                // fallback.
                let tuning = Tuning {
                    items: Some(items),
                    spin: if (i + j) % 2 == 0 {
                        0
                    } else {
                        scan::DEFAULT_SPIN
                    },
                    near_depth: Some(scan::NEAR_DEPTHS[(i / 2 + j) % 2]),
                    ..Tuning::default()
                };
                let kind = if i % 2 == 0 {
                    ScanKind::Inclusive
                } else {
                    ScanKind::Exclusive
                };
                let op = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max][(i + j) % 3];
                let a = i32::input(op, n, &mut rng);
                let want = xwarp::cpu::scan::device_scan(op, kind, &a);
                let src = DeviceVec::from_slice(dev, &a).unwrap();
                let mut dst = DeviceVec::<i32>::alloc(dev, n).unwrap();
                dst.fill(dev, i32::MIN + 3).unwrap();
                scan::device_scan_tuned(dev, op, kind, &src, &mut dst, tuning).unwrap();
                let got = dst.to_vec(dev).unwrap();
                if let Some(m) = first_mismatch(&want, &got) {
                    panic!("{}: i32 {op:?} {kind:?} n={n} {tuning:?}: {m}", d.label);
                }
                if items <= scan::ITEMS && n < 100 * tile {
                    let b = u64::input(op, n, &mut rng);
                    let want = xwarp::cpu::scan::device_scan(op, kind, &b);
                    let src = DeviceVec::from_slice(dev, &b).unwrap();
                    let mut dst = DeviceVec::<u64>::alloc(dev, n).unwrap();
                    dst.fill(dev, u64::MAX - 3).unwrap();
                    scan::device_scan_tuned(dev, op, kind, &src, &mut dst, tuning).unwrap();
                    let got = dst.to_vec(dev).unwrap();
                    if let Some(m) = first_mismatch(&want, &got) {
                        panic!("{}: u64 {op:?} {kind:?} n={n} {tuning:?}: {m}", d.label);
                    }
                }
                assert_counters_zero(dev, &format!("{}: n={n} {tuning:?}", d.label));
            }
        }
        let x = f32::input(ReduceOp::Sum, 100, &mut rng);
        let src = DeviceVec::from_slice(dev, &x).unwrap();
        let mut dst = DeviceVec::<f32>::alloc(dev, 100).unwrap();
        dst.fill(dev, 7.5).unwrap();
        let tuning = Tuning {
            items: Some(8),
            ..Tuning::default()
        };
        let r = scan::device_scan_tuned(
            dev,
            ReduceOp::Sum,
            ScanKind::Inclusive,
            &src,
            &mut dst,
            tuning,
        );
        match r {
            Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "items", "{}", d.label),
            other => panic!("{}: a float scan with 8 items: {other:?}", d.label),
        }
        assert_eq!(dst.to_vec(dev).unwrap(), vec![7.5; 100], "{}", d.label);
    });
}

/// Whether a Vulkan device has the register tile's kernel (`scan_device_vec`): 64-bit buffer
/// atomics and the subgroup arithmetic operations.
fn vulkan_register_tile(info: &xwarp::device::DeviceInfo) -> bool {
    info.int64_atomics
        && info
            .subgroup_features
            .contains(xwarp::device::SubgroupFeatures::ARITHMETIC)
}

#[test]
fn integer_tiles_in_registers_agree_with_the_cpu() {
    // From `REGISTER_TILE_FROM` elements a 4-byte integer scan keeps its tile in registers; a
    // Vulkan device with 64-bit buffer atomics and the subgroup arithmetic operations at any
    // multiple of 4 elements per thread up to `MAX_ITEMS` whatever its shared memory holds:
    // every operator and kind, both types, a whole last tile and a partial one, several
    // launches, the fallback (spin 0), against the CPU. Elsewhere, and below that length, a
    // tile the device's shared memory cannot hold is refused, its output untouched.
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let info = dev.info();
        let staged = scan::max_items(info, ElemKind::I32);
        let registers = info.backend == xwarp::BackendKind::Vulkan && vulkan_register_tile(info);
        // CUDA takes the register tile from `REGISTER_TILE_FROM.0` (every length; its other
        // scan tests cover the short ones), within the tiles its shared memory holds as well.
        let from = if registers {
            scan::REGISTER_TILE_FROM.1
        } else {
            scan::REGISTER_TILE_FROM.0.max(1 << 18)
        };
        for (j, items) in [4u32, 12, 20, 32].into_iter().enumerate() {
            let tile = (scan::BLOCK * items) as usize;
            let whole = from.div_ceil(tile) * tile;
            for (i, (n, launch)) in [
                (from, None),
                (whole + 4 * tile + 5, None),
                (whole + 3, Some(16 * tile)),
                (1000, None),
            ]
            .into_iter()
            .enumerate()
            {
                let tuning = Tuning {
                    items: Some(items),
                    spin: if i == 1 { 0 } else { scan::DEFAULT_SPIN },
                    max_launch_elems: launch,
                    near_depth: Some(scan::NEAR_DEPTHS[(i + j) % 2]),
                    ..Tuning::default()
                };
                let kind = [ScanKind::Inclusive, ScanKind::Exclusive][(i + j) % 2];
                let op = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max][(i + 2 * j) % 3];
                let label = format!("{}: {op:?} {kind:?} n={n} {tuning:?}", d.label);
                let holds = items <= staged || (registers && n >= from);
                if (i + j) % 2 == 0 {
                    tile_case(
                        dev,
                        &label,
                        holds,
                        (op, kind, n, tuning),
                        i32::MIN + 5,
                        &mut rng,
                    );
                } else {
                    tile_case(
                        dev,
                        &label,
                        holds,
                        (op, kind, n, tuning),
                        0xdead_beef_u32,
                        &mut rng,
                    );
                }
                assert_counters_zero(dev, &label);
            }
        }
    });
}

#[test]
fn float_tiles_in_registers_and_staged_agree_with_the_cpu() {
    // f32 scans through both kernels, chosen by `Tuning::registers`: the register tile (each
    // documented thread's 16 elements in four lanes that fold them in sequence) and the
    // staging kernel, against the CPU bit for bit: every operator and kind, hard inputs (every
    // magnitude and NaN payloads for min and max; subnormals where the device keeps or
    // emulates them), partial last tiles, several launches, the fallback (spin 0). Where the
    // device has no register tile, `Some(true)` is a typed error naming `registers`, the
    // output untouched.
    use xwarp::element::HardValues;
    use xwarp_lab::validate::{flushes_subnormals, HardInput};
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let info = dev.info();
        let possible = info.backend == xwarp::BackendKind::Cuda || vulkan_register_tile(info);
        let values = if flushes_subnormals(info, ElemKind::F32) {
            HardValues::ALL.without_subnormals()
        } else {
            HardValues::ALL
        };
        let cases: [(usize, Option<usize>, u32); 8] = [
            (1, None, scan::DEFAULT_SPIN),
            (31, None, scan::DEFAULT_SPIN),
            (33, None, 0),
            (TILE + 1, None, scan::DEFAULT_SPIN),
            (3 * TILE + 5, Some(2 * TILE), scan::DEFAULT_SPIN),
            (20 * TILE - 1, Some(3 * TILE), 0),
            (100_003, None, 0),
            (1_000_003, None, scan::DEFAULT_SPIN),
        ];
        for registers in [true, false] {
            for (i, &(n, launch, spin)) in cases.iter().enumerate() {
                let op = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max][i % 3];
                let kind = [ScanKind::Inclusive, ScanKind::Exclusive]
                    [(i / 3 + usize::from(registers)) % 2];
                let input = if i % 2 == 0 && values.subnormals {
                    HardInput::Tiny
                } else {
                    HardInput::Mixed
                };
                let tuning = Tuning {
                    spin,
                    max_launch_elems: launch,
                    registers: Some(registers),
                    ..Tuning::default()
                };
                let label = format!(
                    "{}: {op:?} {kind:?} f32 n={n} {input:?} {tuning:?}",
                    d.label
                );
                let a = f32::hard_input(op, input, values, n, &mut rng);
                let want = xwarp::cpu::scan::device_scan(op, kind, &a);
                let poison = poison_value(&want);
                let src = DeviceVec::from_slice(dev, &a).unwrap();
                let mut dst = DeviceVec::<f32>::alloc(dev, n).unwrap();
                dst.fill(dev, poison).unwrap();
                let r = scan::device_scan_tuned(dev, op, kind, &src, &mut dst, tuning);
                let got = dst.to_vec(dev).unwrap();
                if registers && !possible {
                    match r {
                        Err(Error::InvalidParameter { name, .. }) => {
                            assert_eq!(name, "registers", "{label}")
                        }
                        other => panic!("{label}: no register tile here: {other:?}"),
                    }
                    assert!(
                        got.iter().all(|x| x.to_bits() == poison.to_bits()),
                        "{label}: output written"
                    );
                    continue;
                }
                r.unwrap_or_else(|e| panic!("{label}: {e}"));
                if let Some(m) = first_mismatch(&want, &got) {
                    panic!("{label}: {m}");
                }
                assert_counters_zero(dev, &label);
            }
        }
    });
}

#[test]
fn float_min_max_look_backs_keep_the_left_folds_bits() {
    // f32 min and max scans across many look-back windows, where NaN payloads, -0.0 against
    // +0.0 and subnormals decide which bits win (and where a look-back that folded its windows
    // in another association than the documented left fold would have to keep those bits):
    // tiles of all NaN (payloads and signs of their own; two of the six classes, and the
    // input's opening run), of zeros of both signs, of subnormals, of infinities, of mixed
    // values, in runs of tiles, against the CPU's left fold bit for bit, on both kernels,
    // both kinds, the fallback (spin 0) and several launches.
    use xwarp_lab::validate::flushes_subnormals;
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let info = dev.info();
        let subnormals = !flushes_subnormals(info, ElemKind::F32);
        let possible = info.backend == xwarp::BackendKind::Cuda || vulkan_register_tile(info);
        let n = 97 * TILE + 13;
        // Rounds 0-3 and 8-11 on the register tile (where the device has it), 4-7 staged: each
        // operator and kind on both, the fallback and several launches too.
        for round in 0..12usize {
            let op = [ReduceOp::Min, ReduceOp::Max][round % 2];
            let kind = [ScanKind::Inclusive, ScanKind::Exclusive][(round / 2) % 2];
            let registers = possible && (round / 4) % 2 == 0;
            let (spin, launch) = match round % 8 {
                2 | 6 => (0, None),
                3 | 7 => (scan::DEFAULT_SPIN, Some(32 * TILE)),
                _ => (scan::DEFAULT_SPIN, None),
            };
            // Each tile one class; a class holds for a run of 1 to 12 tiles (the first, NaN,
            // of 3 to 14).
            let mut a = Vec::with_capacity(n);
            let mut class = 0u64;
            let mut left = 0u64;
            while a.len() < n {
                if left == 0 {
                    // The input opens with NaN tiles: only there is a whole window NaN.
                    class = if a.is_empty() {
                        0
                    } else {
                        rng.next_u64() % if subnormals { 6 } else { 5 }
                    };
                    left = if a.is_empty() { 3 } else { 1 } + rng.next_u64() % 12;
                }
                left -= 1;
                for _ in 0..TILE.min(n - a.len()) {
                    let r = rng.next_u64();
                    let sign = ((r >> 40) as u32 & 1) << 31;
                    let bits = match class {
                        // NaN, a payload and a sign of its own
                        0 | 1 => sign | 0x7f80_0000 | (1 + (r as u32 % 0x7f_ffff)),
                        // zeros of both signs
                        2 => sign,
                        // infinities, and now and then a NaN
                        3 => {
                            sign | if r.is_multiple_of(7) {
                                0x7fc0_0000 | (r >> 8) as u32 & 0xffff
                            } else {
                                0x7f80_0000
                            }
                        }
                        // any finite value
                        4 => sign | (r as u32 % 0x7f80_0000),
                        // subnormals
                        _ => sign | (r as u32 % 0x0080_0000),
                    };
                    a.push(f32::from_bits(bits));
                }
            }
            let label = format!(
                "{}: {op:?} {kind:?} f32 n={n} registers={registers} spin={spin} launch={launch:?}",
                d.label
            );
            let want = xwarp::cpu::scan::device_scan(op, kind, &a);
            let poison = poison_value(&want);
            let src = DeviceVec::from_slice(dev, &a).unwrap();
            let mut dst = DeviceVec::<f32>::alloc(dev, n).unwrap();
            dst.fill(dev, poison).unwrap();
            let tuning = Tuning {
                spin,
                max_launch_elems: launch,
                registers: Some(registers),
                ..Tuning::default()
            };
            scan::device_scan_tuned(dev, op, kind, &src, &mut dst, tuning)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let got = dst.to_vec(dev).unwrap();
            if let Some(m) = first_mismatch(&want, &got) {
                panic!("{label}: {m}");
            }
            assert_counters_zero(dev, &label);
        }
    });
}

/// A scan of `n` fresh elements of `T` (`op`, `kind`, `tuning`) into an output poisoned with
/// `poison`: at a tile the device holds, the CPU's bits; at one it does not, an error naming
/// `items` and the output still all `poison`.
fn tile_case<T: ReduceInput>(
    dev: &dyn xwarp::Device,
    label: &str,
    holds: bool,
    (op, kind, n, tuning): (ReduceOp, ScanKind, usize, Tuning),
    poison: T,
    rng: &mut Rng,
) {
    let a = T::input(op, n, rng);
    let want = xwarp::cpu::scan::device_scan(op, kind, &a);
    let src = DeviceVec::from_slice(dev, &a).unwrap();
    let mut dst = DeviceVec::<T>::alloc(dev, n).unwrap();
    dst.fill(dev, poison).unwrap();
    let r = scan::device_scan_tuned(dev, op, kind, &src, &mut dst, tuning);
    let got = dst.to_vec(dev).unwrap();
    if holds {
        r.unwrap_or_else(|e| panic!("{label}: {e}"));
        if let Some(m) = first_mismatch(&want, &got) {
            panic!("{label}: {m}");
        }
    } else {
        match r {
            Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "items", "{label}"),
            other => panic!("{label}: a tile the device cannot hold: {other:?}"),
        }
        assert!(got.iter().all(|&x| x == poison), "{label}: output written");
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    for_each_device(|d| {
        let dev = &*d.dev;
        for op in [ReduceOp::Product, ReduceOp::And] {
            assert!(matches!(
                device_scan_host(dev, op, ScanKind::Inclusive, &[1u32, 2]),
                Err(Error::InvalidParameter { name: "op", .. })
            ));
        }
        let src = DeviceVec::from_slice(dev, &[1i64; 100]).unwrap();
        let mut dst = DeviceVec::<i64>::alloc(dev, 99).unwrap();
        dst.fill(dev, -5).unwrap();
        assert!(matches!(
            scan::device_scan(dev, ReduceOp::Sum, ScanKind::Inclusive, &src, &mut dst),
            Err(Error::LengthMismatch {
                name: "output",
                expected: 100,
                actual: 99
            })
        ));
        assert!(matches!(
            scan::warp_scan(
                dev,
                ReduceOp::Sum,
                ScanKind::Inclusive,
                &DeviceVec::<i64>::alloc(dev, 0).unwrap(),
                &mut dst
            ),
            Err(Error::EmptyInput { .. })
        ));
        let mut ok = DeviceVec::<i64>::alloc(dev, 100).unwrap();
        let bad = Tuning {
            spin: 0,
            max_launch_elems: Some(TILE + 1),
            ..Tuning::default()
        };
        assert!(matches!(
            scan::device_scan_tuned(dev, ReduceOp::Sum, ScanKind::Inclusive, &src, &mut ok, bad),
            Err(Error::InvalidParameter {
                name: "max_launch_elems",
                ..
            })
        ));
        assert_eq!(dst.to_vec(dev).unwrap(), vec![-5; 99]);
        let sum = device_scan_host(dev, ReduceOp::Sum, ScanKind::Inclusive, &[1i64; 100]).unwrap();
        assert_eq!(sum[99], 100);
    });
}
