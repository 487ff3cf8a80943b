//! Soak: `XWARP_SOAK_DISPATCHES` algorithm calls (default 10,000) mixing every family, element
//! type and a spread of sizes on one device, each with freshly allocated buffers, results
//! checked against the CPU reference every [`CHECK_EVERY`] calls. Host memory (RSS) and the
//! device memory the backend holds are sampled after a warm-up and at the end, and must stay
//! flat: no live buffer may remain, the backend's reserved memory may grow by at most
//! [`DEVICE_SLACK`] bytes, and the resident set by at most [`RSS_SLACK`] bytes. The figures are
//! printed.

mod common;

use common::{for_each_device, seed};
use std::time::Instant;
use xwarp::compact::{self, Order};
use xwarp::device::MemoryUsage;
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{self, ReduceOp, WarpForm};
use xwarp::scan::{self, ScanKind};
use xwarp::shfl::{self, ShflOp};
use xwarp::stencil::{self, StencilVariant};
use xwarp::vote::{self, Predicate, RECORD_WORDS};
use xwarp::{cpu, Device, DeviceVec, Element, Result, Rng};
use xwarp_lab::validate::first_mismatch;

/// One call in this many is downloaded and compared with the CPU reference; the calls between
/// stay queued on the device until then.
const CHECK_EVERY: usize = 8;
/// Growth of the backend's reserved device memory allowed between warm-up and end: one of
/// gpu-allocator's memory blocks.
const DEVICE_SLACK: u64 = 256 << 20;
/// Growth of the resident set allowed between warm-up and end.
const RSS_SLACK: u64 = 32 << 20;

fn dispatches() -> usize {
    std::env::var("XWARP_SOAK_DISPATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

/// The resident set of this process, from `/proc/self/status`.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

/// A length: mostly small, some medium, a few up to 2^16.
fn size(rng: &mut Rng) -> usize {
    match rng.below(16) {
        0..=9 => 1 + rng.below(2048) as usize,
        10..=14 => 2049 + rng.below(14336) as usize,
        _ => 16385 + rng.below(49152) as usize,
    }
}

fn mixed_f32(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.next_f64_mixed() as f32).collect()
}

fn check<T: Element>(what: &str, want: &[T], got: &[T]) {
    if let Some(m) = first_mismatch(want, got) {
        panic!("{what}: {m}");
    }
}

/// Call `i`: queues one algorithm on fresh buffers; when `verify`, downloads the result and
/// compares it with the CPU reference.
fn dispatch(dev: &dyn Device, i: usize, rng: &mut Rng, verify: bool) -> Result<()> {
    let n = size(rng);
    let what = format!("dispatch {i} n={n}");
    match rng.below(12) {
        0 => {
            let input: Vec<u32> = rng.vec(n);
            let width = 2u32 << rng.below(5);
            let op = match rng.below(5) {
                0 => ShflOp::Broadcast {
                    src_lane: rng.below(40) as i32,
                },
                1 => ShflOp::Up {
                    delta: rng.below(32) as i32,
                },
                2 => ShflOp::Down {
                    delta: rng.below(32) as i32,
                },
                3 => ShflOp::Wrap {
                    offset: rng.below(63) as i32 - 31,
                },
                _ => ShflOp::Xor {
                    lane_mask: rng.below(32) as i32,
                },
            };
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, n)?;
            shfl::shfl(dev, op, width, &src, &mut dst)?;
            if verify {
                let want = cpu::shfl::shfl(op, width, 1, &input);
                check(
                    &format!("{what} shfl {op} width {width}"),
                    &want,
                    &dst.to_vec(dev)?,
                );
            }
        }
        1 => {
            let input: Vec<i64> = rng.vec(n);
            let pred = Predicate::Greater(input[rng.below(n as u64) as usize]);
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut records = DeviceVec::alloc(dev, vote::warps(n) * RECORD_WORDS)?;
            let mut ranks = DeviceVec::alloc(dev, n)?;
            vote::vote(dev, pred, &src, &mut records, &mut ranks)?;
            if verify {
                let want = cpu::vote::vote(pred, &input).to_words();
                let mut got = records.to_vec(dev)?;
                got.extend(ranks.to_vec(dev)?);
                check(&format!("{what} vote {pred}"), &want, &got);
            }
        }
        2 | 3 => {
            let order = if rng.below(2) == 0 {
                Order::Stable
            } else {
                Order::Unordered
            };
            let input = mixed_f32(rng, n);
            let pred = Predicate::InRange { lo: -1.0, hi: 1e3 };
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, n)?;
            let mut count = DeviceVec::alloc(dev, 1)?;
            compact::compact(dev, order, pred, &src, &mut dst, &mut count)?;
            if verify {
                let k = count.to_vec(dev)?[0] as usize;
                let mut got = dst.to_vec(dev)?;
                got.truncate(k);
                let mut want = match order {
                    Order::Stable => cpu::compact::stable(pred, &input),
                    Order::Unordered => cpu::compact::unordered(pred, &input),
                };
                if order == Order::Unordered {
                    got.sort_by(f32::total_cmp);
                    want.sort_by(f32::total_cmp);
                }
                check(&format!("{what} compact {order}"), &want, &got);
            }
        }
        4 => {
            let input: Vec<i32> = rng.vec(n);
            let form = if rng.below(2) == 0 {
                WarpForm::Butterfly
            } else {
                WarpForm::ShiftDown
            };
            let per = if form == WarpForm::Butterfly { 1 } else { 32 };
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, n.div_ceil(per))?;
            reduce::warp_reduce(dev, ReduceOp::Xor, form, &src, &mut dst)?;
            if verify {
                let want = match form {
                    WarpForm::Butterfly => {
                        cpu::reduce::warp_reduce_butterfly(ReduceOp::Xor, &input)
                    }
                    WarpForm::ShiftDown => cpu::reduce::warp_reduce_down(ReduceOp::Xor, &input),
                };
                check(
                    &format!("{what} warp reduce {form:?}"),
                    &want,
                    &dst.to_vec(dev)?,
                );
            }
        }
        5 => {
            let input: Vec<f64> = rng.vec(n);
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, n.div_ceil(reduce::BLOCK as usize))?;
            reduce::block_reduce(dev, ReduceOp::Max, &src, &mut dst)?;
            if verify {
                let want = cpu::reduce::block_reduce(ReduceOp::Max, &input);
                check(&format!("{what} block reduce"), &want, &dst.to_vec(dev)?);
            }
        }
        6 => {
            let input = mixed_f32(rng, n);
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, 1)?;
            reduce::device_reduce(dev, ReduceOp::Sum, &src, &mut dst, 0)?;
            if verify {
                let want = cpu::reduce::device_reduce(ReduceOp::Sum, &input);
                check(&format!("{what} device reduce"), &[want], &dst.to_vec(dev)?);
            }
        }
        7 | 8 => {
            let input: Vec<u64> = rng.vec(n);
            let (op, kind) = (
                [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max][rng.below(3) as usize],
                [ScanKind::Inclusive, ScanKind::Exclusive][rng.below(2) as usize],
            );
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, n)?;
            let scope = rng.below(3);
            match scope {
                0 => scan::warp_scan(dev, op, kind, &src, &mut dst)?,
                1 => scan::block_scan(dev, op, kind, &src, &mut dst)?,
                _ => scan::device_scan(dev, op, kind, &src, &mut dst)?,
            }
            if verify {
                let want = match scope {
                    0 => cpu::scan::warp_scan(op, kind, &input),
                    1 => cpu::scan::block_scan(op, kind, &input),
                    _ => cpu::scan::device_scan(op, kind, &input),
                };
                check(
                    &format!("{what} scan scope {scope} {op} {kind:?}"),
                    &want,
                    &dst.to_vec(dev)?,
                );
            }
        }
        9 | 10 => {
            let input: Vec<u32> = rng.vec(n);
            let rung = LadderKernel::ALL[rng.below(LadderKernel::ALL.len() as u64) as usize];
            let blocks = ladder::blocks::<u32>(dev.info(), rung);
            let block = blocks[rng.below(blocks.len() as u64) as usize];
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut total = DeviceVec::alloc(dev, 1)?;
            ladder::reduce(dev, rung, block, &src, &mut total)?;
            if verify {
                let want = cpu::ladder::reduce(&input);
                check(
                    &format!("{what} ladder {rung} block {block}"),
                    &[want],
                    &total.to_vec(dev)?,
                );
            }
        }
        _ => {
            let input = mixed_f32(rng, n);
            let weights: [f32; 5] = std::array::from_fn(|_| rng.next_f64_mixed() as f32);
            let variant = StencilVariant::ALL[rng.below(2) as usize];
            let src = DeviceVec::from_slice(dev, &input)?;
            let mut dst = DeviceVec::alloc(dev, n)?;
            stencil::moving_average(dev, variant, weights, &src, &mut dst)?;
            if verify {
                let want = cpu::stencil::moving_average(weights, &input);
                check(
                    &format!("{what} stencil {variant}"),
                    &want,
                    &dst.to_vec(dev)?,
                );
            }
        }
    }
    Ok(())
}

/// Device memory and host RSS at one moment, after the device has finished its work.
fn sample(dev: &dyn Device) -> (Option<MemoryUsage>, u64) {
    dev.synchronize().unwrap();
    (dev.memory_usage(), rss_bytes())
}

fn show(at: &str, (usage, rss): &(Option<MemoryUsage>, u64)) -> String {
    let device = match usage {
        Some(u) => format!(
            "{} buffers, {} in use, {} reserved",
            u.buffers,
            mib(u.bytes),
            mib(u.reserved_bytes)
        ),
        None => "not counted".into(),
    };
    format!("{at}: host RSS {}, device {device}", mib(*rss))
}

#[test]
fn dispatches_mixing_every_family_keep_memory_flat() {
    let total = dispatches();
    let warm_up = (total / 10).clamp(1, 2000);
    let seed = seed();
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut rng = Rng::new(seed);
        // What the device holds of its own from the start (Device::counters).
        let opened = sample(dev).0;
        let start = Instant::now();
        let mut warm = None;
        let mut peak_rss = 0u64;
        let mut peak_reserved = 0u64;
        for i in 0..total {
            let verify = i % CHECK_EVERY == CHECK_EVERY - 1 || i + 1 == total;
            dispatch(dev, i, &mut rng, verify)
                .unwrap_or_else(|e| panic!("{}: dispatch {i}: {e}", d.label));
            if i + 1 == warm_up {
                let s = sample(dev);
                eprintln!(
                    "{}: {}",
                    d.label,
                    show(&format!("after {warm_up} warm-up dispatches"), &s)
                );
                warm = Some(s);
            }
            if (i + 1) % (total / 10).max(1) == 0 {
                let s = sample(dev);
                peak_rss = peak_rss.max(s.1);
                peak_reserved = peak_reserved.max(s.0.map_or(0, |u| u.reserved_bytes));
                eprintln!(
                    "{}: {}",
                    d.label,
                    show(&format!("after {} dispatches", i + 1), &s)
                );
            }
        }
        let end = sample(dev);
        let elapsed = start.elapsed();
        let (warm_usage, warm_rss) = warm.expect("the warm-up ended");
        eprintln!(
            "{}: {total} dispatches in {:.1} s ({:.2} ms each); {}; peak RSS {}, peak reserved {}",
            d.label,
            elapsed.as_secs_f64(),
            elapsed.as_secs_f64() * 1e3 / total as f64,
            show("end", &end),
            mib(peak_rss),
            mib(peak_reserved)
        );
        if let (Some(o), Some(w), Some(e)) = (opened, warm_usage, end.0) {
            assert_eq!(
                (e.buffers, e.bytes),
                (o.buffers, o.bytes),
                "{}: buffers left at the end: {e}",
                d.label
            );
            assert!(
                e.reserved_bytes <= w.reserved_bytes + DEVICE_SLACK,
                "{}: reserved device memory grew from {} to {}",
                d.label,
                mib(w.reserved_bytes),
                mib(e.reserved_bytes)
            );
        }
        assert!(
            end.1 <= warm_rss + RSS_SLACK,
            "{}: host RSS grew from {} to {} (allowed {})",
            d.label,
            mib(warm_rss),
            mib(end.1),
            mib(RSS_SLACK)
        );
    });
}
