//! Device radix sort: keys, key-value pairs and argsort, ascending or descending, over a bit
//! range as in CUB, stable, on any subgroup size.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::sort::{all_bits, SortOrder, Sorter};
//! use xwarp::DeviceVec;
//! let dev = xwarp::backend::open_default()?;
//! let keys = DeviceVec::from_slice(&*dev, &[3.5f32, -0.0, f32::NAN, 0.0, -1.0])?;
//! let mut sorted = DeviceVec::<f32>::alloc(&*dev, keys.len())?;
//! let mut sorter = Sorter::<f32>::new(&*dev, keys.len())?;
//! sorter.sort_keys(&*dev, &keys, &mut sorted, SortOrder::Ascending, all_bits::<f32>())?;
//! // [-1.0, -0.0, 0.0, 3.5, NaN]
//! # Ok(())
//! # }
//! ```
//!
//! # Order
//! Keys of every element type ([`crate::Element`]: `u32`, `i32`, `f32`, `u64`, `i64`, `f64`)
//! sort by their *mapped key*, an unsigned bit pattern of the key's width whose numeric order
//! is the wanted order ([`crate::cpu::sort::mapped_key`]):
//! - unsigned integers: the bits as they are (numeric order);
//! - signed integers: the sign bit flipped (numeric order);
//! - floats: every bit flipped when the sign bit is set, else only the sign bit flipped. That is
//!   IEEE 754 totalOrder: `-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN`, NaNs ordered by
//!   their payload (a larger payload further from zero), `-0.0` before `+0.0` (CUB treats the
//!   two zeros as equal);
//! - [`SortOrder::Descending`] inverts the mapped key, so equal keys still keep their input
//!   order (the sort stays stable).
//!
//! # Bit range
//! Only bits `begin_bit .. end_bit` of the mapped key decide the order; keys equal in those
//! bits keep their input order. `0 .. 32` (or [`all_bits`]) sorts 32-bit keys fully. As in
//! CUB, the range applies to the mapped key (for signed integers and floats, bit 31 / 63 of the
//! mapped key is the inverted sign). The range must satisfy `begin_bit < end_bit ≤` the key's
//! width.
//!
//! # Algorithm (Onesweep, Adinets & Merrill 2022)
//! A sort whose keys fit one workgroup takes one launch: the workgroup ranks them by every
//! digit in turn, the keys staying in it (`sort_onesweep`'s variant `WHOLE`; up to
//! [`WHOLE_MAX_BLOCK`] invocations, so 6144 keys of 32 bits where a workgroup has 48 KiB of
//! shared memory: [`TilePlan::whole`], [`TilePlan::whole_max`]). Longer sorts:
//! one launch clears the work buffer, one counts every 8-bit digit of the range at once
//! (`sort_histogram`), then one launch per digit, `ceil((end_bit - begin_bit) / 8)` of them
//! (the last digit may be narrower), sorts the keys by that digit (`sort_onesweep`): each
//! workgroup takes a tile of `block × items` keys, ranks them inside the tile by a multi-split
//! on subgroup ballots (one ballot per digit bit; every subgroup size from 4 to 128 lanes),
//! and finds where each digit's keys go by decoupled look-back over the tiles before it; the
//! ranked tile then leaves through shared memory, where keys without values may pass in two
//! rounds of half the tile each ([`Tuning::stage_rounds`]: 31 KiB of shared memory instead of
//! 47 for the 64-bit keys' tile, the default on Vulkan). Vulkan
//! promises no forward progress between workgroups, so a tile that waits too long for a
//! predecessor counts that predecessor's digits itself ([`Tuning::spin`]; 0 takes this
//! fallback whenever a predecessor has not published yet): the sort cannot deadlock on any
//! conformant device. The passes ping-pong between the caller's output and the sorter's
//! temporary storage so that the last one writes the caller's output. The shaders' headers
//! (`shaders/sort_onesweep.comp`) describe the kernels in full.
//!
//! # Storage
//! A [`Sorter`] owns the temporary storage: a second key buffer (a third for argsort of more
//! than two digits), a value buffer for pairs and argsort, and a work buffer (digit histograms,
//! tile counters and two passes' tile states: 2 KiB per tile of keys). It is sized when made
//! and grows when a call needs more; calls that fit allocate nothing. Inputs are only read;
//! outputs must be buffers that no other argument of the call uses ([`Error::InvalidParameter`]
//! otherwise, detected for buffers of one allocation; an application's wrapped ranges are the
//! application's to keep apart).
//!
//! # Limits
//! At most [`MAX_LEN`] = 2^30 - 1 keys, and no more than fit in one kernel binding of the
//! device (Vulkan's `maxStorageBufferRange`: keys, values and the work buffer each); 64-bit
//! keys and values need no 64-bit shader arithmetic. Every check happens before anything is
//! launched, so a refused call leaves its outputs untouched.

use crate::device::{
    Binding, Device, DeviceInfo, DeviceVec, Kernel, Launch, RawBuffer, SubgroupFeatures,
};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use crate::kernels::{SortHistogramParams, SortOnesweepParams};
use crate::plan;
use bytemuck::Zeroable;
use std::marker::PhantomData;
use std::ops::Range;

/// Bits per digit (one pass each).
pub const RADIX_BITS: u32 = 8;
/// Buckets per digit.
pub const RADIX: u32 = 1 << RADIX_BITS;
/// Most keys one sort accepts: every place and count a tile state holds fits in 30 bits.
pub const MAX_LEN: usize = (1 << 30) - 1;
/// Default [`Tuning::spin`].
pub const DEFAULT_SPIN: u32 = 1 << 12;
/// Default workgroup size where the subgroup size allows it (see [`TilePlan`]).
pub const DEFAULT_BLOCK: u32 = 256;
/// [`Tuning::items`] where it is 0 (the default): keys per invocation for 32-bit keys and
/// values, on CUDA and on Vulkan: [`MAX_ITEMS`], the largest tile a workgroup of 256 holds in
/// 48 KiB (measured on an H100, NOTES.md version 17, u32 keys at 2^28, µs a digit pass: CUDA
/// 1136 at 32 against 1224 at 28, 1240 at 24 and 1324 at 20; Vulkan 1683 at 32 against 1802,
/// 1960 and 2161; u32 pairs CUDA 2065 at 32 against 2381 at 28, Vulkan 2238 against 2355).
/// Pairs take the same: the staging area holds a key or a value per place, never both.
pub const DEFAULT_ITEMS: (u32, u32) = (MAX_ITEMS, MAX_ITEMS);
/// Keys per invocation where [`Tuning::items`] is 0 and a sort has fewer than [`LARGE_SORT`]
/// keys but at least the last entry's length of [`ITEMS_BY_LEN`], on CUDA and on Vulkan
/// (H100, u32 keys at 2^14, µs: CUDA 36.0 at 20 against 43.6 at 32, Vulkan 49.5 at 16 against
/// 68.6; NOTES.md version 17; H200, 2^19: CUDA 64.5 at 20 against 67.2 at 32, Vulkan 59.1 at 16
/// against 60.6, version 54).
pub const DEFAULT_ITEMS_SMALL: (u32, u32) = (20, 16);
/// Fewest keys for which the default tile of 4-byte keys and values takes [`DEFAULT_ITEMS`]
/// keys per invocation (H200, µs a sort at 2^20, CUDA / Vulkan: `u32` keys 77.6 / 71.8 at 32
/// against 81.6 / 78.6 at [`DEFAULT_ITEMS_SMALL`], `u32` pairs 88.7 / 80.0 against 94.0 /
/// 89.9; at 2^19 32 took 1.03–1.05× their time; NOTES.md version 54).
pub const LARGE_SORT: usize = 1 << 20;
/// Keys per invocation of the shortest sorts where [`Tuning::items`] (4-byte keys and values)
/// or [`Tuning::items_wide`] (an 8-byte key or value) is 0: each entry `(below, narrow, wide)`
/// gives sorts of fewer than `below` keys (and at least the entry before's) `narrow` keys per
/// invocation with 4-byte keys and values, `wide` with an 8-byte key or value (0: the
/// default); longer sorts take [`DEFAULT_ITEMS_SMALL`] below [`LARGE_SORT`], else the
/// defaults. Smaller tiles spread a short sort over more workgroups, each ranking fewer keys
/// one after another. H200, µs a sort, CUDA / Vulkan, the entry's against the default's
/// (NOTES.md version 54): `u32` keys 2^14 38.9 / 35.1 against 43.9 / 37.1 (8), 2^18 54.5 /
/// 50.6 against 56.2 / 50.4 (12); `u32` pairs 2^14 42.4 / 38.2 against 50.3 / 42.1 (8);
/// `u64` keys 2^16 83.8 / 82.2 against 88.7 / 95.1 (8; Vulkan in one staging round, see
/// [`WIDE_TWO_ROUNDS_FROM`]); `u64` pairs 2^17 103.1 / 100.9 against 119.6 / 110.9 (8), 2^18
/// 119.9 / 118.3 against 130.4 / 121.6 (12). At each entry's length the next entry's keys per
/// invocation were as fast or faster.
pub const ITEMS_BY_LEN: [(usize, u32, u32); 3] =
    [(1 << 17, 8, 8), (1 << 18, 12, 8), (1 << 19, 12, 12)];
/// Fewest keys for which 8-byte keys without values take [`DEFAULT_STAGE_ROUNDS_WIDE`]
/// (Vulkan: two rounds); shorter sorts of them stage in one round, where the tiles are too few
/// for a third workgroup a multiprocessor to matter (H200, `u64` keys, µs a sort, Vulkan: one
/// round 0.92–0.94× two rounds' time at 2^13–2^20, 2^21 257.0 against 258.9, 2^22 439.4
/// against 422.2; NOTES.md version 54).
pub const WIDE_TWO_ROUNDS_FROM: usize = 1 << 22;
/// Default [`Tuning::min_blocks`]: none, the compiler chooses (the u32 digit pass at 32 keys
/// a thread then takes 64 registers, four blocks of 256 a multiprocessor, as many as its
/// shared memory allows; earlier bounds made no faster pass, NOTES.md).
pub const DEFAULT_MIN_BLOCKS: u32 = 0;
/// CUDA: the digit pass's [`Tuning::min_blocks`] where it is 0 (the default) and 8-byte keys
/// carry 8-byte values: three blocks a multiprocessor (80 registers a thread, no spills, where
/// two blocks' bounds take 96). H200, u64 keys with u64 values at 2^24, µs a sort (NOTES.md
/// version 39, with the values moved by 8-byte loads and stores): 1737 against 1869 at two
/// blocks; 12 keys a thread 1912. (Version 27, values moved by 4-byte words: two blocks 2231
/// against three's 2452 on an H100.)
pub const WIDE_PAIRS_MIN_BLOCKS: u32 = 3;
/// Workgroup size of the digit passes on CUDA and on Vulkan where [`Tuning::block`] is `None`,
/// keys and values are 32-bit (pairs, argsorts with `u32` indices) and the sort has at least
/// [`PAIRS_BLOCK_FROM`] keys: 384 on CUDA, whose tile of 384 × 19 keys (the most 48 KiB hold)
/// compiles to 56 registers, three blocks a multiprocessor, where 256 × 32 takes 103 and two
/// (H200, `u32` keys with `u32` values, µs a sort: 2^24 564–566 against 593–596, 2^26 2021
/// against 2131, 2^28 7761 against 8230; NOTES.md version 39); 256 on Vulkan, where the same
/// tile was 1.09–1.12× slower. CUDA's tile is now [`PAIRS_ITEMS`] keys a thread, in dynamic
/// shared memory, where the device holds it.
pub const PAIRS_BLOCK: (u32, u32) = (384, DEFAULT_BLOCK);
/// Fewest keys for which pairs take [`PAIRS_BLOCK`]: at 2^22 both workgroups sorted `u32`
/// pairs in the same time on CUDA (199.0 against 198.0 µs), at 2^21 the wider one took 1.08×
/// the time (127.6 against 118.5 µs; H200, NOTES.md version 39).
pub const PAIRS_BLOCK_FROM: usize = 1 << 22;
/// CUDA: keys per thread of the digit passes where [`PAIRS_BLOCK`] applies (32-bit pairs from
/// [`PAIRS_BLOCK_FROM`] keys, [`Tuning::items`] 0): 384 × 24 keys a tile in 55 KB of dynamic
/// shared memory ([`DeviceInfo::max_shared_memory_bytes`]), at [`PAIRS_MIN_BLOCKS`] blocks a
/// multiprocessor (56 registers, no spills); fewer where a device's shared memory would not
/// hold that many blocks of it. H200, `u32` pairs, the sort's time against 384 × 19 in 48 KiB
/// (NOTES.md version 62): 0.950 / 0.952 / 0.956 at 2^24 / 2^26 / 2^28 (2^28: 7505 against
/// 7848 µs); 23 keys a thread 0.96–0.98, 26 0.94–0.97, 28 0.96–0.98; 23 without the blocks'
/// bound (two blocks) 1.02–1.03. As built here (version 63, H200, A/B against 384 × 19 in one
/// run): `u32` / `i32` / `f32` pairs 0.98 / 0.99 / 0.97 at 2^22, 0.95 at 2^24, 0.94–0.94 /
/// 0.94 / 0.93 at 2^28 (2^28 `u32`: 7187 against 7629 µs).
pub const PAIRS_ITEMS: u32 = 24;
/// CUDA: [`Tuning::min_blocks`] where it is 0 and the tile is [`PAIRS_ITEMS`]'s in dynamic
/// shared memory: three blocks a multiprocessor.
pub const PAIRS_MIN_BLOCKS: u32 = 3;
/// Shared memory the CUDA driver keeps for itself per resident block (compute capability 8.0
/// and up), bytes: [`PAIRS_ITEMS`]'s tile leaves it room.
const RESERVED_SHARED: u64 = 1024;
/// [`Tuning::stage_rounds`] where it is 0 (the default), on CUDA and on Vulkan, for 4-byte
/// keys without values: one round on both. (H200, 2^26 keys, µs a digit pass, NOTES.md
/// version 36: two rounds took 5–12% longer on every form tried; on Vulkan NVIDIA's driver
/// gave the two-round `u32` pass 122 registers, two workgroups a multiprocessor either way.)
pub const DEFAULT_STAGE_ROUNDS: (u32, u32) = (1, 1);
/// [`Tuning::stage_rounds`] where it is 0 (the default), on CUDA and on Vulkan, for 8-byte
/// keys without values from [`WIDE_TWO_ROUNDS_FROM`] keys (one round below): two rounds on
/// Vulkan, where NVIDIA's driver gives a multiprocessor about 100 KiB of shared memory (two
/// workgroups of 47 KiB, three of 31 KiB at 66 registers: `u64` keys' pass 0.92–0.93× the
/// time at 2^24–2^26 on an H200), one on CUDA (four blocks of 47 KiB fit already; two rounds
/// took 1.07–1.09× the time). NOTES.md, version 36.
pub const DEFAULT_STAGE_ROUNDS_WIDE: (u32, u32) = (1, 2);
/// [`Tuning::items_wide`] where it is 0 (the default), on CUDA and on Vulkan (CUDA's pairs:
/// [`WIDE_PAIRS_ITEMS`]).
pub const DEFAULT_ITEMS_WIDE: (u32, u32) = (16, 16);
/// CUDA: [`Tuning::items_wide`] where it is 0 (the default) and keys carry values, either of
/// them 8 bytes: 20 keys a thread, the tile 48 KiB of shared memory holds once the subgroups'
/// digit counts share the staging area's words ([`TilePlan::counts_in_stage`]). H200, 2^24
/// keys, µs a sort (NOTES.md version 42): `u64` keys with `u64` values 1654.8 against 1735.9
/// at 16 keys a thread, `u64` keys with `u32` values 1446.6 against 1502.9, `u32` keys with
/// `u64` values 725.1 against 758.4. (`u32` pairs lost: the counts' words free only once every
/// key is ranked, so the keys wait in registers: 76 registers against 56 at 384 × 19, 1.15×
/// the time.)
pub const WIDE_PAIRS_ITEMS: u32 = 20;
/// Largest [`Tuning::items`] and [`Tuning::items_wide`].
pub const MAX_ITEMS: u32 = 32;
/// Default [`Tuning::histogram_groups`].
pub const DEFAULT_HISTOGRAM_GROUPS: u32 = 512;
/// Most keys one workgroup of the histogram launch reads: past
/// [`Tuning::histogram_groups`] × this many keys the launch takes more workgroups. H200, GPU
/// medians of the launch at 2^27 keys (µs, 512 workgroups of 2^18 keys against 2112 of 63 744,
/// NOTES.md version 45): CUDA `f32` 318 against 270, `u32` 258 against 252, `u64` 533 against
/// 488; Vulkan `f32` 285 against 268, `u32` 257 against 246, `u64` 674 against 614. Smaller
/// chunks lose: 2112 workgroups at 2^21–2^24 (2^11–2^13 keys each) took 1.0–1.7× the time of
/// 512 workgroups'.
pub const HISTOGRAM_MAX_CHUNK: usize = 1 << 16;
/// Most subgroups per workgroup when the workgroup is sized by the subgroup size: the
/// subgroups' digit counts take this many times 1 KiB of shared memory.
pub const MAX_SUBGROUPS: u32 = 16;

/// Work buffer layout, in 32-bit words (the kernels' XW_SORT_* constants): a histogram row of
/// [`RADIX`] words per digit pass (at most 8), a tile counter per pass, then the tile states
/// of two passes, each `tiles` rows of [`RADIX`] words.
const WORK_HIST: u32 = 0;
const WORK_COUNTERS: u32 = 2048;
const WORK_STATES: u32 = WORK_COUNTERS + RADIX;
// Eight 64-bit digit passes' histogram rows lie below the counters.
const _: () = assert!(WORK_HIST + 8 * RADIX <= WORK_COUNTERS);
/// Workgroup size of `sort_histogram`.
const HISTOGRAM_BLOCK: u32 = 256;
/// Words each invocation of the clearing launch zeroes.
const CLEAR_ITEMS: u32 = 4;
/// Fewest keys a histogram workgroup reads.
const HISTOGRAM_MIN_CHUNK: usize = 8 * HISTOGRAM_BLOCK as usize;
const _: () = assert!(HISTOGRAM_MAX_CHUNK.is_multiple_of(HISTOGRAM_BLOCK as usize));
const _: () = assert!(HISTOGRAM_MAX_CHUNK >= HISTOGRAM_MIN_CHUNK);
/// Keys per invocation a sort in one launch may take besides the digit passes' own (few
/// values, few compiled variants): each of its passes ranks the whole tile, padding included.
const WHOLE_ITEMS: [u32; 7] = [1, 2, 4, 6, 8, 12, 16];
/// Widest workgroup of a sort in one launch ([`TilePlan::whole`]): 512 invocations rank 4096
/// keys faster than 256 (an H100, NOTES.md version 17); wider, the subgroups' digit counts
/// (1 KiB each) leave too little shared memory.
pub const WHOLE_MAX_BLOCK: u32 = 512;

/// `sort_onesweep` flags.
const FLAG_INDEX_VALUES: u32 = 1;
const FLAG_WRITE_KEYS: u32 = 2;

/// The subgroup operation classes the sort kernels use.
const SORT_OPS: SubgroupFeatures = SubgroupFeatures(
    SubgroupFeatures::BASIC.0
        | SubgroupFeatures::BALLOT.0
        | SubgroupFeatures::SHUFFLE.0
        | SubgroupFeatures::ARITHMETIC.0,
);

/// Ascending or descending.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Smallest mapped key first.
    Ascending,
    /// Largest mapped key first (equal keys still in input order).
    Descending,
}

impl std::fmt::Display for SortOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SortOrder::Ascending => "ascending",
            SortOrder::Descending => "descending",
        })
    }
}

/// Every bit of `K`: `0 .. 32` or `0 .. 64`.
pub fn all_bits<K: Element>() -> Range<u32> {
    0..K::KIND.size() as u32 * 8
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The index types of [`Sorter::argsort`]: `u32`, or `u64` for callers who keep indices of
/// that width (every sortable length fits in `u32`).
pub trait SortIndex: Element + sealed::Sealed {}
impl SortIndex for u32 {}
impl SortIndex for u64 {}

/// Knobs that change speed, never results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Polls of unpublished predecessor states each invocation of a tile may make in one
    /// look-back; after them a tile counts every predecessor it still finds unpublished
    /// itself. 0 counts a predecessor at the first unpublished poll. (A budget per look-back,
    /// not per predecessor: llvmpipe ends all loops of an invocation after 65535 iterations in
    /// total.)
    pub spin: u32,
    /// Workgroup size of the digit passes, a multiple of 32 and of the device's largest
    /// subgroup size, at most 1024; `None`: [`DEFAULT_BLOCK`], or less where the smallest
    /// subgroup size would give more than [`MAX_SUBGROUPS`] subgroups; for pairs of 32-bit keys
    /// and values from [`PAIRS_BLOCK_FROM`] keys the backend's [`PAIRS_BLOCK`] where the device
    /// takes it (on CUDA with [`PAIRS_ITEMS`] where [`Tuning::items`] is 0).
    pub block: Option<u32>,
    /// Keys per invocation in a tile when keys and values are 32-bit, 1 ..= [`MAX_ITEMS`], or
    /// 0 for the backend's default ([`DEFAULT_ITEMS`]); lowered where the tile would not fit
    /// in the device's shared memory.
    pub items: u32,
    /// Keys per invocation when keys or values are 64-bit, or 0 for the backend's default
    /// ([`DEFAULT_ITEMS_WIDE`], [`WIDE_PAIRS_ITEMS`]).
    pub items_wide: u32,
    /// CUDA: a digit's lanes from `__match_any_sync` instead of one `__ballot_sync` per digit
    /// bit (Vulkan always uses ballots).
    pub match_any: bool,
    /// Workgroups of the histogram launch (each reads a contiguous chunk of keys): at most this
    /// many, more only where each would read over [`HISTOGRAM_MAX_CHUNK`] keys.
    pub histogram_groups: u32,
    /// Copies of each counter in the histogram launch's shared memory (1, 2, 4 or 8); `None`:
    /// the most that take at most 16 KiB and three quarters of the device's shared memory.
    pub histogram_parts: Option<u32>,
    /// CUDA: the digit pass's blocks each multiprocessor should hold at once, which bounds
    /// the registers the compiler may give a thread (`__launch_bounds__(block, min_blocks)`);
    /// 0 (the default, [`DEFAULT_MIN_BLOCKS`]) is the library's choice: the compiler free,
    /// except for 8-byte keys with 8-byte values ([`WIDE_PAIRS_MIN_BLOCKS`]). Vulkan drivers
    /// choose on their own.
    pub min_blocks: u32,
    /// Rounds in which the digit pass of keys without values stages its sorted tile in shared
    /// memory: 1 (the whole tile at once), 2 (half the tile at a time, its second half read
    /// again from the pass's input: 16 KiB less shared memory for 32-bit keys at 8192 a tile,
    /// so more workgroups fit a multiprocessor), or 0 for the backend's default
    /// ([`DEFAULT_STAGE_ROUNDS`], [`DEFAULT_STAGE_ROUNDS_WIDE`]). Pairs, odd keys per
    /// invocation, workgroups of more than 512 invocations (256 for 8-byte keys) and sorts in
    /// one launch always take one round.
    pub stage_rounds: u32,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            spin: DEFAULT_SPIN,
            block: None,
            items: 0,
            items_wide: 0,
            match_any: false,
            histogram_groups: DEFAULT_HISTOGRAM_GROUPS,
            histogram_parts: None,
            min_blocks: DEFAULT_MIN_BLOCKS,
            stage_rounds: 0,
        }
    }
}

/// The tile of the digit passes on one device, for one width of keys and values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TilePlan {
    /// Workgroup size.
    pub block: u32,
    /// Keys per invocation.
    pub items: u32,
    /// Most subgroups a workgroup may have (block / the smallest subgroup size the device may
    /// run): each keeps its own digit counts in shared memory.
    pub subgroups: u32,
    /// Shared words for the sorted tile's staged keys, later its staged values (the wider of
    /// the two per key), divided by [`TilePlan::stage_rounds`].
    pub stage_words: u32,
    /// Rounds in which the tile passes through the staging area (1 or 2; see
    /// [`Tuning::stage_rounds`]).
    pub stage_rounds: u32,
    /// The most lanes a subgroup of the device may have (the largest subgroup size).
    pub lanes: u32,
    /// The subgroups' digit counts share their words with the staging area (the digit
    /// passes of pairs with an 8-byte key or value, on CUDA): the staged keys then wait until
    /// every key is ranked, and a larger tile fits the same shared memory
    /// ([`WIDE_PAIRS_ITEMS`]). Sorts in one launch keep the two apart.
    pub counts_in_stage: bool,
    /// The workgroup's shared memory is dynamic (CUDA): the tile needs more than
    /// [`DeviceInfo::shared_memory_bytes`], up to [`DeviceInfo::max_shared_memory_bytes`]
    /// ([`PAIRS_ITEMS`]).
    pub dynamic_shared: bool,
}

impl TilePlan {
    /// Keys per tile.
    pub fn tile(&self) -> usize {
        (self.block * self.items) as usize
    }

    /// Words of a ballot that hold every lane of the device's subgroups: 1 up to 32 lanes,
    /// else 4.
    pub fn ballot_words(&self) -> u32 {
        if self.lanes <= 32 {
            1
        } else {
            4
        }
    }

    /// Shared memory of one workgroup of the digit pass, bytes (the kernels' arrays: the
    /// subgroups' digit offsets, a spare word per lane of a ballot (the Vulkan ranking's),
    /// staging, six per-digit arrays, the subgroup sums, three words).
    pub fn shared_bytes(&self) -> u64 {
        let subgroups = self.subgroups as u64;
        let spare = 32 * self.ballot_words() as u64;
        let counts = subgroups * RADIX as u64;
        let stage = self.stage_words as u64;
        let (counts, stage) = if self.counts_in_stage {
            (0, counts.max(stage))
        } else {
            (counts, stage)
        };
        4 * (counts + spare + stage + 6 * RADIX as u64 + subgroups + 3)
    }

    /// Plans the tile for keys of `key_bytes` and values of `value_bytes` (0 for none) on
    /// `info`'s device, within its static shared memory
    /// ([`DeviceInfo::shared_memory_bytes`]).
    pub fn new(
        info: &DeviceInfo,
        tuning: &Tuning,
        key_bytes: usize,
        value_bytes: usize,
    ) -> Result<Self> {
        Self::within(
            info,
            tuning,
            key_bytes,
            value_bytes,
            info.shared_memory_bytes as u64,
        )
    }

    /// [`TilePlan::new`] within `shared` bytes of shared memory a workgroup: past the device's
    /// static shared memory the plan is [`TilePlan::dynamic_shared`].
    fn within(
        info: &DeviceInfo,
        tuning: &Tuning,
        key_bytes: usize,
        value_bytes: usize,
        shared: u64,
    ) -> Result<Self> {
        let sg = info.subgroup_size.max(1);
        // Unpinned, the device may run any size of its range: plan for the smallest.
        let sg_min = if info.subgroup_size_pinned {
            sg
        } else {
            sg.min(info.min_subgroup_size.max(1))
        };
        let unit = info.max_subgroup_size.max(sg).max(32);
        let blocks: Vec<u32> = match tuning.block {
            Some(b) if b > 0 && b % unit == 0 && b <= 1024 => vec![b],
            Some(b) => {
                return Err(Error::invalid(
                    "block",
                    b,
                    format!(
                        "a multiple of {unit} (32 and the largest subgroup size), at most 1024"
                    ),
                ))
            }
            // The largest that fits, down to one unit: the subgroups' counts need 1 KiB each
            // whatever the tile, so small shared memories need fewer subgroups.
            None => {
                let first = (DEFAULT_BLOCK.min(sg_min * MAX_SUBGROUPS) / unit).max(1) * unit;
                (1..=first / unit).rev().map(|m| m * unit).collect()
            }
        };
        let words = (key_bytes.max(value_bytes) / 4).max(1) as u32;
        // The staging area holds the sorted tile's keys, later (pairs) its values.
        let key_words = (key_bytes / 4).max(1) as u32;
        let value_words = (value_bytes / 4) as u32;
        let stage_width = key_words.max(value_words);
        let cuda = info.backend == crate::device::BackendKind::Cuda;
        let pick = |(on_cuda, on_vulkan): (u32, u32)| if cuda { on_cuda } else { on_vulkan };
        let (name, requested) = if words == 2 {
            ("items_wide", tuning.items_wide)
        } else {
            ("items", tuning.items)
        };
        // CUDA's pairs with an 8-byte key or value: the counts in the staging area's words.
        let counts_in_stage = cuda && value_bytes > 0 && words == 2;
        let requested = match (requested, words) {
            (0, 2) if counts_in_stage => WIDE_PAIRS_ITEMS,
            (0, 2) => pick(DEFAULT_ITEMS_WIDE),
            (0, _) => pick(DEFAULT_ITEMS),
            (r, _) => r,
        };
        if !(1..=MAX_ITEMS).contains(&requested) {
            return Err(Error::invalid(name, requested, format!("1..={MAX_ITEMS}")));
        }
        let rounds = match tuning.stage_rounds {
            0 if key_bytes == 8 => pick(DEFAULT_STAGE_ROUNDS_WIDE),
            0 => pick(DEFAULT_STAGE_ROUNDS),
            r @ (1 | 2) => r,
            r => {
                return Err(Error::invalid(
                    "stage_rounds",
                    r,
                    "0 (the backend's default), 1 or 2",
                ))
            }
        };
        let mut smallest = 0;
        for &block in &blocks {
            let subgroups = (block / sg_min).max(1);
            for items in (1..=requested).rev() {
                let plan = TilePlan {
                    block,
                    items,
                    subgroups,
                    stage_words: block * items * stage_width,
                    stage_rounds: 1,
                    lanes: info.max_subgroup_size.max(sg),
                    counts_in_stage,
                    dynamic_shared: false,
                };
                // The tile is the one a whole staging area fits (so a sort in one launch
                // holds it too); two rounds then stage half of it each: keys only, an even
                // number a thread, at most 2 * RADIX words of keys a workgroup.
                if plan.shared_bytes() <= shared {
                    let plan = TilePlan {
                        dynamic_shared: plan.shared_bytes() > info.shared_memory_bytes as u64,
                        ..plan
                    };
                    let halves = TilePlan {
                        stage_words: plan.stage_words / 2,
                        stage_rounds: 2,
                        ..plan
                    };
                    // The Vulkan kernel's spare place per invocation for the ranking's
                    // keys of the second half lies in two of the per-digit arrays.
                    let two = rounds == 2
                        && !plan.dynamic_shared
                        && value_bytes == 0
                        && items.is_multiple_of(2)
                        && key_words * block <= 2 * RADIX;
                    return Ok(if two { halves } else { plan });
                }
                smallest = plan.shared_bytes();
            }
        }
        Err(Error::MissingFeature {
            device: info.name.clone(),
            missing: format!(
                "{smallest} bytes of shared memory per workgroup for the sort's smallest tile \
                 (it has {shared})"
            ),
        })
    }
}

impl TilePlan {
    /// The tile of the digit passes of a sort of `n` keys: [`TilePlan::new`]'s, with default
    /// keys per invocation chosen by length ([`ITEMS_BY_LEN`], then [`DEFAULT_ITEMS_SMALL`]
    /// below [`LARGE_SORT`] keys for 32-bit keys and values), one staging round for 64-bit
    /// keys below [`WIDE_TWO_ROUNDS_FROM`], and from [`PAIRS_BLOCK_FROM`] keys with 32-bit
    /// values the backend's [`PAIRS_BLOCK`] in place of the default workgroup where the
    /// device takes it (CUDA: with [`PAIRS_ITEMS`] keys a thread in dynamic shared memory,
    /// fewer where [`PAIRS_MIN_BLOCKS`] blocks of it would not fit a multiprocessor's).
    pub fn for_len(
        info: &DeviceInfo,
        tuning: &Tuning,
        key_bytes: usize,
        value_bytes: usize,
        n: usize,
    ) -> Result<Self> {
        let cuda = info.backend == crate::device::BackendKind::Cuda;
        let pairs_block = if cuda { PAIRS_BLOCK.0 } else { PAIRS_BLOCK.1 };
        if tuning.block.is_none()
            && tuning.items == 0
            && key_bytes <= 4
            && value_bytes == 4
            && n >= PAIRS_BLOCK_FROM
            && pairs_block != DEFAULT_BLOCK
            && pairs_block <= info.max_block
        {
            let wide = Tuning {
                block: Some(pairs_block),
                items: if cuda { PAIRS_ITEMS } else { 0 },
                ..*tuning
            };
            let shared = if cuda {
                pairs_shared(info)
            } else {
                info.shared_memory_bytes as u64
            };
            // Where the device cannot take that workgroup, the default plan.
            if let Ok(plan) = Self::within(info, &wide, key_bytes, value_bytes, shared) {
                return Ok(plan);
            }
        }
        let mut t = *tuning;
        if t.stage_rounds == 0 && key_bytes == 8 && n < WIDE_TWO_ROUNDS_FROM {
            t.stage_rounds = 1;
        }
        let by_len = ITEMS_BY_LEN.iter().find(|&&(below, _, _)| n < below);
        if key_bytes.max(value_bytes) <= 4 {
            if t.items == 0 {
                t.items = match by_len {
                    Some(&(_, narrow, _)) => narrow,
                    None if n < LARGE_SORT => {
                        if cuda {
                            DEFAULT_ITEMS_SMALL.0
                        } else {
                            DEFAULT_ITEMS_SMALL.1
                        }
                    }
                    None => 0,
                };
            }
        } else if t.items_wide == 0 {
            t.items_wide = by_len.map_or(0, |&(_, _, wide)| wide);
        }
        Self::new(info, &t, key_bytes, value_bytes)
    }

    /// The lengths at which [`TilePlan::for_len`]'s default tile may grow, so that a sort of
    /// one key fewer takes more tiles than a longer one: storage for `n` keys holds the tile
    /// states of each such length, less one, up to `n`.
    fn tile_steps() -> impl Iterator<Item = usize> {
        ITEMS_BY_LEN
            .iter()
            .map(|&(below, _, _)| below)
            .chain([LARGE_SORT, PAIRS_BLOCK_FROM])
    }

    /// The tile of the sort of `n` keys in one launch (one workgroup ranks every key by every
    /// digit; see the module docs), or `None` where `n` needs the digit passes. `self` is the
    /// digit passes' plan on `info`'s device ([`TilePlan::new`]). The workgroup may
    /// be wider than the digit passes' (up to [`WHOLE_MAX_BLOCK`], within the device's
    /// largest workgroup and shared memory) and the keys per invocation fewer: of the
    /// candidates that hold `n` keys, the fewest keys per invocation (each subgroup ranks its
    /// keys one step after another, so this is the ranking's chain), then the narrower
    /// workgroup (less padding). A [`Tuning::block`] pins the workgroup.
    pub fn whole(&self, info: &DeviceInfo, tuning: &Tuning, n: usize) -> Option<TilePlan> {
        self.whole_candidates(info, tuning)
            .filter(|c| c.tile() >= n)
            .min_by_key(|c| (c.items, c.block))
    }

    /// The most keys a sort in one launch takes on `info`'s device ([`TilePlan::whole`]).
    pub fn whole_max(&self, info: &DeviceInfo, tuning: &Tuning) -> usize {
        self.whole_candidates(info, tuning)
            .map(|c| c.tile())
            .max()
            .unwrap_or(0)
    }

    /// Every tile a sort in one launch may take: workgroups from the digit passes' up to
    /// [`WHOLE_MAX_BLOCK`] (doubling; only the digit passes' where [`Tuning::block`] pins it),
    /// each with [`WHOLE_ITEMS`] keys per invocation, the digit passes' own or [`MAX_ITEMS`],
    /// where the device's shared memory holds them.
    fn whole_candidates(
        &self,
        info: &DeviceInfo,
        tuning: &Tuning,
    ) -> impl Iterator<Item = TilePlan> + '_ {
        let stage_width = self.stage_words * self.stage_rounds / (self.block * self.items).max(1);
        let sg_min = (self.block / self.subgroups.max(1)).max(1);
        let widest = if tuning.block.is_some() {
            self.block
        } else {
            WHOLE_MAX_BLOCK.min(info.max_block).max(self.block)
        };
        let shared = info.shared_memory_bytes as u64;
        std::iter::successors(Some(self.block), |b| Some(b * 2))
            .take_while(move |&b| b <= widest)
            .flat_map(move |block| {
                let own = (block == self.block).then_some(self.items);
                WHOLE_ITEMS
                    .into_iter()
                    .chain(own)
                    .chain([MAX_ITEMS])
                    .map(move |items| TilePlan {
                        block,
                        items,
                        subgroups: (block / sg_min).max(1),
                        stage_words: block * items * stage_width,
                        stage_rounds: 1,
                        lanes: self.lanes,
                        counts_in_stage: false,
                        dynamic_shared: false,
                    })
            })
            .filter(move |c| c.shared_bytes() <= shared)
    }
}

/// The largest number of keys of `K` with values of `value_bytes` bytes (0 for none) that one
/// sort accepts on `info`'s device: [`MAX_LEN`], or fewer where the keys, the values or the
/// work buffer would not fit in one binding.
pub fn max_len<K: Element>(info: &DeviceInfo, value_bytes: usize, tile: usize) -> usize {
    let binding = info.max_binding_bytes;
    let widest = K::KIND.size().max(value_bytes) as u64;
    let by_data = binding / widest;
    // The work buffer: WORK_STATES words plus 2 * RADIX words per tile, every word index
    // within 32 bits.
    let words = (binding / 4).min(u32::MAX as u64);
    let rows = words.saturating_sub(WORK_STATES as u64) / (2 * RADIX as u64);
    let by_work = rows.saturating_mul(tile as u64);
    by_data.min(by_work).min(MAX_LEN as u64) as usize
}

/// Checks that the device runs the sort kernels. They treat 64-bit keys and values as pairs
/// of 32-bit words: no 64-bit shader arithmetic is needed, whatever the key type (a Vulkan
/// device with `shaderInt64` takes a 64-bit key's digit by one 64-bit shift, the same bits).
pub(crate) fn check_device(info: &DeviceInfo) -> Result<()> {
    plan::require(info, ElemKind::U32, SORT_OPS)
}

/// Checks `begin_bit < end_bit ≤ width of K`.
pub(crate) fn check_bits<K: Element>(bits: &Range<u32>) -> Result<()> {
    let width = K::KIND.size() as u32 * 8;
    if bits.end == 0 || bits.end > width {
        return Err(Error::invalid(
            "end_bit",
            bits.end,
            format!(
                "1..={width} (above begin_bit, at most the width of {})",
                K::KIND
            ),
        ));
    }
    if bits.start >= bits.end {
        return Err(Error::invalid(
            "begin_bit",
            bits.start,
            format!("0..{} (below end_bit)", bits.end),
        ));
    }
    Ok(())
}

fn check_len(name: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected != actual {
        return Err(Error::LengthMismatch {
            name,
            expected: expected as u64,
            actual: actual as u64,
        });
    }
    Ok(())
}

pub(crate) fn key_kind(kind: ElemKind) -> u32 {
    match kind {
        ElemKind::U32 | ElemKind::U64 => 0,
        ElemKind::I32 | ElemKind::I64 => 1,
        ElemKind::F32 | ElemKind::F64 => 2,
    }
}

/// What moves with the keys.
#[derive(Clone, Copy)]
enum Values<'a> {
    None,
    /// Pairs: values of `words` 32-bit words each.
    Pairs {
        input: &'a RawBuffer,
        output: &'a RawBuffer,
        words: u32,
    },
    /// Argsort: the keys' input indices, `words` words each; the sorted keys are not kept.
    Indices {
        output: &'a RawBuffer,
        words: u32,
    },
}

impl Values<'_> {
    fn words(&self) -> u32 {
        match *self {
            Values::None => 0,
            Values::Pairs { words, .. } | Values::Indices { words, .. } => words,
        }
    }
}

/// Temporary storage and tuning for sorting keys of type `K` on one device, reusable: a call
/// that fits the storage allocates nothing.
pub struct Sorter<K: Element> {
    tuning: Tuning,
    /// Keys between passes.
    keys_a: Option<DeviceVec<K>>,
    /// Argsort of three or more digits: keys between passes, the other half of the ping-pong.
    keys_b: Option<DeviceVec<K>>,
    /// Values between passes, as 32-bit words.
    values: Option<DeviceVec<u32>>,
    /// Histograms, tile counters and tile states.
    work: Option<DeviceVec<u32>>,
    /// What the histogram rows of `work` count: the keys [`Sorter::count_digits`] counted last
    /// (their length, the bit range and order), until a sort overwrites them.
    counted: Option<Counted>,
    /// Set by [`Sorter::take_counts_next`]: the next sort by one digit of those keys takes its
    /// row of the counts instead of a histogram launch.
    take_counts: bool,
    _k: PhantomData<K>,
}

/// The keys whose digits the work buffer's histogram rows count.
#[derive(Clone, Debug, PartialEq)]
struct Counted {
    len: usize,
    bits: Range<u32>,
    order: SortOrder,
}

impl<K: Element> std::fmt::Debug for Sorter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let len = |v: &Option<DeviceVec<K>>| v.as_ref().map_or(0, DeviceVec::len);
        f.debug_struct("Sorter")
            .field("key", &K::KIND)
            .field("tuning", &self.tuning)
            .field("keys_a", &len(&self.keys_a))
            .field("keys_b", &len(&self.keys_b))
            .field(
                "value_words",
                &self.values.as_ref().map_or(0, DeviceVec::len),
            )
            .field("work_words", &self.work.as_ref().map_or(0, DeviceVec::len))
            .finish()
    }
}

impl<K: Element> Sorter<K> {
    /// Storage for sorting up to `len` keys (every bit) without values.
    pub fn new(dev: &dyn Device, len: usize) -> Result<Self> {
        Self::reserved(dev, len, 0, false, Tuning::default())
    }

    /// Storage for sorting up to `len` keys (every bit) with values of type `V`.
    pub fn for_pairs<V: Element>(dev: &dyn Device, len: usize) -> Result<Self> {
        Self::reserved(dev, len, V::KIND.size(), false, Tuning::default())
    }

    /// Storage for the argsort of up to `len` keys (every bit) with indices of type `I`.
    pub fn for_argsort<I: SortIndex>(dev: &dyn Device, len: usize) -> Result<Self> {
        Self::reserved(dev, len, I::KIND.size(), true, Tuning::default())
    }

    /// A sorter with no storage yet and `tuning`: the first call allocates what it needs.
    pub fn with_tuning(tuning: Tuning) -> Self {
        Sorter {
            tuning,
            keys_a: None,
            keys_b: None,
            values: None,
            work: None,
            counted: None,
            take_counts: false,
            _k: PhantomData,
        }
    }

    fn reserved(
        dev: &dyn Device,
        len: usize,
        value_bytes: usize,
        argsort: bool,
        tuning: Tuning,
    ) -> Result<Self> {
        let mut s = Self::with_tuning(tuning);
        let passes = all_bits::<K>().len().div_ceil(RADIX_BITS as usize);
        s.reserve(dev, len, value_bytes, passes, argsort)?;
        Ok(s)
    }

    /// The tuning calls use.
    pub fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Replaces the tuning; storage grows at the next call that needs more.
    pub fn set_tuning(&mut self, tuning: Tuning) {
        self.tuning = tuning;
    }

    /// Makes sure the storage fits a sort of `n` keys with `value_bytes` values over `passes`
    /// digits; returns the tile plan.
    fn reserve(
        &mut self,
        dev: &dyn Device,
        n: usize,
        value_bytes: usize,
        passes: usize,
        argsort: bool,
    ) -> Result<(TilePlan, Option<TilePlan>)> {
        let info = dev.info();
        let plan_for = |m| TilePlan::for_len(info, &self.tuning, K::KIND.size(), value_bytes, m);
        let plan = plan_for(n)?;
        let limit = max_len::<K>(info, value_bytes, plan.tile());
        if n > limit {
            return Err(Error::invalid(
                "keys_in.len()",
                n,
                format!(
                    "at most {limit} keys of {} with {value_bytes}-byte values on `{}`",
                    K::KIND,
                    info.name
                ),
            ));
        }
        let whole = plan.whole(info, &self.tuning, n);
        if whole.is_some() {
            // One launch: the histogram rows (and the counters' place) only, no temporaries.
            grow(dev, &mut self.work, WORK_STATES as usize)?;
            return Ok((plan, whole));
        }
        // Room for the tile states of every shorter sort too (shorter sorts may take smaller
        // tiles), so that storage reserved for `n` keys serves them all.
        let mut tiles = n.div_ceil(plan.tile());
        for step in TilePlan::tile_steps().filter(|&s| s <= n) {
            tiles = tiles.max((step - 1).div_ceil(plan_for(step - 1)?.tile()));
        }
        let work_words = WORK_STATES as usize + 2 * tiles * RADIX as usize;
        grow(dev, &mut self.work, work_words)?;
        // Keys between passes: passes 1 .. passes - 1 read what the pass before wrote; the
        // last pass writes the caller's output (argsort: nothing).
        let a = if passes >= 2 { n } else { 0 };
        let b = if argsort && passes >= 3 { n } else { 0 };
        grow(dev, &mut self.keys_a, a)?;
        grow(dev, &mut self.keys_b, b)?;
        let v = if passes >= 2 { n * value_bytes / 4 } else { 0 };
        grow(dev, &mut self.values, v)?;
        Ok((plan, None))
    }

    /// Sorts `keys_in` into `keys_out` (same length, another buffer) by bits `bits` of the
    /// mapped keys (see the module docs).
    pub fn sort_keys(
        &mut self,
        dev: &dyn Device,
        keys_in: &DeviceVec<K>,
        keys_out: &mut DeviceVec<K>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        check_bits::<K>(&bits)?;
        check_len("keys_out", keys_in.len(), keys_out.len())?;
        plan::check_distinct(
            "sort",
            &[("keys_out", keys_out.raw())],
            &[("keys_in", keys_in.raw())],
        )?;
        self.run(
            dev,
            keys_in,
            Some(keys_out.raw()),
            Values::None,
            order,
            bits,
        )
    }

    /// Sorts key-value pairs: `keys_out` gets the sorted keys and `values_out` each key's value
    /// (all four of one length; outputs in buffers of their own). Stable: values of equal keys
    /// keep their input order.
    #[allow(clippy::too_many_arguments)]
    pub fn sort_pairs<V: Element>(
        &mut self,
        dev: &dyn Device,
        keys_in: &DeviceVec<K>,
        keys_out: &mut DeviceVec<K>,
        values_in: &DeviceVec<V>,
        values_out: &mut DeviceVec<V>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        check_bits::<K>(&bits)?;
        check_len("values_in", keys_in.len(), values_in.len())?;
        check_len("keys_out", keys_in.len(), keys_out.len())?;
        check_len("values_out", keys_in.len(), values_out.len())?;
        plan::check_distinct(
            "sort",
            &[
                ("keys_out", keys_out.raw()),
                ("values_out", values_out.raw()),
            ],
            &[("keys_in", keys_in.raw()), ("values_in", values_in.raw())],
        )?;
        let values = Values::Pairs {
            input: values_in.raw(),
            output: values_out.raw(),
            words: (V::KIND.size() / 4) as u32,
        };
        self.run(dev, keys_in, Some(keys_out.raw()), values, order, bits)
    }

    /// Argsort: `indices_out[i]` is the input index of the key that sorts to place `i`
    /// (stable: equal keys in increasing index order).
    pub fn argsort<I: SortIndex>(
        &mut self,
        dev: &dyn Device,
        keys_in: &DeviceVec<K>,
        indices_out: &mut DeviceVec<I>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        check_bits::<K>(&bits)?;
        check_len("indices_out", keys_in.len(), indices_out.len())?;
        plan::check_distinct(
            "sort",
            &[("indices_out", indices_out.raw())],
            &[("keys_in", keys_in.raw())],
        )?;
        let values = Values::Indices {
            output: indices_out.raw(),
            words: (I::KIND.size() / 4) as u32,
        };
        self.run(dev, keys_in, None, values, order, bits)
    }

    /// Zeroes the first `words` words of `work` (the histogram kernel in its clearing mode;
    /// `keys_in` only fills its key binding).
    fn clear(
        &self,
        dev: &dyn Device,
        keys_in: &DeviceVec<K>,
        work: Binding<'_>,
        words: usize,
    ) -> Result<()> {
        let info = dev.info();
        let keys = whole(
            keys_in.raw(),
            (keys_in.len().max(1) * K::KIND.size()) as u64,
        );
        let clear = SortHistogramParams {
            n: words as u32,
            clear: 1,
            ..SortHistogramParams::zeroed()
        };
        let clearing = Kernel {
            name: "sort_histogram",
            elem: K::KIND,
            consts: &[("PARTS", 1), ("KEY_ORDER", 0)],
        };
        dev.launch(&Launch {
            kernel: clearing,
            block: HISTOGRAM_BLOCK,
            groups: plan::grid(
                info,
                words.div_ceil((HISTOGRAM_BLOCK * CLEAR_ITEMS) as usize) as u64,
            )?,
            bindings: &[keys, work],
            params: bytemuck::bytes_of(&clear),
        })
    }

    /// Zeroes the first `clear_words` words of the work buffer (`work`) and counts every
    /// digit of `bits` of `keys_in` into its histogram rows (row `d` for digit `d`).
    fn histogram(
        &self,
        dev: &dyn Device,
        keys_in: &DeviceVec<K>,
        work: Binding<'_>,
        clear_words: usize,
        order: SortOrder,
        bits: &Range<u32>,
    ) -> Result<()> {
        let info = dev.info();
        let n = keys_in.len();
        // Checked before anything is launched.
        let parts = histogram_parts(info, K::KIND.size(), self.tuning.histogram_parts)?;
        let key_order = 2 * key_kind(K::KIND) + u32::from(order == SortOrder::Descending);
        let keys = whole(keys_in.raw(), (n.max(1) * K::KIND.size()) as u64);
        self.clear(dev, keys_in, work, clear_words)?;
        let cap = self.tuning.histogram_groups.max(1) as usize;
        let chunk = n
            .div_ceil(cap)
            .min(HISTOGRAM_MAX_CHUNK)
            .next_multiple_of(HISTOGRAM_BLOCK as usize)
            .max(HISTOGRAM_MIN_CHUNK);
        let count = SortHistogramParams {
            n: n as u32,
            chunk: chunk as u32,
            passes: bits.len().div_ceil(RADIX_BITS as usize) as u32,
            begin: bits.start,
            end: bits.end,
            clear: 0,
        };
        let consts = [("PARTS", parts), ("KEY_ORDER", key_order)];
        let histogram = Kernel {
            name: "sort_histogram",
            elem: K::KIND,
            consts: &consts,
        };
        dev.launch(&Launch {
            kernel: histogram,
            block: HISTOGRAM_BLOCK,
            groups: plan::grid(info, n.div_ceil(chunk) as u64)?,
            bindings: &[keys, work],
            params: bytemuck::bytes_of(&count),
        })
    }

    /// Counts every 8-bit digit of `bits` of the mapped keys of `keys` (the histogram launch
    /// of a sort, alone); [`Sorter::counts_of_digits`] reads the counts. `crate::group` learns
    /// from them which digits every key shares.
    ///
    /// The storage grows to what a sort of these keys by one digit with values of
    /// `value_bytes` bytes needs, so that such a sort after [`Sorter::take_counts_next`] finds
    /// the counts where they were.
    pub(crate) fn count_digits(
        &mut self,
        dev: &dyn Device,
        keys: &DeviceVec<K>,
        order: SortOrder,
        bits: Range<u32>,
        value_bytes: usize,
    ) -> Result<()> {
        check_bits::<K>(&bits)?;
        check_device(dev.info())?;
        if keys.len() > MAX_LEN {
            return Err(Error::invalid(
                "keys.len()",
                keys.len(),
                format!("at most {MAX_LEN}"),
            ));
        }
        self.counted = None;
        self.take_counts = false;
        if keys.is_empty() {
            grow(dev, &mut self.work, WORK_STATES as usize)?;
        } else {
            self.reserve(dev, keys.len(), value_bytes, 1, false)?;
        }
        let work = self
            .work
            .as_ref()
            .ok_or_else(|| Error::invalid("sorter", "no work buffer", "storage made by grow"))?;
        // The histogram rows lie below the counters: nothing else needs clearing.
        let words = WORK_COUNTERS as usize;
        self.histogram(dev, keys, work.binding(0, words), words, order, &bits)?;
        self.counted = Some(Counted {
            len: keys.len(),
            bits,
            order,
        });
        Ok(())
    }

    /// The next sort call, where it sorts by one digit (of at most 8 bits, at a digit's place
    /// of the range counted) the keys that [`Sorter::count_digits`] counted last, unchanged
    /// since, takes that digit's counts instead of counting again: one read of the keys less.
    /// Any other next call counts as usual.
    pub(crate) fn take_counts_next(&mut self) {
        self.take_counts = true;
    }

    /// The counts of the `RADIX` values of each of the first `digits` digits (counted from
    /// `begin_bit`), digit after digit, of the keys that the latest call counted: a sort's
    /// first launch, or [`Sorter::count_digits`]. Valid only after a call with at least one
    /// key. Waits for the device.
    pub(crate) fn counts_of_digits(&self, dev: &dyn Device, digits: usize) -> Result<Vec<u32>> {
        let work = self.work.as_ref().ok_or_else(|| {
            Error::invalid(
                "sorter",
                "nothing counted yet",
                "a sort or count_digits first",
            )
        })?;
        let mut counts = vec![0u32; digits * RADIX as usize];
        dev.read(
            work.raw(),
            WORK_HIST as u64 * 4,
            bytemuck::cast_slice_mut(&mut counts),
        )?;
        Ok(counts)
    }

    fn run(
        &mut self,
        dev: &dyn Device,
        keys_in: &DeviceVec<K>,
        keys_out: Option<&RawBuffer>,
        values: Values<'_>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        let info = dev.info();
        check_device(info)?;
        let n = keys_in.len();
        let passes = bits.len().div_ceil(RADIX_BITS as usize);
        let vw = values.words();
        let argsort = matches!(values, Values::Indices { .. });
        // The row of the counts this call takes (see `take_counts_next`), if any; whatever
        // it takes, the rows count nothing known afterwards.
        let counted = self.counted.take();
        let row = std::mem::take(&mut self.take_counts)
            .then_some(counted)
            .flatten()
            .filter(|c| c.len == n && c.order == order && passes == 1)
            .and_then(|c| {
                let off = bits.start.checked_sub(c.bits.start)?;
                let row = off / RADIX_BITS;
                let digit_end = (bits.start + RADIX_BITS).min(c.bits.end);
                (off % RADIX_BITS == 0 && bits.end == digit_end).then_some(row)
            });
        if n == 0 {
            return Ok(());
        }
        let work_len = self.work.as_ref().map_or(0, DeviceVec::len);
        let (plan, one_launch) = self.reserve(dev, n, 4 * vw as usize, passes, argsort)?;
        // Storage that grew is fresh: the counts are gone with the old buffer.
        let row = row.filter(|_| self.work.as_ref().map_or(0, DeviceVec::len) == work_len);
        let tiles = n.div_ceil(plan.tile());
        // `reserve` made every buffer this call reads; a missing one would be a planning bug,
        // reported rather than risked.
        let missing = || Error::invalid("sorter", "storage too small", "storage made by reserve");
        let work = self.work.as_ref().ok_or_else(missing)?;
        let keys_a = self.keys_a.as_ref().map(DeviceVec::raw);
        let rows = tiles * RADIX as usize;
        let key_bytes = (n * K::KIND.size()) as u64;
        let keys = |raw| whole(raw, key_bytes);
        let value_bytes = (n * 4 * vw as usize) as u64;
        let vals = |raw| whole(raw, value_bytes);
        let key_order = 2 * key_kind(K::KIND) + u32::from(order == SortOrder::Descending);
        let consts_of = |plan: &TilePlan, whole: bool| {
            onesweep_consts(
                plan,
                (K::KIND.size(), vw),
                key_order,
                &self.tuning,
                info.backend,
                whole,
            )
        };

        if let Some(small) = one_launch {
            // One workgroup holds every key: the whole sort in one launch (every pass; it
            // writes the histogram rows too, for `counts_of_digits`), on the tile
            // `TilePlan::whole` chose (each pass ranks the whole tile, padding included).
            let work_b = work.binding(0, WORK_STATES as usize);
            let consts = consts_of(&small, true);
            let mut flags = 0;
            let dst = match keys_out {
                Some(out) => {
                    flags |= FLAG_WRITE_KEYS;
                    out
                }
                // Argsort stores no keys: its key binding is only a placeholder.
                None => keys_in.raw(),
            };
            let (vin, vout) = match values {
                Values::None => (work_b, work_b),
                Values::Pairs { input, output, .. } => (vals(input), vals(output)),
                Values::Indices { output, .. } => {
                    flags |= FLAG_INDEX_VALUES;
                    (work_b, vals(output))
                }
            };
            let params = SortOnesweepParams {
                n: n as u32,
                tiles: 1,
                shift: bits.start,
                spin: self.tuning.spin,
                flags,
                passes: passes as u32,
                end_bit: bits.end,
                ..SortOnesweepParams::zeroed()
            };
            return dev.launch(&Launch {
                kernel: Kernel {
                    name: "sort_onesweep",
                    elem: K::KIND,
                    consts: &consts,
                },
                block: small.block,
                groups: plan::grid(info, 1)?,
                bindings: &[keys(keys_in.raw()), keys(dst), vin, vout, work_b],
                params: bytemuck::bytes_of(&params),
            });
        }

        let work_b = work.binding(0, WORK_STATES as usize + 2 * rows);
        match row {
            // Zero the tile counters and the pass's tile states; the histogram row is there.
            Some(_) => self.clear(
                dev,
                keys_in,
                work.binding(
                    WORK_COUNTERS as usize,
                    (WORK_STATES - WORK_COUNTERS) as usize + rows,
                ),
                (WORK_STATES - WORK_COUNTERS) as usize + rows,
            )?,
            // Zero the histograms, the tile counters and the first pass's tile states; count.
            None => {
                let clear_words = WORK_STATES as usize + rows;
                self.histogram(dev, keys_in, work_b, clear_words, order, &bits)?;
            }
        }

        let keys_b = self.keys_b.as_ref().map(DeviceVec::raw);
        let value_tmp = self.values.as_ref().map(DeviceVec::raw);
        // Where pass `j - 1` writes (j = 1 ..= passes): the last pass the caller's output, the
        // ones before it alternating so that each reads what the previous one wrote.
        let key_dst = |j: usize| -> Option<&RawBuffer> {
            match keys_out {
                Some(out) if (passes - j).is_multiple_of(2) => Some(out),
                Some(_) => keys_a,
                None if j == passes => None,
                None if j % 2 == 1 => keys_a,
                None => keys_b,
            }
        };
        let value_dst = |j: usize| -> Option<&RawBuffer> {
            let out = match values {
                Values::None => return None,
                Values::Pairs { output, .. } | Values::Indices { output, .. } => output,
            };
            if (passes - j).is_multiple_of(2) {
                Some(out)
            } else {
                value_tmp
            }
        };
        let consts = consts_of(&plan, false);
        let onesweep = Kernel {
            name: "sort_onesweep",
            elem: K::KIND,
            consts: &consts,
        };
        for d in 0..passes {
            let shift = bits.start + RADIX_BITS * d as u32;
            let src = if d == 0 {
                keys_in.raw()
            } else {
                key_dst(d).ok_or_else(missing)?
            };
            // Argsort's last pass stores no keys: its key binding is only a placeholder.
            let write_keys = keys_out.is_some() || d + 1 < passes;
            let (dst, mut flags) = if write_keys {
                (key_dst(d + 1).ok_or_else(missing)?, FLAG_WRITE_KEYS)
            } else {
                (src, 0)
            };
            // Bindings the pass does not touch hold the work buffer.
            let (vin, vout) = match values {
                Values::None => (work_b, work_b),
                Values::Pairs { input, .. } if d == 0 => {
                    (vals(input), vals(value_dst(1).ok_or_else(missing)?))
                }
                Values::Indices { .. } if d == 0 => {
                    flags |= FLAG_INDEX_VALUES;
                    (work_b, vals(value_dst(1).ok_or_else(missing)?))
                }
                _ => (
                    vals(value_dst(d).ok_or_else(missing)?),
                    vals(value_dst(d + 1).ok_or_else(missing)?),
                ),
            };
            let state = |p: usize| WORK_STATES + ((p % 2) * rows) as u32;
            let params = SortOnesweepParams {
                n: n as u32,
                tiles: tiles as u32,
                // The pass's histogram row and tile counter: the counted digit's row where the
                // call takes the counts (one pass).
                pass: row.unwrap_or(d as u32),
                shift,
                digit_bits: RADIX_BITS.min(bits.end - shift),
                state_cur: state(d),
                state_next: state(d + 1),
                clear_next: u32::from(d + 1 < passes),
                spin: self.tuning.spin,
                flags,
                passes: 1,
                end_bit: bits.end,
            };
            dev.launch(&Launch {
                kernel: onesweep,
                block: plan.block,
                groups: plan::grid(info, tiles as u64)?,
                bindings: &[keys(src), keys(dst), vin, vout, work_b],
                params: bytemuck::bytes_of(&params),
            })?;
        }
        Ok(())
    }
}

/// The most shared memory the histogram's counter copies take by default: 16 KiB (4 copies
/// for 32-bit keys, 2 for 64-bit). On an H100, NVIDIA's Vulkan driver ran the histogram at a
/// third of CUDA's speed with 32 KiB of counters and near it with 16 KiB; CUDA ran both alike.
const HISTOGRAM_SHARED: u64 = 16 << 10;

/// Copies of every counter in `sort_histogram`'s shared memory for keys of `key_bytes` bytes:
/// `chosen` ([`Tuning::histogram_parts`]: 1, 2, 4 or 8, within the device's shared memory), or
/// the most (up to 8) whose counters of every digit pass of the key take at most
/// [`HISTOGRAM_SHARED`] and three quarters of the device's shared memory per workgroup.
fn histogram_parts(info: &DeviceInfo, key_bytes: usize, chosen: Option<u32>) -> Result<u32> {
    let per_part = (key_bytes as u64 / 4) * 4 * RADIX as u64 * 4;
    let shared = info.shared_memory_bytes as u64;
    match chosen {
        None => Ok([8u32, 4, 2, 1]
            .into_iter()
            .find(|&p| p as u64 * per_part <= HISTOGRAM_SHARED.min(shared * 3 / 4))
            .unwrap_or(1)),
        Some(p) if [1, 2, 4, 8].contains(&p) && p as u64 * per_part <= shared => Ok(p),
        Some(p) => Err(Error::invalid(
            "histogram_parts",
            p,
            format!(
                "1, 2, 4 or 8, with {per_part} bytes of shared memory each (the device has {shared})"
            ),
        )),
    }
}

/// Shared memory a workgroup of CUDA's 32-bit pairs may take for [`PAIRS_ITEMS`]' tile,
/// bytes: the device's opt-in limit, or less where [`PAIRS_MIN_BLOCKS`] blocks of it (with the
/// driver's own [`RESERVED_SHARED`] each) would not fit a multiprocessor's shared memory; never
/// below the static limit.
fn pairs_shared(info: &DeviceInfo) -> u64 {
    let opt_in = info.max_shared_memory_bytes as u64;
    let unit = info.unit_shared_memory_bytes as u64;
    let by_unit = if unit > 0 {
        (unit / PAIRS_MIN_BLOCKS as u64).saturating_sub(RESERVED_SHARED)
    } else {
        opt_in
    };
    opt_in.min(by_unit).max(info.shared_memory_bytes as u64)
}

/// The variant constants of `sort_onesweep`: Vulkan specialization constants by name, CUDA
/// `-D` options. `MATCH_ANY`, `BLOCK` and `MIN_BLOCKS` only the CUDA twin reads
/// (src/kernels/table.rs); the
/// GLSL kernel ranks by ballots and takes its workgroup size from constant 0.
pub(crate) fn onesweep_consts(
    plan: &TilePlan,
    (key_bytes, value_words): (usize, u32),
    key_order: u32,
    tuning: &Tuning,
    backend: crate::device::BackendKind,
    whole: bool,
) -> Vec<(&'static str, u32)> {
    let mut consts = vec![
        ("ITEMS", plan.items),
        ("VALUE_WORDS", value_words),
        ("HIST_SG", plan.subgroups),
        ("STAGE_WORDS", plan.stage_words),
    ];
    if backend == crate::device::BackendKind::Cuda {
        consts.push(("MATCH_ANY", u32::from(tuning.match_any)));
        consts.push(("BLOCK", plan.block));
        let dynamic = plan.dynamic_shared && !whole;
        let min_blocks = match tuning.min_blocks {
            0 if key_bytes == 8 && value_words == 2 => WIDE_PAIRS_MIN_BLOCKS,
            0 if dynamic => PAIRS_MIN_BLOCKS,
            m => m,
        };
        consts.push(("MIN_BLOCKS", min_blocks));
        consts.push(("COUNTS_IN_STAGE", u32::from(plan.counts_in_stage)));
        // The bytes of the tile's shared memory, in 16-byte steps (the kernel's struct is
        // aligned so); 0: static shared memory.
        let bytes = if dynamic {
            plan.shared_bytes().div_ceil(16) * 16
        } else {
            0
        };
        consts.push((
            crate::device::DYNAMIC_SHARED_CONST,
            u32::try_from(bytes).unwrap_or(u32::MAX),
        ));
    } else {
        // One ballot word holds every lane of subgroups of up to 32.
        consts.push(("BALLOT_WORDS", plan.ballot_words()));
    }
    consts.push(("KEY_ORDER", key_order));
    consts.push(("WHOLE", u32::from(whole)));
    consts
}

/// The first `bytes` of `raw`.
fn whole(raw: &RawBuffer, bytes: u64) -> Binding<'_> {
    Binding {
        buffer: raw,
        offset: 0,
        bytes,
    }
}

/// Replaces `slot` by a buffer of at least `len` elements when it holds fewer (`len` 0: leaves
/// it as it is).
fn grow<T: Element>(dev: &dyn Device, slot: &mut Option<DeviceVec<T>>, len: usize) -> Result<()> {
    if len == 0 || slot.as_ref().is_some_and(|v| v.len() >= len) {
        return Ok(());
    }
    // Free the old storage first, so growing never needs both at once.
    *slot = None;
    *slot = Some(DeviceVec::alloc(dev, len)?);
    Ok(())
}

/// Sorts host keys on `dev` (ascending or descending, by bits `bits`).
pub fn sort_keys_host<K: Element>(
    dev: &dyn Device,
    keys: &[K],
    order: SortOrder,
    bits: Range<u32>,
) -> Result<Vec<K>> {
    check_bits::<K>(&bits)?;
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut output = DeviceVec::alloc(dev, keys.len())?;
    Sorter::<K>::with_tuning(Tuning::default()).sort_keys(dev, &input, &mut output, order, bits)?;
    output.to_vec(dev)
}

/// Sorts host key-value pairs on `dev`; returns the sorted keys and their values.
pub fn sort_pairs_host<K: Element, V: Element>(
    dev: &dyn Device,
    keys: &[K],
    values: &[V],
    order: SortOrder,
    bits: Range<u32>,
) -> Result<(Vec<K>, Vec<V>)> {
    check_bits::<K>(&bits)?;
    check_len("values", keys.len(), values.len())?;
    let keys_in = DeviceVec::from_slice(dev, keys)?;
    let values_in = DeviceVec::from_slice(dev, values)?;
    let mut keys_out = DeviceVec::alloc(dev, keys.len())?;
    let mut values_out = DeviceVec::alloc(dev, keys.len())?;
    Sorter::<K>::with_tuning(Tuning::default()).sort_pairs(
        dev,
        &keys_in,
        &mut keys_out,
        &values_in,
        &mut values_out,
        order,
        bits,
    )?;
    Ok((keys_out.to_vec(dev)?, values_out.to_vec(dev)?))
}

/// The argsort of host keys on `dev`, as `u32` indices.
pub fn argsort_host<K: Element>(
    dev: &dyn Device,
    keys: &[K],
    order: SortOrder,
    bits: Range<u32>,
) -> Result<Vec<u32>> {
    check_bits::<K>(&bits)?;
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut output = DeviceVec::alloc(dev, keys.len())?;
    Sorter::<K>::with_tuning(Tuning::default()).argsort(dev, &input, &mut output, order, bits)?;
    output.to_vec(dev)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::device::{BackendKind, DeviceType, Subnormals};

    pub(crate) fn info(sg: u32, min: u32, max: u32, pinned: bool, shared: u32) -> DeviceInfo {
        DeviceInfo {
            backend: BackendKind::Vulkan,
            index: 0,
            name: "test".into(),
            vendor_id: 0,
            device_type: DeviceType::Other,
            driver: String::new(),
            subgroup_size: sg,
            min_subgroup_size: min,
            max_subgroup_size: max,
            subgroup_size_pinned: pinned,
            subgroup_features: SORT_OPS,
            max_binding_bytes: 1 << 30,
            binding_alignment: 16,
            max_groups: [65535; 3],
            shared_memory_bytes: shared,
            max_shared_memory_bytes: shared,
            unit_shared_memory_bytes: 0,
            compute_units: 0,
            max_block: 1024,
            int64: false,
            float64: false,
            int64_atomics: false,
            workgroup_coherence: false,
            subnormals_f32: Subnormals::Guaranteed,
            subnormals_f64: Subnormals::Guaranteed,
        }
    }

    /// Devices' subgroup sizes: (the size, the smallest, the largest, pinned).
    const SUBGROUP_RANGES: [(u32, u32, u32, bool); 8] = [
        (4, 4, 4, true),
        (8, 8, 8, true),
        (16, 16, 16, true),
        (32, 32, 32, true),
        (32, 8, 32, false),
        (64, 64, 64, true),
        (64, 32, 64, false),
        (128, 128, 128, true),
    ];

    #[test]
    fn tiles_fit_every_subgroup_size_and_shared_memory() {
        let t = Tuning::default();
        for (sg, min, max, pinned) in SUBGROUP_RANGES {
            for shared in [16384, 32768, 49152] {
                for (kb, vb) in [(4, 0), (4, 4), (4, 8), (8, 0), (8, 8)] {
                    let i = info(sg, min, max, pinned, shared);
                    let p = TilePlan::new(&i, &t, kb, vb).unwrap();
                    let sg_min = if pinned { sg } else { min };
                    assert!(p.shared_bytes() <= shared as u64, "{p:?}");
                    assert_eq!(p.block % 32, 0);
                    assert_eq!(p.block % max, 0);
                    assert!(p.subgroups * sg_min >= p.block);
                    assert!((p.stage_words * p.stage_rounds) as usize >= p.tile() * kb.max(vb) / 4);
                    assert!(
                        p.stage_rounds == 1 || (vb == 0 && p.items.is_multiple_of(2)),
                        "{p:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn staging_rounds_halve_the_keys_staging_area_only() {
        let i = info(32, 32, 32, true, 49152);
        let rounds = |r: u32, items: u32, kb: usize, vb: usize| {
            let t = Tuning {
                stage_rounds: r,
                items,
                items_wide: items,
                ..Tuning::default()
            };
            TilePlan::new(&i, &t, kb, vb)
        };
        let one = rounds(1, 32, 4, 0).unwrap();
        let two = rounds(2, 32, 4, 0).unwrap();
        assert_eq!((one.stage_rounds, one.stage_words), (1, 8192));
        assert_eq!((two.stage_rounds, two.stage_words), (2, 4096));
        assert_eq!(two.tile(), one.tile());
        assert_eq!(two.shared_bytes() + 16384, one.shared_bytes(), "{two:?}");
        // The Vulkan defaults: two rounds for 8-byte keys, one for 4-byte keys; pairs and
        // odd keys a thread take one.
        assert_eq!(rounds(0, 32, 4, 0).unwrap().stage_rounds, 1);
        assert_eq!(rounds(0, 16, 8, 0).unwrap().stage_rounds, 2);
        assert_eq!(rounds(0, 16, 8, 8).unwrap().stage_rounds, 1);
        assert_eq!(rounds(2, 32, 4, 4).unwrap().stage_rounds, 1);
        assert_eq!(rounds(2, 15, 4, 0).unwrap().stage_rounds, 1);
        // At most 2 * RADIX words of keys a workgroup (the spare places of the Vulkan kernel).
        for (block, kb, want) in [(512, 4, 2), (1024, 4, 1), (256, 8, 2), (512, 8, 1)] {
            let t = Tuning {
                stage_rounds: 2,
                block: Some(block),
                items: 8,
                items_wide: 8,
                ..Tuning::default()
            };
            let p = TilePlan::new(&i, &t, kb, 0).unwrap();
            assert_eq!(p.stage_rounds, want, "{p:?}");
        }
        for bad in [3, 4, u32::MAX] {
            match rounds(bad, 32, 4, 0) {
                Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "stage_rounds"),
                other => panic!("stage_rounds {bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn one_launch_tiles_fit_and_hold_their_keys() {
        let t = Tuning::default();
        for (sg, min, max, pinned) in SUBGROUP_RANGES {
            for shared in [16384, 32768, 49152] {
                for max_block in [128, 256, 1024] {
                    for (kb, vb) in [(4, 0), (4, 4), (8, 0), (8, 8)] {
                        let mut i = info(sg, min, max, pinned, shared);
                        i.max_block = max_block;
                        let p = TilePlan::new(&i, &t, kb, vb).unwrap();
                        let most = p.whole_max(&i, &t);
                        assert!(most >= p.tile(), "{p:?}");
                        let sg_min = if pinned { sg } else { min };
                        let mut last_items = 0;
                        for n in [1, 2, 31, 33, 1000, 2048, 3000, 4096, 5121, 6144, most] {
                            let Some(w) = p.whole(&i, &t, n) else {
                                assert!(n > most, "{n} of {most}: {p:?}");
                                continue;
                            };
                            assert!(w.tile() >= n && n <= most);
                            assert!(w.shared_bytes() <= shared as u64, "{w:?}");
                            assert!(w.block <= max_block.max(p.block) && w.block <= 1024);
                            assert_eq!(w.block % p.block, 0);
                            assert!(w.subgroups * sg_min >= w.block);
                            assert!(w.stage_words as usize >= w.tile() * kb.max(vb) / 4);
                            assert_eq!(w.stage_rounds, 1);
                            // More keys never take fewer keys per invocation.
                            assert!(w.items >= last_items, "{n}: {w:?}");
                            last_items = w.items;
                        }
                        assert!(p.whole(&i, &t, most + 1).is_none());
                        // A pinned workgroup stays pinned.
                        let pin = Tuning {
                            block: Some(p.block),
                            ..t
                        };
                        let w = p.whole(&i, &pin, 1).unwrap();
                        assert_eq!(w.block, p.block);
                    }
                }
            }
        }
        // A GPU with 48 KiB and subgroups of 32: 512 invocations for 4096 32-bit keys (8 each).
        let i = info(32, 32, 32, true, 49152);
        let p = TilePlan::new(&i, &t, 4, 0).unwrap();
        let w = p.whole(&i, &t, 4096).unwrap();
        assert_eq!((w.block, w.items), (512, 8));
        assert_eq!(p.whole_max(&i, &t), p.tile().max(6144));
    }

    /// CUDA's 32-bit pairs from PAIRS_BLOCK_FROM keys take PAIRS_ITEMS keys a thread in
    /// dynamic shared memory where the device's opt-in limit and its multiprocessor hold
    /// PAIRS_MIN_BLOCKS blocks of it; the rest of the plans stay within static shared memory.
    #[test]
    fn cuda_pairs_take_the_opt_in_tile_where_it_fits() {
        let t = Tuning::default();
        let cuda = |opt_in: u32, unit: u32| {
            let mut i = info(32, 32, 32, true, 49152);
            i.backend = BackendKind::Cuda;
            i.max_shared_memory_bytes = opt_in;
            i.unit_shared_memory_bytes = unit;
            i
        };
        // Compute capability 9.0: 227 KiB a block, 228 KiB a multiprocessor.
        let h100 = cuda(232_448, 233_472);
        let p = TilePlan::for_len(&h100, &t, 4, 4, PAIRS_BLOCK_FROM).unwrap();
        assert_eq!((p.block, p.items), (PAIRS_BLOCK.0, PAIRS_ITEMS), "{p:?}");
        assert!(p.dynamic_shared && p.shared_bytes() > 49152, "{p:?}");
        assert!(PAIRS_MIN_BLOCKS as u64 * (p.shared_bytes() + RESERVED_SHARED) <= 233_472);
        let consts = onesweep_consts(&p, (4, 1), 0, &t, BackendKind::Cuda, false);
        let bytes = consts
            .iter()
            .find(|c| c.0 == crate::device::DYNAMIC_SHARED_CONST)
            .unwrap()
            .1;
        assert!(bytes as u64 >= p.shared_bytes() && bytes % 16 == 0 && bytes <= 232_448);
        assert!(consts.contains(&("MIN_BLOCKS", PAIRS_MIN_BLOCKS)));
        // The same length's argsort (4-byte indices) and signed or float keys take it too;
        // shorter sorts, keys alone, 8-byte keys or values and a chosen tile do not.
        for (kb, vb, n, tuning) in [
            (4, 4, PAIRS_BLOCK_FROM - 1, t),
            (4, 0, PAIRS_BLOCK_FROM, t),
            (8, 4, PAIRS_BLOCK_FROM, t),
            (4, 8, PAIRS_BLOCK_FROM, t),
            (8, 8, PAIRS_BLOCK_FROM, t),
            (4, 4, PAIRS_BLOCK_FROM, Tuning { items: 19, ..t }),
            (
                4,
                4,
                PAIRS_BLOCK_FROM,
                Tuning {
                    block: Some(384),
                    ..t
                },
            ),
        ] {
            let q = TilePlan::for_len(&h100, &tuning, kb, vb, n).unwrap();
            assert!(
                !q.dynamic_shared && q.shared_bytes() <= 49152,
                "{kb} {vb} {n}: {q:?}"
            );
            let consts = onesweep_consts(
                &q,
                (kb, vb as u32 / 4),
                0,
                &tuning,
                BackendKind::Cuda,
                false,
            );
            assert!(
                consts.contains(&(crate::device::DYNAMIC_SHARED_CONST, 0)),
                "{consts:?}"
            );
        }
        // A multiprocessor of 164 KiB (compute capability 8.0) holds three blocks of 23 keys
        // a thread, not of 24; one of 100 KiB (8.6) three of 32 KiB: the static tile.
        let a100 = TilePlan::for_len(&cuda(166_912, 167_936), &t, 4, 4, 1 << 24).unwrap();
        assert_eq!((a100.block, a100.items), (384, 23), "{a100:?}");
        assert!(a100.dynamic_shared);
        let small = TilePlan::for_len(&cuda(101_376, 102_400), &t, 4, 4, 1 << 24).unwrap();
        assert_eq!((small.block, small.items), (384, 19), "{small:?}");
        assert!(!small.dynamic_shared);
        // No opt-in beyond the static limit: the static tile, as before.
        let none = TilePlan::for_len(&cuda(49152, 0), &t, 4, 4, 1 << 24).unwrap();
        assert_eq!(
            (none.block, none.items, none.dynamic_shared),
            (384, 19, false)
        );
        // Vulkan never plans past its limit.
        let mut vk = h100.clone();
        vk.backend = BackendKind::Vulkan;
        let v = TilePlan::for_len(&vk, &t, 4, 4, 1 << 24).unwrap();
        assert!(!v.dynamic_shared && v.shared_bytes() <= 49152, "{v:?}");
        let consts = onesweep_consts(&v, (4, 1), 0, &t, BackendKind::Vulkan, false);
        assert!(consts
            .iter()
            .all(|c| c.0 != crate::device::DYNAMIC_SHARED_CONST));
        // The sort in one launch keeps static shared memory.
        let w = p.whole(&h100, &t, 4096).unwrap();
        assert!(!w.dynamic_shared && w.shared_bytes() <= 49152, "{w:?}");
    }

    #[test]
    fn bad_bit_ranges_name_the_bound() {
        assert!(check_bits::<u32>(&(0..32)).is_ok());
        assert!(check_bits::<u64>(&(63..64)).is_ok());
        for (bits, name) in [
            (0..33, "end_bit"),
            (8..8, "begin_bit"),
            (Range { start: 9, end: 8 }, "begin_bit"),
        ] {
            match check_bits::<f32>(&bits) {
                Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{bits:?}: {other:?}"),
            }
        }
    }
}
