//! The benchmark's cases of the device-wide toolbox: partition, unique, run-length encoding,
//! reduce-by-key, segmented reduce, histogram and top-k, each on the input every algorithm of a
//! size gets (`data::random_input`), checked against the CPU reference once, then timed.
//!
//! What each case computes (and CUB's counterpart in `benches/cub/cub_bench.cu` computes the
//! same on the same input):
//! - `partition`: [`xwarp::partition::partition`] by `v > threshold` (the compaction's predicate;
//!   CUB's `DevicePartition::If` writes the others in reverse order);
//! - `unique`, `run_length`: the input's runs of equal keys (random inputs: runs of one);
//! - `reduce_by_key`: the sum of each run's values, the input being both keys and values;
//! - `segmented_sum_16`, `segmented_sum_1`: sums of segments of 16 elements, and of one segment
//!   of the whole input;
//! - `histogram_256`: 256 bins over `[-2^29, 2^29)` (`u32`: `[2^30, 3·2^30)`; `i64`
//!   `[-2^61, 2^61)`; `u64` `[2^62, 3·2^62)`; floats `[-2^20, 2^20)`), `u32` counts;
//!   `histogram_256_one_bin`: the same bins over an input of its own, every sample equal to
//!   `lower + (upper - lower) / 3` (every sample in one bin: the skewed case);
//! - `top_k_1024`: the 1024 largest keys, sorted (CUB's `DeviceTopK` is not in CUB 3.0.1).

use super::data::BenchElem;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Element};
use xwarp::error::{Error, Result};
use xwarp::reduce::ReduceOp;
use xwarp::segmented_reduce::Segments;
use xwarp::sort::SortOrder;
use xwarp::vote::Predicate;

/// One toolbox algorithm of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// [`xwarp::partition::partition`] by `v > threshold`.
    Partition,
    /// [`xwarp::unique::unique`].
    Unique,
    /// [`xwarp::run_length::encode`].
    RunLength,
    /// [`xwarp::reduce_by_key::reduce_by_key`], sum, the input as keys and values.
    ReduceByKey,
    /// [`xwarp::segmented_reduce::segmented_reduce`], sum, segments of this many elements (0:
    /// one segment of the whole input).
    SegmentedSum(usize),
    /// [`xwarp::histogram::histogram_even`] with 256 bins; `true`: on an input whose samples
    /// all fall in one bin.
    Histogram(bool),
    /// [`xwarp::top_k::top_k`], the largest this many.
    TopK(usize),
}

/// The segment length of `segmented_sum_16`.
const SEGMENT: usize = 16;
/// The k of `top_k_1024`.
const TOP_K: usize = 1024;
/// The bins of the histograms.
const BINS: usize = 256;

impl Tool {
    /// Every toolbox algorithm, in table order.
    pub const ALL: [Tool; 9] = [
        Tool::Partition,
        Tool::Unique,
        Tool::RunLength,
        Tool::ReduceByKey,
        Tool::SegmentedSum(SEGMENT),
        Tool::SegmentedSum(0),
        Tool::Histogram(false),
        Tool::Histogram(true),
        Tool::TopK(TOP_K),
    ];

    /// The name in tables, JSON and plot file names.
    pub fn name(self) -> String {
        match self {
            Tool::Partition => "partition".into(),
            Tool::Unique => "unique".into(),
            Tool::RunLength => "run_length".into(),
            Tool::ReduceByKey => "reduce_by_key".into(),
            Tool::SegmentedSum(0) => "segmented_sum_1".into(),
            Tool::SegmentedSum(len) => format!("segmented_sum_{len}"),
            Tool::Histogram(false) => "histogram_256".into(),
            Tool::Histogram(true) => "histogram_256_one_bin".into(),
            Tool::TopK(k) => format!("top_k_{k}"),
        }
    }

    /// The family `--algo` also accepts.
    pub fn family(self) -> &'static str {
        match self {
            Tool::Partition => "partition",
            Tool::Unique => "unique",
            Tool::RunLength => "run_length",
            Tool::ReduceByKey => "reduce_by_key",
            Tool::SegmentedSum(_) => "segmented_reduce",
            Tool::Histogram(_) => "histogram",
            Tool::TopK(_) => "top_k",
        }
    }

    /// The CUB program's algorithm measured against this one, if any.
    pub fn cub_name(self) -> Option<&'static str> {
        match self {
            Tool::Partition => Some("partition_if"),
            Tool::Unique => Some("unique"),
            Tool::RunLength => Some("run_length_encode"),
            Tool::ReduceByKey => Some("reduce_by_key"),
            Tool::SegmentedSum(SEGMENT) => Some("segmented_sum_16"),
            Tool::SegmentedSum(0) => Some("segmented_sum_1"),
            Tool::Histogram(false) => Some("histogram_even_256"),
            Tool::Histogram(true) => Some("histogram_even_one_bin"),
            _ => None,
        }
    }

    /// The bytes that must move for `n` elements of `size` bytes with `kept` outputs (runs,
    /// passing elements): every input read once, every output written once.
    pub fn bytes(self, n: usize, size: usize, kept: usize) -> u64 {
        let (n, size, kept) = (n as u64, size as u64, kept as u64);
        match self {
            Tool::Partition => 2 * n * size + 8,
            Tool::Unique => n * size + kept * size + 8,
            Tool::RunLength => n * size + kept * (size + 4) + 8,
            Tool::ReduceByKey => n * size + 2 * kept * size + 8,
            Tool::SegmentedSum(len) => {
                let segments = if len == 0 { 1 } else { n.div_ceil(len as u64) };
                n * size + segments * (size + 4) + 4
            }
            Tool::Histogram(_) => n * size + 4 * BINS as u64,
            Tool::TopK(k) => n * size + (k as u64).min(n) * size,
        }
    }

    /// Whether it sums floats (a NaN sum then matches any NaN).
    fn sums(self) -> bool {
        matches!(self, Tool::ReduceByKey | Tool::SegmentedSum(_))
    }
}

/// The expected outputs of a case, as the bits [`State::outputs`] returns, and how many
/// outputs it keeps (runs, passing elements).
pub(crate) struct Expected {
    words: Vec<u64>,
    kept: usize,
}

/// A value of `T` from a signed or unsigned integer, or a float.
fn from_i128<T: Element>(v: i128) -> T {
    from_bits(v as u64)
}

fn from_bits<T: Element>(bits: u64) -> T {
    if T::KIND.size() == 4 {
        bytemuck::cast_slice::<u32, T>(&[bits as u32])[0]
    } else {
        bytemuck::cast_slice::<u64, T>(&[bits])[0]
    }
}

/// `[lower, upper)` of the histogram cases (see the module documentation).
pub(crate) fn histogram_range<T: Element>() -> (T, T) {
    let f = |v: f64| -> T {
        if T::KIND == ElemKind::F32 {
            from_bits((v as f32).to_bits() as u64)
        } else {
            from_bits(v.to_bits())
        }
    };
    match T::KIND {
        ElemKind::F32 | ElemKind::F64 => (f(-2f64.powi(20)), f(2f64.powi(20))),
        ElemKind::I32 => (from_i128(-(1 << 29)), from_i128(1 << 29)),
        ElemKind::U32 => (from_i128(1 << 30), from_i128(3 << 30)),
        ElemKind::I64 => (from_i128(-(1 << 61)), from_i128(1 << 61)),
        ElemKind::U64 => (from_i128(1 << 62), from_i128(3 << 62)),
    }
}

/// The sample every sample of the one-bin histogram is: `lower + (upper - lower) / 3`.
fn one_bin_sample<T: Element>() -> T {
    let (lower, upper) = histogram_range::<T>();
    match T::KIND {
        ElemKind::F32 => {
            let (l, u) = (
                f32::from_bits(lower.to_bits64() as u32),
                f32::from_bits(upper.to_bits64() as u32),
            );
            from_bits((l + (u - l) / 3.0).to_bits() as u64)
        }
        ElemKind::F64 => {
            let (l, u) = (
                f64::from_bits(lower.to_bits64()),
                f64::from_bits(upper.to_bits64()),
            );
            from_bits((l + (u - l) / 3.0).to_bits())
        }
        _ => {
            let sign = |v: T| -> i128 {
                match T::KIND {
                    ElemKind::I32 => v.to_bits64() as u32 as i32 as i128,
                    ElemKind::I64 => v.to_bits64() as i64 as i128,
                    _ => v.to_bits64() as i128,
                }
            };
            let (l, u) = (sign(lower), sign(upper));
            from_i128(l + (u - l) / 3)
        }
    }
}

/// The input a case runs on: `input`, or for the one-bin histogram its own.
fn case_input<T: Element>(tool: Tool, input: &[T]) -> std::borrow::Cow<'_, [T]> {
    match tool {
        Tool::Histogram(true) => vec![one_bin_sample::<T>(); input.len()].into(),
        _ => input.into(),
    }
}

fn bits_of<T: Element>(v: &[T]) -> impl Iterator<Item = u64> + '_ {
    v.iter().map(|x| x.to_bits64())
}

/// The segment offsets of `SegmentedSum(len)` over `n` elements.
fn offsets(len: usize, n: usize) -> Vec<u32> {
    if len == 0 {
        return vec![0, n as u32];
    }
    (0..=n.div_ceil(len))
        .map(|s| (s * len).min(n) as u32)
        .collect()
}

/// The `k` largest keys, sorted, ties by the lower index, by a bounded heap (the CPU twin's
/// argsort of a whole input costs far more at the largest sizes).
fn largest<T: Element>(input: &[T], k: usize) -> Vec<T> {
    use std::collections::BinaryHeap;
    let kind = T::KIND;
    // The smallest (mapped key, index) for descending order are the k wanted.
    let mut heap: BinaryHeap<(u64, usize)> = BinaryHeap::with_capacity(k + 1);
    for (i, v) in input.iter().enumerate() {
        let m = cpu::sort::mapped_key(kind, v.to_bits64(), SortOrder::Descending);
        if heap.len() < k {
            heap.push((m, i));
        } else if heap.peek().is_some_and(|&top| (m, i) < top) {
            heap.pop();
            heap.push((m, i));
        }
    }
    let mut best = heap.into_vec();
    best.sort_unstable();
    best.into_iter().map(|(_, i)| input[i]).collect()
}

/// The CPU reference's outputs of `tool` on `input`.
pub(crate) fn expected<T: BenchElem>(tool: Tool, input: &[T]) -> Expected {
    let input = &*case_input(tool, input);
    let n = input.len();
    let (words, kept): (Vec<u64>, usize) = match tool {
        Tool::Partition => {
            let (count, out) = cpu::partition::partition(Predicate::Greater(T::THRESHOLD), input);
            let mut w = vec![count as u64];
            w.extend(bits_of(&out));
            (w, count)
        }
        Tool::Unique => {
            let u = cpu::runs::unique(input);
            let mut w = vec![u.len() as u64];
            w.extend(bits_of(&u));
            (w, u.len())
        }
        Tool::RunLength => {
            let (k, l) = cpu::runs::run_length(input);
            let mut w = vec![k.len() as u64];
            w.extend(bits_of(&k));
            w.extend(bits_of(&l));
            (w, k.len())
        }
        Tool::ReduceByKey => {
            let (k, v) = cpu::runs::reduce_by_key(ReduceOp::Sum, input, input);
            let mut w = vec![k.len() as u64];
            w.extend(bits_of(&k));
            w.extend(bits_of(&v));
            (w, k.len())
        }
        Tool::SegmentedSum(len) => {
            let out =
                cpu::segmented_reduce::segmented_reduce(ReduceOp::Sum, input, &offsets(len, n));
            (bits_of(&out).collect(), 0)
        }
        Tool::Histogram(_) => {
            let (lower, upper) = histogram_range::<T>();
            (cpu::histogram::histogram_even(input, BINS, lower, upper), 0)
        }
        Tool::TopK(k) => (bits_of(&largest(input, k.min(n))).collect(), 0),
    };
    let words = if tool.sums() {
        words.into_iter().map(|w| canonical_nan::<T>(w)).collect()
    } else {
        words
    };
    Expected { words, kept }
}

/// Every NaN of `T`'s bits as one pattern (for float sums, whose NaN payloads may differ).
fn canonical_nan<T: Element>(w: u64) -> u64 {
    let nan = match T::KIND {
        ElemKind::F32 => w as u32 & 0x7fff_ffff > 0x7f80_0000 && w >> 32 == 0,
        ElemKind::F64 => w & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000,
        _ => false,
    };
    if nan {
        u64::MAX
    } else {
        w
    }
}

/// One case's device state: its outputs and what the call needs.
pub(crate) struct State<T: Element> {
    tool: Tool,
    out: DeviceVec<T>,
    out2: DeviceVec<T>,
    lengths: DeviceVec<u32>,
    counts: DeviceVec<u32>,
    count: DeviceVec<u64>,
    segments: Option<Segments>,
    /// The one-bin histogram's own input.
    own: Option<DeviceVec<T>>,
}

impl<T: BenchElem> State<T> {
    /// Allocates the outputs of `tool` on `n` elements, and plans the segments.
    pub(crate) fn new(dev: &dyn Device, tool: Tool, n: usize) -> Result<Self> {
        let (out, out2, lengths, counts) = match tool {
            Tool::Partition | Tool::Unique => (n, 1, 1, 1),
            Tool::RunLength => (n, 1, n, 1),
            Tool::ReduceByKey => (n, n, 1, 1),
            Tool::SegmentedSum(len) => (offsets(len, n).len() - 1, 1, 1, 1),
            Tool::Histogram(_) => (1, 1, 1, BINS),
            Tool::TopK(k) => (k.min(n), 1, 1, 1),
        };
        let segments = match tool {
            Tool::SegmentedSum(len) => Some(Segments::new(dev, &offsets(len, n), n)?),
            _ => None,
        };
        let own = match tool {
            Tool::Histogram(true) => Some(DeviceVec::from_slice(
                dev,
                &case_input(tool, &vec![T::zeroed(); n]),
            )?),
            _ => None,
        };
        Ok(State {
            tool,
            own,
            out: DeviceVec::alloc(dev, out)?,
            out2: DeviceVec::alloc(dev, out2)?,
            lengths: DeviceVec::alloc(dev, lengths)?,
            counts: DeviceVec::alloc(dev, counts)?,
            count: DeviceVec::alloc(dev, 1)?,
            segments,
        })
    }

    /// Fills the outputs with `poison` (and `0xcdcdcdcd…` words).
    pub(crate) fn poison(&mut self, dev: &dyn Device, poison: T) -> Result<()> {
        self.out.fill(dev, poison)?;
        self.out2.fill(dev, poison)?;
        self.lengths.fill(dev, 0xcdcd_cdcd)?;
        self.counts.fill(dev, 0xcdcd_cdcd)?;
        self.count.fill(dev, u64::MAX)
    }

    /// One call on `src`.
    pub(crate) fn call(&mut self, dev: &dyn Device, src: &DeviceVec<T>) -> Result<()> {
        let pred = Predicate::Greater(T::THRESHOLD);
        match self.tool {
            Tool::Partition => {
                xwarp::partition::partition(dev, pred, src, &mut self.out, &mut self.count)
            }
            Tool::Unique => xwarp::unique::unique(dev, src, &mut self.out, &mut self.count),
            Tool::RunLength => xwarp::run_length::encode(
                dev,
                src,
                &mut self.out,
                &mut self.lengths,
                &mut self.count,
            ),
            Tool::ReduceByKey => xwarp::reduce_by_key::reduce_by_key(
                dev,
                ReduceOp::Sum,
                src,
                src,
                &mut self.out,
                &mut self.out2,
                &mut self.count,
            ),
            Tool::SegmentedSum(_) => {
                let segments = self.segments.as_ref().ok_or_else(|| {
                    Error::invalid("segments", "none", "segments made with the case")
                })?;
                xwarp::segmented_reduce::segmented_reduce(
                    dev,
                    ReduceOp::Sum,
                    src,
                    segments,
                    &mut self.out,
                )
            }
            Tool::Histogram(_) => {
                let (lower, upper) = histogram_range::<T>();
                let samples = self.own.as_ref().unwrap_or(src);
                xwarp::histogram::histogram_even(dev, samples, &mut self.counts, lower, upper)
            }
            Tool::TopK(_) => {
                let k = self.out.len();
                xwarp::top_k::top_k(dev, src, k, SortOrder::Descending, &mut self.out)
            }
        }
    }

    /// Brings the result of the calls so far to the host: the count of the algorithms that
    /// have one; the others are waited for.
    pub(crate) fn fetch(&self, dev: &dyn Device) -> Result<()> {
        match self.tool {
            Tool::Partition | Tool::Unique | Tool::RunLength | Tool::ReduceByKey => {
                let mut one = [0u64];
                dev.read(self.count.raw(), 0, bytemuck::cast_slice_mut(&mut one))
            }
            _ => dev.synchronize(),
        }
    }

    /// The outputs of the last call, as [`Expected`] holds them.
    fn outputs(&self, dev: &dyn Device, kept: usize) -> Result<Vec<u64>> {
        let count = || -> Result<Vec<u64>> { self.count.to_vec(dev) };
        let first = |v: &DeviceVec<T>| -> Result<Vec<u64>> {
            Ok(bits_of(&v.to_vec(dev)?[..kept.min(v.len())]).collect())
        };
        Ok(match self.tool {
            Tool::Partition => {
                let mut w = count()?;
                w.extend(bits_of(&self.out.to_vec(dev)?));
                w
            }
            Tool::Unique => [count()?, first(&self.out)?].concat(),
            Tool::RunLength => {
                let lengths = self.lengths.to_vec(dev)?;
                let mut w = [count()?, first(&self.out)?].concat();
                w.extend(bits_of(&lengths[..kept.min(lengths.len())]));
                w
            }
            Tool::ReduceByKey => [count()?, first(&self.out)?, first(&self.out2)?].concat(),
            Tool::SegmentedSum(_) | Tool::TopK(_) => bits_of(&self.out.to_vec(dev)?).collect(),
            Tool::Histogram(_) => self
                .counts
                .to_vec(dev)?
                .into_iter()
                .map(u64::from)
                .collect(),
        })
    }

    /// Compares the outputs of the last call with `want`: `Ok(kept)` or what differs.
    pub(crate) fn check(
        &self,
        dev: &dyn Device,
        want: &Expected,
    ) -> Result<std::result::Result<usize, String>> {
        let mut got = self.outputs(dev, want.kept)?;
        if self.tool.sums() {
            got = got.into_iter().map(canonical_nan::<T>).collect();
        }
        Ok(match crate::validate::first_mismatch(&want.words, &got) {
            None => Ok(want.kept),
            Some(m) => Err(format!(
                "{} (index 0 is the count where there is one): {m}",
                self.tool.name()
            )),
        })
    }
}
