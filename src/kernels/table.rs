//! The kernel interface as plain data: every kernel's name, the element variants its SPIR-V is
//! built for, its specialization constants by name and its parameter block's fields.
//!
//! This file uses nothing from the crate (not even `std` beyond the prelude) because three
//! programs compile it: the library, `build.rs` (which checks every shader and CUDA source
//! against it and fails the build on any difference) and `xtask` (which compiles the SPIR-V
//! variants it lists). Changing a kernel's interface means changing it here, in its GLSL
//! source and in its CUDA twin; the build says which of them disagree.

/// Which backends' kernels read a specialization constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// The GLSL kernel (a `constant_id`) and its CUDA twin (a `-D` macro) both.
    Both,
    /// Only the GLSL kernel.
    Vulkan,
    /// Only the CUDA twin (for example a block size that `__launch_bounds__` needs, which a
    /// GLSL kernel takes from the workgroup size, constant 0).
    Cuda,
}

/// One specialization constant of a kernel.
#[derive(Clone, Copy, Debug)]
pub struct Const {
    /// Its name: the GLSL `constant_id` declaration's and the CUDA macro's.
    pub name: &'static str,
    /// Which backends read it.
    pub on: On,
    /// Every value the algorithm layer may pass, the first being the one the NVRTC compile
    /// test holds it at while it varies another constant.
    pub values: &'static [u32],
}

/// The layout of a kernel's parameter block (a push-constant block in GLSL, a struct passed
/// by value in CUDA, a `#[repr(C)]` struct of the same name in `crate::kernels`).
#[derive(Clone, Copy, Debug)]
pub struct ParamBlock {
    /// The Rust struct's name.
    pub name: &'static str,
    /// Its fields in order, every one a 4-byte word, `name[N]` for an array of N words.
    pub fields: &'static [&'static str],
}

impl ParamBlock {
    /// The block's size in bytes.
    pub const fn bytes(&self) -> usize {
        let mut words = 0;
        let mut i = 0;
        while i < self.fields.len() {
            words += field_words(self.fields[i]);
            i += 1;
        }
        4 * words
    }
}

/// The words a field of [`ParamBlock::fields`] spans: N for `name[N]`, else 1.
pub const fn field_words(field: &str) -> usize {
    let b = field.as_bytes();
    let mut open = 0;
    while open < b.len() && b[open] != b'[' {
        open += 1;
    }
    if open == b.len() {
        return 1;
    }
    let mut n = 0;
    let mut i = open + 1;
    while i < b.len() && b[i] != b']' {
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    n
}

/// One kernel: a `shaders/NAME.comp` and, where [`KernelDef::cuda`] says so, a
/// `cuda/NAME.cu` with the same interface.
#[derive(Clone, Copy, Debug)]
pub struct KernelDef {
    /// The kernel's name: the shader's file stem and the CUDA entry point's name.
    pub name: &'static str,
    /// The variants its SPIR-V is built for, each compiled with `-DXW_TYPE_<VARIANT>`:
    /// element types (`i32`, ..., `f64`) or bit containers (`b32`, `b64`) for kernels that
    /// only move bits. The CUDA twin is compiled for the element types these cover.
    pub variants: &'static [&'static str],
    /// Its specialization constants besides the workgroup size, which is always constant 0
    /// (`local_size_x_id = 0`) and the launch's `block`.
    pub consts: &'static [Const],
    /// Whether `cuda/NAME.cu` exists (a kernel without one runs on Vulkan only).
    pub cuda: bool,
    /// Its parameter block, if it takes one.
    pub params: Option<&'static ParamBlock>,
}

impl KernelDef {
    /// The constant called `name`, if the kernel has one.
    pub fn constant(&self, name: &str) -> Option<&'static Const> {
        self.consts.iter().find(|c| c.name == name)
    }
}

/// The kernel called `name`, if there is one.
pub fn kernel(name: &str) -> Option<&'static KernelDef> {
    KERNELS.iter().find(|k| k.name == name)
}

/// Every element type a variant name may stand for.
pub const ELEMENT_VARIANTS: &[&str] = &["i32", "u32", "f32", "i64", "u64", "f64"];
/// Bit-container variants: `b32` covers every 4-byte element type, `b64` every 8-byte one.
pub const BIT_VARIANTS: &[&str] = &["b32", "b64"];
/// Variants of the float types for devices that flush subnormals (`shaders/float_ops.glsl`):
/// `_exact` keeps them in software, `_flush` flushes them in the kernel (as a flushing driver
/// does, for tests). The plain `f32` and `f64` use the driver's arithmetic.
pub const SUBNORMAL_VARIANTS: &[&str] = &["f32_exact", "f64_exact", "f32_flush", "f64_flush"];
/// Variants of the integer types compiled under the Vulkan memory model
/// (`#pragma use_vulkan_memory_model`), for devices with `vulkanMemoryModel`: the reduction
/// ladder's in-place rungs, whose scratch buffer is then `workgroupcoherent` where the GLSL
/// memory model can only say `coherent` (device scope).
pub const MEMORY_MODEL_VARIANTS: &[&str] = &["i32_vmm", "u32_vmm", "i64_vmm", "u64_vmm"];
/// A bit container's variant for devices with `shaderInt64`: `b64_int64` moves 64-bit keys as
/// `b64` does but takes a digit of one by a 64-bit shift (`shaders/sort_common.glsl`), where
/// `b64` shifts and joins two 32-bit words.
pub const INT64_BIT_VARIANTS: &[&str] = &["b64_int64"];

const INTEGERS: &[&str] = &["i32", "u32", "i64", "u64"];
/// Every element type, with the float types' subnormal variants: kernels that compute on
/// floats (or compare them).
const ALL_TYPES: &[&str] = &[
    "i32",
    "u32",
    "f32",
    "i64",
    "u64",
    "f64",
    "f32_exact",
    "f64_exact",
    "f32_flush",
    "f64_flush",
];
const FLOATS: &[&str] = &[
    "f32",
    "f64",
    "f32_exact",
    "f64_exact",
    "f32_flush",
    "f64_flush",
];

/// `n`, `groups`, `dst_index`: the reductions' and the ladder's block.
pub const REDUCE_PARAMS: ParamBlock = ParamBlock {
    name: "ReduceParams",
    fields: &["n", "groups", "dst_index"],
};
/// The block scan's block.
pub const SCAN_PARAMS: ParamBlock = ParamBlock {
    name: "ScanParams",
    fields: &["n", "groups"],
};
/// The single-pass device scan's block.
pub const SCAN_DEVICE_PARAMS: ParamBlock = ParamBlock {
    name: "ScanDeviceParams",
    fields: &[
        "n",
        "tiles",
        "tile0",
        "chunk",
        "spin",
        "clear",
        "epoch_wrap",
        "epoch_tiles",
        "gate_x",
        "gate_y",
    ],
};
/// The stream compaction's block.
pub const COMPACT_PARAMS: ParamBlock = ParamBlock {
    name: "CompactParams",
    fields: &[
        "n",
        "pred",
        "a_lo",
        "a_hi",
        "b_lo",
        "b_hi",
        "window_lo",
        "window_hi",
        "span",
        "tiles",
        "spin",
        "slot",
        "state0",
        "self_clearing",
        "shift",
        "close",
        "epoch_wrap",
        "epoch_tiles",
    ],
};
/// The warp vote's block.
pub const VOTE_PARAMS: ParamBlock = ParamBlock {
    name: "VoteParams",
    fields: &["n", "pred", "a_lo", "a_hi", "b_lo", "b_hi", "pad0", "pad1"],
};
/// The shuffles' block.
pub const SHFL_PARAMS: ParamBlock = ParamBlock {
    name: "ShflParams",
    fields: &["n", "arg", "width", "pad"],
};
/// The stencil's block.
pub const STENCIL_PARAMS: ParamBlock = ParamBlock {
    name: "StencilParams",
    fields: &["count", "in_off", "in_len", "lo", "hi", "out_off", "w[10]"],
};
/// The roofline kernels' block.
pub const ROOFLINE_PARAMS: ParamBlock = ParamBlock {
    name: "RooflineParams",
    fields: &["n", "fold0", "word0", "pad1"],
};
/// The operation chains' block.
pub const CHAIN_PARAMS: ParamBlock = ParamBlock {
    name: "ChainParams",
    fields: &["n", "iters", "seed", "first"],
};

/// The radix sort's histogram (and clearing) block.
pub const SORT_HISTOGRAM_PARAMS: ParamBlock = ParamBlock {
    name: "SortHistogramParams",
    fields: &["n", "chunk", "passes", "begin", "end", "clear"],
};
/// The radix sort's digit-pass block.
pub const SORT_ONESWEEP_PARAMS: ParamBlock = ParamBlock {
    name: "SortOnesweepParams",
    fields: &[
        "n",
        "tiles",
        "pass",
        "shift",
        "digit_bits",
        "state_cur",
        "state_next",
        "clear_next",
        "spin",
        "flags",
        "passes",
        "end_bit",
    ],
};
/// The stable partition's block.
pub const PARTITION_PARAMS: ParamBlock = ParamBlock {
    name: "PartitionParams",
    fields: &[
        "n",
        "pred",
        "a_lo",
        "a_hi",
        "b_lo",
        "b_hi",
        "tiles",
        "scan",
        "spin",
        "group_bits",
        "epoch_wrap",
        "epoch_tiles",
    ],
};
/// The block of the kernels over runs of equal keys (`unique`, `run_length`,
/// `reduce_by_key`).
pub const RUNS_PARAMS: ParamBlock = ParamBlock {
    name: "RunsParams",
    fields: &["n", "tiles", "spin", "clear", "epoch_wrap", "epoch_tiles"],
};
/// The even-bin histogram's block.
pub const HISTOGRAM_PARAMS: ParamBlock = ParamBlock {
    name: "HistogramParams",
    fields: &[
        "n", "bins", "chunk", "wide", "lower_lo", "lower_hi", "upper_lo", "upper_hi", "scale_lo",
        "scale_hi", "range_lo", "range_hi", "width_lo", "width_hi", "pad1", "pad2",
    ],
};
/// The segmented reduce's block.
pub const SEGMENTED_REDUCE_PARAMS: ParamBlock = ParamBlock {
    name: "SegmentedReduceParams",
    fields: &["items", "pad0", "pad1", "pad2"],
};
/// The top-k's block.
pub const TOP_K_PARAMS: ParamBlock = ParamBlock {
    name: "TopKParams",
    fields: &[
        "n",
        "k",
        "tiles",
        "shift",
        "mask_lo",
        "mask_hi",
        "key_kind",
        "descending",
        "indices",
        "cap",
        "filtering",
        "digit",
    ],
};
/// Every parameter block.
pub const PARAM_BLOCKS: &[&ParamBlock] = &[
    &REDUCE_PARAMS,
    &SCAN_PARAMS,
    &SCAN_DEVICE_PARAMS,
    &COMPACT_PARAMS,
    &VOTE_PARAMS,
    &SHFL_PARAMS,
    &STENCIL_PARAMS,
    &ROOFLINE_PARAMS,
    &CHAIN_PARAMS,
    &SORT_HISTOGRAM_PARAMS,
    &SORT_ONESWEEP_PARAMS,
    &PARTITION_PARAMS,
    &RUNS_PARAMS,
    &HISTOGRAM_PARAMS,
    &SEGMENTED_REDUCE_PARAMS,
    &TOP_K_PARAMS,
];

// Values shared by several kernels' constants.
/// Reduce operator codes (`ReduceOp::code`): sum, product, min, max, and, or, xor.
const REDUCE_OPS: &[u32] = &[0, 1, 2, 3, 4, 5, 6];
/// The scans' operator codes: sum, min, max.
const SCAN_OPS: &[u32] = &[0, 2, 3];
const OFF_ON: &[u32] = &[0, 1];
/// The sorts' key orders (2 * kind + descending; kinds unsigned 0, signed 1, float 2): one of
/// each kind and both orders.
const KEY_ORDERS: &[u32] = &[0, 3, 4];

/// A ladder rung: no constants, the reduction block.
const fn rung(name: &'static str) -> KernelDef {
    KernelDef {
        name,
        variants: INTEGERS,
        consts: &[],
        cuda: true,
        params: Some(&REDUCE_PARAMS),
    }
}

/// The integer types and their Vulkan-memory-model variants: the ladder's rungs that work in
/// place on a scratch buffer in device memory.
const INTEGERS_AND_MEMORY_MODEL: &[&str] = &[
    "i32", "u32", "i64", "u64", "i32_vmm", "u32_vmm", "i64_vmm", "u64_vmm",
];

/// A rung of the reduction ladder that works in place in device memory (chapter 3's).
const fn global_rung(name: &'static str) -> KernelDef {
    KernelDef {
        name,
        variants: INTEGERS_AND_MEMORY_MODEL,
        consts: &[],
        cuda: true,
        params: Some(&REDUCE_PARAMS),
    }
}

/// The constants of both device-scan kernels on Vulkan.
/// The 4-byte types' tile states in the device's epochs buffer, each tagged with its call's
/// epoch (no clearing launch, nothing zeroed): a variant of its own on both backends, whose
/// others keep the code from before it.
const SCAN_EPOCHS: Const = Const {
    name: "EPOCHS",
    on: On::Both,
    values: OFF_ON,
};

/// The Vulkan scan kernels with a 32-bit type's state in one word.
const SCAN_DEVICE_S64_CONSTS: [Const; 5] = [
    SCAN_DEVICE_CONSTS[0],
    SCAN_DEVICE_CONSTS[1],
    SCAN_DEVICE_CONSTS[2],
    SCAN_DEVICE_CONSTS[3],
    SCAN_EPOCHS,
];

const SCAN_DEVICE_CONSTS: [Const; 4] = [
    Const {
        name: "OP",
        on: On::Both,
        values: SCAN_OPS,
    },
    Const {
        name: "EXCLUSIVE",
        on: On::Both,
        values: OFF_ON,
    },
    Const {
        name: "ITEMS",
        on: On::Both,
        values: &[16, 32],
    },
    Const {
        name: "LB_TILES",
        on: On::Both,
        values: &[1, 2, 3, 4],
    },
];

/// The constants of both compaction kernels on Vulkan.
const COMPACT_CONSTS: [Const; 6] = [
    // The step: 0 reset, 1 unordered, 2 stable, 3 the run lengths that end at a tile's first
    // head (run-length encoding).
    Const {
        name: "OP",
        on: On::Both,
        values: &[0, 1, 2, 3],
    },
    // Items per thread: 16 for 4-byte elements, 8 for 8-byte ones; the stable step's larger
    // tiles of 4-byte elements (src/tuning.rs).
    Const {
        name: "ITEMS",
        on: On::Both,
        values: &[16, 8, 24, 32],
    },
    // 1: the head predicate of unique (a variant of its own, so that the other predicates'
    // kernel keeps its code).
    Const {
        name: "HEADS",
        on: On::Both,
        values: OFF_ON,
    },
    // 1 (with HEADS): each head's run length too (run-length encoding).
    Const {
        name: "LENGTHS",
        on: On::Both,
        values: OFF_ON,
    },
    // 1 (not with LENGTHS): the tile's passing elements staged before its base is known.
    Const {
        name: "EARLY",
        on: On::Both,
        values: OFF_ON,
    },
    // 1 (the stable step of one chunk and window, not with LENGTHS but with CARRY; CUDA and
    // compact_c64):
    // the tile states in the device's epochs buffer, tagged with the call's epoch (no RESET,
    // nothing zeroed); a variant of its own, so that the others keep the code before it.
    Const {
        name: "EPOCHS",
        on: On::Both,
        values: OFF_ON,
    },
];

/// A compaction kernel's constants: [`COMPACT_CONSTS`], then those of its own.
macro_rules! compact_consts {
    ($($own:expr),* $(,)?) => {
        &[
            COMPACT_CONSTS[0], COMPACT_CONSTS[1], COMPACT_CONSTS[2],
            COMPACT_CONSTS[3], COMPACT_CONSTS[4], COMPACT_CONSTS[5],
            $($own),*
        ]
    };
}

/// The constants of the kernels over runs of equal keys, `OP` (reduce-by-key's) apart.
const RUNS_CONSTS: [Const; 4] = [
    // 32-bit words per key.
    Const {
        name: "KEY_WORDS",
        on: On::Both,
        values: &[1, 2],
    },
    // Elements per thread: 16 where keys and values are 4 bytes, else 8.
    Const {
        name: "ITEMS",
        on: On::Both,
        values: &[16, 8],
    },
    // 1: the tile states lie in the device's counters buffer and the last tile done zeroes them
    // (no clearing launch); only this variant holds that code.
    Const {
        name: "SELF_CLEARING",
        on: On::Both,
        values: &[0, 1],
    },
    Const {
        name: "BLOCK",
        on: On::Cuda,
        values: &[256],
    },
];

/// Reduce-by-key's constants (both state forms): the runs kernels' with the operator.
const RBK_CONSTS: [Const; 5] = [
    RUNS_CONSTS[0],
    RUNS_CONSTS[1],
    Const {
        name: "OP",
        on: On::Both,
        values: REDUCE_OPS,
    },
    RUNS_CONSTS[2],
    RUNS_CONSTS[3],
];

/// The stable partition's constants (`partition`, `partition_e64`).
const PARTITION_CONSTS: [Const; 3] = [
    // The step: 0 count, 1 scatter, 2 the whole partition in one launch, 3 count by groups of
    // tiles, 4 the scatter after it (partition_e64: the one launch alone differs).
    Const {
        name: "OP",
        on: On::Both,
        values: &[0, 1, 2, 3, 4],
    },
    // Items per thread: 16 for 4-byte elements, 8 for 8-byte ones.
    Const {
        name: "ITEMS",
        on: On::Both,
        values: &[16, 8],
    },
    Const {
        name: "BLOCK",
        on: On::Cuda,
        values: &[256],
    },
];

/// Every kernel, in the order of `shaders/`.
pub const KERNELS: &[KernelDef] = &[
    KernelDef {
        name: "chain",
        variants: &["u32"],
        consts: &[Const {
            name: "OP",
            on: On::Both,
            // Broadcast, up, down, xor, ballot.
            values: &[0, 1, 2, 3, 4],
        }],
        cuda: true,
        params: Some(&CHAIN_PARAMS),
    },
    KernelDef {
        name: "compact",
        variants: ALL_TYPES,
        consts: compact_consts![
            Const {
                name: "BLOCK",
                on: On::Cuda,
                values: &[256],
            },
            // The counter words and tile states in the device's counters buffer (no RESET):
            // a variant of its own on CUDA, so that the other keeps the code before it (the
            // GLSL kernels read `self_clearing` from the parameters).
            Const {
                name: "SELF_CLEARING",
                on: On::Cuda,
                values: OFF_ON,
            },
            // 1 (with LENGTHS, one chunk and window): each tile closes the run before its
            // first head, from one word a tile carried through the look-back (no last launch);
            // the GLSL twin is compact_c64's (its states tagged by epochs in 64-bit words).
            Const {
                name: "CARRY",
                on: On::Cuda,
                values: OFF_ON,
            },
        ],
        cuda: true,
        params: Some(&COMPACT_PARAMS),
    },
    // compact.glsl with the unordered step's count and tiles done in one 64-bit word; the
    // CUDA twin always keeps them so, in compact.cu.
    KernelDef {
        name: "compact_c64",
        variants: ALL_TYPES,
        consts: compact_consts![
            // 1 (with LENGTHS and EPOCHS, one chunk and window): each tile closes the run
            // before its first head, from one word a tile carried through the look-back (no
            // last launch); the twin of compact.cu's.
            Const {
                name: "CARRY",
                on: On::Vulkan,
                values: OFF_ON,
            },
        ],
        cuda: false,
        params: Some(&COMPACT_PARAMS),
    },
    KernelDef {
        name: "histogram",
        variants: ALL_TYPES,
        consts: &[
            // The step: 0 clear, 1 count in shared memory, 2 count in global memory, 3 widen
            // the counts to u64, 4 count in shared memory into the device's counters, the last
            // workgroup writing the counts and zeroing those words.
            Const {
                name: "OP",
                on: On::Both,
                values: &[0, 1, 2, 3, 4],
            },
            // Words of the shared bins: the bins rounded up to a power of two, 64 ..
            // SHARED_BINS (src/histogram.rs).
            Const {
                name: "SHARED_WORDS",
                on: On::Both,
                values: &[4096, 64, 128, 256, 512, 1024, 2048],
            },
            // How the exact float variant bins (`fast_bins` in src/histogram.rs): 0 every
            // sample tested for subnormal operands, 1 the driver's arithmetic, 2 the same with
            // negative subnormal samples tested (lower is zero).
            Const {
                name: "FAST_BINS",
                on: On::Vulkan,
                values: &[0, 1, 2],
            },
            Const {
                name: "BLOCK",
                on: On::Cuda,
                values: &[256],
            },
        ],
        cuda: true,
        params: Some(&HISTOGRAM_PARAMS),
    },
    KernelDef {
        name: "partition",
        variants: ALL_TYPES,
        consts: &PARTITION_CONSTS,
        cuda: true,
        params: Some(&PARTITION_PARAMS),
    },
    // partition.glsl with the one-launch step's tile states tagged by epochs in the device's
    // epochs buffer (64-bit words); Vulkan only, where the device has 64-bit buffer atomics
    // (src/tuning.rs).
    KernelDef {
        name: "partition_e64",
        variants: ALL_TYPES,
        consts: &PARTITION_CONSTS,
        cuda: false,
        params: Some(&PARTITION_PARAMS),
    },
    KernelDef {
        name: "reduce",
        variants: ALL_TYPES,
        consts: &[
            Const {
                name: "OP",
                on: On::Both,
                values: REDUCE_OPS,
            },
            // 0 warp butterfly, 1 warp shift-down, 2 block, 3 tile.
            Const {
                name: "SCOPE",
                on: On::Both,
                values: &[0, 1, 2, 3],
            },
            Const {
                name: "ITEMS",
                on: On::Both,
                values: &[16],
            },
        ],
        cuda: true,
        params: Some(&REDUCE_PARAMS),
    },
    KernelDef {
        name: "reduce_complete_unroll",
        variants: INTEGERS_AND_MEMORY_MODEL,
        consts: &[Const {
            name: "IBLOCK",
            on: On::Both,
            values: &[512, 64, 128, 256, 1024],
        }],
        cuda: true,
        params: Some(&REDUCE_PARAMS),
    },
    global_rung("reduce_complete_unroll_warps8"),
    KernelDef {
        name: "reduce_device",
        variants: ALL_TYPES,
        consts: &[
            Const {
                name: "OP",
                on: On::Both,
                values: REDUCE_OPS,
            },
            Const {
                name: "ITEMS",
                on: On::Both,
                values: &[16],
            },
            // 1: more than one tile of totals.
            Const {
                name: "GROUPED",
                on: On::Both,
                values: OFF_ON,
            },
        ],
        cuda: true,
        params: Some(&REDUCE_PARAMS),
    },
    global_rung("reduce_interleaved"),
    global_rung("reduce_neighbored"),
    global_rung("reduce_neighbored_less"),
    rung("reduce_shfl"),
    rung("reduce_smem"),
    global_rung("reduce_unroll_warps8"),
    global_rung("reduce_unrolling2"),
    global_rung("reduce_unrolling4"),
    global_rung("reduce_unrolling8"),
    KernelDef {
        name: "reduce_by_key",
        variants: ALL_TYPES,
        consts: &RBK_CONSTS,
        cuda: true,
        params: Some(&RUNS_PARAMS),
    },
    // runs.glsl's reduce-by-key of 4-byte values with each tile state in one 64-bit word,
    // published and read by single atomics (no buffer barriers); Vulkan only, where the device
    // has 64-bit buffer atomics (src/tuning.rs).
    KernelDef {
        name: "reduce_by_key_p64",
        variants: &["i32", "u32", "f32", "f32_exact", "f32_flush"],
        consts: &RBK_CONSTS,
        cuda: false,
        params: Some(&RUNS_PARAMS),
    },
    // reduce_by_key_p64 with the tile states of a launch of several tiles tagged by epochs in
    // the device's epochs buffer (no count of tiles done); Vulkan only, where the device has
    // 64-bit buffer atomics (src/tuning.rs).
    KernelDef {
        name: "reduce_by_key_e64",
        variants: &["i32", "u32", "f32", "f32_exact", "f32_flush"],
        consts: &RBK_CONSTS,
        cuda: false,
        params: Some(&RUNS_PARAMS),
    },
    KernelDef {
        name: "roofline",
        variants: &["u32"],
        // 0 copy, 1 read, 2 digest.
        consts: &[Const {
            name: "MODE",
            on: On::Both,
            values: &[0, 1, 2],
        }],
        cuda: true,
        params: Some(&ROOFLINE_PARAMS),
    },
    // Run-length encoding: keys as words, lengths u32.
    KernelDef {
        name: "run_length",
        variants: &["u32"],
        consts: &RUNS_CONSTS,
        cuda: true,
        params: Some(&RUNS_PARAMS),
    },
    KernelDef {
        name: "scan",
        variants: ALL_TYPES,
        consts: &[
            Const {
                name: "OP",
                on: On::Both,
                values: SCAN_OPS,
            },
            // 0 warp, 1 block.
            Const {
                name: "SCOPE",
                on: On::Both,
                values: OFF_ON,
            },
            Const {
                name: "EXCLUSIVE",
                on: On::Both,
                values: OFF_ON,
            },
        ],
        cuda: true,
        params: Some(&SCAN_PARAMS),
    },
    KernelDef {
        name: "scan_device",
        variants: ALL_TYPES,
        consts: &[
            SCAN_DEVICE_CONSTS[0],
            SCAN_DEVICE_CONSTS[1],
            SCAN_DEVICE_CONSTS[2],
            SCAN_DEVICE_CONSTS[3],
            // Where a thread's partial folds wait out the look-back: 1 shared memory, 0
            // registers. The GLSL kernels always keep them in shared memory.
            Const {
                name: "PARTIALS_IN_SHARED",
                on: On::Cuda,
                values: &[1, 0],
            },
            // The tile states in the device's counters buffer (no clearing launch): a variant
            // of its own on CUDA, whose other keeps the code before it (NOTES.md version 19:
            // with the tail in every variant the scan of 2^28 took 4-10% more); the GLSL
            // kernels read `clear` from the parameters.
            Const {
                name: "SELF_CLEARING",
                on: On::Cuda,
                values: OFF_ON,
            },
            SCAN_EPOCHS,
            // 1: a 4-byte tile in registers, moved by 16-byte loads and stores (the Vulkan
            // twin is the kernel scan_device_vec).
            Const {
                name: "VEC",
                on: On::Cuda,
                values: OFF_ON,
            },
            // Predecessors each lane of the near look-back polls (src/tuning.rs,
            // scan_near_depth).
            Const {
                name: "NEAR_DEPTH",
                on: On::Cuda,
                values: &[1, 4],
            },
        ],
        cuda: true,
        params: Some(&SCAN_DEVICE_PARAMS),
    },
    KernelDef {
        name: "segmented_reduce",
        variants: ALL_TYPES,
        consts: &[
            Const {
                name: "OP",
                on: On::Both,
                values: REDUCE_OPS,
            },
            Const {
                name: "ITEMS",
                on: On::Both,
                values: &[16],
            },
            // 0: one invocation per short segment; 1: one workgroup per tile.
            Const {
                name: "STEP",
                on: On::Both,
                values: OFF_ON,
            },
            Const {
                name: "BLOCK",
                on: On::Cuda,
                values: &[256],
            },
        ],
        cuda: true,
        params: Some(&SEGMENTED_REDUCE_PARAMS),
    },
    // scan_device.glsl with a 32-bit type's tile state in one 64-bit word; the CUDA twin
    // always keeps it so, in scan_device.cu.
    KernelDef {
        name: "scan_device_s64",
        variants: &["i32", "u32", "f32", "f32_exact", "f32_flush"],
        consts: &SCAN_DEVICE_S64_CONSTS,
        cuda: false,
        params: Some(&SCAN_DEVICE_PARAMS),
    },
    // scan_device.glsl for 4-byte types with the one-word state and the tile in registers
    // (16-byte loads and stores, no staging area); Vulkan only (src/tuning.rs).
    KernelDef {
        name: "scan_device_vec",
        variants: &["i32", "u32", "f32", "f32_exact", "f32_flush"],
        consts: &SCAN_DEVICE_S64_CONSTS,
        cuda: false,
        params: Some(&SCAN_DEVICE_PARAMS),
    },
    // scan_device_vec's f32 sums in the driver's arithmetic with a test of every input: the
    // gate of a gated call on a device that flushes subnormals (src/scan.rs); Vulkan only.
    KernelDef {
        name: "scan_device_gate",
        variants: &["f32"],
        consts: &SCAN_DEVICE_S64_CONSTS,
        cuda: false,
        params: Some(&SCAN_DEVICE_PARAMS),
    },
    // The Vulkan device's self-test at open.
    KernelDef {
        name: "selftest",
        variants: FLOATS,
        consts: &[],
        cuda: false,
        params: None,
    },
    KernelDef {
        name: "shfl",
        variants: BIT_VARIANTS,
        consts: &[
            // Broadcast, up, down, wrap, xor.
            Const {
                name: "OP",
                on: On::Both,
                values: &[0, 1, 2, 3, 4],
            },
            // Values per lane.
            Const {
                name: "SEGM",
                on: On::Both,
                values: &[1, 4],
            },
            // Layers of the workgroup's width per workgroup.
            Const {
                name: "ROWS",
                on: On::Both,
                values: &[4],
            },
        ],
        cuda: true,
        params: Some(&SHFL_PARAMS),
    },
    KernelDef {
        name: "sort_histogram",
        variants: &["b32", "b64", "b64_int64"],
        consts: &[
            // Copies of every counter in shared memory (a power of two; 1 for the clearing
            // launch).
            Const {
                name: "PARTS",
                on: On::Both,
                values: &[8, 4, 2, 1],
            },
            // How keys map to sortable bits and the order: 2 * kind + descending.
            Const {
                name: "KEY_ORDER",
                on: On::Both,
                values: KEY_ORDERS,
            },
        ],
        cuda: true,
        params: Some(&SORT_HISTOGRAM_PARAMS),
    },
    KernelDef {
        name: "sort_onesweep",
        variants: &["b32", "b64", "b64_int64"],
        consts: &[
            // Keys per invocation: 16 for 4-byte keys and values, 8 where either is 8 bytes.
            Const {
                name: "ITEMS",
                on: On::Both,
                values: &[16, 8],
            },
            // 32-bit words per value: 0 (keys only), 1 or 2.
            Const {
                name: "VALUE_WORDS",
                on: On::Both,
                values: &[0, 1, 2],
            },
            // The most subgroups a workgroup may have (the warps of a CUDA block).
            Const {
                name: "HIST_SG",
                on: On::Both,
                values: &[8, 16],
            },
            // Shared words for the sorted tile: its keys, then its values (2048 at 16 keys a
            // thread: keys staged in two rounds).
            Const {
                name: "STAGE_WORDS",
                on: On::Both,
                values: &[8192, 2048],
            },
            // __match_any_sync instead of one ballot per digit bit.
            Const {
                name: "MATCH_ANY",
                on: On::Cuda,
                values: OFF_ON,
            },
            // Threads per block: 256, or 384 (pairs of 32-bit keys and values at size).
            Const {
                name: "BLOCK",
                on: On::Cuda,
                values: &[256, 384],
            },
            // __launch_bounds__'s blocks per multiprocessor (0: none).
            Const {
                name: "MIN_BLOCKS",
                on: On::Cuda,
                values: &[0, 2, 3, 4],
            },
            // 1: the digit pass's warp digit counts share their words with the staging area
            // (8-byte keys or values with values).
            Const {
                name: "COUNTS_IN_STAGE",
                on: On::Cuda,
                values: OFF_ON,
            },
            // Bytes of dynamic shared memory a block takes (0: static shared memory): the
            // larger tiles of 32-bit pairs, whose bytes the algorithm layer passes (the
            // variants it plans so are compiled by the NVRTC test of their own,
            // `the_sorts_variants_in_dynamic_shared_memory_compile_with_nvrtc`).
            Const {
                name: "DYNAMIC_SHARED",
                on: On::Cuda,
                values: &[0],
            },
            // Words of a ballot that can hold lanes: 1 where subgroups have at most 32 lanes.
            Const {
                name: "BALLOT_WORDS",
                on: On::Vulkan,
                values: &[1, 4],
            },
            // How keys map to sortable bits and the order: 2 * kind + descending.
            Const {
                name: "KEY_ORDER",
                on: On::Both,
                values: KEY_ORDERS,
            },
            // 1: the whole sort of one tile in one launch (every pass), 0: one digit pass.
            Const {
                name: "WHOLE",
                on: On::Both,
                values: OFF_ON,
            },
        ],
        cuda: true,
        params: Some(&SORT_ONESWEEP_PARAMS),
    },
    KernelDef {
        name: "stencil",
        variants: FLOATS,
        consts: &[
            // 0 shuffles, 1 shared memory.
            Const {
                name: "SMEM",
                on: On::Both,
                values: OFF_ON,
            },
            Const {
                name: "ROWS",
                on: On::Both,
                values: &[8, 4, 16],
            },
        ],
        cuda: true,
        params: Some(&STENCIL_PARAMS),
    },
    KernelDef {
        name: "top_k",
        variants: &["b32", "b64", "b64_int64"],
        consts: &[
            // The step: 0 histogram (its last workgroup selects the digit and scans the
            // workgroups' counts), 1 scatter, 2 clear.
            Const {
                name: "OP",
                on: On::Both,
                values: &[0, 1, 2],
            },
            // Keys per invocation of a tile: 16 for 4-byte keys, 8 for 8-byte ones.
            Const {
                name: "ITEMS",
                on: On::Both,
                values: &[16, 8],
            },
            // 32-bit words per value or index: 0 (keys only), 1 or 2.
            Const {
                name: "VALUE_WORDS",
                on: On::Both,
                values: &[0, 1, 2],
            },
            Const {
                name: "BLOCK",
                on: On::Cuda,
                values: &[256],
            },
        ],
        cuda: true,
        params: Some(&TOP_K_PARAMS),
    },
    // Unique: keys as words.
    KernelDef {
        name: "unique",
        variants: &["u32"],
        consts: &RUNS_CONSTS,
        cuda: true,
        params: Some(&RUNS_PARAMS),
    },
    KernelDef {
        name: "vote",
        variants: ALL_TYPES,
        consts: &[Const {
            name: "ROWS",
            on: On::Both,
            values: &[4],
        }],
        cuda: true,
        params: Some(&VOTE_PARAMS),
    },
];
