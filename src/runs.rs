//! What run-length encoding ([`crate::run_length`]), reduce-by-key ([`crate::reduce_by_key`])
//! and, for 64-bit keys on a device without 64-bit integers in kernels, unique
//! ([`crate::unique`]) share: runs of equal consecutive keys found in one
//! pass over the input, in tiles whose exclusive prefixes (the runs before them, and the value of
//! the run entering them) come from a decoupled look-back with a fallback that cannot deadlock.
//!
//! Keys of every element type are compared by their bits: `+0.0` and `-0.0` are different
//! keys, and a NaN equals only a NaN of the same payload. The shaders' header
//! (`shaders/runs.glsl`) describes the kernels in full.
//!
//! # Limits
//! At most [`plan::MAX_LAUNCH_ELEMS`] elements, and no more than one kernel binding spans.
//! Every check happens before anything is launched, so a refused call leaves its outputs
//! untouched.

use crate::device::{
    Binding, Device, DeviceVec, Kernel, Launch, EPOCH_BYTES, EPOCH_HEADER_BYTES, EPOCH_TILES,
};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use crate::kernels::RunsParams;
use crate::plan;
pub use crate::spec::runs::{items, tile, BLOCK};

/// Default [`Tuning::spin`].
pub const DEFAULT_SPIN: u32 = 1 << 12;

/// Knobs that change speed, never results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Polls of unpublished predecessor tiles per look-back before a tile computes them itself
    /// (one budget per look-back); 0 computes a predecessor at the first unpublished poll.
    pub spin: u32,
    /// Where reduce-by-key tags its tile states with epochs (see [`EPOCH_MAX_TILES`]): the
    /// epoch at which the device's epochs start again from 0, [`crate::scan::MIN_EPOCH_WRAP`]
    /// to [`crate::scan::EPOCH_WRAP`] (as [`crate::scan::Tuning::epoch_wrap`]: the device's
    /// epochs are shared); `None`: [`crate::scan::EPOCH_WRAP`]. Checked on every call.
    pub epoch_wrap: Option<u32>,
    /// Most tiles of a reduce-by-key call whose states are tagged with epochs, 0 to
    /// [`EPOCH_CAPACITY_TILES`] (0: never); `None`: [`EPOCH_MAX_TILES`]. Larger calls keep
    /// their states in the device's counters buffer (to [`SELF_CLEARING_MAX_TILES`]) or in a
    /// temporary zeroed by a clearing launch. Checked on every call.
    pub epoch_max_tiles: Option<usize>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            spin: DEFAULT_SPIN,
            epoch_wrap: None,
            epoch_max_tiles: None,
        }
    }
}

/// One call of a runs kernel: its name, variant and bindings (the values' and the values
/// output's bindings hold the keys where a mode has none).
pub(crate) struct RunsCall<'a> {
    pub kernel: &'static str,
    /// The values' type (`u32` for unique and run-length encoding).
    pub elem: ElemKind,
    pub key_bytes: usize,
    pub value_bytes: usize,
    /// Reduce-by-key's operator code.
    pub op: Option<u32>,
    /// The kernel that keeps the states of a launch of 2 to [`Tuning::epoch_max_tiles`] tiles in the
    /// device's epochs buffer ([`Device::epochs`]), tagged with the call's epoch, where the
    /// device offers it (`reduce_by_key_e64`).
    pub epochs: Option<&'static str>,
    pub n: usize,
    pub keys: Binding<'a>,
    pub values: Binding<'a>,
    pub keys_out: Binding<'a>,
    pub values_out: Binding<'a>,
    pub runs: Binding<'a>,
    pub tuning: Tuning,
}

/// Most tiles of a call whose work words lie in the device's counters buffer
/// ([`Device::counters`]): one launch, the last tile done zeroing them (the variant
/// `SELF_CLEARING`), no temporary and no clearing launch. 1024 tiles take 9220 words of the
/// buffer's 16384; the scans, whose last tile zeroes its states the same way, ran slower so
/// past 1024 tiles (NOTES.md, version 19), and so did these kernels at 2048 (version 51). The
/// CUDA backend stops at half as many tiles for 8-byte keys or values.
pub const SELF_CLEARING_MAX_TILES: usize = 1024;

/// Most tiles of a reduce-by-key call whose tile states lie in the device's epochs buffer
/// ([`Device::epochs`], Vulkan devices with 64-bit buffer atomics and subgroup ballots, 4-byte
/// values): four 64-bit states a tile (the aggregate's and the inclusive prefix's value and
/// heads), each tagged with the call's epoch, so that nothing counts the tiles done and nothing
/// is zeroed after the call. The default of [`Tuning::epoch_max_tiles`]: 2^23 elements of
/// 4-byte keys. H200 (NOTES.md, version 70): 0.85-0.91x the time of the counters' path at
/// 2^13-2^19, 0.94-0.98x at 2^20-2^23, but 1.02-1.07x at 2^24-2^26 for `f32` values.
pub const EPOCH_MAX_TILES: usize = 2048;

/// The most tiles whose states the device's epochs buffer holds: [`Tuning::epoch_max_tiles`]'s
/// bound.
pub const EPOCH_CAPACITY_TILES: usize = (EPOCH_TILES / 4) as usize;

/// [`RunsParams::clear`]: only zero the ticket, the flags and the run count.
const CLEAR_LAUNCH: u32 = 1;
/// [`RunsParams::clear`]: the tiles of a `SELF_CLEARING` variant.
const SELF_CLEARING_LAUNCH: u32 = 2;

/// Runs the tiles (none for an empty input): with their states tagged by epochs in the device's
/// epochs buffer where the call's kernel has that form ([`RunsCall::epochs`]) and they fit
/// ([`EPOCH_MAX_TILES`]); else with their work words in the device's counters buffer where they
/// fit ([`SELF_CLEARING_MAX_TILES`]); else in a temporary that a clearing launch zeroes first,
/// with the run count.
pub(crate) fn launch(dev: &dyn Device, call: &RunsCall<'_>) -> Result<()> {
    let info = dev.info();
    let epoch_wrap = crate::scan::epoch_wrap(call.tuning.epoch_wrap)?;
    let epoch_max_tiles = call.tuning.epoch_max_tiles.unwrap_or(EPOCH_MAX_TILES);
    if epoch_max_tiles > EPOCH_CAPACITY_TILES {
        return Err(Error::invalid(
            "epoch_max_tiles",
            epoch_max_tiles,
            format!("0..={EPOCH_CAPACITY_TILES}"),
        ));
    }
    let tiles = call.n.div_ceil(tile(call.key_bytes, call.value_bytes));
    let epochs = call
        .epochs
        .filter(|_| tiles > 1 && tiles <= epoch_max_tiles)
        .and_then(|name| Some((name, dev.epochs()?)));
    // The ticket counter, the tiles done (self-clearing) and a flag per tile (from word 4), then
    // four words of aggregate and four of inclusive prefix per tile (`w_aggregates` in the
    // kernels).
    let head = 4 + tiles.div_ceil(4) * 4;
    let words = head + 8 * tiles;
    let most = crate::tuning::runs_self_clearing_max_tiles(info, call.key_bytes, call.value_bytes);
    let shared = (epochs.is_none() && tiles > 0 && tiles <= most)
        .then(|| dev.counter_slot(4 * words as u64))
        .flatten();
    let fresh;
    let work = match (epochs, shared) {
        // The whole epochs buffer: its header (the ticket and the epoch, the place of the next
        // zeroing), then the states (the kernel's EPOCH_BASE).
        (Some((_, e)), _) => Binding {
            buffer: e,
            offset: 0,
            bytes: EPOCH_BYTES,
        },
        (None, Some(c)) => Binding {
            buffer: c,
            offset: 0,
            bytes: 4 * words as u64,
        },
        (None, None) => {
            fresh = DeviceVec::<u32>::alloc(dev, words)?;
            fresh.binding(0, words)
        }
    };
    let mut consts = vec![
        ("KEY_WORDS", (call.key_bytes / 4) as u32),
        ("ITEMS", items(call.key_bytes, call.value_bytes)),
        ("SELF_CLEARING", u32::from(shared.is_some())),
    ];
    if let Some(op) = call.op {
        consts.push(("OP", op));
    }
    // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs).
    if info.backend == crate::device::BackendKind::Cuda {
        consts.push(("BLOCK", BLOCK));
    }
    let kernel = Kernel {
        name: epochs.map_or(call.kernel, |(name, _)| name),
        elem: call.elem,
        consts: &consts,
    };
    let bindings = [
        call.keys,
        call.values,
        call.keys_out,
        call.values_out,
        call.runs,
        work,
    ];
    let mut params = RunsParams {
        n: call.n as u32,
        tiles: tiles as u32,
        spin: call.tuning.spin,
        clear: CLEAR_LAUNCH,
        epoch_wrap,
        epoch_tiles: EPOCH_TILES as u32,
    };
    if epochs.is_none() && shared.is_none() {
        dev.launch(&Launch {
            kernel,
            block: BLOCK,
            groups: plan::grid(info, (4 + tiles).div_ceil(BLOCK as usize) as u64)?,
            bindings: &bindings,
            params: bytemuck::bytes_of(&params),
        })?;
        if tiles == 0 {
            return Ok(());
        }
    }
    params.clear = if shared.is_some() {
        SELF_CLEARING_LAUNCH
    } else {
        0
    };
    dev.launch(&Launch {
        kernel,
        block: BLOCK,
        groups: plan::grid(info, tiles as u64)?,
        bindings: &bindings,
        params: bytemuck::bytes_of(&params),
    })
}

/// Fails unless `output` holds at least `n` elements.
pub(crate) fn check_output(name: &'static str, n: usize, output: usize) -> Result<()> {
    if output < n {
        return Err(Error::LengthMismatch {
            name,
            expected: n as u64,
            actual: output as u64,
        });
    }
    Ok(())
}

/// The checks every runs call makes on its keys and run count: the length limit and a count
/// slot.
pub(crate) fn check_common<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    num_runs: &DeviceVec<u64>,
) -> Result<()> {
    if num_runs.is_empty() {
        return Err(Error::LengthMismatch {
            name: "num_runs",
            expected: 1,
            actual: 0,
        });
    }
    plan::check_launch_len(dev.info(), "keys.len()", keys.len(), K::KIND.size())
}

// The runs kernels' block is the crate's common block.
const _: () = assert!(BLOCK == plan::BLOCK);
// reduce_by_key_e64's EPOCH_BASE: its states from 64-bit word 32 of the epochs buffer.
const _: () = assert!(EPOCH_HEADER_BYTES == 32 * 8);
