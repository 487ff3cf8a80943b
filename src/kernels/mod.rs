//! The kernel interface, defined once: per kernel its name, element variants, named
//! specialization constants and parameter block ([`KERNELS`], in `table.rs`), and one
//! `#[repr(C)]` struct per parameter block for the algorithm layer to fill.
//!
//! `build.rs` checks every `shaders/*.comp` (with its includes) and every `cuda/*.cu` against
//! the table and fails the build, naming the file, kernel and constant or field, on any
//! difference: constant names, which backend reads which constant, the workgroup size as
//! constant 0, distinct constant ids, and the parameter fields in order. So a kernel's
//! constants can be passed by name on both backends ([`spec_entries`] maps them to the
//! shader's `constant_id`s on Vulkan; CUDA passes them as `-DNAME=value`), and a parameter
//! struct below has the layout both kernels read.

mod table;

// The parsers and checks build.rs and xtask run (they compile this file themselves); the
// library compiles it only to test them, so not every item is used here.
#[cfg(test)]
#[allow(dead_code)]
mod source;

pub use table::{
    field_words, kernel, Const, KernelDef, On, ParamBlock, BIT_VARIANTS, ELEMENT_VARIANTS,
    INT64_BIT_VARIANTS, KERNELS, MEMORY_MODEL_VARIANTS, PARAM_BLOCKS, SUBNORMAL_VARIANTS,
};

use crate::error::{Error, Result};

// `SPEC_IDS`: (kernel, constant name, constant_id) for every specialization constant the
// shaders declare, read from `shaders/` by build.rs.
include!(concat!(env!("OUT_DIR"), "/spec_ids.rs"));

/// The specialization entries of a launch of `kernel` on Vulkan: (constant_id, value), the
/// workgroup size `block` first as constant 0, then each of `consts` at the id the kernel's
/// shader declares for its name. Constants the caller leaves out keep the shader's defaults.
///
/// Errors: [`Error::InvalidParameter`] (`kernel.consts`) for a constant the kernel's shader
/// does not declare (a CUDA-only constant included: such constants must be left out on
/// Vulkan) or one passed twice.
pub fn spec_entries(kernel: &str, block: u32, consts: &[(&str, u32)]) -> Result<Vec<(u32, u32)>> {
    let declared = || {
        let list: Vec<&str> = SPEC_IDS
            .iter()
            .filter(|s| s.0 == kernel)
            .map(|s| s.1)
            .collect();
        if list.is_empty() {
            "none (only the workgroup size)".to_string()
        } else {
            list.join(", ")
        }
    };
    let mut entries = Vec::with_capacity(consts.len() + 1);
    entries.push((0, block));
    for (i, &(name, value)) in consts.iter().enumerate() {
        let id = SPEC_IDS
            .iter()
            .find(|s| s.0 == kernel && s.1 == name)
            .map(|s| s.2)
            .ok_or_else(|| {
                Error::invalid(
                    "kernel.consts",
                    format!("{name}={value} for kernel {kernel}"),
                    format!("the constants the {kernel} shader declares: {}", declared()),
                )
            })?;
        if consts[..i].iter().any(|c| c.0 == name) {
            return Err(Error::invalid(
                "kernel.consts",
                format!("{name} twice for kernel {kernel}"),
                "each constant at most once",
            ));
        }
        entries.push((id, value));
    }
    Ok(entries)
}

/// Declares parameter-block structs: `#[repr(C)]`, [`bytemuck::Pod`], every field a 4-byte
/// word or an array of them, each with `FIELDS` (its fields in order with their sizes in
/// words) for the test that holds it to the table's [`ParamBlock`] of the same name.
macro_rules! param_blocks {
    ($(
        $(#[$doc:meta])*
        pub struct $name:ident {
            $( $(#[$fdoc:meta])* pub $field:ident : $ty:ty, )*
        }
    )*) => {
        $(
            $(#[$doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
            pub struct $name {
                $( $(#[$fdoc])* pub $field: $ty, )*
            }

            impl $name {
                /// Its fields in order, with their sizes in 4-byte words.
                pub const FIELDS: &'static [(&'static str, usize)] =
                    &[$((stringify!($field), std::mem::size_of::<$ty>() / 4)),*];
            }
        )*

        /// Every parameter-block struct: (name, fields with sizes in words, size in bytes).
        #[cfg(test)]
        const STRUCTS: &[(&str, &[(&str, usize)], usize)] =
            &[$((stringify!($name), $name::FIELDS, std::mem::size_of::<$name>())),*];
    };
}

param_blocks! {
    /// The reductions' block (`reduce`, `reduce_device`, the ladder's rungs).
    pub struct ReduceParams {
        /// Elements in this launch.
        pub n: u32,
        /// Workgroups that have work (tiles, for `reduce_device`); any beyond leave at once.
        pub groups: u32,
        /// Index in the output binding of the first result.
        pub dst_index: u32,
    }

    /// The warp and block scans' block (`scan`).
    pub struct ScanParams {
        /// Elements in this launch.
        pub n: u32,
        /// Workgroups in this launch.
        pub groups: u32,
    }

    /// The single-pass device scan's block (`scan_device`, `scan_device_s64`).
    pub struct ScanDeviceParams {
        /// Elements in this launch (a chunk of whole tiles).
        pub n: u32,
        /// Tiles in this launch; clearing: the flag words to zero (two per tile of the scan).
        pub tiles: u32,
        /// Global index of the launch's first tile.
        pub tile0: u32,
        /// This launch's tile counter; clearing: the number of counters to zero.
        pub chunk: u32,
        /// Polls of a window with unpublished tiles before reducing them here.
        pub spin: u32,
        /// Nonzero: only zero the flags and counters (the clearing launch), or where the tile
        /// states live and how they are told fresh (src/scan.rs).
        pub clear: u32,
        /// Epochs: the number of epochs; the launch after epoch `epoch_wrap - 1` takes 0.
        pub epoch_wrap: u32,
        /// Epochs: the tile states the bound flags hold, through which the zeroing of
        /// `EPOCH_SCRUB` states a launch moves in turn.
        pub epoch_tiles: u32,
        /// A gated `f32` sum's gate and exact launch (Vulkan, src/scan.rs): the exact launch's
        /// workgroups in x; 0 in every other launch.
        pub gate_x: u32,
        /// The exact launch's workgroups in y.
        pub gate_y: u32,
    }

    /// The stream compaction's block (`compact`, `compact_c64`).
    pub struct CompactParams {
        /// Elements in this chunk.
        pub n: u32,
        /// Predicate code (`shaders/vote_predicate.glsl`).
        pub pred: u32,
        /// First operand, low word.
        pub a_lo: u32,
        /// First operand, high word.
        pub a_hi: u32,
        /// Second operand (`in_range`'s upper end), low word.
        pub b_lo: u32,
        /// Second operand, high word.
        pub b_hi: u32,
        /// Output element the output binding starts at, low word.
        pub window_lo: u32,
        /// Output element the output binding starts at, high word.
        pub window_hi: u32,
        /// The window this launch serves: `base - window < span` (0: any).
        pub span: u32,
        /// Tiles in this chunk (reset step: tile states to zero).
        pub tiles: u32,
        /// Polls of an unpublished predecessor before counting its tile here.
        pub spin: u32,
        /// The slot holding this chunk's base (0 or 1).
        pub slot: u32,
        /// This chunk's first tile state.
        pub state0: u32,
        /// Nonzero: the counter words and tile states lie in the device's counters buffer
        /// (one chunk, one window, no RESET launch).
        pub self_clearing: u32,
        /// Elements of the input binding before the chunk's first (the head predicate reads
        /// the one before the chunk).
        pub shift: u32,
        /// Nonzero (`LENGTHS`, self-clearing): the pass's last tile closes the runs (the two
        /// words a tile lie in the counters buffer), no last launch.
        pub close: u32,
        /// Epochs (the stable step's `EPOCHS` variant): the number of epochs; the launch after
        /// epoch `epoch_wrap - 1` takes 0.
        pub epoch_wrap: u32,
        /// Epochs: the tile states the bound states hold, through which the zeroing of
        /// `EPOCH_SCRUB` states a launch moves in turn.
        pub epoch_tiles: u32,
    }

    /// The warp vote's block (`vote`).
    pub struct VoteParams {
        /// Elements in this launch.
        pub n: u32,
        /// Predicate code (`shaders/vote_predicate.glsl`).
        pub pred: u32,
        /// First operand, low word.
        pub a_lo: u32,
        /// First operand, high word.
        pub a_hi: u32,
        /// Second operand (`in_range`'s upper end), low word.
        pub b_lo: u32,
        /// Second operand, high word.
        pub b_hi: u32,
        /// Padding to a multiple of 16 bytes.
        pub pad0: u32,
        /// Padding.
        pub pad1: u32,
    }

    /// The shuffles' block (`shfl`).
    pub struct ShflParams {
        /// Elements in this launch.
        pub n: u32,
        /// `srcLane`, `delta`, `offset` or `laneMask`, by operation.
        pub arg: i32,
        /// Segment width: 2, 4, 8, 16 or 32.
        pub width: u32,
        /// Padding to 16 bytes.
        pub pad: u32,
    }

    /// The 5-point stencil's block (`stencil`).
    pub struct StencilParams {
        /// Outputs in this launch.
        pub count: u32,
        /// Index in the input binding of output 0's centre element.
        pub in_off: u32,
        /// Elements the input binding holds; anything outside lies past the signal.
        pub in_len: u32,
        /// First output that is an average (those before are the edge value +0.0).
        pub lo: u32,
        /// One past the last output that is an average.
        pub hi: u32,
        /// Index in the output binding of output 0.
        pub out_off: u32,
        /// Weights w0 .. w4, two words each, low first (`f32`: the low word).
        pub w: [u32; 10],
    }

    /// The roofline kernels' block (`roofline`).
    pub struct RooflineParams {
        /// Words in this launch.
        pub n: u32,
        /// Read mode: index in the output binding of this launch's first fold.
        pub fold0: u32,
        /// Digest mode: the index of this launch's first word in the whole input.
        pub word0: u32,
        /// Padding.
        pub pad1: u32,
    }

    /// The operation chains' block (`chain`).
    pub struct ChainParams {
        /// Threads that store, in this launch.
        pub n: u32,
        /// Chain length.
        pub iters: u32,
        /// Seed of every thread's first value.
        pub seed: u32,
        /// Index of this launch's first thread (modulo 2^32).
        pub first: u32,
    }
    /// The radix sort's histogram pass and its clearing launch (`sort_histogram`).
    pub struct SortHistogramParams {
        /// Keys; when clearing, the words to zero.
        pub n: u32,
        /// Keys per workgroup (a multiple of the workgroup size).
        pub chunk: u32,
        /// Digit passes of the bit range.
        pub passes: u32,
        /// The bit range's first bit.
        pub begin: u32,
        /// The bit range's end (exclusive).
        pub end: u32,
        /// Nonzero: clear the work buffer instead.
        pub clear: u32,
    }

    /// One digit pass of the radix sort (`sort_onesweep`).
    pub struct SortOnesweepParams {
        /// Keys.
        pub n: u32,
        /// Tiles of the pass.
        pub tiles: u32,
        /// The pass: its tile counter and histogram row.
        pub pass: u32,
        /// Lowest bit of the pass's digit in the mapped key.
        pub shift: u32,
        /// Width of the digit, 1 to 8.
        pub digit_bits: u32,
        /// First word of this pass's tile states.
        pub state_cur: u32,
        /// First word of the next pass's tile states, which this pass clears.
        pub state_next: u32,
        /// Nonzero: clear this tile's row of the next pass's states.
        pub clear_next: u32,
        /// Polls of unpublished states per invocation before counting a tile itself.
        pub spin: u32,
        /// Flag bits: the values are input indices (argsort's first pass); write the keys.
        pub flags: u32,
        /// The whole-sort variant (`WHOLE`): the passes of the bit range, from `shift` on.
        pub passes: u32,
        /// The whole-sort variant: the bit range's end (the last digit may be narrower).
        pub end_bit: u32,
    }

    /// The stable partition's block (`partition`).
    pub struct PartitionParams {
        /// Elements.
        pub n: u32,
        /// Predicate code (`shaders/vote_predicate.glsl`).
        pub pred: u32,
        /// First operand, low word.
        pub a_lo: u32,
        /// First operand, high word.
        pub a_hi: u32,
        /// Second operand (`in_range`'s upper end), low word.
        pub b_lo: u32,
        /// Second operand, high word.
        pub b_hi: u32,
        /// Tiles of the input.
        pub tiles: u32,
        /// How the scatter step (`OP` 1) finds its offsets: 0 from a scan launch's prefixes, 1
        /// by summing every tile's count. The scatter after the group count step (`OP` 4)
        /// always sums the group sums and its own group's counts.
        pub scan: u32,
        /// The one-launch step: polls of unpublished tile states per thread before the block
        /// counts such a tile itself.
        pub spin: u32,
        /// The group count step and its scatter (`OP` 3 and 4): log2 of the tiles a group.
        pub group_bits: u32,
        /// `partition_e64`'s one-launch step: the number of epochs (after the last comes 0).
        pub epoch_wrap: u32,
        /// `partition_e64`'s one-launch step: the states the device's epochs buffer holds.
        pub epoch_tiles: u32,
    }

    /// The even-bin histogram's block (`histogram`).
    pub struct HistogramParams {
        /// Samples.
        pub n: u32,
        /// Bins.
        pub bins: u32,
        /// Samples per workgroup.
        pub chunk: u32,
        /// The self-clearing count (`OP` 4): nonzero where the output's counts are `u64`.
        pub wide: u32,
        /// `lower`'s bits, low word.
        pub lower_lo: u32,
        /// `lower`'s bits, high word.
        pub lower_hi: u32,
        /// `upper`'s bits, low word.
        pub upper_lo: u32,
        /// `upper`'s bits, high word.
        pub upper_hi: u32,
        /// Floats: `bins / (upper - lower)`'s bits, low word.
        pub scale_lo: u32,
        /// Floats: the scale's bits, high word.
        pub scale_hi: u32,
        /// Integers: `upper - lower`, low word.
        pub range_lo: u32,
        /// Integers: `upper - lower`, high word.
        pub range_hi: u32,
        /// Integers: the bin width where the bins divide the range evenly (else 0), low word.
        pub width_lo: u32,
        /// Integers: the bin width, high word.
        pub width_hi: u32,
        /// Padding to a multiple of 16 bytes.
        pub pad1: u32,
        /// Padding.
        pub pad2: u32,
    }

    /// The segmented reduce's block (`segmented_reduce`).
    pub struct SegmentedReduceParams {
        /// Segments (the short-segment step) or tiles (the tile step) of this launch.
        pub items: u32,
        /// Padding to 16 bytes.
        pub pad0: u32,
        /// Padding.
        pub pad1: u32,
        /// Padding.
        pub pad2: u32,
    }

    /// The top-k's block (`top_k`).
    pub struct TopKParams {
        /// Keys.
        pub n: u32,
        /// Keys wanted.
        pub k: u32,
        /// Histogram and scatter: keys per workgroup (a multiple of the tile).
        pub tiles: u32,
        /// Histogram: the digit's lowest bit.
        pub shift: u32,
        /// Histogram: the mapped bits above the digit; filter: those at and above it (low word).
        pub mask_lo: u32,
        /// The same bits, high word.
        pub mask_hi: u32,
        /// How keys map to sortable bits (the radix sort's codes).
        pub key_kind: u32,
        /// Nonzero: the k largest.
        pub descending: u32,
        /// Nonzero: the candidates' values are input indices.
        pub indices: u32,
        /// Keys the candidates' buffer holds (0: no buffer).
        pub cap: u32,
        /// Nonzero: histogram: a filter may follow; scatter: the filter.
        pub filtering: u32,
        /// Histogram: the pass (0: the most significant digit).
        pub digit: u32,
    }

    /// The block of the kernels over runs of equal keys (`unique`, `run_length`,
    /// `reduce_by_key`).
    pub struct RunsParams {
        /// Elements.
        pub n: u32,
        /// Tiles of the input.
        pub tiles: u32,
        /// Polls of unpublished predecessors per look-back before computing them here.
        pub spin: u32,
        /// Nonzero: only zero the tile ticket, the tile flags and the run count.
        pub clear: u32,
        /// `reduce_by_key_e64`: the number of epochs (after the last comes 0).
        pub epoch_wrap: u32,
        /// `reduce_by_key_e64`: the states the device's epochs buffer holds.
        pub epoch_tiles: u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::ElemKind;

    /// A table field as the structs write it: (name, words).
    fn split(field: &str) -> (&str, usize) {
        (field.split('[').next().unwrap_or(field), field_words(field))
    }

    /// Each struct has the table's fields in order, no padding, and every table block has
    /// its struct.
    #[test]
    fn structs_match_the_table() {
        for &(name, fields, bytes) in STRUCTS {
            let block = PARAM_BLOCKS
                .iter()
                .find(|b| b.name == name)
                .unwrap_or_else(|| panic!("{name} is not a parameter block of table.rs"));
            let table: Vec<(&str, usize)> = block.fields.iter().map(|f| split(f)).collect();
            assert_eq!(fields, table.as_slice(), "{name}: fields");
            let words: usize = fields.iter().map(|f| f.1).sum();
            assert_eq!(bytes, 4 * words, "{name}: padding between fields");
            assert_eq!(bytes, block.bytes(), "{name}: size");
        }
        for block in PARAM_BLOCKS {
            assert!(
                STRUCTS.iter().any(|s| s.0 == block.name),
                "table.rs block {} has no struct",
                block.name
            );
        }
        assert_eq!(field_words("w[10]"), 10);
        assert_eq!(field_words("n"), 1);
    }

    /// The table's spec ids came from the shaders and name exactly the table's Vulkan
    /// constants (build.rs checked the shaders against the table; this checks what it wrote).
    #[test]
    fn spec_ids_are_the_tables_vulkan_constants() {
        for k in KERNELS {
            let mut from_shaders: Vec<&str> = SPEC_IDS
                .iter()
                .filter(|s| s.0 == k.name)
                .map(|s| s.1)
                .collect();
            let mut from_table: Vec<&str> = k
                .consts
                .iter()
                .filter(|c| c.on != On::Cuda)
                .map(|c| c.name)
                .collect();
            from_shaders.sort_unstable();
            from_table.sort_unstable();
            assert_eq!(from_shaders, from_table, "{}", k.name);
        }
        assert!(SPEC_IDS.iter().all(|s| kernel(s.0).is_some() && s.2 > 0));
    }

    #[test]
    fn constants_map_by_name_not_position() {
        let ids = |consts: &[(&str, u32)]| spec_entries("scan", 256, consts).unwrap();
        let id = |name: &str| {
            SPEC_IDS
                .iter()
                .find(|s| s.0 == "scan" && s.1 == name)
                .unwrap()
                .2
        };
        let a = ids(&[("OP", 2), ("SCOPE", 1), ("EXCLUSIVE", 1)]);
        let mut b = ids(&[("EXCLUSIVE", 1), ("OP", 2), ("SCOPE", 1)]);
        assert_eq!(a[0], (0, 256));
        assert!(a.contains(&(id("OP"), 2)) && a.contains(&(id("EXCLUSIVE"), 1)));
        let mut a = a;
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        // Leaving a constant out keeps the shader's default: only the given ones are mapped.
        assert_eq!(ids(&[("OP", 3)]), [(0, 256), (id("OP"), 3)]);
        assert_eq!(spec_entries("selftest", 64, &[]).unwrap(), [(0, 64)]);
    }

    #[test]
    fn undeclared_constants_are_errors() {
        // BLOCK is the CUDA compaction's alone; the GLSL one takes the workgroup size.
        match spec_entries("compact", 256, &[("OP", 0), ("BLOCK", 256)]) {
            Err(Error::InvalidParameter {
                name,
                value,
                allowed,
            }) => {
                assert_eq!(name, "kernel.consts");
                assert!(
                    value.contains("BLOCK") && value.contains("compact"),
                    "{value}"
                );
                assert!(
                    allowed.contains("OP") && allowed.contains("ITEMS"),
                    "{allowed}"
                );
            }
            other => panic!("expected InvalidParameter, got {other:?}"),
        }
        assert!(spec_entries("scan_device", 256, &[("PARTIALS_IN_SHARED", 1)]).is_err());
        assert!(spec_entries("selftest", 64, &[("OP", 0)]).is_err());
        assert!(spec_entries("scan", 256, &[("OP", 0), ("OP", 2)]).is_err());
    }

    /// Every value the algorithm layer passes is one the table lists (and so one the NVRTC
    /// compile test compiles).
    #[test]
    fn table_holds_the_values_the_algorithms_pass() {
        let values = |k: &str, c: &str| -> &'static [u32] {
            kernel(k)
                .and_then(|k| k.constant(c))
                .unwrap_or_else(|| panic!("{k}.{c} is not in the table"))
                .values
        };
        let holds = |k: &str, c: &str, v: u32| {
            assert!(values(k, c).contains(&v), "{k}.{c} lacks {v}");
        };
        for op in crate::reduce::ReduceOp::ALL {
            holds("reduce", "OP", op.code());
            holds("reduce_device", "OP", op.code());
        }
        holds("reduce", "ITEMS", crate::reduce::ITEMS);
        holds("reduce_device", "ITEMS", crate::reduce::ITEMS);
        for scan in ["scan_device", "scan_device_s64", "scan_device_vec"] {
            holds(scan, "ITEMS", crate::scan::ITEMS);
            holds(scan, "ITEMS", crate::scan::MAX_ITEMS);
            for w in 1..=crate::scan::MAX_LOOKBACK_TILES {
                holds(scan, "LB_TILES", w);
            }
        }
        for elem in ElemKind::ALL {
            for items in [crate::scan::ITEMS, crate::scan::MAX_ITEMS] {
                let partials = crate::tuning::scan_partials_in_shared(elem, items);
                holds("scan_device", "PARTIALS_IN_SHARED", u32::from(partials));
            }
            holds(
                "compact",
                "ITEMS",
                crate::compact::items_per_thread(elem.size()),
            );
            holds(
                "compact_c64",
                "ITEMS",
                crate::compact::items_per_thread(elem.size()),
            );
        }
        holds("sort_onesweep", "BLOCK", crate::sort::DEFAULT_BLOCK);
        holds("sort_onesweep", "BLOCK", crate::sort::PAIRS_BLOCK.0);
        holds(
            "sort_onesweep",
            "MIN_BLOCKS",
            crate::sort::DEFAULT_MIN_BLOCKS,
        );
        holds(
            "sort_onesweep",
            "MIN_BLOCKS",
            crate::sort::WIDE_PAIRS_MIN_BLOCKS,
        );
        holds("sort_onesweep", "MIN_BLOCKS", crate::sort::PAIRS_MIN_BLOCKS);
        holds("sort_onesweep", "DYNAMIC_SHARED", 0);
        holds("compact", "BLOCK", crate::compact::BLOCK);
        for elem in ElemKind::ALL {
            holds(
                "partition",
                "ITEMS",
                crate::partition::items_per_thread(elem.size()),
            );
        }
        holds("partition", "BLOCK", crate::partition::BLOCK);
        for kernel in ["unique", "run_length", "reduce_by_key"] {
            holds(kernel, "BLOCK", crate::runs::BLOCK);
            for k in [4, 8] {
                holds(kernel, "KEY_WORDS", k as u32 / 4);
                for v in [0, 4, 8] {
                    holds(kernel, "ITEMS", crate::runs::items(k, v));
                }
            }
        }
        for op in crate::reduce::ReduceOp::ALL {
            holds("reduce_by_key", "OP", op.code());
        }
        holds("histogram", "BLOCK", crate::plan::BLOCK);
        for op in crate::reduce::ReduceOp::ALL {
            holds("segmented_reduce", "OP", op.code());
        }
        holds("segmented_reduce", "ITEMS", crate::reduce::ITEMS);
        holds("segmented_reduce", "BLOCK", crate::plan::BLOCK);
        for k in [4, 8] {
            holds("top_k", "ITEMS", crate::top_k::items(k));
            holds("top_k", "VALUE_WORDS", k as u32 / 4);
        }
        holds("top_k", "VALUE_WORDS", 0);
        holds("top_k", "BLOCK", crate::plan::BLOCK);
        for rows in [
            crate::stencil::FEW_ROWS,
            crate::stencil::ROWS,
            crate::stencil::MANY_ROWS,
        ] {
            holds("stencil", "ROWS", rows);
        }
        for v in crate::stencil::StencilVariant::ALL {
            holds("stencil", "SMEM", v.code());
        }
        holds("shfl", "ROWS", crate::shfl::ROWS);
        holds("shfl", "SEGM", crate::shfl::SEGM as u32);
        holds("vote", "ROWS", crate::vote::ROWS);
        for op in crate::throughput::ChainOp::ALL {
            holds("chain", "OP", op.code());
        }
        for block in crate::ladder::BLOCKS {
            holds("reduce_complete_unroll", "IBLOCK", block);
        }
    }

    /// The sources in the repository pass the checks build.rs runs (so the messages below
    /// are the only ones the checks produce).
    #[test]
    fn every_source_matches_the_table() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for k in KERNELS {
            let files =
                source::resolve(&root.join("shaders"), &format!("{}.comp", k.name)).unwrap();
            let errors = source::check_glsl(k, &source::glsl_interface(&files));
            assert!(errors.is_empty(), "{errors:#?}");
            if k.cuda {
                let mut files = source::resolve(&root.join("cuda"), "common.cuh").unwrap();
                files.extend(
                    source::resolve(&root.join("cuda"), &format!("{}.cu", k.name)).unwrap(),
                );
                let errors = source::check_cuda(k, &source::cuda_interface(k.name, &files));
                assert!(errors.is_empty(), "{errors:#?}");
            }
        }
    }

    fn glsl(text: &str) -> Vec<(String, String)> {
        vec![("scan.comp".to_string(), text.to_string())]
    }

    const SCAN_GLSL: &str = "#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 0u;  // 0 sum
layout(constant_id = 2) const uint SCOPE = 0u;
layout(constant_id = 3) const uint EXCLUSIVE = 0u;
layout(push_constant) uniform Params {
    uint n;
    uint groups; // workgroups
} p;
";

    #[test]
    fn a_misnamed_constant_is_named_with_its_kernel_and_file() {
        let k = kernel("scan").unwrap();
        assert!(source::check_glsl(k, &source::glsl_interface(&glsl(SCAN_GLSL))).is_empty());
        let wrong = SCAN_GLSL.replace("uint EXCLUSIVE", "uint EXCLUSIV");
        let errors = source::check_glsl(k, &source::glsl_interface(&glsl(&wrong)));
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with(
                "shaders/scan.comp:5: kernel `scan`: specialization constant \
                                   `EXCLUSIV` (constant_id 3)"
            ),
            "{}",
            errors[0]
        );
        assert!(errors[1].contains("`EXCLUSIVE`"), "{}", errors[1]);
        let twice = SCAN_GLSL.replace("constant_id = 3", "constant_id = 2");
        let errors = source::check_glsl(k, &source::glsl_interface(&glsl(&twice)));
        assert!(
            errors.len() == 1 && errors[0].contains("constant_id 2"),
            "{errors:#?}"
        );
        let no_size = SCAN_GLSL.replace("local_size_x_id = 0", "local_size_x_id = 4");
        let errors = source::check_glsl(k, &source::glsl_interface(&glsl(&no_size)));
        assert!(
            errors.len() == 1 && errors[0].contains("constant 4"),
            "{errors:#?}"
        );
    }

    #[test]
    fn push_constants_are_checked_in_order() {
        let k = kernel("scan").unwrap();
        let swapped = SCAN_GLSL.replace("uint n;\n    uint groups;", "uint groups;\n    uint n;");
        let errors = source::check_glsl(k, &source::glsl_interface(&glsl(&swapped)));
        assert_eq!(
            errors,
            [
                "shaders/scan.comp:6: kernel `scan`: push constants [groups, n] differ from \
              src/kernels/table.rs's ScanParams [n, groups]"
            ]
        );
    }

    #[test]
    fn cuda_constants_and_struct_are_checked() {
        let k = kernel("compact").unwrap();
        let cu = "struct CompactParams { unsigned int n; };
template <bool CG> __device__ int f() { return CG ? ITEMS : SELF_CLEARING; }
#define TILE (ITEMS * 2)
extern \"C\" __global__ __launch_bounds__(BLOCK) void compact(const int* in, CompactParams p) {
#if OP == 0 || EXTRA || HEADS || LENGTHS || EARLY || EPOCHS || CARRY
#error \"compiled with -DOTHER\"
#endif
}
";
        let files = vec![("compact.cu".to_string(), cu.to_string())];
        let iface = source::cuda_interface("compact", &files);
        let found: Vec<&str> = iface.constants.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            found,
            [
                "ITEMS",
                "SELF_CLEARING",
                "BLOCK",
                "OP",
                "EXTRA",
                "HEADS",
                "LENGTHS",
                "EARLY",
                "EPOCHS",
                "CARRY"
            ]
        );
        let errors = source::check_cuda(k, &iface);
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(
            errors[0].starts_with("cuda/compact.cu:5: kernel `compact`: reads `EXTRA`"),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].starts_with(
                "cuda/compact.cu:1: kernel `compact`: parameters \
                                   CompactParams [n] differ"
            ),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn fingerprints_see_every_byte_but_line_endings() {
        let files = |text: &str| vec![("a.comp".to_string(), text.to_string())];
        let base = source::fingerprint(&files("x // one\n"), "i32");
        assert_ne!(base, source::fingerprint(&files("x // two\n"), "i32"));
        assert_ne!(base, source::fingerprint(&files("x // one\n"), "u32"));
        let dir = std::env::temp_dir().join(format!("xwarp-fingerprint-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.comp"), "x // one\r\n#include \"b.glsl\"\r\n").unwrap();
        std::fs::write(dir.join("b.glsl"), "y\n").unwrap();
        let read = source::resolve(&dir, "a.comp").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            read,
            [
                (
                    "a.comp".to_string(),
                    "x // one\n#include \"b.glsl\"\n".to_string()
                ),
                ("b.glsl".to_string(), "y\n".to_string())
            ]
        );
        assert_eq!(
            source::fnv1a64(source::FNV_OFFSET, b""),
            0xcbf2_9ce4_8422_2325
        );
        assert_eq!(
            source::fnv1a64(source::FNV_OFFSET, b"a"),
            0xaf63_dc4c_8601_ec8c
        );
    }

    #[test]
    fn the_table_and_the_file_lists_agree() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let list = |dir: &str, ext: &str| -> Vec<(String, String)> {
            let mut files: Vec<(String, String)> = std::fs::read_dir(root.join(dir))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .map(|p| {
                    let stem = p.file_stem().unwrap().to_str().unwrap().to_string();
                    (stem, std::fs::read_to_string(&p).unwrap())
                })
                .collect();
            files.sort();
            files
        };
        let comps = list("shaders", "comp");
        let cus: Vec<String> = list("cuda", "cu").into_iter().map(|f| f.0).collect();
        assert_eq!(source::check_table(&comps, &cus), Vec::<String>::new());
        let mut more = comps.clone();
        more.push((
            "extra".to_string(),
            "#version 450\n// variants: u32\n".to_string(),
        ));
        assert_eq!(
            source::check_table(&more, &cus[1..]),
            [
                format!(
                    "src/kernels/table.rs: kernel `{0}` says cuda: true, but cuda/{0}.cu does \
                     not exist",
                    cus[0]
                ),
                "shaders/extra.comp: kernel `extra` is not in src/kernels/table.rs".to_string(),
                "shaders/extra.comp:2: kernel `extra`: variants are listed in \
                 src/kernels/table.rs, not in the shader"
                    .to_string(),
            ]
        );
    }

    /// The Vulkan backend maps constants by name: a launch that passes one its kernel does not
    /// declare fails, naming it, before any GPU work; the right names in any order run.
    #[cfg(feature = "vulkan")]
    #[test]
    fn a_vulkan_launch_with_an_undeclared_constant_is_refused() {
        use crate::device::{Device, DeviceVec, Kernel, Launch};
        let opened = crate::vulkan::VulkanDevice::new(&crate::vulkan::VulkanOptions {
            device: None,
            validation: true,
            ..Default::default()
        });
        let dev = match opened {
            Ok(dev) => dev,
            Err(e) => {
                assert!(std::env::var_os("CI").is_none(), "CI has llvmpipe: {e}");
                eprintln!("no Vulkan device ({e}): skipping");
                return;
            }
        };
        let input: Vec<u32> = (0..256).collect();
        let src = DeviceVec::from_slice(&dev, &input).unwrap();
        let dst = DeviceVec::<u32>::from_slice(&dev, &[7; 256]).unwrap();
        // A broadcast of lane 3 within segments of 4.
        let params = ShflParams {
            n: 256,
            arg: 3,
            width: 4,
            pad: 0,
        };
        let launch = |consts: &[(&'static str, u32)]| {
            dev.launch(&Launch {
                kernel: Kernel {
                    name: "shfl",
                    elem: ElemKind::U32,
                    consts,
                },
                block: 256,
                groups: [1, 1],
                bindings: &[src.binding(0, 256), dst.binding(0, 256)],
                params: bytemuck::bytes_of(&params),
            })
        };
        match launch(&[("OP", 0), ("SEGM", 1), ("BLOCK", 256)]) {
            Err(Error::InvalidParameter { name, value, .. }) => {
                assert_eq!(name, "kernel.consts");
                assert!(value.contains("BLOCK") && value.contains("shfl"), "{value}");
            }
            other => panic!("expected InvalidParameter, got {other:?}"),
        }
        assert_eq!(dst.to_vec(&dev).unwrap(), [7; 256]);
        launch(&[("ROWS", 4), ("SEGM", 1), ("OP", 0)]).unwrap();
        let want: Vec<u32> = (0..256).map(|i| i / 4 * 4 + 3).collect();
        assert_eq!(dst.to_vec(&dev).unwrap(), want);
        assert!(
            dev.validation_messages().is_empty(),
            "{:?}",
            dev.validation_messages()
        );
    }
}
