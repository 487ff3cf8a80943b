//! Test harness: one device per backend, shared by the tests of a binary.
//!
//! The Vulkan device is opened with the validation layer (synchronization validation too)
//! whenever the layer is installed, and every test fails on any validation message; under CI
//! (`CI` set) a missing layer or synchronization validation fails the tests. Which backends
//! are tested is set by `XWARP_TEST_BACKENDS`: unset, Vulkan, and CUDA whenever it is
//! available; set (`vulkan`, `cuda` or `vulkan,cuda`), exactly those, each required: a listed
//! backend that is missing fails the tests.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};
use xwarp::backend::DeviceSelector;
use xwarp::vulkan::{VulkanDevice, VulkanOptions};
use xwarp::Device;

pub struct TestDevice {
    pub label: String,
    pub dev: Arc<dyn Device>,
    pub vulkan: Option<Arc<VulkanDevice>>,
}

/// The backends `XWARP_TEST_BACKENDS` lists, `None` when unset.
fn listed() -> Option<Vec<String>> {
    let list: Vec<String> = std::env::var("XWARP_TEST_BACKENDS")
        .ok()?
        .split(',')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    for b in &list {
        assert!(
            b == "vulkan" || b == "cuda",
            "XWARP_TEST_BACKENDS: unknown backend `{b}` (vulkan, cuda)"
        );
    }
    Some(list)
}

pub fn open_vulkan() -> Arc<VulkanDevice> {
    let device = std::env::var("XWARP_TEST_VULKAN_DEVICE").ok().map(|s| {
        s.parse::<DeviceSelector>()
            .expect("XWARP_TEST_VULKAN_DEVICE")
    });
    let dev = VulkanDevice::new(&VulkanOptions {
        device,
        validation: true,
    })
    .expect("the Vulkan backend opens (install libvulkan1 and mesa-vulkan-drivers)");
    Arc::new(dev)
}

pub fn devices() -> &'static [TestDevice] {
    static DEVICES: OnceLock<Vec<TestDevice>> = OnceLock::new();
    DEVICES.get_or_init(|| {
        let listed = listed();
        let wants = |b: &str| listed.as_ref().is_none_or(|l| l.iter().any(|x| x == b));
        let required = |b: &str| listed.as_ref().is_some_and(|l| l.iter().any(|x| x == b));
        let mut list = Vec::new();
        if listed.is_none() || required("vulkan") {
            let vk = open_vulkan();
            eprintln!(
                "testing {} (validation layer {})",
                vk.info(),
                match (vk.validation_enabled(), vk.sync_validation_enabled()) {
                    (true, true) => "on, with synchronization validation",
                    (true, false) => "on, WITHOUT synchronization validation",
                    _ => "not installed",
                }
            );
            if std::env::var_os("CI").is_some() {
                assert!(
                    vk.sync_validation_enabled(),
                    "CI runs need the Vulkan validation layer with synchronization validation \
                     (Debian: vulkan-validationlayers)"
                );
            }
            list.push(TestDevice {
                label: format!("vulkan:{}", vk.info().name),
                dev: vk.clone(),
                vulkan: Some(vk),
            });
        }
        match xwarp::cuda::available() {
            _ if !wants("cuda") => eprintln!("CUDA not tested: XWARP_TEST_BACKENDS leaves it out"),
            Ok(_) => {
                let dev = Arc::new(xwarp::cuda::CudaDevice::new(0).expect("CUDA device 0 opens"));
                eprintln!("testing {}", dev.info());
                list.push(TestDevice {
                    label: format!("cuda:{}", dev.info().name),
                    dev,
                    vulkan: None,
                });
            }
            Err(e) => {
                assert!(!required("cuda"), "CUDA is required but unavailable: {e}");
                eprintln!("CUDA not tested: {e}");
            }
        }
        list
    })
}

/// Runs `f` on every test device, then fails on any Vulkan validation message.
pub fn for_each_device(mut f: impl FnMut(&TestDevice)) {
    for d in devices() {
        f(d);
        if let Some(vk) = &d.vulkan {
            let messages = vk.validation_messages();
            assert!(
                messages.is_empty(),
                "{}: validation messages:\n{}",
                d.label,
                messages.join("\n")
            );
        }
    }
}

/// A fresh seed per run, printed so a failure can be replayed with `XWARP_SEED`.
pub fn seed() -> u64 {
    let seed = std::env::var("XWARP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| xwarp::Rng::from_time().next_u64());
    eprintln!("seed {seed} (replay with XWARP_SEED={seed})");
    seed
}

/// Runs one case on every test device: each output must equal `want` bit for bit, and the
/// devices must agree with each other. A failure names the case, the device and the first
/// wrong index.
pub fn check_on_every_device<T: xwarp::Element>(
    case: &str,
    want: &[T],
    mut run: impl FnMut(&dyn Device) -> xwarp::Result<Vec<T>>,
) {
    use xwarp::validate::first_mismatch;
    let mut outputs = Vec::new();
    for_each_device(|d| {
        let got = run(&*d.dev).unwrap_or_else(|e| panic!("{}: {case}: {e}", d.label));
        if let Some(m) = first_mismatch(want, &got) {
            panic!("{}: {case}: {m}", d.label);
        }
        outputs.push(got);
    });
    for w in outputs.windows(2) {
        assert!(
            first_mismatch(&w[0], &w[1]).is_none(),
            "{case}: backends differ"
        );
    }
}

/// Floats that classify differently by their bits than by careless math: every power of two
/// from the smallest subnormal to the largest finite value with its neighbours (±1, +0.5,
/// ×1.5), halves, values just above 2^24 and 2^53, zeros of both signs, infinities, NaNs with
/// payloads, subnormals, and the values one driver classified wrongly. `f32` inputs take these
/// through `as f32` and their low 32 bits (so f32 gets its own subnormals and NaNs too).
pub fn float_edges() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        0.5,
        -1.5,
        2.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::from_bits(0x7ff0_0000_dead_beef),
        f64::from_bits(0xfff8_0000_0000_0001),
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        -f64::MIN_POSITIVE,
        f64::MAX,
        16_777_217.0,
        33_554_433.0,
        9_007_199_254_740_993.0,
        4_503_599_627_370_497.0,
        1_000_000_000_000_000.5,
        -16_777_217.25,
        8_388_609.5,
    ];
    for e in -1074..=1023 {
        let p = 2f64.powi(e);
        v.extend([p, -p, p + 1.0, p - 1.0, p + 0.5, -(p * 1.5), p + 2.0]);
    }
    v
}

/// [`float_edges`] as `f32`: each value rounded, and each value's low 32 bits as a float.
pub fn float_edges_f32() -> Vec<f32> {
    float_edges()
        .iter()
        .flat_map(|&v| [v as f32, f32::from_bits(v.to_bits() as u32)])
        .collect()
}
