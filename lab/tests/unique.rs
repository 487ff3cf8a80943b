//! Unique: a worked example, randomized cases against the CPU reference on every backend for
//! every key type and pattern (every key distinct, all equal, short and long runs, hard values
//! repeated: NaN payloads, ±0, subnormals) at every awkward length, the look-back's fallback
//! forced by spin 0, and every bad parameter refused with the outputs untouched.

mod common;

use common::{devices, for_each_device};
use xwarp::unique::{unique, unique_host};
use xwarp::{cpu, DeviceVec, ElemKind, Error};

#[test]
fn first_key_of_each_run() {
    let keys = [1u32, 1, 2, 2, 2, 1, 3];
    assert_eq!(cpu::runs::unique(&keys), [1, 2, 1, 3]);
    let floats = [0.0f32, -0.0, -0.0, f32::NAN, f32::NAN, 1.0];
    for_each_device(|d| {
        assert_eq!(
            unique_host(&*d.dev, &keys).unwrap(),
            [1, 2, 1, 3],
            "{}",
            d.label
        );
        // Compared by bits: -0.0 is not 0.0.
        let got = unique_host(&*d.dev, &floats).unwrap();
        let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
        assert_eq!(
            bits,
            [0, 0x8000_0000, f32::NAN.to_bits(), 1f32.to_bits()],
            "{}",
            d.label
        );
    });
}

#[test]
fn keys_i32() {
    common::runs_cases_for("unique", |c| c.key == ElemKind::I32);
}

#[test]
fn keys_u32() {
    common::runs_cases_for("unique", |c| c.key == ElemKind::U32);
}

#[test]
fn keys_f32() {
    common::runs_cases_for("unique", |c| c.key == ElemKind::F32);
}

#[test]
fn keys_i64() {
    common::runs_cases_for("unique", |c| c.key == ElemKind::I64);
}

#[test]
fn keys_u64() {
    common::runs_cases_for("unique", |c| c.key == ElemKind::U64);
}

#[test]
fn keys_f64() {
    common::runs_cases_for("unique", |c| c.key == ElemKind::F64);
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let keys = DeviceVec::from_slice(dev, &[3u64, 3, 4]).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[99u64]).unwrap();
        let mut short = DeviceVec::from_slice(dev, &[7u64; 2]).unwrap();
        match unique(dev, &keys, &mut short, &mut count) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => assert_eq!((name, expected, actual), ("keys_out", 3, 2)),
            other => panic!(
                "{}: expected LengthMismatch(keys_out), got {other:?}",
                d.label
            ),
        }
        let mut out = DeviceVec::from_slice(dev, &[7u64; 3]).unwrap();
        let mut none = DeviceVec::<u64>::alloc(dev, 0).unwrap();
        assert!(matches!(
            unique(dev, &keys, &mut out, &mut none),
            Err(Error::LengthMismatch {
                name: "num_runs",
                ..
            })
        ));
        let mut alias = DeviceVec::<u64>::from_raw(keys.raw().clone(), 3).unwrap();
        assert!(matches!(
            unique(dev, &keys, &mut alias, &mut count),
            Err(Error::InvalidParameter {
                name: "keys_out",
                ..
            })
        ));
        let mut count_alias = DeviceVec::<u64>::from_raw(out.raw().clone(), 1).unwrap();
        assert!(matches!(
            unique(dev, &keys, &mut out, &mut count_alias),
            Err(Error::InvalidParameter {
                name: "num_runs",
                ..
            })
        ));
        assert_eq!(short.to_vec(dev).unwrap(), [7, 7], "{}", d.label);
        assert_eq!(out.to_vec(dev).unwrap(), [7, 7, 7], "{}", d.label);
        assert_eq!(count.to_vec(dev).unwrap(), [99], "{}", d.label);
        assert_eq!(
            unique_host(dev, &[3u64, 3, 4]).unwrap(),
            [3, 4],
            "{}",
            d.label
        );
    });
}

#[test]
fn empty_input_gives_no_runs() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let keys = DeviceVec::<f32>::alloc(dev, 0).unwrap();
        let mut out = DeviceVec::from_slice(dev, &[5.0f32]).unwrap();
        let mut count = DeviceVec::from_slice(dev, &[77u64]).unwrap();
        unique(dev, &keys, &mut out, &mut count).unwrap();
        assert_eq!(count.to_vec(dev).unwrap(), [0], "{}", d.label);
        assert_eq!(out.to_vec(dev).unwrap(), [5.0], "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}
