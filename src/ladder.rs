//! The reduction ladder: the block-reduction kernels of the parallel-reduction walkthrough of
//! *Professional CUDA C Programming* (chapter 3's `reduceInteger.cu`, chapter 5's
//! shared-memory and shuffle reduces), each its own kernel on both backends, as a teaching and
//! benchmarking set: `shaders/reduce_<rung>.comp` (Vulkan subgroups) and
//! `cuda/reduce_<rung>.cu` (CUDA warps), modelled by [`crate::cpu::ladder`].
//!
//! Every rung writes one partial sum per block; [`reduce`] then finishes on the GPU with
//! [`crate::reduce::device_reduce`] over the partials (no host sum). Sums are integer sums
//! (`i32`, `u32`, `i64`, `u64`) that wrap on overflow, so Vulkan, CUDA and the CPU agree bit
//! for bit whatever the tree.
//!
//! # What differs from the book
//! - The caller's input is never modified. The chapter-3 rungs (neighbored through complete
//!   unroll) work in place on global memory as in the book, but on a **scratch copy the layer
//!   allocates** (one element per thread of every block): each block first writes its starting
//!   values there (one element, or the sum of its 2/4/8 data blocks for the unrolled rungs) and
//!   runs its tree on it. [`LadderKernel::Smem`] and [`LadderKernel::Shfl`] copy into shared
//!   memory / registers and need no scratch.
//! - Any length works: every load is guarded (zeros past the end), so lengths that are not
//!   multiples of the block, and the ragged tail of the unrolled rungs, are summed exactly.
//! - The block size is a run-time parameter of every rung (64, 128, 256, 512 or 1024 threads,
//!   within the device's limits); [`LadderKernel::CompleteUnroll`] is built per block size
//!   (a specialization constant on Vulkan, `-DIBLOCK` on CUDA), selected by a match.
//! - The unrolled last warp: the CUDA twins put `__syncwarp()` between each step's read and
//!   write (the book's `volatile`-only version races on Volta and later); the Vulkan twins are
//!   correct on every subgroup size, taking workgroup barriers for the steps whose stride
//!   reaches the subgroup size and subgroup barriers below it (see `shaders/ladder_common.glsl`).

use crate::cpu::ladder::LadderElem;
use crate::device::{Device, DeviceInfo, DeviceVec, Kernel, Launch};
use crate::error::{Error, Result};
use crate::kernels::ReduceParams;
use crate::plan;
use crate::reduce::{device_reduce, ReduceOp};
pub use crate::spec::ladder::LadderKernel;

/// The block sizes every rung accepts (where the device allows them).
pub const BLOCKS: [u32; 5] = [64, 128, 256, 512, 1024];

/// Checks that `kernel` can run with `block` threads per block on the device `info`
/// describes: 64, 128, 256, 512 or 1024, a multiple of the subgroup size, with the rung's
/// shared memory within the device's. (The backend's launch also refuses a block above the
/// device's workgroup-size limit, with the same typed error.)
pub fn check_block<T: LadderElem>(
    info: &DeviceInfo,
    kernel: LadderKernel,
    block: u32,
) -> Result<()> {
    // Where Vulkan pipelines ask for full subgroups, the workgroup must hold whole subgroups of
    // the largest size the device may pick.
    let sg = if info.subgroup_size_pinned {
        info.max_subgroup_size.max(info.subgroup_size)
    } else {
        info.subgroup_size
    }
    .max(1);
    let shared = match kernel {
        LadderKernel::Smem => block as u64 * T::KIND.size() as u64,
        // Vulkan: a staging array (block elements) and one sum per 32-lane warp.
        LadderKernel::Shfl => (block as u64 + block as u64 / 32) * T::KIND.size() as u64,
        _ => 0,
    };
    if !BLOCKS.contains(&block)
        || !block.is_multiple_of(sg)
        || shared > info.shared_memory_bytes as u64
    {
        return Err(Error::invalid(
            "block",
            block,
            format!(
                "64, 128, 256, 512 or 1024 threads for {kernel}, a multiple of the subgroup size \
                 {sg} of `{}`, with {shared} bytes of shared memory within its {}",
                info.name, info.shared_memory_bytes
            ),
        ));
    }
    Ok(())
}

/// The block sizes of [`BLOCKS`] that `kernel` accepts on the device `info` describes.
pub fn blocks<T: LadderElem>(info: &DeviceInfo, kernel: LadderKernel) -> Vec<u32> {
    BLOCKS
        .into_iter()
        .filter(|&b| check_block::<T>(info, kernel, b).is_ok())
        .collect()
}

fn check_args<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &DeviceVec<T>,
) -> Result<()> {
    plan::require(dev.info(), T::KIND, kernel.subgroup_ops())?;
    check_block::<T>(dev.info(), kernel, block)?;
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    Ok(())
}

/// The variant constants of `kernel` at `block` threads (one of [`BLOCKS`], checked before):
/// `IBLOCK` for the complete unroll (Vulkan specialization constant 1, CUDA `-DIBLOCK`), none
/// for the others.
fn consts(kernel: LadderKernel, block: u32) -> &'static [(&'static str, u32)] {
    if kernel != LadderKernel::CompleteUnroll {
        return &[];
    }
    // The book's switch over the template argument.
    match block {
        64 => &[("IBLOCK", 64)],
        128 => &[("IBLOCK", 128)],
        256 => &[("IBLOCK", 256)],
        512 => &[("IBLOCK", 512)],
        // 1024, the only other size check_block admits.
        _ => &[("IBLOCK", 1024)],
    }
}

/// Runs `kernel` over all of `input`, one partial per block into `partials`, in launches of
/// whole tiles that fit the device's binding limits.
fn run_blocks<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &DeviceVec<T>,
    partials: &DeviceVec<T>,
) -> Result<()> {
    let tile = kernel.tile(block);
    let chunk = plan::chunk_elems(dev.info(), T::KIND.size(), tile as u64) as usize;
    let scratch = if kernel.uses_scratch() {
        let elems = input.len().min(chunk).div_ceil(tile) * block as usize;
        Some(DeviceVec::<T>::alloc(dev, elems)?)
    } else {
        None
    };
    for (start, n) in plan::chunks(chunk, input.len()) {
        let groups = n.div_ceil(tile);
        let (out_base, dst_index) = plan::aligned_output(dev.info(), T::KIND.size(), start / tile);
        let params = ReduceParams {
            n: n as u32,
            groups: groups as u32,
            dst_index: dst_index as u32,
        };
        let src = input.binding(start, n);
        let dst = partials.binding(out_base, dst_index + groups);
        let with_scratch;
        let bindings: &[_] = match &scratch {
            Some(work) => {
                with_scratch = [src, work.binding(0, groups * block as usize), dst];
                &with_scratch
            }
            None => &[src, dst],
        };
        dev.launch(&Launch {
            kernel: Kernel {
                name: kernel.name(),
                elem: T::KIND,
                consts: consts(kernel, block),
            },
            block,
            groups: plan::grid(dev.info(), groups as u64)?,
            bindings,
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}

/// Runs `kernel` with `block` threads per block over `input`, writing each block's partial sum
/// into `output` (`output.len()` must be [`LadderKernel::partials`]`(block, input.len())`):
/// block `b` sums elements `b * tile .. (b + 1) * tile` with `tile = block * kernel.items()`.
/// `input` is never modified; the chapter-3 rungs work on a scratch copy this call allocates.
pub fn block_sums<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    check_args(dev, kernel, block, input)?;
    let expected = kernel.partials(block, input.len());
    if output.len() != expected {
        return Err(Error::LengthMismatch {
            name: "output",
            expected: expected as u64,
            actual: output.len() as u64,
        });
    }
    run_blocks(dev, kernel, block, input, output)
}

/// Sums `input` (wrapping) with `kernel` at `block` threads per block into `output[0]`, on the
/// GPU: the rung writes one partial per block into device memory this call allocates, and
/// [`device_reduce`] sums the partials. `input` is never modified; `output` needs at least one
/// element (the others are left alone).
pub fn reduce<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    check_args(dev, kernel, block, input)?;
    let mut partials = DeviceVec::<T>::alloc(dev, kernel.partials(block, input.len()))?;
    reduce_with_partials(dev, kernel, block, input, &mut partials, output)
}

/// [`reduce`] keeping the per-block partials in the caller's `partials` (as [`block_sums`]
/// writes them): one pass of the rung, then [`device_reduce`] of `partials` into `output[0]`.
pub fn reduce_with_partials<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &DeviceVec<T>,
    partials: &mut DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    check_args(dev, kernel, block, input)?;
    if output.is_empty() {
        return Err(Error::invalid(
            "output",
            "0 elements",
            "at least 1 element (index 0 gets the sum)",
        ));
    }
    block_sums(dev, kernel, block, input, partials)?;
    device_reduce(dev, ReduceOp::Sum, partials, output, 0)
}

/// [`block_sums`] of host data, returning the partials.
pub fn block_sums_host<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &[T],
) -> Result<Vec<T>> {
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    check_block::<T>(dev.info(), kernel, block)?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut out = DeviceVec::alloc(dev, kernel.partials(block, input.len()))?;
    block_sums(dev, kernel, block, &src, &mut out)?;
    out.to_vec(dev)
}

/// [`reduce`] of host data, returning the sum.
pub fn reduce_host<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    input: &[T],
) -> Result<T> {
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    check_block::<T>(dev.info(), kernel, block)?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut out = DeviceVec::alloc(dev, 1)?;
    reduce(dev, kernel, block, &src, &mut out)?;
    Ok(out.to_vec(dev)?[0])
}
