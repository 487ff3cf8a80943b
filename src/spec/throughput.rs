//! The throughput family's vocabulary: the subgroup operation a chain repeats.

use crate::device::SubgroupFeatures;
use std::fmt;

/// The subgroup (warp) operation a chain repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainOp {
    /// Read lane 1 of the subgroup: `subgroupShuffle(v, 1)` / `__shfl_sync(full, v, 1)`.
    Broadcast,
    /// Read the lane below; lane 0 keeps its value (`__shfl_up_sync(full, v, 1)`).
    Up,
    /// Read the lane above; the last lane keeps its value (`__shfl_down_sync(full, v, 1)`).
    Down,
    /// Read lane `lane ^ 1`: `subgroupShuffleXor(v, 1)` / `__shfl_xor_sync(full, v, 1)`.
    Xor,
    /// The ballot of `(v & 1) != 0`, its first 32 bits: `subgroupBallot(..).x` /
    /// `__ballot_sync(full, ..)`.
    Ballot,
}

impl ChainOp {
    /// Every operation, in a fixed order.
    pub const ALL: [ChainOp; 5] = [
        ChainOp::Broadcast,
        ChainOp::Up,
        ChainOp::Down,
        ChainOp::Xor,
        ChainOp::Ballot,
    ];

    /// The operation's code in `shaders/chain.comp` and `cuda/chain.cu`.
    pub fn code(self) -> u32 {
        match self {
            ChainOp::Broadcast => 0,
            ChainOp::Up => 1,
            ChainOp::Down => 2,
            ChainOp::Xor => 3,
            ChainOp::Ballot => 4,
        }
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            ChainOp::Broadcast => "broadcast",
            ChainOp::Up => "up",
            ChainOp::Down => "down",
            ChainOp::Xor => "xor",
            ChainOp::Ballot => "ballot",
        }
    }

    /// The subgroup operation classes the Vulkan kernel needs.
    pub(crate) fn features(self) -> SubgroupFeatures {
        SubgroupFeatures::BASIC
            | match self {
                ChainOp::Broadcast | ChainOp::Xor => SubgroupFeatures::SHUFFLE,
                ChainOp::Up | ChainOp::Down => SubgroupFeatures::SHUFFLE_RELATIVE,
                ChainOp::Ballot => SubgroupFeatures::BALLOT,
            }
    }
}

impl fmt::Display for ChainOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
