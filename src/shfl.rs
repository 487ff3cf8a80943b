//! The shuffle family with CUDA semantics: broadcast, shift up and down, wrap-around shift,
//! butterfly, and the register-array exchange.
//!
//! Each operation acts on a 32-lane *logical warp* exactly as `__shfl_sync`, `__shfl_up_sync`,
//! `__shfl_down_sync` and `__shfl_xor_sync` act on a CUDA warp, on every backend and every
//! subgroup size (4, 8, 16, 32, 64, 128): lane `t % 32` of thread `t` holds element `t`
//! (or elements `4t .. 4t+3` for the array exchange). `width` (2, 4, 8, 16 or 32) splits each
//! warp into independent segments.
//!
//! The rules, after PTX's definition of `shfl.sync`:
//! - broadcast and wrap read lane `src mod width` of the caller's segment (any `src_lane` ≥ 0;
//!   wrap reads `lane + offset`, taken modulo `width`, so negative offsets wrap around);
//! - up and down read `lane ∓ delta`; a lane whose source leaves its segment keeps its own value;
//! - xor reads `lane ^ lane_mask`; a source above the caller's segment means the caller keeps its
//!   own value, a source in a lower segment is read (as CUDA documents).
//!
//! An input whose length is not a multiple of 32 ends in a partial warp: its missing lanes take
//! part with the value zero, and nothing is written past the end.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::shfl::{shfl_host, ShflOp};
//! let dev = xwarp::backend::open_default()?;
//! let input: Vec<i32> = (0..16).collect();
//! let out = shfl_host(&*dev, ShflOp::Up { delta: 2 }, 16, &input)?;
//! assert_eq!(&out[..4], &[0, 1, 0, 1]);
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use crate::kernels::ShflParams;
use crate::plan;
pub use crate::spec::shfl::{ShflOp, SEGM};

/// Layers of [`plan::BLOCK`] logical threads each workgroup handles, every load issued before the
/// first shuffle (memory-level parallelism; the results do not depend on it).
pub const ROWS: u32 = 4;

/// Checks a segment width: a power of two from 2 to 32.
pub fn check_width(width: u32) -> Result<()> {
    if (2..=32).contains(&width) && width.is_power_of_two() {
        Ok(())
    } else {
        Err(Error::invalid("width", width, "2, 4, 8, 16 or 32"))
    }
}

/// Applies `op` to every logical warp of `input`, writing `output` (same length).
pub fn shfl<T: Element>(
    dev: &dyn Device,
    op: ShflOp,
    width: u32,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    run(dev, op, width, 1, input, output)
}

/// The register-array exchange: each lane holds [`SEGM`] consecutive values and exchanges all
/// of them with lane `lane ^ lane_mask`, by the rules of [`ShflOp::Xor`].
pub fn shfl_xor_array<T: Element>(
    dev: &dyn Device,
    lane_mask: i32,
    width: u32,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    run(dev, ShflOp::Xor { lane_mask }, width, SEGM, input, output)
}

/// [`shfl`] on host data: uploads, runs, downloads.
pub fn shfl_host<T: Element>(
    dev: &dyn Device,
    op: ShflOp,
    width: u32,
    input: &[T],
) -> Result<Vec<T>> {
    host(dev, op, width, 1, input)
}

/// [`shfl_xor_array`] on host data.
pub fn shfl_xor_array_host<T: Element>(
    dev: &dyn Device,
    lane_mask: i32,
    width: u32,
    input: &[T],
) -> Result<Vec<T>> {
    host(dev, ShflOp::Xor { lane_mask }, width, SEGM, input)
}

fn host<T: Element>(
    dev: &dyn Device,
    op: ShflOp,
    width: u32,
    segm: usize,
    input: &[T],
) -> Result<Vec<T>> {
    validate(op, width, input.len(), input.len())?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    run(dev, op, width, segm, &src, &mut dst)?;
    dst.to_vec(dev)
}

fn validate(op: ShflOp, width: u32, input: usize, output: usize) -> Result<()> {
    op.validate()?;
    check_width(width)?;
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

fn run<T: Element>(
    dev: &dyn Device,
    op: ShflOp,
    width: u32,
    segm: usize,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    validate(op, width, input.len(), output.len())?;
    let info = dev.info();
    plan::require(
        info,
        // Shuffles only move bits: no 64-bit arithmetic is needed.
        ElemKind::U32,
        SubgroupFeatures::BASIC | SubgroupFeatures::SHUFFLE | SubgroupFeatures::SHUFFLE_RELATIVE,
    )?;
    let consts = [("OP", op.code()), ("SEGM", segm as u32), ("ROWS", ROWS)];
    let kernel = Kernel {
        name: "shfl",
        elem: T::KIND,
        consts: &consts,
    };
    // Chunks hold whole workgroups, so no warp spans two launches.
    let granule = plan::BLOCK as u64 * segm as u64;
    let chunk = plan::chunk_elems(info, T::KIND.size(), granule) as usize;
    for (start, n) in plan::chunks(chunk, input.len()) {
        let lanes = n.div_ceil(segm) as u64;
        let groups = plan::grid(info, lanes.div_ceil(u64::from(plan::BLOCK * ROWS)))?;
        let params = ShflParams {
            n: n as u32,
            arg: op.arg(),
            width,
            pad: 0,
        };
        dev.launch(&Launch {
            kernel,
            block: plan::BLOCK,
            groups,
            bindings: &[input.binding(start, n), output.binding(start, n)],
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}
