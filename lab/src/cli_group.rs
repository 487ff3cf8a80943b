//! `xwarp bench --gpus N`: the group, its exchange, the run, the outputs.

use crate::cli_bench::{parse_sizes, parse_types};
use crate::{open_devices, BenchArgs};
use std::process::ExitCode;
use xwarp::backend::{BackendChoice, DeviceSelector};
use xwarp::group::Group;
use xwarp::{Device, Error, Result};
use xwarp_lab::bench::group::{self as gb, GroupAlgo, GroupConfig};

pub(crate) fn bench(
    choice: Option<BackendChoice>,
    selector: Option<DeviceSelector>,
    validation: bool,
    ranks: usize,
    args: &BenchArgs,
) -> Result<ExitCode> {
    if ranks == 0 {
        return Err(Error::invalid("gpus", 0, "at least 1"));
    }
    let cfg = config(args)?;
    let exchange = args.exchange.as_deref().map(str::trim);
    if let Some(e) = exchange.filter(|e| !matches!(*e, "nccl" | "in-process")) {
        return Err(Error::invalid("exchange", e, "nccl or in-process"));
    }
    println!("seed {}", cfg.seed);
    #[cfg(feature = "nccl")]
    if exchange != Some("in-process") {
        match nccl_group(ranks) {
            Ok(group) => return run(&group, &cfg, args),
            Err(e) if exchange == Some("nccl") => return Err(e),
            Err(e) => println!("nccl: unavailable ({e}); the ranks share one device instead"),
        }
    }
    #[cfg(not(feature = "nccl"))]
    if exchange == Some("nccl") {
        return Err(Error::invalid(
            "exchange",
            "nccl",
            "in-process (this xwarp was built without the feature nccl: \
             cargo build --release -p xwarp-lab --features nccl)",
        ));
    }
    let devices = open_devices(choice, selector, validation);
    let Some((_, dev)) = devices.first() else {
        eprintln!("error: no backend is available");
        return Ok(ExitCode::FAILURE);
    };
    let group = Group::in_process(vec![&**dev as &dyn Device; ranks])?;
    run(&group, &cfg, args)
}

/// The NCCL group of the host's first `ranks` CUDA devices.
#[cfg(feature = "nccl")]
fn nccl_group(ranks: usize) -> Result<Group<'static>> {
    use std::sync::Arc;
    use xwarp::cuda::CudaDevice;
    let count = xwarp::cuda::available()?;
    if count < ranks {
        return Err(Error::invalid(
            "gpus",
            ranks,
            format!("at most {count} (the CUDA devices of this host)"),
        ));
    }
    let gpus = (0..ranks)
        .map(|i| CudaDevice::new(i).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    Group::nccl(gpus)
}

fn run(group: &Group<'_>, cfg: &GroupConfig, args: &BenchArgs) -> Result<ExitCode> {
    let report = gb::run(group, cfg, &mut |what| eprintln!("bench: {what}"));
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| Error::invalid("output", e, "a writable stdout and paths");
    gb::print(&report, &mut out).map_err(io)?;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::invalid("json", e, "a report serde can write"))?;
        std::fs::write(path, text).map_err(io)?;
        println!("json: {}", path.display());
    }
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn config(args: &BenchArgs) -> Result<GroupConfig> {
    let seed = args
        .seed
        .unwrap_or_else(|| xwarp::Rng::from_time().next_u64());
    let mut cfg = if args.quick {
        GroupConfig::quick(seed)
    } else {
        GroupConfig::full(seed)
    };
    if !args.algos.is_empty() {
        cfg.algos = GroupAlgo::parse_list(&args.algos)?;
    }
    if !args.types.is_empty() {
        cfg.types = parse_types(&args.types)?;
    }
    if !args.sizes.is_empty() {
        cfg.sizes.clear();
        for s in &args.sizes {
            cfg.sizes.extend(parse_sizes(s)?);
        }
    }
    if let Some(r) = args.reps {
        if r == 0 {
            return Err(Error::invalid("reps", 0, "at least 1"));
        }
        cfg.reps = r;
    }
    if let Some(w) = args.warmup {
        cfg.warmup = w;
    }
    Ok(cfg)
}
