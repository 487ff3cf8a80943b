//! # xwarp
//!
//! CUDA's warp-level algorithms on every GPU vendor: the same kernels as GLSL compute shaders
//! on Vulkan subgroup operations and as CUDA kernels on warp intrinsics, behind one trait
//! ([`Device`]), with a CPU reference ([`cpu`]) that models CUDA's semantics exactly.
//!
//! - [`backend`]: open a device (`auto`: CUDA on an NVIDIA GPU, else the best Vulkan device).
//! - [`shfl`]: the shuffle family with CUDA semantics on any subgroup size.
//! - [`vote`]: ballot, any, all, active mask, popcount, find-first-set per 32-lane warp.
//! - [`compact`]: stream compaction by predicate in one pass, warp- and tile-aggregated
//!   (unordered) or stable (decoupled look-back).
//! - [`partition`]: stable two-way partition by predicate (both parts in input order).
//! - [`reduce`]: warp, block and device reductions with a canonical float order.
//! - [`unique`], [`run_length`], [`reduce_by_key`]: runs of equal consecutive keys (compared
//!   by bits) in one pass: their first keys, their lengths, their values reduced in a
//!   canonical float order ([`runs`]).
//! - [`histogram`]: even-bin histograms of every sample type, warp-aggregated counting.
//! - [`ladder`]: the block-reduction ladder of the parallel-reduction walkthrough.
//! - [`segmented_reduce`]: one reduction per segment given by offsets, in the device reduce's
//!   canonical order.
//! - [`scan`]: warp, block and single-pass device scans with a canonical float order.
//! - [`stencil`]: the 5-point moving average with shuffles or shared memory.
//! - [`group`]: reduce, scan and sort of a vector sharded over several devices (the GPUs of a
//!   host through NCCL, or any devices in process).
//! - [`roofline`]: copy and read-only kernels at the speed of the device's memory.
//! - [`throughput`]: chains of dependent subgroup operations, for operations per second.
//! - [`top_k`]: the k largest or smallest keys (with values or indices), sorted, ties by index.
//! - [`device`]: the trait and the types that cross it, for algorithm and backend writers.
//! - [`kernels`]: every kernel's interface (constants by name, parameter blocks), defined once.
//!
//! # Using your own Vulkan device or CUDA context
//!
//! [`vulkan::VulkanDevice::from_external`] runs xwarp on an application's instance, device and
//! queue, and [`vulkan::VulkanDevice::wrap_buffer`] on ranges of its own `vk::Buffer`s;
//! [`cuda::CudaDevice::from_external`] on its cudarc context and stream, and
//! [`cuda::CudaDevice::wrap_slice`] on its `CudaSlice`s. Nothing is copied and nothing the
//! application owns is destroyed. The module docs of [`vulkan`] and [`cuda`] state what must be
//! enabled, who may use the queue when, and the synchronisation contract; `examples/` holds
//! programs to start from.

// Without a backend only the CPU reference and the types remain; the backends' shared helpers
// are then unused.
#![cfg_attr(not(any(feature = "vulkan", feature = "cuda")), allow(dead_code))]
// The crate docs link both backends; with one left out its links have no target.
#![cfg_attr(
    not(all(feature = "vulkan", feature = "cuda")),
    allow(rustdoc::broken_intra_doc_links)
)]

pub mod backend;
mod backend_kind;
pub mod compact;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod device;
pub mod element;
pub mod error;
pub mod group;
pub mod histogram;
pub mod kernels;
pub mod ladder;
pub mod partition;
pub mod plan;
pub mod reduce;
pub mod reduce_by_key;
pub mod roofline;
pub mod run_length;
pub mod runs;
pub mod scan;
pub mod segmented_reduce;
pub mod shfl;
pub mod sort;
pub mod spec;
pub mod stencil;
pub mod throughput;
pub mod top_k;
mod tuning;
pub mod unique;
pub mod vote;
#[cfg(feature = "vulkan")]
pub mod vulkan;

pub use device::{
    BackendKind, Device, DeviceInfo, DeviceVec, KernelStats, Recording, Subnormals, Ticket,
};
pub use element::{ElemKind, Element, HardValues, Rng};
pub use error::{Error, Result};
