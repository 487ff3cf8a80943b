//! The Vulkan backend: ash for the API, gpu-allocator for memory, SPIR-V built from
//! `shaders/` at compile time.
//!
//! Work is recorded into one command buffer and submitted when the caller synchronises, reads,
//! or times. A recorded command that reads what an earlier one wrote, or writes what an
//! earlier one read or wrote (overlapping bytes of one buffer, since the last barrier), gets a
//! compute/transfer memory barrier before it, so launches see the writes of the launches
//! before them; a command independent of everything since the last barrier gets none and may
//! run beside them (NVIDIA: 0.14-0.19 µs a dispatch against 1.6-1.7 behind a barrier). What a
//! kernel writes is read from its SPIR-V: a binding declared `readonly` is only read.
//! Buffers used by recorded work are kept alive until that work has finished. The thread that
//! submits waits for the work by polling its fence for up to 200 µs, then blocks in
//! `vkWaitForFences`. A blocked thread is woken some time after the fence signals (23–24 µs on
//! an H100), which would be most of a short call; on CPU devices (llvmpipe) it blocks at once.
//!
//! Where the device offers `subgroupSizeControl` and `computeFullSubgroups` (Vulkan 1.3 or
//! `VK_EXT_subgroup_size_control`), every pipeline is pinned to the device's default subgroup
//! size with full subgroups, so kernels see the subgroup size [`DeviceInfo::subgroup_size`]
//! reports.
//!
//! Every kernel's SPIR-V asks for the `DenormPreserve` execution mode of each float width it
//! uses where the driver offers `shaderDenormPreserveFloat32/64` (Vulkan 1.2 or
//! `VK_KHR_shader_float_controls`), so subnormals are kept as the CPU reference and CUDA keep
//! them. Other drivers choose for themselves: the self-test at open measures what they do, and
//! where a driver flushes a width's subnormals the float kernels of that width run their exact
//! variant (`f32_exact`, `f64_exact`: SPIR-V built from `shaders/float_ops.glsl`'s exact
//! arithmetic, chosen at open): sums and products whose operands or result may be subnormal
//! are computed exactly from the operands' bits, min, max and comparisons order the bits, and
//! results stay bit-identical to the CPU reference and CUDA ([`Subnormals::Emulated`]). The
//! self-test checks the variant on the device before it is used. [`SubnormalMode`] (or
//! `XWARP_SUBNORMALS`) overrides the choice.
//!
//! When it opens, a device runs a self-test (`shaders/selftest.comp`): one workgroup records,
//! per invocation, the subgroup size, ids and counts the driver reports and what ballots and
//! shuffles return, and the host checks every record against the driver's claims. A device
//! whose subgroups are not what its driver claims is refused ([`Error::SelfTestFailed`]); the
//! outcome is cached per device and driver for the life of the process
//! ([`VulkanDevice::self_test`]).
//!
//! Where the device offers `VK_KHR_pipeline_executable_properties` with `pipelineExecutableInfo`,
//! both are enabled and every pipeline is created capturing the compiler's statistics, which
//! [`Device::kernel_stats`] reports per pipeline and executable (what they are is the driver's
//! choice: instruction counts, registers, spills, ...).
//!
//! # Using an application's Vulkan device
//!
//! [`VulkanDevice::from_external`] opens the backend on an instance, device and queue the
//! application created ([`ExternalVulkan`]); [`VulkanDevice::wrap_buffer`] and
//! [`VulkanDevice::wrap_vec`] make byte ranges of the application's own `vk::Buffer`s usable
//! wherever a [`DeviceVec`] is, with no copy and no ownership taken.
//! `examples/app_vulkan_device.rs` shows the whole sequence.
//! An application whose device is wgpu's goes through `xwarp::vulkan::wgpu` (Cargo feature
//! `wgpu`), which creates or checks the wgpu device, wraps wgpu buffers and keeps wgpu's
//! submissions and xwarp's in order.
//!
//! **Ownership.** On the application's device xwarp creates only its own command pool and
//! command buffer, a fence, a timestamp query pool, descriptor pools and layouts, shader
//! modules, pipelines, and a gpu-allocator `Allocator` for the memory it allocates itself
//! ([`Device::alloc`], temporaries, staging). It destroys exactly those: the instance, the
//! device, the queue and wrapped buffers are never destroyed, and `vkDeviceWaitIdle` is never
//! called on a device xwarp did not create.
//!
//! **What the device must have enabled** — [`VulkanDevice::requirements`] lists it for a
//! physical device, and `from_external` checks it ([`Error::NotEnabled`] names what is missing):
//! - Vulkan 1.1 or newer (instance `apiVersion` and device) with subgroup operations in compute
//!   shaders, and a queue family with compute;
//! - `subgroupSizeControl` and `computeFullSubgroups` wherever the device supports them
//!   (Vulkan 1.3 core; before 1.3 through `VK_EXT_subgroup_size_control`, which must then be
//!   enabled too): xwarp's kernels rely on full subgroups of the size it reports;
//! - `VK_KHR_portability_subset` where the device offers it (the specification requires it);
//! - optional: `shaderInt64`, `shaderFloat64`; without them 64-bit kernels are refused with
//!   [`Error::MissingFeature`];
//! - optional, before Vulkan 1.2 only: `VK_KHR_shader_float_controls`, with which kernels ask
//!   the driver to keep subnormals where it offers `shaderDenormPreserveFloat32/64` (core in
//!   1.2, nothing to enable there); without it the self-test measures what the driver does
//!   ([`DeviceInfo::subnormals_f32`]);
//! - optional: `VK_KHR_pipeline_executable_properties` with `pipelineExecutableInfo` (see
//!   [`VulkanFeatures::pipeline_executable_info`]); without them [`Device::kernel_stats`]
//!   reports nothing.
//!
//! Nothing else: no buffer device address, no timeline semaphores, no descriptor indexing.
//!
//! **Sharing the queue.** Vulkan requires `vkQueueSubmit` and `vkQueueWaitIdle` on one queue to
//! be externally synchronised. xwarp uses the queue inside [`Device::synchronize`],
//! [`Device::read`] (so `DeviceVec::to_vec` and every `*_host` helper), [`Device::time`] and
//! when the [`VulkanDevice`] drops. The application must not use the queue concurrently with
//! those calls — or it passes [`ExternalVulkan::queue_lock`], holds that lock around each of its
//! own uses of the queue, and xwarp holds it around each of its submits and waits.
//!
//! **Synchronisation contract.**
//! - xwarp records uploads, copies and launches, and submits them to the queue at the next
//!   synchronize, read or time call (or drop), then waits on its own fence: when that call
//!   returns, all of xwarp's work so far has finished. Algorithm calls (`reduce::device_reduce`,
//!   ...) return once their work is recorded.
//! - Before: each command buffer xwarp submits begins with a memory barrier from all commands'
//!   writes to its own compute and transfer accesses, so application work submitted to the same
//!   queue *before* that submit — and host writes to mapped memory made before it — are
//!   complete and visible to xwarp. Work on other queues must have finished (the application
//!   waits on its fence) before the synchronize, read or time call.
//! - After: each submit ends with a memory barrier from xwarp's writes to all later commands
//!   and to host reads, so application work submitted to the queue *after* the call returns,
//!   and host reads of mapped memory, see xwarp's results.
//! - xwarp signals nothing the application can wait on (no semaphore, no shared fence): the
//!   returning call is the signal. Work the application submits between an algorithm call and
//!   the next synchronize runs *before* xwarp's recorded work.
//! - Wrapped buffers must stay alive until that synchronize has returned; the contract of
//!   [`VulkanDevice::wrap_buffer`] lists the rest (usage flags, alignment, queue family
//!   ownership).

#[cfg(doc)]
use crate::device::DeviceVec;
use crate::device::{
    Binding, Device, DeviceId, DeviceInfo, KernelStats, Launch, LaunchTimes, MemoryUsage,
    RawBuffer, Recording, Subnormals, Ticket, COUNTER_BYTES, COUNTER_SLOT_BYTES, EPOCH_BYTES,
};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use ash::vk;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod external;
mod instance;
mod memory;
mod pipeline;
mod probe;
mod selftest;
mod spirv;
mod stream;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use external::{ExternalBuffer, ExternalVulkan, VulkanFeatures, VulkanRequirements};
pub use probe::{list_devices, VulkanOptions};
pub use selftest::SelfTestReport;

/// The environment variable that chooses [`SubnormalMode`] for every Vulkan device opened
/// without [`VulkanOptions::subnormals`] (applications' devices included): `auto` (the
/// default), `native`, `emulate` or `flush`.
pub const SUBNORMALS_ENV: &str = "XWARP_SUBNORMALS";

/// How a Vulkan device's float kernels treat subnormals, chosen when it opens: the result is
/// [`DeviceInfo::subnormals_f32`] and [`DeviceInfo::subnormals_f64`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SubnormalMode {
    /// Kept: by the driver where the self-test measures that it keeps them, else by the
    /// kernels ([`Subnormals::Emulated`]).
    #[default]
    Auto,
    /// The driver's arithmetic, whatever it does with subnormals: for comparisons, and to
    /// measure what emulation costs on a driver that flushes.
    Native,
    /// Kept by the kernels on every device, even where the driver keeps them: to test the
    /// emulation, and to measure its cost anywhere.
    Emulate,
    /// Flushed to zero in the kernels, operands and results, as a flushing driver does
    /// ([`Subnormals::Flushed`]): for tests that show what the emulation changes.
    Flush,
}

impl SubnormalMode {
    /// The mode [`SUBNORMALS_ENV`] asks for; [`SubnormalMode::Auto`] when it is unset or empty.
    ///
    /// Errors: [`Error::InvalidParameter`] naming the variable for any other value.
    pub fn from_env() -> Result<Self> {
        match std::env::var(SUBNORMALS_ENV) {
            Ok(v) if !v.is_empty() => v.parse().map_err(|_| {
                Error::invalid(SUBNORMALS_ENV, v, "one of: auto, native, emulate, flush")
            }),
            _ => Ok(SubnormalMode::Auto),
        }
    }

    /// The word `from_env` and `FromStr` read.
    pub fn name(self) -> &'static str {
        match self {
            SubnormalMode::Auto => "auto",
            SubnormalMode::Native => "native",
            SubnormalMode::Emulate => "emulate",
            SubnormalMode::Flush => "flush",
        }
    }

    /// What the float kernels of a width compute with, given whether the driver kept that
    /// width's subnormals in the self-test.
    fn arith(self, driver_keeps: bool) -> FloatArith {
        match self {
            SubnormalMode::Auto if driver_keeps => FloatArith::Native,
            SubnormalMode::Auto | SubnormalMode::Emulate => FloatArith::Exact,
            SubnormalMode::Native => FloatArith::Native,
            SubnormalMode::Flush => FloatArith::Flush,
        }
    }
}

impl std::str::FromStr for SubnormalMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        [
            SubnormalMode::Auto,
            SubnormalMode::Native,
            SubnormalMode::Emulate,
            SubnormalMode::Flush,
        ]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(s.trim()))
        .ok_or_else(|| Error::invalid("subnormals", s, "one of: auto, native, emulate, flush"))
    }
}

impl std::fmt::Display for SubnormalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the float kernels of a width compute with: their SPIR-V variant
/// (`shaders/float_ops.glsl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FloatArith {
    /// The element type's own variant: the driver's arithmetic.
    Native,
    /// `_exact`: subnormal operands and results computed exactly in the kernel.
    Exact,
    /// `_flush`: operands and results flushed to zero in the kernel.
    Flush,
}

/// What a Vulkan driver offers for keeping subnormals, as [`VulkanDevice::float_controls`]
/// reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FloatControls {
    /// `shaderDenormPreserveFloat32`: kernels may ask to keep `f32` subnormals (and do).
    pub denorm_preserve_f32: bool,
    /// `shaderDenormPreserveFloat64` (and `shaderFloat64`): likewise for `f64`.
    pub denorm_preserve_f64: bool,
    /// `denormBehaviorIndependence`, in words.
    pub independence: String,
}

use instance::{lifecycle, lock};
use memory::Core;
use pipeline::{Layout, PipelineKey};
use probe::{Denorms, Probe};
use stream::Stream;

/// A shader module's kernel name and variant.
type ModuleKey = (&'static str, &'static str);

/// A Vulkan compute device.
pub struct VulkanDevice {
    core: Arc<Core>,
    id: DeviceId,
    info: DeviceInfo,
    queue: Mutex<vk::Queue>,
    queue_family: u32,
    size_control: bool,
    max_block: u32,
    max_workgroup_subgroups: u32,
    timestamp_period: f64,
    timestamp_mask: u64,
    query_pool: vk::QueryPool,
    /// Held for the whole of [`Device::time`]: timers share the queries of `query_pool`.
    timer: Mutex<()>,
    stream: Mutex<Stream>,
    /// Signalled when a recording ends ([`Device::record`]), for the threads waiting for it.
    stream_turn: std::sync::Condvar,
    layouts: Mutex<HashMap<u32, Layout>>,
    /// Shader modules, each with how it uses its bindings (what the stream's barriers follow)
    /// and the bytes of push constants it declares.
    modules: Mutex<HashMap<ModuleKey, (vk::ShaderModule, spirv::BindingUse, u32)>>,
    /// Pipelines by variant, with their layouts and their module's two facts.
    pipelines: Mutex<HashMap<PipelineKey, pipeline::Pipeline>>,
    /// The pipelines of the launches seen so far, by what the launch names (the same
    /// pipelines as `pipelines`, which owns them).
    launches: Mutex<pipeline::KnownLaunches>,
    /// `VK_KHR_pipeline_executable_properties`, where enabled: pipelines capture the
    /// compiler's statistics, which [`Device::kernel_stats`] reads through it.
    /// Queries reset from the host (`hostQueryReset` enabled at creation).
    host_query_reset: bool,
    /// Pipelines created without bounds checks on buffers (`pipelineRobustness` enabled at
    /// creation; see `probe::Probe::pipeline_robustness`).
    no_robustness: bool,
    executable_properties: Option<ash::khr::pipeline_executable_properties::Device>,
    /// Whether the device, instance and queue are an application's ([`Self::from_external`]).
    external: bool,
    /// The application's lock around its uses of the queue, if it gave one.
    queue_lock: Option<Arc<Mutex<()>>>,
    /// [`Device::counters`]: set once the device is constructed.
    counters: Option<RawBuffer>,
    /// [`Device::counter_slot`]: windows of `counters` of [`COUNTER_SLOT_BYTES`] each, and
    /// the number of parts handed out so far (the next is that modulo their count).
    counter_slots: Vec<RawBuffer>,
    next_slot: std::sync::atomic::AtomicUsize,
    /// [`Device::epochs`]: set once the device is constructed.
    epochs: Option<RawBuffer>,
    /// Which float widths' subnormals kernels may ask the driver to keep.
    denorms: Denorms,
    /// What the float kernels of `f32` and `f64` compute with (their SPIR-V variant): native
    /// while the self-test measures the driver, then as [`SubnormalMode`] decides.
    float_arith: [FloatArith; 2],
    /// What the self-test at open found: set once the device is constructed.
    self_test: Option<SelfTestReport>,
}

impl VulkanDevice {
    /// Creates xwarp's own objects on `core`'s device: command pool and buffer, fence, query
    /// pool. `queue` belongs to family `family.0`, whose timestamps have `family.1` valid bits.
    /// `external` marks an application's device, `queue_lock` its lock around the queue;
    /// `subnormals` says how the float kernels treat subnormals.
    fn attach(
        core: Arc<Core>,
        queue: vk::Queue,
        family: (u32, u32),
        p: &Probe,
        (external, queue_lock): (bool, Option<Arc<Mutex<()>>>),
        subnormals: SubnormalMode,
    ) -> Result<Self> {
        let d = &core.device;
        // Freed by its drop on the error paths below.
        let staging = stream::Staging::new(&core)?;
        let frame = stream::new_frame(d, family.0)?;
        // SAFETY: a valid create info on a live device; destroyed in Drop (or here on failure).
        let qp = unsafe {
            d.create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(2 + crate::device::MAX_TIMED_COMMANDS as u32),
                None,
            )
        };
        let query_pool = match qp {
            Ok(q) => q,
            Err(e) => {
                let mut frame = frame;
                // SAFETY: the frame was never used.
                unsafe { stream::destroy_frame(d, &mut frame) };
                return Err(Error::vk("vkCreateQueryPool")(e));
            }
        };
        let mut info = p.info.clone();
        if !p.size_control {
            info.subgroup_size_pinned = false;
        }
        let mut this = VulkanDevice {
            core: core.clone(),
            id: DeviceId::fresh(),
            info,
            queue: Mutex::new(queue),
            queue_family: family.0,
            size_control: p.size_control,
            max_block: p.max_block,
            max_workgroup_subgroups: p.max_workgroup_subgroups,
            timestamp_period: p.timestamp_period as f64,
            timestamp_mask: if family.1 >= 64 {
                u64::MAX
            } else {
                (1u64 << family.1) - 1
            },
            query_pool,
            timer: Mutex::new(()),
            stream: Mutex::new(Stream::new(frame, staging)),
            stream_turn: std::sync::Condvar::new(),
            layouts: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            launches: Mutex::new(Default::default()),
            host_query_reset: p.host_query_reset,
            no_robustness: p.pipeline_robustness,
            executable_properties: p.executable_stats.then(|| {
                ash::khr::pipeline_executable_properties::Device::new(
                    &core._instance.instance,
                    &core.device,
                )
            }),
            external,
            queue_lock,
            counters: None,
            counter_slots: Vec::new(),
            next_slot: std::sync::atomic::AtomicUsize::new(0),
            epochs: None,
            denorms: p.denorms,
            float_arith: [FloatArith::Native; 2],
            self_test: None,
        };
        // Zeroed by a recorded fill, which goes out with the first submit: opening submits
        // nothing and stages nothing.
        let counters = this.alloc(COUNTER_BYTES)?;
        this.record_zero(&counters)?;
        this.counter_slots = (0..COUNTER_BYTES / COUNTER_SLOT_BYTES)
            .map(|k| this.window_of(&counters, k * COUNTER_SLOT_BYTES, COUNTER_SLOT_BYTES))
            .collect::<Result<_>>()?;
        this.counters = Some(counters);
        let epochs = this.alloc(EPOCH_BYTES)?;
        this.record_zero(&epochs)?;
        this.epochs = Some(epochs);
        this.run_self_test(p, subnormals)?;
        Ok(this)
    }

    /// Runs the self-test (or takes its cached outcome), chooses what the float kernels compute
    /// with as `subnormals` asks, and records it. A device that fails the test is refused: the
    /// error drops `self`, which cleans up.
    fn run_self_test(&mut self, p: &Probe, subnormals: SubnormalMode) -> Result<()> {
        let key = selftest::Key {
            vendor_id: p.info.vendor_id,
            device_id: p.device_id,
            driver_version: p.driver_version,
            uuid: p.uuid,
            name: p.info.name.clone(),
            subgroup_size: self.info.subgroup_size,
            pinned: self.info.subgroup_size_pinned,
            float64: self.info.float64,
        };
        // The kernels' common block, and the largest block any kernel launches (the ladder's
        // 1024) where the device allows it.
        let sg = self.info.subgroup_size.max(1);
        let mut blocks = vec![crate::plan::BLOCK];
        let largest = self.max_block.min(1024) / (32 * sg) * (32 * sg);
        if largest > crate::plan::BLOCK {
            blocks.push(largest);
        }
        let report = selftest::run(self, key.clone(), &blocks)?;
        self.info.subnormals_f32 = self.choose_arith(
            &key,
            ElemKind::F32,
            subnormals,
            (self.denorms.f32, report.subnormals_f32_kept),
        )?;
        self.info.subnormals_f64 = match report.subnormals_f64_kept {
            Some(kept) => {
                self.choose_arith(&key, ElemKind::F64, subnormals, (self.denorms.f64, kept))?
            }
            None => Subnormals::Unsupported,
        };
        self.self_test = Some(report);
        Ok(())
    }

    /// Sets what the float kernels of `elem` compute with, as `mode` asks given what the driver
    /// offers and did in the self-test (`(guaranteed, kept)`), and says what that makes of
    /// subnormals. The exact variant is used only once the self-test's arithmetic gave the
    /// IEEE results with it on this device; where it did not, the driver's arithmetic stays.
    fn choose_arith(
        &mut self,
        key: &selftest::Key,
        elem: ElemKind,
        mode: SubnormalMode,
        (guaranteed, kept): (bool, bool),
    ) -> Result<Subnormals> {
        let slot = usize::from(elem == ElemKind::F64);
        let native = match (guaranteed, kept) {
            (true, true) => Subnormals::Guaranteed,
            (false, true) => Subnormals::Observed,
            _ => Subnormals::Flushed,
        };
        let arith = mode.arith(kept);
        self.set_float_arith(slot, arith);
        Ok(match arith {
            FloatArith::Native => native,
            FloatArith::Flush => Subnormals::Flushed,
            FloatArith::Exact => {
                if selftest::emulation_holds(self, key, elem)? {
                    Subnormals::Emulated
                } else {
                    self.set_float_arith(slot, FloatArith::Native);
                    native
                }
            }
        })
    }

    /// Sets what the float kernels of one width compute with; the launches seen so far
    /// choose their variant again.
    fn set_float_arith(&mut self, slot: usize, arith: FloatArith) {
        self.float_arith[slot] = arith;
        lock(&self.launches).clear();
    }

    /// The SPIR-V variant the float kernels of `elem` run on this device where it is not the
    /// element type's own (the driver's arithmetic): `f32_exact`, `f64_flush`, ...
    fn float_variant(&self, elem: ElemKind) -> Option<&'static str> {
        match (elem, self.float_arith[usize::from(elem == ElemKind::F64)]) {
            (ElemKind::F32, FloatArith::Exact) => Some("f32_exact"),
            (ElemKind::F32, FloatArith::Flush) => Some("f32_flush"),
            (ElemKind::F64, FloatArith::Exact) => Some("f64_exact"),
            (ElemKind::F64, FloatArith::Flush) => Some("f64_flush"),
            _ => None,
        }
    }

    /// Whether work is recorded that the next synchronize, read or time would submit.
    #[cfg(feature = "wgpu")]
    fn has_recorded_work(&self) -> bool {
        lock(&self.stream).recording
    }

    /// What the driver offers for keeping subnormals (`VkPhysicalDeviceFloatControlsProperties`),
    /// which decides whether kernels ask for it (see [`DeviceInfo::subnormals_f32`]).
    pub fn float_controls(&self) -> FloatControls {
        FloatControls {
            denorm_preserve_f32: self.denorms.f32,
            denorm_preserve_f64: self.denorms.f64,
            independence: format!("{:?}", self.denorms.independence),
        }
    }

    /// What the self-test found when this device opened (or, when an earlier open of the same
    /// device and driver in this process ran it, what that one found; then
    /// [`SelfTestReport::cached`] is set).
    pub fn self_test(&self) -> &SelfTestReport {
        self.self_test
            .as_ref()
            .expect("set by the constructor before the device is handed out")
    }
}

impl Device for VulkanDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn id(&self) -> DeviceId {
        self.id
    }

    fn alloc(&self, bytes: u64) -> Result<RawBuffer> {
        self.alloc_buffer(bytes)
    }

    fn window(&self, raw: &RawBuffer, offset: u64, bytes: u64) -> Result<RawBuffer> {
        self.window_of(raw, offset, bytes)
    }

    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        self.upload(dst, offset, src)
    }

    fn copy(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        self.copy_on_device(src, src_offset, dst, dst_offset, bytes)
    }

    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.download(src, offset, dst)
    }

    fn launch(&self, launch: &Launch<'_>) -> Result<()> {
        self.record_launch(launch)
    }

    fn indirect_launches(&self) -> bool {
        true
    }

    fn launch_then_indirect(
        &self,
        first: &Launch<'_>,
        then: &Launch<'_>,
        args: Binding<'_>,
    ) -> Result<()> {
        self.record_launch_then_indirect(first, then, args)
    }

    fn synchronize(&self) -> Result<()> {
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::synchronize")?;
        self.flush(&mut s)
    }

    fn submit(&self) -> Result<Ticket> {
        self.submit_work()
    }

    fn wait(&self, ticket: Ticket) -> Result<()> {
        self.wait_ticket(ticket)
    }

    fn is_done(&self, ticket: Ticket) -> Result<bool> {
        self.ticket_done(ticket)
    }

    fn record(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Recording> {
        self.record_work(work)
    }

    fn replay(&self, recording: &Recording) -> Result<Ticket> {
        self.replay_recording(recording)
    }

    fn counters(&self) -> Option<&RawBuffer> {
        self.counters.as_ref()
    }

    fn epochs(&self) -> Option<&RawBuffer> {
        self.epochs.as_ref()
    }

    fn counter_slot(&self, bytes: u64) -> Option<&RawBuffer> {
        if bytes <= COUNTER_SLOT_BYTES && !self.counter_slots.is_empty() {
            let k = self
                .next_slot
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return self.counter_slots.get(k % self.counter_slots.len());
        }
        self.counters().filter(|c| bytes <= c.bytes())
    }

    fn diagnostics(&self) -> Vec<String> {
        self.validation_messages()
    }

    fn kernel_stats(&self) -> Vec<KernelStats> {
        self.kernel_statistics()
    }

    fn memory_usage(&self) -> Option<MemoryUsage> {
        self.allocator_usage()
    }

    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        self.time_work(work)
    }

    fn time_launches(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<LaunchTimes> {
        self.time_commands(work)
    }

    fn fill_words(&self, dst: &RawBuffer, offset: u64, bytes: u64, word: u32) -> Result<()> {
        self.record_fill(dst, offset, bytes, word)
    }
}

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        let mut s = lock(&self.stream);
        self.destroy_stream(&mut s);
        let _guard = lifecycle();
        let d = &self.core.device;
        // SAFETY: xwarp's work has finished (the flush above waited on its fence; an owned
        // device is also waited idle, an application's is not); every object below was created
        // here and is destroyed once, in reverse order of creation. Buffers still held by the
        // caller keep `core` (device and allocator) alive until they drop.
        unsafe {
            if !self.external {
                let _ = d.device_wait_idle();
            }
            lock(&self.launches).clear();
            for (_, p) in lock(&self.pipelines).drain() {
                d.destroy_pipeline(p.pipeline, None);
            }
            for (_, (m, _, _)) in lock(&self.modules).drain() {
                d.destroy_shader_module(m, None);
            }
            for (_, l) in lock(&self.layouts).drain() {
                d.destroy_pipeline_layout(l.pipeline, None);
                d.destroy_descriptor_set_layout(l.set, None);
            }
            d.destroy_query_pool(self.query_pool, None);
        }
    }
}
