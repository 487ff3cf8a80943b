//! Prefix scans — inclusive and exclusive, for sum, min and max over every element type: warp
//! scan (each 32-lane logical warp, Kogge-Stone with shift-up shuffles, CUDA's semantics on any
//! subgroup size), block scan (each block of [`BLOCK`] elements) and device scan of any length.
//!
//! # The device scan
//! Single pass: each workgroup scans a tile of [`TILE`] = 4096 elements (256 threads × 16
//! consecutive elements; 32-bit types move through shared memory so that global loads and
//! stores are coalesced) and gets the tile's exclusive prefix by decoupled look-back over the
//! tiles before it, which publish their totals and inclusive prefixes as they go. Integer scans,
//! whose operators are associative, may take tiles of 256 × 32 = 8192 instead (the device and
//! the length choose, [`Tuning::items`] overrides; the bits are the same). The look-back
//! reads the state of 256 predecessors at once (one per invocation, meeting in shared memory,
//! so no subgroup operation and no subgroup size is involved) and so usually finds an
//! inclusive prefix in its first window. 32-bit types keep each tile's flag and value together
//! (one 64-bit word on CUDA; on Vulkan two 32-bit words, each with the flag and half the value,
//! so that no 64-bit atomics are needed), so the poll brings the values along and the usual
//! look-back is one round trip. Vulkan promises no forward progress between workgroups, so a
//! tile that waits too long for its predecessors reduces the unpublished ones
//! itself: it cannot deadlock on any conformant device. [`Tuning::spin`] sets how long it
//! waits; 0 always takes the fallback.
//!
//! # Tile states without a clearing launch
//! A scan of one launch of 4-byte elements, in at most [`EPOCH_TILES`] tiles (2^28 `f32`),
//! keeps its tile states in the device's epochs buffer ([`Device::epochs`]) where the kernel
//! holds a tile's state in one 64-bit word (CUDA; Vulkan devices with 64-bit buffer atomics):
//! each state carries the epoch of the call that published it, so a state an earlier call left
//! reads as unpublished and nothing is zeroed before or after a call; the tile that takes the
//! last number advances the epoch and zeroes [`EPOCH_SCRUB`] states past the call's own tiles,
//! in turn, so that no state still carries a tag when it comes back ([`MIN_EPOCH_WRAP`]). Other
//! scans of one launch of at most 1024 tiles (CUDA; 512 on Vulkan) keep their states in the
//! device's counters buffer ([`Device::counters`]), zero before they start, and the tile that
//! finishes last zeroes them again. Larger ones, and scans of several launches, get fresh
//! memory whose flags a small kernel zeroes ahead of the scan. No path uploads anything from
//! the host. H200 (NOTES.md version 52): the epochs took 0.84–0.99× the time of those paths
//! for 4-byte scans of 2^12 to 2^24 elements on both backends (CUDA `i32` at 2^20 1.02×),
//! 0.98–1.02× from 2^26.
//!
//! # Gated `f32` sums
//! Where the driver flushes `f32` subnormals and the kernels keep them
//! ([`crate::device::Subnormals::Emulated`]), an `f32` sum scan of one launch with its states
//! in the epochs buffer and its tile in registers runs gated from [`GATED_FROM`] elements
//! ([`Tuning::gated`]): a kernel in the driver's arithmetic that also tests every input, then
//! the exact kernel as a launch whose workgroup counts the first one sets
//! ([`Device::launch_then_indirect`]), to none unless an input is a nonzero magnitude below
//! 2^-103 (every sum of the others is the driver's exact one). Where one is, the exact launch
//! scans the whole input again under the next epoch: the call takes about both kernels' time.
//! The same bits either way. H200 (NOTES.md version 56): 0.87–0.95× the exact kernel's time at
//! 2^25–2^28, 1.03× at 2^24 (the empty launch and its barrier cost 4.0 µs).
//!
//! # Deterministic floats
//! The association order depends only on `n`, never on the subgroup size or on what the
//! look-back happened to find, so float scans are bit-identical on CUDA, on Vulkan at every
//! subgroup size, and in the CPU reference ([`crate::cpu::scan`]). README's "Deterministic
//! floats" has the same text; `tests/float_orders.rs` checks a transcription of it against the
//! reference. Operators and identities `id` are those of [`crate::reduce`] (-0.0 for float
//! sums; min and max ignore NaN, and of two NaNs keep the right one); `op(a, b)` always has the
//! earlier operand on the left.
//!
//! - Warp scan, in warps of 32 consecutive elements (missing lanes of a partial last warp hold
//!   `id` and reach no lower lane). Kogge-Stone: for `d` = 1, 2, 4, 8, 16,
//!   `v[l] = op(v[l - d], v[l])` for `l ≥ d` (every step reads the values from before it);
//!   lanes `l < d` keep theirs. Inclusive: `y[l] = v[l]`; exclusive: `y[0] = id`,
//!   `y[l] = v[l - 1]`.
//! - Block scan, in blocks of [`BLOCK`] = 256 consecutive elements (padded with `id`), thread
//!   `t = 32w + l` holding `x[t]` (indices within the block):
//!   1. warp `w` is scanned inclusively as above, `v_w[l]`; its exclusive value is
//!      `e_w[0] = id`, `e_w[l] = v_w[l - 1]`;
//!   2. `WP[0] = id`, `WP[w + 1] = op(WP[w], v_w[31])`;
//!   3. `TP[t] = op(WP[w], e_w[l])`;
//!   4. exclusive `y[t] = TP[t]`, inclusive `y[t] = op(TP[t], x[t])` (not `op(WP[w], v_w[l])`).
//! - Device scan, in tiles of [`TILE`] = 4096 consecutive elements (a partial last tile padded
//!   with `id`, which reaches no output). In tile `k`, thread `t` = 0 … 255 owns the [`ITEMS`] =
//!   16 consecutive elements `x[16t + j]` (indices within the tile) and folds them in order
//!   from `id`: `s_t[j] = op(s_t[j - 1], x[16t + j])`, `s_t[-1] = id`. The thread totals
//!   `s_t[15]` go through steps 1 to 3 above, giving `TP[t]` and the tile's total
//!   `A(k) = WP[8]`. The tile's exclusive prefix is the left fold `E(0) = id`,
//!   `E(k + 1) = op(E(k), A(k))`. With
//!   `P = op(E(k), TP[t])` = `op(E(k), op(WP[w], e_w[l]))`: inclusive
//!   `y[16t + j] = op(P, s_t[j])`; exclusive `y[16t] = P`, `y[16t + j] = op(P, s_t[j - 1])`.
//!
//! In place ([`device_scan_in_place`]) goes through a temporary buffer, because the fallback
//! may read a predecessor's input after that predecessor would have overwritten it.

use crate::cpu::reduce::Reduce;
use crate::device::{
    BackendKind, Binding, Device, DeviceVec, Kernel, Launch, RawBuffer, SubgroupFeatures,
    EPOCH_HEADER_BYTES, EPOCH_TILES,
};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use crate::kernels::{ScanDeviceParams, ScanParams};
use crate::plan;
use crate::reduce::ReduceOp;
pub use crate::spec::scan::{ScanKind, BLOCK, ITEMS, TILE};

/// Tiles each thread of the look-back reads at once by default (a window of `BLOCK *
/// LOOKBACK_TILES` predecessors; not part of the order). The default depends on the device and the length.
pub const LOOKBACK_TILES: u32 = 1;
/// The values [`Tuning::near_depth`] accepts.
pub const NEAR_DEPTHS: [u32; 2] = [1, 4];

/// The most look-back tiles per thread [`Tuning::lookback_tiles`] accepts.
pub const MAX_LOOKBACK_TILES: u32 = 4;
/// Scans of at most this many tiles look back over 2 tiles per thread on Vulkan.
pub const WIDE_WINDOW_MAX_TILES: usize = 2048;

/// [`ScanDeviceParams::clear`]: only zero the tile states and counters (the clearing launch).
const CLEAR_LAUNCH: u32 = 1;
/// [`ScanDeviceParams::clear`]: the states lie in the device's counters buffer; the tile that
/// finishes last zeroes them and the two counters.
const SELF_CLEARING: u32 = 2;
/// [`ScanDeviceParams::clear`]: the states lie in the device's epochs buffer
/// ([`Device::epochs`]), tagged with the call's epoch; the tile that takes the last number
/// advances the epoch and zeroes [`EPOCH_SCRUB`] states the call does not use.
const EPOCHS: u32 = 3;
/// The default [`Tuning::epoch_wrap`]: the epochs a state's 30-bit tag tells apart.
pub const EPOCH_WRAP: u32 = 1 << 30;
/// The states of the device's epochs buffer each call zeroes (beyond its own tiles, in turn):
/// every state is zeroed or written again at least once in every [`EPOCH_TILES`] /
/// `EPOCH_SCRUB` calls.
pub const EPOCH_SCRUB: u32 = 1024;
/// The least [`Tuning::epoch_wrap`]: more epochs than calls between two zeroings of a state, so
/// a state never carries the tag of a later call.
pub const MIN_EPOCH_WRAP: u32 = (EPOCH_TILES / EPOCH_SCRUB as u64) as u32 + 1;

/// Bytes of the epochs buffer's header a scan binds as its counters: the tile counter and the
/// epoch, the next zeroing's place, and from [`GATE_ARGS_OFFSET`] a gated call's workgroup
/// counts.
const EPOCH_COUNTER_BYTES: u64 = 32;
/// Where in the epochs buffer's header a gated call's exact launch finds its workgroup counts
/// (x, y, z; `shaders/scan_device.glsl`, `GATE_ARGS`).
const GATE_ARGS_OFFSET: u64 = 16;
/// The gate of a gated call ([`Tuning::gated`]).
const GATE_KERNEL: &str = "scan_device_gate";

/// Default polls of a look-back window with unpublished predecessors before a tile reduces
/// them itself.
pub const DEFAULT_SPIN: u32 = 1 << 14;

/// Device-scan knobs that change speed, never results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Polls of a look-back window with unpublished predecessors before a tile reduces them
    /// itself.
    pub spin: u32,
    /// Plan as if one launch could span at most this many elements (a multiple of the tile,
    /// [`BLOCK`] × the elements per thread: [`TILE`] unless [`Tuning::items`] says otherwise;
    /// where the device would choose a larger integer tile that the limit does not divide, the
    /// scan takes [`TILE`]); `None`: the device's binding limit. Small values force many
    /// launches.
    pub max_launch_elems: Option<usize>,
    /// Tiles each thread of the look-back reads at once, 1 to [`MAX_LOOKBACK_TILES`]; `None`:
    /// the device and the length choose.
    pub lookback_tiles: Option<u32>,
    /// Elements per thread of a device-scan tile of integers, 1 to [`MAX_ITEMS`] as far as the
    /// device holds the tile ([`max_items`], [`REGISTER_TILE_FROM`]; 8-byte integers: 1 to
    /// [`ITEMS`]); `None`: the device and the length choose. Integer operators are
    /// associative, so every tile gives the same bits; a float scan's tile is part of its
    /// documented order and stays [`ITEMS`] (any other value is refused).
    pub items: Option<u32>,
    /// Whether the tile lives in registers, moved by 16-byte loads and stores (`Some(true)`),
    /// or is staged in shared memory (`Some(false)`); `None`: the device, the operator and the
    /// length choose ([`REGISTER_TILE_FROM`], [`FLOAT_REGISTER_TILE`]). The register tile takes 4-byte
    /// integers at a multiple of 4 elements per thread and `f32`, on CUDA and on Vulkan devices
    /// with 64-bit buffer atomics and the subgroup arithmetic operations; `Some(true)`
    /// elsewhere is refused. Both give the same bits.
    pub registers: Option<bool>,
    /// Predecessors each lane of the CUDA twin's near look-back polls at once for 4-byte
    /// integers: 1 (32 tile states a poll) or 4 (128, folded in any order, which integers
    /// allow); `None`: the length chooses (4 up to 1024 tiles). Floats, 8-byte elements and
    /// the Vulkan kernels (whose near look-back walks down a subgroup's window at a time) take
    /// 1 whatever is set. Both give the same bits.
    pub near_depth: Option<u32>,
    /// The epoch at which the tile states' epochs ([`Device::epochs`]) start again from 0,
    /// [`MIN_EPOCH_WRAP`] to [`EPOCH_WRAP`]; `None`: [`EPOCH_WRAP`]. Small values bring back
    /// each tag sooner, which the zeroing of [`EPOCH_SCRUB`] states a call keeps safe.
    pub epoch_wrap: Option<u32>,
    /// Where the device's driver flushes `f32` subnormals and xwarp keeps them in software
    /// ([`crate::device::Subnormals::Emulated`]): whether an `f32` sum scan runs gated
    /// (`Some(true)`): the driver's arithmetic first, in a kernel that also tests every input,
    /// and the exact kernel after it only where an input may take the driver's sums away from
    /// the exact ones (a nonzero magnitude below 2^-103), as a launch whose workgroup counts
    /// the first kernel sets; or the exact kernel alone (`Some(false)`); `None`: the device
    /// and the length choose ([`GATED_FROM`]). Taken only by a scan of one launch whose tile
    /// states lie in the device's epochs buffer, with the tile in registers, on a device with
    /// such launches (Vulkan); elsewhere ignored. Both give the same bits.
    pub gated: Option<bool>,
}

/// The fewest elements at which an `f32` sum scan on a device that keeps subnormals in
/// software runs gated by default ([`Tuning::gated`]): below it the gate's extra launch and
/// barrier cost about what the exact kernel's arithmetic does (H200, NOTES.md version 56).
pub const GATED_FROM: usize = 1 << 25;

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            spin: DEFAULT_SPIN,
            max_launch_elems: None,
            lookback_tiles: None,
            items: None,
            registers: None,
            near_depth: None,
            epoch_wrap: None,
            gated: None,
        }
    }
}

/// The most elements per thread [`Tuning::items`] accepts for 4-byte integers, where the
/// device's shared memory holds such a tile ([`max_items`]).
pub const MAX_ITEMS: u32 = 32;
/// Fewest elements for which a device scan of 4-byte integers keeps its tile in registers,
/// moved by 16-byte loads and stores, rather than staged in shared memory, on CUDA and on
/// Vulkan: where the tile has a multiple of 4 elements per thread, and on Vulkan where the
/// device has 64-bit buffer atomics and the subgroup arithmetic operations (there any such
/// tile up to [`MAX_ITEMS`] is taken, whatever the device's shared memory holds). CUDA takes it
/// at every length; Vulkan from 2^20 (H200, NOTES.md version 61: at 16 elements a thread it
/// took 0.91–0.98× the time of the staging kernel at 2^20–2^21 and of the register tile at 32
/// at 2^22; version 40 had found the staging kernel faster below 2^22, at 32 a thread).
pub const REGISTER_TILE_FROM: (usize, usize) = (0, 1 << 20);

/// The lengths at which a device scan of `f32` keeps its tile in registers (16-byte loads and
/// stores, each documented thread's [`ITEMS`] elements in four lanes that fold them in
/// sequence: the same order and bits as the staging kernel), on CUDA and on Vulkan, where the
/// device has the register tile ([`REGISTER_TILE_FROM`]'s conditions): on CUDA below 2^24
/// elements (from there the staging kernel, at eight blocks an SM against five, was as fast
/// or faster), on Vulkan at every length (H200, NOTES.md version 43). Sums; `f32` min and max
/// scans take the register tile at every length on both backends (their register tile folds
/// in the integers' layout, the same bits: H200, NOTES.md version 72).
pub const FLOAT_REGISTER_TILE: (std::ops::Range<usize>, std::ops::Range<usize>) =
    (0..1 << 24, 0..usize::MAX);

/// The most elements per thread a device-scan tile of `elem` may have on `info`'s device
/// ([`Tuning::items`]) at any length: floats [`ITEMS`] (part of their order); 8-byte integers
/// [`ITEMS`]; 4-byte integers up to [`MAX_ITEMS`], as far as the device's shared memory holds
/// the tile (the staging kernels: 1056 bytes per element per thread, beside the look-back's
/// window of up to [`MAX_LOOKBACK_TILES`] tiles per thread, 8 bytes per tile). Scans that keep
/// the tile in registers ([`REGISTER_TILE_FROM`]) take any multiple of 4 up to [`MAX_ITEMS`]
/// besides.
pub fn max_items(info: &crate::device::DeviceInfo, elem: ElemKind) -> u32 {
    match elem {
        ElemKind::I32 | ElemKind::U32 => {
            let per_item = u64::from(BLOCK) * 4 * 33 / 32;
            let window = u64::from(BLOCK * MAX_LOOKBACK_TILES) * 8 + 2048;
            let fits = u64::from(info.shared_memory_bytes).saturating_sub(window) / per_item;
            (fits.min(u64::from(MAX_ITEMS)) as u32).max(ITEMS)
        }
        _ => ITEMS,
    }
}

/// The elements per thread of a device scan of `len` elements of `T`: [`Tuning::items`]
/// checked, or the device's choice for integers, else [`ITEMS`].
pub(crate) fn tile_items<T: Reduce>(dev: &dyn Device, tuning: &Tuning, len: usize) -> Result<u32> {
    let fixed = matches!(T::KIND, ElemKind::F32 | ElemKind::F64);
    let most = max_items(dev.info(), T::KIND);
    // A tile the device holds: in shared memory, or in registers where the scan keeps it there.
    let registers = |i: u32| {
        dev.info().backend == BackendKind::Vulkan
            && match tuning.registers {
                // (Only integers reach this: the operator does not choose their tile.)
                None => crate::tuning::scan_tile_in_registers(
                    dev.info(),
                    T::KIND,
                    ReduceOp::Sum,
                    i,
                    len,
                ),
                Some(r) => r && crate::tuning::scan_registers_possible(dev.info(), T::KIND, i),
            }
    };
    let fits = |i: u32| (1..=most).contains(&i) || registers(i);
    match tuning.items {
        None if fixed => Ok(ITEMS),
        // The device's choice where it holds that tile, else the default.
        None => Ok(Some(crate::tuning::scan_items(dev.info(), T::KIND, len))
            .filter(|&i| fits(i))
            .unwrap_or(ITEMS)),
        Some(i) if fixed && i != ITEMS => Err(Error::invalid(
            "items",
            i,
            format!("{ITEMS}: the tile of a float scan is part of its order"),
        )),
        Some(i) if fits(i) => Ok(i),
        Some(i) if registers(4) => Err(Error::invalid(
            "items",
            i,
            format!("1..={most}, or a multiple of 4 up to {MAX_ITEMS}"),
        )),
        Some(i) => Err(Error::invalid("items", i, format!("1..={most}"))),
    }
}

/// Whether a device scan of `len` elements of `T` at `items` elements per thread keeps its tile
/// in registers: [`Tuning::registers`] checked, or the device's choice.
fn tile_in_registers<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    tuning: &Tuning,
    items: u32,
    len: usize,
) -> Result<bool> {
    let info = dev.info();
    match tuning.registers {
        None => Ok(crate::tuning::scan_tile_in_registers(
            info,
            T::KIND,
            op,
            items,
            len,
        )),
        Some(false) => Ok(false),
        Some(true) if crate::tuning::scan_registers_possible(info, T::KIND, items) => Ok(true),
        Some(true) => Err(Error::invalid(
            "registers",
            "Some(true)",
            format!(
                "None or Some(false) for {} at {items} elements per thread on this device: the \
                 register tile takes i32 and u32 at a multiple of 4 elements per thread up to \
                 {MAX_ITEMS} and f32 at {ITEMS}, on CUDA and on Vulkan devices with 64-bit \
                 buffer atomics and the subgroup arithmetic operations",
                T::KIND
            ),
        )),
    }
}

/// The subgroup operation classes every scan kernel uses (the device scan's look-back meets in
/// shared memory and needs none more).
const SCAN_OPS: SubgroupFeatures = SubgroupFeatures(
    SubgroupFeatures::BASIC.0 | SubgroupFeatures::SHUFFLE.0 | SubgroupFeatures::SHUFFLE_RELATIVE.0,
);

/// Checks `op` and that the device offers `ops` (all missing classes named at once).
fn check<T: Reduce>(dev: &dyn Device, op: ReduceOp, ops: SubgroupFeatures) -> Result<()> {
    if !matches!(op, ReduceOp::Sum | ReduceOp::Min | ReduceOp::Max) {
        return Err(Error::invalid("op", op, "sum, min or max"));
    }
    let info = dev.info();
    // The exact float variants (devices that flush subnormals, `Subnormals::Emulated`) ask the
    // subgroup whether any of its sums left the fast range (`subgroupAny`).
    let exact = info.emulates_subnormals(T::KIND);
    let ops = if exact {
        SubgroupFeatures(ops.0 | SubgroupFeatures::VOTE.0)
    } else {
        ops
    };
    plan::require(info, T::KIND, ops)
}

/// Checks `op` for a scan and that the device runs the scan kernels for `T`.
pub(crate) fn require<T: Reduce>(dev: &dyn Device, op: ReduceOp) -> Result<()> {
    check::<T>(dev, op, SCAN_OPS)
}

fn check_lengths(input: usize, output: usize) -> Result<()> {
    if output != input {
        return Err(Error::LengthMismatch {
            name: "output",
            expected: input as u64,
            actual: output as u64,
        });
    }
    Ok(())
}

fn exclusive(kind: ScanKind) -> u32 {
    u32::from(kind == ScanKind::Exclusive)
}

fn elementwise<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    scope: u32,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    check::<T>(dev, op, SCAN_OPS)?;
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    check_lengths(input.len(), output.len())?;
    let consts = [
        ("OP", op.code()),
        ("SCOPE", scope),
        ("EXCLUSIVE", exclusive(kind)),
    ];
    let chunk = plan::chunk_elems(dev.info(), T::KIND.size(), BLOCK as u64) as usize;
    for (start, n) in plan::chunks(chunk, input.len()) {
        let groups = n.div_ceil(BLOCK as usize);
        let params = ScanParams {
            n: n as u32,
            groups: groups as u32,
        };
        dev.launch(&Launch {
            kernel: Kernel {
                name: "scan",
                elem: T::KIND,
                consts: &consts,
            },
            block: BLOCK,
            groups: plan::grid(dev.info(), groups as u64)?,
            bindings: &[input.binding(start, n), output.binding(start, n)],
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}

/// Scans each 32-element warp of `input` on its own (`output.len() == input.len()`).
pub fn warp_scan<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    elementwise(dev, op, kind, 0, input, output)
}

/// Scans each block of [`BLOCK`] elements of `input` on its own.
pub fn block_scan<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    elementwise(dev, op, kind, 1, input, output)
}

/// Scans all of `input` into `output` (same length; an empty input is a no-op).
pub fn device_scan<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    device_scan_tuned(dev, op, kind, input, output, Tuning::default())
}

/// [`device_scan`] with explicit [`Tuning`].
pub fn device_scan_tuned<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    tuning: Tuning,
) -> Result<()> {
    check::<T>(dev, op, SCAN_OPS)?;
    check_lengths(input.len(), output.len())?;
    scan_segments(dev, op, kind, &[(input, &*output)], tuning)
}

/// Scans the concatenation of `segments` (each an input and an output of its length) as one
/// sequence in one look-back, so the order is that of [`device_scan`] over the concatenation:
/// every segment but the last must be a whole number of tiles ([`BLOCK`] × the elements per
/// thread that [`tile_items`] gives for `tuning` and the whole length: pass
/// [`Tuning::items`] to fix it). `crate::group` puts one tile ahead of a rank's shard whose
/// total is the prefix of the shards before it.
pub(crate) fn scan_segments<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    segments: &[(&DeviceVec<T>, &DeviceVec<T>)],
    tuning: Tuning,
) -> Result<()> {
    check::<T>(dev, op, SCAN_OPS)?;
    for (input, output) in segments {
        check_lengths(input.len(), output.len())?;
    }
    let Some(&(first_input, first_output)) = segments.iter().find(|(input, _)| !input.is_empty())
    else {
        return Ok(());
    };
    let total: usize = segments.iter().map(|(i, _)| i.len()).sum();
    let mut items = tile_items::<T>(dev, &tuning, total)?;
    // A launch limit that is not a multiple of the tile the device chose keeps the default
    // tile (an explicit `items` must fit the limit, checked below).
    if let (None, Some(max)) = (tuning.items, tuning.max_launch_elems) {
        if max % (BLOCK * items) as usize != 0 {
            items = ITEMS;
        }
    }
    let registers = tile_in_registers::<T>(dev, op, &tuning, items, total)?;
    let tile = (BLOCK * items) as usize;
    for (input, _) in &segments[..segments.len() - 1] {
        if input.len() % tile != 0 {
            return Err(Error::invalid(
                "segments",
                format!("a segment of {} elements before the last", input.len()),
                format!("whole tiles of {tile} elements"),
            ));
        }
    }
    let mut chunk = plan::chunk_elems(dev.info(), T::KIND.size(), tile as u64) as usize;
    if let Some(max) = tuning.max_launch_elems {
        if max < tile || max % tile != 0 {
            return Err(Error::invalid(
                "max_launch_elems",
                max,
                format!("a positive multiple of {tile} (the tile)"),
            ));
        }
        chunk = chunk.min(max);
    }
    let tiles: usize = segments.iter().map(|(i, _)| i.len().div_ceil(tile)).sum();
    let window = match tuning.lookback_tiles {
        None => crate::tuning::scan_lookback_tiles(dev.info(), tiles),
        Some(k) if (1..=MAX_LOOKBACK_TILES).contains(&k) => k,
        Some(k) => {
            return Err(Error::invalid(
                "lookback_tiles",
                k,
                format!("1..={MAX_LOOKBACK_TILES}"),
            ))
        }
    };
    let near_depth = match tuning.near_depth {
        None => crate::tuning::scan_near_depth(dev.info(), tiles),
        Some(d) if NEAR_DEPTHS.contains(&d) => d,
        Some(d) => {
            return Err(Error::invalid(
                "near_depth",
                d,
                format!("one of {NEAR_DEPTHS:?}"),
            ))
        }
    };
    // Only 4-byte integers have the deeper near look-back (the kernel's other types would
    // compile the same code under another name).
    let near_depth = if matches!(T::KIND, ElemKind::I32 | ElemKind::U32) {
        near_depth
    } else {
        1
    };
    let launches: usize = segments.iter().map(|(i, _)| i.len().div_ceil(chunk)).sum();
    // The call's temporaries in one buffer: a counter per launch (one launch in the device's
    // counters buffer: two); two words of tile state per tile (32-bit types keep flag and
    // value in them together); each tile's aggregate and inclusive prefix.
    let size = T::KIND.size() as u64;
    let counter_words = if launches == 1 { 2 } else { launches as u64 };
    let ([at_counters, at_flags, at_aggregates, at_inclusives], bytes) = plan::regions(
        dev.info(),
        [
            4 * counter_words,
            8 * tiles as u64,
            size * tiles as u64,
            size * tiles as u64,
        ],
    );
    let wrap = epoch_wrap(tuning.epoch_wrap)?;
    let states = scan_states::<T>(dev, launches, tiles, bytes);
    let fresh;
    let state = match states {
        States::Shared(c) => c,
        States::Epochs(e) => e,
        States::Fresh => {
            fresh = dev.alloc(bytes)?;
            &fresh
        }
    };
    let part = |offset: u64, bytes: u64| Binding {
        buffer: state,
        offset,
        bytes,
    };
    let epochs = matches!(states, States::Epochs(_));
    // The flags, aggregates and inclusive prefixes of the first `launched` tiles. The epochs
    // buffer: its counters (the tile counter, the epoch, the place of the next zeroing), then
    // every state, all bound (the zeroing reaches any); the kernel reads no aggregate or
    // inclusive buffer for 4-byte types, which see the states there too.
    let counters = if epochs {
        part(0, EPOCH_COUNTER_BYTES)
    } else {
        part(at_counters, 4 * counter_words)
    };
    let tile_states = |launched: usize| {
        if epochs {
            let all = part(EPOCH_HEADER_BYTES, 8 * EPOCH_TILES);
            [all, all, all]
        } else {
            let launched = launched as u64;
            [
                part(at_flags, 8 * launched),
                part(at_aggregates, size * launched),
                part(at_inclusives, size * launched),
            ]
        }
    };
    let mut consts = vec![
        ("OP", op.code()),
        ("EXCLUSIVE", exclusive(kind)),
        ("ITEMS", items),
        ("LB_TILES", window),
    ];
    consts.push(("EPOCHS", u32::from(epochs)));
    // Only the CUDA twin reads PARTIALS_IN_SHARED (src/kernels/table.rs): the GLSL kernels
    // always keep the partials in shared memory and declare no such constant.
    if dev.info().backend == BackendKind::Cuda {
        let partials = crate::tuning::scan_partials_in_shared(T::KIND, items);
        consts.push(("PARTIALS_IN_SHARED", u32::from(partials)));
        consts.push((
            "SELF_CLEARING",
            u32::from(matches!(states, States::Shared(_))),
        ));
        consts.push(("VEC", u32::from(registers)));
        consts.push(("NEAR_DEPTH", near_depth));
    }
    let kernel = Kernel {
        name: crate::tuning::scan_kernel(dev.info(), T::KIND, registers),
        elem: T::KIND,
        consts: &consts,
    };
    // A gated f32 sum (Tuning::gated): the gate kernel (the driver's arithmetic, its inputs
    // tested), then the exact kernel as an indirect launch whose workgroup counts the gate
    // sets in the epochs buffer's header (shaders/scan_device.glsl, GATE_ARGS) where a test
    // fired; the exact launch takes the next epoch.
    let gated = epochs
        && registers
        && T::KIND == ElemKind::F32
        && matches!(op, ReduceOp::Sum)
        && dev.info().emulates_subnormals(ElemKind::F32)
        && dev.indirect_launches()
        && tuning.gated.unwrap_or(total >= GATED_FROM);
    // Zero the tile flags and counters (the same kernel in its clearing mode).
    let first = chunk.min(first_input.len());
    let clear = ScanDeviceParams {
        tiles: 2 * tiles as u32,
        chunk: launches as u32,
        clear: CLEAR_LAUNCH,
        ..Default::default()
    };
    if matches!(states, States::Fresh) {
        let [flags, aggregates, inclusives] = tile_states(tiles);
        dev.launch(&Launch {
            kernel,
            block: BLOCK,
            groups: plan::grid(
                dev.info(),
                (2 * tiles).max(launches).div_ceil(BLOCK as usize) as u64,
            )?,
            bindings: &[
                first_input.binding(0, first),
                first_output.binding(0, first),
                counters,
                flags,
                aggregates,
                inclusives,
            ],
            params: bytemuck::bytes_of(&clear),
        })?;
    }
    let mut launch = 0;
    let mut segment_tile0 = 0;
    for (input, output) in segments {
        for start in (0..input.len()).step_by(chunk) {
            let n = chunk.min(input.len() - start);
            let launch_tiles = n.div_ceil(tile);
            let tile0 = segment_tile0 + start / tile;
            let params = ScanDeviceParams {
                n: n as u32,
                tiles: launch_tiles as u32,
                tile0: tile0 as u32,
                chunk: launch as u32,
                spin: tuning.spin,
                clear: match states {
                    States::Shared(_) => SELF_CLEARING,
                    States::Epochs(_) => EPOCHS,
                    States::Fresh => 0,
                },
                epoch_wrap: wrap,
                epoch_tiles: EPOCH_TILES as u32,
                gate_x: 0,
                gate_y: 0,
            };
            // Tile state of all tiles so far stays bound: look-back reads earlier launches'
            // tiles (their states only: they have finished).
            let [flags, aggregates, inclusives] = tile_states(tile0 + launch_tiles);
            let groups = plan::grid(dev.info(), launch_tiles as u64)?;
            let bindings = [
                input.binding(start, n),
                output.binding(start, n),
                counters,
                flags,
                aggregates,
                inclusives,
            ];
            if gated {
                let params = ScanDeviceParams {
                    gate_x: groups[0],
                    gate_y: groups[1],
                    ..params
                };
                dev.launch_then_indirect(
                    &Launch {
                        kernel: Kernel {
                            name: GATE_KERNEL,
                            ..kernel
                        },
                        block: BLOCK,
                        groups,
                        bindings: &bindings,
                        params: bytemuck::bytes_of(&params),
                    },
                    &Launch {
                        kernel,
                        block: BLOCK,
                        groups,
                        bindings: &bindings,
                        params: bytemuck::bytes_of(&params),
                    },
                    Binding {
                        buffer: state,
                        offset: GATE_ARGS_OFFSET,
                        bytes: 12,
                    },
                )?;
            } else {
                dev.launch(&Launch {
                    kernel,
                    block: BLOCK,
                    groups,
                    bindings: &bindings,
                    params: bytemuck::bytes_of(&params),
                })?;
            }
            launch += 1;
        }
        segment_tile0 += input.len().div_ceil(tile);
    }
    Ok(())
}

/// Where a device scan keeps its tile states (see the module's documentation).
enum States<'a> {
    /// In the device's counters buffer, zeroed again by the tile that finishes last.
    Shared(&'a RawBuffer),
    /// In the device's epochs buffer, tagged with the call's epoch.
    Epochs(&'a RawBuffer),
    /// In fresh memory that a clearing launch zeroes first.
    Fresh,
}

/// The [`States`] of a device scan of `launches` launches and `tiles` tiles whose temporaries
/// take `bytes` apart from the device's buffers: the epochs buffer for one launch of 4-byte
/// elements in at most [`EPOCH_TILES`] tiles where the kernel keeps a tile's state in one
/// 64-bit word (CUDA; Vulkan with 64-bit buffer atomics); else the counters buffer for one
/// launch of at most [`crate::tuning::scan_self_clearing_max_tiles`] tiles; else fresh memory.
fn scan_states<'a, T: Reduce>(
    dev: &'a dyn Device,
    launches: usize,
    tiles: usize,
    bytes: u64,
) -> States<'a> {
    if launches != 1 {
        return States::Fresh;
    }
    let one_word = T::KIND.size() == 4 && crate::tuning::one_word_states(dev.info());
    if let Some(e) = dev
        .epochs()
        .filter(|_| one_word && tiles as u64 <= EPOCH_TILES)
    {
        return States::Epochs(e);
    }
    if tiles <= crate::tuning::scan_self_clearing_max_tiles(dev.info()) {
        if let Some(c) = dev.counter_slot(bytes) {
            return States::Shared(c);
        }
    }
    States::Fresh
}

/// The wrap of the device's epochs a call takes: `wrap` ([`Tuning::epoch_wrap`], also
/// [`crate::compact::Tuning::epoch_wrap`] and [`crate::partition::Tuning::epoch_wrap`])
/// checked, or [`EPOCH_WRAP`].
pub(crate) fn epoch_wrap(wrap: Option<u32>) -> Result<u32> {
    let wrap = wrap.unwrap_or(EPOCH_WRAP);
    if !(MIN_EPOCH_WRAP..=EPOCH_WRAP).contains(&wrap) {
        return Err(Error::invalid(
            "epoch_wrap",
            wrap,
            format!("{MIN_EPOCH_WRAP}..={EPOCH_WRAP}"),
        ));
    }
    Ok(wrap)
}

/// [`device_scan`] in place: the result replaces `data` (through a temporary buffer).
pub fn device_scan_in_place<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    data: &mut DeviceVec<T>,
) -> Result<()> {
    check::<T>(dev, op, SCAN_OPS)?;
    if data.is_empty() {
        return Ok(());
    }
    let mut tmp = DeviceVec::<T>::alloc(dev, data.len())?;
    device_scan(dev, op, kind, data, &mut tmp)?;
    dev.copy(
        tmp.raw(),
        0,
        data.raw(),
        0,
        (data.len() * T::KIND.size()) as u64,
    )
}

/// [`device_scan`] of host data.
pub fn device_scan_host<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    kind: ScanKind,
    input: &[T],
) -> Result<Vec<T>> {
    check::<T>(dev, op, SCAN_OPS)?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    device_scan(dev, op, kind, &src, &mut dst)?;
    dst.to_vec(dev)
}
