//! Where the host time of a small call goes: a device reduce of a short input, split into its
//! phases on every backend at once (one process, as `xwarp bench` runs them).
//!
//! ```sh
//! cargo run --release --example host_time            # 2^10 elements, 2000 calls
//! cargo run --release --example host_time -- 4096 500
//! ```
//!
//! For each backend it prints the median over the calls, in microseconds, of:
//! - `call`: the reduce and the read of its one value, as `xwarp bench` times a call;
//! - `enqueue`: the reduce alone returning (Vulkan records a command buffer, CUDA enqueues);
//! - `sync`: then waiting for it (Vulkan submits and waits on a fence, CUDA synchronises);
//! - `read`: then reading the value back (a copy and a wait of its own);
//! - `gpu`: the reduce on the GPU's timer.

use std::time::Instant;
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::DeviceVec;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> xwarp::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 10);
    let calls: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000)
        .max(1);
    // Fresh inputs, not zeros: the value is checked against the host's sum every call.
    let data: Vec<i32> = (0..n as i64)
        .map(|i| ((i * 2_654_435_761) % 2001 - 1000) as i32)
        .collect();
    let expected = data.iter().fold(0i32, |a, &b| a.wrapping_add(b));
    let devices: Vec<_> = xwarp::backend::open_each(false)
        .into_iter()
        .filter_map(|(kind, d)| match d {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("{kind}: {e}");
                None
            }
        })
        .collect();
    println!("n = {n}, {calls} calls, medians in µs");
    println!(
        "{:<48} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "device", "call", "enqueue", "sync", "read", "gpu"
    );
    for dev in &devices {
        let dev = &**dev;
        let input = DeviceVec::from_slice(dev, &data)?;
        let mut out = DeviceVec::<i32>::alloc(dev, 1)?;
        let check = |v: Vec<i32>| assert_eq!(v[0], expected, "{}: wrong sum", dev.info());
        // Warm-up: pipelines built, memory pools grown.
        for _ in 0..20 {
            device_reduce(dev, ReduceOp::Sum, &input, &mut out, 0)?;
            check(out.to_vec(dev)?);
        }
        let (mut call, mut enqueue, mut sync, mut read, mut gpu) =
            (vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..calls {
            let t = Instant::now();
            device_reduce(dev, ReduceOp::Sum, &input, &mut out, 0)?;
            let v = out.to_vec(dev)?;
            call.push(t.elapsed().as_secs_f64());
            check(v);

            let t0 = Instant::now();
            device_reduce(dev, ReduceOp::Sum, &input, &mut out, 0)?;
            let t1 = Instant::now();
            dev.synchronize()?;
            let t2 = Instant::now();
            let v = out.to_vec(dev)?;
            let t3 = Instant::now();
            check(v);
            enqueue.push((t1 - t0).as_secs_f64());
            sync.push((t2 - t1).as_secs_f64());
            read.push((t3 - t2).as_secs_f64());

            let d = dev.time(&mut || device_reduce(dev, ReduceOp::Sum, &input, &mut out, 0))?;
            gpu.push(d.as_secs_f64());
        }
        let us = |v: Vec<f64>| median(v) * 1e6;
        println!(
            "{:<48} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            format!("{} {}", dev.info().backend, dev.info().name),
            us(call),
            us(enqueue),
            us(sync),
            us(read),
            us(gpu)
        );
    }
    Ok(())
}
