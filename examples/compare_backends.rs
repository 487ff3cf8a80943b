//! Run the same work on every backend this machine has (Vulkan and, on an NVIDIA GPU, CUDA),
//! time it on the GPU, and check that every backend agrees with the CPU and with the others bit
//! for bit — floats included, because xwarp's float sums have one fixed order everywhere.
//!
//! ```sh
//! cargo run --release --example compare_backends
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, ScanKind};
use xwarp::{Device, DeviceVec, Error};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What one backend computed, and how long it took.
struct Run {
    sum: f32,
    prefix: Vec<f32>,
    /// GPU time by the device's timers, where it has them.
    gpu: Option<Duration>,
    /// Host time from the first call to the finished synchronize.
    wall: Duration,
}

/// The sum and the inclusive prefix sums of `data` on `dev`.
fn work(dev: &dyn Device, data: &[f32]) -> xwarp::Result<Run> {
    let input = DeviceVec::from_slice(dev, data)?;
    let mut total = DeviceVec::<f32>::alloc(dev, 1)?;
    let mut prefix = DeviceVec::<f32>::alloc(dev, data.len())?;
    let mut both = || -> xwarp::Result<()> {
        device_reduce(dev, ReduceOp::Sum, &input, &mut total, 0)?;
        device_scan(dev, ReduceOp::Sum, ScanKind::Inclusive, &input, &mut prefix)
    };
    // A first run compiles and caches the kernels, so the timed runs measure only the work.
    both()?;
    dev.synchronize()?;
    let start = Instant::now();
    both()?;
    dev.synchronize()?;
    let wall = start.elapsed();
    let gpu = match dev.time(&mut both) {
        Ok(t) => Some(t),
        // Some devices have no timestamp queries on their compute queue.
        Err(Error::MissingFeature { .. }) => None,
        Err(e) => return Err(e),
    };
    Ok(Run {
        sum: total.to_vec(dev)?[0],
        prefix: prefix.to_vec(dev)?,
        gpu,
        wall,
    })
}

fn run() -> xwarp::Result<bool> {
    let mut rng = xwarp::Rng::new(1);
    let data: Vec<f32> = rng.vec(1 << 20);
    let want_sum = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &data);
    let want_prefix = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &data);

    let mut ok = true;
    let mut sums = Vec::new();
    for (backend, opened) in xwarp::backend::open_each(false) {
        let dev = match opened {
            Ok(dev) => dev,
            Err(e) => {
                println!("{backend:>6}: not available ({e})");
                continue;
            }
        };
        let run = work(&*dev, &data)?;
        let same = run.sum.to_bits() == want_sum.to_bits()
            && run
                .prefix
                .iter()
                .zip(&want_prefix)
                .all(|(a, b)| a.to_bits() == b.to_bits());
        let gpu = run
            .gpu
            .map(|t| format!("{:.3} ms", t.as_secs_f64() * 1e3))
            .unwrap_or_else(|| "n/a".into());
        println!(
            "{backend:>6}: {} | sum {} | reduce+scan of {} floats: GPU {gpu}, host {:.3} ms | {}",
            dev.info().name,
            run.sum,
            data.len(),
            run.wall.as_secs_f64() * 1e3,
            if same { "matches the CPU" } else { "MISMATCH" }
        );
        ok &= same;
        sums.push(run.sum.to_bits());
    }
    if sums.is_empty() {
        println!("no backend available");
        return Ok(false);
    }
    if sums.windows(2).any(|w| w[0] != w[1]) {
        println!("backends disagree");
        ok = false;
    }
    Ok(ok)
}
