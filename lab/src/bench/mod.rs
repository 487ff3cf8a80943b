//! Benchmarks: every algorithm on every backend, timed by GPU timers, beside the memory
//! roofline measured in the same run and, where `nvcc` is present, CUB.
//!
//! One measurement path serves `xwarp bench` and `cargo bench`: [`run`] plans the cases of a
//! [`Config`], and for each one uploads random inputs, runs the algorithm once and checks the
//! result against the CPU reference ([`xwarp::cpu`]), then times it. The timed inputs are
//! representative values (the data CUB times too); for `f32` and `f64` each case is first also
//! checked once on hard values ([`xwarp::Element::random_hard`]: every magnitude, subnormals
//! where every device keeps them, NaN payloads and ±∞ where values are only compared or
//! moved), of the case's length up to [`HARD_CHECK_MAX`] elements.
//!
//! What a case reports:
//! - **GPU time**: median, min and max over [`Config::reps`] repetitions, from Vulkan timestamp
//!   queries or CUDA events ([`Device::time`]), after [`Config::warmup`] untimed calls. Before
//!   each repetition a copy of [`Config::scrub_bytes`] between two scratch buffers evicts the
//!   input from the GPU's caches (outside the timed span), so no size is served from a cache
//!   a previous repetition warmed. CPU devices skip it.
//! - **Host wall time per call**: from the call to its result on the host (the result's bytes
//!   for a reduction, the count for a compaction, a synchronize for the rest) with the GPU idle
//!   at the start: what a caller with small inputs feels.
//! - **Forms** (reduce, scan and compaction at `n` ≤ [`Config::forms_max`]): the host wall per
//!   call of a sequence of [`FORM_CALLS`] calls on the same buffers, from an idle GPU, queued
//!   (the calls, one [`Device::submit`], one [`Device::wait`], then the result to the host) and
//!   replayed (recorded once with [`Device::record`]; each time one [`Device::replay`], one
//!   wait and the result), beside the synchronous call above. The replayed result is checked
//!   against the reference once, its output poisoned first. CUB's queued and CUDA Graph forms
//!   are timed the same way.
//! - **GB/s** of the bytes the algorithm must move ([`Algo::bytes`]), and that as a fraction of
//!   the roofline kernel ([`xwarp::roofline`]) of the same backend at the same size: the
//!   read-only kernel for algorithms that only read, the copy kernel for the others.
//! - For the sort, also **keys per second** ([`Record::keys_per_s`]): `n` over the median GPU
//!   time.
//!
//! The sort ([`Algo::SortKeys`], [`Algo::SortPairs`]) is timed as one full call of a
//! [`Sorter`] made once per case, outside the timed span, whose storage every call reuses: the
//! clearing and histogram launches and every digit pass, ascending over every bit of the key.
//! Its keys are the random inputs every algorithm gets (`data::random_input`: integers of
//! uniform random bits, floats finite of random sign and magnitude); a pair sort's values name
//! the keys' input places `0, 1, ..., n - 1` (`data::pair_values`), the values CUB's
//! `SortPairs` gets too: with 4-byte keys the `u32` indices, with 8-byte keys (`i64`, `u64`,
//! `f64`) `u64` values whose two words both encode the index, `(i << 32) | (i ^ 0x9e37_79b9)`.
//! The default types include `u32` because the sort's targets are stated for `u32` keys.

mod check;
pub mod cub;
mod data;
pub mod group;
pub mod guard;
mod merge;
mod report;
mod svg;
pub mod toolbox;

pub use merge::{compare as compare_reports, merge, print_compare, Change};
pub use report::{
    kernel_stats_text, print_chains, print_flags, print_forms, print_ladder, print_launches,
    print_table, read_json, summary_markdown, write_json,
};
pub use svg::write_plots;

use crate::validate::{first_mismatch, first_mismatch_nan_as_class, Compare};
use data::{random_input, with_bench_elem, BenchElem, HardInputs};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;
use toolbox::Tool;
use xwarp::compact::{self, Order};
use xwarp::cpu;
use xwarp::device::{Device, DeviceType, DeviceVec};
use xwarp::element::{ElemKind, Element, Rng};
use xwarp::error::{Error, Result};
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{self, ReduceOp};
use xwarp::scan::{self, ScanKind};
use xwarp::shfl::{self, ShflOp};
use xwarp::sort::{all_bits, SortOrder, Sorter};
use xwarp::stencil::StencilVariant;
use xwarp::vote::{self, Predicate};

/// The fewest elements a result must have to be checked first by a digest on the device
/// ([`xwarp::roofline::digest`] against [`cpu::roofline::digest`] of the reference) rather
/// than downloaded: shorter ones download in microseconds.
pub const DIGEST_MIN: usize = 1 << 16;

/// The most elements of the hard-value check that precedes each `f32` and `f64` case (the
/// case's own length where it is shorter): enough for several levels of every device-wide
/// algorithm, and cheap next to the timed runs.
pub const HARD_CHECK_MAX: usize = (1 << 20) + 7;

/// One benchmarked algorithm (one row group of the table, one plot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    /// The copy roofline: read `n` elements, write `n`.
    Copy,
    /// The read roofline: read `n` elements, write one word per workgroup.
    Read,
    /// [`reduce::device_reduce`] with sum, min or max.
    Reduce(ReduceOp),
    /// [`scan::device_scan`] (sum), inclusive or exclusive.
    Scan(ScanKind),
    /// [`compact::compact`] with `v > threshold` (about half the random inputs pass).
    Compact(Order),
    /// [`xwarp::stencil::moving_average`], `f32` and `f64` only.
    Stencil(StencilVariant),
    /// [`shfl::shfl`] at width 32: broadcast from lane 3, up 1, down 1, xor 16.
    Shfl(ShflOp),
    /// [`vote::vote`] with `v > threshold`.
    Vote,
    /// [`Sorter::sort_keys`], ascending, every bit.
    SortKeys,
    /// [`Sorter::sort_pairs`], ascending, every bit, with values as wide as the keys: `u32`
    /// for 4-byte keys, `u64` for 8-byte ones (`data::pair_values`).
    SortPairs,
    /// One of the device-wide toolbox ([`toolbox`]: partition, unique, run-length encoding,
    /// reduce-by-key, segmented reduce, histogram, top-k).
    Toolbox(Tool),
}

impl Algo {
    /// Every algorithm, in table order.
    pub const ALL: [Algo; 27] = [
        Algo::Copy,
        Algo::Read,
        Algo::Reduce(ReduceOp::Sum),
        Algo::Reduce(ReduceOp::Min),
        Algo::Reduce(ReduceOp::Max),
        Algo::Scan(ScanKind::Inclusive),
        Algo::Scan(ScanKind::Exclusive),
        Algo::Compact(Order::Stable),
        Algo::Compact(Order::Unordered),
        Algo::Stencil(StencilVariant::Shuffle),
        Algo::Stencil(StencilVariant::SharedMemory),
        Algo::Shfl(ShflOp::Broadcast { src_lane: 3 }),
        Algo::Shfl(ShflOp::Up { delta: 1 }),
        Algo::Shfl(ShflOp::Down { delta: 1 }),
        Algo::Shfl(ShflOp::Xor { lane_mask: 16 }),
        Algo::Vote,
        Algo::SortKeys,
        Algo::SortPairs,
        Algo::Toolbox(Tool::ALL[0]),
        Algo::Toolbox(Tool::ALL[1]),
        Algo::Toolbox(Tool::ALL[2]),
        Algo::Toolbox(Tool::ALL[3]),
        Algo::Toolbox(Tool::ALL[4]),
        Algo::Toolbox(Tool::ALL[5]),
        Algo::Toolbox(Tool::ALL[6]),
        Algo::Toolbox(Tool::ALL[7]),
        Algo::Toolbox(Tool::ALL[8]),
    ];

    /// The name in tables, JSON and plot file names.
    pub fn name(self) -> String {
        match self {
            Algo::Copy => "copy".into(),
            Algo::Read => "read".into(),
            Algo::Reduce(op) => format!("reduce_{}", op.name()),
            Algo::Scan(ScanKind::Inclusive) => "scan_inclusive".into(),
            Algo::Scan(ScanKind::Exclusive) => "scan_exclusive".into(),
            Algo::Compact(order) => format!("compact_{order}"),
            Algo::Stencil(v) => format!("stencil_{}", v.name()),
            Algo::Shfl(ShflOp::Broadcast { .. }) => "shfl_broadcast".into(),
            Algo::Shfl(ShflOp::Up { .. }) => "shfl_up".into(),
            Algo::Shfl(ShflOp::Down { .. }) => "shfl_down".into(),
            Algo::Shfl(ShflOp::Wrap { .. }) => "shfl_wrap".into(),
            Algo::Shfl(ShflOp::Xor { .. }) => "shfl_xor".into(),
            Algo::Vote => "vote".into(),
            Algo::SortKeys => "sort_keys".into(),
            Algo::SortPairs => "sort_pairs".into(),
            Algo::Toolbox(t) => t.name(),
        }
    }

    /// The family `--algo` also accepts: `roofline`, `reduce`, `scan`, `compact`, `stencil`,
    /// `shfl`, `vote`, `sort`.
    pub fn family(self) -> &'static str {
        match self {
            Algo::Copy | Algo::Read => "roofline",
            Algo::Reduce(_) => "reduce",
            Algo::Scan(_) => "scan",
            Algo::Compact(_) => "compact",
            Algo::Stencil(_) => "stencil",
            Algo::Shfl(_) => "shfl",
            Algo::Vote => "vote",
            Algo::SortKeys | Algo::SortPairs => "sort",
            Algo::Toolbox(t) => t.family(),
        }
    }

    /// Whether this is one of the sorts (reported in keys per second too).
    pub fn is_sort(self) -> bool {
        matches!(self, Algo::SortKeys | Algo::SortPairs)
    }

    /// Whether the algorithm runs on `elem`.
    pub fn supports(self, elem: ElemKind) -> bool {
        match self {
            Algo::Stencil(_) => matches!(elem, ElemKind::F32 | ElemKind::F64),
            _ => true,
        }
    }

    /// The roofline kernel its bandwidth is compared with.
    pub fn roof(self) -> Algo {
        match self {
            Algo::Read | Algo::Reduce(_) => Algo::Read,
            _ => Algo::Copy,
        }
    }

    /// The bytes that must move for `n` elements of `size` bytes, `kept` of which a compaction
    /// keeps: every input read once, every output written once.
    ///
    /// For the sorts: every key read once and written once, `2 * n * size`, and for pairs every
    /// value too, each as wide as its key (`u32` for 4-byte keys, `u64` for 8-byte ones),
    /// `2 * n * (size + size)`. That is the least any sort must move, not what a
    /// radix sort moves (each digit pass reads and writes every key and value again), so the
    /// GB/s of a sort is an effective rate: the same bytes for every backend and for CUB, whose
    /// times it compares as their ratio does.
    pub fn bytes(self, n: usize, size: usize, kept: usize) -> u64 {
        let (n, size, kept) = (n as u64, size as u64, kept as u64);
        match self {
            Algo::Read => n * size,
            Algo::Reduce(_) => n * size + size,
            Algo::Compact(_) => n * size + kept * size + 8,
            Algo::Vote => {
                n * size + n * 4 + vote::warps(n as usize) as u64 * vote::RECORD_WORDS as u64 * 4
            }
            Algo::SortPairs => 2 * n * (size + size),
            Algo::Toolbox(t) => t.bytes(n as usize, size as usize, kept as usize),
            Algo::Copy | Algo::Scan(_) | Algo::Stencil(_) | Algo::Shfl(_) | Algo::SortKeys => {
                2 * n * size
            }
        }
    }

    /// The CUB program's algorithm measured against this one, if any.
    pub fn cub_name(self) -> Option<&'static str> {
        match self {
            Algo::Reduce(ReduceOp::Sum) => Some("reduce_sum"),
            Algo::Reduce(ReduceOp::Min) => Some("reduce_min"),
            Algo::Reduce(ReduceOp::Max) => Some("reduce_max"),
            Algo::Scan(ScanKind::Inclusive) => Some("scan_inclusive"),
            Algo::Scan(ScanKind::Exclusive) => Some("scan_exclusive"),
            Algo::Compact(_) => Some("select_if"),
            Algo::SortKeys => Some("sort_keys"),
            Algo::SortPairs => Some("sort_pairs"),
            Algo::Toolbox(t) => t.cub_name(),
            _ => None,
        }
    }

    /// The algorithms `spec` names: a name of [`Algo::ALL`] or a family.
    pub fn parse_list(spec: &str) -> Result<Vec<Algo>> {
        let list: Vec<Algo> = Algo::ALL
            .into_iter()
            .filter(|a| {
                a.name() == spec
                    || a.family() == spec
                    || (spec == "toolbox" && matches!(a, Algo::Toolbox(_)))
                    || (spec == "core" && !matches!(a, Algo::Toolbox(_)))
            })
            .collect();
        if list.is_empty() {
            let names: Vec<String> = Algo::ALL.iter().map(|a| a.name()).collect();
            return Err(Error::invalid(
                "algo",
                spec,
                format!(
                    "a family (roofline, reduce, scan, compact, stencil, shfl, vote, sort, \
                     partition, unique, run_length, reduce_by_key, segmented_reduce, \
                     histogram, top_k, ladder, chain), `core` (all but the toolbox), \
                     `toolbox` (its seven families) or one of {}",
                    names.join(", ")
                ),
            ));
        }
        Ok(list)
    }
}

impl fmt::Display for Algo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// What a benchmark run covers.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Config {
    /// Input lengths.
    pub sizes: Vec<usize>,
    /// Element types (the sort's key types).
    #[serde(
        serialize_with = "report::kinds",
        deserialize_with = "report::parse_kinds"
    )]
    pub types: Vec<ElemKind>,
    /// Algorithms of the main table.
    #[serde(
        serialize_with = "report::algos",
        deserialize_with = "report::parse_algos"
    )]
    pub algos: Vec<Algo>,
    /// Whether to run the ladder table.
    pub ladder: bool,
    /// Input length of the ladder table (`i32`).
    pub ladder_n: usize,
    /// Whether to run the subgroup-op throughput chains.
    pub chain: bool,
    /// Dependent operations per thread in a chain.
    pub chain_iters: u32,
    /// Threads running chains.
    pub chain_threads: usize,
    /// Timed repetitions per case.
    pub reps: usize,
    /// Untimed calls per case before timing.
    pub warmup: usize,
    /// Bytes copied between repetitions to evict caches (0: none; CPU devices never scrub).
    pub scrub_bytes: u64,
    /// Seed of the random inputs.
    pub seed: u64,
    /// The largest size whose reduce, scan and compaction cases time the queued and replayed
    /// forms too ([`Record::forms`]); 0: none.
    #[serde(default = "default_forms_max")]
    pub forms_max: usize,
    /// Whether each call of several commands also reports each command's GPU time
    /// ([`Record::launches`]).
    #[serde(default)]
    pub launches: bool,
}

fn default_forms_max() -> usize {
    cub::FORMS_MAX
}

/// Calls per sequence in the queued and replayed forms.
pub const FORM_CALLS: usize = 10;

/// The host wall per call of a sequence of [`FORM_CALLS`] calls, queued and replayed (for CUB:
/// queued and launched as a CUDA Graph).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Forms {
    /// Queued: the calls, one submit and one wait, then the result to the host.
    pub queued: Stats,
    /// Replayed: one replay of the recorded calls and one wait, then the result to the host.
    pub replay: Stats,
}

impl Config {
    /// The full run: sizes 2^10 … 2^28, the types `i32`, `u32` (the type the sort's targets
    /// name) and `f32`, every algorithm but the toolbox's (`--algo toolbox` or `--algo
    /// core,toolbox` adds them) with its launch breakdown, the ladder at 2^24 and the
    /// throughput chains.
    pub fn full(seed: u64) -> Self {
        Config {
            sizes: (10..=28).map(|k| 1usize << k).collect(),
            types: vec![ElemKind::I32, ElemKind::U32, ElemKind::F32],
            algos: Algo::ALL
                .into_iter()
                .filter(|a| !matches!(a, Algo::Toolbox(_)))
                .collect(),
            ladder: true,
            ladder_n: 1 << 24,
            chain: true,
            chain_iters: 4096,
            chain_threads: 1 << 20,
            reps: 21,
            warmup: 2,
            scrub_bytes: 256 << 20,
            seed,
            forms_max: cub::FORMS_MAX,
            launches: true,
        }
    }

    /// A short run for CPU devices and smoke tests: three sizes, `i32`, `u32` and `f32`
    /// (stencils `f32`), every algorithm, a small ladder and short chains, 5 repetitions.
    pub fn quick(seed: u64) -> Self {
        Config {
            sizes: vec![1 << 10, 1 << 14, 1 << 18],
            ladder_n: 1 << 18,
            chain_iters: 256,
            chain_threads: 1 << 14,
            reps: 5,
            warmup: 1,
            launches: false,
            ..Config::full(seed)
        }
    }

    /// Checks the numbers: at least one size and repetition, no empty input.
    pub fn check(&self) -> Result<()> {
        if self.reps == 0 {
            return Err(Error::invalid("reps", 0, "at least 1"));
        }
        if let Some(&n) = self.sizes.iter().find(|&&n| n == 0) {
            return Err(Error::invalid("sizes", n, "lengths of at least 1"));
        }
        if self.ladder && self.ladder_n == 0 {
            return Err(Error::invalid("ladder_n", 0, "at least 1"));
        }
        if self.chain && (self.chain_threads == 0 || self.chain_iters == 0) {
            return Err(Error::invalid(
                "chain",
                format!(
                    "{} threads x {} iters",
                    self.chain_threads, self.chain_iters
                ),
                "at least 1 thread and 1 iteration",
            ));
        }
        Ok(())
    }
}

/// Median, minimum and maximum of a set of times, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Median (the mean of the two middle samples for an even count).
    pub median: f64,
    /// Fastest sample.
    pub min: f64,
    /// Slowest sample.
    pub max: f64,
}

impl Stats {
    /// The statistics of `samples` (all zero when empty).
    pub fn of(samples: &[f64]) -> Self {
        if samples.is_empty() {
            return Stats::default();
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let m = s.len() / 2;
        let median = if s.len() % 2 == 1 {
            s[m]
        } else {
            (s[m - 1] + s[m]) / 2.0
        };
        Stats {
            median,
            min: s[0],
            max: s[s.len() - 1],
        }
    }
}

/// One timed case of the main table.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// `vulkan`, `cuda` or `cub`.
    pub backend: String,
    /// [`Algo::name`], or the CUB program's name for CUB's rows.
    pub algo: String,
    /// Element type.
    pub elem: String,
    /// Input length.
    pub n: usize,
    /// Bytes that must move ([`Algo::bytes`]).
    pub bytes: u64,
    /// GPU time per call, seconds.
    pub gpu: Stats,
    /// Host wall time per call, seconds.
    pub host: Stats,
    /// `bytes / gpu.median`, GB/s (10^9 bytes per second).
    pub gbs: f64,
    /// `gbs` over the roofline kernel's at the same size on the same backend.
    pub roof_fraction: Option<f64>,
    /// CUB's median GPU time over this one's: above 1, faster than CUB.
    pub vs_cub: Option<f64>,
    /// For the sort: keys sorted per second, `n / gpu.median`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_per_s: Option<f64>,
    /// The queued and replayed forms, for the small cases that time them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forms: Option<Forms>,
    /// Each command of a call that queues several ([`Config::launches`]), in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches: Option<Vec<LaunchRow>>,
}

/// A record of `algo` on `i32` at `n` timed at `gpu` on `backend`, nothing else measured: for
/// the tests of the reports.
#[cfg(test)]
pub(crate) fn test_record(backend: &str, algo: &str, n: usize, gpu: Stats) -> Record {
    Record {
        backend: backend.into(),
        algo: algo.into(),
        elem: "i32".into(),
        n,
        bytes: 8 * n as u64,
        gpu,
        host: Stats::default(),
        gbs: 8.0 * n as f64 / gpu.median / 1e9,
        roof_fraction: None,
        vs_cub: None,
        keys_per_s: None,
        forms: None,
        launches: None,
    }
}

/// One command of a call's launch breakdown ([`Device::time_launches`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchRow {
    /// The kernel's name, or `copy`, `fill`, `write`.
    pub name: String,
    /// GPU time from the end of the command before to its own end, over the repetitions.
    pub gpu: Stats,
}

/// One rung of the ladder table on one backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LadderRow {
    /// `vulkan` or `cuda`.
    pub backend: String,
    /// The kernel's name in the walkthrough (`reduceNeighbored`, ...).
    pub kernel: String,
    /// Threads per block.
    pub block: u32,
    /// Input length (`i32`).
    pub n: usize,
    /// GPU time of the block-sums kernel.
    pub gpu: Stats,
    /// `reduceNeighbored`'s median time over this one's.
    pub speedup: f64,
    /// `bytes / gpu.median`, GB/s.
    pub gbs: f64,
}

/// One subgroup-operation chain on one backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainRow {
    /// `vulkan` or `cuda`.
    pub backend: String,
    /// The operation.
    pub op: String,
    /// Threads.
    pub threads: usize,
    /// Dependent operations per thread.
    pub iters: u32,
    /// GPU time.
    pub gpu: Stats,
    /// Operations (one per thread per iteration) per second.
    pub ops_per_s: f64,
}

/// A device the run used.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeviceEntry {
    /// `vulkan` or `cuda`.
    pub backend: String,
    /// The device's name.
    pub name: String,
    /// Driver and API version.
    pub driver: String,
    /// Subgroup (warp) size.
    pub subgroup_size: u32,
}

/// Whether CUB ran, and on what.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CubInfo {
    /// Whether its numbers are in the report.
    pub available: bool,
    /// Why not, when it is not.
    pub reason: Option<String>,
    /// The device the CUB program ran on.
    pub device: Option<String>,
    /// `CUB_VERSION`.
    pub version: Option<String>,
    /// The CUDA runtime version.
    pub cuda: Option<String>,
}

/// Everything one run measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    /// The configuration.
    pub config: Config,
    /// The devices measured.
    pub devices: Vec<DeviceEntry>,
    /// Backends that could not be opened, with the reason.
    pub unavailable: Vec<String>,
    /// CUB.
    pub cub: CubInfo,
    /// The main table (CUB's rows included).
    pub records: Vec<Record>,
    /// The ladder table.
    pub ladder: Vec<LadderRow>,
    /// Shuffle and ballot throughput.
    pub chains: Vec<ChainRow>,
    /// Cases that could not run (unsupported type, out of memory ...), with the reason.
    pub skipped: Vec<String>,
    /// Cases whose result differed from the CPU reference (they are not timed).
    pub failures: Vec<String>,
    /// Wall time of the run, seconds (for a merged report: the sum of its runs').
    #[serde(default)]
    pub wall_s: f64,
    /// Host seconds of the run by phase: `inputs`, `uploads`, `references`, `checks: ...`
    /// (a case's check on hard values, its buffers, its first call, and the download and
    /// comparison of its result), `timing`, `forms`, `launches`, `retiming` (the cliff
    /// guard's), `cub` (the CUB program, its build included).
    #[serde(default)]
    pub phases: std::collections::BTreeMap<String, f64>,
    /// What the cliff guard found ([`guard`]).
    #[serde(default)]
    pub flags: Vec<guard::Flag>,
}

impl Report {
    /// A report of `config` on `devices` with nothing measured yet, dated today.
    pub fn empty(config: Config, devices: Vec<DeviceEntry>) -> Report {
        Report {
            date: report::utc_date(),
            config,
            devices,
            unavailable: Vec::new(),
            cub: CubInfo::default(),
            records: Vec::new(),
            ladder: Vec::new(),
            chains: Vec::new(),
            skipped: Vec::new(),
            failures: Vec::new(),
            wall_s: 0.0,
            phases: Default::default(),
            flags: Vec::new(),
        }
    }

    /// Adds the time since `since` to phase `name`.
    fn phase(&mut self, name: &str, since: Instant) {
        *self.phases.entry(name.into()).or_default() += since.elapsed().as_secs_f64();
    }
}

/// Where a run is, for progress displays.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Cases finished.
    pub done: usize,
    /// Cases in all.
    pub total: usize,
    /// The case starting now.
    pub what: String,
}

/// Runs `cfg` on `devices` (label, device), calling `progress` before each case and
/// `checkpoint` with the report so far after each type and size, the ladder and the chains (a
/// run cut short keeps what it measured). With `resume`, the cases that report holds (timed,
/// or failed their check) are kept and not run again, and the new cases are added to it.
/// Finally the cliff guard ([`guard`]) flags cases and re-times them.
pub fn run(
    devices: &[(String, &dyn Device)],
    cfg: &Config,
    resume: Option<Report>,
    progress: &mut dyn FnMut(&Progress),
    checkpoint: &mut dyn FnMut(&Report),
) -> Result<Report> {
    cfg.check()?;
    let started = Instant::now();
    let entries: Vec<DeviceEntry> = devices
        .iter()
        .map(|(label, d)| DeviceEntry {
            backend: label.clone(),
            name: d.info().name.clone(),
            driver: d.info().driver.clone(),
            subgroup_size: d.info().subgroup_size,
        })
        .collect();
    let mut report = match resume {
        Some(mut r) => {
            for e in entries {
                if !r.devices.iter().any(|d| d.backend == e.backend) {
                    r.devices.push(e);
                }
            }
            r.config = cfg.clone();
            // Flags are made again over the whole report at the end.
            r.flags.clear();
            r
        }
        None => Report::empty(cfg.clone(), entries),
    };
    let wall_before = report.wall_s;
    let scrubs: Vec<Option<Scrub>> = devices
        .iter()
        .map(|(_, d)| Scrub::new(*d, cfg.scrub_bytes))
        .collect::<Result<_>>()?;
    let main_cases: usize = cfg
        .types
        .iter()
        .map(|&k| cfg.algos.iter().filter(|a| a.supports(k)).count())
        .sum::<usize>()
        * cfg.sizes.len();
    let mut p = Progress {
        done: 0,
        total: (main_cases
            + usize::from(cfg.ladder) * LadderKernel::ALL.len()
            + usize::from(cfg.chain) * data::CHAIN_OPS)
            * devices.len(),
        what: String::new(),
    };
    let mut ctx = Ctx {
        devices,
        scrubs: &scrubs,
        cfg,
        report: &mut report,
        progress,
        p: &mut p,
    };
    for &kind in &cfg.types {
        for &n in &cfg.sizes {
            with_bench_elem!(kind, main_cases_of(&mut ctx, n));
            ctx.report.wall_s = wall_before + started.elapsed().as_secs_f64();
            checkpoint(ctx.report);
        }
    }
    if cfg.ladder {
        ladder_table(&mut ctx);
        checkpoint(ctx.report);
    }
    if cfg.chain {
        data::chains(&mut ctx);
    }
    let t = Instant::now();
    retime_flagged(&mut ctx);
    ctx.report.phase("retiming", t);
    fill_ratios(&mut report);
    report.wall_s = wall_before + started.elapsed().as_secs_f64();
    Ok(report)
}

/// The cliff guard over the report so far: flags its cases, re-times each flagged case of the
/// run's backends (and the case its rule compares with) [`guard::RETIMES`] times, and judges.
fn retime_flagged(ctx: &mut Ctx<'_>) {
    let mut flags = guard::flags(ctx.report);
    let mut wanted: Vec<guard::CaseKey> = Vec::new();
    // A CPU device's times follow whatever else the host runs: its flags are not re-timed.
    for f in &flags {
        if ctx
            .devices
            .iter()
            .any(|(label, d)| *label == f.backend && d.info().device_type != DeviceType::Cpu)
        {
            for c in guard::cases_to_retime(f) {
                if !wanted.contains(&c) {
                    wanted.push(c);
                }
            }
        }
    }
    let mut retimed: guard::Retimed = Vec::new();
    for c in wanted {
        let (backend, algo_name, elem_name, n) = &c;
        let Some(i) = ctx.devices.iter().position(|(l, _)| l == backend) else {
            continue;
        };
        let Some(algo) = Algo::ALL.into_iter().find(|a| a.name() == *algo_name) else {
            continue;
        };
        let Some(elem) = ElemKind::ALL.into_iter().find(|k| k.name() == elem_name) else {
            continue;
        };
        ctx.step(format!(
            "{backend} {algo} {elem} n={n}: re-timing (cliff guard)"
        ));
        let dev = ctx.devices[i].1;
        let scrub = ctx.scrubs[i].as_ref();
        let times: Result<Vec<Stats>> = (0..guard::RETIMES)
            .map(|_| with_bench_elem!(elem, retime(dev, scrub, ctx.cfg, algo, *n)))
            .collect();
        match times {
            Ok(t) => retimed.push((c, t)),
            Err(e) => ctx
                .report
                .skipped
                .push(format!("{backend} {algo} {elem} n={n}: re-timing: {e}")),
        }
    }
    guard::judge(ctx.report, &mut flags, &retimed);
    ctx.report.flags = flags;
}

/// The GPU time of one case again (the run's inputs, drawn anew), for the cliff guard: the
/// case was checked when it was first timed; one untimed call, then [`measure_gpu`].
fn retime<T: BenchElem>(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    algo: Algo,
    n: usize,
) -> Result<Stats> {
    let input: Vec<T> = check::random_values(cfg.seed, n);
    let src = DeviceVec::from_slice(dev, &input)?;
    let reference = match algo {
        // Only what `Case::call` reads of a reference: the stencil's weights, a sort's kind.
        Algo::Stencil(_) => Reference::of(algo, &input, cfg.seed),
        _ => Reference::Value(T::zeroed()),
    };
    let mut c = Case::new(dev, algo, &src, &reference)?;
    c.call(true)?;
    measure_gpu(dev, scrub, cfg, &mut |finish| c.call(finish))
}

/// The state one run threads through its cases.
struct Ctx<'a> {
    devices: &'a [(String, &'a dyn Device)],
    scrubs: &'a [Option<Scrub>],
    cfg: &'a Config,
    report: &'a mut Report,
    progress: &'a mut dyn FnMut(&Progress),
    p: &'a mut Progress,
}

impl Ctx<'_> {
    fn step(&mut self, what: String) {
        self.p.what = what;
        (self.progress)(self.p);
        self.p.done += 1;
    }

    /// Whether the report holds the case already: timed, or failed its check.
    fn done(&self, backend: &str, algo: &str, elem: &str, n: usize) -> bool {
        self.report
            .records
            .iter()
            .any(|r| r.backend == backend && r.algo == algo && r.elem == elem && r.n == n)
            || {
                let what = format!("{backend} {algo} {elem} n={n}:");
                self.report.failures.iter().any(|f| f.starts_with(&what))
            }
    }
}

/// Two scratch buffers whose copy evicts what earlier work left in the caches.
struct Scrub {
    a: DeviceVec<u32>,
    b: DeviceVec<u32>,
}

impl Scrub {
    fn new(dev: &dyn Device, bytes: u64) -> Result<Option<Scrub>> {
        if bytes == 0 || dev.info().device_type == DeviceType::Cpu {
            return Ok(None);
        }
        let words = (bytes / 8).max(1) as usize;
        let mut a = DeviceVec::<u32>::alloc(dev, words)?;
        a.fill(dev, 0x5a5a_5a5a)?;
        Ok(Some(Scrub {
            a,
            b: DeviceVec::alloc(dev, words)?,
        }))
    }

    fn run(&self, dev: &dyn Device) -> Result<()> {
        dev.copy(self.a.raw(), 0, self.b.raw(), 0, self.a.len() as u64 * 4)
    }
}

/// GPU time of `call(false)`: warm-up calls, then repetitions each after a scrub.
fn measure_gpu(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    call: &mut dyn FnMut(bool) -> Result<()>,
) -> Result<Stats> {
    for _ in 0..cfg.warmup {
        call(true)?;
    }
    let mut gpu = Vec::with_capacity(cfg.reps);
    for _ in 0..cfg.reps {
        if let Some(s) = scrub {
            s.run(dev)?;
        }
        gpu.push(dev.time(&mut || call(false))?.as_secs_f64());
    }
    Ok(Stats::of(&gpu))
}

/// [`measure_gpu`], then the host wall time of `call(true)` from an idle GPU, which must also
/// bring the result to the host (or wait for it).
fn measure(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    call: &mut dyn FnMut(bool) -> Result<()>,
) -> Result<(Stats, Stats)> {
    let gpu = measure_gpu(dev, scrub, cfg, call)?;
    let mut host = Vec::with_capacity(cfg.reps);
    for _ in 0..cfg.reps {
        if let Some(s) = scrub {
            s.run(dev)?;
        }
        dev.synchronize()?;
        let t = Instant::now();
        call(true)?;
        host.push(t.elapsed().as_secs_f64());
    }
    Ok((gpu, Stats::of(&host)))
}

/// What one case gives before its ratios are known.
struct Timed {
    gpu: Stats,
    host: Stats,
    bytes: u64,
    forms: Option<Forms>,
    launches: Option<Vec<LaunchRow>>,
    /// Host seconds by phase ([`Report::phases`]).
    phases: Vec<(&'static str, f64)>,
}

fn main_cases_of<T: BenchElem>(ctx: &mut Ctx<'_>, n: usize) {
    let seed = ctx.cfg.seed;
    let supported: Vec<Algo> = ctx
        .cfg
        .algos
        .iter()
        .copied()
        .filter(|a| a.supports(T::KIND))
        .collect();
    // Cases already in the report (--resume) are not run again.
    let algos: Vec<Algo> = supported
        .iter()
        .copied()
        .filter(|a| {
            ctx.devices
                .iter()
                .any(|(label, _)| !ctx.done(label, &a.name(), T::KIND.name(), n))
        })
        .collect();
    ctx.p.done += (supported.len() - algos.len()) * ctx.devices.len();
    if algos.is_empty() {
        return;
    }
    let t = Instant::now();
    let input: Arc<Vec<T>> = Arc::new(check::random_values(seed, n));
    ctx.report.phase("inputs", t);
    // One device copy of the input per backend, shared by the algorithms of this size.
    let t = Instant::now();
    let uploads: Vec<Result<DeviceVec<T>>> = ctx
        .devices
        .iter()
        .map(|(_, d)| DeviceVec::from_slice(*d, &input))
        .collect();
    ctx.report.phase("uploads", t);
    // The CPU references of every algorithm of this size, one thread each (each reference is
    // one pass over the input; at 2^28 elements they take seconds one after another). The
    // sorts share one: their checks need the input and its fingerprint only.
    let t = Instant::now();
    let sort_input = algos
        .iter()
        .any(|a| a.is_sort())
        .then(|| Arc::new(SortInput::of(Arc::clone(&input), seed)));
    let references: Vec<Reference<T>> = std::thread::scope(|s| {
        let handles: Vec<_> = algos
            .iter()
            .map(|&algo| {
                let (input, sort_input) = (&input, &sort_input);
                s.spawn(move || match sort_input {
                    Some(sorted) if algo.is_sort() => Reference::Sort(Arc::clone(sorted)),
                    _ => Reference::of(algo, input, seed),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a reference thread panicked"))
            .collect()
    });
    // The hard inputs every algorithm of this size is checked on first (floats only).
    let hard = HardInputs::<T>::new(ctx.devices, seed, n);
    ctx.report.phase("references", t);
    for (algo, reference) in algos.into_iter().zip(&references) {
        let hard_reference = hard.as_ref().map(|h| h.reference(algo, seed));
        for (i, upload) in uploads.iter().enumerate() {
            let (label, dev) = &ctx.devices[i];
            let what = format!("{label} {algo} {} n={n}", T::KIND);
            ctx.step(what.clone());
            if ctx.done(label, &algo.name(), T::KIND.name(), n) {
                continue;
            }
            let src = match upload {
                Ok(src) => src,
                Err(e) => {
                    ctx.report.skipped.push(format!("{what}: {e}"));
                    continue;
                }
            };
            let hard_check = match (&hard, &hard_reference) {
                (Some(h), Some(r)) => Some((h.input(algo), r)),
                _ => None,
            };
            let scrub = ctx.scrubs[i].as_ref();
            match case::<T>(*dev, scrub, ctx.cfg, algo, src, reference, hard_check) {
                Ok(Ok(t)) => {
                    for (phase, secs) in &t.phases {
                        *ctx.report.phases.entry((*phase).into()).or_default() += secs;
                    }
                    ctx.report.records.push(Record {
                        backend: label.clone(),
                        algo: algo.name(),
                        elem: T::KIND.to_string(),
                        n,
                        bytes: t.bytes,
                        gpu: t.gpu,
                        host: t.host,
                        gbs: t.bytes as f64 / t.gpu.median / 1e9,
                        roof_fraction: None,
                        vs_cub: None,
                        keys_per_s: algo.is_sort().then(|| n as f64 / t.gpu.median),
                        forms: t.forms,
                        launches: t.launches,
                    })
                }
                Ok(Err(mismatch)) => ctx.report.failures.push(format!("{what}: {mismatch}")),
                Err(e) => ctx.report.skipped.push(format!("{what}: {e}")),
            }
        }
    }
}

/// The CPU reference's answer for one algorithm on one input, computed once for all backends.
enum Reference<T: BenchElem> {
    Elems(Vec<T>),
    Value(T),
    /// Count and an order-free digest of the kept elements.
    Multiset(usize, u64),
    Words(Vec<u32>),
    Stencil([T; cpu::stencil::POINTS], Vec<T>),
    /// The sorts: checked by their properties ([`check`]), shared by both sorts of one input.
    Sort(Arc<SortInput<T>>),
    /// A toolbox algorithm's outputs.
    Tool(toolbox::Expected),
}

/// What the property checks of a sort need: the input (the pair sort's values name its
/// indices, [`data::pair_values`]) and the fingerprint of its keys.
struct SortInput<T> {
    input: Arc<Vec<T>>,
    fingerprint: check::Fingerprint,
    key: check::FingerprintKey,
}

impl<T: Element> SortInput<T> {
    fn of(input: Arc<Vec<T>>, seed: u64) -> Self {
        let key = check::FingerprintKey::new(seed);
        SortInput {
            fingerprint: check::Fingerprint::of(&input, key),
            input,
            key,
        }
    }
}

impl<T: BenchElem> Reference<T> {
    fn of(algo: Algo, input: &[T], seed: u64) -> Self {
        Self::with_weights(algo, input, || {
            T::stencil_reference(&mut Rng::new(seed ^ 0x57e4), input)
        })
    }

    /// [`Reference::of`] with the stencil's weights and result from `stencil`.
    fn with_weights(
        algo: Algo,
        input: &[T],
        stencil: impl FnOnce() -> Option<([T; cpu::stencil::POINTS], Vec<T>)>,
    ) -> Self {
        let pred = Predicate::Greater(T::THRESHOLD);
        match algo {
            Algo::Copy => Reference::Elems(input.to_vec()),
            Algo::Read => Reference::Words(data::read_folds(input)),
            Algo::Reduce(op) => Reference::Value(cpu::reduce::device_reduce(op, input)),
            Algo::Scan(kind) => {
                Reference::Elems(cpu::scan::device_scan(ReduceOp::Sum, kind, input))
            }
            Algo::Compact(Order::Stable) => Reference::Elems(cpu::compact::stable(pred, input)),
            Algo::Compact(Order::Unordered) => {
                let kept: Vec<T> = input.iter().copied().filter(|&v| pred.eval(v)).collect();
                Reference::Multiset(kept.len(), digest(&kept))
            }
            // Only float types reach here (`Algo::supports`); the others get an empty reference
            // and their call fails with a typed error before any check.
            Algo::Stencil(_) => stencil().map_or(Reference::Elems(Vec::new()), |(w, out)| {
                Reference::Stencil(w, out)
            }),
            Algo::Shfl(op) => Reference::Elems(cpu::shfl::shfl(op, 32, 1, input)),
            Algo::Vote => Reference::Words(cpu::vote::vote(pred, input).to_words()),
            Algo::SortKeys | Algo::SortPairs => {
                Reference::Sort(Arc::new(SortInput::of(Arc::new(input.to_vec()), 0x5047)))
            }
            Algo::Toolbox(t) => Reference::Tool(toolbox::expected(t, input)),
        }
    }
}

impl<T: BenchElem> Reference<T> {
    /// A value the expected elements do not hold, never a NaN (for checks that let NaN match
    /// any NaN, where the NaN poison of [`poison`] could pass for a result).
    fn poison(&self) -> T {
        match self {
            Reference::Elems(want) | Reference::Stencil(_, want) => {
                crate::validate::poison_value(want)
            }
            Reference::Value(want) => crate::validate::poison_value(&[*want]),
            Reference::Sort(sort) => crate::validate::poison_value(&sort.input),
            Reference::Multiset(..) | Reference::Words(_) | Reference::Tool(_) => {
                crate::validate::poison_value(&[])
            }
        }
    }
}

/// An order-independent digest of a multiset of elements.
fn digest<T: Element>(values: &[T]) -> u64 {
    values
        .iter()
        .map(|v| Rng::new(v.to_bits64()).next_u64())
        .fold(0u64, u64::wrapping_add)
}

/// `Err` with the first difference, as [`crate::validate`] words it.
fn compare<T: Element>(want: &[T], got: &[T]) -> std::result::Result<(), String> {
    match crate::validate::first_mismatch(want, got) {
        None => Ok(()),
        Some(m) => Err(m.to_string()),
    }
}

/// A value the outputs are filled with before the checked run: a NaN with a marked payload for
/// floats, a marked bit pattern for integers.
fn poison<T: Element>() -> T {
    if T::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, T>(&[0x7fcd_cdcd])[0]
    } else {
        bytemuck::cast_slice::<u64, T>(&[0x7ff9_cdcd_cdcd_cdcd])[0]
    }
}

/// One case's buffers on one device.
struct Case<'a, T: BenchElem> {
    dev: &'a dyn Device,
    algo: Algo,
    src: &'a DeviceVec<T>,
    reference: &'a Reference<T>,
    out: DeviceVec<T>,
    /// Read folds, or vote records.
    words: DeviceVec<u32>,
    /// Vote ranks.
    ranks: DeviceVec<u32>,
    count: DeviceVec<u64>,
    /// The sort's storage, made with the case so that no timed call allocates.
    sorter: Option<Sorter<T>>,
    /// The pair sort's values ([`data::pair_values`]: `u32` for 4-byte keys, `u64` for 8-byte
    /// ones) and their output.
    values_in: DeviceVec<T::PairValue>,
    values_out: DeviceVec<T::PairValue>,
    /// A toolbox algorithm's outputs and plan.
    tool: Option<toolbox::State<T>>,
}

impl<'a, T: BenchElem> Case<'a, T> {
    fn new(
        dev: &'a dyn Device,
        algo: Algo,
        src: &'a DeviceVec<T>,
        reference: &'a Reference<T>,
    ) -> Result<Self> {
        let n = src.len();
        let (elems, words, ranks) = match algo {
            Algo::Read => (1, data::read_folds_len::<T>(n), 1),
            Algo::Reduce(_) => (1, 1, 1),
            Algo::Vote => (1, vote::warps(n) * vote::RECORD_WORDS, n),
            Algo::Toolbox(_) => (1, 1, 1),
            _ => (n, 1, 1),
        };
        let sorter = match algo {
            Algo::SortKeys => Some(Sorter::new(dev, n)?),
            Algo::SortPairs => Some(Sorter::for_pairs::<T::PairValue>(dev, n)?),
            _ => None,
        };
        let values_in = if algo == Algo::SortPairs {
            DeviceVec::from_slice(dev, &data::pair_values(n))?
        } else {
            DeviceVec::alloc(dev, 1)?
        };
        let mut case = Case {
            dev,
            algo,
            src,
            reference,
            out: DeviceVec::alloc(dev, elems)?,
            words: DeviceVec::alloc(dev, words)?,
            ranks: DeviceVec::alloc(dev, ranks)?,
            count: DeviceVec::alloc(dev, 1)?,
            sorter,
            values_in,
            values_out: DeviceVec::alloc(dev, if algo == Algo::SortPairs { n } else { 1 })?,
            tool: match algo {
                Algo::Toolbox(t) => Some(toolbox::State::new(dev, t, n)?),
                _ => None,
            },
        };
        if let Some(t) = &mut case.tool {
            t.poison(dev, reference.poison())?;
        }
        case.out.fill(dev, poison())?;
        case.words.fill(dev, 0xcdcd_cdcd)?;
        case.ranks.fill(dev, 0xcdcd_cdcd)?;
        case.count.fill(dev, u64::MAX)?;
        // Never the value of an input index: a value left unwritten shows.
        case.values_out
            .fill(dev, <T::PairValue as check::PairValue>::POISON)?;
        Ok(case)
    }

    /// One call of the algorithm; with `finish`, its result reaches the host too (the value of
    /// a reduction, the count of a compaction; the rest are waited for).
    fn call(&mut self, finish: bool) -> Result<()> {
        let (dev, src) = (self.dev, self.src);
        let pred = Predicate::Greater(T::THRESHOLD);
        match (self.algo, self.reference) {
            (Algo::Copy, _) => xwarp::roofline::copy(dev, src, &mut self.out)?,
            (Algo::Read, _) => xwarp::roofline::read(dev, src, &mut self.words)?,
            (Algo::Reduce(op), _) => {
                reduce::device_reduce(dev, op, src, &mut self.out, 0)?;
                if finish {
                    let mut one = [T::zeroed()];
                    return dev.read(self.out.raw(), 0, bytemuck::cast_slice_mut(&mut one));
                }
            }
            (Algo::Scan(kind), _) => {
                scan::device_scan(dev, ReduceOp::Sum, kind, src, &mut self.out)?
            }
            (Algo::Compact(order), _) => {
                compact::compact(dev, order, pred, src, &mut self.out, &mut self.count)?;
                if finish {
                    let mut one = [0u64];
                    return dev.read(self.count.raw(), 0, bytemuck::cast_slice_mut(&mut one));
                }
            }
            (Algo::Stencil(variant), Reference::Stencil(w, _)) => {
                T::moving_average(dev, variant, *w, src, &mut self.out)?
            }
            (Algo::Stencil(_), _) => {
                return Err(Error::invalid(
                    "elem",
                    T::KIND,
                    "f32 or f64 for the stencil",
                ))
            }
            (Algo::Shfl(op), _) => shfl::shfl(dev, op, 32, src, &mut self.out)?,
            (Algo::Vote, _) => vote::vote(dev, pred, src, &mut self.words, &mut self.ranks)?,
            (Algo::Toolbox(_), _) => {
                let tool = self.tool.as_mut().ok_or_else(|| {
                    Error::invalid("tool", "none", "the state made with the case")
                })?;
                tool.call(dev, src)?;
                if finish {
                    return tool.fetch(dev);
                }
            }
            (Algo::SortKeys | Algo::SortPairs, _) => {
                let sorter = self.sorter.as_mut().ok_or_else(|| {
                    Error::invalid("sorter", "none", "a sorter made with the case")
                })?;
                let (order, bits) = (SortOrder::Ascending, all_bits::<T>());
                if self.algo == Algo::SortKeys {
                    sorter.sort_keys(dev, src, &mut self.out, order, bits)?
                } else {
                    sorter.sort_pairs(
                        dev,
                        src,
                        &mut self.out,
                        &self.values_in,
                        &mut self.values_out,
                        order,
                        bits,
                    )?
                }
            }
        }
        if finish {
            dev.synchronize()?;
        }
        Ok(())
    }

    /// Brings the result of the calls so far to the host, as `call(true)` does after its call:
    /// the value of a reduction, the count of a compaction; the rest are waited for.
    fn fetch(&mut self) -> Result<()> {
        match self.algo {
            Algo::Reduce(_) => {
                let mut one = [T::zeroed()];
                self.dev
                    .read(self.out.raw(), 0, bytemuck::cast_slice_mut(&mut one))
            }
            Algo::Compact(_) => {
                let mut one = [0u64];
                self.dev
                    .read(self.count.raw(), 0, bytemuck::cast_slice_mut(&mut one))
            }
            Algo::Toolbox(_) => match &self.tool {
                Some(t) => t.fetch(self.dev),
                None => self.dev.synchronize(),
            },
            _ => self.dev.synchronize(),
        }
    }

    /// Compares the outputs of the last call with the reference; `Ok` holds the number of
    /// kept elements for a compaction.
    fn check(&self) -> Result<std::result::Result<usize, String>> {
        self.check_by(first_mismatch, true)
    }

    /// [`Case::check`], comparing elements with `compare`.
    /// `bitwise`: `compare` compares bits ([`first_mismatch`]), so a long result may first be
    /// compared by digest ([`DIGEST_MIN`]).
    fn check_by(
        &self,
        compare: Compare<T>,
        bitwise: bool,
    ) -> Result<std::result::Result<usize, String>> {
        let compare = |want: &[T], got: &[T]| match check::par_compare(compare, want, got) {
            None => Ok(()),
            Some(m) => Err(m.to_string()),
        };
        let dev = self.dev;
        let count = || -> Result<u64> { Ok(self.count.to_vec(dev)?[0]) };
        // The first `want.len()` elements of `out` against `want`: by digest on the device
        // where the result is long and the comparison bitwise (equal digests: equal bits, but
        // for a chance of about 2^-64), else (and to show a difference) by download.
        let outputs = |want: &[T]| -> Result<std::result::Result<(), String>> {
            if bitwise && want.len() >= DIGEST_MIN {
                let view = DeviceVec::<T>::from_raw(self.out.raw().clone(), want.len())?;
                let mut sums = DeviceVec::<u32>::alloc(dev, 2)?;
                if xwarp::roofline::digest(dev, &view, &mut sums).is_ok()
                    && sums.to_vec(dev)? == cpu::roofline::digest(want)
                {
                    return Ok(Ok(()));
                }
            }
            let got = self.out.to_vec(dev)?;
            Ok(match compare(want, &got[..want.len().min(got.len())]) {
                Err(m) => Err(m),
                Ok(()) if bitwise && want.len() >= DIGEST_MIN => Err(
                    "the device's digest of the result differs from the CPU's, but every \
                         downloaded element matches"
                        .into(),
                ),
                Ok(()) => Ok(()),
            })
        };
        Ok(match self.reference {
            Reference::Elems(want) if matches!(self.algo, Algo::Compact(_)) => {
                let got = count()?;
                if got != want.len() as u64 {
                    Err(format!("count {got}, expected {}", want.len()))
                } else {
                    outputs(want)?.map(|()| want.len())
                }
            }
            Reference::Multiset(want, want_digest) => {
                let got = count()?;
                if got != *want as u64 {
                    Err(format!("count {got}, expected {want}"))
                } else if digest(&self.out.to_vec(dev)?[..*want]) != *want_digest {
                    Err("the kept elements differ from the reference's as a multiset".into())
                } else {
                    Ok(*want)
                }
            }
            Reference::Elems(want) | Reference::Stencil(_, want) => {
                if want.len() != self.out.len() {
                    Err(format!(
                        "{} elements, expected {}",
                        self.out.len(),
                        want.len()
                    ))
                } else {
                    outputs(want)?.map(|()| 0)
                }
            }
            Reference::Value(want) => compare(&[*want], &self.out.to_vec(dev)?).map(|()| 0),
            Reference::Sort(sort) => {
                let keys = self.out.to_vec(dev)?;
                let order = SortOrder::Ascending;
                if self.algo == Algo::SortPairs {
                    let values = self.values_out.to_vec(dev)?;
                    check::check_sorted_pairs(&sort.input, &keys, &values, order)
                } else {
                    check::check_sorted_keys(&sort.fingerprint, sort.key, &keys, order)
                }
                .map(|()| 0)
            }
            Reference::Tool(want) => match &self.tool {
                Some(t) => t.check(dev, want)?,
                None => Err("no toolbox state".to_string()),
            },
            Reference::Words(want) => {
                let mut got = self.words.to_vec(dev)?;
                if self.algo == Algo::Vote {
                    got.extend(self.ranks.to_vec(dev)?);
                }
                match check::par_compare(first_mismatch, want, &got) {
                    None => Ok(0),
                    Some(m) => Err(m.to_string()),
                }
            }
        })
    }
}

/// Runs `algo` once on the hard `input` and checks it against `reference`: sums (reduce,
/// scan, stencil) that end in NaN match any NaN (the documented rule), everything else bit
/// for bit, into outputs poisoned with a value that is not a NaN. `Ok(Err(_))` says what
/// differed.
fn hard_check<T: BenchElem>(
    dev: &dyn Device,
    algo: Algo,
    input: &[T],
    reference: &Reference<T>,
) -> Result<std::result::Result<(), String>> {
    let src = DeviceVec::from_slice(dev, input)?;
    let mut c = Case::new(dev, algo, &src, reference)?;
    c.out.fill(dev, reference.poison())?;
    c.call(true)?;
    let compare: Compare<T> = if HardInputs::<T>::sums(algo) {
        first_mismatch_nan_as_class
    } else {
        first_mismatch
    };
    Ok(c.check_by(compare, !HardInputs::<T>::sums(algo))?
        .map(|_| ())
        .map_err(|m| format!("hard values, n={}: {m}", src.len())))
}

/// Runs one case on one device: checked once against `reference` (and first, where given, on
/// a hard input against its reference: [`hard_check`]), then timed.
/// `Ok(Err(_))`: the result was wrong (and nothing was timed).
fn case<T: BenchElem>(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    algo: Algo,
    src: &DeviceVec<T>,
    reference: &Reference<T>,
    hard: Option<(&[T], &Reference<T>)>,
) -> Result<std::result::Result<Timed, String>> {
    let mut phases = Vec::new();
    let t = Instant::now();
    if let Some((hard_input, hard_reference)) = hard {
        if let Err(m) = hard_check(dev, algo, hard_input, hard_reference)? {
            return Ok(Err(m));
        }
    }
    phases.push(("checks: hard values", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let mut c = Case::new(dev, algo, src, reference)?;
    phases.push(("checks: buffers", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    c.call(true)?;
    phases.push(("checks: first call", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let kept = match c.check()? {
        Ok(kept) => kept,
        Err(m) => return Ok(Err(m)),
    };
    phases.push(("checks: compare", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let (gpu, host) = measure(dev, scrub, cfg, &mut |finish| c.call(finish))?;
    phases.push(("timing", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let forms = if src.len() <= cfg.forms_max
        && matches!(algo, Algo::Reduce(_) | Algo::Scan(_) | Algo::Compact(_))
    {
        match measure_forms(dev, scrub, cfg, &mut c, reference)? {
            Ok(f) => Some(f),
            Err(m) => return Ok(Err(m)),
        }
    } else {
        None
    };
    phases.push(("forms", t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let launches = if cfg.launches {
        measure_launches(dev, scrub, cfg, &mut |finish| c.call(finish))?
    } else {
        None
    };
    phases.push(("launches", t.elapsed().as_secs_f64()));
    Ok(Ok(Timed {
        gpu,
        host,
        bytes: algo.bytes(src.len(), T::KIND.size(), kept),
        forms,
        launches,
        phases,
    }))
}

/// Repetitions of a launch breakdown ([`measure_launches`]): at most this many of
/// [`Config::reps`].
const LAUNCH_REPS: usize = 7;

/// Each command's GPU time within a call ([`Device::time_launches`]), the median over
/// [`LAUNCH_REPS`] repetitions after a scrub each; `None` for a call of one command, or where
/// the device cannot time commands.
fn measure_launches(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    call: &mut dyn FnMut(bool) -> Result<()>,
) -> Result<Option<Vec<LaunchRow>>> {
    let mut samples: Vec<Vec<xwarp::device::CommandTime>> = Vec::new();
    for _ in 0..cfg.reps.min(LAUNCH_REPS) {
        if let Some(s) = scrub {
            s.run(dev)?;
        }
        let times = dev.time_launches(&mut || call(false))?;
        if times.commands.len() < 2 {
            return Ok(None);
        }
        if samples
            .first()
            .is_some_and(|f| f.len() != times.commands.len())
        {
            return Err(Error::invalid(
                "launches",
                format!("{} commands", times.commands.len()),
                format!("as many commands in every call ({})", samples[0].len()),
            ));
        }
        samples.push(times.commands);
    }
    Ok(samples.first().map(|first| {
        first
            .iter()
            .enumerate()
            .map(|(k, c)| LaunchRow {
                name: c.name.clone(),
                gpu: Stats::of(
                    &samples
                        .iter()
                        .map(|s| s[k].gpu.as_secs_f64())
                        .collect::<Vec<_>>(),
                ),
            })
            .collect()
    }))
}

/// The queued and replayed forms of a checked case ([`Forms`]); `Ok(Err(_))` when the
/// replayed result differs from the reference.
fn measure_forms<T: BenchElem>(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    c: &mut Case<'_, T>,
    reference: &Reference<T>,
) -> Result<std::result::Result<Forms, String>> {
    let per_call = |t: Instant| t.elapsed().as_secs_f64() / FORM_CALLS as f64;
    let mut queued = Vec::with_capacity(cfg.reps);
    for _ in 0..cfg.reps {
        if let Some(s) = scrub {
            s.run(dev)?;
        }
        dev.synchronize()?;
        let t = Instant::now();
        for _ in 0..FORM_CALLS {
            c.call(false)?;
        }
        let ticket = dev.submit()?;
        dev.wait(ticket)?;
        c.fetch()?;
        queued.push(per_call(t));
    }
    let recording = dev.record(&mut || {
        for _ in 0..FORM_CALLS {
            c.call(false)?;
        }
        Ok(())
    })?;
    // The replay computes: its outputs poisoned first, its result checked.
    c.out.fill(dev, reference.poison())?;
    c.count.fill(dev, u64::MAX)?;
    let ticket = dev.replay(&recording)?;
    dev.wait(ticket)?;
    if let Err(m) = c.check()? {
        return Ok(Err(format!("replayed: {m}")));
    }
    let mut replay = Vec::with_capacity(cfg.reps);
    for _ in 0..cfg.reps {
        if let Some(s) = scrub {
            s.run(dev)?;
        }
        dev.synchronize()?;
        let t = Instant::now();
        let ticket = dev.replay(&recording)?;
        dev.wait(ticket)?;
        c.fetch()?;
        replay.push(per_call(t));
    }
    Ok(Ok(Forms {
        queued: Stats::of(&queued),
        replay: Stats::of(&replay),
    }))
}

/// One GPU-timed call of a prepared case ([`with_timer`]).
pub type Timer<'a> = dyn FnMut() -> Result<std::time::Duration> + 'a;

/// Prepares one case of `algo` on `dev` with `n` random elements of `elem` from `seed`,
/// checks it once against the CPU reference, then hands `f` a timer: each call of the timer
/// runs the algorithm once (after a cache scrub of `scrub_bytes`, outside the timed span) and
/// returns its GPU time. For harnesses such as criterion's `iter_custom`.
pub fn with_timer(
    dev: &dyn Device,
    algo: Algo,
    elem: ElemKind,
    n: usize,
    seed: u64,
    scrub_bytes: u64,
    f: &mut dyn FnMut(&mut Timer<'_>),
) -> Result<()> {
    if !algo.supports(elem) {
        return Err(Error::invalid(
            "elem",
            elem,
            format!("a type {algo} supports"),
        ));
    }
    if n == 0 {
        return Err(Error::EmptyInput { name: "n" });
    }
    with_bench_elem!(elem, timer_of(dev, algo, n, seed, scrub_bytes, f))
}

fn timer_of<T: BenchElem>(
    dev: &dyn Device,
    algo: Algo,
    n: usize,
    seed: u64,
    scrub_bytes: u64,
    f: &mut dyn FnMut(&mut Timer<'_>),
) -> Result<()> {
    let input: Vec<T> = random_input(seed, n);
    let reference = Reference::of(algo, &input, seed);
    let src = DeviceVec::from_slice(dev, &input)?;
    let scrub = Scrub::new(dev, scrub_bytes)?;
    let wrong = |detail| Error::WrongResult {
        case: format!("{algo} {} n={n} on {}", T::KIND, dev.info().name),
        detail,
    };
    if let Some(hard) = HardInputs::<T>::new(&[(String::new(), dev)], seed, n) {
        let hard_reference = hard.reference(algo, seed);
        if let Err(detail) = hard_check(dev, algo, hard.input(algo), &hard_reference)? {
            return Err(wrong(detail));
        }
    }
    let mut c = Case::new(dev, algo, &src, &reference)?;
    c.call(true)?;
    if let Err(detail) = c.check()? {
        return Err(wrong(detail));
    }
    f(&mut || {
        if let Some(s) = &scrub {
            s.run(dev)?;
        }
        dev.time(&mut || c.call(false))
    });
    Ok(())
}

/// The ladder table: every rung's block sums of `ladder_n` random `i32` on every backend, at
/// 512 threads per block where every rung allows it (else the largest common block).
fn ladder_table(ctx: &mut Ctx<'_>) {
    let n = ctx.cfg.ladder_n;
    let input: Vec<i32> = random_input(ctx.cfg.seed ^ 0x001a_dde4, n);
    for (i, (label, dev)) in ctx.devices.iter().enumerate() {
        if ctx.report.ladder.iter().any(|r| r.backend == *label) {
            // In the report already (--resume).
            ctx.p.done += LadderKernel::ALL.len();
            continue;
        }
        let common: Vec<u32> = [512u32, 1024, 256, 128, 64]
            .into_iter()
            .filter(|&b| {
                LadderKernel::ALL
                    .iter()
                    .all(|&k| ladder::blocks::<i32>(dev.info(), k).contains(&b))
            })
            .collect();
        let Some(&block) = common.first() else {
            ctx.report
                .skipped
                .push(format!("{label} ladder: no block size every rung accepts"));
            continue;
        };
        let src = match DeviceVec::from_slice(*dev, &input) {
            Ok(s) => s,
            Err(e) => {
                ctx.report.skipped.push(format!("{label} ladder: {e}"));
                continue;
            }
        };
        let mut rows: Vec<LadderRow> = Vec::new();
        for kernel in LadderKernel::ALL {
            let what = format!("{label} ladder {} n={n}", kernel.book_name());
            ctx.step(what.clone());
            match ladder_rung(
                *dev,
                ctx.scrubs[i].as_ref(),
                ctx.cfg,
                kernel,
                block,
                &src,
                &input,
            ) {
                Ok(Ok(gpu)) => rows.push(LadderRow {
                    backend: label.clone(),
                    kernel: kernel.book_name().into(),
                    block,
                    n,
                    gpu,
                    speedup: 0.0,
                    gbs: (n * 4 + kernel.partials(block, n) * 4) as f64 / gpu.median / 1e9,
                }),
                Ok(Err(m)) => ctx.report.failures.push(format!("{what}: {m}")),
                Err(e) => ctx.report.skipped.push(format!("{what}: {e}")),
            }
        }
        let base = rows
            .iter()
            .find(|r| r.kernel == LadderKernel::Neighbored.book_name())
            .map(|r| r.gpu.median);
        for r in &mut rows {
            r.speedup = base.map_or(f64::NAN, |b| b / r.gpu.median);
        }
        ctx.report.ladder.extend(rows);
    }
}

fn ladder_rung(
    dev: &dyn Device,
    scrub: Option<&Scrub>,
    cfg: &Config,
    kernel: LadderKernel,
    block: u32,
    src: &DeviceVec<i32>,
    input: &[i32],
) -> Result<std::result::Result<Stats, String>> {
    let mut out = DeviceVec::<i32>::alloc(dev, kernel.partials(block, src.len()))?;
    out.fill(dev, poison())?;
    ladder::block_sums(dev, kernel, block, src, &mut out)?;
    if let Err(m) = compare(
        &cpu::ladder::block_sums(kernel, block, input),
        &out.to_vec(dev)?,
    ) {
        return Ok(Err(m));
    }
    let gpu = measure_gpu(dev, scrub, cfg, &mut |finish| {
        ladder::block_sums(dev, kernel, block, src, &mut out)?;
        if finish {
            dev.synchronize()?;
        }
        Ok(())
    })?;
    Ok(Ok(gpu))
}

/// Fills each record's roofline fraction and CUB ratio from the other records of the run.
fn fill_ratios(report: &mut Report) {
    let find = |backend: &str, algo: &str, elem: &str, n: usize| {
        report
            .records
            .iter()
            .find(|r| r.backend == backend && r.algo == algo && r.elem == elem && r.n == n)
            .map(|r| (r.gbs, r.gpu.median))
    };
    let ratios: Vec<(Option<f64>, Option<f64>)> = report
        .records
        .iter()
        .map(|r| {
            let Some(algo) = Algo::ALL.into_iter().find(|a| a.name() == r.algo) else {
                return (None, None);
            };
            let roof = find(&r.backend, &algo.roof().name(), &r.elem, r.n).map(|(g, _)| r.gbs / g);
            let cub = algo
                .cub_name()
                .and_then(|c| find("cub", c, &r.elem, r.n))
                .map(|(_, t)| t / r.gpu.median);
            (roof, cub)
        })
        .collect();
    for (r, (roof, cub)) in report.records.iter_mut().zip(ratios) {
        if r.backend != "cub" {
            r.roof_fraction = roof;
            r.vs_cub = cub;
        }
    }
}

impl FromStr for Algo {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match Algo::parse_list(s)?.as_slice() {
            [one] => Ok(*one),
            _ => Err(Error::invalid("algo", s, "one algorithm's name")),
        }
    }
}

/// Adds CUB's rows to `report` (each with the bytes of our matching case, so GB/s compare
/// like with like) and fills every ratio; records why CUB is missing otherwise.
pub fn add_cub(report: &mut Report, cub: std::result::Result<cub::CubRun, cub::Unavailable>) {
    match cub {
        Ok(run) => {
            report.cub = CubInfo {
                available: true,
                reason: None,
                device: Some(run.device),
                version: Some(run.cub_version),
                cuda: Some(run.cuda_version),
            };
            for c in &run.cases {
                if !c.check_ok {
                    report.failures.push(format!(
                        "cub {} {} n={}: CUB's result differed from the host's",
                        c.algo.name(),
                        c.elem,
                        c.n
                    ));
                    continue;
                }
                let bytes = report
                    .records
                    .iter()
                    .find(|r| {
                        r.elem == c.elem.name()
                            && r.n == c.n
                            && Algo::ALL
                                .iter()
                                .any(|a| a.name() == r.algo && a.cub_name() == Some(c.algo.name()))
                    })
                    .map(|r| r.bytes);
                let Some(bytes) = bytes else { continue };
                report.records.push(Record {
                    backend: "cub".into(),
                    algo: c.algo.name().into(),
                    elem: c.elem.name().into(),
                    n: c.n,
                    bytes,
                    gpu: Stats {
                        median: c.median_s,
                        min: c.min_s,
                        max: c.max_s,
                    },
                    host: Stats {
                        median: c.host_median_s,
                        min: c.host_median_s,
                        max: c.host_median_s,
                    },
                    gbs: bytes as f64 / c.median_s / 1e9,
                    roof_fraction: None,
                    vs_cub: None,
                    keys_per_s: matches!(c.algo, cub::CubAlgo::SortKeys | cub::CubAlgo::SortPairs)
                        .then(|| c.n as f64 / c.median_s),
                    forms: run
                        .forms
                        .iter()
                        .find(|f| f.algo == c.algo && f.elem == c.elem && f.n == c.n)
                        .map(|f| {
                            let one = |s: f64| Stats {
                                median: s,
                                min: s,
                                max: s,
                            };
                            Forms {
                                queued: one(f.queued_s),
                                replay: one(f.graph_s),
                            }
                        }),
                    launches: run
                        .launches
                        .iter()
                        .find(|l| l.algo == c.algo && l.elem == c.elem && l.n == c.n)
                        .map(|l| {
                            l.commands
                                .iter()
                                .map(|(name, s)| LaunchRow {
                                    name: name.clone(),
                                    gpu: Stats {
                                        median: *s,
                                        min: *s,
                                        max: *s,
                                    },
                                })
                                .collect()
                        }),
                });
            }
            for f in run.forms.iter().filter(|f| !f.check_ok) {
                report.failures.push(format!(
                    "cub {} {} n={}: the CUDA Graph's result differed from the host's",
                    f.algo.name(),
                    f.elem,
                    f.n
                ));
            }
            report
                .skipped
                .extend(run.skipped.into_iter().map(|s| format!("cub {s}")));
        }
        Err(e) => {
            report.cub = CubInfo {
                available: false,
                reason: Some(e.to_string()),
                ..CubInfo::default()
            }
        }
    }
    fill_ratios(report);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long result is checked by its digest on the device first: a right one passes, and
    /// one wrong element anywhere (here: the reference differs from what the copy writes)
    /// fails, naming the element after the download.
    #[test]
    fn long_results_are_checked_by_digest_and_a_wrong_element_is_named() {
        let Ok(dev) = xwarp::backend::open_default() else {
            return;
        };
        let dev = &*dev;
        let n = DIGEST_MIN * 2 + 3;
        let input: Vec<u32> = Rng::new(9).vec(n);
        let src = DeviceVec::from_slice(dev, &input).unwrap();
        let right = Reference::Elems(input.clone());
        let mut c = Case::new(dev, Algo::Copy, &src, &right).unwrap();
        c.call(true).unwrap();
        assert_eq!(c.check().unwrap(), Ok(0));
        for at in [0, n / 2, n - 1] {
            let mut want = input.clone();
            want[at] ^= 0x100;
            let wrong = Reference::Elems(want);
            let mut c = Case::new(dev, Algo::Copy, &src, &wrong).unwrap();
            c.call(true).unwrap();
            let e = c.check().unwrap().unwrap_err();
            assert!(e.contains(&format!("index {at}")), "{e}");
        }
    }

    #[test]
    fn the_sort_family_names_its_bytes_and_cub() {
        assert_eq!(
            Algo::parse_list("sort").unwrap(),
            vec![Algo::SortKeys, Algo::SortPairs]
        );
        assert_eq!("sort_pairs".parse::<Algo>().unwrap(), Algo::SortPairs);
        // Keys read and written once; pairs with their values too, u32 for 4-byte keys and
        // u64 for 8-byte keys.
        let n = 1u64 << 20;
        assert_eq!(Algo::SortKeys.bytes(1 << 20, 4, 0), 2 * n * 4);
        assert_eq!(Algo::SortKeys.bytes(1 << 20, 8, 0), 2 * n * 8);
        assert_eq!(Algo::SortPairs.bytes(1 << 20, 4, 0), 2 * n * (4 + 4));
        assert_eq!(Algo::SortPairs.bytes(1 << 20, 8, 0), 2 * n * (8 + 8));
        fn value_size<T: BenchElem>() -> usize {
            std::mem::size_of::<T::PairValue>()
        }
        assert_eq!(
            [
                value_size::<i32>(),
                value_size::<u32>(),
                value_size::<f32>(),
                value_size::<i64>(),
                value_size::<u64>(),
                value_size::<f64>()
            ],
            [4, 4, 4, 8, 8, 8]
        );
        assert!(Algo::SortKeys.supports(ElemKind::U64) && Algo::SortPairs.supports(ElemKind::F64));
        // Every CUB counterpart is an entry point of the CUB program.
        for a in Algo::ALL {
            if let Some(name) = a.cub_name() {
                assert!(cub::CubAlgo::from_name(name).is_some(), "{a}");
            }
        }
    }
}
