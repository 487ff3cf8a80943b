//! The reduction ladder's rungs.

use crate::device::SubgroupFeatures;
use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// One rung of the ladder; [`LadderKernel::name`] is the kernel's file stem in `shaders/` and
/// `cuda/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LadderKernel {
    /// `reduceNeighbored`: neighbored pairs, `if ((tid % (2 * stride)) == 0)`.
    Neighbored,
    /// `reduceNeighboredLess`: neighbored pairs with less divergence, `index = 2 * stride * tid`.
    NeighboredLess,
    /// `reduceInterleaved`: interleaved pairs, the stride halving from half the block.
    Interleaved,
    /// `reduceUnrolling2`: each block first sums 2 data blocks, then the interleaved tree.
    Unrolling2,
    /// `reduceUnrolling4`: each block first sums 4 data blocks.
    Unrolling4,
    /// `reduceUnrolling8`: each block first sums 8 data blocks.
    Unrolling8,
    /// `reduceUnrollWarps8`: unrolling 8 with the last warp unrolled.
    UnrollWarps8,
    /// `reduceCompleteUnrollWarps8`: unrolling 8, the tree completely unrolled, the last warp
    /// unrolled.
    CompleteUnrollWarps8,
    /// `reduceCompleteUnroll<iBlockSize>`: as [`LadderKernel::CompleteUnrollWarps8`] with the
    /// block size a compile-time parameter.
    CompleteUnroll,
    /// `reduceSmem` (chapter 5): complete unroll in shared memory, one element per thread.
    Smem,
    /// `reduceShfl` (chapter 5): warp shuffle reduce, warp sums in shared memory, the first warp
    /// sums them; one element per thread.
    Shfl,
}

impl LadderKernel {
    /// Every rung, in the book's order.
    pub const ALL: [LadderKernel; 11] = [
        LadderKernel::Neighbored,
        LadderKernel::NeighboredLess,
        LadderKernel::Interleaved,
        LadderKernel::Unrolling2,
        LadderKernel::Unrolling4,
        LadderKernel::Unrolling8,
        LadderKernel::UnrollWarps8,
        LadderKernel::CompleteUnrollWarps8,
        LadderKernel::CompleteUnroll,
        LadderKernel::Smem,
        LadderKernel::Shfl,
    ];

    /// The kernel's name: its file stem in `shaders/` and `cuda/` and its entry point.
    pub fn name(self) -> &'static str {
        match self {
            LadderKernel::Neighbored => "reduce_neighbored",
            LadderKernel::NeighboredLess => "reduce_neighbored_less",
            LadderKernel::Interleaved => "reduce_interleaved",
            LadderKernel::Unrolling2 => "reduce_unrolling2",
            LadderKernel::Unrolling4 => "reduce_unrolling4",
            LadderKernel::Unrolling8 => "reduce_unrolling8",
            LadderKernel::UnrollWarps8 => "reduce_unroll_warps8",
            LadderKernel::CompleteUnrollWarps8 => "reduce_complete_unroll_warps8",
            LadderKernel::CompleteUnroll => "reduce_complete_unroll",
            LadderKernel::Smem => "reduce_smem",
            LadderKernel::Shfl => "reduce_shfl",
        }
    }

    /// The kernel's name in the book.
    pub fn book_name(self) -> &'static str {
        match self {
            LadderKernel::Neighbored => "reduceNeighbored",
            LadderKernel::NeighboredLess => "reduceNeighboredLess",
            LadderKernel::Interleaved => "reduceInterleaved",
            LadderKernel::Unrolling2 => "reduceUnrolling2",
            LadderKernel::Unrolling4 => "reduceUnrolling4",
            LadderKernel::Unrolling8 => "reduceUnrolling8",
            LadderKernel::UnrollWarps8 => "reduceUnrollWarps8",
            LadderKernel::CompleteUnrollWarps8 => "reduceCompleteUnrollWarps8",
            LadderKernel::CompleteUnroll => "reduceCompleteUnroll",
            LadderKernel::Smem => "reduceSmem",
            LadderKernel::Shfl => "reduceShfl",
        }
    }

    /// Data blocks each block sums before its tree: 1, or 2/4/8 for the unrolled rungs.
    pub fn items(self) -> usize {
        match self {
            LadderKernel::Unrolling2 => 2,
            LadderKernel::Unrolling4 => 4,
            LadderKernel::Unrolling8
            | LadderKernel::UnrollWarps8
            | LadderKernel::CompleteUnrollWarps8
            | LadderKernel::CompleteUnroll => 8,
            _ => 1,
        }
    }

    /// Elements one block of `block` threads reduces to one partial: `block * items()`.
    pub fn tile(self, block: u32) -> usize {
        block as usize * self.items()
    }

    /// Whether the rung works in place on a scratch copy in device memory (the chapter-3
    /// rungs) rather than in shared memory.
    pub fn uses_scratch(self) -> bool {
        !matches!(self, LadderKernel::Smem | LadderKernel::Shfl)
    }

    /// Subgroup operation classes the Vulkan twin needs.
    pub fn subgroup_ops(self) -> SubgroupFeatures {
        match self {
            LadderKernel::Shfl => SubgroupFeatures::BASIC | SubgroupFeatures::SHUFFLE,
            _ => SubgroupFeatures::BASIC,
        }
    }

    /// Number of per-block partials for `n` elements at `block` threads.
    pub fn partials(self, block: u32, n: usize) -> usize {
        n.div_ceil(self.tile(block))
    }
}

impl fmt::Display for LadderKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LadderKernel {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        LadderKernel::ALL
            .into_iter()
            .find(|k| k.name() == s || k.book_name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = LadderKernel::ALL.iter().map(|k| k.name()).collect();
                Error::invalid("kernel", s, names.join(", "))
            })
    }
}
