//! Even-bin histogram (CUB's `DeviceHistogram::HistogramEven`): `bins` equal bins over
//! `[lower, upper)`, for samples of every element type, counts in `u32` or `u64`.
//!
//! Which bin a sample falls in is [`crate::spec::histogram`]: for integers exactly
//! `floor((x - lower) · bins / (upper - lower))`; for floats `floor((x - lower) · scale)` with
//! `scale = bins / (upper - lower)`, each operation rounded to the sample's type on its own (the
//! top edge's rounding counts in the last bin). Samples outside `[lower, upper)` and NaN are not
//! counted. Subnormal samples, bounds and differences bin as IEEE 754 says on every device:
//! where the driver flushes them (`DeviceInfo::subnormals_f32` is `Emulated`) the float
//! comparisons and the two operations run in the exact arithmetic the other float kernels use.
//!
//! Each workgroup counts a contiguous chunk of samples into bins in shared memory (up to
//! [`SHARED_BINS`] bins; more go straight to device memory) and then adds its nonzero bins to
//! the output, one atomic each. A subgroup counts each step warp-aggregated: the lowest lane
//! with a counted sample leads, a ballot finds the lanes whose samples share its bin, and one
//! atomic adds them all; so samples that all fall in one bin do not serialize on one counter.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::histogram::histogram_even_host;
//! let dev = xwarp::backend::open_default()?;
//! let samples = [0.5f32, 1.5, 1.7, 9.0, -1.0, f32::NAN, 10.0];
//! let counts: Vec<u32> = histogram_even_host(&*dev, &samples, 5, 0.0, 10.0)?;
//! assert_eq!(counts, [3, 0, 0, 0, 1]); // 0.5, 1.5 and 1.7 in [0, 2); 9.0 in [8, 10)
//! # Ok(()) }
//! ```
//!
//! # Limits
//! At most [`plan::MAX_LAUNCH_ELEMS`] samples (no more than one binding spans) and
//! [`MAX_BINS`] bins. Integer samples need 64-bit integer arithmetic in kernels (Vulkan
//! `shaderInt64`). Every check happens before anything is launched, so a refused call leaves
//! its counts untouched.

use crate::device::{BackendKind, Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::element::{ElemKind, Element};
use crate::error::Result;
use crate::kernels::HistogramParams;
use crate::plan;
pub use crate::spec::histogram::{Sample, MAX_BINS};

/// The most bins a workgroup counts in shared memory (`SHARED_BINS` in the kernels).
pub const SHARED_BINS: usize = 4096;
/// Most workgroups of a counting launch.
const MAX_GROUPS: usize = 1024;
/// Loads in flight per invocation (`BATCH` in the kernels).
const BATCH: usize = 8;
/// Threads per workgroup.
const BLOCK: u32 = plan::BLOCK;

/// The steps of the plan: `OP` in `shaders/histogram.comp` and `cuda/histogram.cu`.
#[derive(Clone, Copy)]
enum Step {
    Clear = 0,
    Shared = 1,
    Global = 2,
    Widen = 3,
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The count types: `u32` or `u64`.
pub trait Count: Element + sealed::Sealed {}
impl Count for u32 {}
impl Count for u64 {}

/// Counts the samples of `samples` in `counts.len()` even bins over `[lower, upper)`: `counts[b]`
/// gets the number of samples in bin `b` (every bin is written). `counts` is a buffer of its
/// own.
pub fn histogram_even<T: Sample, C: Count>(
    dev: &dyn Device,
    samples: &DeviceVec<T>,
    counts: &mut DeviceVec<C>,
    lower: T,
    upper: T,
) -> Result<()> {
    let bins = counts.len();
    let (scale, range, width) = T::plan(lower, upper, bins)?;
    plan::check_distinct(
        "histogram",
        &[("counts", counts.raw())],
        &[("samples", samples.raw())],
    )?;
    let info = dev.info();
    let n = samples.len();
    plan::check_launch_len(info, "samples.len()", n, T::KIND.size())?;
    let ops = SubgroupFeatures::BASIC | SubgroupFeatures::BALLOT | SubgroupFeatures::SHUFFLE;
    plan::require(info, T::KIND, ops)?;
    if crate::spec::histogram::integer(T::KIND) {
        // The bins of integer samples are computed in 64-bit arithmetic.
        plan::require(info, ElemKind::U64, ops)?;
    }
    let wide = C::KIND.size() == 8;
    let scratch = if wide {
        Some(DeviceVec::<u32>::alloc(dev, bins)?)
    } else {
        None
    };
    // 32-bit counts: the output itself, or the scratch a u64 output is widened from.
    let narrow = match &scratch {
        Some(s) => s.binding(0, bins),
        None => counts.binding(0, bins),
    };
    let bytes = |v: T| v.to_bits64();
    let word = |w: u64| (w as u32, (w >> 32) as u32);
    let (lower_lo, lower_hi) = word(bytes(lower));
    let (upper_lo, upper_hi) = word(bytes(upper));
    let (scale_lo, scale_hi) = word(scale);
    let (range_lo, range_hi) = word(range);
    let (width_lo, width_hi) = word(width);
    let step = BATCH * BLOCK as usize;
    let chunk = n.div_ceil(MAX_GROUPS).next_multiple_of(step).max(step);
    let params = HistogramParams {
        n: n as u32,
        bins: bins as u32,
        chunk: chunk as u32,
        lower_lo,
        lower_hi,
        upper_lo,
        upper_hi,
        scale_lo,
        scale_hi,
        range_lo,
        range_hi,
        width_lo,
        width_hi,
        ..HistogramParams::default()
    };
    let run = |step: Step, groups: usize| -> Result<()> {
        // Shared memory for the bins only where they are counted there, and no more than they
        // need (fewer bytes keep more workgroups on an SM).
        let shared_words = match step {
            Step::Shared => bins.next_power_of_two().clamp(64, SHARED_BINS) as u32,
            _ => 64,
        };
        let mut consts = vec![("OP", step as u32), ("SHARED_WORDS", shared_words)];
        // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs).
        if info.backend == BackendKind::Cuda {
            consts.push(("BLOCK", BLOCK));
        }
        dev.launch(&Launch {
            kernel: Kernel {
                name: "histogram",
                elem: T::KIND,
                consts: &consts,
            },
            block: BLOCK,
            groups: plan::grid(info, groups as u64)?,
            bindings: &[samples.binding(0, n), narrow, counts.binding(0, bins)],
            params: bytemuck::bytes_of(&params),
        })
    };
    let per_bin = bins.div_ceil(BLOCK as usize);
    run(Step::Clear, per_bin)?;
    if n > 0 {
        let step = if bins <= SHARED_BINS {
            Step::Shared
        } else {
            Step::Global
        };
        run(step, n.div_ceil(chunk))?;
    }
    if wide {
        run(Step::Widen, per_bin)?;
    }
    Ok(())
}

/// [`histogram_even`] of host samples into `bins` bins.
pub fn histogram_even_host<T: Sample, C: Count>(
    dev: &dyn Device,
    samples: &[T],
    bins: usize,
    lower: T,
    upper: T,
) -> Result<Vec<C>> {
    T::plan(lower, upper, bins)?;
    let input = DeviceVec::from_slice(dev, samples)?;
    let mut counts = DeviceVec::alloc(dev, bins)?;
    histogram_even(dev, &input, &mut counts, lower, upper)?;
    counts.to_vec(dev)
}
