//! Reductions: every operator, type and scope against the CPU reference (bit for bit, floats
//! too), the documented semantics, chaining on the device, and bad input. Subnormal inputs and
//! results: `lab/tests/subnormals.rs`.

mod common;

use common::{check_on_every_device, for_each_device, seed};
use xwarp::cpu::reduce::Reduce;
use xwarp::reduce::{
    device_reduce, device_reduce_host, device_reduce_tuned, warp_reduce_host, Launches, ReduceOp,
    Tuning, WarpForm,
};
use xwarp::{DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::poison_value;
use xwarp_lab::validate::reduce::{expected, reduce_cases, run_reduce, ReduceCase, ReduceInput};
use xwarp_lab::with_elem;

fn check<T: ReduceInput>(cases: &[ReduceCase], rng: &mut Rng) {
    for case in cases {
        let input = T::input(case.op, case.n, rng);
        let want = expected(case, &input);
        let poison = poison_value(&want);
        check_on_every_device(&case.to_string(), &want, |dev| {
            run_reduce(dev, case, &input, poison)
        });
    }
}

fn cases_for(elem: ElemKind) {
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    if !large {
        eprintln!("GPU-sized inputs (2^24, 2^28 + 3) skipped: set XWARP_LARGE=1");
    }
    let cases: Vec<ReduceCase> = reduce_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    assert!(cases.iter().any(|c| c.n == 0) && cases.iter().any(|c| c.n == (1 << 20) + 7));
    let mut rng = Rng::new(seed());
    with_elem!(elem, check(&cases, &mut rng));
}

#[test]
fn every_op_and_scope_i32() {
    cases_for(ElemKind::I32);
}

#[test]
fn every_op_and_scope_u32() {
    cases_for(ElemKind::U32);
}

#[test]
fn every_op_and_scope_f32() {
    cases_for(ElemKind::F32);
}

#[test]
fn every_op_and_scope_i64() {
    cases_for(ElemKind::I64);
}

#[test]
fn every_op_and_scope_u64() {
    cases_for(ElemKind::U64);
}

#[test]
fn every_op_and_scope_f64() {
    cases_for(ElemKind::F64);
}

#[test]
fn empty_input_gives_the_identity() {
    for_each_device(|d| {
        let dev = &*d.dev;
        assert_eq!(
            device_reduce_host::<i32>(dev, ReduceOp::Sum, &[]).unwrap(),
            0
        );
        assert_eq!(
            device_reduce_host::<u64>(dev, ReduceOp::Product, &[]).unwrap(),
            1
        );
        assert_eq!(
            device_reduce_host::<i32>(dev, ReduceOp::Min, &[]).unwrap(),
            i32::MAX
        );
        assert_eq!(
            device_reduce_host::<i64>(dev, ReduceOp::Max, &[]).unwrap(),
            i64::MIN
        );
        assert_eq!(
            device_reduce_host::<u32>(dev, ReduceOp::And, &[]).unwrap(),
            u32::MAX
        );
        let s = device_reduce_host::<f32>(dev, ReduceOp::Sum, &[]).unwrap();
        assert_eq!(s.to_bits(), (-0.0f32).to_bits(), "{}", d.label);
        assert!(device_reduce_host::<f64>(dev, ReduceOp::Min, &[])
            .unwrap()
            .is_nan());
    });
}

#[test]
fn min_max_ignore_nan_and_order_signed_zeros() {
    let nan = f32::NAN;
    for_each_device(|d| {
        let dev = &*d.dev;
        let min = |v: &[f32]| device_reduce_host(dev, ReduceOp::Min, v).unwrap();
        let max = |v: &[f32]| device_reduce_host(dev, ReduceOp::Max, v).unwrap();
        assert_eq!(min(&[nan, 3.0, nan, -2.0, nan]), -2.0, "{}", d.label);
        assert_eq!(max(&[nan, 3.0, nan, -2.0]), 3.0, "{}", d.label);
        assert!(min(&[nan, nan]).is_nan());
        assert_eq!(
            min(&[0.0, -0.0, 0.0]).to_bits(),
            (-0.0f32).to_bits(),
            "{}",
            d.label
        );
        assert_eq!(
            max(&[-0.0, 0.0, -0.0]).to_bits(),
            0.0f32.to_bits(),
            "{}",
            d.label
        );
        // The same through warp shuffles.
        let w = warp_reduce_host(
            dev,
            ReduceOp::Min,
            WarpForm::Butterfly,
            &[nan, 0.0, -0.0, nan],
        )
        .unwrap();
        assert!(
            w.iter().all(|x| x.to_bits() == (-0.0f32).to_bits()),
            "{}: {w:?}",
            d.label
        );
    });
}

/// f32 NaNs of random payloads and signs: all NaN, or NaN with a few other values (zeros of
/// both signs among them) at random places, where the tiles' and the threads' parts are whole,
/// partial and all NaN. Min and max give the reference's bits, a NaN's payload included (the
/// last NaN of the documented order where every value is NaN).
fn nan_heavy(rng: &mut Rng, n: usize, others: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..n)
        .map(|_| {
            let payload = 1 + rng.below((1 << 23) - 1) as u32;
            let sign = (rng.below(2) as u32) << 31;
            f32::from_bits(sign | 0x7f80_0000 | payload)
        })
        .collect();
    let values = [
        0.0f32,
        -0.0,
        1.5,
        -7.25,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-40,
    ];
    for _ in 0..others.min(n) {
        let at = rng.below(n as u64) as usize;
        v[at] = values[rng.below(values.len() as u64) as usize];
    }
    v
}

#[test]
fn min_max_of_nan_heavy_inputs_keep_the_reference_bits() {
    let mut rng = Rng::new(seed());
    for n in [1, 31, 33, 255, 257, 4095, 4096, 4097, 3 * 4096 + 5, 70_001] {
        for others in [0, 1, 3] {
            let input = nan_heavy(&mut rng, n, others);
            for op in [ReduceOp::Min, ReduceOp::Max] {
                check_every_launch_plan(&format!("{op} n = {n}, {others} not NaN"), op, &input);
                // Segments of one tile and of several, and a short one.
                let cut = [0u32, (n / 3) as u32, (n - n / 7) as u32, n as u32];
                let want = xwarp::cpu::segmented_reduce::segmented_reduce(op, &input, &cut);
                check_on_every_device(&format!("segmented {op} n = {n}"), &want, |dev| {
                    xwarp::segmented_reduce::segmented_reduce_host(dev, op, &input, &cut)
                });
            }
        }
    }
}

#[test]
fn integers_wrap_on_overflow() {
    for_each_device(|d| {
        let dev = &*d.dev;
        assert_eq!(
            device_reduce_host(dev, ReduceOp::Sum, &[i32::MAX, 1, 1]).unwrap(),
            i32::MIN + 1
        );
        assert_eq!(
            device_reduce_host(dev, ReduceOp::Product, &[u64::MAX, 3]).unwrap(),
            u64::MAX - 2
        );
        let big = vec![i64::MAX / 3; 1001];
        assert_eq!(
            device_reduce_host(dev, ReduceOp::Sum, &big).unwrap(),
            big.iter().fold(0i64, |a, &b| a.wrapping_add(b)),
            "{}",
            d.label
        );
    });
}

#[test]
fn results_chain_on_the_device() {
    // Reduce several arrays into one device buffer, then reduce that buffer: no host copy in
    // between, and the result equals the CPU reference of the same two-level order.
    let mut rng = Rng::new(seed());
    let parts: Vec<Vec<f64>> = (0..5)
        .map(|i| f64::input(ReduceOp::Sum, 1000 * i + 7, &mut rng))
        .collect();
    let firsts: Vec<f64> = parts
        .iter()
        .map(|p| xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, p))
        .collect();
    let want = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &firsts);
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut mid = DeviceVec::<f64>::alloc(dev, parts.len()).unwrap();
        for (i, p) in parts.iter().enumerate() {
            let src = DeviceVec::from_slice(dev, p).unwrap();
            device_reduce(dev, ReduceOp::Sum, &src, &mut mid, i).unwrap();
        }
        let mut out = DeviceVec::<f64>::alloc(dev, 1).unwrap();
        device_reduce(dev, ReduceOp::Sum, &mid, &mut out, 0).unwrap();
        assert_eq!(
            out.to_vec(dev).unwrap()[0].to_bits(),
            want.to_bits(),
            "{}",
            d.label
        );
    });
}

#[test]
fn bad_input_is_a_typed_error() {
    for_each_device(|d| {
        let dev = &*d.dev;
        for op in [ReduceOp::And, ReduceOp::Or, ReduceOp::Xor] {
            match device_reduce_host(dev, op, &[1.0f32, 2.0]) {
                Err(Error::InvalidParameter { name: "op", .. }) => {}
                other => panic!("{}: expected InvalidParameter(op), got {other:?}", d.label),
            }
        }
        assert!(matches!(
            warp_reduce_host::<u32>(dev, ReduceOp::Sum, WarpForm::ShiftDown, &[]),
            Err(Error::EmptyInput { .. })
        ));
        let src = DeviceVec::from_slice(dev, &[1u32; 100]).unwrap();
        let mut short = DeviceVec::<u32>::alloc(dev, 3).unwrap();
        short.fill(dev, 77).unwrap();
        assert!(matches!(
            xwarp::reduce::warp_reduce(dev, ReduceOp::Sum, WarpForm::ShiftDown, &src, &mut short),
            Err(Error::LengthMismatch {
                name: "output",
                expected: 4,
                actual: 3
            })
        ));
        assert!(matches!(
            device_reduce(dev, ReduceOp::Sum, &src, &mut short, 3),
            Err(Error::InvalidParameter { name: "index", .. })
        ));
        assert_eq!(short.to_vec(dev).unwrap(), [77; 3]);
        assert_eq!("max".parse::<ReduceOp>().unwrap(), ReduceOp::Max);
        assert!(matches!(
            "mean".parse::<ReduceOp>(),
            Err(Error::InvalidParameter { name: "op", .. })
        ));
        // Still working.
        assert_eq!(
            device_reduce_host(dev, ReduceOp::Sum, &[1u32; 100]).unwrap(),
            100
        );
    });
}

#[test]
fn float_sum_order_is_the_documented_one() {
    // Independent of the kernels' code: the documented order written out for two tiles.
    let mut rng = Rng::new(seed());
    let data: Vec<f32> = (0..4096 + 300)
        .map(|_| rng.next_f64_mixed() as f32)
        .collect();
    let tile = |d: &[f32]| {
        let mut threads: Vec<f32> = (0..256)
            .map(|t| {
                (0..16)
                    .filter_map(|k| d.get(k * 256 + t))
                    .fold(-0.0f32, |a, &x| a + x)
            })
            .collect();
        while threads.len() > 1 {
            threads = threads.chunks(2).map(|p| p[0] + p[1]).collect();
        }
        threads[0]
    };
    let want = tile(&[tile(&data[..4096]), tile(&data[4096..])]);
    assert_eq!(
        <f32 as Reduce>::identity(ReduceOp::Sum).to_bits(),
        (-0.0f32).to_bits()
    );
    for_each_device(|d| {
        assert_eq!(
            device_reduce_host(&*d.dev, ReduceOp::Sum, &data)
                .unwrap()
                .to_bits(),
            want.to_bits(),
            "{}",
            d.label
        );
    });
}

#[test]
fn both_launch_plans_agree_around_4096_tiles() {
    // Up to 4096 tiles (2^24 elements) one launch's last workgroup folds the tile totals as one
    // tile; beyond it, the last workgroup of each tile of totals folds that tile, and the last
    // of those the results (two more levels, as the per-level plan launches them). Every plan keeps the documented order. Fresh float
    // data on both sides of the boundary and past one whole tile of totals with a ragged second
    // one (within llvmpipe's 128 MiB binding, so one launch takes it there too), each compared
    // bit for bit with the CPU reference, into a poisoned output element between two that must
    // survive.
    let mut rng = Rng::new(seed());
    let tile = xwarp::reduce::TILE;
    for n in [
        tile * tile - 1,
        tile * tile,
        tile * tile + 1,
        (tile + 4) * tile + 17,
    ] {
        let data: Vec<f32> = (0..n).map(|_| rng.next_f64_mixed() as f32).collect();
        let want = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &data);
        for_each_device(|d| {
            let dev = &*d.dev;
            let src = DeviceVec::from_slice(dev, &data).unwrap();
            // One launch twice: its counter words must be back at zero after each.
            let plans = [
                Launches::Auto,
                Launches::PerLevel,
                Launches::OneLaunch,
                Launches::OneLaunch,
            ];
            for launches in plans {
                let guard = [1.5f32, poison_value(&[want]), -2.5];
                let mut out = DeviceVec::from_slice(dev, &guard).unwrap();
                device_reduce_tuned(dev, ReduceOp::Sum, &src, &mut out, 1, Tuning { launches })
                    .unwrap();
                let got = out.to_vec(dev).unwrap();
                let at = format!("{}: n = {n}, {launches:?}", d.label);
                assert_eq!(got[1].to_bits(), want.to_bits(), "{at}");
                assert_eq!((got[0], got[2]), (1.5, -2.5), "{at}");
            }
        });
    }
}

/// `input` reduced by `op` through each launch plan into a poisoned output, bit for bit against
/// the CPU reference, on every device.
fn check_every_launch_plan<T: xwarp::cpu::reduce::Reduce>(label: &str, op: ReduceOp, input: &[T]) {
    let want = xwarp::cpu::reduce::device_reduce(op, input);
    let poison = poison_value(&[want]);
    for launches in [Launches::PerLevel, Launches::OneLaunch] {
        check_on_every_device(&format!("{label}, {launches:?}"), &[want], |dev| {
            let src = DeviceVec::from_slice(dev, input)?;
            let mut out = DeviceVec::from_slice(dev, &[poison])?;
            device_reduce_tuned(dev, op, &src, &mut out, 0, Tuning { launches })?;
            out.to_vec(dev)
        });
    }
}

fn every_plan<T: ReduceInput>(elem: ElemKind, rng: &mut Rng) {
    let float = matches!(elem, ElemKind::F32 | ElemKind::F64);
    for op in ReduceOp::ALL
        .into_iter()
        .filter(|op| !float || op.for_floats())
    {
        for n in [4097, 70_001, (1 << 20) + 7] {
            let input = T::input(op, n, rng);
            check_every_launch_plan(&format!("{elem} {op} n = {n}"), op, &input);
        }
    }
}

#[test]
fn every_launch_plan_gives_the_same_bits_for_every_type_and_op() {
    let mut rng = Rng::new(seed());
    for elem in ElemKind::ALL {
        with_elem!(elem, every_plan(elem, &mut rng));
    }
}
