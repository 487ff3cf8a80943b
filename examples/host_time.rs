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
//! - `gpu`: the reduce on the GPU's timer;
//! - `floor`: the least a synchronous call with GPU work costs on the backend: a fill of one
//!   element (Vulkan `vkCmdFillBuffer`, CUDA a memset), `Device::submit` and `Device::wait`
//!   (what `Device::synchronize` does); split into `submit` (the fill and the submit returning:
//!   Vulkan's `vkQueueSubmit`) and `wait` (then the wait for its ticket: Vulkan's fence).
//!
//! Then, per operation of a sequence of 10 (reduce, inclusive scan, stable compaction, in
//! turn, on the same input), the host time of three forms: `sync` (each operation waited
//! for: `Device::synchronize`), `async` (all ten queued, one `Device::submit` and one
//! `Device::wait`), `replay` (recorded once by `Device::record`, each time one
//! `Device::replay` and one wait). Every form's results are checked against the host's. Beside
//! them, `record`: the host time of recording the ten by `Device::record` alone (Vulkan: the
//! commands written into a command buffer; CUDA: a graph captured and instantiated), per
//! operation.

use std::time::Instant;
use xwarp::compact::{compact, Order};
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, ScanKind};
use xwarp::vote::Predicate;
use xwarp::{Device, DeviceVec};

/// Ten operations on `input`: reduces into `sum`, scans into `scan`, compacts into `kept`.
fn ten(
    dev: &dyn Device,
    input: &DeviceVec<i32>,
    sum: &mut DeviceVec<i32>,
    scan: &mut DeviceVec<i32>,
    kept: &mut DeviceVec<i32>,
    count: &mut DeviceVec<u64>,
    each: &mut dyn FnMut() -> xwarp::Result<()>,
) -> xwarp::Result<()> {
    for k in 0..10 {
        match k % 3 {
            0 => device_reduce(dev, ReduceOp::Sum, input, sum, 0)?,
            1 => device_scan(dev, ReduceOp::Sum, ScanKind::Inclusive, input, scan)?,
            _ => compact(dev, Order::Stable, Predicate::Odd, input, kept, count)?,
        }
        each()?;
    }
    Ok(())
}

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
        "{:<48} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "device", "call", "enqueue", "sync", "read", "gpu", "floor", "submit", "wait"
    );
    let mut sequences = Vec::new();
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
        let (mut floor, mut submit, mut wait) = (vec![], vec![], vec![]);
        let mut one = DeviceVec::<i32>::alloc(dev, 1)?;
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

            let t0 = Instant::now();
            one.fill(dev, expected)?;
            let ticket = dev.submit()?;
            let t1 = Instant::now();
            dev.wait(ticket)?;
            let t2 = Instant::now();
            floor.push((t2 - t0).as_secs_f64());
            submit.push((t1 - t0).as_secs_f64());
            wait.push((t2 - t1).as_secs_f64());
        }
        assert_eq!(
            one.to_vec(dev)?,
            vec![expected],
            "{}: wrong fill",
            dev.info()
        );
        let us = |v: Vec<f64>| median(v) * 1e6;
        println!(
            "{:<48} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
            format!("{} {}", dev.info().backend, dev.info().name),
            us(call),
            us(enqueue),
            us(sync),
            us(read),
            us(gpu),
            us(floor),
            us(submit),
            us(wait)
        );

        // The sequence of ten, in three forms.
        let mut sum = DeviceVec::<i32>::alloc(dev, 1)?;
        let mut scan = DeviceVec::<i32>::alloc(dev, n)?;
        let mut kept = DeviceVec::<i32>::alloc(dev, n)?;
        let mut count = DeviceVec::<u64>::alloc(dev, 1)?;
        let want_scan = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &data);
        let want_kept = xwarp::cpu::compact::stable(Predicate::Odd, &data);
        let verify = |sum: &DeviceVec<i32>,
                      scan: &DeviceVec<i32>,
                      kept: &DeviceVec<i32>,
                      count: &DeviceVec<u64>|
         -> xwarp::Result<()> {
            check(sum.to_vec(dev)?);
            assert_eq!(scan.to_vec(dev)?, want_scan, "{}: wrong scan", dev.info());
            let c = count.to_vec(dev)?[0] as usize;
            assert_eq!(
                kept.to_vec(dev)?[..c],
                want_kept[..],
                "{}: wrong compaction",
                dev.info()
            );
            Ok(())
        };
        // Outputs poisoned before each form runs, outside its timing.
        let poison = |sum: &mut DeviceVec<i32>,
                      scan: &mut DeviceVec<i32>,
                      kept: &mut DeviceVec<i32>,
                      count: &mut DeviceVec<u64>|
         -> xwarp::Result<()> {
            sum.fill(dev, i32::MIN)?;
            scan.fill(dev, i32::MIN)?;
            kept.fill(dev, i32::MIN)?;
            count.fill(dev, u64::MAX)?;
            dev.synchronize()
        };
        let record = |sum: &mut DeviceVec<i32>,
                      scan: &mut DeviceVec<i32>,
                      kept: &mut DeviceVec<i32>,
                      count: &mut DeviceVec<u64>| {
            dev.record(&mut || ten(dev, &input, sum, scan, kept, count, &mut || Ok(())))
        };
        let rec = record(&mut sum, &mut scan, &mut kept, &mut count)?;
        let (mut sync, mut queued, mut replayed, mut recorded) = (vec![], vec![], vec![], vec![]);
        let reps = calls.div_ceil(10).max(20);
        for _ in 0..reps {
            poison(&mut sum, &mut scan, &mut kept, &mut count)?;
            let t = Instant::now();
            ten(
                dev,
                &input,
                &mut sum,
                &mut scan,
                &mut kept,
                &mut count,
                &mut || dev.synchronize(),
            )?;
            sync.push(t.elapsed().as_secs_f64() / 10.0);
            verify(&sum, &scan, &kept, &count)?;

            let t = Instant::now();
            ten(
                dev,
                &input,
                &mut sum,
                &mut scan,
                &mut kept,
                &mut count,
                &mut || Ok(()),
            )?;
            let ticket = dev.submit()?;
            dev.wait(ticket)?;
            queued.push(t.elapsed().as_secs_f64() / 10.0);
            verify(&sum, &scan, &kept, &count)?;

            poison(&mut sum, &mut scan, &mut kept, &mut count)?;
            let t = Instant::now();
            let ticket = dev.replay(&rec)?;
            dev.wait(ticket)?;
            replayed.push(t.elapsed().as_secs_f64() / 10.0);
            verify(&sum, &scan, &kept, &count)?;

            let t = Instant::now();
            let again = record(&mut sum, &mut scan, &mut kept, &mut count)?;
            recorded.push(t.elapsed().as_secs_f64() / 10.0);
            drop(again);
        }
        let barriers = rec
            .barriers()
            .map_or("every one (stream order)".to_string(), |b| b.to_string());
        sequences.push((
            format!(
                "{} {} ({} commands, barriers: {barriers})",
                dev.info().backend,
                dev.info().name,
                rec.operations()
            ),
            us(sync),
            us(queued),
            us(replayed),
            us(recorded),
        ));
    }
    println!("\nper operation of a sequence of 10 (reduce, scan, compaction), medians in µs");
    println!(
        "{:<48} {:>8} {:>8} {:>8} {:>8}",
        "device", "sync", "async", "replay", "record"
    );
    for (name, sync, queued, replayed, recorded) in sequences {
        println!("{name:<48} {sync:>8.1} {queued:>8.1} {replayed:>8.1} {recorded:>8.2}");
    }
    Ok(())
}
