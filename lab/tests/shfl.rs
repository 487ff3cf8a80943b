//! The shuffle family: the source material's examples, randomized cases against the CPU
//! reference on every backend, and every bad parameter.

mod common;

use common::{check_on_every_device, devices, for_each_device, seed};
use xwarp::cpu;
use xwarp::shfl::{shfl, shfl_host, shfl_xor_array_host, ShflOp};
use xwarp::{DeviceVec, ElemKind, Element, Error, Rng};
use xwarp_lab::validate::first_mismatch;
use xwarp_lab::validate::shfl::{run_shfl, shfl_cases, ShflCase};
use xwarp_lab::with_elem;

fn iota(n: i32) -> Vec<i32> {
    (0..n).collect()
}

/// The source material runs one 16-lane block with `width` 16 on the input 0..15: the CPU
/// reference and every backend must give its printed results.
fn source_example(op: ShflOp, expected: &[i32]) {
    assert_eq!(
        cpu::shfl::shfl(op, 16, 1, &iota(16)),
        expected,
        "CPU reference, {op}"
    );
    for_each_device(|d| {
        let got = shfl_host(&*d.dev, op, 16, &iota(16)).unwrap();
        assert_eq!(got, expected, "{}: {op}", d.label);
    });
}

#[test]
fn broadcast_from_lane_2_gives_all_2() {
    source_example(ShflOp::Broadcast { src_lane: 2 }, &[2; 16]);
}

#[test]
fn shift_up_by_2_keeps_lanes_0_and_1() {
    let mut expected = vec![0, 1];
    expected.extend(0..14);
    source_example(ShflOp::Up { delta: 2 }, &expected);
}

#[test]
fn shift_down_by_2_keeps_lanes_14_and_15() {
    let mut expected: Vec<i32> = (2..16).collect();
    expected.extend([14, 15]);
    source_example(ShflOp::Down { delta: 2 }, &expected);
}

#[test]
fn wrap_by_plus_2_rotates_left() {
    let mut expected: Vec<i32> = (2..16).collect();
    expected.extend([0, 1]);
    source_example(ShflOp::Wrap { offset: 2 }, &expected);
}

#[test]
fn wrap_by_minus_2_rotates_right() {
    let mut expected = vec![14, 15];
    expected.extend(0..14);
    source_example(ShflOp::Wrap { offset: -2 }, &expected);
}

#[test]
fn xor_1_swaps_neighbours() {
    let expected: Vec<i32> = (0..16).map(|i| i ^ 1).collect();
    source_example(ShflOp::Xor { lane_mask: 1 }, &expected);
}

#[test]
fn xor_array_of_4_with_mask_1_swaps_neighbours_arrays() {
    // 16 lanes holding 4 values each: lane L holds 4L..4L+3 and receives lane L^1's values.
    let input = iota(64);
    let expected: Vec<i32> = (0..64).map(|i| ((i / 4) ^ 1) * 4 + i % 4).collect();
    assert_eq!(
        cpu::shfl::shfl(ShflOp::Xor { lane_mask: 1 }, 16, 4, &input),
        expected
    );
    for_each_device(|d| {
        let got = shfl_xor_array_host(&*d.dev, 1, 16, &input).unwrap();
        assert_eq!(got, expected, "{}", d.label);
    });
}

#[test]
fn xor_beyond_width_reads_lower_segments_only() {
    // CUDA documents that a lane may read from an earlier segment but keeps its own value when
    // the source lies in a later one: width 8, mask 8 moves lanes 0..7 into 8..15.
    let input: Vec<i32> = (100..132).collect();
    let expected: Vec<i32> = (0..32)
        .map(|l| if l & 8 != 0 { 100 + (l ^ 8) } else { 100 + l })
        .collect();
    assert_eq!(
        cpu::shfl::shfl(ShflOp::Xor { lane_mask: 8 }, 8, 1, &input),
        expected
    );
    for_each_device(|d| {
        assert_eq!(
            shfl_host(&*d.dev, ShflOp::Xor { lane_mask: 8 }, 8, &input).unwrap(),
            expected,
            "{}",
            d.label
        );
    });
}

#[test]
fn partial_warp_lanes_take_part_as_zeros() {
    // 31 elements: lane 30 shifted down by 1 reads the missing lane 31, which holds zero.
    let input: Vec<u32> = (1..=31).collect();
    let out = cpu::shfl::shfl(ShflOp::Down { delta: 1 }, 32, 1, &input);
    assert_eq!(out[29], 31);
    assert_eq!(out[30], 0);
    for_each_device(|d| {
        assert_eq!(
            shfl_host(&*d.dev, ShflOp::Down { delta: 1 }, 32, &input).unwrap(),
            out,
            "{}",
            d.label
        );
    });
}

fn check_cases<T: Element>(cases: &[ShflCase], rng: &mut Rng) {
    for case in cases {
        let input: Vec<T> = rng.vec(case.n);
        let expected = cpu::shfl::shfl(case.op, case.width, case.segm, &input);
        check_on_every_device(&case.to_string(), &expected, |dev| {
            run_shfl(dev, case, &input)
        });
    }
}

fn random_cases_for(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let cases: Vec<ShflCase> = shfl_cases(false)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    assert!(cases.iter().any(|c| c.n == 1_000_003) && cases.iter().any(|c| c.n == 1));
    with_elem!(elem, check_cases(&cases, &mut rng));
}

#[test]
fn random_i32_all_ops_widths_lengths() {
    random_cases_for(ElemKind::I32);
}

#[test]
fn random_u32_all_ops_widths_lengths() {
    random_cases_for(ElemKind::U32);
}

#[test]
fn random_f32_all_ops_widths_lengths() {
    random_cases_for(ElemKind::F32);
}

#[test]
fn random_i64_all_ops_widths_lengths() {
    random_cases_for(ElemKind::I64);
}

#[test]
fn random_u64_all_ops_widths_lengths() {
    random_cases_for(ElemKind::U64);
}

#[test]
fn random_f64_all_ops_widths_lengths() {
    random_cases_for(ElemKind::F64);
}

#[test]
fn float_bit_patterns_move_unchanged() {
    // NaN payloads, infinities, signed zeros and subnormals are moved, never computed on.
    let specials: Vec<f32> = [
        0x7fc0_1234u32,
        0xffc0_0001,
        0x7f80_0000,
        0xff80_0000,
        0x8000_0000,
        0x0000_0001,
        0x7f7f_ffff,
    ]
    .iter()
    .map(|&b| f32::from_bits(b))
    .cycle()
    .take(70)
    .collect();
    let op = ShflOp::Xor { lane_mask: 3 };
    let expected = cpu::shfl::shfl(op, 32, 1, &specials);
    for_each_device(|d| {
        let got = shfl_host(&*d.dev, op, 32, &specials).unwrap();
        assert!(first_mismatch(&expected, &got).is_none(), "{}", d.label);
    });
}

fn assert_invalid(result: xwarp::Result<Vec<i32>>, param: &str) {
    match result {
        Err(Error::InvalidParameter { name, allowed, .. }) => {
            assert_eq!(name, param);
            assert!(!allowed.is_empty());
        }
        other => panic!("expected InvalidParameter({param}), got {other:?}"),
    }
}

#[test]
fn bad_width_is_a_typed_error() {
    for_each_device(|d| {
        for width in [0, 1, 3, 6, 33, 64] {
            assert_invalid(
                shfl_host(&*d.dev, ShflOp::Up { delta: 1 }, width, &iota(40)),
                "width",
            );
        }
    });
}

#[test]
fn bad_lane_arguments_are_typed_errors() {
    for_each_device(|d| {
        let dev = &*d.dev;
        for delta in [-1, 32, i32::MIN] {
            assert_invalid(shfl_host(dev, ShflOp::Up { delta }, 32, &iota(40)), "delta");
            assert_invalid(
                shfl_host(dev, ShflOp::Down { delta }, 32, &iota(40)),
                "delta",
            );
        }
        for lane_mask in [-1, 32] {
            assert_invalid(
                shfl_host(dev, ShflOp::Xor { lane_mask }, 32, &iota(40)),
                "lane_mask",
            );
            assert_invalid(
                shfl_xor_array_host(dev, lane_mask, 32, &iota(40)),
                "lane_mask",
            );
        }
        assert_invalid(
            shfl_host(dev, ShflOp::Broadcast { src_lane: -1 }, 32, &iota(40)),
            "src_lane",
        );
        for offset in [-32, 32] {
            assert_invalid(
                shfl_host(dev, ShflOp::Wrap { offset }, 32, &iota(40)),
                "offset",
            );
        }
        // The device keeps working after refusing bad input.
        assert_eq!(
            shfl_host(dev, ShflOp::Broadcast { src_lane: 3 }, 4, &iota(8)).unwrap(),
            [3, 3, 3, 3, 7, 7, 7, 7]
        );
    });
}

#[test]
fn empty_and_mismatched_buffers_are_typed_errors() {
    for_each_device(|d| {
        let dev = &*d.dev;
        assert!(matches!(
            shfl_host::<i32>(dev, ShflOp::Up { delta: 1 }, 32, &[]),
            Err(Error::EmptyInput { name: "input" })
        ));
        let src = DeviceVec::from_slice(dev, &iota(40)).unwrap();
        let mut dst = DeviceVec::<i32>::alloc(dev, 39).unwrap();
        dst.fill(dev, -7).unwrap();
        match shfl(dev, ShflOp::Up { delta: 1 }, 32, &src, &mut dst) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => {
                assert_eq!((name, expected, actual), ("output", 40, 39));
            }
            other => panic!("expected LengthMismatch, got {other:?}"),
        }
        // Nothing was written to the caller's output.
        assert_eq!(dst.to_vec(dev).unwrap(), vec![-7; 39]);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
