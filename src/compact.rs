//! Stream compaction (filtering) by the leader-elected, warp-aggregated atomic enqueue.
//!
//! Each 32-lane logical warp ballots a run-time [`Predicate`]; ONE lane (the warp's leader)
//! does ONE `atomicAdd` of the warp's passing count on a counter, broadcasts the base it got to
//! the warp (a shuffle), and every passing lane writes at `base + popc(ballot & lanes below
//! it)`. Two orders:
//!
//! - [`Order::Unordered`] is exactly that: warps append in whatever order their atomics land,
//!   so the output holds the passing elements as a multiset, in no fixed order.
//! - [`Order::Stable`] keeps input order: per-tile counts by ballots, an exclusive scan of the
//!   tile counts on the device, then a scatter that recomputes the ballots and writes each
//!   passing element at its tile's offset plus its rank.
//!
//! Everything stays on the device: the count lands in a [`DeviceVec<u64>`] and the elements in
//! the output's first `count` slots, so an application can chain further kernels with no host
//! copy. Nothing past `count` is written. Any length works, including 0: inputs longer than one
//! launch go in chunks, each with a 32-bit counter that a one-thread step adds into the 64-bit
//! total (held as two 32-bit words, so no 64-bit atomics are needed), and the next chunk reads
//! its base from the device. Where the output exceeds the largest range one kernel binding may
//! span, each chunk's scatter is launched once per window of the output its result may start
//! in; the launches for the other windows leave at once.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::compact::{compact_host, Order};
//! use xwarp::vote::Predicate;
//! let dev = xwarp::backend::open_default()?;
//! let input: Vec<u32> = (0..100).collect();
//! let (count, odd) = compact_host(&*dev, Order::Stable, Predicate::Odd, &input)?;
//! assert_eq!(count, 50);
//! assert_eq!(&odd[..3], &[1, 3, 5]);
//! # Ok(()) }
//! ```

use crate::device::{Binding, Device, DeviceInfo, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::error::{Error, Result};
use crate::plan;
use crate::vote::{Predicate, PredicateElement};
use std::fmt;

/// Which order the compacted elements come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Input order (per-tile counts, a device scan, a scatter).
    Stable,
    /// Whatever order the warps' atomics land in: one pass, one atomic per warp.
    Unordered,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Stable => "stable",
            Order::Unordered => "unordered",
        })
    }
}

/// Tuning for [`compact_tuned`]: data apart from the algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// Plan as if one kernel binding could span at most this many elements (at least
    /// [`MIN_BINDING_ELEMS`]); `None` uses the device's limit. Smaller values make more chunks
    /// and output windows — what the tests use to exercise the long-input path on short inputs.
    pub max_binding_elems: Option<usize>,
}

/// The smallest [`Tuning::max_binding_elems`]: two workgroups' worth of elements.
pub const MIN_BINDING_ELEMS: usize = 2 * plan::BLOCK as usize;

/// The steps of the plan: `OP` in `shaders/compact.comp` and `cuda/compact.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Reset = 0,
    Unordered = 1,
    TileCount = 2,
    TileScan = 3,
    Scatter = 4,
    Accumulate = 5,
}

/// Compacts the elements of `input` that pass `pred` into the first `count` elements of
/// `output`, and writes `count` into `count[0]`, all on the device. `output` must hold at
/// least `input.len()` elements and `count` at least one; elements of `output` past `count`
/// are left as they were.
pub fn compact<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    count: &mut DeviceVec<u64>,
) -> Result<()> {
    compact_tuned(dev, order, pred, input, output, count, Tuning::default())
}

/// [`compact`] on host data: uploads, runs, and downloads the count and the first `count`
/// elements.
pub fn compact_host<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &[T],
) -> Result<(u64, Vec<T>)> {
    validate(pred, input.len(), input.len(), 1, Tuning::default())?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    let mut count = DeviceVec::alloc(dev, 1)?;
    compact(dev, order, pred, &src, &mut dst, &mut count)?;
    let n = count.to_vec(dev)?[0];
    let kept = usize::try_from(n)
        .ok()
        .filter(|&k| k <= input.len())
        .ok_or_else(|| {
            Error::invalid("count", n, format!("0..={} (device result)", input.len()))
        })?;
    let mut out = vec![T::zeroed(); kept];
    if kept > 0 {
        dev.read(dst.raw(), 0, bytemuck::cast_slice_mut(&mut out))?;
    }
    Ok((n, out))
}

/// [`compact`] with explicit [`Tuning`].
pub fn compact_tuned<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    count: &mut DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    let n = input.len();
    validate(pred, n, output.len(), count.len(), tuning)?;
    let info = dev.info();
    plan::require(
        info,
        T::KIND,
        SubgroupFeatures::BASIC | SubgroupFeatures::BALLOT | SubgroupFeatures::SHUFFLE,
    )?;
    let plan = Plan::new(info, T::KIND.size(), n, tuning);
    // Scratch: [0] the chunk's counter; the tile counts of one chunk (stable only).
    let counter = DeviceVec::<u32>::alloc(dev, 4)?;
    let tiles = match order {
        Order::Stable => Some(DeviceVec::<u32>::alloc(
            dev,
            plan.chunk.div_ceil(plan::BLOCK as usize).max(1),
        )?),
        Order::Unordered => None,
    };
    let launcher = Launcher {
        dev,
        info,
        elem: T::KIND,
        words: pred.words(),
        count,
        counter: &counter,
    };
    launcher.one_thread(Step::Reset)?;
    let mut start = 0;
    while start < n {
        let len = plan.chunk.min(n - start);
        let src = input.binding(start, len);
        let tile_binding = match &tiles {
            Some(t) => t.binding(0, len.div_ceil(plan::BLOCK as usize)),
            None => counter.binding(0, 4),
        };
        let scatter = match order {
            Order::Stable => {
                launcher.launch(Step::TileCount, len, src, None, tile_binding, Window::ANY)?;
                launcher.launch(Step::TileScan, len, src, None, tile_binding, Window::ANY)?;
                Step::Scatter
            }
            Order::Unordered => Step::Unordered,
        };
        for window in plan.windows(start) {
            let dst = output.binding(window.first, window.len);
            launcher.launch(scatter, len, src, Some(dst), tile_binding, window)?;
        }
        launcher.one_thread(Step::Accumulate)?;
        start += len;
    }
    Ok(())
}

fn validate<T: PredicateElement>(
    pred: Predicate<T>,
    input: usize,
    output: usize,
    count: usize,
    tuning: Tuning,
) -> Result<()> {
    pred.validate()?;
    if output < input {
        return Err(Error::LengthMismatch {
            name: "output",
            expected: input as u64,
            actual: output as u64,
        });
    }
    if count == 0 {
        return Err(Error::LengthMismatch {
            name: "count",
            expected: 1,
            actual: 0,
        });
    }
    match tuning.max_binding_elems {
        Some(m) if m < MIN_BINDING_ELEMS => Err(Error::invalid(
            "max_binding_elems",
            m,
            format!("{MIN_BINDING_ELEMS} or more"),
        )),
        _ => Ok(()),
    }
}

/// A range of the output one scatter launch binds: elements `first .. first + len`; the chunk's
/// result is written by this launch when it starts in `first .. first + span` (`span` 0: any).
#[derive(Clone, Copy, Debug)]
struct Window {
    first: usize,
    len: usize,
    span: usize,
}

impl Window {
    /// For steps that write no output.
    const ANY: Window = Window {
        first: 0,
        len: 0,
        span: 0,
    };
}

/// Chunk and window sizes for one compaction.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Input elements per launch, a multiple of the workgroup size.
    chunk: usize,
    /// Output elements: `n`.
    n: usize,
    /// Whether the whole output fits in one binding.
    single: bool,
}

impl Plan {
    fn new(info: &DeviceInfo, elem_size: usize, n: usize, tuning: Tuning) -> Self {
        let block = plan::BLOCK as u64;
        let mut chunk = plan::chunk_elems(info, elem_size, block);
        let mut binding = info.max_binding_bytes / elem_size as u64;
        if let Some(m) = tuning.max_binding_elems {
            binding = binding.min(m as u64);
        }
        let single = n as u64 <= binding;
        // A chunk's result starts in one window of `chunk` elements and spans at most the
        // next: a binding of two windows holds it.
        let per_chunk = if single { binding } else { binding / 2 };
        chunk = chunk.min(per_chunk / block * block).max(block);
        Plan {
            chunk: chunk as usize,
            n,
            single,
        }
    }

    /// The windows of the output that the chunk starting at input element `start` may write
    /// in: its result starts at the count of passing elements before it, which is at most
    /// `start`.
    fn windows(&self, start: usize) -> Vec<Window> {
        if self.single {
            return vec![Window {
                first: 0,
                len: self.n,
                span: 0,
            }];
        }
        (0..=start / self.chunk)
            .map(|j| {
                let first = j * self.chunk;
                Window {
                    first,
                    len: (2 * self.chunk).min(self.n - first),
                    span: self.chunk,
                }
            })
            .collect()
    }
}

/// Launches the steps of one compaction with the predicate and scratch they share.
struct Launcher<'a> {
    dev: &'a dyn Device,
    info: &'a DeviceInfo,
    elem: crate::element::ElemKind,
    words: [u32; 5],
    count: &'a DeviceVec<u64>,
    counter: &'a DeviceVec<u32>,
}

impl Launcher<'_> {
    /// RESET or ACCUMULATE: one thread on the total and the counter. The kernel declares every
    /// binding; the steps that do not touch the data get the counter in those slots.
    fn one_thread(&self, step: Step) -> Result<()> {
        let c = self.counter.binding(0, 4);
        self.run(
            step,
            [1, 1],
            [c, c, self.count.binding(0, 1), c, c],
            [0; 12],
        )
    }

    fn launch(
        &self,
        step: Step,
        len: usize,
        src: Binding<'_>,
        dst: Option<Binding<'_>>,
        tiles: Binding<'_>,
        window: Window,
    ) -> Result<()> {
        let tile_count = len.div_ceil(plan::BLOCK as usize);
        let groups = if step == Step::TileScan {
            [1, 1]
        } else {
            plan::grid(self.info, tile_count as u64)?
        };
        let [code, a_lo, a_hi, b_lo, b_hi] = self.words;
        let base = window.first as u64;
        let params = [
            len as u32,
            code,
            a_lo,
            a_hi,
            b_lo,
            b_hi,
            base as u32,
            (base >> 32) as u32,
            window.span as u32,
            tile_count as u32,
            0,
            0,
        ];
        let c = self.counter.binding(0, 4);
        let bindings = [src, dst.unwrap_or(c), self.count.binding(0, 1), c, tiles];
        self.run(step, groups, bindings, params)
    }

    fn run(
        &self,
        step: Step,
        groups: [u32; 2],
        bindings: [Binding<'_>; 5],
        params: [u32; 12],
    ) -> Result<()> {
        let consts = [("OP", step as u32)];
        self.dev.launch(&Launch {
            kernel: Kernel {
                name: "compact",
                elem: self.elem,
                consts: &consts,
            },
            block: plan::BLOCK,
            groups,
            bindings: &bindings,
            params: bytemuck::cast_slice(&params),
        })
    }
}
