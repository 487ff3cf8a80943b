//! Stable two-way partition by a run-time [`Predicate`] (CUB's `DevicePartition::If`, with both
//! parts in input order).
//!
//! The output holds the elements that pass first, in input order, then the others, also in
//! input order; the number that pass lands in a [`DeviceVec<u64>`]. Everything stays on the
//! device, so an application can chain further kernels with no host copy.
//!
//! Three steps, in tiles of [`BLOCK`] threads × [`items_per_thread`] elements (16 KiB of input),
//! ranked by subgroup ballots as in the stable compaction ([`crate::compact`]):
//! 1. `partition` (count): each tile's passing count;
//! 2. the exclusive sum of the tile counts: each tile's offset, summed by the scatter step
//!    itself. Up to [`SCAN_IN_PASS_MAX_TILES`] tiles each tile sums every count (four an
//!    invocation); beyond, up to a few times as many ([`Tuning::group_max_tiles`]), the count
//!    step's workgroups count groups of consecutive tiles (a power of two a group, at most
//!    [`SCAN_IN_PASS_MAX_TILES`] groups) and write each group's sum beside the tile counts,
//!    and each scatter tile sums every group's sum and the counts of its own group's tiles
//!    before it; larger inputs take [`crate::scan::device_scan`], by the decoupled look-back
//!    with its fallback that cannot deadlock;
//! 3. `partition` (scatter): each tile stages its passing elements and its others in shared
//!    memory and writes both runs with coalesced stores, the passing ones at the tile's offset,
//!    the others after every passing element (the total, which the scan's last entry gives).
//!
//! The first part's length must be known before any element of the second part can be placed,
//! so the input is read twice: once to count, once to move.
//!
//! An input of at most [`ONE_LAUNCH_MAX_TILES`] tiles whose workgroups the device holds at
//! once (four a multiprocessor on CUDA, two a compute unit on Vulkan, by
//! [`crate::DeviceInfo::compute_units`]; on devices that report no count, never by default) takes one launch instead, reading the input once: each tile publishes its
//! count in the device's counters buffer, stages its elements, reads every tile's count for its
//! offset and the total, and writes its tile out. A tile that waits for a count longer than
//! [`ONE_LAUNCH_SPIN`] polls counts that tile's input itself, so the launch also ends where its
//! workgroups do not all run at once, only later. Where the device keeps a tile state in one
//! 64-bit word (Vulkan devices with 64-bit buffer atomics: `partition_e64`), the states lie in
//! the device's epochs buffer ([`Device::epochs`]) tagged with the call's epoch, as a scan's
//! ([`crate::scan`]): nothing counts the tiles done and nothing is zeroed after the call; else
//! they lie in the device's counters buffer and the last tile done zeroes them. A call of one
//! tile reads no state.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::partition::partition_host;
//! use xwarp::vote::Predicate;
//! let dev = xwarp::backend::open_default()?;
//! let input: Vec<u32> = (0..10).collect();
//! let (count, out) = partition_host(&*dev, Predicate::Odd, &input)?;
//! assert_eq!(count, 5);
//! assert_eq!(out, [1, 3, 5, 7, 9, 0, 2, 4, 6, 8]);
//! # Ok(()) }
//! ```
//!
//! # Limits
//! At most [`plan::MAX_LAUNCH_ELEMS`] elements, and no more than one kernel binding spans. Every
//! check happens before anything is launched, so a refused call leaves its outputs untouched.

use crate::device::{
    BackendKind, Binding, Device, DeviceVec, Kernel, Launch, SubgroupFeatures, EPOCH_HEADER_BYTES,
    EPOCH_TILES,
};
use crate::error::{Error, Result};
use crate::kernels::PartitionParams;
use crate::plan;
use crate::reduce::ReduceOp;
use crate::scan::{self, ScanKind};
pub use crate::spec::compact::{items_per_thread, tile_elems, BLOCK};
use crate::vote::{Predicate, PredicateElement};

/// Most tiles whose offsets the scatter step sums from every tile count itself (four counts an
/// invocation of its workgroup); more are counted in groups of consecutive tiles, at most this
/// many groups of at most this many tiles.
///
/// H200 (NOTES.md, version 47): against version 26's scan by the count step's last workgroup
/// (a ticket a workgroup, then one workgroup's scan at the end of the count step), µs, CUDA /
/// Vulkan: `i32` 2^22 24.2 → 21.4 / 25.8 → 21.5, 2^21 (Vulkan) 18.1 → 14.4, `u64` 2^21 23.9 →
/// 20.8 / 26.1 → 19.1. Every count summed by every tile past 1024 tiles costs more than the
/// scan launch (2^24 `i32` 68.0 → 80.3 / 68.3 → 75.7 µs at 4096 tiles).
pub const SCAN_IN_PASS_MAX_TILES: usize = 1024;

/// Most tiles of the one-launch partition: each invocation of a tile's workgroup reads the
/// counts of two tiles (`ONE_TILES` in the kernels).
pub const ONE_LAUNCH_MAX_TILES: usize = 2 * BLOCK as usize;

/// Polls of unpublished tile counts each invocation of the one-launch partition spends, in all,
/// before its workgroup counts such a tile itself. The tiles it waits for may not have started
/// (unlike a look-back's predecessors), so the budget is small: a few hundred microseconds at
/// most on a GPU.
pub const ONE_LAUNCH_SPIN: u32 = 512;

/// Workgroups of the one-launch partition a multiprocessor (compute unit) is taken to hold at
/// once: on CUDA its launch bounds guarantee four (at most 64 registers, 17 KiB of shared
/// memory); a Vulkan driver decides itself (NVIDIA's: 76 registers, three workgroups an SM), so
/// two there.
///
/// H200 (NOTES.md, version 47), CUDA at four blocks an SM (62 registers, was 80 at three):
/// 2^21 `i32` 16.4 → 14.1 µs, 2^20 `u64` 18.3 → 13.9 (both now one launch), 2^19–2^20 of
/// 4-byte elements unchanged.
fn resident_per_unit(info: &crate::DeviceInfo) -> usize {
    if info.backend == BackendKind::Cuda {
        4
    } else {
        2
    }
}

/// The steps of the plan: `OP` in `shaders/partition.comp` and `cuda/partition.cu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Count = 0,
    Scatter = 1,
    One = 2,
    /// The count step by groups of tiles.
    Groups = 3,
    /// The scatter step after it.
    ScatterGroups = 4,
}

/// Partitions `input` by `pred` into `output` (the same length, another buffer): the passing
/// elements first and the others after them, each in input order; `count[0]` gets the number
/// that pass (`count` holds at least one element and is a buffer of its own).
pub fn partition<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    count: &mut DeviceVec<u64>,
) -> Result<()> {
    partition_tuned(dev, pred, input, output, count, Tuning::default())
}

/// How [`partition_tuned`] plans a call; results never depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Most tile counts or group sums the scatter step sums itself (at most
    /// [`SCAN_IN_PASS_MAX_TILES`]): up to that many tiles it sums every tile's count; more are
    /// counted in groups of consecutive tiles (a power of two a group, at most
    /// `group_max_tiles`), and it sums the groups' sums and its own group's counts. 0 always
    /// takes a scan launch of the tile counts instead — what the tests use to compare the
    /// ways.
    pub scan_in_pass_max_tiles: usize,
    /// Most tiles a group of those sums (at most [`SCAN_IN_PASS_MAX_TILES`]); an input that
    /// needs larger groups takes the scan launch. `None`: the default (four; on Vulkan one,
    /// no groups, for 4-byte elements).
    pub group_max_tiles: Option<usize>,
    /// Most tiles of the one-launch path (at most [`ONE_LAUNCH_MAX_TILES`]): `None` as many
    /// as the device holds at once ([`crate::DeviceInfo::compute_units`], none where it is
    /// unknown); `Some(k)` up to `k` tiles whatever the device (correct anywhere, slow where
    /// tiles wait for workgroups that have not started); `Some(0)` never.
    pub one_launch_max_tiles: Option<usize>,
    /// The one-launch path's polls before counting a waited-for tile itself
    /// ([`ONE_LAUNCH_SPIN`]; 0 counts every unpublished tile at once, what tests use).
    pub spin: u32,
    /// Where the one-launch path tags its tile states with epochs (see the module's
    /// documentation): the epoch at which the device's epochs start again from 0,
    /// [`scan::MIN_EPOCH_WRAP`] to [`scan::EPOCH_WRAP`] (as [`scan::Tuning::epoch_wrap`]: the
    /// device's epochs are shared); `None`: [`scan::EPOCH_WRAP`].
    pub epoch_wrap: Option<u32>,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            scan_in_pass_max_tiles: SCAN_IN_PASS_MAX_TILES,
            group_max_tiles: None,
            one_launch_max_tiles: None,
            spin: ONE_LAUNCH_SPIN,
            epoch_wrap: None,
        }
    }
}

/// Most tiles [`partition`] takes in one launch on a device `info` under `tuning`.
pub fn one_launch_max_tiles(info: &crate::DeviceInfo, tuning: Tuning) -> usize {
    tuning
        .one_launch_max_tiles
        .unwrap_or(info.compute_units as usize * resident_per_unit(info))
        .min(ONE_LAUNCH_MAX_TILES)
}

/// [`partition`] with explicit [`Tuning`].
pub fn partition_tuned<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
    count: &mut DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    validate(dev, pred, input, output, count)?;
    let epoch_wrap = scan::epoch_wrap(tuning.epoch_wrap)?;
    let info = dev.info();
    let n = input.len();
    let tile = tile_elems(T::KIND.size());
    let tiles = n.div_ceil(tile);
    let mut consts = vec![("OP", 0), ("ITEMS", items_per_thread(T::KIND.size()))];
    // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs).
    if info.backend == BackendKind::Cuda {
        consts.push(("BLOCK", BLOCK));
    }
    let [code, a_lo, a_hi, b_lo, b_hi] = pred.words();
    let params = |spin: u32| PartitionParams {
        n: n as u32,
        pred: code,
        a_lo,
        a_hi,
        b_lo,
        b_hi,
        tiles: tiles as u32,
        scan: 0,
        spin,
        group_bits: 0,
        epoch_wrap,
        epoch_tiles: EPOCH_TILES as u32,
    };
    let launch_named = |name: &'static str,
                        step: Step,
                        params: PartitionParams,
                        groups: usize,
                        bindings: &[Binding]| {
        let mut consts = consts.clone();
        consts[0].1 = step as u32;
        dev.launch(&Launch {
            kernel: Kernel {
                name,
                elem: T::KIND,
                consts: &consts,
            },
            block: BLOCK,
            // The scatter's workgroup 0 writes the count, even of an empty input.
            groups: plan::grid(info, groups.max(1) as u64)?,
            bindings,
            params: bytemuck::bytes_of(&params),
        })
    };
    let launch = |step: Step, params: PartitionParams, groups: usize, bindings: &[Binding]| {
        launch_named("partition", step, params, groups, bindings)
    };
    let one_launch = tiles > 0 && tiles <= one_launch_max_tiles(info, tuning);
    // One launch of several tiles where the device's states can be tagged by epochs: the
    // states in its epochs buffer, the third binding that buffer's header (the ticket and the
    // epoch, the place of the next zeroing).
    let epochs = (one_launch && tiles > 1 && crate::tuning::partition_epochs(info))
        .then(|| dev.epochs())
        .flatten();
    // Else one launch with the tile states and the count of tiles done in the counters buffer
    // (the third binding one the step does not read).
    let one = match epochs {
        Some(e) => Some((
            "partition_e64",
            Binding {
                buffer: e,
                offset: EPOCH_HEADER_BYTES,
                bytes: 8 * EPOCH_TILES,
            },
            Binding {
                buffer: e,
                offset: 0,
                bytes: 16,
            },
        )),
        None => one_launch
            .then(|| dev.counter_slot(4 * (tiles as u64 + 1)))
            .flatten()
            .map(|c| {
                let states = Binding {
                    buffer: c,
                    offset: 0,
                    bytes: 4 * (tiles as u64 + 1),
                };
                ("partition", states, states)
            }),
    };
    if let Some((name, states, third)) = one {
        let bindings = [
            input.binding(0, n),
            output.binding(0, n),
            states,
            third,
            count.binding(0, 1),
        ];
        return launch_named(name, Step::One, params(tuning.spin), tiles, &bindings);
    }
    let counts = DeviceVec::<u32>::alloc(dev, tiles)?;
    let most_a_group = tuning
        .group_max_tiles
        .unwrap_or(default_group_max_tiles(info, T::KIND.size()));
    let bits = group_bits(tiles, tuning.scan_in_pass_max_tiles, most_a_group);
    let groups = bits.map_or(tiles, |b| tiles.div_ceil(1 << b));
    // The group sums where groups hold several tiles; else the prefixes of a scan launch.
    let mut sums = match bits {
        Some(0) => None,
        Some(_) => Some(DeviceVec::<u32>::alloc(dev, groups)?),
        None => Some(DeviceVec::<u32>::alloc(dev, tiles)?),
    };
    let params = PartitionParams {
        scan: bits.is_some() as u32,
        group_bits: bits.unwrap_or(0),
        ..params(0)
    };
    if tiles > 0 {
        let bindings = steps_bindings(input, output, &counts, sums.as_ref(), count);
        let step = if params.group_bits > 0 {
            Step::Groups
        } else {
            Step::Count
        };
        launch(step, params, groups, &bindings)?;
    }
    if let (Some(prefix), None, true) = (&mut sums, bits, tiles > 0) {
        scan::device_scan(dev, ReduceOp::Sum, ScanKind::Exclusive, &counts, prefix)?;
    }
    let bindings = steps_bindings(input, output, &counts, sums.as_ref(), count);
    let step = if params.group_bits > 0 {
        Step::ScatterGroups
    } else {
        Step::Scatter
    };
    launch(step, params, tiles, &bindings)
}

/// Log2 of the tiles a group of the count step, whose sums the scatter step adds up with the
/// counts of its own group's tiles: the fewest tiles a group that leave at most `most` groups
/// (at most [`SCAN_IN_PASS_MAX_TILES`]; 0 with `tiles` at most that, every group one tile).
/// `None` where that needs more than `most_a_group` tiles a group (at most
/// [`SCAN_IN_PASS_MAX_TILES`]) or `most` is 0: the tile counts then take a scan launch.
fn group_bits(tiles: usize, most: usize, most_a_group: usize) -> Option<u32> {
    let most = most.min(SCAN_IN_PASS_MAX_TILES);
    if most == 0 {
        return None;
    }
    let mut bits = 0;
    while tiles.div_ceil(1 << bits) > most {
        bits += 1;
    }
    (1usize << bits <= most_a_group.min(SCAN_IN_PASS_MAX_TILES)).then_some(bits)
}

/// Most tiles a group of the count step by default for elements of `size` bytes: one workgroup
/// counts a group's tiles one after another, with more registers than the one-tile count step
/// (H200, NOTES.md version 48: CUDA 60 against 40 for 4-byte elements; Vulkan 83 against 65,
/// 8-byte elements 54), so groups pay only while they are small: four tiles on CUDA and for
/// 8-byte elements on Vulkan (µs, CUDA / Vulkan: `i32` 2^23 40.2 → 38.7 / –, `u64` 2^22 37.1 →
/// 34.3 / 36.1 → 31.6, 2^23 – / 62.5 → 58.6), none for 4-byte elements on Vulkan (`i32` 2^24
/// 68.7 → 72.0 with groups); larger inputs take the scan launch (`i32` 2^26 with groups of 16:
/// 222.2 → 225.3 / 225.1 → 247.9).
fn default_group_max_tiles(info: &crate::DeviceInfo, size: usize) -> usize {
    if info.backend == BackendKind::Cuda || size >= 8 {
        4
    } else {
        1
    }
}

/// The count and scatter steps' bindings; the third is the prefixes or the group sums, or (where
/// groups are single tiles) a binding the steps do not read.
fn steps_bindings<'a, T: PredicateElement>(
    input: &'a DeviceVec<T>,
    output: &'a DeviceVec<T>,
    counts: &'a DeviceVec<u32>,
    sums: Option<&'a DeviceVec<u32>>,
    count: &'a DeviceVec<u64>,
) -> [Binding<'a>; 5] {
    let third = sums.unwrap_or(counts);
    [
        input.binding(0, input.len()),
        output.binding(0, input.len()),
        counts.binding(0, counts.len()),
        third.binding(0, third.len()),
        count.binding(0, 1),
    ]
}

/// [`partition`] on host data: uploads, runs, and downloads the count and the output.
pub fn partition_host<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &[T],
) -> Result<(u64, Vec<T>)> {
    pred.validate()?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut dst = DeviceVec::alloc(dev, input.len())?;
    let mut count = DeviceVec::alloc(dev, 1)?;
    partition(dev, pred, &src, &mut dst, &mut count)?;
    Ok((count.to_vec(dev)?[0], dst.to_vec(dev)?))
}

fn validate<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    output: &DeviceVec<T>,
    count: &DeviceVec<u64>,
) -> Result<()> {
    pred.validate()?;
    if output.len() != input.len() {
        return Err(Error::LengthMismatch {
            name: "output",
            expected: input.len() as u64,
            actual: output.len() as u64,
        });
    }
    if count.is_empty() {
        return Err(Error::LengthMismatch {
            name: "count",
            expected: 1,
            actual: 0,
        });
    }
    plan::check_distinct(
        "partition",
        &[("output", output.raw()), ("count", count.raw())],
        &[("input", input.raw())],
    )?;
    let info = dev.info();
    plan::check_launch_len(info, "input.len()", input.len(), T::KIND.size())?;
    plan::require(
        info,
        T::KIND,
        SubgroupFeatures::BASIC | SubgroupFeatures::BALLOT | SubgroupFeatures::SHUFFLE,
    )
}

// The partition's tile is the compaction's, on the crate's common block.
const _: () = assert!(BLOCK == plan::BLOCK);
