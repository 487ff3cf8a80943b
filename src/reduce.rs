//! Reductions from warp to device: sum, product, min, max for every type, and, or, xor for
//! integers.
//!
//! - [`warp_reduce`]: each 32-lane logical warp, in either form of CUDA's warp reduce: the xor
//!   butterfly (every lane gets the total) or shift-down (lane 0 gets it).
//! - [`block_reduce`]: per workgroup of [`BLOCK`] elements: warp reduce, warp totals in shared
//!   memory, the first warp reduces them.
//! - [`device_reduce`]: any length, the whole result computed on the GPU and left in a device
//!   buffer (for the application's next kernel) or returned by [`device_reduce_host`]; one
//!   launch per level, or everything one launch may bind in a single launch ([`Launches`]),
//!   with the same bits either way.
//!
//! # Deterministic floats
//! The association order depends only on the length `n`, so an f32/f64 result is
//! bit-identical on CUDA, on Vulkan at every subgroup size and on every vendor, and in the CPU
//! reference ([`crate::cpu::reduce`]). README's "Deterministic floats" has the same text;
//! `tests/float_orders.rs` checks a transcription of it against the reference.
//!
//! `op(a, b)` always has the earlier (lower-index) operand on the left, and `id` is the
//! identity (see Semantics). Where a warp or block runs past the end of the input, its missing
//! lanes hold `id`; `v[l]` is lane `l`'s value, and every step reads the values from before it.
//!
//! - Warp reduce, in warps of 32 consecutive elements ([`WarpForm`]):
//!   - xor butterfly: for `s` = 1, 2, 4, 8, 16, lanes `l` and `l ^ s` both become
//!     `op(v[lo], v[hi])`, `lo` the lower of the two. Every lane ends with the same value, a
//!     pairwise tree with neighbours first, `((x0 op x1) op (x2 op x3)) op …`, which is each
//!     element's output;
//!   - shift-down: for `s` = 16, 8, 4, 2, 1, `v[l] = op(v[l], v[l + s])`, where a lane whose
//!     source lies past lane 31 combines with its own value, `op(v[l], v[l])`, as with CUDA's
//!     `__shfl_down_sync` (no such lane reaches lane 0). Lane 0's value is the warp's output.
//! - Block reduce, in blocks of [`BLOCK`] = 256 consecutive elements (padded with `id`): each
//!   of the 8 warps by shift-down, `W[w]` its lane 0; then `W[0] … W[7]`, padded with 24 `id`s
//!   to a warp, by shift-down again; lane 0's value is the block's output.
//! - Device reduce: a level cuts its input into tiles of [`TILE`] = 4096 consecutive elements,
//!   the last possibly partial. In a tile of `m` elements `x[0 … m-1]`, thread `t` = 0 … 255
//!   starts from `acc = id` and, for `k` = 0 … 15 ([`ITEMS`] = 16) while `k·256 + t < m`, sets
//!   `acc = op(acc, x[k·256 + t])` (elements past the tile's end are skipped, not padded; a
//!   thread with none keeps `id`). The
//!   256 thread values are combined by the xor butterfly over 256 lanes (`s` = 1 … 128) into
//!   the tile's total. While the input has more than 4096 elements it is replaced by its tile
//!   totals in order; the result is the total of one tile of what remains (`id` for an empty
//!   input). 2^20 + 1 elements take two levels, more than 2^24 three.
//!
//! # Semantics
//! - Integers wrap on overflow, as in CUDA.
//! - Float sum and product round every operation on its own (no fused multiply-add, no wider
//!   accumulator). A sum or product that meets a NaN (or makes one, as `inf - inf` does) is
//!   NaN, with a payload that may differ between devices.
//! - Float min and max follow IEEE 754-2008 minNum/maxNum: a NaN operand is ignored, and when
//!   both are NaN the result is the right one, so the result is NaN only if every element is
//!   NaN (or there is none); -0.0 counts as less than +0.0.
//! - The identity: for sum 0 (-0.0 for floats, so that `x + -0.0` is `x` for every `x`); for
//!   product 1; for min and max the type's largest and lowest integer, or for floats the quiet
//!   NaN `0x7fc0_0000` (f32) or `0x7ff8_0000_0000_0000` (f64); all ones for and; 0 for or and
//!   xor. `op(id, x)` is `x` bit for bit, and so is
//!   `op(x, id)` unless `x` is a NaN: float min and max then give the identity's NaN. The
//!   device reduce of an empty input is the identity.
//! - Subnormals are kept on every device: where a Vulkan driver flushes them, the kernels
//!   compute them exactly themselves ([`Subnormals::Emulated`](crate::Subnormals::Emulated)).
//!   Only a device opened to flush them
//!   ([`DeviceInfo::keeps_subnormals`](crate::DeviceInfo::keeps_subnormals) is false) may
//!   differ wherever a subnormal input or intermediate occurs.

use crate::device::{
    Binding, Device, DeviceVec, Kernel, Launch, RawBuffer, SubgroupFeatures, COUNTER_BYTES,
};
use crate::error::{Error, Result};
use crate::kernels::ReduceParams;
use crate::plan;
pub use crate::spec::reduce::{Reduce, ReduceOp, BLOCK, ITEMS, TILE};

/// The two forms of CUDA's warp reduce (the float order is in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpForm {
    /// `v` combined with `__shfl_xor_sync(v, s)` for s = 1, 2, 4, 8, 16, the lower lane's value
    /// on the left: every lane gets the total.
    Butterfly,
    /// `v = op(v, __shfl_down_sync(v, s))` for s = 16, 8, 4, 2, 1: lane 0 gets the total.
    ShiftDown,
}

const SCOPE_WARP_BUTTERFLY: u32 = 0;
const SCOPE_WARP_DOWN: u32 = 1;
const SCOPE_BLOCK: u32 = 2;
const SCOPE_TILE: u32 = 3;

pub(crate) fn check_op<T: Reduce>(op: ReduceOp) -> Result<()> {
    let float = matches!(T::KIND, crate::ElemKind::F32 | crate::ElemKind::F64);
    if float && !op.for_floats() {
        return Err(Error::invalid(
            "op",
            op,
            format!("sum, product, min or max for {}", T::KIND),
        ));
    }
    Ok(())
}

fn check_output(name: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected != actual {
        return Err(Error::LengthMismatch {
            name,
            expected: expected as u64,
            actual: actual as u64,
        });
    }
    Ok(())
}

/// Launches one reduce kernel over `input[start..start + n]`, writing `groups` (or per-lane /
/// per-warp) results into `output` from `out_start`.
#[allow(clippy::too_many_arguments)]
fn launch<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    scope: u32,
    input: &DeviceVec<T>,
    start: usize,
    n: usize,
    output: &DeviceVec<T>,
    out_start: usize,
    out_len: usize,
) -> Result<()> {
    let per_group = if scope == SCOPE_TILE {
        TILE
    } else {
        BLOCK as usize
    };
    let groups = n.div_ceil(per_group).max(1);
    let consts = [("OP", op.code()), ("SCOPE", scope), ("ITEMS", ITEMS)];
    let (out_base, dst_index) = plan::aligned_output(dev.info(), T::KIND.size(), out_start);
    let params = ReduceParams {
        n: n as u32,
        groups: groups as u32,
        dst_index: dst_index as u32,
    };
    dev.launch(&Launch {
        kernel: Kernel {
            name: "reduce",
            elem: T::KIND,
            consts: &consts,
        },
        block: BLOCK,
        groups: plan::grid(dev.info(), groups as u64)?,
        bindings: &[
            input.binding(start, n.max(1)),
            output.binding(out_base, dst_index + out_len),
        ],
        params: bytemuck::bytes_of(&params),
    })
}

/// The device reduce of `groups` tiles in one launch (`reduce_device`), reduced in the order
/// of the multi-launch path's further levels (so the same bits) into `output[index]`. Each
/// workgroup writes its tile's total to `totals` and counts itself. With at most [`TILE`]
/// tiles the count is on the device's first counter word, and the last to count reduces the
/// totals as one tile. With more, word `1 + g` counts the tiles whose totals form tile `g` of
/// totals; the last to count there reduces that tile of totals to `totals[groups + g]` (which
/// must have room) and counts it on the first word, and the last to count those reduces them
/// as one tile. The counter words needed ([`one_pass_counter_words`]) must fit in
/// [`COUNTER_BYTES`].
#[allow(clippy::too_many_arguments)]
fn launch_one_pass<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    totals: &DeviceVec<T>,
    groups: usize,
    counters: &RawBuffer,
    output: &DeviceVec<T>,
    index: usize,
) -> Result<()> {
    let (out_base, dst_index) = plan::aligned_output(dev.info(), T::KIND.size(), index);
    let params = ReduceParams {
        n: input.len() as u32,
        groups: groups as u32,
        dst_index: dst_index as u32,
    };
    let words = one_pass_counter_words(groups);
    dev.launch(&Launch {
        kernel: Kernel {
            name: "reduce_device",
            elem: T::KIND,
            consts: &[
                ("OP", op.code()),
                ("ITEMS", ITEMS),
                ("GROUPED", u32::from(groups > TILE)),
            ],
        },
        block: BLOCK,
        groups: plan::grid(dev.info(), groups as u64)?,
        bindings: &[
            input.binding(0, input.len()),
            output.binding(out_base, dst_index + 1),
            totals.binding(0, totals.len()),
            Binding {
                buffer: counters,
                offset: 0,
                bytes: 4 * words as u64,
            },
        ],
        params: bytemuck::bytes_of(&params),
    })
}

/// The counter words [`launch_one_pass`] uses for `groups` tiles: one, and one more a tile of
/// totals where there are more tiles than one tile of totals holds.
fn one_pass_counter_words(groups: usize) -> usize {
    if groups > TILE {
        1 + groups.div_ceil(TILE)
    } else {
        1
    }
}

/// Checks `op` for `T` and that the device runs the reduce kernels for `T`.
pub(crate) fn require<T: Reduce>(dev: &dyn Device, op: ReduceOp) -> Result<()> {
    check_op::<T>(op)?;
    plan::require(
        dev.info(),
        T::KIND,
        SubgroupFeatures::BASIC | SubgroupFeatures::SHUFFLE | SubgroupFeatures::SHUFFLE_RELATIVE,
    )
}

/// Runs a per-element scope over `input` in chunks of whole workgroups.
fn run_elementwise<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    scope: u32,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    per_output: usize,
) -> Result<()> {
    require::<T>(dev, op)?;
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    check_output("output", input.len().div_ceil(per_output), output.len())?;
    let chunk = plan::chunk_elems(dev.info(), T::KIND.size(), BLOCK as u64) as usize;
    for (start, n) in plan::chunks(chunk, input.len()) {
        let out_start = start / per_output;
        let out_len = n.div_ceil(per_output);
        launch(dev, op, scope, input, start, n, output, out_start, out_len)?;
    }
    Ok(())
}

/// Reduces each 32-lane warp of `input`. [`WarpForm::Butterfly`] writes every element's warp
/// total (`output.len() == input.len()`); [`WarpForm::ShiftDown`] one total per warp
/// (`output.len() == ceil(n / 32)`). A partial last warp's missing lanes hold the identity.
pub fn warp_reduce<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    form: WarpForm,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    match form {
        WarpForm::Butterfly => run_elementwise(dev, op, SCOPE_WARP_BUTTERFLY, input, output, 1),
        WarpForm::ShiftDown => run_elementwise(dev, op, SCOPE_WARP_DOWN, input, output, 32),
    }
}

/// Reduces each block of [`BLOCK`] elements (`output.len() == ceil(n / 256)`).
pub fn block_reduce<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    run_elementwise(dev, op, SCOPE_BLOCK, input, output, BLOCK as usize)
}

/// The most tiles [`Launches::Auto`] reduces in one launch (two tiles of totals).
pub const AUTO_ONE_LAUNCH_TILES: usize = 2 * TILE;

/// How the device reduce spreads its levels over launches; a knob of speed, never of results
/// (both keep the documented order, so the bits are the same).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Launches {
    /// Chosen by the device and the length, as measured: one launch on CUDA for at most
    /// [`AUTO_ONE_LAUNCH_TILES`] tiles (2^25 elements), one launch per level above and on
    /// Vulkan (the measurements are beside the choice, in the crate's tuning module).
    #[default]
    Auto,
    /// One launch per level: the tiles, then their totals, until one value remains.
    PerLevel,
    /// Everything one launch may bind (at most 2^30 elements) in one launch, counting finished
    /// workgroups on [`Device::counters`]: the last workgroup to finish reduces the tile
    /// totals; with more than [`TILE`] tiles, the last to finish among the tiles of each tile
    /// of totals reduces that tile of totals, and the last of those the results. Inputs longer
    /// than one launch may bind, and devices without counters, go per level.
    OneLaunch,
}

impl Launches {
    /// Whether `dev` takes one launch for `tiles` tiles where the input allows it.
    fn one_launch(self, dev: &dyn Device, tiles: usize) -> bool {
        match self {
            Launches::Auto => crate::tuning::reduce_one_launch(dev.info(), tiles),
            Launches::PerLevel => false,
            Launches::OneLaunch => true,
        }
    }
}

/// Device-reduce knobs that change speed, never results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// How the levels spread over launches.
    pub launches: Launches,
}

/// Reduces all of `input` on the device into `output[index]`; the identity when `input` is
/// empty. Any length the device's memory allows (64-bit indexing); intermediate tile totals
/// live in device memory the call allocates.
pub fn device_reduce<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    index: usize,
) -> Result<()> {
    device_reduce_tuned(dev, op, input, output, index, Tuning::default())
}

/// [`device_reduce`] with explicit [`Tuning`] (the same results).
pub fn device_reduce_tuned<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    index: usize,
    tuning: Tuning,
) -> Result<()> {
    let launches = tuning.launches;
    require::<T>(dev, op)?;
    if index >= output.len() {
        return Err(Error::invalid(
            "index",
            index,
            format!("0..{} (the output's length)", output.len()),
        ));
    }
    if input.len() <= TILE {
        return launch(dev, op, SCOPE_TILE, input, 0, input.len(), output, index, 1);
    }
    let tiles = input.len().div_ceil(TILE);
    let chunk = plan::chunk_elems(dev.info(), T::KIND.size(), TILE as u64) as usize;
    let counter_words = (COUNTER_BYTES / 4) as usize;
    if tiles.div_ceil(TILE) < counter_words
        && input.len() <= chunk
        && launches.one_launch(dev, tiles)
    {
        let words = one_pass_counter_words(tiles);
        if let Some(counters) = dev.counter_slot(4 * words as u64) {
            // More tiles than one tile of totals: room for the next level's totals after them.
            let next = if tiles > TILE {
                tiles.div_ceil(TILE)
            } else {
                0
            };
            let totals = DeviceVec::<T>::alloc(dev, tiles + next)?;
            return launch_one_pass(dev, op, input, &totals, tiles, counters, output, index);
        }
    }
    let mut totals = DeviceVec::<T>::alloc(dev, tiles)?;
    first_level(dev, op, input, chunk, &totals, 0)?;
    while totals.len() > TILE {
        let next_len = totals.len().div_ceil(TILE);
        let next = DeviceVec::<T>::alloc(dev, next_len)?;
        launch(
            dev,
            op,
            SCOPE_TILE,
            &totals,
            0,
            totals.len(),
            &next,
            0,
            next_len,
        )?;
        totals = next;
    }
    launch(
        dev,
        op,
        SCOPE_TILE,
        &totals,
        0,
        totals.len(),
        output,
        index,
        1,
    )
}

/// The first level of [`device_reduce`]: the totals of `input`'s tiles of [`TILE`] elements,
/// `input.len().div_ceil(TILE)` values written to `totals[at..]` (nothing for an empty input).
/// `crate::group` reduces the tile totals of every rank's shard as one sequence.
pub(crate) fn tile_totals<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    totals: &DeviceVec<T>,
    at: usize,
) -> Result<()> {
    require::<T>(dev, op)?;
    let tiles = input.len().div_ceil(TILE);
    if at + tiles > totals.len() {
        return Err(Error::LengthMismatch {
            name: "totals",
            expected: (at + tiles) as u64,
            actual: totals.len() as u64,
        });
    }
    let chunk = plan::chunk_elems(dev.info(), T::KIND.size(), TILE as u64) as usize;
    first_level(dev, op, input, chunk, totals, at)
}

/// The tile totals of `input` into `totals[at..]`, in launches of at most `chunk` elements
/// (whole tiles), so the tiling (and the order) never depends on the device's binding limits.
fn first_level<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    chunk: usize,
    totals: &DeviceVec<T>,
    at: usize,
) -> Result<()> {
    for (start, n) in plan::chunks(chunk, input.len()) {
        launch(
            dev,
            op,
            SCOPE_TILE,
            input,
            start,
            n,
            totals,
            at + start / TILE,
            n.div_ceil(TILE),
        )?;
    }
    Ok(())
}

/// [`device_reduce`] of host data, returning the value.
pub fn device_reduce_host<T: Reduce>(dev: &dyn Device, op: ReduceOp, input: &[T]) -> Result<T> {
    check_op::<T>(op)?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut out = DeviceVec::alloc(dev, 1)?;
    device_reduce(dev, op, &src, &mut out, 0)?;
    Ok(out.to_vec(dev)?[0])
}

/// [`warp_reduce`] of host data.
pub fn warp_reduce_host<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    form: WarpForm,
    input: &[T],
) -> Result<Vec<T>> {
    check_op::<T>(op)?;
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    let src = DeviceVec::from_slice(dev, input)?;
    let per = if form == WarpForm::Butterfly { 1 } else { 32 };
    let mut out = DeviceVec::alloc(dev, input.len().div_ceil(per))?;
    warp_reduce(dev, op, form, &src, &mut out)?;
    out.to_vec(dev)
}

/// [`block_reduce`] of host data.
pub fn block_reduce_host<T: Reduce>(dev: &dyn Device, op: ReduceOp, input: &[T]) -> Result<Vec<T>> {
    check_op::<T>(op)?;
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    let src = DeviceVec::from_slice(dev, input)?;
    let mut out = DeviceVec::alloc(dev, input.len().div_ceil(BLOCK as usize))?;
    block_reduce(dev, op, &src, &mut out)?;
    out.to_vec(dev)
}
