//! Segmented reduce: a worked example, randomized cases against the CPU reference on every
//! backend for every operator and type over every segment layout (empty segments, segments of
//! one, both sides of the one-invocation limit, tiles and partial tiles, one segment of the
//! whole input, gaps), one segment of 2^24 + 1 elements (three levels of tiles), and every bad
//! parameter refused with the output untouched.

mod common;

use common::{devices, for_each_device, seed};
use xwarp::reduce::ReduceOp;
use xwarp::segmented_reduce::{segmented_reduce, segmented_reduce_host, Segments};
use xwarp::{cpu, DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::segmented_reduce::{
    segmented_case_on, segmented_cases, Layout, SegmentedCase, SEGMENTED_LENGTHS,
};

#[test]
fn sums_of_three_segments() {
    let input = [1i32, 2, 3, 4, 5, 6];
    let offsets = [0, 2, 2, 6];
    assert_eq!(
        cpu::segmented_reduce::segmented_reduce(ReduceOp::Sum, &input, &offsets),
        [3, 0, 18]
    );
    for_each_device(|d| {
        let got = segmented_reduce_host(&*d.dev, ReduceOp::Sum, &input, &offsets).unwrap();
        assert_eq!(got, [3, 0, 18], "{}", d.label);
        // An empty segment gives the identity: -0.0 for float sums, NaN for min.
        let got = segmented_reduce_host(&*d.dev, ReduceOp::Sum, &[1.0f32], &[0, 0, 1]).unwrap();
        assert_eq!(got[0].to_bits(), (-0.0f32).to_bits(), "{}", d.label);
        let got = segmented_reduce_host(&*d.dev, ReduceOp::Min, &[1.0f64], &[1, 1]).unwrap();
        assert_eq!(got[0].to_bits(), 0x7ff8_0000_0000_0000, "{}", d.label);
    });
}

fn cases_of(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<SegmentedCase> = segmented_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    for n in SEGMENTED_LENGTHS {
        assert!(cases.iter().any(|c| c.n == n && c.layout == Layout::One));
    }
    for layout in Layout::ALL {
        assert!(cases.iter().any(|c| c.layout == layout));
    }
    let devs: Vec<(String, &dyn xwarp::Device)> = devices()
        .iter()
        .map(|d| (d.label.clone(), &*d.dev))
        .collect();
    for case in &cases {
        let r = segmented_case_on(&devs, case, &mut rng);
        assert!(r.passed(), "{r}");
    }
    for_each_device(|_| {});
}

#[test]
fn i32_every_operator_and_layout() {
    cases_of(ElemKind::I32);
}

#[test]
fn u32_every_operator_and_layout() {
    cases_of(ElemKind::U32);
}

#[test]
fn f32_every_operator_and_layout() {
    cases_of(ElemKind::F32);
}

#[test]
fn i64_every_operator_and_layout() {
    cases_of(ElemKind::I64);
}

#[test]
fn u64_every_operator_and_layout() {
    cases_of(ElemKind::U64);
}

#[test]
fn f64_every_operator_and_layout() {
    cases_of(ElemKind::F64);
}

/// One segment of 2^24 + 2 elements: its tile totals (4097) are reduced by a second level and
/// those (two) by a third, as the device reduce does; before it a tiny and an empty segment.
#[test]
fn one_huge_segment_takes_three_levels() {
    let mut rng = Rng::new(seed());
    let n = (1 << 24) + 3;
    let input: Vec<i32> = (0..n).map(|_| rng.next_u64() as i32).collect();
    let offsets = [0, 1, 1, n as u32];
    let want = cpu::segmented_reduce::segmented_reduce(ReduceOp::Sum, &input, &offsets);
    for_each_device(|d| {
        let got = segmented_reduce_host(&*d.dev, ReduceOp::Sum, &input, &offsets).unwrap();
        assert_eq!(got, want, "{}", d.label);
    });
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        for (offsets, value) in [
            (&[][..], "no offsets"),
            (&[0, 5][..], "offsets[1] = 5"),
            (&[0, 3, 2, 4][..], "offsets[2] = 2 below offsets[1] = 3"),
        ] {
            match Segments::new(dev, offsets, 4) {
                Err(Error::InvalidParameter {
                    name,
                    value: v,
                    allowed,
                }) => {
                    assert_eq!((name, v.as_str()), ("offsets", value), "{}", d.label);
                    assert!(
                        allowed.contains("..=") || allowed.contains("at least"),
                        "{allowed}"
                    );
                }
                other => panic!("{}: {offsets:?}: got {other:?}", d.label),
            }
        }
        let input = DeviceVec::from_slice(dev, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let segments = Segments::new(dev, &[0, 1, 4], 4).unwrap();
        let mut out = DeviceVec::from_slice(dev, &[9.0f32; 2]).unwrap();
        let short = DeviceVec::from_slice(dev, &[1.0f32; 3]).unwrap();
        assert!(matches!(
            segmented_reduce(dev, ReduceOp::Sum, &short, &segments, &mut out),
            Err(Error::LengthMismatch { name: "input", .. })
        ));
        let mut three = DeviceVec::from_slice(dev, &[9.0f32; 3]).unwrap();
        assert!(matches!(
            segmented_reduce(dev, ReduceOp::Sum, &input, &segments, &mut three),
            Err(Error::LengthMismatch { name: "output", .. })
        ));
        assert!(matches!(
            segmented_reduce(dev, ReduceOp::Or, &input, &segments, &mut out),
            Err(Error::InvalidParameter { name: "op", .. })
        ));
        let mut alias = DeviceVec::<f32>::from_raw(input.raw().clone(), 2).unwrap();
        assert!(matches!(
            segmented_reduce(dev, ReduceOp::Sum, &input, &segments, &mut alias),
            Err(Error::InvalidParameter { name: "output", .. })
        ));
        assert_eq!(out.to_vec(dev).unwrap(), [9.0; 2], "{}", d.label);
        assert_eq!(three.to_vec(dev).unwrap(), [9.0; 3], "{}", d.label);
        segmented_reduce(dev, ReduceOp::Max, &input, &segments, &mut out).unwrap();
        assert_eq!(out.to_vec(dev).unwrap(), [1.0, 4.0], "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
