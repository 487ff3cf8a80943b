//! The one trait every backend implements, and the types that cross it.
//!
//! A [`Device`] owns memory, moves bytes to and from it, launches named kernels over buffers
//! with a small parameter block, synchronises and times GPU work. It knows nothing of
//! algorithms: the algorithm layer ([`crate::shfl`], ...) plans grids once for every backend.
//!
//! Work is ordered: every launch, upload and download on one device sees the effects of the
//! ones issued before it. Launches may be queued; [`Device::synchronize`] waits for all of them,
//! and downloads wait by themselves.

pub use crate::backend_kind::BackendKind;
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What kind of hardware a device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceType {
    /// A discrete GPU.
    Discrete,
    /// A GPU sharing memory with the CPU.
    Integrated,
    /// A virtual GPU.
    Virtual,
    /// A CPU implementation (llvmpipe, SwiftShader).
    Cpu,
    /// Anything else.
    Other,
}

/// Subgroup (warp) operation classes a device supports, after `VkSubgroupFeatureFlags`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SubgroupFeatures(pub u32);

impl SubgroupFeatures {
    /// `subgroupElect`, `gl_SubgroupSize`, barriers.
    pub const BASIC: Self = Self(1 << 0);
    /// `subgroupAll/Any/AllEqual`.
    pub const VOTE: Self = Self(1 << 1);
    /// `subgroupAdd/Mul/Min/Max/And/Or/Xor` and their scans.
    pub const ARITHMETIC: Self = Self(1 << 2);
    /// `subgroupBallot` and friends.
    pub const BALLOT: Self = Self(1 << 3);
    /// `subgroupShuffle`, `subgroupShuffleXor`.
    pub const SHUFFLE: Self = Self(1 << 4);
    /// `subgroupShuffleUp/Down`.
    pub const SHUFFLE_RELATIVE: Self = Self(1 << 5);
    /// `subgroupClustered*`.
    pub const CLUSTERED: Self = Self(1 << 6);
    /// `subgroupQuad*`.
    pub const QUAD: Self = Self(1 << 7);
    const NAMES: [&'static str; 8] = [
        "basic",
        "vote",
        "arithmetic",
        "ballot",
        "shuffle",
        "shuffle_relative",
        "clustered",
        "quad",
    ];

    /// Whether every class in `other` is present.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// The classes of `other` missing here.
    pub fn missing(self, other: Self) -> Self {
        Self(other.0 & !self.0)
    }
}

impl std::ops::BitOr for SubgroupFeatures {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl fmt::Display for SubgroupFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = (0..8)
            .filter(|i| self.0 & (1 << i) != 0)
            .map(|i| Self::NAMES[i])
            .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

/// How a device's kernels treat subnormal floats of one width.
///
/// The CPU reference keeps subnormals (IEEE 754), so results are bit-identical to it only on a
/// device that keeps them too. CUDA always does (NVRTC compiles without flush-to-zero). A Vulkan
/// device keeps them where its driver offers `shaderDenormPreserveFloat32` / `...Float64`
/// (`VK_KHR_shader_float_controls`, core in Vulkan 1.2): xwarp then asks for it in every
/// kernel. Other drivers decide for themselves; xwarp measures what they do when the device
/// opens, and where a driver flushes them the kernels compute on subnormals in software
/// ([`Subnormals::Emulated`]; see [`crate::vulkan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subnormals {
    /// Kept, as the driver promises for kernels that ask (every xwarp kernel does).
    Guaranteed,
    /// Kept when the device opened, but the driver does not promise it: results are
    /// bit-identical as far as the self-test could tell.
    Observed,
    /// Kept by the kernels themselves: the driver flushes subnormals (or
    /// `XWARP_SUBNORMALS=emulate` asked for this), so every sum or product whose operands or
    /// result may be subnormal is computed exactly from the operands' bits, and min, max and
    /// comparisons order the bits. Results are bit-identical to the CPU reference; on normal
    /// data each operation costs a check of its result's exponent bits.
    Emulated,
    /// Flushed to zero (as inputs or results or both): float results on subnormal inputs, or
    /// whose exact intermediate results are subnormal, may differ from the CPU reference and
    /// from other devices. Only where asked for (`XWARP_SUBNORMALS=native` on a driver that
    /// flushes, or `flush`), or where the self-test found the emulation wrong on the device.
    Flushed,
    /// The device has no kernels of this width (no `shaderFloat64`).
    Unsupported,
}

impl Subnormals {
    /// Whether subnormals are kept (guaranteed, observed or emulated).
    pub fn kept(self) -> bool {
        matches!(
            self,
            Subnormals::Guaranteed | Subnormals::Observed | Subnormals::Emulated
        )
    }
}

impl fmt::Display for Subnormals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Subnormals::Guaranteed => "kept (guaranteed by the driver)",
            Subnormals::Observed => "kept (measured at open; the driver does not promise it)",
            Subnormals::Emulated => "kept (Emulated: computed exactly in the kernels)",
            Subnormals::Flushed => "FLUSHED to zero",
            Subnormals::Unsupported => "no kernels of this width",
        })
    }
}

/// The facts about a device that callers and the algorithm layer plan with.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The backend that drives it.
    pub backend: BackendKind,
    /// Index among the backend's devices (what `--device N` selects).
    pub index: usize,
    /// The device's name as the driver reports it.
    pub name: String,
    /// PCI vendor id (0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x10005 Mesa).
    pub vendor_id: u32,
    /// Hardware kind.
    pub device_type: DeviceType,
    /// Driver and API version, in words.
    pub driver: String,
    /// The subgroup (warp) size kernels run with on this device.
    pub subgroup_size: u32,
    /// Smallest subgroup size the device can run compute kernels with.
    pub min_subgroup_size: u32,
    /// Largest subgroup size the device can run compute kernels with.
    pub max_subgroup_size: u32,
    /// Whether kernels are pinned to `subgroup_size` with full subgroups.
    pub subgroup_size_pinned: bool,
    /// Subgroup operation classes available in compute kernels.
    pub subgroup_features: SubgroupFeatures,
    /// Largest byte range one kernel binding may span.
    pub max_binding_bytes: u64,
    /// Required alignment of a binding's byte offset.
    pub binding_alignment: u64,
    /// Largest workgroup count per grid dimension.
    pub max_groups: [u32; 3],
    /// Shared (workgroup) memory per workgroup, bytes: what a kernel may declare statically
    /// (Vulkan's `maxComputeSharedMemorySize`; CUDA's 48 KiB).
    pub shared_memory_bytes: u32,
    /// The most shared memory one workgroup may take, bytes: on CUDA the limit a kernel opts
    /// into for dynamic shared memory (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`;
    /// 227 KiB on compute capability 9.0), where the sort's pairs take larger tiles
    /// ([`crate::sort::PAIRS_ITEMS`]); on Vulkan the same as `shared_memory_bytes`.
    pub max_shared_memory_bytes: u32,
    /// Shared memory of one multiprocessor (compute unit), bytes, which the resident
    /// workgroups share, where known (CUDA's `MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`); 0 where
    /// the driver reports none (Vulkan).
    pub unit_shared_memory_bytes: u32,
    /// Multiprocessors (compute units) the device runs workgroups on, where known: CUDA's
    /// multiprocessor count; on Vulkan NVIDIA's SM count (`VK_NV_shader_sm_builtins`) or AMD's
    /// compute units (`VK_AMD_shader_core_properties`); 0 where the driver reports none.
    /// Algorithms that need every workgroup of a launch resident at once (the one-launch
    /// partition) take that path only where this is known.
    pub compute_units: u32,
    /// Largest workgroup (threads per block) a kernel may launch with: Vulkan's
    /// `maxComputeWorkGroupSize[0]` and `maxComputeWorkGroupInvocations`, the smaller; 1024 on
    /// CUDA.
    pub max_block: u32,
    /// Whether kernels may compute on 64-bit integers (Vulkan `shaderInt64`).
    pub int64: bool,
    /// Whether kernels may compute on `f64` (Vulkan `shaderFloat64`).
    pub float64: bool,
    /// Whether kernels may use 64-bit atomics on buffers (Vulkan `shaderBufferInt64Atomics`;
    /// always on CUDA). The device scan keeps a 32-bit type's tile state in one 64-bit word
    /// with them, in two 32-bit words without; the unordered compaction keeps a chunk's count
    /// and tiles done in one 64-bit word with them, in two counters without (slower; same
    /// results).
    pub int64_atomics: bool,
    /// Whether kernels may keep device memory coherent within a workgroup only, as
    /// `__syncthreads()` does for global memory in a CUDA block (always on CUDA; on Vulkan the
    /// device's `vulkanMemoryModel` with `vulkanMemoryModelDeviceScope`, Vulkan 1.2). The reduction ladder's in-place rungs then
    /// synchronise their scratch buffer at workgroup scope; without it they declare it
    /// `coherent` (device scope), which a driver may serve from a cache level further out (the
    /// same results, more time).
    pub workgroup_coherence: bool,
    /// How kernels treat `f32` subnormals.
    pub subnormals_f32: Subnormals,
    /// How kernels treat `f64` subnormals.
    pub subnormals_f64: Subnormals,
}

impl DeviceInfo {
    /// Whether kernels on `elem` keep subnormals (always true for integer types).
    pub fn keeps_subnormals(&self, elem: ElemKind) -> bool {
        match elem {
            ElemKind::F32 => self.subnormals_f32.kept(),
            ElemKind::F64 => self.subnormals_f64.kept(),
            _ => true,
        }
    }

    /// Whether kernels on `elem` keep subnormals by the exact float variants
    /// ([`Subnormals::Emulated`]: the driver flushes them); false for integer types.
    pub fn emulates_subnormals(&self, elem: ElemKind) -> bool {
        match elem {
            ElemKind::F32 => self.subnormals_f32 == Subnormals::Emulated,
            ElemKind::F64 => self.subnormals_f64 == Subnormals::Emulated,
            _ => false,
        }
    }

    /// The vendor's name for `vendor_id`.
    pub fn vendor(&self) -> &'static str {
        match self.vendor_id {
            0x10de => "NVIDIA",
            0x1002 | 0x1022 => "AMD",
            0x8086 => "Intel",
            0x13b5 => "ARM",
            0x5143 => "Qualcomm",
            0x106b => "Apple",
            0x10005 => "Mesa",
            _ => "unknown",
        }
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}:{}] {} ({}, {:?}) subgroup {} (range {}..={}{}) ops {}",
            self.backend,
            self.index,
            self.name,
            self.vendor(),
            self.device_type,
            self.subgroup_size,
            self.min_subgroup_size,
            self.max_subgroup_size,
            if self.subgroup_size_pinned {
                ", pinned"
            } else {
                ""
            },
            self.subgroup_features
        )
    }
}

/// Which device of a backend: by index, or by a case-insensitive part of its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSelector {
    /// The backend's N-th device.
    Index(usize),
    /// The first device whose name contains this text.
    Name(String),
}

impl DeviceSelector {
    /// Whether the device with `index` and `name` is the one selected.
    pub fn matches(&self, index: usize, name: &str) -> bool {
        match self {
            DeviceSelector::Index(i) => *i == index,
            DeviceSelector::Name(n) => name.to_lowercase().contains(&n.to_lowercase()),
        }
    }
}

impl FromStr for DeviceSelector {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        if s.is_empty() {
            return Err(Error::invalid(
                "device",
                "\"\"",
                "an index or part of a device name",
            ));
        }
        Ok(s.parse()
            .map(DeviceSelector::Index)
            .unwrap_or_else(|_| DeviceSelector::Name(s.to_string())))
    }
}

impl fmt::Display for DeviceSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSelector::Index(i) => write!(f, "{i}"),
            DeviceSelector::Name(n) => f.write_str(n),
        }
    }
}

/// A unique identity for one opened device, so buffers cannot cross devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId(u64);

impl DeviceId {
    /// A fresh id, never handed out before in this process.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        DeviceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A point in a device's queue of work: [`Device::submit`] and [`Device::replay`] return one,
/// [`Device::wait`] waits for it and [`Device::is_done`] asks whether it has passed. A ticket
/// stands for its submission and every one before it on the same device (work runs in
/// submission order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    device: DeviceId,
    seq: u64,
}

impl Ticket {
    /// The ticket of submission `seq` (counted from 1; 0 is "nothing submitted yet") on `device`.
    pub(crate) fn new(device: DeviceId, seq: u64) -> Self {
        Ticket { device, seq }
    }

    /// The submission's number on its device, counted from 1 (0: before the first).
    pub fn seq(self) -> u64 {
        self.seq
    }

    /// The device the ticket belongs to.
    pub fn device(self) -> DeviceId {
        self.device
    }

    /// `self.seq`, once checked to belong to `device` and to have been issued (`issued` is the
    /// device's latest ticket number).
    pub(crate) fn check(self, device: DeviceId, issued: u64) -> Result<u64> {
        if self.device != device || self.seq > issued {
            return Err(Error::invalid(
                "ticket",
                format!("{} of {:?}", self.seq, self.device),
                format!("a ticket this device issued (0..={issued} of {device:?})"),
            ));
        }
        Ok(self.seq)
    }
}

/// A sequence of operations recorded once by [`Device::record`] on fixed buffers and replayed
/// by [`Device::replay`] (Vulkan: a reusable command buffer; CUDA: a CUDA Graph). It keeps
/// every buffer it uses alive; sizes, buffers and parameters are those of the recording, the
/// buffers' contents are read afresh at each replay.
pub struct Recording {
    device: DeviceId,
    operations: usize,
    barriers: Option<usize>,
    inner: Box<dyn Any + Send + Sync>,
}

impl Recording {
    /// Wraps a backend's recorded sequence of `operations` commands made on `device`, with
    /// `barriers` between them where the backend places them itself.
    pub(crate) fn new(
        device: DeviceId,
        operations: usize,
        barriers: Option<usize>,
        inner: Box<dyn Any + Send + Sync>,
    ) -> Self {
        Recording {
            device,
            operations,
            barriers,
            inner,
        }
    }

    /// Commands (launches, copies, fills) the sequence holds.
    pub fn operations(&self) -> usize {
        self.operations
    }

    /// The barriers between the sequence's commands, where the backend places them: on
    /// Vulkan a command waits for the earlier ones only where it reads what one of them wrote
    /// or writes what one of them read or wrote (since the last barrier), so independent
    /// commands run side by side; `None` on CUDA, whose stream runs every command after the
    /// one before it.
    pub fn barriers(&self) -> Option<usize> {
        self.barriers
    }

    /// The device it was recorded on, the only one that replays it.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// The backend's recording, once checked to belong to `device`.
    pub(crate) fn inner<B: Any>(&self, device: DeviceId) -> Result<&B> {
        match self.inner.downcast_ref::<B>() {
            Some(b) if self.device == device => Ok(b),
            _ => Err(Error::invalid(
                "recording",
                format!("a recording of {:?}", self.device),
                format!("a recording made on this device ({device:?})"),
            )),
        }
    }
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("device", &self.device)
            .field("operations", &self.operations)
            .finish_non_exhaustive()
    }
}

/// Untyped device memory: either made by a backend's [`Device::alloc`] and freed when the last
/// clone drops (after any queued work that uses it), or a byte range of an application's own
/// buffer that the backend borrows (`VulkanDevice::wrap_buffer`, `CudaDevice::wrap_device_ptr`)
/// and never frees. Offsets are relative to the start of that range either way.
#[derive(Clone)]
pub struct RawBuffer {
    inner: Arc<dyn Any + Send + Sync>,
    bytes: u64,
    device: DeviceId,
    owner: Arc<str>,
}

impl RawBuffer {
    /// Wraps a backend's buffer object. For backend implementations.
    pub fn new(
        inner: Arc<dyn Any + Send + Sync>,
        bytes: u64,
        device: DeviceId,
        owner: &str,
    ) -> Self {
        RawBuffer {
            inner,
            bytes,
            device,
            owner: owner.into(),
        }
    }

    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The opened device the buffer belongs to ([`Device::id`]).
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// The backend's object, if this buffer belongs to `device` and is of type `B`.
    pub fn downcast<B: Any + Send + Sync>(&self, device: DeviceId, name: &str) -> Result<&B> {
        // Two opens of one GPU share a name: the ids tell them apart.
        let foreign = || Error::ForeignBuffer {
            buffer: format!("{} #{}", self.owner, self.device.0),
            device: format!("{name} #{}", device.0),
        };
        if self.device != device {
            return Err(foreign());
        }
        self.inner.downcast_ref::<B>().ok_or_else(foreign)
    }

    /// A shared handle that keeps the memory alive (backends hold it while work is queued).
    pub fn keep_alive(&self) -> Arc<dyn Any + Send + Sync> {
        self.inner.clone()
    }

    /// The checks every backend's [`Device::window`] makes first: the range lies inside the
    /// buffer, is not empty, and starts at a multiple of `alignment`.
    pub fn check_window(&self, offset: u64, bytes: u64, alignment: u64) -> Result<()> {
        self.check_range(offset, bytes)?;
        if bytes == 0 {
            return Err(Error::invalid("bytes", 0, "1 or more"));
        }
        if !offset.is_multiple_of(alignment.max(1)) {
            return Err(Error::invalid(
                "offset",
                offset,
                format!("a multiple of {alignment} bytes (DeviceInfo::binding_alignment)"),
            ));
        }
        Ok(())
    }

    /// Checks that `offset..offset + len` lies inside the buffer.
    pub fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(()),
            _ => Err(Error::OutOfBounds {
                offset,
                end: offset.saturating_add(len),
                size: self.bytes,
            }),
        }
    }
}

impl fmt::Debug for RawBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawBuffer({} bytes on {})", self.bytes, self.owner)
    }
}

/// A byte range of a buffer bound to one kernel parameter slot.
#[derive(Clone, Copy, Debug)]
pub struct Binding<'a> {
    /// The buffer.
    pub buffer: &'a RawBuffer,
    /// First byte (a multiple of [`DeviceInfo::binding_alignment`]).
    pub offset: u64,
    /// Length in bytes (at most [`DeviceInfo::max_binding_bytes`]).
    pub bytes: u64,
}

/// Which kernel to launch: the same name in `shaders/NAME.comp` and `cuda/NAME.cu`.
#[derive(Clone, Copy, Debug)]
pub struct Kernel<'a> {
    /// File stem and entry point.
    pub name: &'static str,
    /// Element type the kernel is built for.
    pub elem: ElemKind,
    /// Variant constants, in order: Vulkan specialization constants 1, 2, ... (0 is the
    /// workgroup size); CUDA `-DNAME=value` options.
    pub consts: &'a [(&'static str, u32)],
}

impl fmt::Display for Kernel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}<{}", self.name, self.elem)?;
        for (k, v) in self.consts {
            write!(f, ",{k}={v}")?;
        }
        f.write_str(">")
    }
}

/// One kernel launch.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    /// The kernel and its variant.
    pub kernel: Kernel<'a>,
    /// Threads per workgroup (block), a multiple of 32 and of the subgroup size.
    pub block: u32,
    /// Workgroups (blocks) per dimension; kernels linearise `x + y * X`.
    pub groups: [u32; 2],
    /// Buffers, in binding order.
    pub bindings: &'a [Binding<'a>],
    /// The parameter block (push constants / a by-value struct), at most [`MAX_PARAMS`] bytes.
    pub params: &'a [u8],
}

/// Most submissions ([`Device::submit`], [`Device::replay`]) a device keeps running at once;
/// one beyond waits for the oldest to finish first.
pub const MAX_IN_FLIGHT: usize = 16;

/// Largest parameter block a launch may carry (Vulkan's guaranteed push-constant size).
pub const MAX_PARAMS: usize = 128;

/// The variant constant by which a CUDA kernel takes its shared memory as dynamic shared
/// memory, this many bytes a block (0: none, its arrays are static): the launch gives each
/// block that much and opts the kernel in past the 48 KiB static arrays may take, up to
/// [`DeviceInfo::max_shared_memory_bytes`]. Vulkan kernels never take it.
pub const DYNAMIC_SHARED_CONST: &str = "DYNAMIC_SHARED";

impl Kernel<'_> {
    /// Bytes of dynamic shared memory a block of this variant takes ([`DYNAMIC_SHARED_CONST`];
    /// 0: none).
    pub fn dynamic_shared_bytes(&self) -> u32 {
        self.consts
            .iter()
            .find(|(name, _)| *name == DYNAMIC_SHARED_CONST)
            .map_or(0, |&(_, v)| v)
    }
}

/// Bytes of the buffer [`Device::counters`] returns: 16384 words of 32 bits (scans and
/// compactions of one launch keep their tile states there, [`crate::scan`], [`crate::compact`]).
pub const COUNTER_BYTES: u64 = 64 << 10;

/// Bytes of each part of the counters buffer [`Device::counter_slot`] hands out in turn
/// where the backend splits it: eight parts.
pub const COUNTER_SLOT_BYTES: u64 = COUNTER_BYTES / 8;

/// Tile states the buffer [`Device::epochs`] holds: one 64-bit word each, enough for a scan of
/// 2^28 `f32` ([`crate::scan`]) or a stable compaction of 2^28 4-byte elements
/// ([`crate::compact`]).
pub const EPOCH_TILES: u64 = 1 << 16;

/// Bytes ahead of the tile states in the buffer [`Device::epochs`]: its counters (word 0 numbers
/// a launch's tiles, word 1 is the epoch, the two one 64-bit word; word 2 is the first state
/// the next launch zeroes; words 4 to 6 the workgroup counts of a gated scan's exact launch,
/// [`crate::scan::Tuning::gated`]), padded to 256 bytes.
pub const EPOCH_HEADER_BYTES: u64 = 256;

/// 32-bit words after the tile states in the buffer [`Device::epochs`], one a tile, for a
/// launch that writes each tile's word before the tile's state and reads a word only after its
/// state (so no word needs zeroing): run-length encoding's tiles ([`crate::run_length`]).
pub const EPOCH_SIDE_WORDS: u64 = 2048;

/// Bytes of the buffer [`Device::epochs`] returns.
pub const EPOCH_BYTES: u64 = EPOCH_HEADER_BYTES + 8 * EPOCH_TILES + 4 * EPOCH_SIDE_WORDS;

/// What a backend allows of a launch beyond what its [`DeviceInfo`] says, for
/// [`check_launch`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct LaunchLimits {
    /// Largest block (threads per workgroup) the backend launches on the device.
    pub max_block: u32,
    /// The subgroup size a block must be a multiple of, besides 32: the largest the device may
    /// run a kernel at.
    pub subgroup: u32,
    /// Most bindings one launch may carry.
    pub max_bindings: usize,
}

/// The one check of a launch's shape, which every backend runs before it records or queues
/// anything: the block size, the groups, the parameter block, the number of bindings, and each
/// binding's range, length and alignment. Each failure has one text whichever the backend:
/// [`Error::InvalidParameter`] naming the parameter and its allowed range, or
/// [`Error::OutOfBounds`] for a binding that leaves its buffer.
pub(crate) fn check_launch(
    info: &DeviceInfo,
    limits: &LaunchLimits,
    launch: &Launch<'_>,
) -> Result<()> {
    let sg = limits.subgroup.max(1);
    if launch.block == 0
        || !launch.block.is_multiple_of(32)
        || !launch.block.is_multiple_of(sg)
        || launch.block > limits.max_block
    {
        // The smallest block both multiples allow.
        let least = 32 / gcd(32, sg) * sg;
        return Err(Error::invalid(
            "block",
            launch.block,
            format!(
                "a multiple of 32 and of the subgroup size {sg} in {least}..={}",
                limits.max_block
            ),
        ));
    }
    for (i, (&g, &max)) in launch.groups.iter().zip(&info.max_groups).enumerate() {
        if g == 0 || g > max {
            return Err(Error::invalid(
                if i == 0 { "groups[0]" } else { "groups[1]" },
                g,
                format!("1..={max}"),
            ));
        }
    }
    if launch.params.len() > MAX_PARAMS {
        return Err(Error::invalid(
            "params",
            format!("{} bytes", launch.params.len()),
            format!("at most {MAX_PARAMS} bytes"),
        ));
    }
    if launch.bindings.is_empty() || launch.bindings.len() > limits.max_bindings {
        return Err(Error::invalid(
            "bindings",
            launch.bindings.len(),
            format!("1..={}", limits.max_bindings),
        ));
    }
    for b in launch.bindings {
        b.buffer.check_range(b.offset, b.bytes)?;
        if b.bytes == 0 || b.bytes > info.max_binding_bytes {
            return Err(Error::invalid(
                "binding.bytes",
                b.bytes,
                format!(
                    "1..={} (the device's largest binding, DeviceInfo::max_binding_bytes)",
                    info.max_binding_bytes
                ),
            ));
        }
        if b.offset % info.binding_alignment != 0 {
            return Err(Error::invalid(
                "binding.offset",
                b.offset,
                format!("a multiple of {} bytes", info.binding_alignment),
            ));
        }
    }
    Ok(())
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A compute device: memory, transfers, launches, synchronisation, timing.
pub trait Device: Send + Sync {
    /// Facts about the device.
    fn info(&self) -> &DeviceInfo;
    /// This opened device's identity.
    fn id(&self) -> DeviceId;
    /// Allocates `bytes` of device memory (contents undefined).
    fn alloc(&self, bytes: u64) -> Result<RawBuffer>;
    /// Bytes `offset .. offset + bytes` of `raw` (a buffer of this device) as a buffer of their
    /// own, usable wherever `raw` is: its byte 0 is `raw`'s byte `offset`. No copy; it keeps
    /// `raw`'s memory alive. Work on a window and on its buffer (or another window of it) is
    /// ordered as any work on the device; one operation must not take overlapping ranges as
    /// its input and its output.
    ///
    /// Errors: [`Error::OutOfBounds`] for a range that leaves `raw`;
    /// [`Error::InvalidParameter`] for `bytes` of 0 or an `offset` that is not a multiple of
    /// [`DeviceInfo::binding_alignment`]; [`Error::ForeignBuffer`] for a buffer of another
    /// device. The default, for a backend without windows: [`Error::MissingFeature`].
    fn window(&self, raw: &RawBuffer, offset: u64, bytes: u64) -> Result<RawBuffer> {
        let _ = (raw, offset, bytes);
        Err(Error::MissingFeature {
            device: self.info().name.clone(),
            missing: "windows of buffers (Device::window)".into(),
        })
    }
    /// Copies `src` into `dst` at `offset`, ordered after earlier work.
    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()>;
    /// Copies `bytes` from `src` at `src_offset` to `dst` at `dst_offset` on the device, ordered
    /// after earlier work (ranges may not overlap).
    fn copy(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()>;
    /// Copies bytes from `src` at `offset` into `dst`, after all earlier work has finished.
    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()>;
    /// Queues a kernel launch.
    fn launch(&self, launch: &Launch<'_>) -> Result<()>;
    /// Whether [`Self::launch_then_indirect`] queues launches on this device.
    fn indirect_launches(&self) -> bool {
        false
    }
    /// Queues `first`, then a launch of `then`'s kernel whose workgroup counts the GPU reads
    /// when it runs: three `u32` (x, y and 1; any of them 0 for no workgroup) at `args` (12
    /// bytes at a multiple of 4), as `first` and earlier work left them. No other work of the
    /// device comes between the two, whichever threads queue work meanwhile. `then.groups` is
    /// the most the words may ask for, checked as a launch's; words asking for more are the
    /// caller's error.
    ///
    /// The default, for a device without such launches ([`Self::indirect_launches`]):
    /// [`Error::MissingFeature`], nothing queued.
    fn launch_then_indirect(
        &self,
        first: &Launch<'_>,
        then: &Launch<'_>,
        args: Binding<'_>,
    ) -> Result<()> {
        let _ = (first, then, args);
        Err(Error::MissingFeature {
            device: self.info().name.clone(),
            missing: "launches whose workgroup counts the GPU reads".into(),
        })
    }
    /// Waits until all queued work has finished. [`Error::Recording`] inside a recording.
    fn synchronize(&self) -> Result<()>;
    /// Hands all queued work to the GPU and returns at once, with the ticket of that work:
    /// the host goes on while the GPU runs it; [`Self::wait`] or a read waits for it. With
    /// nothing queued it returns the latest ticket. Up to [`MAX_IN_FLIGHT`] submissions run
    /// at once; a submit beyond that first waits for the oldest. [`Error::Recording`] inside a
    /// recording.
    ///
    /// The default, for a device that runs work as it is queued: synchronises, and returns
    /// ticket 0, always done.
    fn submit(&self) -> Result<Ticket> {
        self.synchronize()?;
        Ok(Ticket::new(self.id(), 0))
    }
    /// Waits until the work of `ticket` (and all submitted before it) has finished. Work
    /// queued after that submit is not waited for (nor submitted).
    ///
    /// Errors: [`Error::InvalidParameter`] for a ticket of another device; the backend's
    /// error when the work failed.
    fn wait(&self, ticket: Ticket) -> Result<()> {
        ticket.check(self.id(), 0).map(|_| ())
    }
    /// Whether the work of `ticket` has finished, without waiting.
    fn is_done(&self, ticket: Ticket) -> Result<bool> {
        ticket.check(self.id(), 0).map(|_| true)
    }
    /// Records the work `work` queues on this device into a [`Recording`] instead of running
    /// it: launches, device copies and the algorithms built on them, on buffers allocated
    /// before the recording starts (the temporaries an algorithm makes inside are the
    /// recording's own). Work queued before is submitted first. A recording holds only the
    /// calling thread's work: other threads' calls on the device wait until it ends.
    ///
    /// Inside `work`, calls that need the host to wait or to hand over data fail with
    /// [`Error::Recording`] (and so fail the recording): [`Self::read`], [`Self::write`],
    /// [`Self::synchronize`], [`Self::submit`], [`Self::wait`], [`Self::time`],
    /// [`Self::record`] and [`Self::replay`]. A buffer allocated inside `work` that outlives
    /// it is [`Error::Recording`] on CUDA (its memory belongs to the graph); allocate such
    /// buffers before recording.
    ///
    /// The default, for a device that cannot record: [`Error::Recording`].
    fn record(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Recording> {
        let _ = work;
        Err(Error::Recording {
            call: "Device::record",
            device: self.info().name.clone(),
            reason: "this device does not record sequences".into(),
        })
    }
    /// Submits a recording made on this device (after the work queued before it, which goes
    /// out first) and returns its ticket without waiting. The recording reads its buffers'
    /// contents as they are when it runs: write new data between replays.
    ///
    /// Errors: [`Error::InvalidParameter`] for a recording of another device,
    /// [`Error::Recording`] inside a recording.
    fn replay(&self, recording: &Recording) -> Result<Ticket> {
        recording
            .inner::<()>(self.id())
            .map(|_| Ticket::new(self.id(), 0))
    }
    /// A buffer of [`COUNTER_BYTES`] bytes (32-bit words), allocated and zeroed when the device
    /// opens, for kernels that count their finished workgroups within one launch, and for the
    /// tile states of scans and compactions of one launch (no clearing launch). The contract:
    /// every word is zero whenever none of this device's launches runs, so a kernel that uses a
    /// word sets it back to zero before it finishes. Launches that use the same words run one
    /// after the other (CUDA's stream runs every launch after the one before; Vulkan orders
    /// launches by the buffer ranges they touch), so no two launches share a word at once.
    /// `None` where the backend keeps no such buffer; algorithms then take a path without it.
    fn counters(&self) -> Option<&RawBuffer> {
        None
    }
    /// Part of [`Self::counters`] of at least `bytes`, under the same contract, for one call's
    /// launches. A backend that runs independent launches side by side (Vulkan) hands out
    /// parts of [`COUNTER_SLOT_BYTES`] in turn, so that successive calls that fit one touch
    /// different words and need not wait for each other; a larger request gets the whole
    /// buffer. `None` where there is no counters buffer or `bytes` exceeds it.
    fn counter_slot(&self, bytes: u64) -> Option<&RawBuffer> {
        self.counters().filter(|c| bytes <= c.bytes())
    }
    /// A buffer of [`EPOCH_BYTES`] bytes, allocated and zeroed when the device opens, for the
    /// tile states of launches that tag each state with the epoch of their call, so that the
    /// states of earlier calls need no zeroing: [`EPOCH_HEADER_BYTES`] of counters, then
    /// [`EPOCH_TILES`] 64-bit states, then [`EPOCH_SIDE_WORDS`] words a launch may use beside
    /// its states (written before them, read after them). The contract: word 0 is zero whenever none of this
    /// device's launches runs; word 1 is the epoch, which each launch advances by one (modulo
    /// its wrap, [`crate::scan::Tuning::epoch_wrap`]); each launch zeroes
    /// [`crate::scan::EPOCH_SCRUB`] states from word 2 on that it does not use and moves word 2
    /// on by as many, so each state is zeroed or written again at least once in every
    /// `EPOCH_TILES / EPOCH_SCRUB` launches; each state's high 32 bits are zero or an epoch
    /// times 4 plus a flag of 1 to 3. Launches that use the buffer run one after the other, as for [`Self::counters`].
    /// `None` where the backend keeps no such buffer; algorithms then take a path without it.
    fn epochs(&self) -> Option<&RawBuffer> {
        None
    }
    /// Messages the driver's debugging layers reported (Vulkan validation messages of warning
    /// or error severity when validation is on); empty otherwise.
    fn diagnostics(&self) -> Vec<String> {
        Vec::new()
    }
    /// Runs `work` (which queues launches on this device) and returns the GPU time it took,
    /// measured by GPU timers (Vulkan timestamp queries, CUDA events). Threads may time at
    /// once (Vulkan takes their turns one after another); work that other threads queue
    /// meanwhile may count in the time.
    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration>;
    /// Runs `work` as [`Self::time`] does and returns, beside the span's total, the GPU time
    /// of each command `work` queued, in order ([`LaunchTimes`]): kernel launches, device
    /// copies, fills and writes. A command's time runs from the end of the command before it
    /// (the start of the span for the first) to its own end, so the times add up to the total
    /// and a wait between commands counts in the later one. Vulkan writes a timestamp after
    /// each command (at most [`MAX_TIMED_COMMANDS`] in one span), CUDA records an event.
    ///
    /// The default, for a device that cannot time its commands: [`Self::time`] and no
    /// commands.
    fn time_launches(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<LaunchTimes> {
        Ok(LaunchTimes {
            total: self.time(work)?,
            commands: Vec::new(),
        })
    }
    /// Fills `bytes` bytes of `dst` from byte `offset` with copies of the 32-bit `word`, on the
    /// device, ordered after earlier work (a queued command like a launch: allowed inside a
    /// recording). `offset` and `bytes` must be multiples of 4 ([`Error::InvalidParameter`]
    /// otherwise) and lie inside `dst` ([`Error::OutOfBounds`]).
    ///
    /// The default, for a device without a fill command: a [`Self::write`] of the words
    /// (refused inside a recording, as writes are).
    fn fill_words(&self, dst: &RawBuffer, offset: u64, bytes: u64, word: u32) -> Result<()> {
        check_fill(dst, offset, bytes)?;
        let words = vec![word; (bytes / 4) as usize];
        self.write(dst, offset, bytemuck::cast_slice(&words))
    }
    /// Device memory this device holds now, for leak checks; `None` where the backend does not
    /// count it.
    fn memory_usage(&self) -> Option<MemoryUsage> {
        None
    }
    /// The compiler's statistics for every kernel variant this device has compiled so far
    /// (register use, shared and local memory, spills, occupancy: what the backend's driver
    /// reports), sorted by kernel name, variant, block size and constants. Vulkan reports
    /// them where the device offers `VK_KHR_pipeline_executable_properties` (see
    /// [`crate::vulkan::VulkanDevice::captures_statistics`]), one entry per executable of each
    /// pipeline; CUDA one entry per kernel variant and block size launched. Empty where the
    /// backend or device cannot say.
    fn kernel_stats(&self) -> Vec<KernelStats> {
        Vec::new()
    }
}

/// Most commands one [`Device::time_launches`] span may time on Vulkan (its query pool holds
/// a timestamp per command and two for the span).
pub const MAX_TIMED_COMMANDS: usize = 254;

/// What [`Device::time_launches`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchTimes {
    /// GPU time of the whole span, as [`Device::time`] measures it.
    pub total: Duration,
    /// Each command of the span in order: the kernel's name for a launch, `copy`, `fill` or
    /// `write` for the others; empty where the device cannot time commands.
    pub commands: Vec<CommandTime>,
}

/// One command's share of a [`LaunchTimes`] span.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandTime {
    /// The kernel's name ([`Kernel::name`]), or `copy`, `fill`, `write`.
    pub name: String,
    /// GPU time from the end of the previous command (or the span's start) to its end.
    pub gpu: Duration,
}

/// Checks the range of a [`Device::fill_words`].
pub(crate) fn check_fill(dst: &RawBuffer, offset: u64, bytes: u64) -> Result<()> {
    if !offset.is_multiple_of(4) || !bytes.is_multiple_of(4) {
        return Err(Error::invalid(
            "fill range",
            format!("offset {offset}, {bytes} bytes"),
            "an offset and a length that are multiples of 4 bytes",
        ));
    }
    dst.check_range(offset, bytes)
}

/// What [`Device::kernel_stats`] reports for one compiled kernel variant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// The kernel variant: name, element type (Vulkan: the shader variant, which may be a bit
    /// container such as `b32`), block size and constants, e.g.
    /// `scan_device f32 block=256 OP=0 EXCLUSIVE=1 ITEMS=8 LB_TILES=1`.
    pub kernel: String,
    /// The name the Vulkan driver gives the executable (one pipeline may compile to several);
    /// empty on CUDA.
    pub executable: String,
    /// `(name, value)` of each statistic, in the order the backend reports them; values are
    /// formatted as text (integers, floats, `true`/`false`).
    pub stats: Vec<(String, String)>,
}

/// The label of a kernel variant in [`KernelStats::kernel`]: `name variant block=B K=V ...`.
pub(crate) fn kernel_label<'a>(
    name: &str,
    variant: &str,
    block: Option<u32>,
    consts: impl IntoIterator<Item = (&'a str, u32)>,
) -> String {
    let mut label = format!("{name} {variant}");
    if let Some(b) = block {
        label.push_str(&format!(" block={b}"));
    }
    for (k, v) in consts {
        label.push_str(&format!(" {k}={v}"));
    }
    label
}

/// What [`Device::memory_usage`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Live buffers: those [`Device::alloc`] made and the backend's own staging buffers.
    pub buffers: u64,
    /// Bytes those buffers hold.
    pub bytes: u64,
    /// Bytes the backend holds from the driver to carve buffers from (at least `bytes`).
    pub reserved_bytes: u64,
}

impl fmt::Display for MemoryUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} buffers, {} bytes in use, {} bytes reserved",
            self.buffers, self.bytes, self.reserved_bytes
        )
    }
}

/// A typed array in device memory.
pub struct DeviceVec<T: Element> {
    raw: RawBuffer,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Element> DeviceVec<T> {
    /// Allocates `len` elements on `dev` (contents undefined).
    pub fn alloc(dev: &dyn Device, len: usize) -> Result<Self> {
        let bytes = (len as u64)
            .checked_mul(T::KIND.size() as u64)
            .ok_or_else(|| Error::invalid("len", len, "at most u64::MAX bytes"))?;
        Ok(DeviceVec {
            // An empty vector still holds one element, so kernels can always bind it.
            raw: dev.alloc(bytes.max(T::KIND.size() as u64))?,
            len,
            _t: PhantomData,
        })
    }

    /// A typed view of the first `len` elements of `raw`: memory [`Device::alloc`] made, or
    /// an application's buffer wrapped without ownership (`VulkanDevice::wrap_buffer`,
    /// `CudaDevice::wrap_device_ptr`). Fails with [`Error::OutOfBounds`] when `len` elements
    /// do not fit in `raw`.
    pub fn from_raw(raw: RawBuffer, len: usize) -> Result<Self> {
        let size = T::KIND.size() as u64;
        let bytes = (len as u64).checked_mul(size);
        match bytes {
            Some(b) if b <= raw.bytes() => Ok(DeviceVec {
                raw,
                len,
                _t: PhantomData,
            }),
            _ => Err(Error::OutOfBounds {
                offset: 0,
                end: bytes.unwrap_or(u64::MAX),
                size: raw.bytes(),
            }),
        }
    }

    /// Allocates and fills from a host slice.
    pub fn from_slice(dev: &dyn Device, data: &[T]) -> Result<Self> {
        let v = Self::alloc(dev, data.len())?;
        if !data.is_empty() {
            dev.write(&v.raw, 0, bytemuck::cast_slice(data))?;
        }
        Ok(v)
    }

    /// Fills every element with `value` (used to poison outputs before a run), ordered after
    /// earlier work. A value whose bytes repeat every 4 bytes (any 32-bit value; a 64-bit one
    /// whose halves are equal) is filled on the device ([`Device::fill_words`]), any other by a
    /// write of `len` copies from the host.
    pub fn fill(&mut self, dev: &dyn Device, value: T) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let bytes: &[u8] = bytemuck::bytes_of(&value);
        let word = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if bytes.chunks(4).all(|c| c == &bytes[..4]) {
            dev.fill_words(
                &self.raw,
                0,
                (self.len * std::mem::size_of::<T>()) as u64,
                word,
            )
        } else {
            dev.write(&self.raw, 0, bytemuck::cast_slice(&vec![value; self.len]))
        }
    }

    /// Copies the contents back to the host, waiting for queued work.
    pub fn to_vec(&self, dev: &dyn Device) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        if self.len > 0 {
            dev.read(&self.raw, 0, bytemuck::cast_slice_mut(&mut out))?;
        }
        Ok(out)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The untyped buffer.
    pub fn raw(&self) -> &RawBuffer {
        &self.raw
    }

    /// A binding of elements `start..start + count`.
    pub fn binding(&self, start: usize, count: usize) -> Binding<'_> {
        let size = T::KIND.size() as u64;
        Binding {
            buffer: &self.raw,
            offset: start as u64 * size,
            bytes: count.max(1) as u64 * size,
        }
    }
}

impl<T: Element> fmt::Debug for DeviceVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceVec<{}>[{}] ({:?})", T::KIND, self.len, self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_labels_name_variant_block_and_constants() {
        assert_eq!(
            kernel_label(
                "scan_device",
                "f32",
                Some(256),
                [("OP", 0), ("EXCLUSIVE", 1)]
            ),
            "scan_device f32 block=256 OP=0 EXCLUSIVE=1"
        );
        assert_eq!(kernel_label("copy", "u32", None, []), "copy u32");
    }

    /// A device as the launch check sees it: `max_binding_bytes` and `binding_alignment` as
    /// given, the rest fixed.
    fn launch_info(max_binding_bytes: u64, binding_alignment: u64) -> DeviceInfo {
        DeviceInfo {
            backend: BackendKind::Vulkan,
            index: 0,
            name: "test".into(),
            vendor_id: 0,
            device_type: DeviceType::Other,
            driver: String::new(),
            subgroup_size: 32,
            min_subgroup_size: 32,
            max_subgroup_size: 32,
            subgroup_size_pinned: true,
            subgroup_features: SubgroupFeatures::default(),
            max_binding_bytes,
            binding_alignment,
            max_groups: [65535; 3],
            shared_memory_bytes: 49152,
            max_shared_memory_bytes: 49152,
            unit_shared_memory_bytes: 0,
            compute_units: 0,
            max_block: 1024,
            int64: true,
            float64: true,
            int64_atomics: true,
            workgroup_coherence: false,
            subnormals_f32: Subnormals::Guaranteed,
            subnormals_f64: Subnormals::Guaranteed,
        }
    }

    /// `r` as (parameter, value, allowed) when it is an invalid parameter.
    fn invalid(r: Result<()>) -> (&'static str, String, String) {
        match r {
            Err(Error::InvalidParameter {
                name,
                value,
                allowed,
            }) => (name, value, allowed),
            other => panic!("expected InvalidParameter, got {other:?}"),
        }
    }

    /// Every failure of the launch check has one variant and one text, whichever limits a
    /// backend passes; only the numbers in them are the device's.
    #[test]
    fn the_launch_check_names_each_failure_once() {
        let buffer = RawBuffer::new(Arc::new(()), 256, DeviceId::fresh(), "test");
        let kernel = Kernel {
            name: "shfl",
            elem: ElemKind::U32,
            consts: &[],
        };
        let whole = [Binding {
            buffer: &buffer,
            offset: 0,
            bytes: 256,
        }];
        let ok = Launch {
            kernel,
            block: 256,
            groups: [1, 1],
            bindings: &whole,
            params: &[0; 16],
        };
        let vulkan = (
            launch_info(1 << 27, 64),
            LaunchLimits {
                max_block: 1024,
                subgroup: 64,
                max_bindings: 8,
            },
        );
        let cuda = (
            launch_info(u64::MAX, 16),
            LaunchLimits {
                max_block: 1024,
                subgroup: 32,
                max_bindings: 496,
            },
        );
        for (info, limits) in [&vulkan, &cuda] {
            let check = |l: &Launch<'_>| check_launch(info, limits, l);
            check(&ok).unwrap();
            let least = limits.subgroup.max(32);
            for block in [0, 48, 100, 4096, least / 2] {
                assert_eq!(
                    invalid(check(&Launch { block, ..ok })),
                    (
                        "block",
                        block.to_string(),
                        format!(
                            "a multiple of 32 and of the subgroup size {} in {least}..=1024",
                            limits.subgroup
                        )
                    )
                );
            }
            for (groups, name, value) in
                [([0, 1], "groups[0]", 0), ([1, 65536], "groups[1]", 65536)]
            {
                assert_eq!(
                    invalid(check(&Launch { groups, ..ok })),
                    (name, value.to_string(), "1..=65535".to_string())
                );
            }
            assert_eq!(
                invalid(check(&Launch {
                    params: &[0; MAX_PARAMS + 1],
                    ..ok
                })),
                (
                    "params",
                    format!("{} bytes", MAX_PARAMS + 1),
                    format!("at most {MAX_PARAMS} bytes")
                )
            );
            let many = vec![whole[0]; limits.max_bindings + 1];
            for bindings in [&[][..], &many[..]] {
                assert_eq!(
                    invalid(check(&Launch { bindings, ..ok })),
                    (
                        "bindings",
                        bindings.len().to_string(),
                        format!("1..={}", limits.max_bindings)
                    )
                );
            }
            let past = [Binding {
                offset: 128,
                bytes: 256,
                ..whole[0]
            }];
            assert!(matches!(
                check(&Launch {
                    bindings: &past,
                    ..ok
                }),
                Err(Error::OutOfBounds {
                    offset: 128,
                    end: 384,
                    size: 256
                })
            ));
            let empty = [Binding {
                bytes: 0,
                ..whole[0]
            }];
            let (name, value, allowed) = invalid(check(&Launch {
                bindings: &empty,
                ..ok
            }));
            assert_eq!((name, value.as_str()), ("binding.bytes", "0"));
            assert!(allowed.starts_with(&format!("1..={} ", info.max_binding_bytes)));
            let misaligned = [Binding {
                offset: 8,
                bytes: 8,
                ..whole[0]
            }];
            assert_eq!(
                invalid(check(&Launch {
                    bindings: &misaligned,
                    ..ok
                })),
                (
                    "binding.offset",
                    "8".to_string(),
                    format!("a multiple of {} bytes", info.binding_alignment)
                )
            );
        }
        // Past the device's largest binding (a range inside the buffer).
        let (info, limits) = &vulkan;
        let small = launch_info(128, 64);
        let (name, value, _) = invalid(check_launch(&small, limits, &ok));
        assert_eq!((name, value.as_str()), ("binding.bytes", "256"));
        check_launch(info, limits, &ok).unwrap();
    }
}
