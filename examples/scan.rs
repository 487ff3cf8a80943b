//! Prefix sums on the GPU: turn per-item counts into write offsets (an exclusive scan), the
//! usual first step of a bucket sort or a variable-length output, checked against the CPU.
//!
//! ```sh
//! cargo run --example scan
//! ```

use std::process::ExitCode;
use xwarp::reduce::ReduceOp;
use xwarp::scan::{device_scan, ScanKind};
use xwarp::DeviceVec;

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

fn run() -> xwarp::Result<bool> {
    let dev = xwarp::backend::open_default()?;
    println!("device: {}", dev.info());

    let mut rng = xwarp::Rng::new(7);
    let counts: Vec<u32> = (0..1_000_000).map(|_| rng.below(8) as u32).collect();
    let input = DeviceVec::from_slice(&*dev, &counts)?;
    let mut offsets = DeviceVec::<u32>::alloc(&*dev, counts.len())?;

    // offsets[i] = counts[0] + ... + counts[i - 1]: where item i writes its outputs.
    device_scan(
        &*dev,
        ReduceOp::Sum,
        ScanKind::Exclusive,
        &input,
        &mut offsets,
    )?;
    let got = offsets.to_vec(&*dev)?;

    let mut want = Vec::with_capacity(counts.len());
    let mut running = 0u32;
    for &c in &counts {
        want.push(running);
        running = running.wrapping_add(c);
    }
    let first_wrong = got.iter().zip(&want).position(|(g, w)| g != w);
    println!(
        "{} offsets, total {} (last offset {} + last count {})",
        got.len(),
        running,
        got[got.len() - 1],
        counts[counts.len() - 1]
    );
    match first_wrong {
        None => {
            println!("OK");
            Ok(true)
        }
        Some(i) => {
            println!("MISMATCH at {i}: got {}, expected {}", got[i], want[i]);
            Ok(false)
        }
    }
}
