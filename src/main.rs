//! `xwarp`: list devices, validate every kernel on every backend.

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use xwarp::backend::{self, BackendChoice, DeviceSelector, Options};
use xwarp::{BackendKind, Device};

#[derive(Parser)]
#[command(
    name = "xwarp",
    version,
    about = "CUDA's warp-level algorithms on every GPU vendor"
)]
struct Cli {
    /// Backend: auto, vulkan or cuda (default: $XWARP_BACKEND, else every available backend
    /// for `validate` and auto elsewhere).
    #[arg(long, global = true)]
    backend: Option<String>,
    /// Device of the backend: an index or part of its name.
    #[arg(long, global = true)]
    device: Option<String>,
    /// Enable the Vulkan validation layer (when installed).
    #[arg(long, global = true)]
    validation: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every device of every backend, with subgroup sizes and features.
    Info,
    /// Every kernel on every available backend against the CPU reference and each other.
    Validate {
        /// A short subset of the cases.
        #[arg(long)]
        quick: bool,
        /// Seed for the random inputs (default: from the clock).
        #[arg(long)]
        seed: Option<u64>,
        /// Add GPU-sized inputs (2^24 to 2^31 + 5 elements).
        #[arg(long)]
        large: bool,
        /// Only these algorithm families (repeatable): shfl, vote, compact, reduce, ladder,
        /// scan, stencil.
        #[arg(long = "family")]
        families: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> xwarp::Result<ExitCode> {
    let choice = match &cli.backend {
        Some(b) => Some(b.parse::<BackendChoice>()?),
        None if std::env::var(backend::BACKEND_ENV).is_ok_and(|v| !v.is_empty()) => {
            Some(BackendChoice::from_env()?)
        }
        None => None,
    };
    let selector = cli
        .device
        .as_deref()
        .map(str::parse::<DeviceSelector>)
        .transpose()?;
    match cli.command {
        Command::Info => {
            info(choice.unwrap_or_default(), selector, cli.validation);
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate {
            quick,
            seed,
            large,
            families,
        } => {
            xwarp::validate::check_families(&families)?;
            validate(
                choice,
                selector,
                cli.validation,
                (quick, large),
                &families,
                seed,
            )
        }
    }
}

fn info(choice: BackendChoice, selector: Option<DeviceSelector>, validation: bool) {
    for (kind, devices) in backend::list_all() {
        match devices {
            Ok(list) => {
                println!("{kind}: {} device(s)", list.len());
                for d in list {
                    println!("  {d}");
                    println!(
                        "      {}; max binding {} bytes, shared memory {} bytes",
                        d.driver, d.max_binding_bytes, d.shared_memory_bytes
                    );
                }
            }
            Err(e) => println!("{kind}: unavailable: {e}"),
        }
    }
    let opts = Options {
        backend: choice,
        device: selector,
        validation,
    };
    match backend::open(&opts) {
        Ok(dev) => println!("{choice:?} selects: {}", dev.info()),
        Err(e) => println!("{choice:?} selects nothing: {e}"),
    }
}

fn validate(
    choice: Option<BackendChoice>,
    selector: Option<DeviceSelector>,
    validation: bool,
    (quick, large): (bool, bool),
    families: &[String],
    seed: Option<u64>,
) -> xwarp::Result<ExitCode> {
    let mut devices: Vec<(String, std::sync::Arc<dyn Device>)> = Vec::new();
    let opened = match choice {
        None => backend::open_each(validation),
        Some(c) => {
            let opts = Options {
                backend: c,
                device: selector,
                validation,
            };
            let kind = match c {
                BackendChoice::Cuda => BackendKind::Cuda,
                _ => BackendKind::Vulkan,
            };
            vec![(kind, backend::open(&opts))]
        }
    };
    for (kind, dev) in opened {
        match dev {
            Ok(d) => {
                println!("device {kind}: {}", d.info());
                devices.push((format!("{kind}"), d));
            }
            Err(e) => println!("device {kind}: skipped: {e}"),
        }
    }
    if devices.is_empty() {
        println!("0 passed, 1 failed");
        eprintln!("error: no backend is available");
        return Ok(ExitCode::FAILURE);
    }
    let seed = seed.unwrap_or_else(|| xwarp::Rng::from_time().next_u64());
    println!("seed {seed}");
    let refs: Vec<(String, &dyn Device)> = devices.iter().map(|(l, d)| (l.clone(), &**d)).collect();
    let names: Vec<&str> = if families.is_empty() {
        xwarp::validate::FAMILIES.to_vec()
    } else {
        families.iter().map(String::as_str).collect()
    };
    let tally =
        xwarp::validate::run_families(&refs, &names, quick, large, seed, &mut |r| println!("{r}"));
    let mut failed = tally.failed;
    for (label, dev) in &refs {
        let messages = dev.diagnostics();
        for m in &messages {
            println!("FAIL {label} validation: {m}");
        }
        failed += messages.len();
    }
    println!("{} passed, {failed} failed", tally.passed);
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
