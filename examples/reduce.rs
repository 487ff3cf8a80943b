//! Reduce a buffer on the GPU: sum, min and max of a million floats, checked against the CPU.
//!
//! ```sh
//! cargo run --example reduce              # CUDA on an NVIDIA GPU, else the best Vulkan device
//! XWARP_BACKEND=vulkan cargo run --example reduce
//! ```

use std::process::ExitCode;
use xwarp::reduce::{device_reduce, ReduceOp};
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

    let data: Vec<f32> = (0..1_000_003).map(|i| (i as f32 * 0.001).sin()).collect();
    let input = DeviceVec::from_slice(&*dev, &data)?;

    // One result slot per operator. The results stay on the device (a next kernel could use
    // them) until `to_vec` reads them back.
    let ops = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];
    let mut results = DeviceVec::<f32>::alloc(&*dev, ops.len())?;
    for (slot, &op) in ops.iter().enumerate() {
        device_reduce(&*dev, op, &input, &mut results, slot)?;
    }
    let got = results.to_vec(&*dev)?;

    // Plain CPU answers: min and max are exact; a float sum depends on the order of additions,
    // so compare it with an f64 sum within a tolerance...
    let min = data.iter().copied().fold(f32::INFINITY, f32::min);
    let max = data.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = data.iter().map(|&v| v as f64).sum();
    // ...and with xwarp's CPU reference, which adds in the same fixed order as every GPU: bit
    // for bit.
    let canonical = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &data);

    println!("sum {} (f64 on the CPU: {sum:.3})", got[0]);
    println!("min {} max {}", got[1], got[2]);
    let ok = got[0].to_bits() == canonical.to_bits()
        && ((got[0] as f64) - sum).abs() <= 1e-3 * sum.abs().max(1.0)
        && got[1] == min
        && got[2] == max;
    println!("{}", if ok { "OK" } else { "MISMATCH" });
    Ok(ok)
}
