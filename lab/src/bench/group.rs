//! `xwarp bench --gpus N`: the group operations ([`xwarp::group`]) on `N` ranks, beside the
//! same operation on one device in the same run.
//!
//! Weak scaling: each size is the length *per rank*, so the group's vector holds `N` times as
//! many elements ([`xwarp::group::split_even`]: the layout with the one-device float bits), and
//! the one-device figure is one rank's share on rank 0's device. Every case is checked first:
//! the group's reduce and scan against the CPU reference of the group orders
//! ([`xwarp::cpu::group`]) and the one-device call against the CPU; the sorts by the bench's
//! exact property checks on every core (keys in order and the input's multiset; pairs a stable
//! permutation of the input), as the one-device sorts are.
//!
//! Both are timed the same way, as host wall time per call from idle devices to finished ones
//! (every rank's device synchronized before and after): a group call spans several devices and
//! the exchange, which no one device's GPU timer sees. Reported: the median, minimum and
//! maximum over the repetitions, elements per second of the whole vector, and the *scaling*:
//! the group's rate over `N` times the one-device rate (1.0: perfect weak scaling).
//!
//! Where the `N` ranks share one device (the in-process exchange on one GPU or llvmpipe), the
//! figures measure what the group's algorithms cost on that device, not scaling across GPUs:
//! the report says so.

use super::check::{check_sorted_keys, check_sorted_pairs, Fingerprint, FingerprintKey};
use super::data::{random_input, BenchElem};
use super::Stats;
use crate::validate::first_mismatch_nan_as_class;
use crate::validate::group::split;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Instant;
use xwarp::cpu;
use xwarp::device::DeviceVec;
use xwarp::element::ElemKind;
use xwarp::error::{Error, Result};
use xwarp::group::{self, Group, GroupSorter, GroupVec};
use xwarp::reduce::{self, ReduceOp};
use xwarp::scan::{self, ScanKind};
use xwarp::sort::{all_bits, SortOrder, Sorter, Tuning, MAX_LEN};

/// One group operation of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupAlgo {
    /// [`group::reduce`] with sum.
    ReduceSum,
    /// [`group::scan`] with sum, inclusive or exclusive.
    Scan(ScanKind),
    /// [`GroupSorter::sort_keys`], ascending, every bit.
    SortKeys,
    /// [`GroupSorter::sort_pairs`] with `u32` values, ascending, every bit.
    SortPairs,
}

impl GroupAlgo {
    /// Every operation, in table order.
    pub const ALL: [GroupAlgo; 5] = [
        GroupAlgo::ReduceSum,
        GroupAlgo::Scan(ScanKind::Inclusive),
        GroupAlgo::Scan(ScanKind::Exclusive),
        GroupAlgo::SortKeys,
        GroupAlgo::SortPairs,
    ];

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            GroupAlgo::ReduceSum => "reduce_sum",
            GroupAlgo::Scan(ScanKind::Inclusive) => "scan_inclusive",
            GroupAlgo::Scan(ScanKind::Exclusive) => "scan_exclusive",
            GroupAlgo::SortKeys => "sort_keys",
            GroupAlgo::SortPairs => "sort_pairs",
        }
    }

    /// The operations named in `names` (`reduce`, `scan`, `sort` for a family).
    pub fn parse_list(names: &[String]) -> Result<Vec<GroupAlgo>> {
        let mut out = Vec::new();
        for name in names.iter().map(|n| n.trim()) {
            let found: Vec<GroupAlgo> = GroupAlgo::ALL
                .into_iter()
                .filter(|a| a.name() == name || a.name().starts_with(&format!("{name}_")))
                .collect();
            if found.is_empty() {
                return Err(Error::invalid(
                    "algo",
                    name,
                    "with --gpus: reduce, scan, sort, or reduce_sum, scan_inclusive, \
                     scan_exclusive, sort_keys, sort_pairs",
                ));
            }
            for a in found {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        Ok(out)
    }
}

impl fmt::Display for GroupAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a group benchmark covers.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// Lengths per rank.
    pub sizes: Vec<usize>,
    /// Element (key) types.
    pub types: Vec<ElemKind>,
    /// Operations.
    pub algos: Vec<GroupAlgo>,
    /// Timed repetitions per case.
    pub reps: usize,
    /// Untimed calls per case before timing.
    pub warmup: usize,
    /// Seed of the random inputs.
    pub seed: u64,
}

impl GroupConfig {
    /// The default run: 2^20 … 2^28 elements per rank, `u32` and `f32`, every operation.
    pub fn full(seed: u64) -> Self {
        GroupConfig {
            sizes: (20..=28).step_by(2).map(|k| 1usize << k).collect(),
            types: vec![ElemKind::U32, ElemKind::F32],
            algos: GroupAlgo::ALL.to_vec(),
            reps: 11,
            warmup: 2,
            seed,
        }
    }

    /// A short run (2^14 and 2^18 per rank, 3 repetitions): for CPU devices and smoke runs.
    pub fn quick(seed: u64) -> Self {
        GroupConfig {
            sizes: vec![1 << 14, 1 << 18],
            reps: 3,
            warmup: 1,
            ..GroupConfig::full(seed)
        }
    }
}

/// One timed case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupRecord {
    /// Operation name.
    pub algo: String,
    /// Element (key) type.
    pub elem: String,
    /// Length per rank.
    pub per_rank: usize,
    /// The group vector's length.
    pub total: usize,
    /// Host wall time per group call, seconds.
    pub group: Stats,
    /// Host wall time per one-device call of one rank's share, seconds (none where one
    /// device does not take a rank's share: sorts of more than [`MAX_LEN`] keys).
    pub one: Option<Stats>,
    /// The group's elements per second (median time).
    pub group_rate: f64,
    /// One device's elements per second (median time).
    pub one_rate: Option<f64>,
    /// `group_rate / (ranks * one_rate)`.
    pub scaling: Option<f64>,
    /// One more group call with step timing ([`Group::set_step_timing`]): each step's
    /// seconds, the slowest rank's (a step that repeats, summed per rank), in order.
    #[serde(default)]
    pub steps: Vec<(String, f64)>,
}

/// A group benchmark run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupReport {
    /// Number of ranks.
    pub ranks: usize,
    /// The exchange, in words.
    pub exchange: String,
    /// Each rank's device.
    pub devices: Vec<String>,
    /// Whether every rank runs on one and the same device.
    pub shared_device: bool,
    /// Seed of the inputs.
    pub seed: u64,
    /// The exchange's settings from the environment (`NCCL_*` variables), name and value.
    #[serde(default)]
    pub environment: Vec<(String, String)>,
    /// The timed cases.
    pub records: Vec<GroupRecord>,
    /// Cases that failed their check or could not run, in words.
    pub failures: Vec<String>,
}

/// Runs `cfg` on `group`, calling `progress` with each case's name before it runs.
pub fn run(group: &Group<'_>, cfg: &GroupConfig, progress: &mut dyn FnMut(&str)) -> GroupReport {
    let ids: Vec<_> = (0..group.ranks()).map(|r| group.device(r).id()).collect();
    let mut report = GroupReport {
        ranks: group.ranks(),
        exchange: group.exchange_name(),
        devices: (0..group.ranks())
            .map(|r| group.device(r).info().to_string())
            .collect(),
        shared_device: ids.iter().all(|&i| i == ids[0]),
        seed: cfg.seed,
        environment: std::env::vars()
            .filter(|(k, _)| k.starts_with("NCCL_"))
            .collect(),
        records: Vec::new(),
        failures: Vec::new(),
    };
    for &algo in &cfg.algos {
        for &elem in &cfg.types {
            for &n in &cfg.sizes {
                let name = format!("{algo} {elem} {n} per rank x {}", group.ranks());
                progress(&name);
                let r = crate::with_elem!(elem, case(group, algo, n, cfg));
                match r {
                    Ok(rec) => report.records.push(rec),
                    Err(e) => report.failures.push(format!("{name}: {e}")),
                }
            }
        }
    }
    report
}

/// Host wall per call of `call` between synchronizations of `sync`.
fn wall(
    reps: usize,
    warmup: usize,
    sync: &dyn Fn() -> Result<()>,
    call: &mut dyn FnMut() -> Result<()>,
) -> Result<Stats> {
    for _ in 0..warmup {
        call()?;
    }
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        sync()?;
        let t = Instant::now();
        call()?;
        sync()?;
        samples.push(t.elapsed().as_secs_f64());
    }
    Ok(Stats::of(&samples))
}

/// One call of `call` with step timing on: each step's seconds on the slowest rank (a step
/// that repeats summed per rank), in the order the steps first ended, then `"total"`: the
/// call's host wall with the steps' waits.
fn steps(group: &Group<'_>, call: &mut dyn FnMut() -> Result<()>) -> Result<Vec<(String, f64)>> {
    group.synchronize()?;
    group.set_step_timing(true);
    let t = Instant::now();
    let ran = call().and_then(|()| group.synchronize());
    let total = t.elapsed().as_secs_f64();
    let times = group.take_step_times();
    group.set_step_timing(false);
    ran?;
    let mut out: Vec<(String, f64)> = Vec::new();
    for rank in 0..group.ranks() {
        let mut before = 0.0;
        let mut mine: Vec<(&str, f64)> = Vec::new();
        for t in times.iter().filter(|t| t.rank == rank) {
            match mine.iter_mut().find(|(s, _)| *s == t.step) {
                Some((_, d)) => *d += t.at - before,
                None => mine.push((t.step, t.at - before)),
            }
            before = t.at;
        }
        for (step, d) in mine {
            match out.iter_mut().find(|(s, _)| s == step) {
                Some((_, most)) => *most = most.max(d),
                None => out.push((step.to_string(), d)),
            }
        }
    }
    out.push(("total".into(), total));
    Ok(out)
}

fn wrong(what: &str, detail: impl fmt::Display) -> Error {
    Error::WrongResult {
        case: what.into(),
        detail: detail.to_string(),
    }
}

fn case<T: BenchElem>(
    group: &Group<'_>,
    algo: GroupAlgo,
    n: usize,
    cfg: &GroupConfig,
) -> Result<GroupRecord> {
    let ranks = group.ranks();
    let total = n * ranks;
    let lens = group::split_even(total, ranks);
    let data: Vec<T> = random_input(cfg.seed ^ n as u64, total);
    let dev = group.device(0);
    let shards = split(&data, &lens);
    let mine = &data[..n];
    let x = GroupVec::from_slice(group, &data, &lens)?;
    let one_in = DeviceVec::from_slice(dev, mine)?;
    let sync_group = || group.synchronize();
    let sync_one = || dev.synchronize();
    let (g, o, steps) = match algo {
        GroupAlgo::ReduceSum => {
            let op = ReduceOp::Sum;
            let mut y = GroupVec::<T>::alloc(group, &vec![1; ranks])?;
            group::reduce(group, op, &x, &mut y)?;
            let want = cpu::group::reduce(op, &shards);
            if let Some(m) = first_mismatch_nan_as_class(&vec![want; ranks], &y.to_vec(group)?) {
                return Err(wrong("group reduce", m));
            }
            let mut one_out = DeviceVec::<T>::alloc(dev, 1)?;
            reduce::device_reduce(dev, op, &one_in, &mut one_out, 0)?;
            let want = cpu::reduce::device_reduce(op, mine);
            if let Some(m) = first_mismatch_nan_as_class(&[want], &one_out.to_vec(dev)?) {
                return Err(wrong("one-device reduce", m));
            }
            let mut call = || group::reduce(group, op, &x, &mut y);
            (
                wall(cfg.reps, cfg.warmup, &sync_group, &mut call)?,
                Some(wall(cfg.reps, cfg.warmup, &sync_one, &mut || {
                    reduce::device_reduce(dev, op, &one_in, &mut one_out, 0)
                })?),
                steps(group, &mut call)?,
            )
        }
        GroupAlgo::Scan(kind) => {
            let op = ReduceOp::Sum;
            let mut y = GroupVec::<T>::alloc(group, &lens)?;
            group::scan(group, op, kind, &x, &mut y)?;
            let want = cpu::group::scan(op, kind, &shards);
            if let Some(m) = first_mismatch_nan_as_class(&want, &y.to_vec(group)?) {
                return Err(wrong("group scan", m));
            }
            let mut one_out = DeviceVec::<T>::alloc(dev, n)?;
            scan::device_scan(dev, op, kind, &one_in, &mut one_out)?;
            let want = cpu::scan::device_scan(op, kind, mine);
            if let Some(m) = first_mismatch_nan_as_class(&want, &one_out.to_vec(dev)?) {
                return Err(wrong("one-device scan", m));
            }
            let mut call = || group::scan(group, op, kind, &x, &mut y);
            (
                wall(cfg.reps, cfg.warmup, &sync_group, &mut call)?,
                Some(wall(cfg.reps, cfg.warmup, &sync_one, &mut || {
                    scan::device_scan(dev, op, kind, &one_in, &mut one_out)
                })?),
                steps(group, &mut call)?,
            )
        }
        GroupAlgo::SortKeys | GroupAlgo::SortPairs => {
            let bits = all_bits::<T>();
            let order = SortOrder::Ascending;
            let mut y = GroupVec::<T>::alloc(group, &lens)?;
            let mut sorter = GroupSorter::<T>::new(group);
            let mut one_out = DeviceVec::<T>::alloc(dev, n)?;
            // One device sorts at most MAX_LEN keys: past that, the group alone is timed.
            let fits_one = n <= MAX_LEN;
            let mut one = if fits_one {
                Sorter::<T>::new(dev, n)?
            } else {
                Sorter::<T>::with_tuning(Tuning::default())
            };
            if algo == GroupAlgo::SortKeys {
                sorter.sort_keys(group, &x, &mut y, order, bits.clone())?;
                let key = FingerprintKey::new(cfg.seed ^ n as u64);
                check_sorted_keys(&Fingerprint::of(&data, key), key, &y.to_vec(group)?, order)
                    .map_err(|m| wrong("group sort", m))?;
                let o = if fits_one {
                    one.sort_keys(dev, &one_in, &mut one_out, order, bits.clone())?;
                    check_sorted_keys(
                        &Fingerprint::of(mine, key),
                        key,
                        &one_out.to_vec(dev)?,
                        order,
                    )
                    .map_err(|m| wrong("one-device sort", m))?;
                    Some(wall(cfg.reps, cfg.warmup, &sync_one, &mut || {
                        one.sort_keys(dev, &one_in, &mut one_out, order, bits.clone())
                    })?)
                } else {
                    None
                };
                let mut call = || sorter.sort_keys(group, &x, &mut y, order, bits.clone());
                (
                    wall(cfg.reps, cfg.warmup, &sync_group, &mut call)?,
                    o,
                    steps(group, &mut call)?,
                )
            } else {
                let values: Vec<u32> = (0..total).map(|i| i as u32).collect();
                let v = GroupVec::from_slice(group, &values, &lens)?;
                let mut vy = GroupVec::<u32>::alloc(group, &lens)?;
                sorter.sort_pairs(group, &x, &mut y, &v, &mut vy, order, bits.clone())?;
                check_sorted_pairs(&data, &y.to_vec(group)?, &vy.to_vec(group)?, order)
                    .map_err(|m| wrong("group sort", m))?;
                let o = if fits_one {
                    let one_v = DeviceVec::from_slice(dev, &values[..n])?;
                    let mut one_vy = DeviceVec::<u32>::alloc(dev, n)?;
                    let mut one_call = || {
                        one.sort_pairs(
                            dev,
                            &one_in,
                            &mut one_out,
                            &one_v,
                            &mut one_vy,
                            order,
                            bits.clone(),
                        )
                    };
                    // Timed first: the check reads what the last timed call wrote.
                    let stats = wall(cfg.reps, cfg.warmup, &sync_one, &mut one_call)?;
                    check_sorted_pairs(mine, &one_out.to_vec(dev)?, &one_vy.to_vec(dev)?, order)
                        .map_err(|m| wrong("one-device sort", m))?;
                    Some(stats)
                } else {
                    None
                };
                let mut call =
                    || sorter.sort_pairs(group, &x, &mut y, &v, &mut vy, order, bits.clone());
                (
                    wall(cfg.reps, cfg.warmup, &sync_group, &mut call)?,
                    o,
                    steps(group, &mut call)?,
                )
            }
        }
    };
    let group_rate = total as f64 / g.median;
    let one_rate = o.as_ref().map(|o| n as f64 / o.median);
    Ok(GroupRecord {
        algo: algo.name().into(),
        elem: T::KIND.name().into(),
        per_rank: n,
        total,
        group: g,
        one: o,
        group_rate,
        one_rate,
        scaling: one_rate.map(|one| group_rate / (ranks as f64 * one)),
        steps,
    })
}

/// Prints the report as a table.
pub fn print(report: &GroupReport, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(
        out,
        "group: {} ranks, exchange {}",
        report.ranks, report.exchange
    )?;
    for (r, d) in report.devices.iter().enumerate() {
        writeln!(out, "  rank {r}: {d}")?;
    }
    for (k, v) in &report.environment {
        writeln!(out, "  {k}={v}")?;
    }
    if report.shared_device && report.ranks > 1 {
        writeln!(
            out,
            "note: every rank runs on one device: these figures measure what the group's \
             algorithms cost there, not scaling across GPUs"
        )?;
    }
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "operation",
        "type",
        "per rank",
        "total",
        "group ms (min..max)",
        "one device ms (min..max)",
        "group M/s",
        "one device M/s",
        "scaling",
    ]);
    for r in &report.records {
        let ms = |s: &Stats| {
            format!(
                "{:.3} ({:.3}..{:.3})",
                s.median * 1e3,
                s.min * 1e3,
                s.max * 1e3
            )
        };
        table.add_row(vec![
            r.algo.clone(),
            r.elem.clone(),
            r.per_rank.to_string(),
            r.total.to_string(),
            ms(&r.group),
            r.one.as_ref().map_or("-".into(), ms),
            format!("{:.1}", r.group_rate / 1e6),
            r.one_rate.map_or("-".into(), |v| format!("{:.1}", v / 1e6)),
            r.scaling.map_or("-".into(), |v| format!("{v:.2}")),
        ]);
    }
    writeln!(out, "{table}")?;
    writeln!(
        out,
        "scaling: the group's elements per second over {} times one device's (weak scaling: \
         each rank holds 'per rank' elements); host wall per call, devices idle at the start",
        report.ranks
    )?;
    if report.records.iter().any(|r| !r.steps.is_empty()) {
        writeln!(
            out,
            "steps (one more call, each rank's device waited for after each step; ms of the \
             slowest rank):"
        )?;
        for r in report.records.iter().filter(|r| !r.steps.is_empty()) {
            let steps: Vec<String> = r
                .steps
                .iter()
                .map(|(s, t)| format!("{s} {:.3}", t * 1e3))
                .collect();
            writeln!(
                out,
                "  {} {} {} per rank: {}",
                r.algo,
                r.elem,
                r.per_rank,
                steps.join(", ")
            )?;
        }
    }
    for f in &report.failures {
        writeln!(out, "FAIL: {f}")?;
    }
    Ok(())
}
