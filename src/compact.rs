//! Stream compaction (filtering) by leader-elected, warp-aggregated atomics, aggregated
//! across the workgroup too, in one pass over the input.
//!
//! The input goes in tiles of [`BLOCK`] threads × [`items_per_thread`] elements (16 of 4 bytes
//! or 8 of 8 bytes: 16 KiB per tile). Each warp (on Vulkan: each subgroup, whatever its size)
//! reads its run of the tile in coalesced steps, ballots a run-time [`Predicate`] once per step,
//! and gives every passing lane its rank from `popc(ballot & lanes below it)` plus the passing
//! lanes of the earlier steps; the warp's leader puts the warp's count in shared memory, and
//! each warp adds the counts of the warps below it. Two orders:
//!
//! - [`Order::Unordered`]: the tile's leader does ONE `atomicAdd` of the tile's passing count
//!   on a counter (the warp-aggregated enqueue, aggregated over the whole tile), and every
//!   passing element writes at the base it got + its warp's offset + its rank. Tiles append in
//!   whatever order their atomics land, so the output holds the passing elements as a
//!   multiset, in no fixed order (within a tile they stay in input order). The counter is a
//!   64-bit word whose high half counts the tiles done, so the same atomic tells the last tile
//!   that it ends the chunk; on a Vulkan device without 64-bit buffer atomics
//!   (`shaderBufferInt64Atomics`) the tiles done are a second, 32-bit counter.
//! - [`Order::Stable`]: input order, still one pass. Each tile takes a ticket (so the tiles
//!   before it have started), publishes its count, and finds the count of all elements before
//!   it by decoupled look-back: one warp reads the states of a window of predecessors at once
//!   (one per lane) and a ballot finds the nearest one that has published its inclusive prefix.
//!   The tile publishes its own, then scatters. Vulkan promises no forward progress between
//!   workgroups, so after [`Tuning::spin`] polls of a predecessor that has published nothing,
//!   the tile counts that predecessor's elements itself: it cannot deadlock on any conformant
//!   device. Its result does not depend on the tile, so its tile may be larger
//!   ([`Tuning::stable_items`]; by default on CUDA 32 elements a thread from 2^22 elements,
//!   unique's too, on Vulkan 20 from 2^23 for `f32` and from 2^24 for integers): such tiles
//!   put their passing elements in shared memory before the look-back, which then delays only
//!   their stores.
//!
//! Everything stays on the device: the count lands in a [`DeviceVec<u64>`] and the elements in
//! the output's first `count` slots, so an application can chain further kernels with no host
//! copy. Nothing past `count` is written. Any length works, including 0: inputs longer than one
//! launch go in chunks (at most 2^29 elements each), each with a 32-bit counter; the chunk's
//! last tile (unordered: the last to count itself done; stable: the last ticket) writes the
//! 64-bit total and the next chunk's base (held as two 32-bit words), and
//! the next chunk reads its base from the device. A call is one small reset launch and one
//! launch per chunk. Where the output exceeds the largest range one kernel binding may span,
//! each chunk is launched once per window of the output its result may start in; the launches
//! for the other windows leave at once.
//!
//! A call of one chunk and one window needs no reset launch: an unordered one keeps its counter
//! words in the device's counters buffer ([`Device::counters`]); a stable one (unique's too,
//! on CUDA up to 2048 tiles) keeps its tile states in the device's epochs buffer
//! ([`Device::epochs`], up to [`EPOCH_TILES`] tiles: 2^28 4-byte elements), each tagged with
//! the call's epoch as the scans' are ([`crate::scan`]), so that the states earlier calls left
//! read as unpublished and none is zeroed; the epochs wrap at [`Tuning::epoch_wrap`]. Where the
//! device keeps no such buffer (or a Vulkan device has no 64-bit buffer atomics), a stable call
//! of up to [`SELF_CLEARING_MAX_TILES`] tiles keeps its states in the counters buffer and its
//! last tile zeroes them. Run-length encoding's pass ([`crate::run_length`]) takes the epochs
//! only to 2048 tiles, where each tile closes the run before its first head; else the other
//! two paths.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::compact::{compact_host, Order};
//! use xwarp::vote::Predicate;
//! let dev = xwarp::backend::open_default()?;
//! let input: Vec<u32> = (0..100).collect();
//! let (count, odd) = compact_host(&*dev, Order::Stable, Predicate::Odd, &input)?;
//! assert_eq!(count, 50);
//! assert_eq!(&odd[..3], &[1, 3, 5]);
//! # Ok(()) }
//! ```

use crate::device::{
    BackendKind, Binding, Device, DeviceInfo, DeviceVec, Kernel, Launch, RawBuffer,
    SubgroupFeatures, EPOCH_HEADER_BYTES, EPOCH_TILES,
};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use crate::kernels::CompactParams;
use crate::plan;
pub use crate::spec::compact::{items_per_thread, tile_elems, BLOCK};
use crate::vote::{Predicate, PredicateElement};
use std::fmt;

/// Which order the compacted elements come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Input order: one pass, tile offsets by decoupled look-back.
    Stable,
    /// Whatever order the tiles' atomics land in: one pass, one atomic per tile.
    Unordered,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Stable => "stable",
            Order::Unordered => "unordered",
        })
    }
}

/// Tuning for [`compact_tuned`]: data apart from the algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Plan as if one kernel binding could span at most this many elements (at least
    /// [`MIN_BINDING_ELEMS`]); `None` uses the device's limit. Smaller values make more chunks
    /// and output windows — what the tests use to exercise the long-input path on short inputs.
    pub max_binding_elems: Option<usize>,
    /// [`Order::Stable`]: polls of a predecessor tile that has published nothing before a tile
    /// counts that predecessor's elements itself. 0 always takes that fallback; results never
    /// depend on it.
    pub spin: u32,
    /// [`Order::Stable`] of 4-byte elements: elements each thread of a tile takes, 1 to
    /// [`max_stable_items`] (a tile's passing elements wait in the device's shared memory), and
    /// at most `max_binding_elems / 512` (two tiles in a binding); `None` leaves it to the
    /// device. The result never depends on it. Unique (the head predicate) takes it too; the
    /// unordered step and 8-byte elements keep [`items_per_thread`] and ignore it (the
    /// unordered order depends on the tile); run-length encoding ignores it and takes the
    /// device's choice (tiles of 2048 4-byte elements to 2^19 elements on CUDA, to 2^18 on
    /// Vulkan).
    pub stable_items: Option<u32>,
    /// [`Order::Stable`]: the epoch at which the tile states' epochs ([`Device::epochs`]) start
    /// again from 0, [`crate::scan::MIN_EPOCH_WRAP`] to [`crate::scan::EPOCH_WRAP`] (as
    /// [`crate::scan::Tuning::epoch_wrap`]: scans and compactions share the device's epochs);
    /// `None`: [`crate::scan::EPOCH_WRAP`].
    pub epoch_wrap: Option<u32>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            max_binding_elems: None,
            spin: DEFAULT_SPIN,
            stable_items: None,
            epoch_wrap: None,
        }
    }
}

/// The most [`Tuning::stable_items`] a device takes: a tile of 4-byte elements, with the
/// kernels' other shared words, in its shared memory, and at most 32 (one bit a step of a
/// thread's mask).
pub fn max_stable_items(info: &DeviceInfo) -> u32 {
    let words = info.shared_memory_bytes.saturating_sub(STABLE_SHARED_OTHER) / 4;
    (words / BLOCK).min(32)
}

/// Shared bytes of the compaction kernels besides the tile's staging area (the GLSL kernel's
/// 256 subgroup counts and its five words, rounded up).
const STABLE_SHARED_OTHER: u32 = 1152;

/// The stable step's elements a thread for `n` elements of `elem` (see [`Tuning::stable_items`]).
fn stable_items(
    info: &DeviceInfo,
    elem: ElemKind,
    heads: bool,
    n: usize,
    tuning: Tuning,
) -> Result<u32> {
    let default = items_per_thread(elem.size());
    if elem.size() != 4 {
        return Ok(default);
    }
    // Two tiles in a binding (the plan's windows; only a small max_binding_elems limits it).
    let binding = tuning.max_binding_elems.map_or(u32::MAX, |m| {
        (m / (2 * BLOCK as usize)).min(u32::MAX as usize) as u32
    });
    let most = max_stable_items(info).min(binding);
    match tuning.stable_items {
        None => Ok(
            Some(crate::tuning::compact_stable_items(info, elem, heads, n))
                .filter(|&i| i <= most)
                .unwrap_or(default),
        ),
        Some(i) if (1..=most).contains(&i) => Ok(i),
        Some(i) => Err(Error::invalid(
            "stable_items",
            i,
            format!(
                "1..={most} (4-byte elements on `{}` with max_binding_elems {:?})",
                info.name, tuning.max_binding_elems
            ),
        )),
    }
}

/// Default [`Tuning::spin`].
pub const DEFAULT_SPIN: u32 = 1 << 14;

/// The smallest [`Tuning::max_binding_elems`]: two tiles of 4-byte elements.
pub const MIN_BINDING_ELEMS: usize = 2 * tile_elems(4);

/// The most elements of one chunk: tile states hold a chunk's counts in 30 bits.
const MAX_CHUNK: u64 = 1 << 29;

/// The steps of the plan: `OP` in `shaders/compact.comp` and `cuda/compact.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Reset = 0,
    Unordered = 1,
    Stable = 2,
    /// The run lengths that end at a tile's first head, and the last (`LENGTHS`).
    Lengths = 3,
}

/// Words of the counter scratch: the chunk's count and tiles done (one 64-bit word), tickets,
/// tiles done (Vulkan without 64-bit atomics), and two slots of a chunk base (u64 as two words)
/// that chunks use in turn, each on a 128-byte line of its own (`C_*` in the kernels).
const COUNTER_WORDS: usize = 5 * 32;

/// Most tiles of a stable compaction that keeps its tile states in the device's counters
/// buffer (one chunk, one window: no RESET launch; the last tile past its states zeroes them).
/// An unordered compaction of one chunk and window keeps only its counter words there, at any
/// length. Measured on an H100 (NOTES.md version 19): without the RESET launch compactions of
/// 2^10 to 2^20 elements took 11–42% less time on both backends, and stable ones of 1024 tiles
/// 1–6% less; of 2048 and 4096 tiles up to 5% more.
pub const SELF_CLEARING_MAX_TILES: usize = 1024;

/// Most tiles of a run-length encoding ([`crate::run_length`]) whose pass closes its runs in
/// its last tile, with the two words a tile in the device's counters buffer: one launch and no
/// allocation. Measured on an H100 (NOTES.md version 25): 2^16 `i32` keys 13.6 → 11.2 µs on
/// CUDA, 12.1 → 11.5 on Vulkan; 2^20 (256 tiles) 0.96–1.00×; at 1024 tiles 4% (CUDA) and 17%
/// (Vulkan) slower than the last launch. (CUDA carries one word a tile through the
/// look-back instead, to 2048 tiles.)
#[doc(hidden)]
pub const CLOSE_IN_PASS_MAX_TILES: usize = 256;

/// Compacts the elements of `input` that pass `pred` into the first `count` elements of
/// `output`, and writes `count` into `count[0]`, all on the device. `output` must hold at
/// least `input.len()` elements and `count` at least one; elements of `output` past `count`
/// are left as they were.
pub fn compact<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    count: &mut DeviceVec<u64>,
) -> Result<()> {
    compact_tuned(dev, order, pred, input, output, count, Tuning::default())
}

/// [`compact`] on host data: uploads, runs, and downloads the count and the first `count`
/// elements.
pub fn compact_host<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &[T],
) -> Result<(u64, Vec<T>)> {
    validate(pred, input.len(), input.len(), 1, Tuning::default())?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    let mut count = DeviceVec::alloc(dev, 1)?;
    compact(dev, order, pred, &src, &mut dst, &mut count)?;
    let n = count.to_vec(dev)?[0];
    let kept = usize::try_from(n)
        .ok()
        .filter(|&k| k <= input.len())
        .ok_or_else(|| {
            Error::invalid("count", n, format!("0..={} (device result)", input.len()))
        })?;
    let mut out = vec![T::zeroed(); kept];
    if kept > 0 {
        dev.read(dst.raw(), 0, bytemuck::cast_slice_mut(&mut out))?;
    }
    Ok((n, out))
}

/// [`compact`] with explicit [`Tuning`].
pub fn compact_tuned<T: PredicateElement>(
    dev: &dyn Device,
    order: Order,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    count: &mut DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    validate(pred, input.len(), output.len(), count.len(), tuning)?;
    run(
        dev,
        order,
        &Job {
            elem: T::KIND,
            words: pred.words(),
            n: input.len(),
            input: input.raw(),
            output: output.raw(),
            heads: false,
            lengths: None,
        },
        count,
        tuning,
    )
}

/// The words unique and run-length encoding move keys of `key_bytes` bytes as in [`heads`]:
/// `U32`, or `U64` where the device has 64-bit integers in kernels; `None` (the runs kernel
/// then) otherwise.
pub(crate) fn key_words(info: &DeviceInfo, key_bytes: usize) -> Option<ElemKind> {
    match key_bytes {
        4 => Some(ElemKind::U32),
        _ if info.int64 => Some(ElemKind::U64),
        _ => None,
    }
}

/// The heads of `n` elements of `elem` (`U32` or `U64`: keys as their bits) in `keys`: every
/// element that differs from the one before it, and the first, compacted in input order into
/// `keys_out` (at least `n` elements), their number into `count[0]`. Unique's kernel: the
/// stable compaction with the head predicate, whose chunks after the first read the element
/// before them. With `lengths` (`u32`, at least `n`; only for inputs that [`lengths_fit`]), each
/// head's run length too, run-length encoding's kernel: in the scatter each head writes the
/// length of the run before it. Where the device's twin carries one word a tile through the
/// look-back (the kernels' `CARRY`, to 2048 tiles: `crate::tuning::lengths_carry_max_tiles`),
/// each tile's first head closes the run before it and the last tile the input's last run;
/// elsewhere the tile's last head holds its position and the runs that end at a tile's first
/// head are closed from two words a tile by the pass's last tile (up to
/// [`CLOSE_IN_PASS_MAX_TILES`]) or by a last small launch. The caller has checked the lengths.
#[allow(clippy::too_many_arguments)]
pub(crate) fn heads(
    dev: &dyn Device,
    elem: ElemKind,
    n: usize,
    keys: &RawBuffer,
    keys_out: &RawBuffer,
    lengths: Option<&RawBuffer>,
    count: &DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    debug_assert!(matches!(elem, ElemKind::U32 | ElemKind::U64));
    debug_assert!(lengths.is_none() || lengths_fit(dev.info(), elem.size(), n, tuning));
    validate_tuning(tuning)?;
    run(
        dev,
        Order::Stable,
        &Job {
            elem,
            words: [HEAD_CODE, 0, 0, 0, 0],
            n,
            input: keys,
            output: keys_out,
            heads: true,
            lengths,
        },
        count,
        tuning,
    )
}

/// Whether [`heads`] with lengths takes `n` elements of `elem_size` bytes on this device with
/// this tuning in one chunk and one output window (else run-length encoding takes the runs
/// kernel).
pub(crate) fn lengths_fit(info: &DeviceInfo, elem_size: usize, n: usize, tuning: Tuning) -> bool {
    let plan = Plan::new(info, elem_size, n, tuning, items_per_thread(elem_size));
    plan.single && n <= plan.chunk
}

/// The predicate code passed with the head predicate (`XW_PRED_HEAD` in the GLSL kernel).
const HEAD_CODE: u32 = 12;

/// What one compaction reads and writes.
struct Job<'a> {
    elem: ElemKind,
    /// The predicate's code and operands ([`Predicate::words`]; unused with `heads`).
    words: [u32; 5],
    /// Input elements.
    n: usize,
    input: &'a RawBuffer,
    /// At least `n` elements.
    output: &'a RawBuffer,
    /// The head predicate (the kernels' `HEADS` variant) in place of `words`: a chunk after
    /// the first binds its input from an aligned place before its start, so that it reads the
    /// element before it.
    heads: bool,
    /// With `heads`, one chunk and one window: each head's run length into this `u32` buffer
    /// (the `LENGTHS` variant and its last step).
    lengths: Option<&'a RawBuffer>,
}

impl Job<'_> {
    /// Elements `start .. start + len` of `buf` as a binding.
    fn elems<'b>(&self, buf: &'b RawBuffer, start: usize, len: usize) -> Binding<'b> {
        let size = self.elem.size() as u64;
        Binding {
            buffer: buf,
            offset: start as u64 * size,
            bytes: len.max(1) as u64 * size,
        }
    }

    /// The first `len` words of a `u32` buffer as a binding.
    fn elems_u32<'b>(&self, buf: &'b RawBuffer, len: usize) -> Binding<'b> {
        Binding {
            buffer: buf,
            offset: 0,
            bytes: len.max(1) as u64 * 4,
        }
    }
}

fn run(
    dev: &dyn Device,
    order: Order,
    job: &Job<'_>,
    count: &DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    let n = job.n;
    let info = dev.info();
    plan::require(
        info,
        job.elem,
        SubgroupFeatures::BASIC | SubgroupFeatures::BALLOT | SubgroupFeatures::SHUFFLE,
    )?;
    let items = match order {
        Order::Stable if job.lengths.is_none() => {
            stable_items(info, job.elem, job.heads, n, tuning)?
        }
        Order::Stable => crate::tuning::lengths_items(info, job.elem, n),
        Order::Unordered => items_per_thread(job.elem.size()),
    };
    let plan = Plan::new(info, job.elem.size(), n, tuning, items);
    // Scratch: the chunk's count, its tile tickets, its tiles done and the chunk bases
    // (`COUNTER_WORDS`); one tile state per tile of the input, each chunk its own run (stable only:
    // a few bytes per 16 KiB of input, zeroed once by the reset).
    let tiles = n.div_ceil(plan.tile).max(1);
    let state_words = match order {
        Order::Stable => tiles,
        Order::Unordered => 0,
    };
    // One chunk and one window whose scratch fits: the device's counters buffer, zero before
    // and after every launch, so no RESET launch (most of a small call's time, NOTES.md
    // version 19).
    // LENGTHS: two words a tile (the rank and position of its first head), there too where
    // the pass closes its runs.
    // LENGTHS where the device's twin can (crate::tuning::lengths_carry_max_tiles): each tile closes
    // the run before its first head from one word a tile (the kernel's CARRY), with the tile
    // states tagged by epochs as a stable compaction's: no clearing launch and no last launch.
    let carry = job.lengths.is_some()
        && n > 0
        && n <= plan.chunk
        && plan.single
        && tiles <= crate::tuning::lengths_carry_max_tiles(info);
    let close = job.lengths.is_some() && !carry && tiles <= CLOSE_IN_PASS_MAX_TILES;
    let side_words = if job.lengths.is_some() { 2 * tiles } else { 0 };
    let in_counters = if close { side_words } else { 0 };
    let ([at_counter, at_states, at_side], bytes) = plan::regions(
        info,
        [
            4 * COUNTER_WORDS as u64,
            4 * state_words.max(1) as u64,
            4 * in_counters as u64,
        ],
    );
    // A stable call of one chunk and one window (no lengths) whose states fit the device's
    // epochs buffer: states tagged with the call's epoch, nothing to zero before or after (the
    // kernels' EPOCHS variant; CUDA's, and Vulkan's where the device has 64-bit atomics).
    let one_chunk = n > 0 && n <= plan.chunk && plan.single;
    let epochs = (order == Order::Stable
        && (job.lengths.is_none() || carry)
        && one_chunk
        && tiles <= crate::tuning::compact_epoch_max_tiles(info, job.heads)
        && crate::tuning::one_word_states(info))
    .then(|| dev.epochs())
    .flatten();
    let shared = (epochs.is_none()
        && one_chunk
        && (order == Order::Unordered || tiles <= SELF_CLEARING_MAX_TILES))
        .then(|| dev.counter_slot(bytes))
        .flatten();
    let fresh_counter;
    let fresh_states;
    let (counter, states) = match (epochs, shared) {
        (Some(e), _) => (
            // The header: the ticket and the epoch, the place of the next zeroing.
            Binding {
                buffer: e,
                offset: 0,
                bytes: 16,
            },
            // Every state (the zeroing reaches any), 64 bits each.
            Some((
                Binding {
                    buffer: e,
                    offset: EPOCH_HEADER_BYTES,
                    bytes: 8 * EPOCH_TILES,
                },
                tiles,
            )),
        ),
        (None, Some(c)) => (
            Binding {
                buffer: c,
                offset: at_counter,
                bytes: 4 * COUNTER_WORDS as u64,
            },
            (state_words > 0).then_some((
                Binding {
                    buffer: c,
                    offset: at_states,
                    bytes: 4 * state_words as u64,
                },
                state_words,
            )),
        ),
        (None, None) => {
            fresh_counter = DeviceVec::<u32>::alloc(dev, COUNTER_WORDS)?;
            fresh_states = match order {
                Order::Stable => Some(DeviceVec::<u32>::alloc(dev, tiles)?),
                Order::Unordered => None,
            };
            (
                fresh_counter.binding(0, COUNTER_WORDS),
                fresh_states
                    .as_ref()
                    .map(|s| (s.binding(0, s.len()), s.len())),
            )
        }
    };
    // LENGTHS: the two words a tile in the counters buffer (the pass's last tile closes the
    // runs and zeroes them: one launch), else in a buffer of their own and a last launch.
    let close = close && shared.is_some();
    // CARRY with its states tagged by epochs: its word a tile after them in the epochs buffer
    // (each written before its tile's state, read after it: nothing to zero, no allocation;
    // lengths_carry_max_tiles keeps the tiles within EPOCH_SIDE_WORDS).
    let carry_side = epochs.filter(|_| carry).map(|e| Binding {
        buffer: e,
        offset: EPOCH_HEADER_BYTES + 8 * EPOCH_TILES,
        bytes: 4 * tiles as u64,
    });
    let side_fresh = match job.lengths {
        Some(_) if n > 0 && !close && carry_side.is_none() => Some(DeviceVec::<u32>::alloc(
            dev,
            if carry { tiles } else { side_words },
        )?),
        _ => None,
    };
    let side = match (carry_side, shared, &side_fresh) {
        (Some(c), _, _) => Some(c),
        (None, Some(c), _) if close => Some(Binding {
            buffer: c,
            offset: at_side,
            bytes: 4 * side_words as u64,
        }),
        (None, _, Some(s)) => Some(s.binding(0, s.len())),
        _ => None,
    };
    let launcher = Launcher {
        dev,
        info,
        elem: job.elem,
        items,
        words: job.words,
        spin: tuning.spin,
        count,
        counter,
        states,
        self_clearing: shared.is_some(),
        epochs: epochs.is_some(),
        epoch_wrap: crate::scan::epoch_wrap(tuning.epoch_wrap)?,
        heads: job.heads,
        lengths: side.map(|side| (job.elems_u32(job.lengths.unwrap(), n), side)),
        close,
        carry,
    };
    if shared.is_none() && epochs.is_none() {
        launcher.reset()?;
    }
    let step = match order {
        Order::Stable => Step::Stable,
        Order::Unordered => Step::Unordered,
    };
    let mut start = 0;
    let mut slot = 0;
    while start < n {
        let len = plan.chunk.min(n - start);
        // Heads: the element before the chunk too, from a place the binding may start at.
        let shift = if job.heads && start > 0 {
            (info.binding_alignment as usize / job.elem.size()).max(1)
        } else {
            0
        };
        let src = job.elems(job.input, start - shift, len + shift);
        let chunk = ChunkLaunch {
            len,
            tiles: len.div_ceil(plan.tile),
            slot,
            state0: start / plan.tile,
            shift: shift as u32,
        };
        for window in plan.windows(start) {
            let dst = job.elems(job.output, window.first, window.len);
            launcher.launch(step, chunk, src, dst, window)?;
        }
        slot ^= 1;
        start += len;
    }
    if launcher.lengths.is_some() && !close && !carry {
        launcher.lengths_step(n, tiles)?;
    }
    Ok(())
}

fn validate<T: PredicateElement>(
    pred: Predicate<T>,
    input: usize,
    output: usize,
    count: usize,
    tuning: Tuning,
) -> Result<()> {
    pred.validate()?;
    validate_tuning(tuning)?;
    if output < input {
        return Err(Error::LengthMismatch {
            name: "output",
            expected: input as u64,
            actual: output as u64,
        });
    }
    if count == 0 {
        return Err(Error::LengthMismatch {
            name: "count",
            expected: 1,
            actual: 0,
        });
    }
    Ok(())
}

fn validate_tuning(tuning: Tuning) -> Result<()> {
    crate::scan::epoch_wrap(tuning.epoch_wrap)?;
    match tuning.max_binding_elems {
        Some(m) if m < MIN_BINDING_ELEMS => Err(Error::invalid(
            "max_binding_elems",
            m,
            format!("{MIN_BINDING_ELEMS} or more"),
        )),
        _ => Ok(()),
    }
}

/// A range of the output one scatter launch binds: elements `first .. first + len`; the chunk's
/// result is written by this launch when it starts in `first .. first + span` (`span` 0: any).
#[derive(Clone, Copy, Debug)]
struct Window {
    first: usize,
    len: usize,
    span: usize,
}

/// One chunk of the input as its launches see it.
#[derive(Clone, Copy, Debug)]
struct ChunkLaunch {
    /// Elements.
    len: usize,
    /// Tiles.
    tiles: usize,
    /// The slot of the counter scratch holding the chunk's base (chunks alternate).
    slot: u32,
    /// The chunk's first tile state: its first tile in the whole input.
    state0: usize,
    /// Elements of the input binding before the chunk's first.
    shift: u32,
}

/// Chunk and window sizes for one compaction.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Input elements per launch, a multiple of the tile.
    chunk: usize,
    /// Elements per tile.
    tile: usize,
    /// Output elements: `n`.
    n: usize,
    /// Whether the whole output fits in one binding.
    single: bool,
}

impl Plan {
    fn new(info: &DeviceInfo, elem_size: usize, n: usize, tuning: Tuning, items: u32) -> Self {
        let tile = BLOCK as u64 * u64::from(items);
        let mut chunk = plan::chunk_elems(info, elem_size, tile).min(MAX_CHUNK);
        let mut binding = info.max_binding_bytes / elem_size as u64;
        if let Some(m) = tuning.max_binding_elems {
            binding = binding.min(m as u64);
        }
        let single = n as u64 <= binding;
        // A chunk's result starts in one window of `chunk` elements and spans at most the
        // next: a binding of two windows holds it.
        let per_chunk = if single { binding } else { binding / 2 };
        chunk = chunk.min(per_chunk / tile * tile).max(tile);
        Plan {
            chunk: chunk as usize,
            tile: tile as usize,
            n,
            single,
        }
    }

    /// The windows of the output that the chunk starting at input element `start` may write
    /// in: its result starts at the count of passing elements before it, which is at most
    /// `start`.
    fn windows(&self, start: usize) -> Vec<Window> {
        if self.single {
            return vec![Window {
                first: 0,
                len: self.n,
                span: 0,
            }];
        }
        (0..=start / self.chunk)
            .map(|j| {
                let first = j * self.chunk;
                Window {
                    first,
                    len: (2 * self.chunk).min(self.n - first),
                    span: self.chunk,
                }
            })
            .collect()
    }
}

/// Launches the steps of one compaction with the predicate and scratch they share.
struct Launcher<'a> {
    dev: &'a dyn Device,
    info: &'a DeviceInfo,
    elem: crate::element::ElemKind,
    items: u32,
    words: [u32; 5],
    spin: u32,
    count: &'a DeviceVec<u64>,
    /// The counter words (`COUNTER_WORDS`).
    counter: Binding<'a>,
    /// The tile states and their number (stable only).
    states: Option<(Binding<'a>, usize)>,
    /// The scratch lies in the device's counters buffer (see `compact_tuned`).
    self_clearing: bool,
    /// The stable step's tile states lie in the device's epochs buffer, `counter` is its
    /// header (the kernels' `EPOCHS`).
    epochs: bool,
    /// With `epochs`: [`Tuning::epoch_wrap`].
    epoch_wrap: u32,
    /// The head predicate's variant (`HEADS`).
    heads: bool,
    /// `LENGTHS`: the lengths output and the two words a tile.
    lengths: Option<(Binding<'a>, Binding<'a>)>,
    /// `LENGTHS`: the pass's last tile closes the runs (no last launch).
    close: bool,
    /// `LENGTHS` (CUDA, `compact_c64`): each tile closes the run before its first head (`CARRY`; one word a
    /// tile, no last launch).
    carry: bool,
}

impl Launcher<'_> {
    /// The tile states, or the counter where there are none (every binding is declared).
    fn states(&self) -> (Binding<'_>, usize) {
        self.states.unwrap_or((self.counter, 0))
    }

    /// RESET: the total, the counters, the first chunk's base and every tile state zeroed.
    /// The kernel declares every binding; those the step does not touch get the counter.
    fn reset(&self) -> Result<()> {
        let c = self.counter;
        let (states, words) = self.states();
        let groups = plan::grid(self.info, (words as u64).div_ceil(BLOCK as u64).max(1))?;
        let params = CompactParams {
            tiles: words as u32,
            ..Default::default()
        };
        self.run(
            Step::Reset,
            groups,
            [c, c, self.count.binding(0, 1), c, states, c, c],
            params,
        )
    }

    fn launch(
        &self,
        step: Step,
        chunk: ChunkLaunch,
        src: Binding<'_>,
        dst: Binding<'_>,
        window: Window,
    ) -> Result<()> {
        let groups = plan::grid(self.info, chunk.tiles as u64)?;
        let [code, a_lo, a_hi, b_lo, b_hi] = self.words;
        let first = window.first as u64;
        let params = CompactParams {
            n: chunk.len as u32,
            pred: code,
            a_lo,
            a_hi,
            b_lo,
            b_hi,
            window_lo: first as u32,
            window_hi: (first >> 32) as u32,
            span: window.span as u32,
            tiles: chunk.tiles as u32,
            spin: self.spin,
            slot: chunk.slot,
            state0: chunk.state0 as u32,
            self_clearing: u32::from(self.self_clearing),
            shift: chunk.shift,
            close: u32::from(self.close),
            epoch_wrap: self.epoch_wrap,
            epoch_tiles: EPOCH_TILES as u32,
        };
        let (states, _) = self.states();
        let (lengths, side) = self.lengths.unwrap_or((self.counter, self.counter));
        let bindings = [
            src,
            dst,
            self.count.binding(0, 1),
            self.counter,
            states,
            lengths,
            side,
        ];
        self.run(step, groups, bindings, params)
    }

    /// The last step of `LENGTHS` (one chunk of `n` elements in `tiles` tiles): one invocation
    /// per tile and one for the last run.
    fn lengths_step(&self, n: usize, tiles: usize) -> Result<()> {
        let (lengths, side) = self.lengths.expect("a LENGTHS launcher");
        let groups = plan::grid(self.info, (tiles as u64 + 1).div_ceil(BLOCK as u64))?;
        let params = CompactParams {
            n: n as u32,
            tiles: tiles as u32,
            ..Default::default()
        };
        let c = self.counter;
        let (states, _) = self.states();
        let bindings = [c, c, self.count.binding(0, 1), c, states, lengths, side];
        self.run(Step::Lengths, groups, bindings, params)
    }

    fn run(
        &self,
        step: Step,
        groups: [u32; 2],
        bindings: [Binding<'_>; 7],
        params: CompactParams,
    ) -> Result<()> {
        let mut consts = vec![
            ("OP", step as u32),
            ("ITEMS", self.items),
            ("HEADS", u32::from(self.heads)),
            ("LENGTHS", u32::from(self.lengths.is_some())),
            // Larger tiles than the default stage before their look-back (src/tuning.rs).
            (
                "EARLY",
                u32::from(self.items > items_per_thread(self.elem.size())),
            ),
            ("EPOCHS", u32::from(self.epochs && step == Step::Stable)),
        ];
        // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs); the
        // GLSL kernels take the workgroup size from constant 0.
        if self.info.backend == BackendKind::Cuda {
            consts.push(("BLOCK", BLOCK));
            consts.push(("SELF_CLEARING", u32::from(self.self_clearing)));
            consts.push(("CARRY", u32::from(self.carry && step == Step::Stable)));
        } else if self.carry {
            // compact_c64 alone declares it (the carry's states are tagged by epochs).
            consts.push(("CARRY", u32::from(step == Step::Stable)));
        }
        self.dev.launch(&Launch {
            kernel: Kernel {
                name: crate::tuning::compact_kernel(self.info),
                elem: self.elem,
                consts: &consts,
            },
            block: BLOCK,
            groups,
            bindings: &bindings,
            params: bytemuck::bytes_of(&params),
        })
    }
}

// The compaction tile's block is the crate's common block.
const _: () = assert!(BLOCK == plan::BLOCK);
