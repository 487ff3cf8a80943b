//! The shuffle stencil: both variants, f32 and f64, at lengths around the edges, a warp and a
//! workgroup, against the CPU reference bit for bit; every layer count per workgroup; exact
//! integer averages; the documented order; inputs longer than one binding; bad input.
//! Subnormal inputs and results: `lab/tests/subnormals.rs`.

mod common;

use common::{for_each_device, seed};
use xwarp::cpu::stencil::{moving_average as reference, StencilElement};
use xwarp::stencil::{moving_average, moving_average_host, StencilVariant};
use xwarp::{DeviceVec, Error, Rng};
use xwarp_lab::validate::stencil::{random_weights, run_stencil, SIZES};
use xwarp_lab::validate::{first_mismatch, poison_value};

/// Fresh weights and input per size in `sizes`; every device and both variants on the same
/// data, each against the reference and against each other. A failure names the layers per
/// workgroup the case took (`stencil::rows`).
fn every_variant_at<T: StencilElement>(sizes: &[usize]) {
    let mut rng = Rng::new(seed());
    for &n in sizes {
        let weights = random_weights::<T>(&mut rng);
        let input: Vec<T> = rng.vec(n);
        let want = reference(weights, &input);
        let poison = poison_value(&want);
        let mut outputs = Vec::new();
        for_each_device(|d| {
            for variant in StencilVariant::ALL {
                let rows = xwarp::stencil::rows(d.dev.info(), variant, T::KIND, n);
                let case = format!("{}: {variant} {} n={n} ({rows} layers)", d.label, T::KIND);
                let got = run_stencil(&*d.dev, variant, weights, &input, poison)
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                if let Some(m) = first_mismatch(&want, &got) {
                    panic!("{case}: {m}");
                }
                outputs.push(got);
            }
        });
        for w in outputs.windows(2) {
            assert!(
                first_mismatch(&w[0], &w[1]).is_none(),
                "n={n}: devices or variants differ"
            );
        }
    }
}

/// Each side of the lengths where the layers per workgroup change (`stencil::rows`: 2^22 and
/// 2^24; with `XWARP_LARGE=1` also 2^26, where the Vulkan shared-memory stencil with exact
/// subnormals takes more), so that every layer count each backend takes is checked.
fn layer_edges() -> Vec<usize> {
    let mut edges = vec![(1 << 22) - 1, (1 << 22) + 1, (1 << 24) - 1, (1 << 24) + 1];
    if std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1") {
        edges.extend([(1 << 26) - 1, (1 << 26) + 1]);
    }
    edges
}

#[test]
fn every_variant_and_size_f32() {
    every_variant_at::<f32>(&SIZES);
}

#[test]
fn every_variant_and_size_f64() {
    every_variant_at::<f64>(&SIZES);
}

#[test]
fn every_layer_count_f32() {
    every_variant_at::<f32>(&layer_edges());
}

#[test]
fn every_layer_count_f64() {
    every_variant_at::<f64>(&layer_edges());
}

/// Weights that are powers of two summing to 1 (1/8, 1/4, 1/4, 1/4, 1/8) average integers
/// exactly: a ramp stays a ramp, and random integers give (a + 2b + 2c + 2d + e) / 8. All
/// ones give the plain moving sum.
#[test]
fn integer_averages_are_exact() {
    let mut rng = Rng::new(seed());
    let n = 10_007;
    let smooth = [0.125, 0.25, 0.25, 0.25, 0.125];
    let ramp: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ints: Vec<i64> = (0..n)
        .map(|_| rng.below(1 << 16) as i64 - (1 << 15))
        .collect();
    let ints_f64: Vec<f64> = ints.iter().map(|&v| v as f64).collect();
    let at_edge = |i: usize| i < 2 || i + 2 >= n;
    for_each_device(|d| {
        let dev = &*d.dev;
        for variant in StencilVariant::ALL {
            let y = moving_average_host(dev, variant, smooth, &ramp).unwrap();
            for (i, &v) in y.iter().enumerate() {
                let want = if at_edge(i) { 0.0 } else { i as f32 };
                assert_eq!(v, want, "{} {variant}: ramp y[{i}]", d.label);
            }
            let y = moving_average_host(dev, variant, smooth.map(f64::from), &ints_f64).unwrap();
            let sum = moving_average_host(dev, variant, [1.0; 5], &ints_f64).unwrap();
            for i in 0..n {
                if at_edge(i) {
                    assert_eq!(
                        (y[i], sum[i]),
                        (0.0, 0.0),
                        "{} {variant}: edge {i}",
                        d.label
                    );
                    continue;
                }
                let x = &ints[i - 2..=i + 2];
                let weighted = x[0] + 2 * x[1] + 2 * x[2] + 2 * x[3] + x[4];
                assert_eq!(y[i], weighted as f64 / 8.0, "{} {variant}: y[{i}]", d.label);
                assert_eq!(
                    sum[i],
                    x.iter().sum::<i64>() as f64,
                    "{} {variant}: sum[{i}]",
                    d.label
                );
            }
        }
    });
}

/// Independent of the kernels' code: the documented order written out, which an FMA or
/// another association would break on random data of mixed magnitudes.
#[test]
fn float_order_is_the_documented_one() {
    let mut rng = Rng::new(seed());
    let n = 4099;
    let x: Vec<f32> = rng.vec(n);
    let w: [f32; 5] = std::array::from_fn(|_| rng.next_f64_mixed() as f32);
    let want: Vec<f32> = (0..n)
        .map(|i| {
            if i < 2 || i + 2 >= n {
                return 0.0;
            }
            let a = w[0] * x[i - 2];
            let b = a + w[1] * x[i - 1];
            let c = b + w[2] * x[i];
            let d = c + w[3] * x[i + 1];
            d + w[4] * x[i + 2]
        })
        .collect();
    // The same data with FMA contraction gives other bits somewhere: the check has teeth.
    let fused: Vec<f32> = (0..n)
        .map(|i| {
            if i < 2 || i + 2 >= n {
                return 0.0;
            }
            let b = w[1].mul_add(x[i - 1], w[0] * x[i - 2]);
            let c = w[2].mul_add(x[i], b);
            let d = w[3].mul_add(x[i + 1], c);
            w[4].mul_add(x[i + 2], d)
        })
        .collect();
    assert!(first_mismatch(&want, &fused).is_some());
    for_each_device(|d| {
        for variant in StencilVariant::ALL {
            let got = moving_average_host(&*d.dev, variant, w, &x).unwrap();
            if let Some(m) = first_mismatch(&want, &got) {
                panic!("{} {variant}: {m}", d.label);
            }
        }
    });
}

/// An input longer than one binding runs in chunks whose halos overlap; the outputs at the
/// chunk boundaries must see the neighbouring chunk. Needs a device whose binding range is
/// small (llvmpipe: 128 MiB); skipped elsewhere.
#[test]
fn inputs_longer_than_one_binding() {
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let per_binding = dev.info().max_binding_bytes / 8;
        if per_binding > 1 << 25 {
            eprintln!(
                "{}: binding range of {per_binding} f64 elements; chunking not tested",
                d.label
            );
            return;
        }
        let n = per_binding as usize + 1003;
        let weights = random_weights::<f64>(&mut rng);
        let input: Vec<f64> = rng.vec(n);
        let want = reference(weights, &input);
        let poison = poison_value(&want);
        for variant in StencilVariant::ALL {
            let got = run_stencil(dev, variant, weights, &input, poison).unwrap();
            if let Some(m) = first_mismatch(&want, &got) {
                panic!("{} {variant} n={n}: {m}", d.label);
            }
        }
    });
}

#[test]
fn bad_input_is_a_typed_error() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let w = [1.0f32; 5];
        for variant in StencilVariant::ALL {
            assert!(matches!(
                moving_average_host::<f32>(dev, variant, w, &[]),
                Err(Error::EmptyInput { name: "input" })
            ));
            let empty = DeviceVec::<f32>::alloc(dev, 0).unwrap();
            let mut empty_out = DeviceVec::<f32>::alloc(dev, 0).unwrap();
            assert!(matches!(
                moving_average(dev, variant, w, &empty, &mut empty_out),
                Err(Error::EmptyInput { name: "input" })
            ));
            let src = DeviceVec::from_slice(dev, &[1.0f32; 100]).unwrap();
            let mut short = DeviceVec::<f32>::alloc(dev, 99).unwrap();
            short.fill(dev, 7.0).unwrap();
            assert!(matches!(
                moving_average(dev, variant, w, &src, &mut short),
                Err(Error::LengthMismatch {
                    name: "output",
                    expected: 100,
                    actual: 99
                })
            ));
            // Nothing was launched.
            assert_eq!(short.to_vec(dev).unwrap(), [7.0; 99], "{}", d.label);
            // Still working.
            let y = moving_average_host(dev, variant, w, &[1.0f32; 100]).unwrap();
            assert_eq!(&y[..3], &[0.0, 0.0, 5.0], "{}", d.label);
            assert_eq!(&y[97..], &[5.0, 0.0, 0.0], "{}", d.label);
        }
        assert_eq!(
            "shared".parse::<StencilVariant>().unwrap(),
            StencilVariant::SharedMemory
        );
        assert!(matches!(
            "smem".parse::<StencilVariant>(),
            Err(Error::InvalidParameter {
                name: "variant",
                ..
            })
        ));
    });
}
