//! `xwarp bench`: options to a [`xwarp_lab::bench::Config`], CUB, the run, the outputs.

use crate::{open_devices, BenchArgs};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use xwarp::backend::{BackendChoice, DeviceSelector};
use xwarp::vulkan::{SubnormalMode, VulkanDevice, VulkanOptions};
use xwarp::{Device, ElemKind, Error, Result};
use xwarp_lab::bench::{self, cub, Algo, Config};

/// Reads a report `--load`, `--resume` or `--compare` names.
fn read_report(option: &'static str, path: &Path) -> Result<bench::Report> {
    bench::read_json(path).map_err(|e| {
        Error::invalid(
            option,
            format!("{}: {e}", path.display()),
            "a report written by --json",
        )
    })
}

pub(crate) fn bench(
    choice: Option<BackendChoice>,
    selector: Option<DeviceSelector>,
    validation: bool,
    args: BenchArgs,
) -> Result<ExitCode> {
    let started = Instant::now();
    let old = args
        .compare
        .as_deref()
        .map(|p| read_report("compare", p))
        .transpose()?;
    if !args.load.is_empty() {
        let reports = args
            .load
            .iter()
            .map(|p| read_report("load", p))
            .collect::<Result<Vec<_>>>()?;
        let report = bench::merge(reports).expect("--load names at least one file");
        return output(&report, &args, old.as_ref());
    }
    if let Some(ranks) = args.gpus {
        return crate::cli_group::bench(choice, selector, validation, ranks, &args);
    }
    let cfg = config(&args)?;
    let resumed = args
        .resume
        .as_deref()
        .map(|p| read_report("resume", p))
        .transpose()?;
    let wall_before = resumed.as_ref().map_or(0.0, |r| r.wall_s);
    let json = args.json.clone().or_else(|| args.resume.clone());
    let modes = args
        .subnormals
        .iter()
        .map(|m| m.parse::<SubnormalMode>())
        .collect::<Result<Vec<_>>>()?;
    let vulkan_selector = selector
        .clone()
        .filter(|_| matches!(choice, Some(BackendChoice::Vulkan)));
    let mut devices = open_devices(choice, selector, validation);
    for mode in modes {
        let label = format!("vulkan-{mode}");
        let opened = VulkanDevice::new(&VulkanOptions {
            device: vulkan_selector.clone(),
            validation,
            subnormals: Some(mode),
        });
        match opened {
            Ok(d) => {
                println!(
                    "device {label}: {} (f32 subnormals {}, f64 {})",
                    d.info(),
                    d.info().subnormals_f32,
                    d.info().subnormals_f64
                );
                devices.push((label, Arc::new(d)));
            }
            Err(e) => println!("device {label}: skipped: {e}"),
        }
    }
    if devices.is_empty() {
        eprintln!("error: no backend is available");
        return Ok(ExitCode::FAILURE);
    }
    let _clocks = clock_holders(&devices);
    println!("seed {}", cfg.seed);
    // CUB first, while our devices are idle: its process has the GPU to itself. A resumed run
    // times only the types and sizes the report has no CUB case of.
    let cub_algos: Vec<cub::CubAlgo> = cub::CubAlgo::ALL
        .into_iter()
        .filter(|c| cfg.algos.iter().any(|a| a.cub_name() == Some(c.name())))
        .collect();
    let cub_started = Instant::now();
    let cub_run = if args.no_cub {
        Err(cub::Unavailable {
            reason: "--no-cub".into(),
        })
    } else if cub_algos.is_empty() {
        Err(cub::Unavailable {
            reason: "no algorithm of this run has a CUB counterpart".into(),
        })
    } else {
        eprintln!("bench: building and running the CUB baseline ...");
        run_cub(&cfg, cub_algos, resumed.as_ref())
    };
    let cub_s = cub_started.elapsed().as_secs_f64();
    match &cub_run {
        Ok(r) => println!(
            "cub: CUB {} (CUDA {}) on {}, {} cases in {:.1} s",
            r.cub_version,
            r.cuda_version,
            r.device,
            r.cases.len(),
            cub_s
        ),
        Err(e) => println!("cub: unavailable: {e}"),
    }
    let refs: Vec<(String, &dyn Device)> = devices.iter().map(|(l, d)| (l.clone(), &**d)).collect();
    let mut progress = ProgressBar::new();
    // The JSON so far after each type and size: a run stopped early (a time limit, say) keeps
    // what it measured (and --resume continues it); the finished run overwrites it.
    let mut checkpoint = |partial: &bench::Report| {
        if let Some(path) = &json {
            let mut r = partial.clone();
            bench::add_cub(&mut r, cub_run.clone());
            *r.phases.entry("cub".into()).or_default() += cub_s;
            r.wall_s += cub_s;
            if let Err(e) = bench::write_json(&r, path) {
                eprintln!("bench: cannot write {}: {e}", path.display());
            }
        }
    };
    let mut report = bench::run(
        &refs,
        &cfg,
        resumed,
        &mut |p| progress.show(p),
        &mut checkpoint,
    )?;
    progress.finish();
    if let Some(path) = &args.kernel_stats {
        std::fs::write(path, bench::kernel_stats_text(&cfg, &refs)).map_err(|e| {
            Error::invalid(
                "kernel-stats",
                format!("{}: {e}", path.display()),
                "a writable path",
            )
        })?;
        println!("kernel stats: {}", path.display());
    }
    for (kind, reason) in unavailable_backends(&refs) {
        let line = format!("{kind}: {reason}");
        if !report.unavailable.contains(&line) {
            report.unavailable.push(line);
        }
    }
    bench::add_cub(&mut report, cub_run);
    *report.phases.entry("cub".into()).or_default() += cub_s;
    // The whole process's wall time (devices opened, CUB, the run), plus a resumed run's.
    report.wall_s = wall_before + started.elapsed().as_secs_f64();
    let args = BenchArgs { json, ..args };
    output(&report, &args, old.as_ref())
}

/// CUB's cases of `cfg`; with `resumed`, only the (type, size) pairs that report has no CUB
/// case of, one program run per type.
fn run_cub(
    cfg: &Config,
    algos: Vec<cub::CubAlgo>,
    resumed: Option<&bench::Report>,
) -> std::result::Result<cub::CubRun, cub::Unavailable> {
    let base = cub::CubConfig {
        sizes: cfg.sizes.clone(),
        types: cfg.types.clone(),
        algos,
        reps: cfg.reps,
        scrub_bytes: cfg.scrub_bytes,
        seed: cfg.seed,
        forms_max: cfg.forms_max,
        launches: cfg.launches,
    };
    let Some(prev) = resumed else {
        return cub::run(&base);
    };
    let mut merged: Option<cub::CubRun> = None;
    for &t in &cfg.types {
        let sizes: Vec<usize> = cfg
            .sizes
            .iter()
            .copied()
            .filter(|&n| {
                !prev
                    .records
                    .iter()
                    .any(|r| r.backend == "cub" && r.elem == t.name() && r.n == n)
            })
            .collect();
        if sizes.is_empty() {
            continue;
        }
        let run = cub::run(&cub::CubConfig {
            sizes,
            types: vec![t],
            ..base.clone()
        })?;
        merged = Some(match merged {
            None => run,
            Some(mut m) => {
                m.cases.extend(run.cases);
                m.forms.extend(run.forms);
                m.launches.extend(run.launches);
                m.skipped.extend(run.skipped);
                m
            }
        });
    }
    merged.ok_or_else(|| cub::Unavailable {
        reason: "the resumed report holds every CUB case of this run".into(),
    })
}

/// Prints the report's tables and writes the files `args` asks for; fails when a case failed.
fn output(
    report: &bench::Report,
    args: &BenchArgs,
    old: Option<&bench::Report>,
) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| Error::invalid("output", e, "a writable stdout and paths");
    for u in &report.unavailable {
        writeln!(out, "unavailable: {u}").map_err(io)?;
    }
    bench::print_flags(report, &mut out).map_err(io)?;
    bench::print_table(report, &mut out).map_err(io)?;
    bench::print_launches(report, &mut out).map_err(io)?;
    bench::print_forms(report, &mut out).map_err(io)?;
    bench::print_ladder(report, &mut out).map_err(io)?;
    bench::print_chains(report, &mut out).map_err(io)?;
    if let Some(old) = old {
        bench::print_compare(&bench::compare_reports(report, old), &mut out).map_err(io)?;
    }
    for s in &report.skipped {
        writeln!(out, "skipped: {s}").map_err(io)?;
    }
    for f in &report.failures {
        writeln!(out, "FAIL: {f}").map_err(io)?;
    }
    if let Some(path) = &args.json {
        bench::write_json(report, path).map_err(io)?;
        writeln!(out, "json: {}", path.display()).map_err(io)?;
    }
    if let Some(dir) = &args.svg {
        let written = bench::write_plots(report, dir).map_err(io)?;
        writeln!(out, "svg: {} plots in {}", written.len(), dir.display()).map_err(io)?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, bench::summary_markdown(report)).map_err(io)?;
        writeln!(out, "markdown: {}", path.display()).map_err(io)?;
    }
    let phases: Vec<String> = report
        .phases
        .iter()
        .map(|(k, v)| format!("{k} {v:.1} s"))
        .collect();
    writeln!(out, "phases: {}", phases.join(", ")).map_err(io)?;
    writeln!(
        out,
        "{} cases timed, {} skipped, {} failed the check, {} flagged; wall time {:.1} s",
        report.records.iter().filter(|r| r.backend != "cub").count()
            + report.ladder.len()
            + report.chains.len(),
        report.skipped.len(),
        report.failures.len(),
        report.flags.len(),
        report.wall_s
    )
    .map_err(io)?;
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// PCI vendor id of NVIDIA.
const NVIDIA: u32 = 0x10de;

/// Idle CUDA devices held through a run that times Vulkan on an NVIDIA GPU without the CUDA
/// backend. NVIDIA's driver lowers the SM clock of a process that runs only Vulkan work in
/// short bursts, as the bench does between its checks (an H200: 1980 MHz for the first few
/// seconds, then 345 MHz, and a copy of 2^28 `u32` 1262 µs against 525; NOTES.md version 42),
/// and keeps it up while a CUDA context exists in the process. Holding one on every CUDA
/// device times Vulkan at the clock a sustained workload gets; none where the CUDA backend is
/// unavailable (then the run says so).
fn clock_holders(devices: &[(String, Arc<dyn Device>)]) -> Vec<Arc<dyn Device>> {
    let info = |d: &Arc<dyn Device>| d.info().clone();
    let vulkan_on_nvidia = devices.iter().any(|(_, d)| {
        let i = info(d);
        i.backend == xwarp::BackendKind::Vulkan && i.vendor_id == NVIDIA
    });
    let cuda = devices
        .iter()
        .any(|(_, d)| info(d).backend == xwarp::BackendKind::Cuda);
    if !vulkan_on_nvidia || cuda {
        return Vec::new();
    }
    let count = xwarp::backend::list_all()
        .into_iter()
        .find(|(k, _)| *k == xwarp::BackendKind::Cuda)
        .and_then(|(_, l)| l.ok())
        .map_or(0, |l| l.len());
    let held: Vec<Arc<dyn Device>> = (0..count)
        .filter_map(|i| {
            xwarp::backend::open(&xwarp::backend::Options {
                backend: BackendChoice::Cuda,
                device: Some(DeviceSelector::Index(i)),
                validation: false,
            })
            .ok()
        })
        .collect();
    if held.is_empty() {
        println!(
            "clocks: no CUDA device to hold: NVIDIA's driver may lower a Vulkan-only \
             process's SM clock between the bench's bursts of work"
        );
    } else {
        println!(
            "clocks: {} idle CUDA device(s) held so that NVIDIA's driver keeps the SM clock \
             up for the Vulkan-only run",
            held.len()
        );
    }
    held
}

/// The backends not among `devices`, with the reason they could not be opened.
fn unavailable_backends(devices: &[(String, &dyn Device)]) -> Vec<(String, String)> {
    xwarp::backend::list_all()
        .into_iter()
        .filter(|(kind, _)| !devices.iter().any(|(l, _)| *l == kind.to_string()))
        .map(|(kind, list)| {
            let reason = match list {
                Ok(l) if l.is_empty() => "no device".to_string(),
                Ok(_) => "not selected".to_string(),
                Err(e) => e.to_string(),
            };
            (kind.to_string(), reason)
        })
        .collect()
}

fn config(args: &BenchArgs) -> Result<Config> {
    let seed = args
        .seed
        .unwrap_or_else(|| xwarp::Rng::from_time().next_u64());
    let mut cfg = if args.quick {
        Config::quick(seed)
    } else {
        Config::full(seed)
    };
    if !args.algos.is_empty() {
        let names: Vec<&str> = args.algos.iter().map(|s| s.trim()).collect();
        cfg.ladder = names.contains(&"ladder");
        cfg.chain = names.contains(&"chain");
        cfg.algos.clear();
        for name in names
            .into_iter()
            .filter(|n| !matches!(*n, "ladder" | "chain"))
        {
            for a in Algo::parse_list(name)? {
                if !cfg.algos.contains(&a) {
                    cfg.algos.push(a);
                }
            }
        }
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
    if let Some(n) = &args.ladder_n {
        cfg.ladder_n = parse_size(n)?;
    }
    if let Some(r) = args.reps {
        cfg.reps = r;
    }
    if let Some(w) = args.warmup {
        cfg.warmup = w;
    }
    if let Some(m) = args.scrub_mib {
        cfg.scrub_bytes = m << 20;
    }
    if args.launches {
        cfg.launches = true;
    }
    if args.no_launches {
        cfg.launches = false;
    }
    cfg.check()?;
    Ok(cfg)
}

/// The element types of `--types` (names, or `all`), each once, in the order given.
pub(crate) fn parse_types(names: &[String]) -> Result<Vec<ElemKind>> {
    let mut types = Vec::new();
    for t in names.iter().map(|t| t.trim()) {
        if t == "all" {
            return Ok(ElemKind::ALL.to_vec());
        }
        let kind = ElemKind::ALL
            .into_iter()
            .find(|k| k.name() == t)
            .ok_or_else(|| Error::invalid("types", t, "i32, u32, f32, i64, u64, f64 or all"))?;
        if !types.contains(&kind) {
            types.push(kind);
        }
    }
    Ok(types)
}

/// `N`, `2^k`, `2^k+c` or `2^k-c`.
fn parse_size(s: &str) -> Result<usize> {
    let bad = || Error::invalid("sizes", s, "N, 2^k, 2^k+c, 2^k-c or 2^a..2^b, k at most 40");
    let s = s.trim();
    if let Some(rest) = s.strip_prefix("2^") {
        let (k, off) = match rest.find(['+', '-']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "+0"),
        };
        let k: u32 = k.parse().map_err(|_| bad())?;
        let off: i64 = off.parse().map_err(|_| bad())?;
        if k > 40 {
            return Err(bad());
        }
        let n = (1i64 << k) + off;
        usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(bad)
    } else {
        s.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(bad)
    }
}

/// One size, or every power of two of a range `2^a..2^b`.
pub(crate) fn parse_sizes(s: &str) -> Result<Vec<usize>> {
    match s.split_once("..") {
        Some((a, b)) => {
            let (a, b) = (parse_size(a)?, parse_size(b)?);
            if !a.is_power_of_two() || !b.is_power_of_two() || a > b {
                return Err(Error::invalid(
                    "sizes",
                    s,
                    "a range 2^a..2^b of powers of two, a <= b",
                ));
            }
            Ok((a.trailing_zeros()..=b.trailing_zeros())
                .map(|k| 1usize << k)
                .collect())
        }
        None => Ok(vec![parse_size(s)?]),
    }
}

/// A progress bar on stderr when it is a terminal; otherwise a line every tenth of the run, so
/// that a log shows how far a run got.
struct ProgressBar {
    bar: indicatif::ProgressBar,
    tty: bool,
    last_tenth: usize,
    started: Instant,
}

impl ProgressBar {
    fn new() -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = if tty {
            indicatif::ProgressBar::new(0)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        if tty {
            // Redraws the spinner and the elapsed time while one long case is timed.
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        ProgressBar {
            bar,
            tty,
            last_tenth: 0,
            started: Instant::now(),
        }
    }

    fn show(&mut self, p: &bench::Progress) {
        if self.tty {
            self.bar.set_length(p.total as u64);
            self.bar.set_position(p.done as u64);
            self.bar.set_message(p.what.clone());
        } else {
            let tenth = p.done * 10 / p.total.max(1);
            if tenth > self.last_tenth || p.done == 0 {
                self.last_tenth = tenth;
                eprintln!(
                    "bench: {}/{} after {:.0}s: {}",
                    p.done,
                    p.total,
                    self.started.elapsed().as_secs_f64(),
                    p.what
                );
            }
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
        if self.tty {
            eprintln!(
                "bench: done in {:.1}s",
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("1000003").unwrap(), 1_000_003);
        assert_eq!(parse_size("2^20").unwrap(), 1 << 20);
        assert_eq!(parse_size("2^20+1").unwrap(), (1 << 20) + 1);
        assert_eq!(parse_size("2^10-1").unwrap(), 1023);
        assert_eq!(
            parse_sizes("2^10..2^13").unwrap(),
            vec![1024, 2048, 4096, 8192]
        );
        for bad in ["0", "2^41", "x", "2^3-9", "2^5..2^3", "3..2^4", ""] {
            assert!(parse_sizes(bad).is_err(), "{bad}");
        }
    }
}
