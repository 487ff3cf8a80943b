//! `xwarp`: list devices, validate every kernel on every backend, benchmark them.

mod cli_bench;
mod cli_group;
mod cli_validate;

use clap::{Parser, Subcommand};
use comfy_table::{presets, ContentArrangement, Table};
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
        /// scan, stencil, roofline, throughput, sort, partition, unique, run_length,
        /// reduce_by_key, histogram, segmented_reduce, top_k.
        #[arg(long = "family")]
        families: Vec<String>,
        /// Print every case as it completes (by default: progress, a summary per family and
        /// the failed cases).
        #[arg(long)]
        verbose: bool,
    },
    /// Times every algorithm on every available backend (GPU timers), beside the memory
    /// roofline and, where nvcc is present, CUB; every case is checked against the CPU first.
    Bench(Box<BenchArgs>),
}

#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// A short run (sizes 2^10, 2^14, 2^18; 5 repetitions): for CPU devices and smoke runs.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Algorithms or families (repeatable, comma-separated): roofline, reduce, scan, compact,
    /// stencil, shfl, vote, sort, ladder, chain, or names such as reduce_sum (default: all).
    #[arg(long = "algo", value_delimiter = ',')]
    pub(crate) algos: Vec<String>,
    /// Element types, the sort's key types too (comma-separated: i32,u32,f32,i64,u64,f64 or all;
    /// default i32,u32,f32).
    #[arg(long, value_delimiter = ',')]
    pub(crate) types: Vec<String>,
    /// Sizes: comma-separated lengths, 2^k, 2^k+c, or a range of powers 2^a..2^b
    /// (default 2^10..2^28).
    #[arg(long, value_delimiter = ',')]
    pub(crate) sizes: Vec<String>,
    /// Timed repetitions per case.
    #[arg(long)]
    pub(crate) reps: Option<usize>,
    /// Untimed calls per case before timing.
    #[arg(long)]
    pub(crate) warmup: Option<usize>,
    /// MiB copied between repetitions to evict GPU caches (0: none).
    #[arg(long)]
    pub(crate) scrub_mib: Option<u64>,
    /// Input length of the ladder table.
    #[arg(long)]
    pub(crate) ladder_n: Option<String>,
    /// Seed for the random inputs (default: from the clock).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Skip the CUB comparison.
    #[arg(long)]
    pub(crate) no_cub: bool,
    /// Write the whole report as JSON here.
    #[arg(long)]
    pub(crate) json: Option<std::path::PathBuf>,
    /// Write SVG plots (GB/s against n, a plot per algorithm and type) into this directory.
    #[arg(long)]
    pub(crate) svg: Option<std::path::PathBuf>,
    /// Do not measure: load the reports runs wrote with --json (several: merged into one,
    /// a case measured twice taking the later file's figures) and print them (and write
    /// --json, --svg and --markdown from them).
    #[arg(long, num_args = 1.., value_delimiter = ',', conflicts_with = "resume")]
    pub(crate) load: Vec<std::path::PathBuf>,
    /// Continue the run this report (--json) holds: its cases (and CUB's) are kept and not
    /// run again; the rest of this configuration is run and added. Writes the whole report to
    /// --json (default: this file).
    #[arg(long, value_name = "FILE")]
    pub(crate) resume: Option<std::path::PathBuf>,
    /// After the run (or --load), print for every case of both reports the new time over the
    /// time in this report, marking changes beyond both runs' spread.
    #[arg(long, value_name = "OLD.json")]
    pub(crate) compare: Option<std::path::PathBuf>,
    /// Time each command of calls that queue several (the sort's clearing, histogram and
    /// digit passes; scans' clearing and scan ...) besides the whole call (default in full
    /// runs, not in --quick).
    #[arg(long, conflicts_with = "no_launches")]
    pub(crate) launches: bool,
    /// Do not time each command of a call.
    #[arg(long)]
    pub(crate) no_launches: bool,
    /// Write a Markdown summary here.
    #[arg(long)]
    pub(crate) markdown: Option<std::path::PathBuf>,
    /// After the run, write the compiler's statistics of every kernel each benchmarked device
    /// compiled here, as text (Vulkan: where the device offers
    /// VK_KHR_pipeline_executable_properties; CUDA: registers, shared and local memory,
    /// occupancy).
    #[arg(long, value_name = "FILE", conflicts_with = "load")]
    pub(crate) kernel_stats: Option<std::path::PathBuf>,
    /// Time the group operations (reduce, scan, sort across ranks) on N ranks instead, beside
    /// one device's figure; --sizes are then lengths per rank (default 2^20..2^28 in steps of
    /// 4x), --types default u32,f32.
    #[arg(long, value_name = "N", conflicts_with = "load")]
    pub(crate) gpus: Option<usize>,
    /// The exchange of --gpus: nccl (N GPUs of this host; built with the feature nccl) or
    /// in-process (N ranks sharing the first device). Default: nccl where it is built and N
    /// CUDA devices exist, else in-process.
    #[arg(long, value_name = "KIND", requires = "gpus")]
    pub(crate) exchange: Option<String>,
    /// Also time the Vulkan device with its float kernels in each of these subnormal modes
    /// (comma-separated: auto, native, emulate, flush), each opened beside the other devices
    /// and reported as a backend of its own, `vulkan-MODE`: e.g. `--subnormals emulate` (or
    /// `native` on a driver that flushes) for what keeping subnormals in the kernels costs.
    #[arg(long, value_delimiter = ',', conflicts_with = "load")]
    pub(crate) subnormals: Vec<String>,
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
            verbose,
        } => {
            xwarp_lab::validate::check_families(&families)?;
            validate(
                choice,
                selector,
                cli.validation,
                (quick, large),
                (&families, verbose),
                seed,
            )
        }
        Command::Bench(args) => cli_bench::bench(choice, selector, cli.validation, *args),
    }
}

fn info(choice: BackendChoice, selector: Option<DeviceSelector>, validation: bool) {
    // Facts down the side, a column per device: with a device per backend, as on an NVIDIA
    // machine, what differs between them reads across one row.
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic);
    if let Some((_, columns)) = console::Term::stdout().size_checked() {
        table.set_width(columns);
    }
    let mut header = vec!["device".to_string()];
    let mut rows: Vec<(&str, Vec<String>)> = INFO_ROWS.iter().map(|r| (*r, Vec::new())).collect();
    for (kind, devices) in backend::list_all() {
        match devices {
            Ok(list) => {
                println!("{kind}: {} device(s)", list.len());
                for d in list {
                    header.push(format!("{}:{}", d.backend, d.index));
                    let facts = device_facts(&d, open_facts(kind, d.index, validation));
                    for ((_, column), fact) in rows.iter_mut().zip(facts) {
                        column.push(fact);
                    }
                }
            }
            Err(e) => println!("{kind}: unavailable: {e}"),
        }
    }
    if header.len() > 1 {
        table.set_header(header);
        for (name, facts) in rows {
            let mut row = vec![name.to_string()];
            row.extend(facts);
            table.add_row(row);
        }
        println!("{table}");
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

/// The rows of `xwarp info`'s table, in the order of [`device_facts`].
const INFO_ROWS: [&str; 14] = [
    "name",
    "vendor, type",
    "driver",
    "subgroup size",
    "subgroup ops",
    "max binding",
    "shared memory",
    "compute units",
    "workgroup coherence",
    "opened",
    "self-test",
    "float controls",
    "subnormals f32",
    "subnormals f64",
];

/// What only an open device knows: the self-test's verdict and float controls (Vulkan), and
/// how its kernels treat subnormals.
struct OpenFacts {
    self_test: Option<String>,
    float_controls: Option<String>,
    subnormals: [String; 2],
}

/// A device's column of `xwarp info`: the listed facts, then those of `opened`.
fn device_facts(d: &xwarp::DeviceInfo, opened: xwarp::Result<OpenFacts>) -> [String; 14] {
    let (status, self_test, float_controls, [f32_, f64_]) = match opened {
        Ok(o) => (
            "yes".to_string(),
            o.self_test,
            o.float_controls,
            o.subnormals,
        ),
        Err(e) => (
            format!("REFUSED: {e}"),
            None,
            None,
            ["-".to_string(), "-".to_string()],
        ),
    };
    let none = || "-".to_string();
    [
        d.name.clone(),
        format!("{}, {:?}", d.vendor(), d.device_type),
        d.driver.clone(),
        format!(
            "{} (range {}..={}{})",
            d.subgroup_size,
            d.min_subgroup_size,
            d.max_subgroup_size,
            if d.subgroup_size_pinned {
                ", pinned"
            } else {
                ""
            }
        ),
        // `|` without spaces gives the table no place to wrap.
        d.subgroup_features.to_string().replace('|', " | "),
        format!("{} bytes", d.max_binding_bytes),
        if d.max_shared_memory_bytes > d.shared_memory_bytes {
            format!(
                "{} bytes ({} with dynamic shared memory)",
                d.shared_memory_bytes, d.max_shared_memory_bytes
            )
        } else {
            format!("{} bytes", d.shared_memory_bytes)
        },
        if d.compute_units == 0 {
            "unknown".to_string()
        } else {
            d.compute_units.to_string()
        },
        if d.workgroup_coherence {
            "yes (the ladder's in-place rungs at workgroup scope)".to_string()
        } else {
            "no (the ladder's in-place rungs coherent device-wide)".to_string()
        },
        status,
        self_test.unwrap_or_else(none),
        float_controls.unwrap_or_else(none),
        f32_,
        f64_,
    ]
}

/// Opens device `index` of `kind` for what only an open device knows.
fn open_facts(kind: BackendKind, index: usize, validation: bool) -> xwarp::Result<OpenFacts> {
    let subnormals = |info: &xwarp::DeviceInfo| {
        [
            info.subnormals_f32.to_string(),
            info.subnormals_f64.to_string(),
        ]
    };
    match kind {
        BackendKind::Vulkan => xwarp::vulkan::VulkanDevice::new(&xwarp::vulkan::VulkanOptions {
            device: Some(DeviceSelector::Index(index)),
            validation,
            ..Default::default()
        })
        .map(|d| {
            let t = d.self_test();
            let fc = d.float_controls();
            let blocks: Vec<String> = t.blocks.iter().map(u32::to_string).collect();
            OpenFacts {
                self_test: Some(format!(
                    "passed (subgroups of {} lanes at workgroups of {}; {:.1} ms{})",
                    t.subgroup_size,
                    blocks.join(" and "),
                    t.took.as_secs_f64() * 1e3,
                    if t.cached { ", cached" } else { "" },
                )),
                float_controls: Some(format!(
                    "shaderDenormPreserveFloat32 {}, shaderDenormPreserveFloat64 {}, \
                     denormBehaviorIndependence {}",
                    fc.denorm_preserve_f32, fc.denorm_preserve_f64, fc.independence
                )),
                subnormals: subnormals(d.info()),
            }
        }),
        BackendKind::Cuda => xwarp::cuda::CudaDevice::new(index).map(|d| OpenFacts {
            self_test: None,
            float_controls: None,
            subnormals: subnormals(d.info()),
        }),
    }
}

fn validate(
    choice: Option<BackendChoice>,
    selector: Option<DeviceSelector>,
    validation: bool,
    sizes: (bool, bool),
    (families, verbose): (&[String], bool),
    seed: Option<u64>,
) -> xwarp::Result<ExitCode> {
    let devices = open_devices(choice, selector, validation);
    if devices.is_empty() {
        println!("0 passed, 1 failed");
        eprintln!("error: no backend is available");
        return Ok(ExitCode::FAILURE);
    }
    let seed = seed.unwrap_or_else(|| xwarp::Rng::from_time().next_u64());
    println!("seed {seed}");
    let refs: Vec<(String, &dyn Device)> = devices.iter().map(|(l, d)| (l.clone(), &**d)).collect();
    // Once, before the cases: where a device flushes subnormals, its hard inputs lack them.
    for note in xwarp_lab::validate::subnormal_notes(&refs) {
        println!("{note}");
    }
    // In the order they run, each once: the progress counts them.
    let names: Vec<&str> = xwarp_lab::validate::FAMILIES
        .into_iter()
        .filter(|f| families.is_empty() || families.iter().any(|n| n == f))
        .collect();
    let tally = cli_validate::run(&refs, &names, sizes, seed, verbose);
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

/// Opens the chosen backend, or every available one when none is chosen, printing each
/// device or why it was skipped.
pub(crate) fn open_devices(
    choice: Option<BackendChoice>,
    selector: Option<DeviceSelector>,
    validation: bool,
) -> Vec<(String, std::sync::Arc<dyn Device>)> {
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
    let mut devices = Vec::new();
    for (kind, dev) in opened {
        match dev {
            Ok(d) => {
                println!("device {kind}: {}", d.info());
                devices.push((d.info().backend.to_string(), d));
            }
            Err(e) => println!("device {kind}: skipped: {e}"),
        }
    }
    devices
}
