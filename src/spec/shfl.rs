//! The shuffle family's vocabulary: CUDA's shuffle operations with their lane arguments.

use crate::error::{Error, Result};
use std::fmt;

/// Values each lane holds in the register-array exchange ([`crate::shfl::shfl_xor_array`]).
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
