//! The reduction ladder: every rung at every block size the device allows, at awkward lengths,
//! for every integer type, against the CPU reference (per-block partials and the finished
//! sum, bit for bit, backends against each other), plus the input left untouched, wrapping
//! overflow and bad parameters.

mod common;

use common::{for_each_device, seed};
use xwarp::cpu::ladder::{self as cpu, LadderElem};
use xwarp::ladder::{self, LadderKernel, BLOCKS};
use xwarp::{DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::ladder::{ladder_cases, run_ladder_on};
use xwarp_lab::validate::{first_mismatch, poison_value};

const LENGTHS: [usize; 7] = [1, 2, 3, 31, 33, 1000, 1_000_003];

/// Every rung × block × length for one type, on every device; each input is uploaded once and
/// shared by all rungs and blocks (it must stay unmodified).
fn every_rung<T: LadderElem>() {
    let mut rng = Rng::new(seed());
    for n in LENGTHS {
        let input: Vec<T> = (0..n).map(|_| T::random(&mut rng)).collect();
        let total = cpu::reduce(&input);
        let mut outputs: Vec<Vec<Vec<T>>> = Vec::new();
        for_each_device(|d| {
            let dev = &*d.dev;
            let src = DeviceVec::from_slice(dev, &input).unwrap();
            let mut got_all = Vec::new();
            for kernel in LadderKernel::ALL {
                let blocks = ladder::blocks::<T>(dev.info(), kernel);
                // 64..=256 are open on every device these tests run on (subgroups up to 64).
                assert!(
                    blocks.starts_with(&[64, 128, 256]),
                    "{}: {blocks:?}",
                    d.label
                );
                for block in blocks {
                    let case = format!("{}: {kernel} block={block} {} n={n}", d.label, T::KIND);
                    let mut want = cpu::block_sums(kernel, block, &input);
                    want.push(total);
                    let got = run_ladder_on(dev, kernel, block, &src, poison_value(&want))
                        .unwrap_or_else(|e| panic!("{case}: {e}"));
                    if let Some(m) = first_mismatch(&want, &got) {
                        panic!("{case}: {m}");
                    }
                    got_all.push(got);
                }
            }
            let after = src.to_vec(dev).unwrap();
            assert!(after == input, "{}: n={n}: the input was modified", d.label);
            outputs.push(got_all);
        });
        for w in outputs.windows(2) {
            assert!(w[0] == w[1], "n={n}: backends differ");
        }
    }
}

#[test]
fn every_rung_block_and_length_i32() {
    every_rung::<i32>();
}

#[test]
fn every_rung_block_and_length_u32() {
    every_rung::<u32>();
}

#[test]
fn every_rung_block_and_length_i64() {
    every_rung::<i64>();
}

#[test]
fn every_rung_block_and_length_u64() {
    every_rung::<u64>();
}

#[test]
fn sums_wrap_on_overflow() {
    let big = vec![i32::MAX; 1001];
    let ubig = vec![u64::MAX - 2; 5000];
    for_each_device(|d| {
        let dev = &*d.dev;
        for kernel in LadderKernel::ALL {
            let s = ladder::reduce_host(dev, kernel, 128, &big).unwrap();
            assert_eq!(s, i32::MAX.wrapping_mul(1001), "{}: {kernel}", d.label);
            let s = ladder::reduce_host(dev, kernel, 64, &ubig).unwrap();
            assert_eq!(
                s,
                (u64::MAX - 2).wrapping_mul(5000),
                "{}: {kernel}",
                d.label
            );
        }
    });
}

#[test]
fn partials_cover_tiles_of_block_times_items() {
    let input: Vec<u32> = (0..3000).collect();
    for_each_device(|d| {
        let dev = &*d.dev;
        let p = ladder::block_sums_host(dev, LadderKernel::Unrolling4, 256, &input).unwrap();
        // Tiles of 1024 elements: 0..1024, 1024..2048, 2048..3000.
        let tile = |a: u32, b: u32| (a..b).sum::<u32>();
        assert_eq!(
            p,
            vec![tile(0, 1024), tile(1024, 2048), tile(2048, 3000)],
            "{}",
            d.label
        );
        let p = ladder::block_sums_host(dev, LadderKernel::Shfl, 1024, &input).unwrap();
        assert_eq!(
            p,
            vec![tile(0, 1024), tile(1024, 2048), tile(2048, 3000)],
            "{}",
            d.label
        );
    });
}

#[test]
fn names_parse_and_partials_count() {
    for k in LadderKernel::ALL {
        assert_eq!(k.name().parse::<LadderKernel>().unwrap(), k);
        assert_eq!(k.book_name().parse::<LadderKernel>().unwrap(), k);
        assert!(k.name().starts_with("reduce_"));
        assert_eq!(k.partials(64, 1), 1);
        assert_eq!(k.partials(64, 64 * k.items() + 1), 2);
    }
    assert!(matches!(
        "reduce_bogus".parse::<LadderKernel>(),
        Err(Error::InvalidParameter { name: "kernel", .. })
    ));
    // The validate cases reach every rung, block 512 and the GPU-sized lengths.
    let large = ladder_cases(false, true);
    for k in LadderKernel::ALL {
        for n in [(1 << 24) + 1, 1 << 28] {
            assert!(large
                .iter()
                .any(|c| c.kernel == k && c.n == n && c.block == 512 && c.elem == ElemKind::I32));
        }
    }
}

#[test]
fn bad_parameters_are_typed_errors() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let data = vec![1i32; 100];
        for kernel in LadderKernel::ALL {
            for block in [0, 32, 96, 100, 2048, 4096] {
                let e = ladder::reduce_host(dev, kernel, block, &data).unwrap_err();
                assert!(
                    matches!(e, Error::InvalidParameter { name: "block", .. }),
                    "{}: {kernel} block={block}: {e}",
                    d.label
                );
            }
            let e = ladder::reduce_host::<i32>(dev, kernel, 256, &[]).unwrap_err();
            assert!(matches!(e, Error::EmptyInput { name: "input" }), "{e}");
            let e = ladder::block_sums_host::<u64>(dev, kernel, 256, &[]).unwrap_err();
            assert!(matches!(e, Error::EmptyInput { name: "input" }), "{e}");
        }
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let empty = DeviceVec::<i32>::alloc(dev, 0).unwrap();
        let mut out = DeviceVec::<i32>::alloc(dev, 0).unwrap();
        let e = ladder::reduce(dev, LadderKernel::Smem, 64, &src, &mut out).unwrap_err();
        assert!(
            matches!(e, Error::InvalidParameter { name: "output", .. }),
            "{e}"
        );
        let e = ladder::reduce(dev, LadderKernel::Smem, 64, &empty, &mut out).unwrap_err();
        assert!(matches!(e, Error::EmptyInput { name: "input" }), "{e}");
        let mut wrong = DeviceVec::<i32>::alloc(dev, 3).unwrap();
        let e =
            ladder::block_sums(dev, LadderKernel::Interleaved, 64, &src, &mut wrong).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    name: "output",
                    expected: 2,
                    actual: 3
                }
            ),
            "{e}"
        );
        // The sum goes to index 0 and nothing else is touched.
        let mut out = DeviceVec::from_slice(dev, &[7i32, 8, 9]).unwrap();
        ladder::reduce(dev, LadderKernel::CompleteUnroll, 1024, &src, &mut out).unwrap();
        assert_eq!(out.to_vec(dev).unwrap(), vec![100, 8, 9], "{}", d.label);
    });
    assert!(BLOCKS.iter().all(|b| b.is_power_of_two()));
}
