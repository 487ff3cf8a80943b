//! Subgroup-operation throughput: a register-only kernel that runs a long chain of dependent
//! subgroup (warp) operations per thread, for `xwarp bench` to count operations per second.
//!
//! Thread `t` starts from `v = (t * 0x9e3779b9) ^ seed` (32-bit wrapping arithmetic, `t` the
//! thread's index modulo 2^32), keeps `c` = that first value, and repeats `iters` times
//! `v = op(v) + c` on the *native* subgroup of the device, then writes `v` to `out[t]`:
//!
//! | [`ChainOp`] | Vulkan | CUDA |
//! |---|---|---|
//! | `Broadcast` | `subgroupShuffle(v, 1)` | `__shfl_sync(full, v, 1)` |
//! | `Up` | `subgroupShuffleUp(v, 1)`, lane 0 keeps `v` | `__shfl_up_sync(full, v, 1)` |
//! | `Down` | `subgroupShuffleDown(v, 1)`, last lane keeps `v` | `__shfl_down_sync(full, v, 1)` |
//! | `Xor` | `subgroupShuffleXor(v, 1)` | `__shfl_xor_sync(full, v, 1)` |
//! | `Ballot` | `subgroupBallot((v & 1) != 0).x` | `__ballot_sync(full, (v & 1) != 0)` |
//!
//! The addend `c` differs from lane to lane, so no compiler can replace a shuffle of a
//! subgroup-uniform value (as the broadcast makes it) by the value, and the chain cannot be
//! folded. The loop runs eight links per trip and touches no memory; the kernel stores once.
//!
//! Thread `t` is lane `t % s` of subgroup `t / s`, `s` the subgroup size: 32 on CUDA,
//! [`DeviceInfo::subgroup_size`](crate::DeviceInfo::subgroup_size) on Vulkan. The Vulkan
//! backend asks for full subgroups and pins that size where the device allows
//! ([`DeviceInfo::subgroup_size_pinned`](crate::DeviceInfo::subgroup_size_pinned)). Where it is
//! not pinned and the device's range (`min_subgroup_size..=max_subgroup_size`) holds more than
//! one size, the driver may pick another: the results (not the operation count) then differ
//! from [`crate::cpu::throughput::chain`] at `subgroup_size`, which is the size the results
//! are modelled at. Every thread of the grid (whole blocks of [`BLOCK`]) runs the chain so
//! that subgroups are whole; threads past `out.len()` do not store.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::throughput::{chain, ops, ChainOp};
//! use xwarp::DeviceVec;
//! let dev = xwarp::backend::open_default()?;
//! let (iters, seed) = (4096, 7);
//! let mut out = DeviceVec::<u32>::alloc(&*dev, 1 << 20)?;
//! let time = dev.time(&mut || chain(&*dev, ChainOp::Xor, iters, seed, &mut out))?;
//! let rate = ops(ChainOp::Xor, iters, out.len()) as f64 / time.as_secs_f64();
//! println!("{rate:.3e} shuffles/s");
//! let size = dev.info().subgroup_size;
//! let model = xwarp::cpu::throughput::chain(ChainOp::Xor, iters, seed, size, out.len());
//! assert_eq!(out.to_vec(&*dev)?, model);
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec, Kernel, Launch};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use crate::kernels::ChainParams;
use crate::plan;
pub use crate::spec::throughput::ChainOp;

/// Threads per workgroup (block).
pub const BLOCK: u32 = plan::BLOCK;

/// The operations [`chain`] executes for `threads` threads (`out.len()`): one per link per
/// thread that runs the chain, i.e. `iters` times `threads` rounded up to whole blocks of
/// [`BLOCK`] (the padding threads run the chain too). Lane operations: a 32-lane warp
/// instruction counts 32.
pub fn ops(op: ChainOp, iters: u32, threads: usize) -> u64 {
    let per_link = match op {
        ChainOp::Broadcast | ChainOp::Up | ChainOp::Down | ChainOp::Xor | ChainOp::Ballot => 1,
    };
    let launched = threads.div_ceil(BLOCK as usize) as u64 * BLOCK as u64;
    launched * iters as u64 * per_link
}

/// Runs the chain of `iters` links of `op` in one thread per element of `out` (any length
/// from 1), each thread writing its final value.
pub fn chain(
    dev: &dyn Device,
    op: ChainOp,
    iters: u32,
    seed: u32,
    out: &mut DeviceVec<u32>,
) -> Result<()> {
    if out.is_empty() {
        return Err(Error::EmptyInput { name: "out" });
    }
    let info = dev.info();
    plan::require(info, ElemKind::U32, op.features())?;
    let consts = [("OP", op.code())];
    let kernel = Kernel {
        name: "chain",
        elem: ElemKind::U32,
        consts: &consts,
    };
    // Chunks of whole blocks: no subgroup spans two launches.
    let chunk = plan::chunk_elems(info, 4, BLOCK as u64) as usize;
    for (start, n) in plan::chunks(chunk, out.len()) {
        let groups = plan::grid(info, n.div_ceil(BLOCK as usize) as u64)?;
        // The thread index is taken modulo 2^32, as the model says.
        let params = ChainParams {
            n: n as u32,
            iters,
            seed,
            first: start as u32,
        };
        dev.launch(&Launch {
            kernel,
            block: BLOCK,
            groups,
            bindings: &[out.binding(start, n)],
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}
