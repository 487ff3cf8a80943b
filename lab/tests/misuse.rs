//! Every misuse the API can meet, on every test device: each is answered by a typed error
//! naming what was wrong (the parameter and its allowed range, the sizes, the devices, the
//! missing feature or library), nothing is written, nothing leaks, and the same device then
//! still computes a correct reduction (checked against the CPU reference).

mod common;

use common::{devices, for_each_device, open_vulkan, seed};
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use xwarp::backend::{BackendChoice, DeviceSelector, Options};
use xwarp::compact::{self, Order, Tuning as CompactTuning, MIN_BINDING_ELEMS};
use xwarp::device::{
    Binding, DeviceId, Kernel, Launch, MemoryUsage, RawBuffer, SubgroupFeatures, MAX_PARAMS,
};
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{self, ReduceOp, WarpForm};
use xwarp::scan::{self, ScanKind, Tuning as ScanTuning};
use xwarp::shfl::{self, ShflOp};
use xwarp::stencil::{self, StencilVariant};
use xwarp::vote::{self, Predicate, RECORD_WORDS};
use xwarp::vulkan::{VulkanDevice, VulkanOptions};
use xwarp::{cpu, BackendKind, Device, DeviceInfo, DeviceVec, ElemKind, Error, Result, Rng};

const TIB: u64 = 1 << 40;

/// The device still computes: an i32 and an f32 sum of fresh random data equal the CPU
/// reference bit for bit.
fn still_works(dev: &dyn Device, label: &str, after: &str) {
    let mut rng = Rng::new(seed());
    let ints: Vec<i32> = rng.vec(5000);
    let got = reduce::device_reduce_host(dev, ReduceOp::Sum, &ints)
        .unwrap_or_else(|e| panic!("{label}: reduce after {after}: {e}"));
    assert_eq!(
        got,
        cpu::reduce::device_reduce(ReduceOp::Sum, &ints),
        "{label}: i32 sum after {after}"
    );
    let floats: Vec<f32> = (0..4099).map(|_| rng.next_f64_mixed() as f32).collect();
    let got = reduce::device_reduce_host(dev, ReduceOp::Sum, &floats)
        .unwrap_or_else(|e| panic!("{label}: reduce after {after}: {e}"));
    assert_eq!(
        got.to_bits(),
        cpu::reduce::device_reduce(ReduceOp::Sum, &floats).to_bits(),
        "{label}: f32 sum after {after}"
    );
}

/// `r` is [`Error::InvalidParameter`] for `name` with `value`, whose allowed range contains
/// `allowed`; its message names all three.
#[track_caller]
fn expect_invalid<T: Debug>(
    label: &str,
    what: &str,
    r: Result<T>,
    name: &str,
    value: &str,
    allowed: &str,
) {
    match r {
        Err(
            ref e @ Error::InvalidParameter {
                name: n,
                value: ref v,
                allowed: ref a,
            },
        ) => {
            assert_eq!((n, v.as_str()), (name, value), "{label}: {what}: {e}");
            assert!(a.contains(allowed), "{label}: {what}: allowed `{a}`");
            let msg = e.to_string();
            for part in [&format!("`{name}`"), value, allowed] {
                assert!(
                    msg.contains(part),
                    "{label}: {what}: `{msg}` lacks `{part}`"
                );
            }
        }
        other => panic!("{label}: {what}: expected InvalidParameter({name}), got {other:?}"),
    }
}

/// `r` is [`Error::LengthMismatch`] for `name`, and its message names the buffer and both
/// lengths.
#[track_caller]
fn expect_length<T: Debug>(
    label: &str,
    what: &str,
    r: Result<T>,
    name: &str,
    expected: u64,
    actual: u64,
) {
    match r {
        Err(
            ref e @ Error::LengthMismatch {
                name: n,
                expected: x,
                actual: a,
            },
        ) => {
            assert_eq!((n, x, a), (name, expected, actual), "{label}: {what}: {e}");
            let msg = e.to_string();
            for part in [
                format!("`{name}`"),
                format!("{actual} elements"),
                format!("{expected} required"),
            ] {
                assert!(
                    msg.contains(&part),
                    "{label}: {what}: `{msg}` lacks `{part}`"
                );
            }
        }
        other => panic!("{label}: {what}: expected LengthMismatch({name}), got {other:?}"),
    }
}

/// `r` is [`Error::OutOfBounds`] for bytes `offset..end` of a `size`-byte buffer, and its
/// message says so.
#[track_caller]
fn expect_bounds<T: Debug>(
    label: &str,
    what: &str,
    r: Result<T>,
    offset: u64,
    end: u64,
    size: u64,
) {
    match r {
        Err(
            ref e @ Error::OutOfBounds {
                offset: o,
                end: x,
                size: s,
            },
        ) => {
            assert_eq!((o, x, s), (offset, end, size), "{label}: {what}: {e}");
            let msg = e.to_string();
            let part = format!("bytes {offset}..{end} of a {size}-byte buffer");
            assert!(
                msg.contains(&part),
                "{label}: {what}: `{msg}` lacks `{part}`"
            );
        }
        other => panic!("{label}: {what}: expected OutOfBounds, got {other:?}"),
    }
}

/// A device buffer of `n` elements holding `poison`.
fn poisoned<T: xwarp::Element>(dev: &dyn Device, n: usize, poison: T) -> DeviceVec<T> {
    let mut v = DeviceVec::alloc(dev, n).unwrap();
    v.fill(dev, poison).unwrap();
    v
}

#[track_caller]
fn assert_untouched<T: xwarp::Element>(dev: &dyn Device, label: &str, v: &DeviceVec<T>, poison: T) {
    let got = v.to_vec(dev).unwrap();
    assert!(
        got.iter().all(|x| x.to_bits64() == poison.to_bits64()),
        "{label}: a refused call wrote into its output"
    );
}

#[test]
fn invalid_widths_name_width_and_its_range() {
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let input: Vec<u32> = (0..100).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut dst = poisoned(dev, 100, 7u32);
        for w in [0u32, 1, 3, 6, 12, 33, 64, 128, u32::MAX] {
            let what = format!("width {w}");
            let allowed = "2, 4, 8, 16 or 32";
            let op = ShflOp::Down { delta: 1 };
            let (v, name) = (w.to_string(), "width");
            expect_invalid(
                label,
                &what,
                shfl::shfl(dev, op, w, &src, &mut dst),
                name,
                &v,
                allowed,
            );
            let r = shfl::shfl_xor_array(dev, 1, w, &src, &mut dst);
            expect_invalid(label, &what, r, name, &v, allowed);
            let r = shfl::shfl_host(dev, op, w, &input);
            expect_invalid(label, &what, r, name, &v, allowed);
        }
        assert_untouched(dev, label, &dst, 7);
        // The ladder's block width: one of five sizes, named with the device's subgroup size.
        for b in [0u32, 32, 100, 255, 2048] {
            let r = ladder::reduce_host::<u32>(dev, LadderKernel::Shfl, b, &input);
            expect_invalid(
                label,
                "ladder block",
                r,
                "block",
                &b.to_string(),
                "64, 128, 256",
            );
            let mut partials = poisoned(dev, 1, 7u32);
            let r = ladder::block_sums(dev, LadderKernel::Neighbored, b, &src, &mut partials);
            expect_invalid(
                label,
                "ladder block",
                r,
                "block",
                &b.to_string(),
                "subgroup size",
            );
            assert_untouched(dev, label, &partials, 7);
        }
        // A launch's workgroup width through the trait itself.
        let launch_block = |block: u32| {
            let consts = [("OP", 0), ("SEGM", 1)];
            let params = [100u32, 0, 32, 0];
            dev.launch(&Launch {
                kernel: Kernel {
                    name: "shfl",
                    elem: ElemKind::U32,
                    consts: &consts,
                },
                block,
                groups: [1, 1],
                bindings: &[src.binding(0, 100), dst.binding(0, 100)],
                params: bytemuck::cast_slice(&params),
            })
        };
        for b in [0u32, 48, 100, 4096] {
            match launch_block(b) {
                Err(Error::InvalidParameter { name: "block", .. }) => {}
                other => panic!(
                    "{label}: launch block {b}: expected InvalidParameter(block), got {other:?}"
                ),
            }
        }
        assert_untouched(dev, label, &dst, 7);
        still_works(dev, label, "invalid widths");
    });
}

#[test]
fn invalid_deltas_name_delta_and_its_range() {
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let input: Vec<f64> = (0..70).map(f64::from).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut dst = poisoned(dev, 70, -1.5f64);
        for delta in [-1, 32, 33, 1000, i32::MIN, i32::MAX] {
            for op in [ShflOp::Up { delta }, ShflOp::Down { delta }] {
                let what = op.to_string();
                let v = delta.to_string();
                let r = shfl::shfl(dev, op, 32, &src, &mut dst);
                expect_invalid(label, &what, r, "delta", &v, "0..=31");
                let r = shfl::shfl_host(dev, op, 8, &input);
                expect_invalid(label, &what, r, "delta", &v, "0..=31");
                expect_invalid(label, &what, op.validate(), "delta", &v, "0..=31");
            }
        }
        assert_untouched(dev, label, &dst, -1.5);
        still_works(dev, label, "invalid deltas");
    });
}

#[test]
fn invalid_offsets_name_the_offset_and_its_range() {
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let input: Vec<i64> = (0..64).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut dst = poisoned(dev, 64, 99i64);
        for offset in [-32, 32, 100, i32::MIN, i32::MAX] {
            let op = ShflOp::Wrap { offset };
            let v = offset.to_string();
            let r = shfl::shfl(dev, op, 16, &src, &mut dst);
            expect_invalid(label, "wrap", r, "offset", &v, "-31..=31");
        }
        for src_lane in [-1, i32::MIN] {
            let op = ShflOp::Broadcast { src_lane };
            let r = shfl::shfl(dev, op, 4, &src, &mut dst);
            expect_invalid(
                label,
                "broadcast",
                r,
                "src_lane",
                &src_lane.to_string(),
                "0..=",
            );
        }
        assert_untouched(dev, label, &dst, 99);
        // An index past the output of a device reduce.
        let mut out = poisoned(dev, 3, 99i64);
        for index in [3usize, 4, usize::MAX] {
            let r = reduce::device_reduce(dev, ReduceOp::Sum, &src, &mut out, index);
            expect_invalid(label, "index", r, "index", &index.to_string(), "0..3");
        }
        assert_untouched(dev, label, &out, 99);
        // A binding offset that is not a multiple of the device's alignment.
        let align = dev.info().binding_alignment;
        let consts = [("OP", 0), ("SEGM", 1)];
        let params = [8u32, 0, 32, 0];
        let raw = src.raw();
        let misaligned = Binding {
            buffer: raw,
            offset: align / 2,
            bytes: 64,
        };
        let r = dev.launch(&Launch {
            kernel: Kernel {
                name: "shfl",
                elem: ElemKind::U32,
                consts: &consts,
            },
            block: 256,
            groups: [1, 1],
            bindings: &[misaligned, dst.binding(0, 8)],
            params: bytemuck::cast_slice(&params),
        });
        let v = (align / 2).to_string();
        expect_invalid(
            label,
            "binding offset",
            r,
            "binding.offset",
            &v,
            &format!("{align}"),
        );
        // Tuning knobs outside their ranges.
        let mut count = poisoned(dev, 1, 5u64);
        let tiny = CompactTuning {
            max_binding_elems: Some(MIN_BINDING_ELEMS - 1),
            ..CompactTuning::default()
        };
        let wrap = |w| CompactTuning {
            epoch_wrap: Some(w),
            ..CompactTuning::default()
        };
        let wraps = format!("{}..={}", scan::MIN_EPOCH_WRAP, scan::EPOCH_WRAP);
        for (t, name, value, allowed) in [
            (tiny, "max_binding_elems", MIN_BINDING_ELEMS - 1, "or more"),
            (wrap(0), "epoch_wrap", 0, &wraps),
            (
                wrap(scan::MIN_EPOCH_WRAP - 1),
                "epoch_wrap",
                scan::MIN_EPOCH_WRAP as usize - 1,
                &wraps,
            ),
            (
                wrap(scan::EPOCH_WRAP + 1),
                "epoch_wrap",
                scan::EPOCH_WRAP as usize + 1,
                &wraps,
            ),
        ] {
            let r = compact::compact_tuned(
                dev,
                Order::Stable,
                Predicate::Odd,
                &src,
                &mut dst,
                &mut count,
                t,
            );
            let v = value.to_string();
            expect_invalid(label, "compact tuning", r, name, &v, allowed);
        }
        let window = |k| ScanTuning {
            lookback_tiles: Some(k),
            ..ScanTuning::default()
        };
        let launch = |m| ScanTuning {
            max_launch_elems: Some(m),
            ..ScanTuning::default()
        };
        let windows = format!("1..={}", scan::MAX_LOOKBACK_TILES);
        let items = |i| ScanTuning {
            items: Some(i),
            ..ScanTuning::default()
        };
        let tiles = format!("multiple of {}", scan::TILE);
        let item_range = format!("1..={}", scan::ITEMS);
        // 8-byte elements have no register tile.
        let in_registers = ScanTuning {
            registers: Some(true),
            ..ScanTuning::default()
        };
        let register_tile = "None or Some(false)".to_string();
        let depth = ScanTuning {
            near_depth: Some(2),
            ..ScanTuning::default()
        };
        let depths = format!("one of {:?}", scan::NEAR_DEPTHS);
        let wrap = |w| ScanTuning {
            epoch_wrap: Some(w),
            ..ScanTuning::default()
        };
        let wraps = format!("{}..={}", scan::MIN_EPOCH_WRAP, scan::EPOCH_WRAP);
        let k_high = scan::MAX_LOOKBACK_TILES + 1;
        for (t, name, value, allowed) in [
            (window(0), "lookback_tiles", 0.to_string(), &windows),
            (
                window(k_high),
                "lookback_tiles",
                k_high.to_string(),
                &windows,
            ),
            (items(0), "items", 0.to_string(), &item_range),
            (depth, "near_depth", 2.to_string(), &depths),
            (wrap(0), "epoch_wrap", 0.to_string(), &wraps),
            (
                wrap(scan::MIN_EPOCH_WRAP - 1),
                "epoch_wrap",
                (scan::MIN_EPOCH_WRAP - 1).to_string(),
                &wraps,
            ),
            (
                wrap(scan::EPOCH_WRAP + 1),
                "epoch_wrap",
                (scan::EPOCH_WRAP + 1).to_string(),
                &wraps,
            ),
            (items(17), "items", 17.to_string(), &item_range),
            (launch(1), "max_launch_elems", 1.to_string(), &tiles),
            (
                in_registers,
                "registers",
                "Some(true)".to_string(),
                &register_tile,
            ),
            (
                launch(scan::TILE + 1),
                "max_launch_elems",
                (scan::TILE + 1).to_string(),
                &tiles,
            ),
        ] {
            let r =
                scan::device_scan_tuned(dev, ReduceOp::Sum, ScanKind::Inclusive, &src, &mut dst, t);
            expect_invalid(label, "scan tuning", r, name, &value, allowed);
        }
        assert_untouched(dev, label, &dst, 99);
        assert_untouched(dev, label, &count, 5);
        still_works(dev, label, "invalid offsets");
    });
}

#[test]
fn invalid_masks_and_operands_name_the_parameter_and_its_range() {
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let input: Vec<u64> = (0..200).collect();
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let mut dst = poisoned(dev, 200, 1u64 << 40);
        for mask in [-1, 32, 64, i32::MIN, i32::MAX] {
            let v = mask.to_string();
            let op = ShflOp::Xor { lane_mask: mask };
            let r = shfl::shfl(dev, op, 32, &src, &mut dst);
            expect_invalid(label, "xor", r, "lane_mask", &v, "0..=31");
            let r = shfl::shfl_xor_array(dev, mask, 32, &src, &mut dst);
            expect_invalid(label, "xor array", r, "lane_mask", &v, "0..=31");
            let r = shfl::shfl_xor_array_host(dev, mask, 2, &input);
            expect_invalid(label, "xor array", r, "lane_mask", &v, "0..=31");
        }
        assert_untouched(dev, label, &dst, 1 << 40);
        // Predicates: an empty or NaN range.
        let floats: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let fsrc = DeviceVec::from_slice(dev, &floats).unwrap();
        let mut records = poisoned(dev, vote::warps(100) * RECORD_WORDS, 3u32);
        let mut ranks = poisoned(dev, 100, 3u32);
        let mut out = poisoned(dev, 100, -2.0f32);
        let mut count = poisoned(dev, 1, 5u64);
        for pred in [
            Predicate::InRange { lo: 3.0, hi: 2.0 },
            Predicate::InRange {
                lo: f32::NAN,
                hi: 2.0,
            },
            Predicate::InRange {
                lo: 0.0,
                hi: f32::NAN,
            },
        ] {
            let what = pred.to_string();
            let bad = |r: Result<()>| match r {
                Err(ref e @ Error::InvalidParameter { name: "lo", .. }) => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains("`lo`") && msg.contains("hi"),
                        "{label}: {what}: {msg}"
                    );
                }
                other => panic!("{label}: {what}: expected InvalidParameter(lo), got {other:?}"),
            };
            bad(vote::vote(dev, pred, &fsrc, &mut records, &mut ranks));
            bad(vote::vote_host(dev, pred, &floats).map(|_| ()));
            for order in [Order::Stable, Order::Unordered] {
                bad(compact::compact(
                    dev, order, pred, &fsrc, &mut out, &mut count,
                ));
                bad(compact::compact_host(dev, order, pred, &floats).map(|_| ()));
            }
        }
        assert_untouched(dev, label, &records, 3);
        assert_untouched(dev, label, &ranks, 3);
        assert_untouched(dev, label, &out, -2.0);
        assert_untouched(dev, label, &count, 5);
        // Operators a type or a family does not define.
        let mut fout = poisoned(dev, 100, -2.0f32);
        for op in [ReduceOp::And, ReduceOp::Or, ReduceOp::Xor] {
            let r = reduce::device_reduce_host(dev, op, &floats);
            expect_invalid(
                label,
                "float bitwise reduce",
                r,
                "op",
                op.name(),
                "sum, product, min or max for f32",
            );
            let r = reduce::warp_reduce(dev, op, WarpForm::Butterfly, &fsrc, &mut fout);
            expect_invalid(label, "float bitwise reduce", r, "op", op.name(), "for f32");
        }
        for op in [ReduceOp::Product, ReduceOp::And, ReduceOp::Xor] {
            let r = scan::device_scan_host(dev, op, ScanKind::Exclusive, &input);
            expect_invalid(label, "scan op", r, "op", op.name(), "sum, min or max");
        }
        assert_untouched(dev, label, &fout, -2.0);
        still_works(dev, label, "invalid masks and operands");
    });
}

#[test]
fn outputs_of_the_wrong_length_are_refused_and_left_alone() {
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let n = 1000usize;
        let ints: Vec<i32> = (0..n as i32).collect();
        let floats: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let src = DeviceVec::from_slice(dev, &ints).unwrap();
        let fsrc = DeviceVec::from_slice(dev, &floats).unwrap();
        let p = -77i32;
        let fp = -77.0f64;
        for len in [0usize, 1, n - 1] {
            let mut short = poisoned(dev, len, p);
            let mut fshort = poisoned(dev, len, fp);
            let (nn, l) = (n as u64, len as u64);
            let r = shfl::shfl(dev, ShflOp::Up { delta: 1 }, 32, &src, &mut short);
            expect_length(label, "shfl", r, "output", nn, l);
            let r = shfl::shfl_xor_array(dev, 1, 32, &src, &mut short);
            expect_length(label, "shfl_xor_array", r, "output", nn, l);
            let r = reduce::warp_reduce(dev, ReduceOp::Sum, WarpForm::Butterfly, &src, &mut short);
            expect_length(label, "warp reduce", r, "output", nn, l);
            let r = scan::warp_scan(dev, ReduceOp::Max, ScanKind::Inclusive, &src, &mut short);
            expect_length(label, "warp scan", r, "output", nn, l);
            let r = scan::block_scan(dev, ReduceOp::Min, ScanKind::Exclusive, &src, &mut short);
            expect_length(label, "block scan", r, "output", nn, l);
            let r = scan::device_scan(dev, ReduceOp::Sum, ScanKind::Inclusive, &src, &mut short);
            expect_length(label, "device scan", r, "output", nn, l);
            let r =
                stencil::moving_average(dev, StencilVariant::Shuffle, [0.2; 5], &fsrc, &mut fshort);
            expect_length(label, "stencil", r, "output", nn, l);
            let r = stencil::moving_average(
                dev,
                StencilVariant::SharedMemory,
                [0.2; 5],
                &fsrc,
                &mut fshort,
            );
            expect_length(label, "stencil", r, "output", nn, l);
            let mut count = poisoned(dev, 1, 9u64);
            for order in [Order::Stable, Order::Unordered] {
                let r = compact::compact(dev, order, Predicate::Odd, &src, &mut short, &mut count);
                expect_length(label, "compact", r, "output", nn, l);
            }
            let mut records = poisoned(dev, len, 3u32);
            let mut ranks = poisoned(dev, n, 3u32);
            let r = vote::vote(dev, Predicate::Even, &src, &mut records, &mut ranks);
            let want = (vote::warps(n) * RECORD_WORDS) as u64;
            expect_length(label, "vote records", r, "records", want, l);
            assert_untouched(dev, label, &short, p);
            assert_untouched(dev, label, &fshort, fp);
            assert_untouched(dev, label, &count, 9);
            assert_untouched(dev, label, &records, 3);
            assert_untouched(dev, label, &ranks, 3);
        }
        // Outputs with one slot per warp or block.
        let mut per_warp = poisoned(dev, n / 32, p);
        let r = reduce::warp_reduce(dev, ReduceOp::Sum, WarpForm::ShiftDown, &src, &mut per_warp);
        expect_length(
            label,
            "shift-down reduce",
            r,
            "output",
            n.div_ceil(32) as u64,
            (n / 32) as u64,
        );
        let mut per_block = poisoned(dev, 2, p);
        let r = reduce::block_reduce(dev, ReduceOp::Min, &src, &mut per_block);
        expect_length(label, "block reduce", r, "output", 4, 2);
        let r = ladder::block_sums(dev, LadderKernel::Unrolling8, 256, &src, &mut per_block);
        expect_length(label, "ladder partials", r, "output", 1, 2);
        assert_untouched(dev, label, &per_warp, p);
        assert_untouched(dev, label, &per_block, p);
        // Counts, ranks and sums with no room.
        let mut out = poisoned(dev, n, p);
        let mut no_count = DeviceVec::<u64>::alloc(dev, 0).unwrap();
        let r = compact::compact(
            dev,
            Order::Unordered,
            Predicate::Odd,
            &src,
            &mut out,
            &mut no_count,
        );
        expect_length(label, "compact count", r, "count", 1, 0);
        let mut records = poisoned(dev, vote::warps(n) * RECORD_WORDS, 3u32);
        let mut ranks = poisoned(dev, n + 1, 3u32);
        let r = vote::vote(dev, Predicate::Even, &src, &mut records, &mut ranks);
        expect_length(label, "vote ranks", r, "ranks", n as u64, n as u64 + 1);
        let mut empty = DeviceVec::<i32>::alloc(dev, 0).unwrap();
        let r = reduce::device_reduce(dev, ReduceOp::Sum, &src, &mut empty, 0);
        expect_invalid(label, "device reduce into nothing", r, "index", "0", "0..0");
        let mut partials = poisoned(dev, 1, p);
        let r = ladder::reduce_with_partials(
            dev,
            LadderKernel::Shfl,
            256,
            &src,
            &mut partials,
            &mut empty,
        );
        expect_invalid(
            label,
            "ladder sum into nothing",
            r,
            "output",
            "0 elements",
            "at least 1",
        );
        assert_untouched(dev, label, &out, p);
        assert_untouched(dev, label, &records, 3);
        assert_untouched(dev, label, &ranks, 3);
        assert_untouched(dev, label, &partials, p);
        // Empty inputs where an operation needs elements.
        let none = DeviceVec::<i32>::alloc(dev, 0).unwrap();
        let empty_input = |r: Result<()>, what: &str| match r {
            Err(ref e @ Error::EmptyInput { name: "input" }) => {
                assert!(e.to_string().contains("`input`"), "{label}: {what}: {e}")
            }
            other => panic!("{label}: {what}: expected EmptyInput, got {other:?}"),
        };
        let mut none_out = DeviceVec::<i32>::alloc(dev, 0).unwrap();
        empty_input(
            shfl::shfl(dev, ShflOp::Up { delta: 1 }, 32, &none, &mut none_out),
            "shfl",
        );
        empty_input(
            reduce::block_reduce(dev, ReduceOp::Sum, &none, &mut none_out),
            "block reduce",
        );
        empty_input(
            scan::warp_scan(
                dev,
                ReduceOp::Sum,
                ScanKind::Inclusive,
                &none,
                &mut none_out,
            ),
            "warp scan",
        );
        empty_input(
            ladder::block_sums_host::<i32>(dev, LadderKernel::Shfl, 256, &[]).map(|_| ()),
            "ladder",
        );
        empty_input(
            stencil::moving_average_host::<f32>(dev, StencilVariant::Shuffle, [1.0; 5], &[])
                .map(|_| ()),
            "stencil",
        );
        still_works(dev, label, "wrong output lengths");
    });
}

#[test]
fn ranges_beyond_a_buffer_are_refused() {
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let buf = DeviceVec::from_slice(dev, &[5u32; 16]).unwrap();
        let other = DeviceVec::from_slice(dev, &[6u32; 4]).unwrap();
        let raw = buf.raw();
        expect_bounds(label, "write", dev.write(raw, 60, &[0; 8]), 60, 68, 64);
        expect_bounds(label, "write", dev.write(raw, 65, &[]), 65, 65, 64);
        expect_bounds(
            label,
            "write",
            dev.write(raw, u64::MAX, &[1]),
            u64::MAX,
            u64::MAX,
            64,
        );
        let mut host = [0u8; 16];
        expect_bounds(label, "read", dev.read(raw, 56, &mut host), 56, 72, 64);
        expect_bounds(
            label,
            "read",
            dev.read(raw, u64::MAX - 3, &mut host),
            u64::MAX - 3,
            u64::MAX,
            64,
        );
        let r = dev.copy(raw, 0, other.raw(), 0, 32);
        expect_bounds(label, "copy destination", r, 0, 32, 16);
        let r = dev.copy(other.raw(), 8, raw, 0, 16);
        expect_bounds(label, "copy source", r, 8, 24, 16);
        let r = dev.copy(raw, u64::MAX, other.raw(), 0, 2);
        expect_bounds(label, "copy source", r, u64::MAX, u64::MAX, 64);
        // A launch binding that runs past its buffer.
        let consts = [("OP", 0), ("SEGM", 1)];
        let params = [16u32, 0, 32, 0];
        for (offset, bytes) in [(0u64, 68u64), (48, 32), (u64::MAX - 15, 32)] {
            let past = Binding {
                buffer: raw,
                offset,
                bytes,
            };
            let r = dev.launch(&Launch {
                kernel: Kernel {
                    name: "shfl",
                    elem: ElemKind::U32,
                    consts: &consts,
                },
                block: 256,
                groups: [1, 1],
                bindings: &[past, other.binding(0, 4)],
                params: bytemuck::cast_slice(&params),
            });
            expect_bounds(
                label,
                "launch binding",
                r,
                offset,
                offset.saturating_add(bytes),
                64,
            );
        }
        // A parameter block larger than a launch carries.
        let big = [0u8; MAX_PARAMS + 4];
        let r = dev.launch(&Launch {
            kernel: Kernel {
                name: "shfl",
                elem: ElemKind::U32,
                consts: &consts,
            },
            block: 256,
            groups: [1, 1],
            bindings: &[buf.binding(0, 16), buf.binding(0, 16)],
            params: &big,
        });
        match r {
            Err(
                ref e @ Error::InvalidParameter {
                    name: "params",
                    ref allowed,
                    ..
                },
            ) => {
                assert!(allowed.contains(&MAX_PARAMS.to_string()), "{label}: {e}")
            }
            other => panic!("{label}: params: expected InvalidParameter(params), got {other:?}"),
        }
        // Lengths whose byte size does not fit in 64 bits.
        for len in [usize::MAX, usize::MAX / 2, 1 << 62] {
            let r = DeviceVec::<u32>::alloc(dev, len);
            expect_invalid(
                label,
                "huge length",
                r,
                "len",
                &len.to_string(),
                "u64::MAX bytes",
            );
        }
        assert_eq!(buf.to_vec(dev).unwrap(), [5; 16], "{label}");
        assert_eq!(other.to_vec(dev).unwrap(), [6; 4], "{label}");
        still_works(dev, label, "out-of-range transfers");
    });
}

/// `r` is [`Error::ForeignBuffer`] naming the buffer's device `owner` and the device `user`.
#[track_caller]
fn expect_foreign<T: Debug>(what: &str, r: Result<T>, owner: &str, user: &str) {
    match r {
        Err(
            ref e @ Error::ForeignBuffer {
                ref buffer,
                ref device,
            },
        ) => {
            assert!(
                buffer.contains(owner),
                "{what}: {e}: buffer should name `{owner}`"
            );
            assert!(
                device.contains(user),
                "{what}: {e}: device should name `{user}`"
            );
            assert_ne!(
                buffer, device,
                "{what}: {e}: the two devices must be told apart"
            );
        }
        other => panic!("{what}: expected ForeignBuffer, got {other:?}"),
    }
}

/// Every entry point refuses `foreign` (a buffer of another device) on `dev`.
fn refuses_foreign(dev: &dyn Device, foreign: &RawBuffer, owner: &str, user: &str) {
    let own = DeviceVec::from_slice(dev, &[4u32; 8]).unwrap();
    let mut host = [0u8; 8];
    expect_foreign("read", dev.read(foreign, 0, &mut host), owner, user);
    expect_foreign("write", dev.write(foreign, 0, &[1, 2, 3, 4]), owner, user);
    expect_foreign(
        "copy from",
        dev.copy(foreign, 0, own.raw(), 0, 4),
        owner,
        user,
    );
    expect_foreign(
        "copy to",
        dev.copy(own.raw(), 0, foreign, 0, 4),
        owner,
        user,
    );
    let consts = [("OP", 0), ("SEGM", 1)];
    let params = [8u32, 0, 32, 0];
    let r = dev.launch(&Launch {
        kernel: Kernel {
            name: "shfl",
            elem: ElemKind::U32,
            consts: &consts,
        },
        block: 256,
        groups: [1, 1],
        bindings: &[
            own.binding(0, 8),
            Binding {
                buffer: foreign,
                offset: 0,
                bytes: 8,
            },
        ],
        params: bytemuck::cast_slice(&params),
    });
    expect_foreign("launch", r, owner, user);
    assert_eq!(own.to_vec(dev).unwrap(), [4; 8], "{user}");
}

#[test]
fn buffers_of_another_device_or_backend_are_refused() {
    // Two opens of the same Vulkan device are two devices.
    let a = open_vulkan();
    let b = open_vulkan();
    assert_ne!(a.id(), b.id());
    let data: Vec<u32> = (0..100).collect();
    let on_a = DeviceVec::from_slice(&*a, &data).unwrap();
    let name = a.info().name.clone();
    refuses_foreign(&*b, on_a.raw(), &name, &name);
    let mut dst = poisoned(&*b, 100, 0u32);
    expect_foreign(
        "shfl",
        shfl::shfl(&*b, ShflOp::Up { delta: 1 }, 32, &on_a, &mut dst),
        &name,
        &name,
    );
    let mut out = poisoned(&*b, 1, 0u32);
    expect_foreign(
        "reduce",
        reduce::device_reduce(&*b, ReduceOp::Sum, &on_a, &mut out, 0),
        &name,
        &name,
    );
    assert_untouched(&*b, "second device", &dst, 0);
    assert_eq!(on_a.to_vec(&*a).unwrap(), data);
    still_works(&*a, "first device", "a foreign buffer");
    still_works(&*b, "second device", "a foreign buffer");
    for dev in [&a, &b] {
        let messages = dev.validation_messages();
        assert!(messages.is_empty(), "{}", messages.join("\n"));
    }
    // Every test device refuses buffers of the others, of a fresh Vulkan device, and of a
    // backend it has never seen (a buffer object of another type, with its own device id or
    // with this device's id).
    let fresh = DeviceVec::from_slice(&*b, &data).unwrap();
    for_each_device(|d| {
        let (dev, label) = (&*d.dev, d.label.as_str());
        let user = dev.info().name.clone();
        refuses_foreign(dev, fresh.raw(), &name, &user);
        for other in devices().iter().filter(|o| o.dev.id() != dev.id()) {
            let theirs = DeviceVec::from_slice(&*other.dev, &data).unwrap();
            refuses_foreign(dev, theirs.raw(), &other.dev.info().name, &user);
        }
        let alien = RawBuffer::new(
            Arc::new([0u8; 64]),
            64,
            DeviceId::fresh(),
            "metal:0 Apple M9",
        );
        refuses_foreign(dev, &alien, "metal:0 Apple M9", &user);
        let impostor = RawBuffer::new(Arc::new([0u8; 64]), 64, dev.id(), "not a real buffer");
        refuses_foreign(dev, &impostor, "not a real buffer", &user);
        still_works(dev, label, "foreign buffers");
    });
}

/// A fresh device of the same backend as `d`, so that its memory counts are its own.
fn twin(d: &common::TestDevice) -> (Arc<dyn Device>, Option<Arc<VulkanDevice>>) {
    match d.dev.info().backend {
        BackendKind::Vulkan => {
            let vk = open_vulkan();
            (vk.clone(), Some(vk))
        }
        BackendKind::Cuda => (
            Arc::new(xwarp::cuda::CudaDevice::new(d.dev.info().index).unwrap()),
            None,
        ),
    }
}

#[test]
fn an_allocation_larger_than_the_device_is_an_error_that_leaks_nothing() {
    for d in devices() {
        let (dev, vk) = twin(d);
        let label = format!("{} (fresh)", d.label);
        let dev = &*dev;
        still_works(dev, &label, "opening");
        let before: MemoryUsage = dev.memory_usage().expect("the backend counts its memory");
        for attempt in 0..20 {
            match dev.alloc(TIB) {
                Err(
                    ref e @ Error::OutOfMemory {
                        bytes, ref device, ..
                    },
                ) => {
                    assert_eq!(bytes, TIB, "{label}: {e}");
                    assert!(device.contains(&dev.info().name), "{label}: {e}");
                    assert!(e.to_string().contains(&TIB.to_string()), "{label}: {e}");
                }
                Ok(_) => panic!("{label}: a 1 TiB allocation succeeded"),
                Err(e) => panic!("{label}: attempt {attempt}: expected OutOfMemory, got {e:?}"),
            }
            // The same through a typed vector and an algorithm's own scratch allocation.
            match DeviceVec::<f64>::alloc(dev, (TIB / 8) as usize) {
                Err(Error::OutOfMemory { bytes, .. }) => assert_eq!(bytes, TIB, "{label}"),
                other => panic!("{label}: expected OutOfMemory, got {other:?}"),
            }
        }
        // Beyond any device: up to the largest size a buffer can name.
        for bytes in [1u64 << 50, 1 << 62, u64::MAX / 2, u64::MAX] {
            match dev.alloc(bytes) {
                Err(ref e @ Error::OutOfMemory { bytes: b, .. }) => {
                    assert_eq!(b, bytes, "{label}: {e}");
                    assert!(e.to_string().contains(&bytes.to_string()), "{label}: {e}");
                }
                other => panic!("{label}: {bytes} bytes: expected OutOfMemory, got {other:?}"),
            }
        }
        let after = dev.memory_usage().unwrap();
        assert_eq!(
            (after.buffers, after.bytes),
            (before.buffers, before.bytes),
            "{label}: buffers and bytes held before and after the failed allocations"
        );
        // Vulkan's reserve is xwarp's own allocator's and must not move; CUDA's is the
        // device-wide use the driver reports (every context and process), which the driver's
        // own bookkeeping moves by a page now and then (seen on an H100: 64 KiB).
        if dev.info().backend == xwarp::BackendKind::Vulkan {
            assert_eq!(
                after.reserved_bytes, before.reserved_bytes,
                "{label}: memory reserved before and after the failed allocations"
            );
        }
        // A large but valid allocation still succeeds and round-trips, and is given back.
        let big = 64usize << 20;
        let data: Vec<u32> = (0..big as u32 / 4)
            .map(|i| i.wrapping_mul(2654435761))
            .collect();
        {
            let v = DeviceVec::from_slice(dev, &data).unwrap();
            let during = dev.memory_usage().unwrap();
            assert!(
                during.bytes >= before.bytes + big as u64,
                "{label}: {during} vs {before}"
            );
            assert_eq!(v.to_vec(dev).unwrap(), data, "{label}");
        }
        dev.synchronize().unwrap();
        let end = dev.memory_usage().unwrap();
        assert_eq!(
            (end.buffers, end.bytes),
            (before.buffers, before.bytes),
            "{label}: {end}"
        );
        eprintln!("{label}: memory {before} before, {end} after");
        still_works(dev, &label, "a 1 TiB allocation");
        if let Some(vk) = vk {
            let messages = vk.validation_messages();
            assert!(messages.is_empty(), "{label}: {}", messages.join("\n"));
        }
    }
}

#[test]
fn a_missing_cuda_driver_or_library_is_a_typed_error_naming_it() {
    match xwarp::cuda::available() {
        Ok(n) => {
            assert!(n > 0);
            match xwarp::cuda::CudaDevice::new(n) {
                Err(Error::NoSuchDevice {
                    backend: BackendKind::Cuda,
                    selector,
                    available,
                }) => {
                    assert_eq!(selector, n.to_string());
                    assert!(available.starts_with("0 ("), "{available}");
                }
                other => panic!("expected NoSuchDevice, got {other:?}"),
            }
        }
        Err(
            ref e @ Error::BackendUnavailable {
                backend,
                ref reason,
            },
        ) => {
            assert_eq!(backend, BackendKind::Cuda);
            // What is missing is named, and where to get it.
            let named = ["libcuda.so", "libnvrtc.so", "cuInit", "no device"];
            assert!(named.iter().any(|n| reason.contains(n)), "{e}");
            if reason.contains("libcuda.so") {
                assert!(
                    reason.contains("driver") && reason.contains("install"),
                    "{e}"
                );
            }
            for r in [
                xwarp::cuda::CudaDevice::new(0).map(|_| ()),
                xwarp::cuda::list_devices().map(|_| ()),
                xwarp::backend::open(&Options {
                    backend: BackendChoice::Cuda,
                    ..Options::default()
                })
                .map(|_| ()),
            ] {
                match r {
                    Err(Error::BackendUnavailable {
                        backend: BackendKind::Cuda,
                        reason: again,
                    }) => assert_eq!(&again, reason),
                    other => panic!("expected BackendUnavailable, got {other:?}"),
                }
            }
        }
        Err(other) => panic!("expected BackendUnavailable, got {other:?}"),
    }
    for d in devices() {
        still_works(&*d.dev, &d.label, "asking for CUDA");
    }
}

#[test]
fn a_vulkan_selector_that_matches_nothing_names_the_devices_there_are() {
    let names: Vec<String> = xwarp::vulkan::list_devices()
        .unwrap()
        .into_iter()
        .map(|i| i.name)
        .collect();
    for sel in [
        DeviceSelector::Name("no-such-gpu".into()),
        DeviceSelector::Index(names.len()),
        DeviceSelector::Index(usize::MAX),
    ] {
        for r in [
            VulkanDevice::new(&VulkanOptions {
                device: Some(sel.clone()),
                validation: true,
                ..Default::default()
            })
            .map(|_| ()),
            xwarp::backend::open(&Options {
                backend: BackendChoice::Vulkan,
                device: Some(sel.clone()),
                validation: true,
            })
            .map(|_| ()),
        ] {
            match r {
                Err(
                    ref e @ Error::NoSuchDevice {
                        backend: BackendKind::Vulkan,
                        ref selector,
                        ref available,
                    },
                ) => {
                    assert_eq!(selector, &sel.to_string());
                    assert!(names.iter().all(|n| available.contains(n)), "{e}");
                    assert!(e.to_string().contains(&sel.to_string()), "{e}");
                }
                other => panic!("{sel}: expected NoSuchDevice, got {other:?}"),
            }
        }
    }
    assert!(matches!(
        "".parse::<DeviceSelector>(),
        Err(Error::InvalidParameter { name: "device", .. })
    ));
    for d in devices() {
        still_works(&*d.dev, &d.label, "a selector that matched nothing");
    }
}

/// Set in the child process [`a_machine_without_a_vulkan_driver_gets_a_typed_error`] starts.
const NO_DRIVER_CHILD: &str = "XWARP_TEST_NO_VULKAN_DRIVER_CHILD";

#[test]
fn a_machine_without_a_vulkan_driver_gets_a_typed_error() {
    if std::env::var_os(NO_DRIVER_CHILD).is_some() {
        // In the child, where the loader is pointed at a driver manifest that does not exist.
        for r in [
            VulkanDevice::new(&VulkanOptions::default()).map(|_| ()),
            VulkanDevice::new(&VulkanOptions {
                device: None,
                validation: true,
                ..Default::default()
            })
            .map(|_| ()),
            xwarp::vulkan::list_devices().map(|_| ()),
            xwarp::backend::open(&Options {
                backend: BackendChoice::Vulkan,
                ..Options::default()
            })
            .map(|_| ()),
        ] {
            match r {
                Err(
                    ref e @ Error::BackendUnavailable {
                        backend: BackendKind::Vulkan,
                        ref reason,
                    },
                ) => {
                    assert!(
                        reason.contains("driver") && reason.contains("install"),
                        "{e}"
                    );
                    assert!(reason.contains("mesa-vulkan-drivers"), "{e}");
                }
                other => panic!("expected BackendUnavailable(vulkan), got {other:?}"),
            }
        }
        return;
    }
    // The loader reads these when an instance is made: a child process gets them alone, so
    // the other tests' devices are not affected.
    let missing = "/nonexistent/xwarp_no_such_icd.json";
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_machine_without_a_vulkan_driver_gets_a_typed_error",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(NO_DRIVER_CHILD, "1")
        .env("VK_DRIVER_FILES", missing)
        .env("VK_ICD_FILENAMES", missing)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
    for d in devices() {
        still_works(&*d.dev, &d.label, "a process without a driver");
    }
}

/// A real device that reports fewer capabilities than it has: what the algorithms see on a
/// device lacking a subgroup operation class or a 64-bit type. Counts launches, so a refusal
/// can be shown to come before any GPU work.
struct Limited {
    inner: Arc<dyn Device>,
    info: DeviceInfo,
    launches: AtomicUsize,
}

impl Limited {
    fn new(inner: &Arc<dyn Device>, edit: impl FnOnce(&mut DeviceInfo)) -> Self {
        let mut info = inner.info().clone();
        edit(&mut info);
        Limited {
            inner: inner.clone(),
            info,
            launches: AtomicUsize::new(0),
        }
    }
}

impl Device for Limited {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn id(&self) -> DeviceId {
        self.inner.id()
    }
    fn alloc(&self, bytes: u64) -> Result<RawBuffer> {
        self.inner.alloc(bytes)
    }
    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        self.inner.write(dst, offset, src)
    }
    fn copy(&self, src: &RawBuffer, so: u64, dst: &RawBuffer, d_o: u64, bytes: u64) -> Result<()> {
        self.inner.copy(src, so, dst, d_o, bytes)
    }
    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.inner.read(src, offset, dst)
    }
    fn launch(&self, launch: &Launch<'_>) -> Result<()> {
        self.launches.fetch_add(1, Ordering::Relaxed);
        self.inner.launch(launch)
    }
    fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }
    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        self.inner.time(work)
    }
}

/// Runs every algorithm family once on `dev` (small inputs), returning each family's result.
fn every_family(dev: &dyn Device) -> Vec<(&'static str, Result<()>)> {
    let ints: Vec<i32> = (0..300).collect();
    let floats: Vec<f32> = (0..300).map(|i| i as f32).collect();
    vec![
        (
            "shfl",
            shfl::shfl_host(dev, ShflOp::Xor { lane_mask: 1 }, 32, &ints).map(|_| ()),
        ),
        (
            "shfl up",
            shfl::shfl_host(dev, ShflOp::Up { delta: 1 }, 32, &ints).map(|_| ()),
        ),
        (
            "vote",
            vote::vote_host(dev, Predicate::Odd, &ints).map(|_| ()),
        ),
        (
            "compact",
            compact::compact_host(dev, Order::Stable, Predicate::Odd, &ints).map(|_| ()),
        ),
        (
            "compact unordered",
            compact::compact_host(dev, Order::Unordered, Predicate::Odd, &ints).map(|_| ()),
        ),
        (
            "warp reduce",
            reduce::warp_reduce_host(dev, ReduceOp::Max, WarpForm::ShiftDown, &ints).map(|_| ()),
        ),
        (
            "block reduce",
            reduce::block_reduce_host(dev, ReduceOp::Sum, &floats).map(|_| ()),
        ),
        (
            "device reduce",
            reduce::device_reduce_host(dev, ReduceOp::Min, &ints).map(|_| ()),
        ),
        (
            "device scan",
            scan::device_scan_host(dev, ReduceOp::Sum, ScanKind::Exclusive, &floats).map(|_| ()),
        ),
        (
            "ladder shfl",
            ladder::reduce_host(dev, LadderKernel::Shfl, 256, &ints).map(|_| ()),
        ),
        (
            "stencil",
            stencil::moving_average_host(dev, StencilVariant::Shuffle, [0.25; 5], &floats)
                .map(|_| ()),
        ),
    ]
}

/// The subgroup operation classes each family's steps need on a device described by `info`,
/// in order (`every_family`'s names).
fn needs(family: &str, info: &DeviceInfo) -> Vec<SubgroupFeatures> {
    use SubgroupFeatures as F;
    let shuffles = F::BASIC | F::SHUFFLE | F::SHUFFLE_RELATIVE;
    match family {
        // The `f32` scan's exact variant (a device whose driver flushes subnormals) asks the
        // subgroup whether any sum left the fast range (`subgroupAny`).
        "device scan" if info.subnormals_f32 == xwarp::Subnormals::Emulated => {
            vec![shuffles | F::VOTE]
        }
        "shfl" | "shfl up" | "warp reduce" | "block reduce" | "device reduce" | "device scan"
        | "stencil" => vec![shuffles],
        "vote" => vec![F::BASIC | F::VOTE | F::BALLOT],
        "compact" | "compact unordered" => vec![F::BASIC | F::BALLOT | F::SHUFFLE],
        // The rung, then a device reduce of its partials.
        "ladder shfl" => vec![F::BASIC | F::SHUFFLE, shuffles],
        _ => unreachable!("{family}"),
    }
}

#[test]
fn a_device_lacking_a_subgroup_feature_is_told_which() {
    use SubgroupFeatures as F;
    let classes = [
        (F::BASIC, "basic"),
        (F::VOTE, "vote"),
        (F::BALLOT, "ballot"),
        (F::SHUFFLE, "shuffle"),
        (F::SHUFFLE_RELATIVE, "shuffle_relative"),
        (F::ARITHMETIC, "arithmetic"),
    ];
    for d in devices() {
        let label = d.label.as_str();
        // Each class removed on its own; and no subgroup support at all.
        let mut removals: Vec<(SubgroupFeatures, String)> =
            classes.iter().map(|&(f, n)| (f, n.to_string())).collect();
        removals.push((F(u32::MAX), "everything".into()));
        for (removed, what) in removals {
            let lim = Limited::new(&d.dev, |i| {
                i.subgroup_features = F(i.subgroup_features.0 & !removed.0)
            });
            for (family, r) in every_family(&lim) {
                // The classes the first step that cannot run lacks.
                let have = lim.info.subgroup_features;
                let missing = needs(family, &lim.info)
                    .into_iter()
                    .map(|step| have.missing(step))
                    .find(|m| *m != F::default())
                    .unwrap_or_default();
                if missing == F::default() {
                    r.unwrap_or_else(|e| panic!("{label} without {what}: {family}: {e}"));
                    continue;
                }
                match r {
                    Err(ref e @ Error::MissingFeature { ref device, missing: ref m }) => {
                        assert_eq!(device, &d.dev.info().name, "{e}");
                        // Exactly the missing classes are named.
                        assert!(m.contains(&format!("subgroup operations {missing} ")), "{label} without {what}: {family}: {e}");
                        let msg = e.to_string();
                        assert!(msg.contains(&missing.to_string()), "{msg}");
                    }
                    other => panic!("{label} without {what}: {family}: expected MissingFeature({missing}), got {other:?}"),
                }
            }
        }
        // A family refused for a missing class queues no GPU work.
        let lim = Limited::new(&d.dev, |i| {
            i.subgroup_features = F(i.subgroup_features.0 & !F::SHUFFLE.0)
        });
        let src = DeviceVec::from_slice(&lim, &[1u32; 64]).unwrap();
        let mut dst = poisoned(&lim, 64, 0u32);
        let r = shfl::shfl(&lim, ShflOp::Xor { lane_mask: 3 }, 8, &src, &mut dst);
        assert!(matches!(r, Err(Error::MissingFeature { .. })), "{r:?}");
        assert_eq!(lim.launches.load(Ordering::Relaxed), 0, "{label}");
        assert_untouched(&lim, label, &dst, 0);
        // 64-bit element types need shaderInt64 / shaderFloat64.
        let lim = Limited::new(&d.dev, |i| {
            i.int64 = false;
            i.float64 = false;
        });
        let cases: Vec<(&str, Result<()>)> = vec![
            (
                "shaderInt64",
                reduce::device_reduce_host(&lim, ReduceOp::Sum, &[1u64, 2]).map(|_| ()),
            ),
            (
                "shaderInt64",
                scan::device_scan_host(&lim, ReduceOp::Max, ScanKind::Inclusive, &[1i64, 2])
                    .map(|_| ()),
            ),
            (
                "shaderFloat64",
                stencil::moving_average_host(
                    &lim,
                    StencilVariant::SharedMemory,
                    [1.0; 5],
                    &[1.0f64; 9],
                )
                .map(|_| ()),
            ),
            (
                "shaderFloat64",
                compact::compact_host(&lim, Order::Stable, Predicate::Odd, &[1.0f64; 9])
                    .map(|_| ()),
            ),
        ];
        for (feature, r) in cases {
            match r {
                Err(ref e @ Error::MissingFeature { ref missing, .. }) => {
                    assert!(missing.contains(feature), "{label}: {e}")
                }
                other => panic!("{label}: expected MissingFeature({feature}), got {other:?}"),
            }
        }
        // The 32-bit types and shuffles of 64-bit data (bit moves only) still run.
        let moved =
            shfl::shfl_host(&lim, ShflOp::Xor { lane_mask: 1 }, 2, &[1u64, 2, 3, 4]).unwrap();
        assert_eq!(moved, [2, 1, 4, 3], "{label}");
        for (family, r) in every_family(&lim) {
            r.unwrap_or_else(|e| panic!("{label} without 64-bit types: {family}: {e}"));
        }
        still_works(&*d.dev, label, "a limited view of it");
    }
}
