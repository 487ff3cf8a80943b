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
use std::fmt;

/// Layers of [`plan::BLOCK`] logical threads each workgroup handles, every load issued before the
/// first shuffle (memory-level parallelism; the results do not depend on it).
pub const ROWS: u32 = 4;

/// Values each lane holds in the register-array exchange ([`shfl_xor_array`]).
pub const SEGM: usize = 4;

/// One shuffle and its lane argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflOp {
    /// `__shfl_sync(v, src_lane, width)`: every lane reads lane `src_lane mod width` of its
    /// segment. `src_lane` ≥ 0 (CUDA defines no rule for negative lanes).
    Broadcast {
        /// Source lane.
        src_lane: i32,
    },
    /// `__shfl_up_sync(v, delta, width)`: lane reads `lane - delta`, or keeps its value.
    /// `delta` in 0..=31.
    Up {
        /// Shift distance.
        delta: i32,
    },
    /// `__shfl_down_sync(v, delta, width)`: lane reads `lane + delta`, or keeps its value.
    /// `delta` in 0..=31.
    Down {
        /// Shift distance.
        delta: i32,
    },
    /// `__shfl_sync(v, lane + offset, width)`: a rotation within each segment. `offset` in
    /// -31..=31.
    Wrap {
        /// Signed rotation distance.
        offset: i32,
    },
    /// `__shfl_xor_sync(v, lane_mask, width)`: the butterfly. `lane_mask` in 0..=31.
    Xor {
        /// Lane mask.
        lane_mask: i32,
    },
}

impl ShflOp {
    /// The operation's code in `shaders/shfl.comp` and `cuda/shfl.cu`.
    pub fn code(self) -> u32 {
        match self {
            ShflOp::Broadcast { .. } => 0,
            ShflOp::Up { .. } => 1,
            ShflOp::Down { .. } => 2,
            ShflOp::Wrap { .. } => 3,
            ShflOp::Xor { .. } => 4,
        }
    }

    /// The lane argument.
    pub fn arg(self) -> i32 {
        match self {
            ShflOp::Broadcast { src_lane: a }
            | ShflOp::Up { delta: a }
            | ShflOp::Down { delta: a }
            | ShflOp::Wrap { offset: a }
            | ShflOp::Xor { lane_mask: a } => a,
        }
    }

    /// Checks the argument against the range CUDA defines.
    pub fn validate(self) -> Result<()> {
        let (name, ok, allowed) = match self {
            ShflOp::Broadcast { src_lane } => (
                "src_lane",
                src_lane >= 0,
                "0..=2147483647 (taken modulo width)",
            ),
            ShflOp::Up { delta } | ShflOp::Down { delta } => {
                ("delta", (0..=31).contains(&delta), "0..=31")
            }
            ShflOp::Wrap { offset } => ("offset", (-31..=31).contains(&offset), "-31..=31"),
            ShflOp::Xor { lane_mask } => ("lane_mask", (0..=31).contains(&lane_mask), "0..=31"),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::invalid(name, self.arg(), allowed))
        }
    }
}

impl fmt::Display for ShflOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShflOp::Broadcast { src_lane } => write!(f, "broadcast src_lane={src_lane}"),
            ShflOp::Up { delta } => write!(f, "up delta={delta}"),
            ShflOp::Down { delta } => write!(f, "down delta={delta}"),
            ShflOp::Wrap { offset } => write!(f, "wrap offset={offset}"),
            ShflOp::Xor { lane_mask } => write!(f, "xor lane_mask={lane_mask}"),
        }
    }
}

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
