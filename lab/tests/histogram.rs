//! Even-bin histogram: a worked example, randomized cases against the CPU reference on every
//! backend for every sample type with `u32` and `u64` counts (samples spread over and beyond the
//! range, all in one bin, on the bins' edges, all outside, hard values with NaN payloads, ±∞, ±0
//! and subnormals; bin counts from 1 to past shared memory; ranges the bins divide and ones they
//! do not), and every bad parameter refused with the counts untouched.

mod common;

use common::{devices, for_each_device, seed};
use xwarp::histogram::{histogram_even, histogram_even_host};
use xwarp::{cpu, DeviceVec, ElemKind, Error, Rng};
use xwarp_lab::validate::histogram::{
    histogram_case_on, histogram_cases, SamplePattern, BIN_COUNTS, HISTOGRAM_LENGTHS,
};

#[test]
fn five_bins_of_floats() {
    let samples = [0.5f32, 1.5, 1.7, 9.0, -1.0, f32::NAN, 10.0, 2.0];
    let want = [3u64, 1, 0, 0, 1];
    assert_eq!(cpu::histogram::histogram_even(&samples, 5, 0.0, 10.0), want);
    for_each_device(|d| {
        let got: Vec<u32> = histogram_even_host(&*d.dev, &samples, 5, 0.0, 10.0).unwrap();
        assert_eq!(got, [3, 1, 0, 0, 1], "{}", d.label);
        let got: Vec<u64> = histogram_even_host(&*d.dev, &[-3i64, 0, 5, 6], 3, -3, 6).unwrap();
        assert_eq!(got, [1, 1, 1], "{}", d.label);
    });
}

fn cases_of(elem: ElemKind) {
    let mut rng = Rng::new(seed());
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<_> = histogram_cases(false, large)
        .into_iter()
        .filter(|c| c.elem == elem)
        .collect();
    for n in HISTOGRAM_LENGTHS {
        for p in SamplePattern::ALL {
            assert!(cases.iter().any(|c| c.n == n && c.pattern == p));
        }
    }
    for bins in BIN_COUNTS {
        assert!(cases.iter().any(|c| c.bins == bins && c.wide_counts));
    }
    let devs: Vec<(String, &dyn xwarp::Device)> = devices()
        .iter()
        .map(|d| (d.label.clone(), &*d.dev))
        .collect();
    for case in &cases {
        let r = histogram_case_on(&devs, case, &mut rng);
        assert!(r.passed(), "{r}");
    }
    for_each_device(|_| {});
}

#[test]
fn samples_i32() {
    cases_of(ElemKind::I32);
}

#[test]
fn samples_u32() {
    cases_of(ElemKind::U32);
}

#[test]
fn samples_f32() {
    cases_of(ElemKind::F32);
}

#[test]
fn samples_i64() {
    cases_of(ElemKind::I64);
}

#[test]
fn samples_u64() {
    cases_of(ElemKind::U64);
}

#[test]
fn samples_f64() {
    cases_of(ElemKind::F64);
}

#[test]
fn bad_parameters_are_typed_errors_before_any_gpu_work() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let samples = DeviceVec::from_slice(dev, &[1.0f32, 2.0, 3.0]).unwrap();
        let mut counts = DeviceVec::from_slice(dev, &[7u32; 4]).unwrap();
        for (lower, upper, name) in [
            (2.0f32, 2.0, "lower"),
            (3.0, 2.0, "lower"),
            (f32::NAN, 2.0, "lower"),
            (0.0, f32::INFINITY, "upper"),
            (f32::MIN, f32::MAX, "upper"),
        ] {
            match histogram_even(dev, &samples, &mut counts, lower, upper) {
                Err(Error::InvalidParameter { name: n, .. }) => {
                    assert_eq!(n, name, "{lower} {upper}")
                }
                other => panic!("{}: [{lower}, {upper}): got {other:?}", d.label),
            }
        }
        let mut none = DeviceVec::<u64>::alloc(dev, 0).unwrap();
        match histogram_even(dev, &samples, &mut none, 0.0, 1.0) {
            Err(Error::InvalidParameter { name, allowed, .. }) => {
                assert_eq!(name, "counts.len()");
                assert!(allowed.contains("1..="), "{allowed}");
            }
            other => panic!("{}: zero bins: got {other:?}", d.label),
        }
        let mut alias = DeviceVec::<u32>::from_raw(samples.raw().clone(), 2).unwrap();
        assert!(matches!(
            histogram_even(dev, &samples, &mut alias, 0.0, 1.0),
            Err(Error::InvalidParameter { name: "counts", .. })
        ));
        let ints = DeviceVec::from_slice(dev, &[5u32]).unwrap();
        assert!(matches!(
            histogram_even(dev, &ints, &mut counts, 9, 9),
            Err(Error::InvalidParameter { name: "lower", .. })
        ));
        assert_eq!(counts.to_vec(dev).unwrap(), [7; 4], "{}", d.label);
        histogram_even(dev, &samples, &mut counts, 0.0, 4.0).unwrap();
        assert_eq!(counts.to_vec(dev).unwrap(), [0, 1, 1, 1], "{}", d.label);
    });
}

#[test]
fn every_backend_is_tested() {
    assert!(!devices().is_empty());
}

/// Calls whose totals fit the device's counters buffer count in one launch whose last workgroup
/// writes the counts and zeroes the words it used: each result must equal the CPU's (the counts
/// poisoned first) and the buffer be zero again after each call; bin counts from one to
/// `SHARED_BINS` (the most kept there) and one more (the clearing launch), `u32` and `u64`
/// counts, from one sample (one workgroup) to 256 workgroups, samples spread and all in one bin;
/// then one call recorded and replayed on new samples where the device records.
#[test]
fn calls_of_one_launch_leave_the_device_counters_zero() {
    use xwarp::histogram::SHARED_BINS;
    use xwarp_lab::validate::histogram::run_histogram;
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let bin_counts = [1, 7, 256, 2047, 2048, SHARED_BINS, SHARED_BINS + 1];
        let lengths = [1, 33, 4097, 1 << 17, (1 << 19) + 3];
        for (i, &bins) in bin_counts.iter().enumerate() {
            for (j, &n) in lengths.iter().enumerate() {
                let wide = (i + j) % 2 == 1;
                let one_bin = j % 3 == 2;
                let span = bins as i64 * 3;
                let samples: Vec<i32> = (0..n)
                    .map(|_| {
                        if one_bin {
                            span as i32 / 2
                        } else {
                            (rng.below(span as u64 + 20) as i64 - 10) as i32
                        }
                    })
                    .collect();
                let label = format!(
                    "{}: {bins} bins, n={n}, {} counts{}",
                    d.label,
                    if wide { "u64" } else { "u32" },
                    if one_bin { ", one bin" } else { "" }
                );
                let want = cpu::histogram::histogram_even(&samples, bins, 0, span as i32);
                let got = run_histogram(dev, &samples, bins, 0, span as i32, wide).unwrap();
                assert!(got == want, "{label}: wrong counts");
                common::assert_counters_zero(dev, &label);
            }
        }
        // One call recorded once, replayed on new samples.
        let (n, bins) = (100_003, 300);
        let src = DeviceVec::<f32>::alloc(dev, n).unwrap();
        let mut counts = DeviceVec::<u64>::alloc(dev, bins).unwrap();
        let rec = match dev.record(&mut || histogram_even(dev, &src, &mut counts, -1.0, 2.0)) {
            Ok(rec) => rec,
            Err(Error::Recording { .. }) => return,
            Err(e) => panic!("{}: recording a histogram: {e}", d.label),
        };
        for round in 0..3 {
            let samples: Vec<f32> = (0..n)
                .map(|_| rng.below(1 << 20) as f32 / (1 << 18) as f32 - 1.5)
                .collect();
            dev.write(src.raw(), 0, bytemuck::cast_slice(&samples))
                .unwrap();
            counts.fill(dev, 0xcdcd_cdcd_cdcd_cdcd).unwrap();
            let ticket = dev.replay(&rec).unwrap();
            dev.wait(ticket).unwrap();
            let want = cpu::histogram::histogram_even(&samples, bins, -1.0, 2.0);
            assert!(
                counts.to_vec(dev).unwrap() == want,
                "{}: replay {round}: wrong counts",
                d.label
            );
            common::assert_counters_zero(dev, &format!("{}: replay {round}", d.label));
        }
    });
}
