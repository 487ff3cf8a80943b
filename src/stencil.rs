//! The shuffle stencil: a 5-point weighted moving average (Professional CUDA C Programming,
//! chapter 5), in the book's two forms, on every backend.
//!
//! ```text
//! y[i] = ((((w0·x[i-2] + w1·x[i-1]) + w2·x[i]) + w3·x[i+1]) + w4·x[i+2])   for 2 <= i < n-2
//! y[0] = y[1] = y[n-2] = y[n-1] = +0.0                                   (every y when n <= 4)
//! ```
//!
//! The ends are +0.0 whatever the input: no value from outside the input enters any output.
//!
//! - [`StencilVariant::Shuffle`]: each 32-lane logical warp loads its 32 values plus two on
//!   each side into registers (lanes 0 and 1 load `x[i-2]`, lanes 30 and 31 load `x[i+2]`) and
//!   gets its neighbours by shift up/down shuffles; the lanes at the warp's edges, whose
//!   neighbours lie outside the warp, take them from those halo registers. On subgroups
//!   narrower than 32 (4, 8, 16) the neighbours that lie in another subgroup of the warp come
//!   through shared memory; on subgroups of 32 or more everything moves by shuffle.
//! - [`StencilVariant::SharedMemory`]: each workgroup of [`BLOCK`] loads its tile plus two
//!   values on each side into shared memory, waits at a barrier, and reads its neighbours there.
//!
//! # Deterministic floats
//! The sum is evaluated in exactly the order above, every product and every sum rounded on its
//! own: no FMA contraction (`precise` in GLSL, `__fmul_rn`/`__fadd_rn` and
//! `__dmul_rn`/`__dadd_rn` in CUDA). So `f32` and `f64` results are bit-identical on CUDA, on
//! Vulkan at every subgroup size, in both variants, and in the CPU reference
//! ([`crate::cpu::stencil`]); `tests/float_orders.rs` checks a transcription of the formula
//! above against the reference. Subnormal products and sums are kept on every device (where a
//! Vulkan driver flushes them, by the kernels: [`Subnormals::Emulated`](crate::Subnormals)).
//! A caveat of the hardware, not of the order: a NaN's payload may differ between devices.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::stencil::{moving_average_host, StencilVariant};
//! let dev = xwarp::backend::open_default()?;
//! let x: Vec<f32> = (0..100).map(|i| i as f32).collect();
//! // Weights summing to 1 that are powers of two: exact on integers, so a ramp stays a ramp.
//! let w = [0.125, 0.25, 0.25, 0.25, 0.125];
//! let y = moving_average_host(&*dev, StencilVariant::Shuffle, w, &x)?;
//! assert_eq!(&y[..4], &[0.0, 0.0, 2.0, 3.0]);
//! # Ok(()) }
//! ```

pub use crate::cpu::stencil::{StencilElement, HALO, POINTS};
use crate::device::{Device, DeviceInfo, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use crate::kernels::StencilParams;
use crate::plan;
use std::fmt;
use std::str::FromStr;

/// Threads per workgroup of the stencil kernels (the shared-memory tile; `cuda/stencil.cu`
/// sizes its tile with the same number).
pub const BLOCK: u32 = 256;
/// Layers of [`BLOCK`] outputs each workgroup computes on long inputs (chosen by the device and the length), every
/// load issued before the first average (memory-level parallelism; the results do not depend
/// on it).
pub const ROWS: u32 = 8;
/// Layers per workgroup on short inputs (chosen by the device and the length): more, smaller workgroups on a small
/// input.
pub const FEW_ROWS: u32 = 4;
/// Layers per workgroup on the longest inputs of the CUDA shuffle stencil and of the Vulkan
/// shared-memory stencil with exact subnormals (chosen by the device and the length).
pub const MANY_ROWS: u32 = 16;

/// Layers per workgroup the stencil takes for `n` elements of type `elem` in `variant` on
/// `info`'s device, unless [`Tuning::rows`] says otherwise: [`FEW_ROWS`], [`ROWS`] or
/// [`MANY_ROWS`], chosen by backend, length and (where the device keeps `elem`'s subnormals by
/// the exact kernels) variant as measured (the choice and its measurements are in the crate's
/// tuning module). Results do not depend on it.
pub fn rows(info: &DeviceInfo, variant: StencilVariant, elem: ElemKind, n: usize) -> u32 {
    crate::tuning::stencil_rows(info, variant, info.emulates_subnormals(elem), n)
}

/// Stencil knobs that change speed, never results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// Layers per workgroup: [`FEW_ROWS`], [`ROWS`] or [`MANY_ROWS`]; `None`: [`rows`].
    pub rows: Option<u32>,
}

/// The two forms of the stencil.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StencilVariant {
    /// Neighbours by warp shuffles, with the lane 0/1 and 30/31 fix-ups.
    Shuffle,
    /// Neighbours from a tile in shared memory.
    SharedMemory,
}

impl StencilVariant {
    /// Both variants.
    pub const ALL: [StencilVariant; 2] = [StencilVariant::Shuffle, StencilVariant::SharedMemory];

    /// The variant's `SMEM` constant in `shaders/stencil.comp` and `cuda/stencil.cu`.
    pub fn code(self) -> u32 {
        match self {
            StencilVariant::Shuffle => 0,
            StencilVariant::SharedMemory => 1,
        }
    }

    /// The variant's name: `shuffle` or `shared`.
    pub fn name(self) -> &'static str {
        match self {
            StencilVariant::Shuffle => "shuffle",
            StencilVariant::SharedMemory => "shared",
        }
    }
}

impl fmt::Display for StencilVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StencilVariant {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        StencilVariant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| Error::invalid("variant", s, "shuffle or shared"))
    }
}

/// Writes the moving average of `input` with `weights` (`w0` for `x[i-2]` … `w4` for
/// `x[i+2]`) into `output`, which must have the same length. An empty input is refused
/// ([`Error::EmptyInput`]), as is an output of another length ([`Error::LengthMismatch`]);
/// nothing is launched then. Any length the device's memory allows: inputs longer than one
/// binding run in chunks whose halos overlap.
///
/// The device must offer the subgroup operation classes basic, shuffle and shuffle_relative
/// (both variants share one kernel), and `shaderFloat64` for `f64`.
pub fn moving_average<T: StencilElement>(
    dev: &dyn Device,
    variant: StencilVariant,
    weights: [T; POINTS],
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    moving_average_tuned(dev, variant, weights, input, output, Tuning::default())
}

/// [`moving_average`] with explicit [`Tuning`] (the same results).
pub fn moving_average_tuned<T: StencilElement>(
    dev: &dyn Device,
    variant: StencilVariant,
    weights: [T; POINTS],
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    tuning: Tuning,
) -> Result<()> {
    validate(input.len(), output.len())?;
    let info = dev.info();
    let rows = match tuning.rows {
        None => rows(info, variant, T::KIND, input.len()),
        Some(r) if [FEW_ROWS, ROWS, MANY_ROWS].contains(&r) => r,
        Some(r) => {
            return Err(Error::invalid(
                "tuning.rows",
                r,
                format!("{FEW_ROWS}, {ROWS} or {MANY_ROWS}"),
            ))
        }
    };
    plan::require(
        info,
        T::KIND,
        SubgroupFeatures::BASIC | SubgroupFeatures::SHUFFLE | SubgroupFeatures::SHUFFLE_RELATIVE,
    )?;
    let size = T::KIND.size();
    let align = (info.binding_alignment / size as u64).max(1) as usize;
    let consts = [("SMEM", variant.code()), ("ROWS", rows)];
    let kernel = Kernel {
        name: "stencil",
        elem: T::KIND,
        consts: &consts,
    };
    let mut words = [0u32; 2 * POINTS];
    for (k, w) in weights.iter().enumerate() {
        let bits = w.to_bits64();
        words[2 * k] = bits as u32;
        words[2 * k + 1] = (bits >> 32) as u32;
    }
    for c in plan_chunks(input.len(), chunk_len(info, size, align), align) {
        let groups = plan::grid(info, (c.count as u64).div_ceil(u64::from(BLOCK * rows)))?;
        let params = StencilParams {
            count: c.count as u32,
            in_off: c.in_off as u32,
            in_len: c.in_len as u32,
            lo: c.lo as u32,
            hi: c.hi as u32,
            out_off: c.out_off as u32,
            w: words,
        };
        dev.launch(&Launch {
            kernel,
            block: BLOCK,
            groups,
            bindings: &[
                input.binding(c.in_base, c.in_len),
                output.binding(c.out_base, c.out_off + c.count),
            ],
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}

/// [`moving_average`] of host data: uploads, runs, downloads.
pub fn moving_average_host<T: StencilElement>(
    dev: &dyn Device,
    variant: StencilVariant,
    weights: [T; POINTS],
    input: &[T],
) -> Result<Vec<T>> {
    validate(input.len(), input.len())?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    moving_average(dev, variant, weights, &src, &mut dst)?;
    dst.to_vec(dev)
}

fn validate(input: usize, output: usize) -> Result<()> {
    if input == 0 {
        return Err(Error::EmptyInput { name: "input" });
    }
    if output != input {
        return Err(Error::LengthMismatch {
            name: "output",
            expected: input as u64,
            actual: output as u64,
        });
    }
    Ok(())
}

/// Outputs per launch: whole workgroups, so that the input binding (the chunk, its halos and
/// the rounding down to an aligned start) stays within the device's binding range.
fn chunk_len(info: &crate::DeviceInfo, size: usize, align: usize) -> usize {
    let margin = (2 * HALO + align - 1) as u64;
    let max_elems = info.max_binding_bytes / size as u64;
    let block = BLOCK as u64;
    let mut chunk = plan::chunk_elems(info, size, block);
    while chunk > block && chunk + margin > max_elems {
        chunk -= block;
    }
    chunk as usize
}

/// One launch: outputs `start .. start + count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Chunk {
    /// Outputs of the launch.
    count: usize,
    /// First input element bound (aligned).
    in_base: usize,
    /// Input elements bound: through two past the last output, or the input's end.
    in_len: usize,
    /// Index in the input binding of the first output's centre.
    in_off: usize,
    /// Outputs `lo .. hi` of the launch are averages; the others are at the signal's edges.
    lo: usize,
    /// See `lo`.
    hi: usize,
    /// First output element bound (aligned).
    out_base: usize,
    /// Index in the output binding of the first output.
    out_off: usize,
}

/// The launches for an input of `n` elements, `chunk` outputs each, binding offsets rounded
/// down to multiples of `align` elements. A launch reads the two elements on each side of its
/// outputs, so neighbouring chunks' inputs overlap and every output sees the whole signal.
fn plan_chunks(n: usize, chunk: usize, align: usize) -> impl Iterator<Item = Chunk> {
    (0..n).step_by(chunk).map(move |start| {
        let count = chunk.min(n - start);
        let in_first = start.saturating_sub(HALO);
        let in_base = in_first - in_first % align;
        let in_len = n.min(start + count + HALO) - in_base;
        let lo = HALO.saturating_sub(start).min(count);
        let hi = n
            .saturating_sub(HALO)
            .saturating_sub(start)
            .clamp(lo, count);
        let out_base = start - start % align;
        Chunk {
            count,
            in_base,
            in_len,
            in_off: start - in_base,
            lo,
            hi,
            out_base,
            out_off: start - out_base,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::stencil::{moving_average as reference, weighted};
    use crate::element::Rng;

    /// What the kernel computes from a plan, on the CPU: every read must lie in the binding.
    fn emulate(n: usize, chunk: usize, align: usize, w: [f64; 5], x: &[f64]) -> Vec<f64> {
        let mut y = vec![f64::NAN; n];
        for c in plan_chunks(n, chunk, align) {
            assert_eq!(c.in_base % align, 0);
            assert_eq!(c.out_base % align, 0);
            assert!(c.in_len < c.count + 2 * HALO + align);
            let bound = &x[c.in_base..c.in_base + c.in_len];
            let out = &mut y[c.out_base..c.out_base + c.out_off + c.count];
            for t in 0..c.count {
                out[c.out_off + t] = if (c.lo..c.hi).contains(&t) {
                    let q = c.in_off + t;
                    weighted(
                        w,
                        [
                            bound[q - 2],
                            bound[q - 1],
                            bound[q],
                            bound[q + 1],
                            bound[q + 2],
                        ],
                    )
                } else {
                    0.0
                };
            }
        }
        y
    }

    #[test]
    fn chunks_overlap_by_the_halo_and_cover_every_output() {
        let mut rng = Rng::new(11);
        for n in [
            1, 2, 3, 4, 5, 6, 7, 9, 255, 256, 257, 258, 511, 512, 513, 1000, 1283,
        ] {
            let x: Vec<f64> = rng.vec(n);
            let w: [f64; 5] = std::array::from_fn(|_| rng.next_f64_mixed());
            let want = reference(w, &x);
            for chunk in [1, 2, 3, 5, 256, 512] {
                for align in [1, 2, 4, 64] {
                    let got = emulate(n, chunk, align, w, &x);
                    assert!(
                        want.iter()
                            .zip(&got)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                        "n={n} chunk={chunk} align={align}"
                    );
                }
            }
        }
    }

    #[test]
    fn chunks_fit_the_binding_range() {
        let info = crate::DeviceInfo {
            backend: crate::BackendKind::Vulkan,
            index: 0,
            name: "test".into(),
            vendor_id: 0,
            device_type: crate::device::DeviceType::Cpu,
            driver: String::new(),
            subgroup_size: 8,
            min_subgroup_size: 8,
            max_subgroup_size: 8,
            subgroup_size_pinned: true,
            subgroup_features: SubgroupFeatures::default(),
            max_binding_bytes: 1 << 27,
            binding_alignment: 256,
            max_groups: [65535; 3],
            shared_memory_bytes: 32768,
            max_shared_memory_bytes: 32768,
            unit_shared_memory_bytes: 0,
            compute_units: 0,
            max_block: 1024,
            int64: true,
            float64: true,
            int64_atomics: true,
            workgroup_coherence: true,
            subnormals_f32: crate::device::Subnormals::Guaranteed,
            subnormals_f64: crate::device::Subnormals::Guaranteed,
        };
        for size in [4, 8] {
            let align = 256 / size;
            let chunk = chunk_len(&info, size, align);
            assert_eq!(chunk % BLOCK as usize, 0);
            assert!((chunk + 2 * HALO + align - 1) * size <= 1 << 27);
            assert!(chunk + BLOCK as usize + 2 * HALO + align > (1 << 27) / size);
        }
    }
}
