//! Times the device scan under several tunings on every backend, each result checked first:
//! the experiments behind the scan's defaults (NOTES.md).
//!
//! ```text
//! cargo run --release -p xwarp-lab --example scan_tuning -- [--n N[,N...]] [--reps R]
//!     [--alternations A] [--type i32|u32|f32|i64|u64|f64] [--kind inclusive|exclusive]
//!     [--op sum|min|max] [--tiny] [TUNING ...]
//! ```
//! A tuning is `key=value` pairs separated by commas: `registers` (0: the staging kernel, 1:
//! the register tile), `items` (elements a thread, integers), `lookback` (tiles each thread of
//! the look-back reads at once), `near` (the CUDA near look-back's depth), `launch` (the most
//! elements a launch spans), `spin`, `gated` (`f32` sums where subnormals are kept in software:
//! 1 the gated call, 0 the exact kernel alone); missing keys keep the defaults (`default` is the
//! defaults), and no tuning at all times the defaults. Every tuning's output is compared bit
//! for bit with the CPU reference before it is timed (a tuning the device refuses is reported
//! and skipped); the times are GPU medians over the repetitions, each after a cache scrub.
//! `--alternations A` times the tunings A times in turn, every other round in reverse order.
//! Afterwards the compiler's statistics of each scan kernel are printed.
//! `--tiny` puts the element of bits 1 (for floats the smallest subnormal) in the input's middle.
//! `XWARP_BACKEND=cuda` (or `vulkan`) times that backend only.

mod common;

use std::process::ExitCode;
use xwarp::reduce::{Reduce, ReduceOp};
use xwarp::scan::{device_scan_tuned, ScanKind, Tuning};
use xwarp::{Device, DeviceVec, ElemKind, Rng};

struct Args {
    o: common::Options,
    kind: ScanKind,
    op: ReduceOp,
    /// The input's middle element replaced by the smallest subnormal (`--tiny`).
    tiny: bool,
    tunings: Vec<(String, Tuning)>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        o: common::Options {
            lens: vec![1 << 24],
            reps: 21,
            alternations: 1,
            kind: ElemKind::F32,
        },
        kind: ScanKind::Inclusive,
        op: ReduceOp::Sum,
        tiny: false,
        tunings: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name}: missing value"));
        if args.o.take(&a, &mut value)? {
            continue;
        }
        match a.as_str() {
            "--tiny" => args.tiny = true,
            "--kind" => {
                args.kind = match value("--kind")?.as_str() {
                    "inclusive" => ScanKind::Inclusive,
                    "exclusive" => ScanKind::Exclusive,
                    v => return Err(format!("--kind {v}: inclusive or exclusive")),
                }
            }
            "--op" => {
                args.op = match value("--op")?.as_str() {
                    "sum" => ReduceOp::Sum,
                    "min" => ReduceOp::Min,
                    "max" => ReduceOp::Max,
                    v => return Err(format!("--op {v}: sum, min or max")),
                }
            }
            spec => args
                .tunings
                .push(common::tuning(spec, |t: &mut Tuning, k, v| {
                    match k {
                        "registers" => t.registers = Some(v != 0),
                        "items" => t.items = Some(v),
                        "lookback" => t.lookback_tiles = Some(v),
                        "near" => t.near_depth = Some(v),
                        "launch" => t.max_launch_elems = Some(v as usize),
                        "spin" => t.spin = v,
                        "gated" => t.gated = Some(v != 0),
                        _ => return false,
                    }
                    true
                })?),
        }
    }
    common::or_default(&mut args.tunings);
    Ok(args)
}

fn main() -> ExitCode {
    let Some(args) = common::parsed("scan_tuning", parse) else {
        return ExitCode::from(2);
    };
    let ok = match args.o.kind {
        ElemKind::U32 => run::<u32>(&args),
        ElemKind::I32 => run::<i32>(&args),
        ElemKind::F32 => run::<f32>(&args),
        ElemKind::U64 => run::<u64>(&args),
        ElemKind::I64 => run::<i64>(&args),
        ElemKind::F64 => run::<f64>(&args),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Scans once per length, tuning and backend (checked against the CPU), then times; false
/// when any result was wrong.
fn run<T: Reduce>(args: &Args) -> bool {
    let mut ok = true;
    println!(
        "scan_tuning: {:?} {:?} of {}, lengths {:?}, {} repetitions, {} alternations",
        args.kind,
        args.op,
        T::KIND,
        args.o.lens,
        args.o.reps,
        args.o.alternations
    );
    for (kind, dev) in common::devices() {
        let dev: &dyn Device = &*dev;
        let scrub = common::Scrub::new(dev).expect("alloc");
        for &n in &args.o.lens {
            let mut input: Vec<T> = Rng::new(2024).vec(n);
            if args.tiny {
                // Bits 1, little-endian: the least nonzero bit pattern of any element type.
                bytemuck::bytes_of_mut(&mut input[n / 2]).fill(0);
                bytemuck::bytes_of_mut(&mut input[n / 2])[0] = 1;
            }
            let want = xwarp::cpu::scan::device_scan(args.op, args.kind, &input);
            let src = DeviceVec::from_slice(dev, &input).expect("upload");
            let mut dst = DeviceVec::<T>::alloc(dev, n).expect("alloc");
            let mut live: Vec<bool> = vec![true; args.tunings.len()];
            for round in 0..args.o.alternations {
                for i in common::turn(round, args.tunings.len()) {
                    let (name, tuning) = (&args.tunings[i].0, args.tunings[i].1);
                    if !live[i] {
                        continue;
                    }
                    if round == 0 {
                        // A poison unlike the first expected value (its bits inverted).
                        let mut poison = want[0];
                        for b in bytemuck::bytes_of_mut(&mut poison) {
                            *b = !*b;
                        }
                        let got = dst.fill(dev, poison).and_then(|()| {
                            device_scan_tuned(dev, args.op, args.kind, &src, &mut dst, tuning)?;
                            dst.to_vec(dev)
                        });
                        match got {
                            Err(e) => {
                                println!("{kind} n={n} {name}: {e}");
                                live[i] = false;
                                continue;
                            }
                            Ok(got) => {
                                let same = got
                                    .iter()
                                    .zip(&want)
                                    .all(|(a, b)| a.to_bits64() == b.to_bits64());
                                if !same {
                                    println!("{kind} n={n} {name}: WRONG RESULT");
                                    ok = false;
                                    live[i] = false;
                                    continue;
                                }
                            }
                        }
                    }
                    let mut call =
                        || device_scan_tuned(dev, args.op, args.kind, &src, &mut dst, tuning);
                    let (t, launches) =
                        scrub.time(dev, args.o.reps, &mut call).expect("timed scan");
                    let parts: Vec<String> = launches.iter().map(|l| format!("{l:.1}")).collect();
                    println!(
                        "{kind} n={n} round {round} {name}: {:.2} µs, {:.0} GB/s; launches µs: {}",
                        t * 1e6,
                        2.0 * (n * T::KIND.size()) as f64 / t / 1e9,
                        parts.join(" ")
                    );
                }
            }
        }
        common::print_stats(dev, &kind, "scan_");
    }
    ok
}
