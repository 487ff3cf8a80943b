//! Shuffle throughput on the default device (`XWARP_BACKEND` picks it), timed by GPU timers:
//! the median over repetitions of each op at several sizes, reported in GB/s of the bytes that
//! must move (input read once, output written once).
//!
//! `cargo bench --bench shfl` runs it; under `cargo test` it runs one small size as a smoke run.

use xwarp::shfl::{shfl, ShflOp};
use xwarp::{DeviceVec, Rng};

fn main() -> xwarp::Result<()> {
    let full = std::env::args().any(|a| a == "--bench");
    let dev = xwarp::backend::open_default()?;
    println!("{}", dev.info());
    let sizes: &[usize] = if full {
        &[1 << 16, (1 << 20) + 1, 1 << 24]
    } else {
        &[4097]
    };
    let reps = if full { 21 } else { 3 };
    let mut rng = Rng::from_time();
    for &n in sizes {
        let data: Vec<u32> = rng.vec(n);
        let src = DeviceVec::from_slice(&*dev, &data)?;
        let mut dst = DeviceVec::<u32>::alloc(&*dev, n)?;
        for op in [
            ShflOp::Broadcast { src_lane: 3 },
            ShflOp::Up { delta: 1 },
            ShflOp::Down { delta: 1 },
            ShflOp::Xor { lane_mask: 16 },
        ] {
            shfl(&*dev, op, 32, &src, &mut dst)?; // warm-up: pipeline creation, first touch
            let mut times: Vec<f64> = (0..reps)
                .map(|_| {
                    dev.time(&mut || shfl(&*dev, op, 32, &src, &mut dst))
                        .map(|t| t.as_secs_f64())
                })
                .collect::<xwarp::Result<_>>()?;
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let gbs = (2 * n * 4) as f64 / median / 1e9;
            println!(
                "{op:<24} n={n:<9} median {:>10.1} us  {gbs:>8.2} GB/s",
                median * 1e6
            );
        }
    }
    Ok(())
}
