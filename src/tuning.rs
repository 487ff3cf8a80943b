//! Every choice the library makes for speed alone, in one place: which kernel variant, how
//! many launches, how wide a look-back window, how many layers per workgroup. Each is chosen
//! from the device's facts and the input's length, and each stands beside the measurement
//! that justified it (`NOTES.md` has the runs). None of them changes a result: every variant
//! keeps the documented order, so the bits are the same whichever is taken. The families'
//! `Tuning` structs (`reduce::Tuning`, `scan::Tuning`, `compact::Tuning`, `stencil::Tuning`,
//! `sort::Tuning`) override these where a caller or a test wants another choice.

use crate::device::{BackendKind, DeviceInfo};
use crate::element::ElemKind;
use crate::reduce::ReduceOp;
use crate::stencil::{StencilVariant, FEW_ROWS, MANY_ROWS, ROWS};

/// Reduce: whether the device reduce of `tiles` tiles takes one launch (the last workgroup of
/// each tile of totals reducing it) rather than one launch per level.
///
/// One launch on CUDA up to two tiles of totals (2^25 elements), per level above and on Vulkan.
/// H200 (NOTES.md, version 5): one launch was 5–26% faster on CUDA from 2^16 to 2^22 elements
/// and 4–12% slower on Vulkan from 2^16 to 2^24. Above one tile of totals, on CUDA (version
/// 9): on an H100 one launch was 1–5% faster at 2^25–2^26 and about 1% at 2^28; on an H200
/// 0–3% slower at 2^25 and 9–23% slower at 2^26–2^28. On Vulkan it was up to 14% slower at
/// 2^22–2^23 and equal from 2^27 (H100, version 8).
pub(crate) fn reduce_one_launch(info: &DeviceInfo, tiles: usize) -> bool {
    info.backend == BackendKind::Cuda && tiles <= crate::reduce::AUTO_ONE_LAUNCH_TILES
}

/// Scan: the device-scan kernel for elements of `elem` with the tile in registers or not
/// ([`scan_tile_in_registers`]). On Vulkan the register tile is `scan_device_vec`; else 32-bit
/// types keep a tile's flag and value in one 64-bit word where the device has 64-bit buffer
/// atomics (`scan_device_s64`), else in two 32-bit words (`scan_device`); the CUDA twin always
/// keeps one 64-bit word, and takes the register tile through its `VEC` constant.
///
/// H100 (NOTES.md, version 8): the one-word state made the Vulkan scan 24–32% faster at 2^28.
pub(crate) fn scan_kernel(info: &DeviceInfo, elem: ElemKind, registers: bool) -> &'static str {
    if info.backend == BackendKind::Vulkan && registers {
        "scan_device_vec"
    } else if info.backend == BackendKind::Vulkan && info.int64_atomics && elem.size() == 4 {
        "scan_device_s64"
    } else {
        "scan_device"
    }
}

/// Scan: whether `info`'s device can keep a device-scan tile of `elem` at `items` elements
/// per thread in registers, moved by 16-byte loads and stores (Vulkan: `scan_device_vec`;
/// CUDA: `scan_device` with `VEC`), rather than staged in shared memory: 4-byte integers at a
/// multiple of 4 elements per thread up to [`crate::scan::MAX_ITEMS`], and `f32` at its
/// [`crate::scan::ITEMS`]; on Vulkan devices with 64-bit buffer atomics and the subgroup
/// arithmetic operations, on CUDA devices whose bindings start at multiples of 16 bytes (all).
pub(crate) fn scan_registers_possible(info: &DeviceInfo, elem: ElemKind, items: u32) -> bool {
    let device = match info.backend {
        BackendKind::Vulkan => {
            info.int64_atomics
                && info
                    .subgroup_features
                    .contains(crate::device::SubgroupFeatures::ARITHMETIC)
        }
        BackendKind::Cuda => info.binding_alignment.is_multiple_of(16),
    };
    let tile = match elem {
        ElemKind::F32 => items == crate::scan::ITEMS,
        ElemKind::I32 | ElemKind::U32 => {
            items.is_multiple_of(4) && (4..=crate::scan::MAX_ITEMS).contains(&items)
        }
        _ => false,
    };
    device && tile
}

/// Scan: whether the device scan of `n` elements of `elem` at `items` elements per thread keeps
/// its tile in registers where [`scan_registers_possible`]: 4-byte integers from
/// [`crate::scan::REGISTER_TILE_FROM`] elements, `f32` at the lengths of
/// [`crate::scan::FLOAT_REGISTER_TILE`].
///
/// H200 (NOTES.md, version 40), `i32` inclusive scans, µs, the staging kernel (its default
/// tile) against the register tile at 32 elements a thread. Vulkan: 2^20 10.8 / 11.1, 2^21
/// 13.1 / 13.7, 2^22 21.1 / 18.9, 2^23 34.1 / 31.5, 2^24 57.3 / 49.1, 2^26 203 / 149, 2^28 777
/// / 545 (CUB 683; the copy of 2^28 524): 48 registers and 3 KiB of shared memory, five
/// workgroups an SM, where the staging kernel took 63 registers and 20 KiB (four; 120
/// registers at 32). CUDA (64 registers, four blocks an SM, against 40 and six; at 16
/// elements a thread 48, five): 2^10 5.9 / 5.4, 2^12 6.2 / 5.5, 2^14 6.8 / 6.2, 2^16 7.5 /
/// 6.8, 2^18 8.7 / 8.0, 2^20 11.3 / 10.0, 2^22 20.2 / 19.3, 2^23 32.0 / 27.8, 2^24 51.4 / 47.6,
/// 2^26 158 / 148, 2^28 591 / 553.
///
/// `f32` (version 43, both with the near look-back walking down), the staging kernel against
/// the register tile, inclusive, µs: CUDA 2^16 7.8 / 7.1, 2^20 11.6 / 11.0, 2^21 14.9 / 14.2,
/// 2^22 22.1 / 20.5, 2^23 31.0 / 30.1, 2^24 50.5 / 50.4, 2^25 87.7 / 90.3, 2^26 163 / 170,
/// 2^28 611 / 648 (48 registers, five blocks an SM, against 32 and eight); Vulkan (the exact
/// variant of NVIDIA's flushing driver) 2^16 7.6 / 7.4, 2^20 12.0 / 11.8, 2^22 25.2 / 23.9,
/// 2^24 72.2 / 64.2, 2^26 267 / 227, 2^28 1043 / 881 (48 registers against 71).
///
/// `f32` min and max (version 72: their register tile in the integers' layout) take it at
/// every length: CUDA max, µs, the staging kernel against the register tile, 2^24 140.7 /
/// 93.0, 2^26 575 / 331, 2^28 2345 / 1277.
pub(crate) fn scan_tile_in_registers(
    info: &DeviceInfo,
    elem: ElemKind,
    op: ReduceOp,
    items: u32,
    n: usize,
) -> bool {
    let lengths = match (info.backend, elem) {
        (_, ElemKind::F32) if matches!(op, ReduceOp::Min | ReduceOp::Max) => 0..usize::MAX,
        (BackendKind::Cuda, ElemKind::F32) => crate::scan::FLOAT_REGISTER_TILE.0,
        (BackendKind::Vulkan, ElemKind::F32) => crate::scan::FLOAT_REGISTER_TILE.1,
        (BackendKind::Cuda, _) => crate::scan::REGISTER_TILE_FROM.0..usize::MAX,
        (BackendKind::Vulkan, _) => crate::scan::REGISTER_TILE_FROM.1..usize::MAX,
    };
    scan_registers_possible(info, elem, items) && lengths.contains(&n)
}

/// Scan: look-back tiles per thread for a scan of `tiles` tiles: 2 on Vulkan up to
/// [`crate::scan::WIDE_WINDOW_MAX_TILES`] tiles, else 1.
///
/// H200 (NOTES.md, versions 4 and 6): a window of 512 tiles (2 per thread) made the Vulkan scan
/// 1.1–2.4× faster from 1.5 × 2^20 to 2^23 elements (where a window of 256 needs a second one)
/// and 0.90× as fast from 2^24 on, and CUDA no faster anywhere (0.87× at 2^28).
pub(crate) fn scan_lookback_tiles(info: &DeviceInfo, tiles: usize) -> u32 {
    if info.backend == BackendKind::Vulkan && tiles <= crate::scan::WIDE_WINDOW_MAX_TILES {
        2
    } else {
        crate::scan::LOOKBACK_TILES
    }
}

/// Scan (CUDA twin only): predecessors each lane of the near look-back polls for a scan of
/// `tiles` tiles of 4-byte integers (constant `NEAR_DEPTH`; the caller gives other types 1):
/// 4 up to [`NEAR_DEPTH_MAX_TILES`] tiles (one round trip reads 128 tile states, folded by a
/// butterfly: integers fold in any order), else 1 (32 states a poll).
///
/// H200 (NOTES.md, version 49; `i32`/`u32` scans, two alternations, µs, depth 1 / 4): 2^20
/// (128 tiles) 10.0–10.2 / 9.3–9.5, 2^22 19.2–19.5 / 18.6–19.0, 2^23 27.8–28.2 / 27.1–27.7,
/// 2^21 12.5–12.8 / 12.7–12.9; from 2^24 (2048 tiles) depth 4 took 1–1.6% more (2^28 556–559 /
/// 562–568).
pub(crate) fn scan_near_depth(info: &DeviceInfo, tiles: usize) -> u32 {
    if info.backend == BackendKind::Cuda && tiles <= NEAR_DEPTH_MAX_TILES {
        4
    } else {
        1
    }
}

/// The most tiles of a scan whose near look-back polls four predecessors a lane
/// ([`scan_near_depth`]).
pub(crate) const NEAR_DEPTH_MAX_TILES: usize = 1024;

/// Scan: the most tiles of a scan of one launch that keeps its tile states in the device's
/// counters buffer instead of fresh memory zeroed by a clearing launch: 1024 on CUDA (2^22
/// elements), 512 on Vulkan. Scans whose states take the device's epochs buffer
/// ([`crate::scan`]: 4-byte elements in one-word states) never come here.
///
/// H100 (NOTES.md, version 19): without the clearing launch scans of 2^10 to 2^20 took 8–29%
/// less time on both backends; at 1024 tiles CUDA 4% less, Vulkan 8% more; at 2048 and 4096
/// tiles both took up to 10% more.
pub(crate) fn scan_self_clearing_max_tiles(info: &DeviceInfo) -> usize {
    if info.backend == BackendKind::Cuda {
        1024
    } else {
        512
    }
}

/// Scan: elements per thread of a device-scan tile of integers of `elem` for `n` elements
/// (floats always take [`crate::scan::ITEMS`], part of their order; 8-byte integers too):
/// [`crate::scan::MAX_ITEMS`] (32, tiles of 8192) for 4-byte integers from 2^20 elements on
/// CUDA and on Vulkan devices without the register tile ([`scan_registers_possible`]) but for
/// 2^23 up to 2^25, from 2^25 on Vulkan devices with it; else [`crate::scan::ITEMS`] (16).
///
/// H200 (NOTES.md, version 61; `i32`/`u32` scans, both kinds, two alternations, both backends
/// in one process, µs, Vulkan's register tile at 16 from 2^20 against the staging kernel at 32
/// at 2^20–2^21 and the register tile at 32 at 2^22): 2^20 9.3–9.7 → 9.1–9.2 (0.95–0.98×),
/// 2^21 11.6–12.3 → 11.2–11.4 (0.91–0.94×), 2^22 16.6–17.7 → 16.2–16.5 (0.97–0.98×); 2^23–2^25
/// unchanged (the same tiles). A Vulkan-only process (its clock lower, version 42) gave 16
/// against 32 in registers 0.89–0.96× at 2^20–2^24.
///
/// H200 (NOTES.md, version 49; `i32` scans, both kinds, two alternations, µs at 16 / 20 / 24 /
/// 28 / 32 elements a thread): Vulkan 2^21 15.2–15.5 / 14.0–14.1 / 15.9–16.2 / 15.0–15.4 /
/// 12.9–13.2, 2^22 17.8–18.2 / 19.9–20.1 / 18.5–18.8 / 18.4–18.6 / 17.7–17.8, 2^23 28.4–28.5 /
/// 29.3–29.7 / 29.1–29.4 / 29.3 / 29.9–30.1, 2^24 45.5–46.3 / 47.7–47.8 / 48.9–49.5 / 48.5–49.0
/// / 48.2–48.5; CUDA took 32 or within noise of it at every one of these lengths (2^22 about 19
/// whatever the tile).
///
/// H100 (NOTES.md, version 27), `i32` inclusive scans, µs at 16 → 32: CUDA (with the partial
/// folds in shared memory, [`scan_partials_in_shared`]) 2^20 11.9 → 11.6, 2^21 17.3 → 14.8,
/// 2^22 25.0 → 22.8, 2^23 38.7 → 36.7, 2^24 62.1 → 59.4, 2^26 211 → 196, 2^28 808 → 750;
/// below 2^20 slower (2^16 7.7 → 9.0). Vulkan 2^20 13.6 → 12.4, 2^21 20.4 → 16.6, 2^22 29.1
/// → 26.2, 2^23 44.7 → 42.5; 24 and 28 were between or slower on both. From 2^22 the Vulkan
/// scan keeps its tile in registers ([`scan_tile_in_registers`]; H200, version 40, µs at 16 →
/// 32: 2^22 21.2 → 18.9, 2^23 33.3 → 31.5, 2^24 47.6 → 49.1, 2^26 157 → 149, 2^28 590 →
/// 545), where the staging kernel had taken 108 registers at 32 from 2^24 (70.0 → 75.0 µs).
pub(crate) fn scan_items(info: &DeviceInfo, elem: ElemKind, n: usize) -> u32 {
    // Where the Vulkan device has the register tile, 16 from 2^20; without it (the staging
    // kernel alone) 16 only from 2^23 (version 49's figures below).
    let from = if scan_registers_possible(info, elem, crate::scan::ITEMS) {
        1 << 20
    } else {
        1 << 23
    };
    let vulkan_middle = info.backend == BackendKind::Vulkan && (from..1 << 25).contains(&n);
    if n >= 1 << 20 && matches!(elem, ElemKind::I32 | ElemKind::U32) && !vulkan_middle {
        crate::scan::MAX_ITEMS
    } else {
        crate::scan::ITEMS
    }
}

/// Scan (CUDA twin only): whether a device-scan tile of `items` elements per thread keeps
/// each thread's partial folds in shared memory through the look-back (computing them again
/// at the end) rather than in registers: always for floats, and for 32-bit integers at 32
/// elements per thread. The GLSL kernels always do.
///
/// H200 (NOTES.md, version 4): fewer registers made CUDA's 32-bit integer scans slower (0.90 to
/// 0.73 of CUB at 2^28) and its float scans faster (0.79 to 0.86). H100 (version 27), `i32`
/// at 32 elements per thread: in shared memory 40 registers and no spill (48 and a 64-byte
/// spill in registers), 2^21 15.8 → 14.8 µs, 2^22 25.0 → 22.8, 2^28 738 → 749.
pub(crate) fn scan_partials_in_shared(elem: ElemKind, items: u32) -> bool {
    !matches!(elem, ElemKind::I32 | ElemKind::U32) || items >= crate::scan::MAX_ITEMS
}

/// Vulkan: whether kernel `name` for elements of `elem` with specialization constants
/// `consts` runs without the driver's bounds checks on its buffers, on a device that allows
/// it (`VK_EXT_pipeline_robustness`): every kernel but the device scan of 32-bit integers
/// with a look-back window of one tile a thread (scans of more than
/// [`crate::scan::WIDE_WINDOW_MAX_TILES`] tiles, from 2^24 elements). Every kernel keeps its
/// accesses in bounds itself, so this changes no result.
///
/// H100 (NOTES.md, version 21; the driver otherwise checks every load and store, two
/// instructions each): without them the ladder's rungs took 1–12% less time, the copy at
/// 2^20 7–10%, the `f32` scans, compactions, vote and stencils 1–3%, the u32 key sort at
/// 2^28 3%; the `i32` scans took 2–6% more from 2^24, so they keep the checks there. Version
/// 30 (with the near look-back): unchecked, the `i32` scan takes 70 registers against 63
/// (three workgroups an SM against four) and 4–8% less time at 2^16–2^22, 7–8% more from 2^24.
/// H200 (version 40), the register tile (`scan_device_vec`) unchecked against checked from
/// 2^25: 1.03–1.06× the time (2^26 155.6 against 148.7 µs, 2^28 579 against 545).
#[cfg(feature = "vulkan")]
pub(crate) fn vulkan_unchecked_buffers(name: &str, elem: ElemKind, consts: &[(&str, u32)]) -> bool {
    let wide_window = consts.iter().any(|&(c, v)| c == "LB_TILES" && v > 1);
    !(name.starts_with("scan_device") && matches!(elem, ElemKind::I32 | ElemKind::U32))
        || wide_window
}

/// Runs kernels (reduce-by-key, and run-length encoding and unique where they take it): the most
/// tiles of a call whose work words lie in the device's counters buffer, zeroed by its last
/// tile ([`crate::runs::SELF_CLEARING_MAX_TILES`]); on CUDA half as many for 8-byte keys or
/// values.
///
/// H200 (NOTES.md, version 51), reduce-by-key, µs with the clearing launch and without:
/// CUDA `i32` 2^16 11.4–11.6 → 9.4–9.5, 2^20 15.5–15.6 → 14.5, 2^22 (1024 tiles) 33.8–34.3 →
/// 33.0–33.2; `u64` 2^20 (512 tiles) 24.3–24.5 → 23.2, but 2^21 (1024 tiles) 33.7–34.1 → 34.8;
/// Vulkan `u64` 2^21 39.1–39.2 → 38.8.
pub(crate) fn runs_self_clearing_max_tiles(
    info: &DeviceInfo,
    key_bytes: usize,
    value_bytes: usize,
) -> usize {
    let most = crate::runs::SELF_CLEARING_MAX_TILES;
    if info.backend == BackendKind::Cuda && key_bytes.max(value_bytes) > 4 {
        most / 2
    } else {
        most
    }
}

/// Scans and stable compactions: whether the device's kernels keep a tile's state (its flag
/// and a 4-byte value or count) in one 64-bit word, which the states tagged with epochs
/// ([`crate::device::Device::epochs`]) need: CUDA's always, Vulkan's where the device has 64-bit
/// buffer atomics (`scan_device_s64`, `scan_device_vec`, `compact_c64`).
pub(crate) fn one_word_states(info: &DeviceInfo) -> bool {
    info.backend == BackendKind::Cuda || info.int64_atomics
}

/// Compaction, stable step (`heads`: unique's predicate): the most tiles whose states the
/// call tags with epochs in the device's epochs buffer ([`crate::device::Device::epochs`]);
/// past them, fresh states and a clearing launch. Everywhere [`crate::device::EPOCH_TILES`]
/// but unique's on CUDA, 2048.
///
/// H200 (NOTES.md, version 53), µs with the earlier paths (the counters buffer to 1024 tiles,
/// fresh states and a clearing launch past them) and with epochs: the stable compaction
/// 0.81–0.99× the time on both backends from 2^16 to 2^28; unique on Vulkan 0.79–0.99×, on
/// CUDA 0.84–0.98× to 2^24 `i32` keys (2048 tiles of 8192), 2^25 1.00, 2^26 173.8 → 181.3,
/// 2^28 658 → 700 (`f32` alike), at 64 registers as without epochs as well as at 75.
pub(crate) fn compact_epoch_max_tiles(info: &DeviceInfo, heads: bool) -> usize {
    if info.backend == BackendKind::Cuda && heads {
        2048
    } else {
        crate::device::EPOCH_TILES as usize
    }
}

/// Run-length encoding by the stable compaction ([`crate::run_length`]): the most tiles whose
/// pass closes each run in the tile of the next head (the kernels' `CARRY`, CUDA's and
/// `compact_c64`'s: one word a tile carried through the look-back, held after the states in
/// the epochs buffer, at most [`crate::device::EPOCH_SIDE_WORDS`]; no clearing launch, no last
/// launch, no allocation); 0 where the device's states are not one 64-bit word
/// ([`one_word_states`]). Past it the pass closes its runs in its last tile (to
/// [`crate::compact::CLOSE_IN_PASS_MAX_TILES`] tiles) or in a last launch after a clearing one.
///
/// H200 (NOTES.md, version 59), CUDA, µs against those paths: `i32` keys 2^10-2^20 (one to 256
/// tiles, closed in the last tile) 0.85-0.94x, 2^21-2^23 0.85-0.97x (clearing and last
/// launches); `u64` 0.82-0.95x to 2^22. Past 2048 tiles, where unique's epochs cost
/// (version 53), carrying with epochs took 1.03-1.14x the time (2^24-2^26 keys), so the
/// clearing and last launches stay there.
///
/// H200 (NOTES.md, version 65), Vulkan, the same: `i32` and `f32` 2^10-2^18 0.77-0.86x,
/// 2^19-2^22 0.84-0.91x, 2^23 0.97-0.98x; past 2048 tiles (a word a tile state) 1.03 / 1.06 /
/// 1.08-1.09x at 2^24 / 2^25 / 2^26, so the same bound.
pub(crate) fn lengths_carry_max_tiles(info: &DeviceInfo) -> usize {
    if one_word_states(info) {
        compact_epoch_max_tiles(info, true).min(crate::device::EPOCH_SIDE_WORDS as usize)
    } else {
        0
    }
}

/// The stable partition's one-launch step of several tiles: its tile states tagged by epochs
/// in the device's epochs buffer (`partition_e64`), where the Vulkan device has 64-bit buffer
/// atomics; else in the device's counters buffer, counted done and zeroed by the last tile
/// (`partition`, and the CUDA twin, whose count fences with acquire-release).
pub(crate) fn partition_epochs(info: &DeviceInfo) -> bool {
    info.backend == BackendKind::Vulkan && info.int64_atomics
}

/// Reduce-by-key: whether a launch of 2 to [`crate::runs::Tuning::epoch_max_tiles`] tiles keeps its
/// tile states in the device's epochs buffer, tagged with the call's epoch
/// (`reduce_by_key_e64`): where `reduce_by_key_p64` is the kernel and the device has the
/// subgroup ballot and vote operations (its near look-back's). No count of tiles done (an
/// acquire-release pair, each a `MEMBAR.SC.GPU` on NVIDIA's Vulkan driver) and no zeroing after
/// the call.
pub(crate) fn reduce_by_key_epochs(info: &DeviceInfo, value_bytes: usize) -> bool {
    use crate::device::SubgroupFeatures;
    reduce_by_key_kernel(info, value_bytes) == "reduce_by_key_p64"
        && info
            .subgroup_features
            .contains(SubgroupFeatures::BALLOT | SubgroupFeatures::VOTE)
}

/// Reduce-by-key: the kernel. Values of 4 bytes keep each tile state in one 64-bit word,
/// published and read by single atomics, where the device has 64-bit buffer atomics
/// (`reduce_by_key_p64`, Vulkan); else (`reduce_by_key`) a state's words are written before its
/// flag with a buffer barrier between, and read after one.
///
/// H200 (NOTES.md, version 68): NVIDIA's Vulkan driver makes every device-scope barrier a
/// sequentially consistent fence (`MEMBAR.SC.GPU`); with one-word states `i32` and `f32` took
/// 0.90-0.96x the time of the two-word form at 2^14-2^26 (2^26 `i32` 422 → 392 µs).
pub(crate) fn reduce_by_key_kernel(info: &DeviceInfo, value_bytes: usize) -> &'static str {
    if info.backend == BackendKind::Vulkan && info.int64_atomics && value_bytes == 4 {
        "reduce_by_key_p64"
    } else {
        "reduce_by_key"
    }
}

/// Compaction: the kernel. The unordered step keeps a chunk's count and its tiles done in one
/// 64-bit word, one atomic per tile, where the device has 64-bit buffer atomics
/// (`compact_c64` on Vulkan; the CUDA twin always); else (`compact`) the tiles done are a
/// second, acquire-release atomic.
///
/// H200 (NOTES.md, version 9): without that second atomic the unordered compaction of 2^28
/// `i32` took 443 µs on Vulkan instead of 531, and 417 µs on CUDA instead of 479.
pub(crate) fn compact_kernel(info: &DeviceInfo) -> &'static str {
    if info.backend == BackendKind::Vulkan && info.int64_atomics {
        "compact_c64"
    } else {
        "compact"
    }
}

/// Compaction, stable step of `n` 4-byte elements (`heads`: unique's predicate): elements each
/// thread of a tile takes, where [`crate::compact::Tuning::stable_items`] leaves it to the
/// device; above [`crate::compact::items_per_thread`]'s 16 the kernels stage a tile's passing
/// elements in shared memory before its look-back (`EARLY`). CUDA: 32 from 2^22 elements.
/// Vulkan: 20 from 2^23 elements for `f32` and from 2^24 for integers, not for unique. The
/// caller keeps the default where the device's shared memory holds less.
///
/// H200 (NOTES.md, version 41), µs against 16 elements a thread: CUDA `i32` 2^22 20.0 → 18.5,
/// 2^24 48.5 → 45.9, 2^26 157.4 → 139.0, 2^28 586.9 → 515.5 (`f32` alike); 32 elements without
/// the early staging 593.8 at 2^28, no gain; below 2^21 slower (2^16 7.4 → 8.1). Vulkan `i32`
/// 2^25 87.7 → 85.4, 2^28 632.4 → 601.8 at 24 (79 registers against 56); 2^22 slower (18.9 →
/// 19.8), and 32 (104 registers) slower everywhere; the `f32` kernel with exact subnormals
/// (98 registers at 24) 1.15× the time. Unique (`heads`, its keys as `u32` words) alike on
/// CUDA: 2^22 20.8 → 20.4, 2^26 183.2 → 172.0, 2^28 688 → 651 (1.09–1.10× CUB); on Vulkan at 24
/// 1.14× the time from 2^25, so there it keeps 16.
///
/// H200 (version 46), with each subgroup's count as one butterfly sum (the GLSL kernels then
/// took 48 / 64 / 66 / 74 registers at 16 / 20 / 24 / 28 elements a thread), Vulkan, µs at
/// 16 / 20 / 24 / 28: `i32` 2^22 19.3 / 19.6 / 19.7 / 19.9, 2^23 28.3 / 28.9 / 29.4 / 28.8,
/// 2^24 46.1 / 46.4 / 47.8 / 46.0, 2^26 152.6 / 151.2 / 158.9 / 150.6, 2^28 575 / 564 / 598 /
/// 561; `f32` (exact subnormals) 2^22 19.3 / 20.0 / 19.8 / 20.2, 2^23 29.8 / 29.2 / 29.5 /
/// 30.0, 2^24 49.4 / 46.7 / 48.1 / 46.2, 2^26 168.5 / 152.3 / 160.5 / 151.4, 2^28 638 / 569 /
/// 603 / 564 (CUB's `DeviceSelect::If` about 603).
pub(crate) fn compact_stable_items(
    info: &DeviceInfo,
    elem: ElemKind,
    heads: bool,
    n: usize,
) -> u32 {
    match info.backend {
        BackendKind::Cuda if n >= 1 << 22 => 32,
        BackendKind::Vulkan if !heads && elem == ElemKind::F32 && n >= 1 << 23 => 20,
        BackendKind::Vulkan
            if !heads && n >= 1 << 24 && matches!(elem, ElemKind::I32 | ElemKind::U32) =>
        {
            20
        }
        _ => crate::compact::items_per_thread(elem.size()),
    }
}

/// Run-length encoding ([`crate::run_length`]): elements a thread of its stable step for `n`
/// elements of `elem`: 8 for 4-byte elements to [`LENGTHS_HALF_TILE_MAX`] (tiles of 2048,
/// twice the workgroups of the default tile), else [`crate::compact::items_per_thread`].
///
/// H200 (NOTES.md, version 60), CUDA `i32` / `f32`, µs with tiles of 4096 → 2048: 2^10
/// 7.5 → 6.3, 2^14 9.1 → 7.7, 2^16 9.3 → 8.2, 2^18 10.1 → 9.5, 2^19 11.2 → 10.8; but 2^20 13.2
/// → 13.7 (512 tiles) and 2^21 - 1 17.0 → 20.0 (1024 tiles).
///
/// H200 (NOTES.md, version 64), Vulkan (whose pass then closed the runs in its last tile), the
/// same against 4096, two alternations: 2^10 0.88–0.90×, 2^12 0.93–0.98×, 2^14 0.89–0.91×, 2^16
/// 0.87–0.88× (`i32` 10.8 → 9.5 µs), 2^18 0.94–0.96×; but 2^19 1.02–1.04×. With the carry
/// (version 65) tiles of 2048 to 2^20 took 0.97–1.03× the time of this bound at 2^19–2^20.
pub(crate) fn lengths_items(info: &DeviceInfo, elem: ElemKind, n: usize) -> u32 {
    let most = match info.backend {
        BackendKind::Cuda => LENGTHS_HALF_TILE_MAX.0,
        BackendKind::Vulkan => LENGTHS_HALF_TILE_MAX.1,
    };
    if elem.size() == 4 && n <= most {
        8
    } else {
        crate::compact::items_per_thread(elem.size())
    }
}

/// The most elements of a run-length encoding of 4-byte elements in tiles of 2048
/// ([`lengths_items`]), on CUDA and on Vulkan.
pub(crate) const LENGTHS_HALF_TILE_MAX: (usize, usize) = (1 << 19, 1 << 18);

/// Stencil: layers per workgroup for `n` elements (`exact`: of a type whose subnormals the
/// device keeps by the exact kernels). Vulkan: [`FEW_ROWS`] below 2^24 elements, [`ROWS`] from
/// there, and the exact shared-memory variant [`MANY_ROWS`] from 2^26. CUDA: [`FEW_ROWS`] below
/// 2^22, [`ROWS`] from there, and the shuffle variant [`MANY_ROWS`] from 2^24.
///
/// H100 and H200 (NOTES.md, versions 8 and 9), `f32`: 4 layers instead of 8 were 1–9% faster
/// from 2^20 to 2^23 elements on the H100 on both backends; on the H200 1–6% faster on Vulkan
/// there, but 2–5% slower on CUDA at 2^22–2^23. From 2^24 they were as fast or slower; 2 layers
/// were slower from 2^21. 16 layers instead of 8 made the CUDA shuffle stencil 1% (H100) and
/// 3–5% (H200) faster from 2^24 to 2^28, and 3–4% slower at 2^22 (H100). The CUDA
/// shared-memory stencil was up to 5% slower with 16 at 2^22–2^25 on the H100, and the Vulkan
/// stencils were 1–9% slower at 2^24–2^26 on both GPUs.
///
/// H200 (NOTES.md, version 62), the Vulkan `f32` shared-memory stencil with exact subnormals
/// (its layers' averages tested together, the exact ones computed again only where a test
/// failed), µs at 4 / 8 / 16 layers: 2^24 41.1 / 40.3 / 41.0, 2^26 153.5 / 147.9 / 143.0,
/// 2^28 595 / 568 / 552 (the driver's arithmetic alone at 8 layers: 38.4, 141.6, 547).
pub(crate) fn stencil_rows(
    info: &DeviceInfo,
    variant: StencilVariant,
    exact: bool,
    n: usize,
) -> u32 {
    match info.backend {
        BackendKind::Vulkan if exact && variant == StencilVariant::SharedMemory && n >= 1 << 26 => {
            MANY_ROWS
        }
        BackendKind::Vulkan if n < 1 << 24 => FEW_ROWS,
        BackendKind::Vulkan => ROWS,
        BackendKind::Cuda if n < 1 << 22 => FEW_ROWS,
        BackendKind::Cuda if n >= 1 << 24 && variant == StencilVariant::Shuffle => MANY_ROWS,
        BackendKind::Cuda => ROWS,
    }
}

/// Histogram: the most workgroups of a counting launch of `n` samples (each counts a chunk of
/// whole steps and then adds its nonzero bins to the output, one atomic each): 256 below
/// 2^21 samples, 512 up to 2^23, 1024 from there.
///
/// H200 (NOTES.md, version 37; 256 bins, both backends): the workgroups' final atomics meet on
/// the same bins (one each per workgroup and bin), so 1024 workgroups cost uniform samples
/// 2–4 µs over 512 at 2^21–2^22 (Vulkan `f32` 2^22 20.3 against 16.1 µs, CUDA 16.4 against
/// 15.0) and 256 were fastest at 2^20 (Vulkan 9.6 against 11.4 at 512); samples all in one bin
/// (one final atomic per workgroup) lose 0.3–1.4 µs there, and at 2^23 (CUDA 17.5 against
/// 19.0) more than uniform samples gain. From 2^24 a workgroup counts 8 steps or more at
/// 1024 workgroups; fewer were not measured there.
pub(crate) fn histogram_max_groups(n: usize) -> usize {
    if n < 1 << 21 {
        256
    } else if n < 1 << 23 {
        512
    } else {
        1024
    }
}
