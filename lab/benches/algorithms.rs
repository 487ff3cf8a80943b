//! Criterion benchmarks of the algorithms on the default device (`XWARP_BACKEND` picks it),
//! through the measurement code of `xwarp bench`: every case is checked against the CPU
//! reference once, then each iteration is one call timed by GPU timers (Vulkan timestamp
//! queries, CUDA events) after a cache scrub outside the timed span.
//!
//! `cargo bench --bench algorithms [FILTER]`. Under `cargo test` (no `--bench`), criterion runs
//! each case once as a smoke test. `XWARP_BENCH_SIZES` (comma-separated lengths) replaces the
//! default sizes. For the full comparison with the roofline and CUB, use `xwarp bench`.

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use xwarp::device::DeviceType;
use xwarp::ElemKind;
use xwarp_lab::bench::{self, Algo};

fn sizes(cpu: bool) -> Vec<usize> {
    if let Ok(list) = std::env::var("XWARP_BENCH_SIZES") {
        let parsed: Vec<usize> = list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        if !parsed.is_empty() {
            return parsed;
        }
    }
    if cpu {
        vec![(1 << 12) + 1, 1 << 16]
    } else {
        vec![(1 << 20) + 1, 1 << 24]
    }
}

fn algorithms(c: &mut Criterion) {
    let dev = xwarp::backend::open_default().expect("a device (set XWARP_BACKEND)");
    let cpu = dev.info().device_type == DeviceType::Cpu;
    let scrub = if cpu { 0 } else { 256 << 20 };
    eprintln!("device: {}", dev.info());
    for algo in Algo::ALL {
        let elem = if algo.supports(ElemKind::I32) {
            ElemKind::I32
        } else {
            ElemKind::F32
        };
        let mut group = c.benchmark_group(format!("{algo}_{elem}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(if cpu { 1 } else { 3 }));
        for n in sizes(cpu) {
            group.throughput(Throughput::Bytes(algo.bytes(n, elem.size(), n / 2)));
            bench::with_timer(
                &*dev,
                algo,
                elem,
                n,
                0x5eed ^ n as u64,
                scrub,
                &mut |timer| {
                    group.bench_function(BenchmarkId::from_parameter(n), |b| {
                        b.iter_custom(|iters| {
                            (0..iters)
                                .map(|_| timer().expect("a timed call"))
                                .sum::<Duration>()
                        })
                    });
                },
            )
            .expect("the case checks against the CPU reference");
        }
        group.finish();
    }
}

criterion_group!(benches, algorithms);
criterion_main!(benches);
