//! The memory roofline: copy and read of every type and awkward length against the CPU twin on
//! every backend, inputs longer than one binding, the fold layout, and bad input.

mod common;

use common::{check_on_every_device, devices, for_each_device, seed};
use xwarp::cpu;
use xwarp::roofline::{copy, read, read_folds, TILE_WORDS};
use xwarp::{DeviceVec, ElemKind, Element, Error, Rng};
use xwarp_lab::validate::roofline::{run_copy, run_read, RooflineCase, RooflineKernel, SIZES};
use xwarp_lab::validate::{first_mismatch, poison_value};
use xwarp_lab::with_elem;

/// Random values with no zero element, so that an unwritten or zeroed word shows.
fn nonzero<T: Element>(rng: &mut Rng, n: usize) -> Vec<T> {
    (0..n)
        .map(|_| loop {
            let v = T::random(rng);
            if v.to_bits64() != 0 {
                break v;
            }
        })
        .collect()
}

fn copy_all_lengths<T: Element>(rng: &mut Rng) {
    for n in SIZES {
        let input: Vec<T> = nonzero(rng, n);
        let case = RooflineCase {
            kernel: RooflineKernel::Copy,
            elem: T::KIND,
            n,
        };
        check_on_every_device(&case.to_string(), &cpu::roofline::copy(&input), |dev| {
            run_copy(dev, &input)
        });
    }
}

fn read_all_lengths<T: Element>(rng: &mut Rng) {
    for n in SIZES {
        let input: Vec<T> = nonzero(rng, n);
        let want = cpu::roofline::read(&input);
        assert_eq!(want.len(), read_folds(n, T::KIND));
        let poison = poison_value(&want);
        let case = RooflineCase {
            kernel: RooflineKernel::Read,
            elem: T::KIND,
            n,
        };
        check_on_every_device(&case.to_string(), &want, |dev| {
            run_read(dev, &input, poison)
        });
    }
}

#[test]
fn copy_every_type_and_length() {
    let mut rng = Rng::new(seed());
    for elem in ElemKind::ALL {
        with_elem!(elem, copy_all_lengths(&mut rng));
    }
}

#[test]
fn read_every_type_and_length() {
    let mut rng = Rng::new(seed());
    for elem in ElemKind::ALL {
        with_elem!(elem, read_all_lengths(&mut rng));
    }
}

#[test]
fn folds_are_per_tile_of_4096_words() {
    assert_eq!(TILE_WORDS, 4096);
    for (n, elem, folds) in [
        (1, ElemKind::U32, 1),
        (4096, ElemKind::I32, 1),
        (4097, ElemKind::F32, 2),
        (2048, ElemKind::U64, 1),
        (2049, ElemKind::F64, 2),
        (1_000_003, ElemKind::U32, 245),
    ] {
        assert_eq!(read_folds(n, elem), folds, "n={n} {elem}");
    }
    // Word w of the input lands in fold w / 4096; a u64 is two words, low half first.
    let mut input = vec![0u64; 2049];
    input[0] = 0x0000_0003_0000_0001;
    input[2047] = 0x10 << 32;
    input[2048] = 0x0000_0100_0000_0400;
    assert_eq!(
        cpu::roofline::read(&input),
        [0x1 ^ 0x3 ^ 0x10, 0x400 ^ 0x100]
    );
    for_each_device(|d| {
        assert_eq!(
            run_read(&*d.dev, &input, 7).unwrap(),
            [0x12, 0x500],
            "{}",
            d.label
        );
    });
}

/// Inputs longer than one binding run in several launches of whole tiles. Needs a device
/// whose binding range is small (llvmpipe: 128 MiB); skipped elsewhere.
#[test]
fn inputs_longer_than_one_binding() {
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let per_binding = dev.info().max_binding_bytes / 4;
        if per_binding > 1 << 26 {
            eprintln!(
                "{}: binding range of {per_binding} words; chunking not tested",
                d.label
            );
            return;
        }
        let n = per_binding as usize + 1003;
        let input: Vec<u32> = nonzero(&mut rng, n);
        let got = run_copy(dev, &input).unwrap();
        if let Some(m) = first_mismatch(&input, &got) {
            panic!("{} copy n={n}: {m}", d.label);
        }
        let want = cpu::roofline::read(&input);
        let got = run_read(dev, &input, poison_value(&want)).unwrap();
        if let Some(m) = first_mismatch(&want, &got) {
            panic!("{} read n={n}: {m}", d.label);
        }
        // 8-byte elements: half as many per binding.
        let input: Vec<f64> = nonzero(&mut rng, n / 2 + 3);
        let want = cpu::roofline::read(&input);
        let got = run_read(dev, &input, poison_value(&want)).unwrap();
        if let Some(m) = first_mismatch(&want, &got) {
            panic!("{} read f64 n={}: {m}", d.label, input.len());
        }
    });
}

#[test]
fn bad_input_is_a_typed_error() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let empty = DeviceVec::<f32>::alloc(dev, 0).unwrap();
        let mut empty_out = DeviceVec::<f32>::alloc(dev, 0).unwrap();
        assert!(matches!(
            copy(dev, &empty, &mut empty_out),
            Err(Error::EmptyInput { name: "input" })
        ));
        let mut no_folds = DeviceVec::<u32>::alloc(dev, 0).unwrap();
        assert!(matches!(
            read(dev, &empty, &mut no_folds),
            Err(Error::EmptyInput { name: "input" })
        ));

        let data: Vec<u64> = (1..=5000).map(|i| i * 0x1_0000_0003).collect();
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let mut short = DeviceVec::<u64>::alloc(dev, 4999).unwrap();
        short.fill(dev, 7).unwrap();
        match copy(dev, &src, &mut short) {
            Err(Error::LengthMismatch {
                name,
                expected,
                actual,
            }) => assert_eq!((name, expected, actual), ("output", 5000, 4999)),
            other => panic!("expected LengthMismatch, got {other:?}"),
        }
        assert_eq!(short.to_vec(dev).unwrap(), vec![7; 4999]);

        // 5000 u64 are 10000 words: three folds.
        for len in [2, 4] {
            let mut folds = DeviceVec::<u32>::alloc(dev, len).unwrap();
            folds.fill(dev, 9).unwrap();
            match read(dev, &src, &mut folds) {
                Err(Error::LengthMismatch {
                    name,
                    expected,
                    actual,
                }) => assert_eq!((name, expected, actual), ("folds", 3, len as u64)),
                other => panic!("expected LengthMismatch, got {other:?}"),
            }
            assert_eq!(folds.to_vec(dev).unwrap(), vec![9; len]);
        }
        // The device keeps working after refusing bad input.
        let mut folds = DeviceVec::<u32>::alloc(dev, 3).unwrap();
        read(dev, &src, &mut folds).unwrap();
        assert_eq!(folds.to_vec(dev).unwrap(), cpu::roofline::read(&data));
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}

/// The digest equals the CPU's on every type and awkward length, the output poisoned first; a
/// single changed word (first, middle, last, a tail word) changes both sums; bad output
/// lengths are refused.
#[test]
fn digest_equals_the_cpu_and_changes_with_any_word() {
    let mut rng = Rng::new(seed());
    fn check<T: Element>(rng: &mut Rng) {
        for n in [1usize, 3, 4, 5, 1023, 4097, 16_385, 1_000_003] {
            let input: Vec<T> = rng.vec(n);
            let want = cpu::roofline::digest(&input);
            for_each_device(|d| {
                let dev = &*d.dev;
                let src = DeviceVec::from_slice(dev, &input).unwrap();
                let mut out = DeviceVec::from_slice(dev, &[0xcdcd_cdcdu32; 2]).unwrap();
                xwarp::roofline::digest(dev, &src, &mut out).unwrap();
                let got = out.to_vec(dev).unwrap();
                assert_eq!(got, want, "{} {} n={n}", d.label, T::KIND);
                // One word changed anywhere changes both sums, on the device and the CPU.
                let words = n * T::KIND.size() / 4;
                for at in [0, words / 2, words - 1] {
                    let mut changed: Vec<u32> = bytemuck::cast_slice(&input).to_vec();
                    changed[at] ^= 1 << (at % 32);
                    let src = DeviceVec::from_slice(dev, &changed).unwrap();
                    let mut out = DeviceVec::<u32>::alloc(dev, 2).unwrap();
                    xwarp::roofline::digest(dev, &src, &mut out).unwrap();
                    let got = out.to_vec(dev).unwrap();
                    assert_eq!(got, cpu::roofline::digest(&changed), "{} n={n}", d.label);
                    assert!(
                        got[0] != want[0] && got[1] != want[1],
                        "{} word {at}",
                        d.label
                    );
                }
            });
        }
    }
    check::<u32>(&mut rng);
    check::<f32>(&mut rng);
    check::<u64>(&mut rng);
    for_each_device(|d| {
        let dev = &*d.dev;
        let src = DeviceVec::from_slice(dev, &[1u32, 2, 3]).unwrap();
        let mut out = DeviceVec::<u32>::alloc(dev, 3).unwrap();
        let e = xwarp::roofline::digest(dev, &src, &mut out).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    });
}
