//! The backends' names, at the bottom of the crate so that errors can name a backend.

use std::fmt;

/// Which implementation of [`Device`](crate::Device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// Vulkan compute with subgroup operations.
    Vulkan,
    /// CUDA with warp intrinsics, kernels compiled by NVRTC.
    Cuda,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Vulkan => "vulkan",
            BackendKind::Cuda => "cuda",
        })
    }
}
