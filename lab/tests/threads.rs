//! The backends are `Send + Sync`, and threads sharing one device get exact results: 8 threads
//! each run a mix of every algorithm family (and GPU timing) on their own random inputs, many
//! times, against the CPU reference.

mod common;

use common::{devices, for_each_device, seed};
use std::sync::Arc;
use xwarp::compact::{self, Order};
use xwarp::cuda::CudaDevice;
use xwarp::device::RawBuffer;
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{self, ReduceOp, WarpForm};
use xwarp::scan::{self, ScanKind};
use xwarp::shfl::{self, ShflOp};
use xwarp::stencil::{self, StencilVariant};
use xwarp::vote::{self, Predicate};
use xwarp::vulkan::VulkanDevice;
use xwarp::{cpu, Device, DeviceVec, Element, Rng};
use xwarp_lab::validate::first_mismatch;

const THREADS: usize = 8;

fn send_sync<T: Send + Sync + ?Sized>() {}

#[test]
fn backends_devices_and_buffers_are_send_and_sync() {
    // A compile-time check: this does not build if any of them is not Send + Sync.
    send_sync::<VulkanDevice>();
    send_sync::<CudaDevice>();
    send_sync::<dyn Device>();
    send_sync::<Arc<dyn Device>>();
    send_sync::<Arc<VulkanDevice>>();
    send_sync::<RawBuffer>();
    send_sync::<DeviceVec<f64>>();
    send_sync::<xwarp::Error>();
}

/// Iterations per thread (`XWARP_THREAD_ITERS`, default 64).
fn iterations() -> usize {
    std::env::var("XWARP_THREAD_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

#[track_caller]
fn same<T: Element>(what: &str, want: &[T], got: &[T]) {
    if let Some(m) = first_mismatch(want, got) {
        panic!("{what}: {m}");
    }
}

/// One step of thread `t`'s mix: family `k`, a random length, the thread's own inputs.
fn step(dev: &dyn Device, t: usize, k: usize, rng: &mut Rng) {
    let n = 1 + rng.below(3000) as usize;
    let what = format!("thread {t} step {k} n={n}");
    match k % 12 {
        0 => {
            let input: Vec<u32> = rng.vec(n);
            let width = 2u32 << rng.below(5);
            let op = match rng.below(5) {
                0 => ShflOp::Broadcast {
                    src_lane: rng.below(64) as i32,
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
            let got = shfl::shfl_host(dev, op, width, &input).unwrap();
            same(
                &format!("{what} shfl {op} width {width}"),
                &cpu::shfl::shfl(op, width, 1, &input),
                &got,
            );
        }
        1 => {
            let input: Vec<f64> = rng.vec(n);
            let mask = rng.below(32) as i32;
            let got = shfl::shfl_xor_array_host(dev, mask, 32, &input).unwrap();
            let want = cpu::shfl::shfl(ShflOp::Xor { lane_mask: mask }, 32, shfl::SEGM, &input);
            same(&format!("{what} shfl_xor_array {mask}"), &want, &got);
        }
        2 => {
            let input: Vec<i32> = rng.vec(n);
            let pred = Predicate::Greater(input[rng.below(n as u64) as usize]);
            let got = vote::vote_host(dev, pred, &input).unwrap();
            assert_eq!(got, cpu::vote::vote(pred, &input), "{what} vote {pred}");
        }
        3 => {
            let input: Vec<u32> = rng.vec(n);
            let (count, got) =
                compact::compact_host(dev, Order::Stable, Predicate::Odd, &input).unwrap();
            let want = cpu::compact::stable(Predicate::Odd, &input);
            assert_eq!(count as usize, want.len(), "{what} compact stable");
            same(&format!("{what} compact stable"), &want, &got);
        }
        4 => {
            let input: Vec<f32> = (0..n).map(|_| rng.next_f64_mixed() as f32).collect();
            let pred = Predicate::Less(0.0f32);
            let (count, mut got) =
                compact::compact_host(dev, Order::Unordered, pred, &input).unwrap();
            let mut want = cpu::compact::unordered(pred, &input);
            assert_eq!(count as usize, want.len(), "{what} compact unordered");
            got.sort_by(f32::total_cmp);
            want.sort_by(f32::total_cmp);
            same(&format!("{what} compact unordered"), &want, &got);
        }
        5 => {
            let input: Vec<i64> = rng.vec(n);
            let got =
                reduce::warp_reduce_host(dev, ReduceOp::Sum, WarpForm::Butterfly, &input).unwrap();
            let want = cpu::reduce::warp_reduce_butterfly(ReduceOp::Sum, &input);
            same(&format!("{what} warp reduce"), &want, &got);
        }
        6 => {
            let input: Vec<u32> = rng.vec(n);
            let got = reduce::block_reduce_host(dev, ReduceOp::Max, &input).unwrap();
            let want = cpu::reduce::block_reduce(ReduceOp::Max, &input);
            same(&format!("{what} block reduce"), &want, &got);
        }
        7 => {
            let input: Vec<f32> = (0..n * 4).map(|_| rng.next_f64_mixed() as f32).collect();
            let got = reduce::device_reduce_host(dev, ReduceOp::Sum, &input).unwrap();
            let want = cpu::reduce::device_reduce(ReduceOp::Sum, &input);
            same(&format!("{what} device reduce"), &[want], &[got]);
        }
        8 => {
            let input: Vec<i32> = rng.vec(n * 3);
            let kind = if rng.below(2) == 0 {
                ScanKind::Inclusive
            } else {
                ScanKind::Exclusive
            };
            let got = scan::device_scan_host(dev, ReduceOp::Sum, kind, &input).unwrap();
            let want = cpu::scan::device_scan(ReduceOp::Sum, kind, &input);
            same(&format!("{what} device scan {kind:?}"), &want, &got);
        }
        9 => {
            let input: Vec<u64> = rng.vec(n);
            let src = DeviceVec::from_slice(dev, &input).unwrap();
            let mut dst = DeviceVec::alloc(dev, n).unwrap();
            scan::warp_scan(dev, ReduceOp::Min, ScanKind::Exclusive, &src, &mut dst).unwrap();
            let want = cpu::scan::warp_scan(ReduceOp::Min, ScanKind::Exclusive, &input);
            same(
                &format!("{what} warp scan"),
                &want,
                &dst.to_vec(dev).unwrap(),
            );
        }
        10 => {
            let input: Vec<u32> = rng.vec(n);
            let rung = LadderKernel::ALL[rng.below(LadderKernel::ALL.len() as u64) as usize];
            let got = ladder::block_sums_host(dev, rung, 256, &input).unwrap();
            let want = cpu::ladder::block_sums(rung, 256, &input);
            same(&format!("{what} ladder {rung}"), &want, &got);
            let sum = ladder::reduce_host(dev, rung, 256, &input).unwrap();
            assert_eq!(sum, cpu::ladder::reduce(&input), "{what} ladder {rung} sum");
        }
        _ => {
            // GPU timing of a stencil while the other threads work.
            let input: Vec<f32> = (0..n).map(|_| rng.next_f64_mixed() as f32).collect();
            let weights: [f32; 5] = std::array::from_fn(|_| rng.next_f64_mixed() as f32);
            let variant = StencilVariant::ALL[rng.below(2) as usize];
            let src = DeviceVec::from_slice(dev, &input).unwrap();
            let mut dst = DeviceVec::alloc(dev, n).unwrap();
            let timed =
                dev.time(&mut || stencil::moving_average(dev, variant, weights, &src, &mut dst));
            timed.unwrap_or_else(|e| panic!("{what} timed stencil: {e}"));
            let want = cpu::stencil::moving_average(weights, &input);
            same(
                &format!("{what} stencil {variant}"),
                &want,
                &dst.to_vec(dev).unwrap(),
            );
        }
    }
}

#[test]
fn eight_threads_sharing_one_device_get_exact_results() {
    let seed = seed();
    let iters = iterations();
    for_each_device(|d| {
        let dev: &dyn Device = &*d.dev;
        let before = dev.memory_usage();
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    let mut rng = Rng::new(seed ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    for i in 0..iters {
                        step(dev, t, t + i, &mut rng);
                    }
                });
            }
        });
        // Buffers made on one thread are used and dropped on another.
        let shared = DeviceVec::from_slice(dev, &[3u32; 1000]).unwrap();
        let total = std::thread::scope(|s| {
            s.spawn(|| reduce::device_reduce_host(dev, ReduceOp::Sum, &shared.to_vec(dev).unwrap()))
                .join()
                .unwrap()
        });
        assert_eq!(total.unwrap(), 3000, "{}", d.label);
        std::thread::spawn(move || drop(shared)).join().unwrap();
        dev.synchronize().unwrap();
        if let (Some(b), Some(a)) = (before, dev.memory_usage()) {
            assert_eq!(
                (a.buffers, a.bytes),
                (b.buffers, b.bytes),
                "{}: buffers left",
                d.label
            );
        }
        eprintln!("{}: {THREADS} threads x {iters} steps exact", d.label);
    });
    assert!(!devices().is_empty());
}
