//! Subnormal floats in every float family, on every device: reductions (both warp forms, block
//! and device; sum, product, min and max), scans (warp, block and device; inclusive and
//! exclusive; sum, min and max), both stencil variants, the compaction and vote predicates
//! that compare, and the float histogram's bins, on inputs made of subnormals and on normal inputs whose exact results are
//! subnormal ([`common::subnormal_inputs`]), and single sums, products, minima and maxima of
//! operand pairs drawn to reach every path of the exact arithmetic (ties in the subnormal
//! range, its edges, cancellation, overflow, infinities, NaN): bit for bit against the CPU
//! reference (a sum or product that ends in NaN: any NaN) on every device that keeps
//! subnormals, Vulkan devices that keep them in their kernels (`Subnormals::Emulated`)
//! included.
//!
//! Where the Vulkan device under test keeps subnormals in its exact kernels, every case also
//! runs on a second Vulkan device opened with `SubnormalMode::Flush`, whose kernels flush
//! operands and results as a driver that flushes does: for each family, operator, scope and
//! type some case must come out wrong there. So the inputs reach the arithmetic that the exact
//! kernels replace, and each of those results the device under test gets right is one that
//! flushing gets wrong.
//!
//! `XWARP_SUBNORMALS` sets the Vulkan device under test's mode: `emulate` runs the exact kernels
//! on any device (CI runs this binary so on llvmpipe at subgroup sizes 4, 8 and 16), and on a
//! driver that flushes (NVIDIA's) they are the default; `flush` makes the device under test the
//! one that flushes, and then each family, operator, scope and type must come out wrong on it.

mod common;

use common::{devices, for_each_device, seed, TestDevice};
use std::collections::BTreeMap;
use std::fmt::Display;
use std::sync::{Mutex, OnceLock};
use xwarp::cpu::stencil::{moving_average as stencil_reference, StencilElement, POINTS};
use xwarp::reduce::{ReduceOp, WarpForm};
use xwarp::scan::{ScanKind, Tuning};
use xwarp::stencil::StencilVariant;
use xwarp::vote::PredicateElement;
use xwarp::vulkan::{SubnormalMode, VulkanDevice, VulkanOptions};
use xwarp::{Device, ElemKind, Element, HardValues, Rng, Subnormals};
use xwarp_lab::validate::compact::{comparable, expected_output, run_compact};
use xwarp_lab::validate::reduce::{comparison, ReduceCase, ReduceInput, Scope as ReduceScope};
use xwarp_lab::validate::scan::{run_scan, ScanCase, Scope as ScanScope};
use xwarp_lab::validate::vote::{hard_case_input, run_vote, PredSpec};
use xwarp_lab::validate::{first_mismatch, first_mismatch_nan_as_class, poison_value};
use xwarp_lab::validate::{Compare, HardInput};

/// The lengths every family runs at (the longest only where the order spans workgroups).
const SIZES: [usize; 5] = [1, 31, 33, 4097, 1_000_003];
const LONG: usize = 1_000_003;

/// Whether the device under test's kernels flush because `XWARP_SUBNORMALS=flush` says so.
fn flush_under_test() -> bool {
    SubnormalMode::from_env().expect("XWARP_SUBNORMALS") == SubnormalMode::Flush
}

/// The Vulkan device whose kernels flush subnormals (`SubnormalMode::Flush`), opened once, where
/// the Vulkan device under test keeps subnormals in its exact kernels (`XWARP_SUBNORMALS=emulate`,
/// or a driver that flushes): what those kernels change is checked against it.
fn flushing() -> Option<&'static VulkanDevice> {
    static DEV: OnceLock<Option<VulkanDevice>> = OnceLock::new();
    DEV.get_or_init(|| {
        let emulated = devices().iter().any(|d| {
            let info = d.dev.info();
            d.vulkan.is_some()
                && (info.subnormals_f32 == Subnormals::Emulated
                    || info.subnormals_f64 == Subnormals::Emulated)
        });
        if !emulated {
            return None;
        }
        let device = std::env::var("XWARP_TEST_VULKAN_DEVICE")
            .ok()
            .map(|s| s.parse().expect("XWARP_TEST_VULKAN_DEVICE"));
        let dev = VulkanDevice::new(&VulkanOptions {
            device,
            validation: true,
            subnormals: Some(SubnormalMode::Flush),
        })
        .expect("the Vulkan device opens with SubnormalMode::Flush");
        assert_eq!(dev.info().subnormals_f32, Subnormals::Flushed);
        Some(dev)
    })
    .as_ref()
}

/// Per label (a family, operator, scope and type): the cases run, and those whose result came
/// out wrong on a device that flushes in its kernels.
#[derive(Default)]
struct Flushes {
    labels: BTreeMap<String, (usize, usize)>,
}

impl Flushes {
    /// Runs one case on every test device and on the flushing one. Devices that keep
    /// subnormals must give `want` (by `compare`); a device under test that flushes in its
    /// kernels, and the flushing device, count a wrong result for `label`.
    fn check<R: Element>(
        &mut self,
        (label, case): (&str, &str),
        elem: ElemKind,
        want: &[R],
        compare: Compare<R>,
        mut run: impl FnMut(&dyn Device) -> xwarp::Result<Vec<R>>,
    ) {
        let entry = self.labels.entry(label.to_string()).or_default();
        entry.0 += 1;
        for_each_device(|d| {
            let got = run(&*d.dev).unwrap_or_else(|e| panic!("{}: {case}: {e}", d.label));
            let wrong = compare(want, &got);
            if flushes(d, elem) {
                entry.1 += usize::from(wrong.is_some());
            } else if let Some(m) = wrong {
                panic!("{}: {case}: {m}", d.label);
            }
        });
        if let Some(f) = flushing() {
            let got = run(f).unwrap_or_else(|e| panic!("flushing Vulkan device: {case}: {e}"));
            entry.1 += usize::from(compare(want, &got).is_some());
            let messages = f.validation_messages();
            assert!(messages.is_empty(), "validation: {}", messages.join("\n"));
        }
    }

    /// [`Flushes::check`] of a case whose results are floats, under [`label`]`(case)`, each
    /// device's output poisoned first (`run` takes the poison); returns how many of the
    /// expected results are subnormal.
    fn check_floats<T: Element>(
        &mut self,
        (case, what): (&impl Display, &str),
        want: &[T],
        compare: Compare<T>,
        mut run: impl FnMut(&dyn Device, T) -> xwarp::Result<Vec<T>>,
    ) -> usize {
        let poison = poison_value(want);
        let name = format!("{case} ({what})");
        self.check((&label(case), &name), T::KIND, want, compare, |dev| {
            run(dev, poison)
        });
        want.iter().filter(|&&v| common::is_subnormal(v)).count()
    }

    /// Every label had a case that flushing got wrong, where a device flushed in its kernels.
    fn assert_flushing_changes_each(&self) {
        if flushing().is_none() && !flush_under_test() {
            eprintln!(
                "no device keeps subnormals in its kernels, none flushes them there: flushed \
                 results not checked"
            );
            return;
        }
        for (label, (cases, wrong)) in &self.labels {
            eprintln!("{label}: {wrong} of {cases} cases wrong where flushed");
            assert!(
                *wrong > 0,
                "{label}: no case came out wrong where subnormals are flushed (of {cases}): the \
                 inputs do not reach the subnormal arithmetic"
            );
        }
    }
}

/// Whether `d`'s kernels on `elem` flush subnormals. Only `XWARP_SUBNORMALS=flush` may make a
/// device under test flush (on a driver that flushes, `native` would too: its results are then
/// only counted, never required either way).
fn flushes(d: &TestDevice, elem: ElemKind) -> bool {
    let flushed = !d.dev.info().keeps_subnormals(elem);
    if flushed && !flush_under_test() {
        static SAID: Mutex<bool> = Mutex::new(false);
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::replace(&mut *said, true) {
            eprintln!(
                "{} flushes {elem} subnormals (XWARP_SUBNORMALS is not `flush`): its results are \
                 not checked",
                d.label
            );
        }
    }
    flushed
}

/// `case` without its length: the label its cases are counted under.
fn label(case: &impl Display) -> String {
    let text = case.to_string();
    text.split(" n=").next().unwrap_or(&text).to_string()
}

/// `n` values near 1 (within 2^-20) but for one subnormal and one normal of 2^100 (`f64`:
/// 2^1000) in each `group` of consecutive values (the last group possibly partial), at random
/// places: the product of a group is a normal number in whatever order it is taken, and zero
/// where subnormals are flushed.
fn lifted_subnormals<T: Element>(n: usize, group: usize, rng: &mut Rng) -> Vec<T> {
    let (frac, large) = if T::KIND == ElemKind::F32 {
        (23, 100.0)
    } else {
        (52, 1000.0)
    };
    let mut v: Vec<T> = (0..n)
        .map(|_| {
            let eps = (rng.below(1 << 21) as f64 - (1 << 20) as f64) / (1u64 << 40) as f64;
            common::float_from_f64(1.0 + eps)
        })
        .collect();
    for start in (0..n).step_by(group.max(1)) {
        let len = group.min(n - start);
        if len < 2 {
            continue;
        }
        let at = start + rng.below(len as u64) as usize;
        let other = start + (at - start + 1 + rng.below(len as u64 - 1) as usize) % len;
        let subnormal = ((rng.next_u64() & ((1u64 << frac) - 1)) >> rng.below(frac)).max(1);
        v[at] = common::float_from_bits(subnormal);
        v[other] = common::float_from_f64(
            2f64.powf(large) * (1.0 + rng.below(1 << 20) as f64 / (1u64 << 21) as f64),
        );
    }
    v
}

/// Every float operator at every scope on inputs made of subnormals, and on normal inputs whose
/// exact sums or products are subnormal, at [`SIZES`] (1000003 for the device reduce, the only
/// scope whose order grows with the input); products also on [`lifted_subnormals`], grouped
/// as each scope's results are.
fn reductions<T: ReduceInput>() {
    use xwarp_lab::validate::reduce::{expected, run_reduce};
    let mut rng = Rng::new(seed());
    let mut flushes = Flushes::default();
    let scopes = [
        ReduceScope::Warp(WarpForm::Butterfly),
        ReduceScope::Warp(WarpForm::ShiftDown),
        ReduceScope::Block,
        ReduceScope::Device,
    ];
    for op in [
        ReduceOp::Sum,
        ReduceOp::Product,
        ReduceOp::Min,
        ReduceOp::Max,
    ] {
        let mut subnormal_results = 0;
        for n in SIZES {
            let inputs = common::subnormal_inputs::<T>(n, op == ReduceOp::Product, &mut rng);
            for scope in scopes {
                if n == LONG && scope != ReduceScope::Device {
                    continue;
                }
                let mut inputs = inputs.clone();
                if op == ReduceOp::Product {
                    let group = match scope {
                        ReduceScope::Warp(_) => 32,
                        ReduceScope::Block => 256,
                        ReduceScope::Device => n,
                    };
                    inputs.push((
                        "a subnormal and a large normal per result among values near 1",
                        lifted_subnormals(n, group, &mut rng),
                    ));
                }
                for (what, input) in &inputs {
                    let case = ReduceCase {
                        op,
                        scope,
                        elem: T::KIND,
                        n,
                    };
                    subnormal_results += flushes.check_floats(
                        (&case, what),
                        &expected(&case, input),
                        comparison(op),
                        |dev, poison| run_reduce(dev, &case, input, poison),
                    );
                }
            }
        }
        assert!(
            subnormal_results > 0,
            "{op} {}: no subnormal result",
            T::KIND
        );
    }
    flushes.assert_flushing_changes_each();
}

#[test]
fn reductions_f32() {
    reductions::<f32>();
}

#[test]
fn reductions_f64() {
    reductions::<f64>();
}

/// Sum, min and max scans, inclusive and exclusive, at warp, block and device scope, on inputs
/// made of subnormals and on normal inputs whose exact partial sums are subnormal, at [`SIZES`];
/// the device scan (whose look-back spans tiles) at 1000003 with one kind of input and one scan
/// kind per operator, in turn (what keeps the test short).
fn scans<T: ReduceInput>() {
    use xwarp_lab::validate::scan::expected;
    let mut rng = Rng::new(seed());
    let mut flushes = Flushes::default();
    for (k, op) in [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max]
        .into_iter()
        .enumerate()
    {
        let mut subnormal_results = 0;
        for n in SIZES {
            let inputs = common::subnormal_inputs::<T>(n, false, &mut rng);
            for (i, (what, input)) in inputs.iter().enumerate() {
                let long = n == LONG;
                if long && i != (k + 2) % inputs.len() {
                    continue;
                }
                for scope in [
                    ScanScope::Warp,
                    ScanScope::Block,
                    ScanScope::Device(Tuning::default()),
                ] {
                    if long && !matches!(scope, ScanScope::Device(_)) {
                        continue;
                    }
                    for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                        if long && (kind == ScanKind::Exclusive) != (k % 2 == 1) {
                            continue;
                        }
                        let case = ScanCase {
                            op,
                            kind,
                            scope,
                            elem: T::KIND,
                            n,
                        };
                        subnormal_results += flushes.check_floats(
                            (&case, what),
                            &expected(&case, input),
                            comparison(op),
                            |dev, poison| run_scan(dev, &case, input, poison),
                        );
                    }
                }
            }
        }
        assert!(
            subnormal_results > 0,
            "{op} {}: no subnormal result",
            T::KIND
        );
    }
    flushes.assert_flushing_changes_each();
}

#[test]
fn scans_f32() {
    scans::<f32>();
}

#[test]
fn scans_f64() {
    scans::<f64>();
}

/// `f32` values in slots of two that cancel (x, -x with |x| in [2^-103, 2^-95]: what a tile
/// folds in the driver's arithmetic unchecked), and now and then a hard slot (h, ±0.0) whose h
/// a slot (-h, ±0.0) cancels 100 to 3000 slots later, one h open at a time: h a subnormal, a
/// normal below 2^-103 that is (or is not) a multiple of 2^-126, or a zero. Hard slots end a
/// run of eight slots (an invocation's 16 elements of the `f32` scan's tiles), so every fold of
/// the canonical order is exact and the prefixes are exactly h or zero: whole tiles of plain
/// slots start from a subnormal prefix (every output of theirs adds it to a normal or is it),
/// or from another value only exact sums keep, and tiles holding h fold it exactly.
fn cancelling_slots(n: usize, rng: &mut Rng) -> Vec<f32> {
    // First a subnormal and its negation: the scan's first outputs are subnormal.
    let first = f32::from_bits((rng.next_u64() as u32 & 0x007f_ffff).max(1));
    let mut v = vec![first, 0.0, -first, -0.0];
    let mut open: Option<(usize, f32)> = None;
    let zero = |rng: &mut Rng| if rng.below(2) == 0 { 0.0 } else { -0.0 };
    while v.len() < n {
        let slot = v.len() / 2;
        if slot % 8 == 7 {
            match open {
                Some((at, h)) if slot >= at => {
                    open = None;
                    v.extend([-h, zero(rng)]);
                    continue;
                }
                None if rng.below(30) == 0 => {
                    let h = match rng.below(4) {
                        0 | 1 => f32::from_bits((rng.next_u64() as u32 & 0x007f_ffff).max(1)),
                        2 => (1 + rng.below(1 << 22)) as f32 * 2f32.powi(-126),
                        _ => f32::from_bits(
                            (1 + rng.below(23) as u32) << 23
                                | (rng.next_u64() as u32 & 0x007f_ffff | 1),
                        ),
                    };
                    let h = if rng.below(2) == 0 { h } else { -h };
                    open = Some((slot + 100 + rng.below(3000) as usize, h));
                    v.extend([h, zero(rng)]);
                    continue;
                }
                _ => {}
            }
        }
        let e = -103 - 23 + rng.below(9) as i32;
        let x = ((1 << 23) | rng.below(1 << 23)) as f32 * 2f32.powi(e);
        let x = if rng.below(2) == 0 { x } else { -x };
        v.extend([x, -x]);
    }
    v.truncate(n);
    v
}

/// Device sum scans of `f32`, inclusive and exclusive, over [`cancelling_slots`] at lengths of
/// many tiles: the exact variant's tiles that sum in the driver's arithmetic unchecked, beside
/// tiles and prefixes that must not, bit for bit.
#[test]
fn scans_of_tiles_between_normal_and_subnormal_f32() {
    use xwarp_lab::validate::scan::expected;
    let mut rng = Rng::new(seed() ^ 0x7115);
    let mut flushes = Flushes::default();
    let mut subnormal_results = 0;
    for n in [65_537, LONG] {
        let input = cancelling_slots(n, &mut rng);
        for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
            let case = ScanCase {
                op: ReduceOp::Sum,
                kind,
                scope: ScanScope::Device(Tuning::default()),
                elem: ElemKind::F32,
                n,
            };
            let want = expected(&case, &input);
            // Finite results that are not multiples of 2^-126: those of prefixes that only
            // exact sums keep.
            let fine = want
                .iter()
                .filter(|v| {
                    let a = v.to_bits() & 0x7fff_ffff;
                    let e = a >> 23;
                    e < 24 && a & ((1 << (24 - e)) - 1) != 0
                })
                .count();
            eprintln!("{case}: {fine} results only exact sums give");
            assert!(
                fine > n / 100,
                "{case}: {fine} results below 2^-103 that are not multiples of 2^-126"
            );
            subnormal_results += flushes.check_floats(
                (&case, "cancelling slots with hard values"),
                &want,
                comparison(ReduceOp::Sum),
                |dev, poison| run_scan(dev, &case, &input, poison),
            );
        }
    }
    assert!(subnormal_results > 0, "no subnormal result");
    flushes.assert_flushing_changes_each();
}

/// The epoch of `dev`'s epochs buffer (word 1 of its header), where it keeps one.
fn epoch(dev: &dyn Device) -> Option<u32> {
    let e = dev.epochs()?;
    let mut word = [0u8; 8];
    dev.read(e, 0, &mut word)
        .expect("the epochs buffer's header reads");
    Some(u32::from_le_bytes([word[4], word[5], word[6], word[7]]))
}

/// Gated `f32` sum scans (`Tuning::gated`): the driver's arithmetic with every input tested,
/// and the exact launch only where a test fired. On every test device, and on a Vulkan device
/// of its own that keeps subnormals in its kernels (`SubnormalMode::Emulate`), the result is
/// the CPU reference's, bit for bit, inclusive and exclusive, on inputs whose magnitudes are
/// all zero, infinite, NaN or from 2^-103 to near 2^128 (where the driver's sums are the exact
/// ones; partial sums overflow to infinity and meet the other one) and
/// on the same inputs with one value below 2^-103 (a subnormal, a normal below 2^-103, or its
/// negation: first, last or anywhere), with many ([`cancelling_slots`]), in calls that
/// alternate. On the device of its own, whose epochs no other test's scans move, each call
/// advances the epoch by one without such a value (the exact launch ran no workgroup) and by
/// two with one (it ran, under the next epoch), so a gate that does not fire, or whose counts
/// are not set back, fails here even where the driver keeps subnormals.
#[test]
fn gated_scans_f32() {
    use xwarp_lab::validate::scan::expected;
    let own = devices().iter().any(|d| d.vulkan.is_some()).then(|| {
        let device = std::env::var("XWARP_TEST_VULKAN_DEVICE")
            .ok()
            .map(|s| s.parse().expect("XWARP_TEST_VULKAN_DEVICE"));
        VulkanDevice::new(&VulkanOptions {
            device,
            validation: true,
            subnormals: Some(SubnormalMode::Emulate),
        })
        .expect("the Vulkan device opens with SubnormalMode::Emulate")
    });
    if let Some(own) = &own {
        assert_eq!(own.info().subnormals_f32, Subnormals::Emulated);
        assert!(own.indirect_launches());
    }
    let mut rng = Rng::new(seed() ^ 0x6a7e);
    let tuning = Tuning {
        gated: Some(true),
        ..Tuning::default()
    };
    let plain = |n: usize, rng: &mut Rng| -> Vec<f32> {
        (0..n)
            .map(|_| match rng.below(64) {
                0 => 0.0,
                1 => -0.0,
                2 => f32::INFINITY,
                3 => f32::from_bits(0x7fc0_1234),
                4 => 2f32.powi(-103),
                5 => -(1.5 * 2f32.powi(-103)),
                // Near the top of the range: partial sums that overflow to infinity, and meet
                // the other infinity.
                6 | 7 => {
                    let x = ((1 << 23) | rng.below(1 << 23)) as f32 * 2f32.powi(126 - 23);
                    if rng.below(2) == 0 {
                        x
                    } else {
                        -x
                    }
                }
                8 => f32::NEG_INFINITY,
                _ => {
                    let e = rng.below(150) as i32 - 103;
                    let x = ((1 << 23) | rng.below(1 << 23)) as f32 * 2f32.powi(e - 23);
                    if rng.below(2) == 0 {
                        x
                    } else {
                        -x
                    }
                }
            })
            .collect()
    };
    let tiny = |rng: &mut Rng| -> f32 {
        let t = match rng.below(3) {
            0 => f32::from_bits((rng.next_u64() as u32 & 0x007f_ffff).max(1)),
            1 => f32::from_bits((1 + rng.below(23) as u32) << 23 | rng.below(1 << 23) as u32),
            _ => f32::from_bits(0x0c00_0000 - 1),
        };
        if rng.below(2) == 0 {
            t
        } else {
            -t
        }
    };
    let mut gated_calls = 0;
    for n in [1, 31, 4097, 65_537, LONG] {
        // 0: none below 2^-103; 1: one, first; 2: one, last; 3: one anywhere; 4: many.
        for (variant, fired) in [
            (0, false),
            (1, true),
            (0, false),
            (2, true),
            (3, true),
            (4, true),
        ] {
            let mut input = if variant == 4 {
                cancelling_slots(n, &mut rng)
            } else {
                plain(n, &mut rng)
            };
            match variant {
                1 => input[0] = tiny(&mut rng),
                2 => input[n - 1] = tiny(&mut rng),
                3 => input[rng.below(n as u64) as usize] = tiny(&mut rng),
                _ => {}
            }
            for kind in [ScanKind::Inclusive, ScanKind::Exclusive] {
                let case = ScanCase {
                    op: ReduceOp::Sum,
                    kind,
                    scope: ScanScope::Device(tuning),
                    elem: ElemKind::F32,
                    n,
                };
                let want = expected(&case, &input);
                let poison = poison_value(&want);
                let check = |label: &str, dev: &dyn Device| {
                    let got = run_scan(dev, &case, &input, poison)
                        .unwrap_or_else(|e| panic!("{label}: {case} ({variant}): {e}"));
                    if let Some(m) = comparison(ReduceOp::Sum)(&want, &got) {
                        panic!("{label}: {case}, inputs {variant}: {m}");
                    }
                };
                for_each_device(|d| {
                    if !flushes(d, ElemKind::F32) {
                        check(&d.label, &*d.dev);
                    }
                });
                if let Some(own) = &own {
                    let before = epoch(own).expect("the device keeps an epochs buffer");
                    check("the emulating Vulkan device", own);
                    let step = epoch(own).expect("epochs").wrapping_sub(before);
                    assert_eq!(
                        step,
                        1 + u32::from(fired),
                        "{case}, inputs {variant}: the epoch moved by {step}: the exact launch \
                         {} when it should {}",
                        if step > 1 { "ran" } else { "did not run" },
                        if fired { "have" } else { "not have" },
                    );
                    let messages = own.validation_messages();
                    assert!(messages.is_empty(), "validation: {}", messages.join("\n"));
                    gated_calls += 1;
                }
            }
        }
    }
    // One gated call recorded once and replayed on new inputs, without and with a value below
    // 2^-103 in turn: each replay's gate decides afresh.
    if let Some(own) = &own {
        use xwarp::DeviceVec;
        let n = 65_537;
        let src = DeviceVec::<f32>::alloc(own, n).expect("alloc");
        let mut dst = DeviceVec::<f32>::alloc(own, n).expect("alloc");
        let rec = own
            .record(&mut || {
                xwarp::scan::device_scan_tuned(
                    own,
                    ReduceOp::Sum,
                    ScanKind::Inclusive,
                    &src,
                    &mut dst,
                    tuning,
                )
            })
            .expect("a gated scan records");
        for (round, fired) in [false, true, true, false, true, false]
            .into_iter()
            .enumerate()
        {
            let mut input = plain(n, &mut rng);
            if fired {
                input[rng.below(n as u64) as usize] = tiny(&mut rng);
            }
            let want = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &input);
            own.write(src.raw(), 0, bytemuck::cast_slice(&input))
                .expect("write");
            dst.fill(own, poison_value(&want)).expect("fill");
            let before = epoch(own).expect("epochs");
            let ticket = own.replay(&rec).expect("replay");
            own.wait(ticket).expect("wait");
            let got = dst.to_vec(own).expect("read");
            if let Some(m) = comparison(ReduceOp::Sum)(&want, &got) {
                panic!("replay {round} of a gated scan (fired: {fired}): {m}");
            }
            let step = epoch(own).expect("epochs").wrapping_sub(before);
            assert_eq!(
                step,
                1 + u32::from(fired),
                "replay {round} of a gated scan: the epoch moved by {step} (fired: {fired})"
            );
            gated_calls += 1;
        }
    }
    eprintln!("{gated_calls} gated calls checked by their epochs");
    assert!(own.is_none() || gated_calls > 0);
}

/// Both stencil variants on subnormal inputs with weights near ±1, on normal inputs and weights
/// like 1e-20 (`f64`: 1e-160) whose every product is subnormal, and on subnormals among small,
/// large and near-±1 normals for both, at [`SIZES`] (where large products overflow and meet,
/// NaN matches any NaN), at every layer count per workgroup.
fn stencils<T: StencilElement>() {
    use xwarp::stencil::{Tuning, FEW_ROWS, MANY_ROWS, ROWS};
    use xwarp_lab::validate::stencil::run_stencil_tuned;
    let mut rng = Rng::new(seed());
    let mut flushes = Flushes::default();
    let mut subnormal_results = 0;
    for n in SIZES {
        let near_one = |rng: &mut Rng| {
            let m = 0.5 + rng.below(1 << 20) as f64 / (1u64 << 20) as f64 * 1.5;
            common::float_from_f64::<T>(if rng.below(2) == 0 { m } else { -m })
        };
        let small = |rng: &mut Rng| {
            let tiny = if T::KIND == ElemKind::F32 {
                1e-20
            } else {
                1e-160
            };
            let m = 1.0 + rng.below(1 << 20) as f64 / (1u64 << 20) as f64;
            common::float_from_f64::<T>(if rng.below(2) == 0 { m } else { -m } * tiny)
        };
        let subnormals = common::subnormal_inputs::<T>(n, false, &mut rng)
            .swap_remove(0)
            .1;
        let mixed = common::subnormal_inputs::<T>(n, true, &mut rng)
            .swap_remove(1)
            .1;
        let sets: [(&str, [T; POINTS], Vec<T>); 3] = [
            (
                "subnormal inputs, weights near ±1",
                std::array::from_fn(|_| near_one(&mut rng)),
                subnormals,
            ),
            (
                "normal inputs and weights whose products are subnormal",
                std::array::from_fn(|_| small(&mut rng)),
                (0..n).map(|_| small(&mut rng)).collect(),
            ),
            (
                "subnormals, small and large normals among values near ±1",
                std::array::from_fn(|_| xwarp_lab::validate::tiny_value(&mut rng, true)),
                mixed,
            ),
        ];
        for (what, weights, input) in &sets {
            let want = stencil_reference(*weights, input);
            // Every layer count: the exact kernels differ by it (the shared-memory kernel
            // tests a workgroup's layers together).
            for variant in StencilVariant::ALL {
                for rows in [FEW_ROWS, ROWS, MANY_ROWS] {
                    let tuning = Tuning { rows: Some(rows) };
                    subnormal_results += flushes.check_floats(
                        (
                            &format!("stencil {variant} {} n={n} ({rows} layers)", T::KIND),
                            &format!("{what}, weights {weights:?}"),
                        ),
                        &want,
                        first_mismatch_nan_as_class,
                        |dev, poison| {
                            run_stencil_tuned(dev, variant, *weights, input, poison, tuning)
                        },
                    );
                }
            }
        }
    }
    assert!(subnormal_results > 0, "{}: no subnormal result", T::KIND);
    flushes.assert_flushing_changes_each();
}

#[test]
fn stencils_f32() {
    stencils::<f32>();
}

#[test]
fn stencils_f64() {
    stencils::<f64>();
}

/// The predicates that compare floats (nonzero, greater and less than the median, in range of
/// the quartiles) on subnormals, the smallest normals and zeros, with thresholds among them:
/// both compaction orders and the warp vote, at [`SIZES`].
fn predicates<T: PredicateElement>() {
    use xwarp::compact::{Order, Tuning};
    let mut rng = Rng::new(seed());
    let mut flushes = Flushes::default();
    let specs = [
        PredSpec::NonZero,
        PredSpec::GreaterMedian,
        PredSpec::LessMedian,
        PredSpec::MiddleHalf,
    ];
    for n in SIZES {
        for spec in specs {
            let (input, pred) =
                hard_case_input::<T>(spec, HardInput::Tiny, HardValues::ALL, n, &mut rng);
            for order in [Order::Stable, Order::Unordered] {
                let label = format!("compact {order} {spec} {}", T::KIND);
                let poison = poison_value(&input);
                let (count, out) = expected_output(order, pred, &input, poison);
                let want = comparable(order, count, &out);
                flushes.check(
                    (&label, &format!("{label} n={n} ({pred})")),
                    T::KIND,
                    &want,
                    first_mismatch,
                    |dev| {
                        let (count, out) =
                            run_compact(dev, order, pred, &input, poison, Tuning::default())?;
                        Ok(comparable(order, count, &out))
                    },
                );
            }
            let label = format!("vote {spec} {}", T::KIND);
            let want = xwarp::cpu::vote::vote(pred, &input).to_words();
            let poison = poison_value(&want);
            flushes.check(
                (&label, &format!("{label} n={n} ({pred})")),
                T::KIND,
                &want,
                first_mismatch,
                |dev| run_vote(dev, pred, &input, poison),
            );
        }
    }
    flushes.assert_flushing_changes_each();
}

#[test]
fn predicates_f32() {
    predicates::<f32>();
}

#[test]
fn predicates_f64() {
    predicates::<f64>();
}

/// Comparisons against every kind of `f32` threshold (zeros of both signs, subnormals, the
/// smallest normals, ones, the largest finite values, infinities, NaN) over elements of every
/// kind: the exact kernels take the driver's comparison or the elements' bit intervals by the
/// threshold (`shaders/vote_predicate.glsl`), and vote, both compactions and the partition must
/// agree with the CPU for each.
#[test]
fn comparisons_against_every_kind_of_threshold_f32() {
    use xwarp::compact::{Order, Tuning};
    use xwarp::vote::Predicate;
    let specials: Vec<f32> = [
        0x0000_0000u32,
        0x8000_0000,
        0x0000_0001,
        0x8000_0001,
        0x0040_0000,
        0x8040_0000,
        0x007f_ffff,
        0x807f_ffff,
        0x0080_0000,
        0x8080_0000,
        0x0080_0001,
        0x3f80_0000,
        0xbf80_0000,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0001,
        0xffc0_0123,
    ]
    .map(f32::from_bits)
    .to_vec();
    let mut rng = Rng::new(seed());
    let input: Vec<f32> = (0..4097)
        .map(|_| specials[rng.below(specials.len() as u64) as usize])
        .collect();
    let mut preds = Vec::new();
    for &t in &specials {
        preds.extend([Predicate::Greater(t), Predicate::Less(t)]);
        for &hi in &specials {
            if t <= hi {
                preds.push(Predicate::InRange { lo: t, hi });
            }
        }
    }
    for pred in preds {
        let want_vote = xwarp::cpu::vote::vote(pred, &input).to_words();
        let vote_poison = poison_value(&want_vote);
        let poison = poison_value(&input);
        for_each_device(|d| {
            if flushes(d, ElemKind::F32) {
                return;
            }
            // The run's output must equal `want` bit for bit.
            fn agree<R: xwarp::Element>(what: &str, want: &[R], got: xwarp::Result<Vec<R>>) {
                let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(got == want, "{what}: {:?}", first_mismatch(want, &got));
            }
            let label = &d.label;
            let got = run_vote(&*d.dev, pred, &input, vote_poison);
            agree(&format!("{label}: vote {pred}"), &want_vote, got);
            for order in [Order::Stable, Order::Unordered] {
                let (count, out) = expected_output(order, pred, &input, poison);
                let want = comparable(order, count, &out);
                let got = run_compact(&*d.dev, order, pred, &input, poison, Tuning::default())
                    .map(|(count, out)| comparable(order, count, &out));
                agree(&format!("{label}: compact {order} {pred}"), &want, got);
            }
            let want = xwarp_lab::validate::partition::expected(pred, &input, poison);
            let got = xwarp_lab::validate::partition::run_partition(&*d.dev, pred, &input, poison);
            agree(&format!("{label}: partition {pred}"), &want, got);
        });
    }
}

/// A sample about the subnormal range of `T` (`f32` or `f64`): subnormals of both signs (half of
/// them), zeros of both signs, normals of a few times the smallest normal, hard values (NaN
/// payloads, infinities, large magnitudes).
fn subnormal_sample<T: Element>(rng: &mut Rng) -> T {
    let (frac, width) = if T::KIND == ElemKind::F32 {
        (23u32, 32u32)
    } else {
        (52, 64)
    };
    let sign = rng.below(2) << (width - 1);
    match rng.below(16) {
        0..=7 => {
            let m = ((rng.next_u64() & ((1u64 << frac) - 1)) >> rng.below(u64::from(frac))).max(1);
            common::float_from_bits(sign | m)
        }
        8 | 9 => common::float_from_bits(sign),
        10..=12 => {
            let exp = 1 + rng.below(4);
            let m = rng.next_u64() & ((1u64 << frac) - 1);
            common::float_from_bits(sign | (exp << frac) | m)
        }
        _ => T::random_hard(rng, HardValues::ALL),
    }
}

/// The float histogram over ranges whose bounds, width or samples' differences from the lower
/// bound are subnormal ([0, 4N), [-4N, -N/8), [-N/2, N/2) for N the smallest normal, and [N, 3N),
/// whose normal bounds and samples in [N, 2N) have subnormal differences), samples from
/// [`subnormal_sample`], at [`SIZES`]: the comparisons with the bounds and the bin's difference
/// and product are where flushing moves samples (a flushed subnormal sample falls in bin 0 or
/// out of the range; a flushed difference puts a sample of [N, 2N) in bin 0).
fn histograms<T: xwarp::histogram::Sample>() {
    let mut rng = Rng::new(seed());
    let mut flushes = Flushes::default();
    let n_min: f64 = if T::KIND == ElemKind::F32 {
        2f64.powi(-126)
    } else {
        2f64.powi(-1022)
    };
    // With one bin, [N, 3N) puts every sample of its range in bin 0, flushed or not.
    let ranges: [(f64, f64, &[usize]); 4] = [
        (0.0, 4.0 * n_min, &[1, 3, 13]),
        (-4.0 * n_min, -n_min / 8.0, &[1, 3, 13]),
        (-n_min / 2.0, n_min / 2.0, &[1, 3, 13]),
        (n_min, 3.0 * n_min, &[3, 13]),
    ];
    for (lo, hi, bin_counts) in ranges {
        let (lower, upper): (T, T) = (common::float_from_f64(lo), common::float_from_f64(hi));
        for &bins in bin_counts {
            if T::plan(lower, upper, bins).is_err() {
                continue;
            }
            let label = format!("histogram {} [{lower:?}, {upper:?}) bins {bins}", T::KIND);
            for n in SIZES {
                let samples: Vec<T> = (0..n).map(|_| subnormal_sample(&mut rng)).collect();
                check_histogram(&mut flushes, &label, &samples, bins, (lower, upper));
            }
        }
    }
    flushes.assert_flushing_changes_each();
    // Ranges whose bounds let the exact variant bin with the driver's arithmetic alone
    // (`FAST_BINS` 1: |lower| >= 2^(e + p + 2), e.g. 2^-101 for f32; 2: lower = 0), where the
    // flushes cannot move a sample: checked against the reference on every device, flushing
    // ones included.
    let tiny: f64 = if T::KIND == ElemKind::F32 {
        2f64.powi(-101)
    } else {
        2f64.powi(-968)
    };
    let fast_ranges: [(f64, f64); 6] = [
        (-1.0, 1.0),
        (-536870912.0, 536870912.0),
        (-tiny, 2.0 * tiny),
        (tiny, 4.0 * tiny),
        (0.0, 1.0),
        (-0.0, 8.0 * n_min),
    ];
    let mut fast = Flushes::default();
    for (lo, hi) in fast_ranges {
        let (lower, upper): (T, T) = (common::float_from_f64(lo), common::float_from_f64(hi));
        for bins in [1, 3, 256] {
            if T::plan(lower, upper, bins).is_err() {
                continue;
            }
            let label = format!("histogram {} [{lower:?}, {upper:?}) bins {bins}", T::KIND);
            for n in SIZES {
                // Half the samples near the bounds (within a few units in the last place).
                let samples: Vec<T> = (0..n)
                    .map(|i| {
                        if i % 2 == 0 {
                            return subnormal_sample(&mut rng);
                        }
                        let b = if rng.below(2) == 0 { lower } else { upper };
                        let step = rng.below(7) as i64 - 3;
                        common::float_from_bits(b.to_bits64().wrapping_add(step as u64))
                    })
                    .collect();
                check_histogram(&mut fast, &label, &samples, bins, (lower, upper));
            }
        }
    }
}

/// [`Flushes::check`] of the histogram of `samples` in `bins` bins over `[lower, upper)`.
fn check_histogram<T: xwarp::histogram::Sample>(
    flushes: &mut Flushes,
    label: &str,
    samples: &[T],
    bins: usize,
    (lower, upper): (T, T),
) {
    use xwarp_lab::validate::histogram::run_histogram;
    let want = xwarp::cpu::histogram::histogram_even(samples, bins, lower, upper);
    flushes.check(
        (label, &format!("{label} n={}", samples.len())),
        T::KIND,
        &want,
        first_mismatch,
        |dev| run_histogram(dev, samples, bins, lower, upper, false),
    );
}

#[test]
fn histograms_f32() {
    histograms::<f32>();
}

#[test]
fn histograms_f64() {
    histograms::<f64>();
}

/// Operand pairs (a, b) for `op`, drawn to reach every path of the exact arithmetic: for sums,
/// subnormals with subnormals, with the smallest normals and with normals of any size, near
/// cancellations (also of the largest values, which cannot be scaled), and ties; for products,
/// subnormals with values near 1, with large values (whose products are normal again), normals
/// whose products fall into or below the subnormal range, significands of few bits (whose
/// products are ties), overflow, and infinities with subnormals and zeros; for min and max,
/// subnormals of both signs with each other and with zeros. A quarter of the pairs in every
/// draw are random bits (NaN payloads and infinities among them).
fn pairs<T: Element>(op: ReduceOp, count: usize, rng: &mut Rng) -> Vec<(T, T)> {
    let (frac, exp) = if T::KIND == ElemKind::F32 {
        (23u32, 8u32)
    } else {
        (52, 11)
    };
    let frac_mask = (1u64 << frac) - 1;
    let exp_max = (1u64 << exp) - 1;
    let bias = exp_max / 2;
    let prec = u64::from(frac) + 1;
    let width_mask = if T::KIND == ElemKind::F32 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let sign_bit = 1u64 << (frac + exp);
    let subnormal =
        |rng: &mut Rng| ((rng.next_u64() & frac_mask) >> rng.below(u64::from(frac))).max(1);
    let normal = |rng: &mut Rng, lo: u64, hi: u64| {
        (lo + rng.below(hi - lo + 1)) << frac | (rng.next_u64() & frac_mask)
    };
    // A significand of at most four bits after the leading one.
    let few_bits = |rng: &mut Rng, lo: u64, hi: u64| {
        (lo + rng.below(hi - lo + 1)) << frac | (rng.below(16) << (frac - 4))
    };
    let special = |rng: &mut Rng| match rng.below(6) {
        0 => 0,
        1 => exp_max << frac,
        2 => exp_max << frac | (rng.next_u64() & frac_mask).max(1),
        3 => frac_mask,
        4 => 1 << frac,
        _ => (exp_max - 1) << frac | frac_mask,
    };
    let float = |bits: u64| common::float_from_bits::<T>(bits & width_mask);
    (0..count)
        .map(|_| {
            let (a, b) = if rng.below(4) == 0 {
                (rng.next_u64(), rng.next_u64())
            } else if op == ReduceOp::Sum && rng.below(4) == 0 {
                // Near cancellation: b is -a with its lowest bits changed.
                let top = if rng.below(4) == 0 {
                    exp_max - 1
                } else {
                    prec + 4
                };
                let a = normal(rng, 1, top) | (rng.below(2) * sign_bit);
                (a, a ^ sign_bit ^ rng.below(64))
            } else {
                let sign = |rng: &mut Rng| rng.below(2) * sign_bit;
                let (a, b) = match (op, rng.below(8)) {
                    (ReduceOp::Sum, 0) => (subnormal(rng), subnormal(rng)),
                    (ReduceOp::Sum, 1) => (subnormal(rng), normal(rng, 1, prec + 3)),
                    (ReduceOp::Sum, 2) => (subnormal(rng), normal(rng, 1, exp_max - 1)),
                    (ReduceOp::Sum, 3) => (normal(rng, 1, 3), normal(rng, 1, 3)),
                    (ReduceOp::Sum, 4) => (normal(rng, 1, exp_max - 1), normal(rng, 1, 3)),
                    (ReduceOp::Sum, 5 | 6) => (few_bits(rng, 1, 4), subnormal(rng)),
                    (ReduceOp::Sum, _) => (special(rng), subnormal(rng)),
                    (ReduceOp::Product, 0) => (subnormal(rng), normal(rng, bias - 1, bias)),
                    (ReduceOp::Product, 1) => (subnormal(rng), normal(rng, bias, exp_max - 1)),
                    (ReduceOp::Product, 2) => {
                        // Exponents whose sum falls near the bottom of the subnormal range.
                        let half = bias / 2;
                        (
                            normal(rng, half - prec - 4, half + 2),
                            normal(rng, half - prec - 4, half + 2),
                        )
                    }
                    (ReduceOp::Product, 3) => {
                        let half = bias / 2;
                        (
                            few_bits(rng, half - prec - 2, half + 1),
                            few_bits(rng, half - prec - 2, half + 1),
                        )
                    }
                    (ReduceOp::Product, 4) => (subnormal(rng), subnormal(rng)),
                    (ReduceOp::Product, 5) => (
                        normal(rng, exp_max - bias / 2, exp_max - 1),
                        normal(rng, bias, exp_max - 1),
                    ),
                    (ReduceOp::Product, 6) => (special(rng), subnormal(rng)),
                    (ReduceOp::Product, _) => (special(rng), special(rng)),
                    (_, 0..=2) => (subnormal(rng), subnormal(rng)),
                    (_, 3 | 4) => (subnormal(rng), 0),
                    (_, 5) => (normal(rng, 1, 2), subnormal(rng)),
                    (_, _) => (special(rng), subnormal(rng)),
                };
                (a | sign(rng), b | sign(rng))
            };
            if rng.below(2) == 0 {
                (float(a), float(b))
            } else {
                (float(b), float(a))
            }
        })
        .collect()
}

/// `op(a, b)` of each of [`pairs`]' operand pairs, one pair per 32-lane warp: lanes 0 and 1
/// hold a and b, the others the identity, and the warp's shift-down reduction combines them
/// (`op(x, id)` is x, bit for bit), so each warp's total is one exactly rounded `a + b`,
/// `a * b`, `min(a, b)` or `max(a, b)`.
fn single_operations<T: ReduceInput>() {
    use xwarp_lab::validate::reduce::{expected, run_reduce};
    const PAIRS: usize = 1 << 14;
    let mut rng = Rng::new(seed());
    let mut flushes = Flushes::default();
    for op in [
        ReduceOp::Sum,
        ReduceOp::Product,
        ReduceOp::Min,
        ReduceOp::Max,
    ] {
        let operands = pairs::<T>(op, PAIRS, &mut rng);
        let id = T::identity(op);
        let mut input = vec![id; 32 * PAIRS];
        for (w, &(a, b)) in operands.iter().enumerate() {
            input[32 * w] = a;
            input[32 * w + 1] = b;
        }
        let case = ReduceCase {
            op,
            scope: ReduceScope::Warp(WarpForm::ShiftDown),
            elem: T::KIND,
            n: input.len(),
        };
        let want = expected(&case, &input);
        // The premise: each total is the one operation (unless it is NaN, whose payload the
        // identities may replace).
        for (w, &(a, b)) in operands.iter().enumerate() {
            let single = T::combine(op, a, b);
            if !xwarp_lab::validate::is_nan(single) {
                assert_eq!(
                    want[w].to_bits64(),
                    single.to_bits64(),
                    "{op}({a:?}, {b:?})"
                );
            }
        }
        let poison = poison_value(&want);
        let label = format!("single {op} {}", T::KIND);
        flushes.check(
            (&label, &format!("{label} of {PAIRS} operand pairs")),
            T::KIND,
            &want,
            comparison(op),
            |dev| run_reduce(dev, &case, &input, poison),
        );
    }
    flushes.assert_flushing_changes_each();
}

#[test]
fn single_operations_f32() {
    single_operations::<f32>();
}

#[test]
fn single_operations_f64() {
    single_operations::<f64>();
}

/// Under `XWARP_SUBNORMALS=emulate` the Vulkan device under test keeps subnormals in its kernels,
/// and under `flush` it flushes them; the flushing device says so too.
#[test]
fn the_mode_asked_for_is_the_mode_reported() {
    let mode = SubnormalMode::from_env().expect("XWARP_SUBNORMALS");
    for d in devices().iter().filter(|d| d.vulkan.is_some()) {
        let info = d.dev.info();
        let want = match mode {
            SubnormalMode::Emulate => Some(Subnormals::Emulated),
            SubnormalMode::Flush => Some(Subnormals::Flushed),
            _ => None,
        };
        if let Some(want) = want {
            assert_eq!(info.subnormals_f32, want, "{}", d.label);
            if info.float64 {
                assert_eq!(info.subnormals_f64, want, "{}", d.label);
            }
        }
        eprintln!(
            "{}: f32 subnormals {}, f64 {}",
            d.label, info.subnormals_f32, info.subnormals_f64
        );
    }
    if let Some(f) = flushing() {
        assert_eq!(f.info().subnormals_f32, Subnormals::Flushed);
    }
}

/// The float operations that the exact kernels leave to the driver, on a model of a driver that
/// flushes every subnormal operand and result of each operation to zero (what llvmpipe, which
/// keeps them, cannot show): `shaders/float_ops.glsl`'s sum and product in the exact variant,
/// transcribed line by line down to those operations (its integer product stands in here as
/// the exact product, which it is on every device: `single_operations` checks it), must give
/// the IEEE result for every operand pair of [`pairs`], and for pairs of random bits.
macro_rules! flushing_driver_model {
    ($name:ident, $t:ty, $u:ty, $frac:expr, $exp_max:expr, $scale:expr) => {
        #[test]
        fn $name() {
            const FRAC: u32 = $frac;
            const EXP_MAX: $u = $exp_max;
            const SCALE: $u = $scale;
            const SIGN: $u = 1 << (<$u>::BITS - 1);
            const PREC: $u = FRAC as $u + 1;
            let biased = |v: $t| (v.to_bits() >> FRAC) & EXP_MAX;
            let power = |e: $u| <$t>::from_bits(e << FRAC);
            // The driver: subnormal operands and results flushed to zero of their sign.
            let flush = |v: $t| {
                if biased(v) == 0 {
                    <$t>::from_bits(v.to_bits() & SIGN)
                } else {
                    v
                }
            };
            let add = |a: $t, b: $t| flush(flush(a) + flush(b));
            let mul = |a: $t, b: $t| flush(flush(a) * flush(b));
            let to_int = |v: $t| flush(v) as $u;
            let bias = EXP_MAX / 2;
            let scaled = |v: $t| {
                let u = v.to_bits();
                if biased(v) != 0 {
                    return <$t>::from_bits(u + (SCALE << FRAC));
                }
                // Exact conversions of integers below 2^FRAC (f64: in two words in the shader).
                let m = (u & ((1 << FRAC) - 1)) as $t;
                let s = mul(m, power(bias + SCALE - (bias + FRAC as $u - 1)));
                <$t>::from_bits(s.to_bits() | (u & SIGN))
            };
            let unscaled = |s: $t| {
                let u = s.to_bits();
                if biased(s) > SCALE {
                    return <$t>::from_bits(u - (SCALE << FRAC));
                }
                let k = mul(
                    <$t>::from_bits(u & !SIGN),
                    power(bias + (bias + FRAC as $u - 1) - SCALE),
                );
                <$t>::from_bits((u & SIGN) | to_int(k))
            };
            let exact_add = |a: $t, b: $t| {
                if biased(a).max(biased(b)) >= EXP_MAX - SCALE {
                    return add(a, b);
                }
                unscaled(add(scaled(a), scaled(b)))
            };
            let unsubnormal = |v: $t| {
                if biased(v) != 0 || v.to_bits() & !SIGN == 0 {
                    v
                } else {
                    <$t>::from_bits((v.to_bits() & SIGN) | (1 << FRAC))
                }
            };
            let sum = |a: $t, b: $t| {
                let r = add(a, b);
                if biased(r) >= PREC + 2 {
                    return r;
                }
                exact_add(a, b)
            };
            let product = |a: $t, b: $t| {
                let r = mul(a, b);
                if biased(r).wrapping_sub(1) < EXP_MAX - 1 {
                    return r;
                }
                if biased(a) == EXP_MAX || biased(b) == EXP_MAX {
                    return mul(unsubnormal(a), unsubnormal(b));
                }
                a * b
            };
            let same = |want: $t, got: $t| {
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan())
            };
            let mut rng = Rng::new(seed());
            for op in [ReduceOp::Sum, ReduceOp::Product] {
                let mut operands = pairs::<$t>(op, 1 << 20, &mut rng);
                operands.extend((0..1 << 20).map(|_| {
                    let mut v = || <$t>::from_bits(rng.next_u64() as $u);
                    (v(), v())
                }));
                for (a, b) in operands {
                    let (want, got) = match op {
                        ReduceOp::Sum => (a + b, sum(a, b)),
                        _ => (a * b, product(a, b)),
                    };
                    assert!(
                        same(want, got),
                        "{op}({a:e} = {:#x}, {b:e} = {:#x}) on a flushing driver: {got:e} \
                         ({:#x}), IEEE: {want:e} ({:#x})",
                        a.to_bits(),
                        b.to_bits(),
                        got.to_bits(),
                        want.to_bits()
                    );
                }
            }
        }
    };
}

flushing_driver_model!(
    the_exact_f32_arithmetic_holds_on_a_flushing_driver,
    f32,
    u32,
    23,
    0xff,
    64
);
flushing_driver_model!(
    the_exact_f64_arithmetic_holds_on_a_flushing_driver,
    f64,
    u64,
    52,
    0x7ff,
    128
);
