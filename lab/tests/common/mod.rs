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
    pub cuda: Option<Arc<xwarp::cuda::CudaDevice>>,
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
        ..Default::default()
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
                cuda: None,
            });
        }
        match xwarp::cuda::available() {
            _ if !wants("cuda") => eprintln!("CUDA not tested: XWARP_TEST_BACKENDS leaves it out"),
            Ok(_) => {
                let dev = Arc::new(xwarp::cuda::CudaDevice::new(0).expect("CUDA device 0 opens"));
                eprintln!("testing {}", dev.info());
                list.push(TestDevice {
                    label: format!("cuda:{}", dev.info().name),
                    dev: dev.clone(),
                    vulkan: None,
                    cuda: Some(dev),
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

/// Fails, naming `what`, unless every word of the device's counters buffer
/// ([`xwarp::Device::counters`]) is zero: the contract every launch that uses it keeps. Devices
/// without one pass.
pub fn assert_counters_zero(dev: &dyn xwarp::Device, what: &str) {
    let Some(counters) = dev.counters() else {
        return;
    };
    let words = (counters.bytes() / 4) as usize;
    let view = xwarp::DeviceVec::<u32>::from_raw(counters.clone(), words).unwrap();
    let left = view.to_vec(dev).unwrap();
    if let Some(w) = left.iter().position(|&w| w != 0) {
        panic!("{what}: counters word {w} is {:#x} afterwards", left[w]);
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
    use xwarp_lab::validate::first_mismatch;
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

/// [`check_on_every_device`] comparing with `compare` (e.g.
/// [`xwarp_lab::validate::first_mismatch_nan_as_class`] for sums and products), with the devices
/// and `want` and with each other.
pub fn check_on_every_device_by<T: xwarp::Element>(
    case: &str,
    want: &[T],
    compare: xwarp_lab::validate::Compare<T>,
    mut run: impl FnMut(&dyn Device) -> xwarp::Result<Vec<T>>,
) {
    let mut outputs = Vec::new();
    for_each_device(|d| {
        let got = run(&*d.dev).unwrap_or_else(|e| panic!("{}: {case}: {e}", d.label));
        if let Some(m) = compare(want, &got) {
            panic!("{}: {case}: {m}", d.label);
        }
        outputs.push(got);
    });
    for w in outputs.windows(2) {
        assert!(compare(&w[0], &w[1]).is_none(), "{case}: backends differ");
    }
}

/// Whether every test device keeps subnormals of `elem`; where one flushes them, says so once
/// per type (its results are documented to differ on subnormal inputs and results, so the
/// tests' hard inputs leave subnormals out, and `subnormals.rs` does not check its results).
pub fn subnormals_kept(elem: xwarp::ElemKind) -> bool {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SAID: Mutex<Option<HashSet<xwarp::ElemKind>>> = Mutex::new(None);
    let flushing: Vec<&str> = devices()
        .iter()
        .filter(|d| xwarp_lab::validate::flushes_subnormals(d.dev.info(), elem))
        .map(|d| d.label.as_str())
        .collect();
    if flushing.is_empty() {
        return true;
    }
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.get_or_insert_with(HashSet::new).insert(elem) {
        eprintln!(
            "{} flush {elem} subnormals: {elem} inputs leave subnormals out, and the results of \
             the tests made of subnormals are not checked there",
            flushing.join(", ")
        );
    }
    false
}

/// The hard values ([`xwarp::HardValues`]) for `elem` that every test device computes like the
/// CPU reference: subnormals only where all keep them ([`subnormals_kept`]); NaN and ±∞ where
/// `specials`.
pub fn hard_values(elem: xwarp::ElemKind, specials: bool) -> xwarp::HardValues {
    let hard = if specials {
        xwarp::HardValues::ALL
    } else {
        xwarp::HardValues::FINITE
    };
    if subnormals_kept(elem) {
        hard
    } else {
        hard.without_subnormals()
    }
}

/// Whether `v` is a subnormal `f32` or `f64` (by its bits; never for integers).
pub fn is_subnormal<T: xwarp::Element>(v: T) -> bool {
    let b = v.to_bits64();
    match T::KIND {
        xwarp::ElemKind::F32 => {
            let m = b as u32 & 0x7fff_ffff;
            m != 0 && m < 0x0080_0000
        }
        xwarp::ElemKind::F64 => {
            let m = b & 0x7fff_ffff_ffff_ffff;
            m != 0 && m < 0x0010_0000_0000_0000
        }
        _ => false,
    }
}

/// The `f32` or `f64` with the given bits (the low 32 for `f32`).
pub fn float_from_bits<T: xwarp::Element>(bits: u64) -> T {
    if T::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, T>(&[bits as u32])[0]
    } else {
        bytemuck::cast_slice::<u64, T>(&[bits])[0]
    }
}

/// `v` rounded to `T` (`f32` or `f64`).
pub fn float_from_f64<T: xwarp::Element>(v: f64) -> T {
    if T::KIND.size() == 4 {
        float_from_bits((v as f32).to_bits() as u64)
    } else {
        float_from_bits(v.to_bits())
    }
}

/// Inputs of `n` elements of `T` (`f32` or `f64`) about subnormals, each with a description:
/// - without `products`, for sums, min and max: subnormals of every scale and of both signs,
///   one in eight a zero (so that min and max select subnormals); subnormals with the smallest
///   normals and zeros ([`xwarp_lab::validate::tiny_value`]); and normals only, all below 4 × the
///   smallest normal and of both signs, so that opposite ones leave subnormal differences;
/// - with `products`: normals like 1e-20 (`f32`; `f64`: 1e-160) one in sixteen among values
///   near ±1, so that a product of two of them is subnormal (1e-40, 1e-320) while every input
///   is normal; and subnormals among values near ±1, small and large normals
///   ([`xwarp_lab::validate::tiny_value`]).
pub fn subnormal_inputs<T: xwarp::Element>(
    n: usize,
    products: bool,
    rng: &mut xwarp::Rng,
) -> Vec<(&'static str, Vec<T>)> {
    let (frac, exp) = if T::KIND.size() == 4 {
        (23u32, 8u32)
    } else {
        (52, 11)
    };
    let sign = |rng: &mut xwarp::Rng| (rng.next_u64() & 1) << (frac + exp);
    if products {
        let small = if T::KIND.size() == 4 { 1e-20 } else { 1e-160 };
        let normal_pairs = (0..n)
            .map(|_| {
                let s = if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
                let m = 1.0 + rng.below(1 << 20) as f64 / (1u64 << 30) as f64;
                float_from_f64(s * m * if rng.below(16) == 0 { small } else { 1.0 })
            })
            .collect();
        let mixed = (0..n)
            .map(|_| xwarp_lab::validate::tiny_value(rng, true))
            .collect();
        vec![
            (
                "normals like 1e-20 (f64: 1e-160) among values near ±1",
                normal_pairs,
            ),
            (
                "subnormals, small and large normals among values near ±1",
                mixed,
            ),
        ]
    } else {
        let subnormals = (0..n)
            .map(|_| {
                let shift = rng.below(frac as u64);
                let m = ((rng.next_u64() & ((1u64 << frac) - 1)) >> shift).max(1);
                let zero = rng.below(8) == 0;
                float_from_bits(sign(rng) | if zero { 0 } else { m })
            })
            .collect();
        let tiny = (0..n)
            .map(|_| xwarp_lab::validate::tiny_value(rng, false))
            .collect();
        let normals = (0..n)
            .map(|_| {
                let e = 1 + rng.below(2);
                let bits = sign(rng) | e << frac | (rng.next_u64() & ((1u64 << frac) - 1));
                float_from_bits(bits)
            })
            .collect();
        vec![
            ("subnormals of every scale and zeros", subnormals),
            ("subnormals, the smallest normals and zeros", tiny),
            ("normals below 4x the smallest normal, both signs", normals),
        ]
    }
}

/// Every case of `family` (`unique`, `run_length` or `reduce_by_key`) that `keep` keeps
/// ([`xwarp_lab::validate::runs::runs_cases`]), on every device; 2^24 + 1 keys too with
/// `XWARP_LARGE=1`. The kept cases hold every length and every key pattern.
pub fn runs_cases_for(family: &str, keep: impl Fn(&xwarp_lab::validate::runs::RunsCase) -> bool) {
    use xwarp_lab::validate::runs::{case_on, runs_cases, KeyPattern, RUNS_LENGTHS};
    let mut rng = xwarp::Rng::new(seed());
    let large = std::env::var("XWARP_LARGE").is_ok_and(|v| v == "1");
    let cases: Vec<_> = runs_cases(family, false, large)
        .into_iter()
        .filter(|c| keep(c))
        .collect();
    assert!(RUNS_LENGTHS.iter().all(|&n| cases.iter().any(|c| c.n == n)));
    assert!(KeyPattern::ALL
        .iter()
        .all(|&p| cases.iter().any(|c| c.pattern == p)));
    let devs: Vec<(String, &dyn xwarp::Device)> = devices()
        .iter()
        .map(|d| (d.label.clone(), &*d.dev))
        .collect();
    for case in &cases {
        let r = case_on(&devs, case, &mut rng);
        assert!(r.passed(), "{r}");
    }
    // Validation messages fail the test too.
    for_each_device(|_| {});
}

/// A device opened for one test alone: its label, the device, and the Vulkan one kept for
/// its validation messages.
pub struct OwnDevice {
    pub label: String,
    pub dev: Arc<dyn Device>,
    pub vulkan: Option<Arc<VulkanDevice>>,
}

/// A device of its own for each tested device (the shared ones' epochs move with every other
/// test's calls).
pub fn own_devices() -> Vec<OwnDevice> {
    devices()
        .iter()
        .map(|d| {
            let vulkan = d.vulkan.as_ref().map(|_| open_vulkan());
            let dev: Arc<dyn Device> = match &vulkan {
                Some(v) => v.clone(),
                None => Arc::new(xwarp::cuda::CudaDevice::new(0).unwrap()),
            };
            OwnDevice {
                label: d.label.clone(),
                dev,
                vulkan,
            }
        })
        .collect()
}

/// Runs `body` on a device of its own for each tested device whose kernels keep a tile state
/// in one 64-bit word (CUDA's, and Vulkan's with 64-bit buffer atomics) in the device's epochs
/// buffer, with the tracker of its epochs; afterwards the device's counters buffer must be
/// zero and the Vulkan device must have reported no validation message.
pub fn on_epoch_devices(mut body: impl FnMut(&str, &dyn Device, &mut EpochTrack)) {
    for own in own_devices() {
        let dev = &*own.dev;
        let info = dev.info();
        let one_word = info.backend == xwarp::BackendKind::Cuda || info.int64_atomics;
        let Some(before) = epoch_words(dev).filter(|_| one_word) else {
            continue;
        };
        let label = own.label.as_str();
        let mut track = EpochTrack::new(&before);
        body(label, dev, &mut track);
        eprintln!("{label}: {} calls' epochs checked", track.calls);
        assert_counters_zero(dev, label);
        if let Some(vk) = &own.vulkan {
            let messages = vk.validation_messages();
            assert!(
                messages.is_empty(),
                "{label}: validation messages:\n{}",
                messages.join("\n")
            );
        }
    }
}

/// The device's epochs buffer as words: its counters, then its states' words.
pub fn epoch_words(dev: &dyn Device) -> Option<Vec<u32>> {
    let epochs = dev.epochs()?;
    let words = (epochs.bytes() / 4) as usize;
    let view = xwarp::DeviceVec::<u32>::from_raw(epochs.clone(), words).unwrap();
    Some(view.to_vec(dev).unwrap())
}

/// An inclusive `f32` sum scan of `a` under epoch wrap `wrap` into a poisoned output, checked
/// bit for bit against the CPU twin (`what` names it); returns [`epoch_words`] after it: a scan
/// between other calls that tag their states, taking the next epoch.
pub fn epoch_scan(dev: &dyn Device, what: &str, a: &[f32], wrap: u32) -> Vec<u32> {
    use xwarp::reduce::ReduceOp;
    use xwarp::scan::ScanKind;
    let want = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, a);
    let src = xwarp::DeviceVec::from_slice(dev, a).unwrap();
    let mut dst = xwarp::DeviceVec::<f32>::alloc(dev, a.len()).unwrap();
    dst.fill(dev, f32::NAN).unwrap();
    let tuning = xwarp::scan::Tuning {
        epoch_wrap: Some(wrap),
        ..Default::default()
    };
    xwarp::scan::device_scan_tuned(
        dev,
        ReduceOp::Sum,
        ScanKind::Inclusive,
        &src,
        &mut dst,
        tuning,
    )
    .unwrap();
    let got = dst.to_vec(dev).unwrap();
    assert!(
        got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(g, w)| g.to_bits() == w.to_bits()),
        "{what}: the scan"
    );
    epoch_words(dev).unwrap()
}

/// The high word of state `t` in [`epoch_words`].
pub fn epoch_state(words: &[u32], t: usize) -> u32 {
    words[(xwarp::device::EPOCH_HEADER_BYTES / 4) as usize + 2 * t + 1]
}

/// The low word (the value) of state `t` in [`epoch_words`].
pub fn epoch_value(words: &[u32], t: usize) -> u32 {
    words[(xwarp::device::EPOCH_HEADER_BYTES / 4) as usize + 2 * t]
}

/// What the epochs buffer must hold after each call that tags its states: the counters of
/// the device's epochs as the calls so far leave them.
pub struct EpochTrack {
    pub epoch: u32,
    pub scrub: u32,
    pub calls: usize,
}

impl EpochTrack {
    /// From the buffer's words before the first call.
    pub fn new(words: &[u32]) -> Self {
        EpochTrack {
            epoch: words[1],
            scrub: words[2],
            calls: 0,
        }
    }

    /// Checks `words`, the buffer after a call of `tiles` tiles with wrap `wrap`: the tile
    /// counter back at 0, the epoch advanced by one modulo the wrap, each tile's state tagged
    /// with the call's epoch as an inclusive prefix, the `EPOCH_SCRUB` states past the call's
    /// tiles from the last zeroing place zeroed and that place moved on. Returns the call's
    /// epoch.
    pub fn step(&mut self, words: &[u32], tiles: usize, wrap: u32, what: &str) -> u32 {
        let what = format!("{what} (call {} of {tiles} tiles, wrap {wrap})", self.calls);
        assert_eq!(words[0], 0, "{what}: the tile counter");
        let epoch = self.epoch;
        let next = if epoch + 1 >= wrap { 0 } else { epoch + 1 };
        assert_eq!(words[1], next, "{what}: the epoch");
        // Within a call no state goes back to an aggregate, even where the fallback publishes
        // one late.
        for t in 0..tiles {
            let hi = epoch_state(words, t);
            assert_eq!(hi, (epoch << 2) | 2, "{what}: tile {t}'s state {hi:#x}");
        }
        let end = self.scrub as usize + xwarp::scan::EPOCH_SCRUB as usize;
        for t in (self.scrub as usize..end).filter(|&t| t >= tiles) {
            assert_eq!(
                epoch_state(words, t),
                0,
                "{what}: state {t}, which it zeroes"
            );
        }
        let next_scrub = if end as u64 >= xwarp::device::EPOCH_TILES {
            0
        } else {
            end as u32
        };
        assert_eq!(words[2], next_scrub, "{what}: where the next call zeroes");
        self.epoch = next;
        self.scrub = next_scrub;
        self.calls += 1;
        epoch
    }

    /// With the least wrap: `call(i, n, wrap)` (one checked call of `n` elements, returning the
    /// epochs buffer's words after it and the call's tiles) of `big` elements, then as many
    /// calls of one tile (of `tile` elements) as bring its tag back, the big call's states found
    /// zeroed before it recurs, then `big` elements again; each call checked by [`Self::step`].
    pub fn wrap_round(
        &mut self,
        label: &str,
        big: usize,
        tile: usize,
        mut call: impl FnMut(usize, usize, u32) -> (Vec<u32>, usize),
    ) {
        let wrap = xwarp::scan::MIN_EPOCH_WRAP;
        let (words, big_tiles) = call(0, big, wrap);
        self.step(&words, big_tiles, wrap, label);
        for i in 1..wrap as usize {
            let (words, tiles) = call(i, 1 + i * 61 % tile, wrap);
            self.step(&words, tiles, wrap, label);
            if i == wrap as usize - 1 {
                // The big call's tag comes back next: every state it left is zeroed.
                for t in 1..big_tiles {
                    assert_eq!(
                        epoch_state(&words, t),
                        0,
                        "{label}: state {t} before its tag recurs"
                    );
                }
            }
        }
        let (words, tiles) = call(1, big, wrap);
        self.step(&words, tiles, wrap, label);
    }
}
