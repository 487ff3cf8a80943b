//! The CUB baseline: NVIDIA CUB's `DeviceReduce`, `DeviceScan`, `DeviceSelect::If` and
//! `DeviceRadixSort`, timed on the same inputs as xwarp's own algorithms, so that the benchmark
//! can print ratios.
//!
//! The timing program, `benches/cub/cub_bench.cu`, is embedded in the library ([`SOURCE`]): the
//! CLI binary is carried to a GPU machine without the repository. [`run`] finds nvcc, builds
//! the program once into a cache directory under [`std::env::temp_dir`] keyed by a hash of the
//! source and of nvcc's path, runs it and parses its output ([`parse_output`]). Where nvcc, a
//! CUDA device or a working build is missing, the answer is [`Unavailable`] with the reason;
//! nothing here panics on what the program prints.
//!
//! The program's inputs are those of [`xwarp::Rng`]: for each element type and size a fresh
//! `Rng::new(seed)` draws `n` values (`Rng::vec`). The select predicate is `v > threshold` with
//! the threshold 0 for signed integers and floats, 2^31 for `u32` and 2^63 for `u64`: the same
//! as [`xwarp::vote::Predicate::Greater`] with that threshold. The radix sorts sort those values
//! ascending over every bit as keys; `SortPairs` moves with them values naming their input
//! places (the values of xwarp's pair sort in the benchmark): for 4-byte keys the `u32` values
//! `0, 1, ..., n - 1`, for 8-byte keys (`i64`, `u64`, `f64`) `u64` values
//! `(i << 32) | (i ^ 0x9e37_79b9)`, both words the index, checked word by word. The toolbox's counterparts
//! (`DevicePartition::If`, `DeviceSelect::Unique`, `DeviceRunLengthEncode::Encode`,
//! `DeviceReduce::ReduceByKey`, `DeviceSegmentedReduce::Sum`, `DeviceHistogram::HistogramEven`)
//! compute what [`super::toolbox`] describes; CUB 3.0.1 has no `DeviceTopK`.
//!
//! ```no_run
//! use xwarp_lab::bench::cub::{self, CubConfig};
//!
//! match cub::run(&CubConfig::default()) {
//!     Ok(run) => {
//!         for case in &run.cases {
//!             println!("{} {} {}: {:.3} ms", case.algo.name(), case.elem, case.n, case.median_s * 1e3);
//!         }
//!     }
//!     Err(why) => eprintln!("{why}"),
//! }
//! ```

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use xwarp::element::ElemKind;

/// The source of the timing program (`benches/cub/cub_bench.cu`).
pub const SOURCE: &str = include_str!("../../benches/cub/cub_bench.cu");

/// The options nvcc builds the program with; `-arch=native` is dropped if nvcc refuses it.
const NVCC_FLAGS: [&str; 3] = ["-O3", "-std=c++17", "-lpthread"];

/// What nvcc warns when `-arch=native` finds no GPU and it builds for its default architecture.
const NVCC_NO_GPU: &str = "Cannot find valid GPU";

/// How many lines of a failing tool's stderr a reason quotes.
const QUOTED_LINES: usize = 12;

/// What to time. An empty list leaves the program's default in place (all sizes
/// 2^10, 2^16, 2^20, 2^24, 2^28; all types; all algorithms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CubConfig {
    /// Element counts.
    pub sizes: Vec<usize>,
    /// Element types.
    pub types: Vec<ElemKind>,
    /// Algorithms.
    pub algos: Vec<CubAlgo>,
    /// Timed repetitions per case (at least 1); the GPU time and the host wall each take this
    /// many.
    pub reps: usize,
    /// Size of the buffer written before each timed repetition to evict the L2 cache; 0: none.
    pub scrub_bytes: u64,
    /// Seed of the input generator ([`xwarp::Rng::new`]).
    pub seed: u64,
    /// The largest size whose reduce, scan and select cases also time the queued and graph
    /// forms ([`CubForms`]); 0: none.
    pub forms_max: usize,
    /// Whether each case also times each of its kernels ([`CubLaunches`]).
    pub launches: bool,
}

impl Default for CubConfig {
    /// The program's defaults: five sizes from 2^10 to 2^28, every type and algorithm, 21
    /// repetitions, a 256 MiB scrub, seed 12345.
    fn default() -> Self {
        CubConfig {
            sizes: vec![1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 28],
            types: ElemKind::ALL.to_vec(),
            algos: CubAlgo::ALL.to_vec(),
            reps: 21,
            scrub_bytes: 1 << 28,
            seed: 12345,
            forms_max: FORMS_MAX,
            launches: false,
        }
    }
}

/// One CUB entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CubAlgo {
    /// `cub::DeviceReduce::Sum` (integers wrap).
    ReduceSum,
    /// `cub::DeviceReduce::Min`.
    ReduceMin,
    /// `cub::DeviceReduce::Max`.
    ReduceMax,
    /// `cub::DeviceScan::InclusiveSum`, not in place.
    ScanInclusive,
    /// `cub::DeviceScan::ExclusiveSum`, not in place.
    ScanExclusive,
    /// `cub::DeviceSelect::If` with `v > threshold` (see the module documentation).
    SelectIf,
    /// `cub::DeviceRadixSort::SortKeys`, ascending, every bit, not in place.
    SortKeys,
    /// `cub::DeviceRadixSort::SortPairs`, ascending, every bit, not in place, with values as wide
    /// as the keys (`u32` for 4-byte keys, `u64` for 8-byte ones; see the module documentation).
    SortPairs,
    /// `cub::DevicePartition::If` with `v > threshold` (the others come in reverse order).
    PartitionIf,
    /// `cub::DeviceSelect::Unique`.
    Unique,
    /// `cub::DeviceRunLengthEncode::Encode`.
    RunLengthEncode,
    /// `cub::DeviceReduce::ReduceByKey`, sum, the input as keys and values.
    ReduceByKey,
    /// `cub::DeviceSegmentedReduce::Sum` over segments of 16 elements.
    SegmentedSum16,
    /// `cub::DeviceSegmentedReduce::Sum` over one segment of the whole input.
    SegmentedSum1,
    /// `cub::DeviceHistogram::HistogramEven`, 256 bins (the toolbox bench's range).
    HistogramEven256,
    /// `cub::DeviceHistogram::HistogramEven`, the same bins, every sample in one of them.
    HistogramEvenOneBin,
}

impl CubAlgo {
    /// Every algorithm, in the program's order.
    pub const ALL: [CubAlgo; 16] = [
        CubAlgo::ReduceSum,
        CubAlgo::ReduceMin,
        CubAlgo::ReduceMax,
        CubAlgo::ScanInclusive,
        CubAlgo::ScanExclusive,
        CubAlgo::SelectIf,
        CubAlgo::SortKeys,
        CubAlgo::SortPairs,
        CubAlgo::PartitionIf,
        CubAlgo::Unique,
        CubAlgo::RunLengthEncode,
        CubAlgo::ReduceByKey,
        CubAlgo::SegmentedSum16,
        CubAlgo::SegmentedSum1,
        CubAlgo::HistogramEven256,
        CubAlgo::HistogramEvenOneBin,
    ];

    /// The name on the program's command line and in its output (`"reduce_sum"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CubAlgo::ReduceSum => "reduce_sum",
            CubAlgo::ReduceMin => "reduce_min",
            CubAlgo::ReduceMax => "reduce_max",
            CubAlgo::ScanInclusive => "scan_inclusive",
            CubAlgo::ScanExclusive => "scan_exclusive",
            CubAlgo::SelectIf => "select_if",
            CubAlgo::SortKeys => "sort_keys",
            CubAlgo::SortPairs => "sort_pairs",
            CubAlgo::PartitionIf => "partition_if",
            CubAlgo::Unique => "unique",
            CubAlgo::RunLengthEncode => "run_length_encode",
            CubAlgo::ReduceByKey => "reduce_by_key",
            CubAlgo::SegmentedSum16 => "segmented_sum_16",
            CubAlgo::SegmentedSum1 => "segmented_sum_1",
            CubAlgo::HistogramEven256 => "histogram_even_256",
            CubAlgo::HistogramEvenOneBin => "histogram_even_one_bin",
        }
    }

    /// The algorithm of that [`name`](CubAlgo::name).
    pub fn from_name(name: &str) -> Option<CubAlgo> {
        CubAlgo::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for CubAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The times of one (algorithm, type, size).
#[derive(Clone, Debug, PartialEq)]
pub struct CubCase {
    /// The algorithm.
    pub algo: CubAlgo,
    /// The element type.
    pub elem: ElemKind,
    /// The element count.
    pub n: usize,
    /// Median GPU time of one call (CUDA events around the call, L2 scrubbed before), seconds.
    pub median_s: f64,
    /// Fastest GPU time, seconds.
    pub min_s: f64,
    /// Slowest GPU time, seconds.
    pub max_s: f64,
    /// Median host wall time of one call until its result is usable on the host (the reduced
    /// value or the selected count copied back, or the stream synchronised for a scan or a
    /// sort), seconds.
    pub host_median_s: f64,
    /// Whether CUB's result matched the program's host computation (exact for integers, min,
    /// max, selection and sorts; within a rounding tolerance for float sums and scans).
    pub check_ok: bool,
}

/// The largest size whose cases time the queued and replayed forms by default (in `xwarp
/// bench` too): the small problems, where the fixed cost of a call decides.
pub const FORMS_MAX: usize = 1 << 16;

/// The host wall per call of a sequence of 10 calls of one case, in CUB's two forms beside
/// the synchronous call of [`CubCase::host_median_s`]: queued back to back on the stream with
/// one wait at the end, and captured once into a CUDA Graph that each repetition launches.
#[derive(Clone, Debug, PartialEq)]
pub struct CubForms {
    /// The algorithm.
    pub algo: CubAlgo,
    /// The element type.
    pub elem: ElemKind,
    /// The element count.
    pub n: usize,
    /// Median host wall per call, queued, seconds.
    pub queued_s: f64,
    /// Median host wall per call, graph launched, seconds.
    pub graph_s: f64,
    /// Whether the graph's result matched the host's.
    pub check_ok: bool,
}

/// Everything one run of the program reported.
#[derive(Clone, Debug, PartialEq)]
pub struct CubRun {
    /// The CUDA device's name (`"NVIDIA H200"`).
    pub device: String,
    /// Its compute capability (`"9.0"`).
    pub compute_capability: String,
    /// CUB's version (`"3.0.1"`).
    pub cub_version: String,
    /// The CUDA runtime's version (`"13.0"`).
    pub cuda_version: String,
    /// The timed cases, in the program's order (type, then size, then algorithm).
    pub cases: Vec<CubCase>,
    /// Cases that did not fit in memory: `"<algo> <type> <n> <reason>"` each.
    pub skipped: Vec<String>,
    /// The queued and graph forms of the small cases.
    pub forms: Vec<CubForms>,
    /// Each case's kernels and memsets and their GPU times ([`CubConfig::launches`]).
    pub launches: Vec<CubLaunches>,
}

/// The commands of one CUB call and the median GPU time of each: the call captured into a
/// CUDA Graph with an event after every node (the kernels by their names without namespace
/// and template arguments, `memset`, `memcpy`), from the end of the node before.
#[derive(Clone, Debug, PartialEq)]
pub struct CubLaunches {
    /// The algorithm.
    pub algo: CubAlgo,
    /// The element type.
    pub elem: ElemKind,
    /// The element count.
    pub n: usize,
    /// `(name, seconds)` of each node in order.
    pub commands: Vec<(String, f64)>,
}

impl CubRun {
    /// The case for (algorithm, type, size), if it was timed.
    pub fn find(&self, algo: CubAlgo, elem: ElemKind, n: usize) -> Option<&CubCase> {
        self.cases
            .iter()
            .find(|c| c.algo == algo && c.elem == elem && c.n == n)
    }
}

/// Why there is no CUB baseline: no nvcc, a failed build, no CUDA device, a crash, or output
/// that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("CUB baseline unavailable: {reason}")]
pub struct Unavailable {
    /// What went wrong, for people.
    pub reason: String,
}

impl Unavailable {
    fn new(reason: impl Into<String>) -> Self {
        Unavailable {
            reason: reason.into(),
        }
    }
}

/// Output of the program that does not follow its format.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A line that is not a header, comment, `case` or `skip` line of the expected shape.
    #[error("line {line}: {reason}: {text:?}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header line (`# device`, `# cub` or `# cuda`) is missing.
    #[error("missing header line `# {0} ...`")]
    MissingHeader(&'static str),
}

/// Parses the program's stdout: the header lines `# device <name> cc <major>.<minor>`,
/// `# cub <version>` and `# cuda <version>`, then one line per case,
/// `case <algo> <type> <n> <median_ms> <min_ms> <max_ms> <host_median_us> <ok|FAIL>`, or
/// `skip <algo> <type> <n> <reason>`, or
/// `forms <algo> <type> <n> <queued_us> <graph_us> <ok|FAIL>`, or
/// `launches <algo> <type> <n> <name>:<us> ...`. Blank lines and other `#` lines are ignored.
pub fn parse_output(stdout: &str) -> Result<CubRun, ParseError> {
    let mut device: Option<(String, String)> = None;
    let mut cub_version: Option<String> = None;
    let mut cuda_version: Option<String> = None;
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    let mut forms = Vec::new();
    let mut launches = Vec::new();

    for (index, raw) in stdout.lines().enumerate() {
        let line = raw.trim();
        let fail = |reason: &str| ParseError::Line {
            line: index + 1,
            text: raw.to_string(),
            reason: reason.to_string(),
        };
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            let comment = comment.trim_start();
            let (key, rest) = comment.split_once(' ').unwrap_or((comment, ""));
            let rest = rest.trim();
            match key {
                "device" => {
                    let (name, cc) = rest
                        .rsplit_once(" cc ")
                        .ok_or_else(|| fail("expected `# device <name> cc <major>.<minor>`"))?;
                    let name = name.trim();
                    if name.is_empty() || !is_version(cc, 2) {
                        return Err(fail("expected `# device <name> cc <major>.<minor>`"));
                    }
                    set_once(&mut device, (name.to_string(), cc.to_string()), || {
                        fail("repeated header")
                    })?;
                }
                "cub" | "cuda" => {
                    if rest.is_empty() || rest.contains(char::is_whitespace) {
                        return Err(fail("expected one version after the key"));
                    }
                    let slot = if key == "cub" {
                        &mut cub_version
                    } else {
                        &mut cuda_version
                    };
                    set_once(slot, rest.to_string(), || fail("repeated header"))?;
                }
                _ => {} // a comment
            }
            continue;
        }

        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[0] {
            "case" => {
                if fields.len() != 9 {
                    return Err(fail("a case line has 9 fields"));
                }
                let (algo, elem, n) = parse_key(&fields[1..4]).map_err(|r| fail(&r))?;
                let ms = |text: &str, what: &str| -> Result<f64, ParseError> {
                    match text.parse::<f64>() {
                        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                        _ => Err(fail(&format!("{what} is not a non-negative number"))),
                    }
                };
                let median_ms = ms(fields[4], "median_ms")?;
                let min_ms = ms(fields[5], "min_ms")?;
                let max_ms = ms(fields[6], "max_ms")?;
                let host_median_us = ms(fields[7], "host_median_us")?;
                let check_ok = match fields[8] {
                    "ok" => true,
                    "FAIL" => false,
                    _ => return Err(fail("the check is `ok` or `FAIL`")),
                };
                cases.push(CubCase {
                    algo,
                    elem,
                    n,
                    median_s: median_ms * 1e-3,
                    min_s: min_ms * 1e-3,
                    max_s: max_ms * 1e-3,
                    host_median_s: host_median_us * 1e-6,
                    check_ok,
                });
            }
            "forms" => {
                if fields.len() != 7 {
                    return Err(fail("a forms line has 7 fields"));
                }
                let (algo, elem, n) = parse_key(&fields[1..4]).map_err(|r| fail(&r))?;
                let us = |text: &str, what: &str| -> Result<f64, ParseError> {
                    match text.parse::<f64>() {
                        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * 1e-6),
                        _ => Err(fail(&format!("{what} is not a non-negative number"))),
                    }
                };
                forms.push(CubForms {
                    algo,
                    elem,
                    n,
                    queued_s: us(fields[4], "queued_us")?,
                    graph_s: us(fields[5], "graph_us")?,
                    check_ok: match fields[6] {
                        "ok" => true,
                        "FAIL" => false,
                        _ => return Err(fail("the check is `ok` or `FAIL`")),
                    },
                });
            }
            "launches" => {
                if fields.len() < 5 {
                    return Err(fail(
                        "a launches line has an algorithm, a type, a size and commands",
                    ));
                }
                let (algo, elem, n) = parse_key(&fields[1..4]).map_err(|r| fail(&r))?;
                let commands = fields[4..]
                    .iter()
                    .map(|c| {
                        let (name, us) = c.rsplit_once(':')?;
                        let us = us
                            .parse::<f64>()
                            .ok()
                            .filter(|v| v.is_finite() && *v >= 0.0)?;
                        (!name.is_empty()).then(|| (name.to_string(), us * 1e-6))
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| fail("each command is `<name>:<microseconds>`"))?;
                launches.push(CubLaunches {
                    algo,
                    elem,
                    n,
                    commands,
                });
            }
            "skip" => {
                if fields.len() < 4 {
                    return Err(fail("a skip line has an algorithm, a type and a size"));
                }
                parse_key(&fields[1..4]).map_err(|r| fail(&r))?;
                skipped.push(fields[1..].join(" "));
            }
            _ => return Err(fail("unknown line")),
        }
    }

    let (device, compute_capability) = device.ok_or(ParseError::MissingHeader("device"))?;
    Ok(CubRun {
        device,
        compute_capability,
        cub_version: cub_version.ok_or(ParseError::MissingHeader("cub"))?,
        cuda_version: cuda_version.ok_or(ParseError::MissingHeader("cuda"))?,
        cases,
        skipped,
        forms,
        launches,
    })
}

/// Stores `value` in an empty slot, or fails with `repeated()`.
fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    repeated: impl FnOnce() -> ParseError,
) -> Result<(), ParseError> {
    if slot.is_some() {
        return Err(repeated());
    }
    *slot = Some(value);
    Ok(())
}

/// Whether `text` is `parts` dot-separated decimal numbers.
fn is_version(text: &str, parts: usize) -> bool {
    let pieces: Vec<&str> = text.split('.').collect();
    pieces.len() == parts
        && pieces
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses `<algo> <type> <n>`.
fn parse_key(fields: &[&str]) -> Result<(CubAlgo, ElemKind, usize), String> {
    let algo = CubAlgo::from_name(fields[0])
        .ok_or_else(|| format!("unknown algorithm {:?}", fields[0]))?;
    let elem = ElemKind::ALL
        .into_iter()
        .find(|k| k.name() == fields[1])
        .ok_or_else(|| format!("unknown type {:?}", fields[1]))?;
    let n = fields[2]
        .parse::<usize>()
        .map_err(|_| format!("size {:?} is not an element count", fields[2]))?;
    Ok((algo, elem, n))
}

/// The environment variable naming a program already built from [`SOURCE`] (for a machine
/// where building it would take longer than the run: `nvcc -O3 -std=c++17 -arch=sm_90 -o
/// cub_bench cub_bench.cu`); `run` then runs it instead of building one.
pub const PROGRAM_ENV: &str = "XWARP_CUB_PROGRAM";

/// Finds nvcc, builds the program (once per source and nvcc) and runs it with `cfg`; or runs
/// the program [`PROGRAM_ENV`] names.
///
/// nvcc is `$NVCC` if set, else `nvcc` on `PATH`, else `$CUDA_HOME/bin/nvcc`, else
/// `/usr/local/cuda/bin/nvcc`.
pub fn run(cfg: &CubConfig) -> Result<CubRun, Unavailable> {
    if let Some(program) = std::env::var_os(PROGRAM_ENV).filter(|p| !p.is_empty()) {
        let program = PathBuf::from(program);
        if !program.is_file() {
            return Err(Unavailable::new(format!(
                "{PROGRAM_ENV}={} is not a file",
                program.display()
            )));
        }
        return execute(&program, cfg);
    }
    let nvcc = locate_nvcc(
        std::env::var_os("NVCC"),
        std::env::var_os("PATH"),
        std::env::var_os("CUDA_HOME"),
    )?;
    run_with_nvcc(&nvcc, cfg)
}

/// [`run`] with the given nvcc.
pub fn run_with_nvcc(nvcc: &Path, cfg: &CubConfig) -> Result<CubRun, Unavailable> {
    if !nvcc.is_file() {
        return Err(Unavailable::new(format!(
            "nvcc not found at {}",
            nvcc.display()
        )));
    }
    let exe = build(nvcc)?;
    execute(&exe, cfg)
}

/// Where nvcc is, from the values of `NVCC`, `PATH` and `CUDA_HOME`.
fn locate_nvcc(
    nvcc_var: Option<OsString>,
    path_var: Option<OsString>,
    cuda_home: Option<OsString>,
) -> Result<PathBuf, Unavailable> {
    if let Some(nvcc) = nvcc_var.filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(nvcc)); // an explicit choice: run_with_nvcc says if it is missing
    }
    let name = format!("nvcc{}", std::env::consts::EXE_SUFFIX);
    let on_path = path_var
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&name));
    let in_cuda_home = cuda_home
        .filter(|v| !v.is_empty())
        .map(|home| Path::new(&home).join("bin").join(&name));
    let default = Path::new("/usr/local/cuda/bin").join(&name);
    on_path
        .chain(in_cuda_home)
        .chain(std::iter::once(default))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            Unavailable::new("nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin")
        })
}

/// 64-bit FNV-1a: a hash that is the same in every build, for the cache directory's name.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for part in parts {
        for &byte in *part {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash = (hash ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3); // separates the parts
    }
    hash
}

/// The cache directory for this source built by `nvcc`.
fn cache_dir(nvcc: &Path) -> PathBuf {
    let hash = fnv1a(&[
        SOURCE.as_bytes(),
        nvcc.as_os_str().to_string_lossy().as_bytes(),
    ]);
    std::env::temp_dir().join(format!("xwarp-cub-{hash:016x}"))
}

/// Builds the program into the cache unless it is there, and returns the executable's path.
///
/// A build for the GPU that nvcc sees (`-arch=native`) is kept as `cub_bench` and reused from
/// then on. Where nvcc cannot build for the GPU (an nvcc without `-arch=native`, or no GPU
/// visible, which nvcc answers with a warning and its default architecture), the build for
/// nvcc's default architecture is kept as `cub_bench-generic` and used only until a native
/// build succeeds: CUB picks its tuning per architecture, and the baseline should be CUB as
/// tuned for the GPU it runs on. Concurrent builds are safe: each writes its own temporary
/// files and renames them into place.
fn build(nvcc: &Path) -> Result<PathBuf, Unavailable> {
    let dir = cache_dir(nvcc);
    let exe_name = |stem: &str| dir.join(format!("{stem}{}", std::env::consts::EXE_SUFFIX));
    let native_exe = exe_name("cub_bench");
    if native_exe.is_file() {
        return Ok(native_exe);
    }
    let generic_exe = exe_name("cub_bench-generic");
    let io = |what: &str, path: &Path, e: std::io::Error| {
        Unavailable::new(format!("cannot {what} {}: {e}", path.display()))
    };
    std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
    let pid = std::process::id();
    let src = dir.join(format!("cub_bench.{pid}.cu"));
    std::fs::write(&src, SOURCE).map_err(|e| io("write", &src, e))?;
    let tmp_exe = exe_name(&format!("cub_bench.{pid}.tmp"));

    // Ok(stderr) or Err(reason).
    let compile = |native: bool| -> Result<String, String> {
        let mut cmd = Command::new(nvcc);
        cmd.args(NVCC_FLAGS);
        if native {
            cmd.arg("-arch=native");
        }
        cmd.arg("-o").arg(&tmp_exe).arg(&src);
        let out = cmd
            .output()
            .map_err(|e| format!("cannot start {}: {e}", nvcc.display()))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.success() {
            Ok(stderr)
        } else {
            Err(format!(
                "{} failed ({}): {}",
                nvcc.display(),
                out.status,
                first_lines(&stderr, QUOTED_LINES)
            ))
        }
    };
    let built = match compile(true) {
        Ok(stderr) if stderr.contains(NVCC_NO_GPU) => Ok(&generic_exe),
        Ok(_) => Ok(&native_exe),
        Err(_) if generic_exe.is_file() => {
            let _ = std::fs::remove_file(&src);
            return Ok(generic_exe);
        }
        Err(_) => compile(false).map(|_| &generic_exe),
    };
    let _ = std::fs::remove_file(&src);
    match built {
        Ok(exe) => {
            std::fs::rename(&tmp_exe, exe).map_err(|e| io("move the built program to", exe, e))?;
            Ok(exe.clone())
        }
        Err(reason) => {
            let _ = std::fs::remove_file(&tmp_exe);
            Err(Unavailable::new(format!(
                "building the CUB program: {reason}"
            )))
        }
    }
}

/// The program's command-line arguments for `cfg` (empty lists are left out).
fn program_args(cfg: &CubConfig) -> Vec<String> {
    let mut args = Vec::new();
    let mut list = |name: &str, values: Vec<String>| {
        if !values.is_empty() {
            args.push(name.to_string());
            args.push(values.join(","));
        }
    };
    list("--sizes", cfg.sizes.iter().map(|n| n.to_string()).collect());
    list(
        "--types",
        cfg.types.iter().map(|k| k.name().to_string()).collect(),
    );
    list(
        "--algos",
        cfg.algos.iter().map(|a| a.name().to_string()).collect(),
    );
    args.extend([
        "--reps".to_string(),
        cfg.reps.to_string(),
        "--scrub-bytes".to_string(),
        cfg.scrub_bytes.to_string(),
        "--seed".to_string(),
        cfg.seed.to_string(),
        "--forms-max".to_string(),
        cfg.forms_max.to_string(),
    ]);
    if cfg.launches {
        args.push("--launches".to_string());
    }
    args
}

/// Runs the built program and parses what it prints.
fn execute(exe: &Path, cfg: &CubConfig) -> Result<CubRun, Unavailable> {
    let out = Command::new(exe)
        .args(program_args(cfg))
        .output()
        .map_err(|e| Unavailable::new(format!("cannot start {}: {e}", exe.display())))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(Unavailable::new(failure_reason(
            exe.as_os_str(),
            &out.status.to_string(),
            &stderr,
        )));
    }
    parse_output(&stdout)
        .map_err(|e| Unavailable::new(format!("{} printed unexpected output: {e}", exe.display())))
}

/// A reason for a failed run of the program: its `error` lines if it printed any, else the
/// first lines of its stderr, and the exit status.
fn failure_reason(exe: &OsStr, status: &str, stderr: &str) -> String {
    let errors: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("error "))
        .collect();
    let detail = if errors.is_empty() {
        first_lines(stderr, QUOTED_LINES)
    } else {
        errors.join("; ")
    };
    let exe = Path::new(exe).display();
    if detail.is_empty() {
        format!("{exe} failed ({status})")
    } else {
        format!("{exe} failed ({status}): {detail}")
    }
}

/// The first `count` non-blank lines of `text`, joined with " | ".
fn first_lines(text: &str, count: usize) -> String {
    text.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(count)
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use xwarp::element::{Element, Rng};

    /// The program's host half, built without CUDA by the C++ compiler (`c++`, else `g++`):
    /// its checks catch a swapped, lost, duplicated and unstable element (its self-test, which
    /// the full program also runs before it times anything), and its generator draws
    /// [`Rng::vec`]'s values on every core. `None` (the test says so) where no C++ compiler is
    /// installed.
    fn host_half() -> Option<PathBuf> {
        let dir = std::env::temp_dir().join(format!("xwarp-cub-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("cub_bench.cu");
        std::fs::write(&src, SOURCE).unwrap();
        let exe = dir.join("cub_checks");
        for cxx in ["c++", "g++"] {
            let Ok(out) = Command::new(cxx)
                .args([
                    "-O2",
                    "-std=c++17",
                    "-pthread",
                    "-DCUB_BENCH_HOST_ONLY",
                    "-x",
                    "c++",
                ])
                .arg("-o")
                .arg(&exe)
                .arg(&src)
                .output()
            else {
                continue;
            };
            assert!(
                out.status.success(),
                "{cxx} failed to build the host half: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return Some(exe);
        }
        eprintln!("no C++ compiler (c++, g++): the CUB program's host half is not tested");
        None
    }

    #[test]
    fn the_programs_checks_catch_every_kind_of_wrong_sort_and_its_inputs_match() {
        let Some(exe) = host_half() else { return };
        let out = Command::new(&exe)
            .arg("--self-test-checks")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("# checks self-test ok"),
            "{stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A mutation the checks miss would make the self-test fail: prove the test can fail
        // by the program's own words for each kind (its source names all four).
        for kind in [
            "swapped pair",
            "lost element",
            "duplicated element",
            "unstable run",
        ] {
            assert!(
                SOURCE.contains(&format!("missed a {kind}"))
                    || SOURCE.contains(&format!("missed an {kind}")),
                "{kind}"
            );
        }
        // 300001 values of every type, drawn on every core, are Rng::vec's.
        let n = 300_001usize;
        let out = Command::new(&exe)
            .args(["--dump-inputs", &n.to_string(), "--seed", "987"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        fn want<T: Element>(n: usize) -> Vec<String> {
            let width = 2 * T::KIND.size();
            Rng::new(987)
                .vec::<T>(n)
                .into_iter()
                .enumerate()
                .map(|(i, v)| format!("input {} {i} {:0width$x}", T::KIND, v.to_bits64()))
                .collect()
        }
        let mut expected = Vec::new();
        expected.extend(want::<i32>(n));
        expected.extend(want::<u32>(n));
        expected.extend(want::<f32>(n));
        expected.extend(want::<i64>(n));
        expected.extend(want::<u64>(n));
        expected.extend(want::<f64>(n));
        let got: Vec<&str> = text.lines().filter(|l| l.starts_with("input ")).collect();
        assert_eq!(got.len(), expected.len());
        for (g, w) in got.iter().zip(&expected) {
            assert_eq!(g, w);
        }
        let _ = std::fs::remove_dir_all(exe.parent().unwrap());
    }

    const SAMPLE: &str = "\
# device NVIDIA H200 cc 9.0
# cub 3.0.1
# cuda 13.0
case reduce_sum i32 1024 0.004096 0.003072 0.010240 12.345 ok
case select_if f64 1048576 0.051200 0.050176 0.061440 80.500 FAIL
forms reduce_sum i32 1024 3.250 1.125 ok
launches sort_keys u32 1024 memset:1.5 DeviceRadixSortHistogramKernel:2.25 DeviceRadixSortOnesweepKernel:3

skip scan_inclusive u64 268435456 device out of memory in cudaMalloc(&ptr_, bytes)
";

    #[test]
    fn parses_sample_output() {
        let run = parse_output(SAMPLE).unwrap();
        assert_eq!(run.device, "NVIDIA H200");
        assert_eq!(run.compute_capability, "9.0");
        assert_eq!(run.cub_version, "3.0.1");
        assert_eq!(run.cuda_version, "13.0");
        assert_eq!(run.cases.len(), 2);
        let first = &run.cases[0];
        assert_eq!(
            (first.algo, first.elem, first.n),
            (CubAlgo::ReduceSum, ElemKind::I32, 1024)
        );
        assert!((first.median_s - 4.096e-6).abs() < 1e-15);
        assert!((first.min_s - 3.072e-6).abs() < 1e-15);
        assert!((first.max_s - 10.24e-6).abs() < 1e-15);
        assert!((first.host_median_s - 12.345e-6).abs() < 1e-15);
        assert!(first.check_ok);
        let second = run.find(CubAlgo::SelectIf, ElemKind::F64, 1 << 20).unwrap();
        assert!(!second.check_ok);
        assert!(run
            .find(CubAlgo::SelectIf, ElemKind::F64, 1 << 10)
            .is_none());
        assert_eq!(
            run.skipped,
            vec!["scan_inclusive u64 268435456 device out of memory in cudaMalloc(&ptr_, bytes)"]
        );
        assert_eq!(run.launches.len(), 1);
        let l = &run.launches[0];
        assert_eq!(
            (l.algo, l.elem, l.n),
            (CubAlgo::SortKeys, ElemKind::U32, 1024)
        );
        assert_eq!(l.commands.len(), 3);
        assert_eq!(l.commands[1].0, "DeviceRadixSortHistogramKernel");
        assert!((l.commands[1].1 - 2.25e-6).abs() < 1e-15);
        assert!(parse_output(
            "# device X cc 9.0\n# cub 3.0.1\n# cuda 13.0\nlaunches sort_keys u32 8 a:b\n"
        )
        .is_err());
        assert_eq!(run.forms.len(), 1);
        let f = &run.forms[0];
        assert_eq!(
            (f.algo, f.elem, f.n),
            (CubAlgo::ReduceSum, ElemKind::I32, 1024)
        );
        assert!((f.queued_s - 3.25e-6).abs() < 1e-15);
        assert!((f.graph_s - 1.125e-6).abs() < 1e-15);
        assert!(f.check_ok);
    }

    #[test]
    fn parses_sort_cases() {
        let text = "# device G cc 9.0\n# cub 3.0.1\n# cuda 13.0\n\
                    case sort_keys u32 1048576 0.120000 0.110000 0.130000 150.000 ok\n\
                    case sort_pairs f64 1048576 0.300000 0.290000 0.310000 320.000 ok\n\
                    skip sort_pairs u64 268435456 device out of memory in cudaMalloc\n";
        let run = parse_output(text).unwrap();
        let keys = run.find(CubAlgo::SortKeys, ElemKind::U32, 1 << 20).unwrap();
        assert!((keys.median_s - 0.12e-3).abs() < 1e-15);
        assert!(run
            .find(CubAlgo::SortPairs, ElemKind::F64, 1 << 20)
            .is_some());
        assert_eq!(run.skipped.len(), 1);
        assert_eq!(
            CubAlgo::from_name("sort_pairs").map(CubAlgo::name),
            Some("sort_pairs")
        );
    }

    #[test]
    fn parses_headers_alone_and_ignores_comments() {
        let run =
            parse_output("# device Some GPU cc 12.0\n# note\n# cub 2.8.2\n# cuda 12.9\n").unwrap();
        assert_eq!(run.device, "Some GPU");
        assert_eq!(run.compute_capability, "12.0");
        assert!(run.cases.is_empty() && run.skipped.is_empty());
    }

    #[test]
    fn malformed_lines_are_errors() {
        let header = "# device G cc 9.0\n# cub 3.0.1\n# cuda 13.0\n";
        let bad_lines = [
            "case reduce_sum i32 1024 0.1 0.1 0.1 1.0", // a field short
            "case reduce_sum i32 1024 0.1 0.1 0.1 1.0 ok extra", // a field more
            "case reduce_prod i32 1024 0.1 0.1 0.1 1.0 ok", // unknown algorithm
            "case reduce_sum i16 1024 0.1 0.1 0.1 1.0 ok", // unknown type
            "case reduce_sum i32 -5 0.1 0.1 0.1 1.0 ok", // bad size
            "case reduce_sum i32 1024 abc 0.1 0.1 1.0 ok", // bad time
            "case reduce_sum i32 1024 -0.1 0.1 0.1 1.0 ok", // negative time
            "case reduce_sum i32 1024 NaN 0.1 0.1 1.0 ok", // not finite
            "case reduce_sum i32 1024 0.1 0.1 0.1 1.0 maybe", // bad check
            "skip reduce_sum i32",                      // short skip
            "skip nothing i32 5 reason",                // unknown algorithm
            "Segmentation fault",                       // unknown line
            "# device no capability here",              // bad device header
            "# device G cc nine",                       // bad capability
            "# cub",                                    // no version
            "# cub 3.0.1",                              // repeated header
        ];
        for bad in bad_lines {
            let text = format!("{header}{bad}\n");
            match parse_output(&text) {
                Err(ParseError::Line { line, .. }) => assert_eq!(line, 4, "{bad}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn missing_headers_are_errors() {
        assert_eq!(parse_output(""), Err(ParseError::MissingHeader("device")));
        assert_eq!(
            parse_output("# device G cc 9.0\n# cuda 13.0\n"),
            Err(ParseError::MissingHeader("cub"))
        );
        assert_eq!(
            parse_output("# device G cc 9.0\n# cub 3.0.1\n"),
            Err(ParseError::MissingHeader("cuda"))
        );
    }

    #[test]
    fn absent_nvcc_is_unavailable() {
        let missing = Path::new("/nonexistent/xwarp-test/bin/nvcc");
        let err = run_with_nvcc(missing, &CubConfig::default()).unwrap_err();
        assert!(err.reason.contains("nvcc not found"), "{err}");
        assert!(
            err.reason.contains("/nonexistent/xwarp-test/bin/nvcc"),
            "{err}"
        );
        assert!(err.to_string().starts_with("CUB baseline unavailable: "));
    }

    #[test]
    fn nvcc_search_order() {
        let root = std::env::temp_dir().join(format!("xwarp-cub-test-{}", std::process::id()));
        let (path_dir, home) = (root.join("path"), root.join("home"));
        std::fs::create_dir_all(&path_dir).unwrap();
        std::fs::create_dir_all(home.join("bin")).unwrap();
        let name = format!("nvcc{}", std::env::consts::EXE_SUFFIX);
        std::fs::write(home.join("bin").join(&name), "").unwrap();
        let empty = root.join("empty");
        let os = |p: &Path| Some(p.as_os_str().to_os_string());

        // $NVCC wins, whether or not it exists.
        let chosen = locate_nvcc(Some("/x/nvcc".into()), os(&path_dir), os(&home)).unwrap();
        assert_eq!(chosen, PathBuf::from("/x/nvcc"));
        // Not on PATH: $CUDA_HOME/bin.
        let chosen = locate_nvcc(None, os(&path_dir), os(&home)).unwrap();
        assert_eq!(chosen, home.join("bin").join(&name));
        // On PATH: PATH first.
        std::fs::write(path_dir.join(&name), "").unwrap();
        let chosen = locate_nvcc(Some("".into()), os(&path_dir), os(&home)).unwrap();
        assert_eq!(chosen, path_dir.join(&name));
        // Nowhere (unless this machine has /usr/local/cuda).
        match locate_nvcc(None, os(&empty), os(&empty)) {
            Ok(found) => assert_eq!(found, Path::new("/usr/local/cuda/bin").join(&name)),
            Err(e) => assert_eq!(
                e.reason,
                "nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin"
            ),
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn program_arguments() {
        let cfg = CubConfig {
            sizes: vec![1024, 1 << 20],
            types: vec![ElemKind::F32, ElemKind::U64],
            algos: vec![CubAlgo::ScanExclusive, CubAlgo::SelectIf],
            reps: 7,
            scrub_bytes: 0,
            seed: 99,
            forms_max: 4096,
            launches: true,
        };
        assert_eq!(
            program_args(&cfg).join(" "),
            "--sizes 1024,1048576 --types f32,u64 --algos scan_exclusive,select_if \
             --reps 7 --scrub-bytes 0 --seed 99 --forms-max 4096 --launches"
        );
        let defaults = CubConfig {
            sizes: vec![],
            types: vec![],
            algos: vec![],
            ..CubConfig::default()
        };
        assert_eq!(
            program_args(&defaults).join(" "),
            "--reps 21 --scrub-bytes 268435456 --seed 12345 --forms-max 65536"
        );
    }

    #[test]
    fn failure_reasons_quote_the_program() {
        let reason = failure_reason(
            OsStr::new("/tmp/cub_bench"),
            "exit status: 1",
            "warning: x\nerror no CUDA device: cudaErrorNoDevice (no CUDA-capable device is detected)\n",
        );
        assert_eq!(
            reason,
            "/tmp/cub_bench failed (exit status: 1): no CUDA device: cudaErrorNoDevice \
             (no CUDA-capable device is detected)"
        );
        let reason = failure_reason(OsStr::new("p"), "signal: 11 (SIGSEGV)", "");
        assert_eq!(reason, "p failed (signal: 11 (SIGSEGV))");
    }

    #[test]
    fn program_knows_every_name() {
        for algo in CubAlgo::ALL {
            assert!(SOURCE.contains(&format!("\"{}\"", algo.name())), "{algo}");
            assert_eq!(CubAlgo::from_name(algo.name()), Some(algo));
        }
        for kind in ElemKind::ALL {
            assert!(SOURCE.contains(&format!("\"{}\"", kind.name())), "{kind}");
        }
        assert_eq!(CubAlgo::from_name("reduce_prod"), None);
    }

    /// FNV-1a over the little-endian bytes of the first 4096 values `Rng::new(12345)` draws.
    fn input_digest<T: Element>() -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for v in Rng::new(12345).vec::<T>(4096) {
            let bytes = v.to_bits64().to_le_bytes();
            for &b in &bytes[..std::mem::size_of::<T>()] {
                hash ^= u64::from(b);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        hash
    }

    /// The program draws the same inputs as `Rng::vec`: these digests are those of
    /// `cub_bench --dump-inputs 4096 --seed 12345`.
    #[test]
    fn inputs_match_the_program() {
        assert_eq!(input_digest::<i32>(), 0x7df8_ec85_42e0_8400);
        assert_eq!(input_digest::<u32>(), 0x7df8_ec85_42e0_8400);
        assert_eq!(input_digest::<f32>(), 0x0fac_77a4_5684_baa1);
        assert_eq!(input_digest::<i64>(), 0x79f2_92c5_0a9f_ea30);
        assert_eq!(input_digest::<u64>(), 0x79f2_92c5_0a9f_ea30);
        assert_eq!(input_digest::<f64>(), 0xbab5_0061_1a67_b7f0);
        assert_eq!(Rng::new(12345).vec::<f32>(1)[0].to_bits(), 0xb991_08c1);
    }
}
