//! The Vulkan backend: ash for the API, gpu-allocator for memory, SPIR-V built from
//! `shaders/` at compile time.
//!
//! Work is recorded into one command buffer and submitted when the caller synchronises, reads,
//! or times; every recorded command is separated from the previous one by a full
//! compute/transfer memory barrier, so launches see the writes of the launches before them.
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
//! them. Other drivers choose for themselves: the self-test at open measures what they do.
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

use crate::backend::DeviceSelector;
use crate::device::{
    kernel_label, BackendKind, Device, DeviceId, DeviceInfo, DeviceType, DeviceVec, KernelStats,
    Launch, MemoryUsage, RawBuffer, SubgroupFeatures, Subnormals, COUNTER_BYTES, MAX_PARAMS,
};
use crate::element::Element;
use crate::error::{Error, Result};
use ash::vk;
use gpu_allocator::vulkan::{
    Allocation, AllocationCreateDesc, AllocationScheme, Allocator, AllocatorCreateDesc,
};
use gpu_allocator::MemoryLocation;
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

mod selftest;
mod spirv;

pub use selftest::SelfTestReport;

include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";
/// Must be enabled on devices that offer it (the specification's rule for non-conformant
/// implementations such as MoltenVK).
const PORTABILITY_SUBSET: &CStr = c"VK_KHR_portability_subset";
/// How long a submit may run before the backend gives up with `VK_TIMEOUT` instead of hanging.
const FENCE_TIMEOUT_NS: u64 = 600_000_000_000;
/// How long a submit's waiter polls its fence before it blocks in `vkWaitForFences`. A blocked
/// waiter is woken by the driver some time after the fence signals; polling sees it at once,
/// which is most of a short call's host time (NOTES.md, version 7). Longer work blocks after
/// this, so a long wait costs no more than this much of a core. A CPU device (llvmpipe) runs
/// the work on the host's cores, so its waiter blocks at once rather than take one from it.
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(200);
/// Descriptor sets per pool; pools are added as needed and reset after each submit.
const SETS_PER_POOL: u32 = 256;
const MAX_BINDINGS: u32 = 8;

/// How to open the Vulkan backend.
#[derive(Clone, Debug, Default)]
pub struct VulkanOptions {
    /// Which device; `None` picks the best (discrete > integrated > virtual > CPU).
    pub device: Option<DeviceSelector>,
    /// Enable `VK_LAYER_KHRONOS_validation` (with synchronization validation) when installed.
    /// Messages of warning or error severity are collected: see
    /// [`VulkanDevice::validation_messages`]. The environment variable `XWARP_VALIDATION=1`
    /// turns it on as well.
    pub validation: bool,
}

/// Opening and closing instances and devices, enumerating them, and allocating and freeing
/// memory run one at a time in the process. NVIDIA's 580 driver was seen to deadlock (a thread
/// opening and closing devices spinning inside the driver, a thread working on another device
/// blocked on one of the driver's mutexes) when threads did these concurrently. They are rare
/// operations, so serialising them costs nothing that matters; submits and waits stay
/// concurrent.
static LIFECYCLE: Mutex<()> = Mutex::new(());

thread_local! {
    static LIFECYCLE_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Holds [`LIFECYCLE`]; reentrant, so that error paths inside a held section may drop objects
/// whose destructors take it again.
struct LifecycleGuard(#[allow(dead_code)] Option<MutexGuard<'static, ()>>);

impl Drop for LifecycleGuard {
    fn drop(&mut self) {
        LIFECYCLE_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

fn lifecycle() -> LifecycleGuard {
    let depth = LIFECYCLE_DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    LifecycleGuard((depth == 0).then(|| lock(&LIFECYCLE)))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave Vulkan state half-changed in a way
    // later calls depend on, so a poisoned lock is used as it is.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

const NO_DRIVER: &str = "no Vulkan driver (ICD) found; install one (Debian: apt-get install \
                         mesa-vulkan-drivers for llvmpipe, or the GPU vendor's driver)";

fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: BackendKind::Vulkan,
        reason: reason.into(),
    }
}

/// Instance-level state shared by everything made from it; dropped last.
struct Instance {
    entry: ash::Entry,
    instance: ash::Instance,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    /// Boxed so its address stays fixed: the messenger callback writes through it.
    messages: Box<Mutex<Vec<String>>>,
    /// False for an application's instance, which xwarp never destroys.
    owned: bool,
    /// Whether the layer runs synchronization validation too.
    sync_validation: bool,
}

impl Instance {
    fn new(validation: bool) -> Result<Self> {
        let _guard = lifecycle();
        // SAFETY: loads the system's Vulkan loader; `entry` is stored beside every object made
        // through it and dropped after them.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            unavailable(format!(
                "the Vulkan loader (libvulkan.so.1) could not be loaded ({e}); install it \
                 (Debian: apt-get install libvulkan1) and a driver (mesa-vulkan-drivers for \
                 the CPU driver llvmpipe)"
            ))
        })?;
        // SAFETY: plain queries on a loaded entry.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(Error::vk("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_1 {
            return Err(unavailable(format!(
                "the Vulkan loader offers API {}.{}, subgroup operations need 1.1",
                vk::api_version_major(version),
                vk::api_version_minor(version)
            )));
        }
        let api = version.min(vk::API_VERSION_1_3);
        // SAFETY: plain queries on a loaded entry.
        let (layers, exts) = unsafe {
            (
                entry
                    .enumerate_instance_layer_properties()
                    .unwrap_or_default(),
                entry
                    .enumerate_instance_extension_properties(None)
                    .unwrap_or_default(),
            )
        };
        let has_ext = |name: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
        let validation = validation
            && layers
                .iter()
                .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));
        let mut ext_names = Vec::new();
        let mut flags = vk::InstanceCreateFlags::empty();
        if has_ext(ash::khr::portability_enumeration::NAME) {
            ext_names.push(ash::khr::portability_enumeration::NAME.as_ptr());
            flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
        }
        let mut layer_names = Vec::new();
        let mut sync_validation = false;
        if validation {
            layer_names.push(VALIDATION_LAYER.as_ptr());
            ext_names.push(ash::ext::debug_utils::NAME.as_ptr());
            // SAFETY: plain query on a loaded entry.
            let layer_exts =
                unsafe { entry.enumerate_instance_extension_properties(Some(VALIDATION_LAYER)) }
                    .unwrap_or_default();
            sync_validation = layer_exts
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::validation_features::NAME));
            if sync_validation {
                ext_names.push(ash::ext::validation_features::NAME.as_ptr());
            }
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"xwarp")
            .engine_name(c"xwarp")
            .api_version(api);
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let mut features =
            vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&ext_names)
            .flags(flags);
        if sync_validation {
            info = info.push_next(&mut features);
        }
        // SAFETY: `info` and everything it points to live until the call returns.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(|e| match e {
            // What the loader answers when it finds no driver at all.
            vk::Result::ERROR_INCOMPATIBLE_DRIVER => unavailable(format!("{NO_DRIVER} ({e})")),
            e => Error::vk("vkCreateInstance")(e),
        })?;
        let mut this = Instance {
            entry,
            instance,
            debug: None,
            messages: Box::new(Mutex::new(Vec::new())),
            owned: true,
            sync_validation,
        };
        if validation {
            let loader = ash::ext::debug_utils::Instance::new(&this.entry, &this.instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                        | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(on_validation_message))
                .user_data(&*this.messages as *const Mutex<Vec<String>> as *mut c_void);
            // SAFETY: the user data points into `this.messages`, a Box that lives until the
            // messenger is destroyed in `Drop`.
            let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) };
            this.debug = Some((
                loader,
                messenger.map_err(Error::vk("vkCreateDebugUtilsMessengerEXT"))?,
            ));
        }
        Ok(this)
    }

    fn physical_devices(&self) -> Result<Vec<vk::PhysicalDevice>> {
        let _guard = lifecycle();
        // SAFETY: the instance is alive.
        let devices = unsafe { self.instance.enumerate_physical_devices() }
            .map_err(Error::vk("vkEnumeratePhysicalDevices"))?;
        if devices.is_empty() {
            return Err(unavailable(NO_DRIVER));
        }
        Ok(devices)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let _guard = lifecycle();
        // SAFETY: every object made from the instance was destroyed before (they hold Arcs
        // to it); the messenger goes before the instance it belongs to.
        unsafe {
            if let Some((loader, messenger)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

unsafe extern "system" fn on_validation_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data for the duration of the call, and `user`
    // is the `Mutex<Vec<String>>` registered with the messenger, alive while it exists.
    unsafe {
        let text = if data.is_null() {
            "(no message)".to_string()
        } else {
            (*data)
                .message_as_c_str()
                .map(|m| m.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let sink = &*(user as *const Mutex<Vec<String>>);
        lock(sink).push(format!("{severity:?}: {text}"));
    }
    vk::FALSE
}

/// Facts read from one physical device, and what the backend enables on it.
struct Probe {
    info: DeviceInfo,
    api: u32,
    size_control: bool,
    size_control_ext: bool,
    portability_subset: bool,
    int64: bool,
    float64: bool,
    /// `shaderBufferInt64Atomics` (with `shaderInt64`; Vulkan 1.2 devices).
    atomic64: bool,
    /// `VK_KHR_pipeline_executable_properties` with `pipelineExecutableInfo`: pipelines are
    /// created capturing the compiler's statistics, for [`Device::kernel_stats`].
    executable_stats: bool,
    max_block: u32,
    max_workgroup_subgroups: u32,
    timestamp_period: f32,
    /// Float controls: which widths' subnormals the driver keeps where a kernel asks.
    denorms: Denorms,
    /// `VK_KHR_shader_float_controls` must be enabled (before Vulkan 1.2) for `denorms`.
    float_controls_ext: bool,
    /// For the self-test's cache: what identifies the device and its driver.
    device_id: u32,
    driver_version: u32,
    uuid: [u8; 16],
}

/// What a device's float controls allow xwarp to ask of subnormals
/// (`VkPhysicalDeviceFloatControlsProperties`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Denorms {
    /// `shaderDenormPreserveFloat32`.
    f32: bool,
    /// `shaderDenormPreserveFloat64`.
    f64: bool,
    /// `denormBehaviorIndependence`.
    independence: vk::ShaderFloatControlsIndependence,
}

impl Denorms {
    fn preserves(self, width: u32) -> bool {
        match width {
            32 => self.f32,
            64 => self.f64,
            _ => false,
        }
    }

    /// The widths of a module's float types (`used`) for which it may ask to keep subnormals.
    /// Where the driver ties the widths' denormal modes together, a module asks for all of them
    /// or none (`VUID-RuntimeSpirv-denormBehaviorIndependence-06289/06290`).
    fn widths(self, used: &[u32]) -> Vec<u32> {
        use vk::ShaderFloatControlsIndependence as I;
        let supported = |w: &u32| self.preserves(*w);
        match self.independence {
            I::ALL => used.iter().copied().filter(supported).collect(),
            // 32 bits stand alone; 16 and 64 share one mode.
            I::TYPE_32_ONLY => {
                let tied: Vec<u32> = used.iter().copied().filter(|&w| w != 32).collect();
                let mut out: Vec<u32> = used
                    .iter()
                    .copied()
                    .filter(|&w| w == 32 && self.f32)
                    .collect();
                if tied.iter().all(supported) {
                    out.extend(tied);
                }
                out.sort_unstable();
                out
            }
            _ if used.iter().all(supported) => used.to_vec(),
            _ => Vec::new(),
        }
    }
}

fn probe(i: &ash::Instance, pd: vk::PhysicalDevice, index: usize) -> Probe {
    let _guard = lifecycle();
    // SAFETY: `pd` was enumerated from this live instance; the chained structs outlive the
    // calls, and only structs of the device's API version or extensions are chained.
    unsafe {
        let props = i.get_physical_device_properties(pd);
        let exts = i
            .enumerate_device_extension_properties(pd)
            .unwrap_or_default();
        let has_ext = |name: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
        let api = props.api_version;
        let size_control_ext =
            api < vk::API_VERSION_1_3 && has_ext(ash::ext::subgroup_size_control::NAME);
        let size_control_known = api >= vk::API_VERSION_1_3 || size_control_ext;

        let mut sub = vk::PhysicalDeviceSubgroupProperties::default();
        let mut ssc = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut float_controls = vk::PhysicalDeviceFloatControlsProperties::default();
        let float_controls_ext =
            api < vk::API_VERSION_1_2 && has_ext(ash::khr::shader_float_controls::NAME);
        let float_controls_known = api >= vk::API_VERSION_1_2 || float_controls_ext;
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sub);
        if size_control_known {
            p2 = p2.push_next(&mut ssc);
        }
        if api >= vk::API_VERSION_1_2 {
            p2 = p2.push_next(&mut driver);
        }
        if float_controls_known {
            p2 = p2.push_next(&mut float_controls);
        }
        i.get_physical_device_properties2(pd, &mut p2);

        let mut sscf = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
        let mut pexf = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut a64f = vk::PhysicalDeviceShaderAtomicInt64Features::default();
        let executable_ext = has_ext(ash::khr::pipeline_executable_properties::NAME);
        let mut f2 = vk::PhysicalDeviceFeatures2::default();
        if size_control_known {
            f2 = f2.push_next(&mut sscf);
        }
        if api >= vk::API_VERSION_1_2 {
            f2 = f2.push_next(&mut a64f);
        }
        if executable_ext {
            f2 = f2.push_next(&mut pexf);
        }
        i.get_physical_device_features2(pd, &mut f2);
        let features = f2.features;
        let atomic64 = features.shader_int64 == vk::TRUE
            && a64f.shader_buffer_int64_atomics == vk::TRUE
            && api >= vk::API_VERSION_1_2;

        let compute = sub.supported_stages.contains(vk::ShaderStageFlags::COMPUTE);
        let ops = sub.supported_operations;
        let mut sg = SubgroupFeatures::default();
        if compute {
            for (flag, ours) in [
                (vk::SubgroupFeatureFlags::BASIC, SubgroupFeatures::BASIC),
                (vk::SubgroupFeatureFlags::VOTE, SubgroupFeatures::VOTE),
                (
                    vk::SubgroupFeatureFlags::ARITHMETIC,
                    SubgroupFeatures::ARITHMETIC,
                ),
                (vk::SubgroupFeatureFlags::BALLOT, SubgroupFeatures::BALLOT),
                (vk::SubgroupFeatureFlags::SHUFFLE, SubgroupFeatures::SHUFFLE),
                (
                    vk::SubgroupFeatureFlags::SHUFFLE_RELATIVE,
                    SubgroupFeatures::SHUFFLE_RELATIVE,
                ),
                (
                    vk::SubgroupFeatureFlags::CLUSTERED,
                    SubgroupFeatures::CLUSTERED,
                ),
                (vk::SubgroupFeatureFlags::QUAD, SubgroupFeatures::QUAD),
            ] {
                if ops.contains(flag) {
                    sg = sg | ours;
                }
            }
        }
        let size_control = size_control_known
            && sscf.subgroup_size_control == vk::TRUE
            && sscf.compute_full_subgroups == vk::TRUE
            && ssc
                .required_subgroup_size_stages
                .contains(vk::ShaderStageFlags::COMPUTE);
        let (min_sg, max_sg) = if size_control_known && ssc.min_subgroup_size > 0 {
            (ssc.min_subgroup_size, ssc.max_subgroup_size)
        } else {
            (sub.subgroup_size, sub.subgroup_size)
        };
        let device_type = match props.device_type {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceType::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceType::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceType::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceType::Cpu,
            _ => DeviceType::Other,
        };
        let driver_name = driver
            .driver_info_as_c_str()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let limits = props.limits;
        Probe {
            info: DeviceInfo {
                backend: BackendKind::Vulkan,
                index,
                name: props
                    .device_name_as_c_str()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                vendor_id: props.vendor_id,
                device_type,
                driver: format!(
                    "Vulkan {}.{}.{}{}",
                    vk::api_version_major(api),
                    vk::api_version_minor(api),
                    vk::api_version_patch(api),
                    if driver_name.is_empty() {
                        String::new()
                    } else {
                        format!(", driver {driver_name}")
                    }
                ),
                subgroup_size: sub.subgroup_size,
                min_subgroup_size: min_sg,
                max_subgroup_size: max_sg,
                subgroup_size_pinned: size_control,
                subgroup_features: sg,
                max_binding_bytes: limits.max_storage_buffer_range as u64,
                binding_alignment: limits.min_storage_buffer_offset_alignment.max(4),
                max_groups: limits.max_compute_work_group_count,
                shared_memory_bytes: limits.max_compute_shared_memory_size,
                int64: features.shader_int64 == vk::TRUE,
                float64: features.shader_float64 == vk::TRUE,
                int64_atomics: atomic64,
                // Until the self-test at open has measured them.
                subnormals_f32: Subnormals::Observed,
                subnormals_f64: if features.shader_float64 == vk::TRUE {
                    Subnormals::Observed
                } else {
                    Subnormals::Unsupported
                },
            },
            api,
            size_control,
            size_control_ext,
            portability_subset: has_ext(PORTABILITY_SUBSET),
            int64: features.shader_int64 == vk::TRUE,
            float64: features.shader_float64 == vk::TRUE,
            atomic64,
            executable_stats: executable_ext && pexf.pipeline_executable_info == vk::TRUE,
            max_block: limits.max_compute_work_group_size[0]
                .min(limits.max_compute_work_group_invocations),
            max_workgroup_subgroups: ssc.max_compute_workgroup_subgroups,
            timestamp_period: limits.timestamp_period,
            denorms: if float_controls_known {
                Denorms {
                    f32: float_controls.shader_denorm_preserve_float32 == vk::TRUE,
                    f64: float_controls.shader_denorm_preserve_float64 == vk::TRUE
                        && features.shader_float64 == vk::TRUE,
                    independence: float_controls.denorm_behavior_independence,
                }
            } else {
                Denorms::default()
            },
            float_controls_ext,
            device_id: props.device_id,
            driver_version: props.driver_version,
            uuid: props.pipeline_cache_uuid,
        }
    }
}

fn rank(t: DeviceType) -> u32 {
    match t {
        DeviceType::Discrete => 0,
        DeviceType::Integrated => 1,
        DeviceType::Virtual => 2,
        DeviceType::Cpu => 3,
        DeviceType::Other => 4,
    }
}

/// The compute queue family xwarp prefers on `pd` (one with timestamps, then one without
/// graphics), as `(index, timestampValidBits)`.
fn compute_family(i: &ash::Instance, pd: vk::PhysicalDevice) -> Option<(u32, u32)> {
    // SAFETY: `pd` belongs to the live instance `i`.
    let families = unsafe { i.get_physical_device_queue_family_properties(pd) };
    families
        .iter()
        .enumerate()
        .filter(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .max_by_key(|(_, f)| {
            (
                f.timestamp_valid_bits > 0,
                !f.queue_flags.contains(vk::QueueFlags::GRAPHICS),
            )
        })
        .map(|(idx, f)| (idx as u32, f.timestamp_valid_bits))
}

/// Every Vulkan device on this machine, in the driver's order (indices are what
/// [`DeviceSelector::Index`] selects).
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    let _guard = lifecycle();
    let inst = Instance::new(false)?;
    Ok(inst
        .physical_devices()?
        .into_iter()
        .enumerate()
        .map(|(i, pd)| probe(&inst.instance, pd, i).info)
        .collect())
}

/// Logical-device state that buffers need to free themselves; dropped after every buffer.
struct Core {
    device: ash::Device,
    allocator: ManuallyDrop<Mutex<Allocator>>,
    name: String,
    /// False for an application's device: xwarp frees its own memory on it, nothing else.
    owned: bool,
    _instance: Arc<Instance>,
}

impl Core {
    /// Wraps `device` with an allocator for xwarp's own memory. On failure an owned device is
    /// destroyed (nothing else was created on it yet).
    fn new(
        inst: &Arc<Instance>,
        device: ash::Device,
        pd: vk::PhysicalDevice,
        name: &str,
        owned: bool,
    ) -> Result<Arc<Self>> {
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: inst.instance.clone(),
            device: device.clone(),
            physical_device: pd,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        });
        match allocator {
            Ok(a) => Ok(Arc::new(Core {
                device,
                allocator: ManuallyDrop::new(Mutex::new(a)),
                name: name.to_string(),
                owned,
                _instance: inst.clone(),
            })),
            Err(e) => {
                if owned {
                    // SAFETY: nothing was created on the device yet.
                    unsafe { device.destroy_device(None) };
                }
                Err(Error::OutOfMemory {
                    bytes: 0,
                    device: name.to_string(),
                    reason: format!("creating the allocator: {e}"),
                })
            }
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        let _guard = lifecycle();
        // SAFETY: all buffers (which hold Arcs to the core) and all other device objects are
        // gone, and the work that used them has finished (buffers are kept alive by recorded
        // work until its fence signals); the allocator frees its memory blocks before an owned
        // device is destroyed. An application's device is neither waited on (vkDeviceWaitIdle
        // needs every queue externally synchronised) nor destroyed.
        unsafe {
            if self.owned {
                let _ = self.device.device_wait_idle();
            }
            ManuallyDrop::drop(&mut self.allocator);
            if self.owned {
                self.device.destroy_device(None);
            }
        }
    }
}

/// A buffer with its memory; frees both on drop.
struct VkBuffer {
    core: Arc<Core>,
    buffer: vk::Buffer,
    allocation: Mutex<Option<Allocation>>,
}

impl VkBuffer {
    fn new(core: &Arc<Core>, bytes: u64, location: MemoryLocation, name: &str) -> Result<Self> {
        let _guard = lifecycle();
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let oom = |reason: String| Error::OutOfMemory {
            bytes,
            device: core.name.clone(),
            reason,
        };
        // SAFETY: valid create info on a live device.
        let buffer =
            unsafe { core.device.create_buffer(&info, None) }.map_err(|e| oom(e.to_string()))?;
        // SAFETY: `buffer` was just created on this device.
        let requirements = unsafe { core.device.get_buffer_memory_requirements(buffer) };
        let allocation = lock(&core.allocator).allocate(&AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        });
        let allocation = match allocation {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the buffer has no memory bound and is used nowhere.
                unsafe { core.device.destroy_buffer(buffer, None) };
                return Err(oom(e.to_string()));
            }
        };
        // SAFETY: the allocation satisfies the buffer's requirements and is bound once.
        let bound = unsafe {
            core.device
                .bind_buffer_memory(buffer, allocation.memory(), allocation.offset())
        };
        let this = VkBuffer {
            core: core.clone(),
            buffer,
            allocation: Mutex::new(Some(allocation)),
        };
        bound.map_err(Error::vk("vkBindBufferMemory"))?;
        Ok(this)
    }

    /// The mapped bytes of a host-visible buffer.
    fn with_mapped<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let mut guard = lock(&self.allocation);
        let slice = guard
            .as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .ok_or(Error::Vulkan {
                call: "map staging memory",
                result: vk::Result::ERROR_MEMORY_MAP_FAILED,
            })?;
        Ok(f(slice))
    }
}

impl Drop for VkBuffer {
    fn drop(&mut self) {
        let _guard = lifecycle();
        if let Some(a) = lock(&self.allocation).take() {
            let _ = lock(&self.core.allocator).free(a);
        }
        // SAFETY: work that used the buffer has finished: recorded work holds a clone of the
        // buffer's Arc until its fence has signalled.
        unsafe { self.core.device.destroy_buffer(self.buffer, None) };
    }
}

/// The command buffer being recorded and what it keeps alive.
struct Stream {
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    recording: bool,
    commands: u32,
    keep: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    staging: Vec<VkBuffer>,
    desc_pools: Vec<vk::DescriptorPool>,
    desc_pool_current: usize,
}

#[derive(Hash, PartialEq, Eq, Clone)]
struct PipelineKey {
    name: &'static str,
    variant: &'static str,
    block: u32,
    consts: Vec<(&'static str, u32)>,
}

struct Layout {
    set: vk::DescriptorSetLayout,
    pipeline: vk::PipelineLayout,
}

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
    /// Held for the whole of [`Device::time`]: timers share the two queries of `query_pool`.
    timer: Mutex<()>,
    stream: Mutex<Stream>,
    layouts: Mutex<HashMap<u32, Layout>>,
    modules: Mutex<HashMap<(&'static str, &'static str), vk::ShaderModule>>,
    pipelines: Mutex<HashMap<PipelineKey, vk::Pipeline>>,
    /// `VK_KHR_pipeline_executable_properties`, where enabled: pipelines capture the
    /// compiler's statistics, which [`Device::kernel_stats`] reads through it.
    executable_properties: Option<ash::khr::pipeline_executable_properties::Device>,
    /// Whether the device, instance and queue are an application's ([`Self::from_external`]).
    external: bool,
    /// The application's lock around its uses of the queue, if it gave one.
    queue_lock: Option<Arc<Mutex<()>>>,
    /// [`Device::counters`]: set once the device is constructed.
    counters: Option<RawBuffer>,
    /// Which float widths' subnormals kernels may ask the driver to keep.
    denorms: Denorms,
    /// What the self-test at open found: set once the device is constructed.
    self_test: Option<SelfTestReport>,
}

impl VulkanDevice {
    /// Opens a device: the one `opts.device` selects, else the best one.
    pub fn new(opts: &VulkanOptions) -> Result<Self> {
        let _guard = lifecycle();
        let validation = opts.validation
            || std::env::var("XWARP_VALIDATION").is_ok_and(|v| v == "1" || v == "true");
        let inst = Arc::new(Instance::new(validation)?);
        let pds = inst.physical_devices()?;
        let probes: Vec<Probe> = pds
            .iter()
            .enumerate()
            .map(|(i, &pd)| probe(&inst.instance, pd, i))
            .collect();
        let usable = |p: &Probe| {
            p.api >= vk::API_VERSION_1_1
                && p.info.subgroup_features.contains(SubgroupFeatures::BASIC)
        };
        let chosen = match &opts.device {
            Some(sel) => probes
                .iter()
                .find(|p| sel.matches(p.info.index, &p.info.name)),
            None => probes
                .iter()
                .filter(|p| usable(p))
                .min_by_key(|p| (rank(p.info.device_type), p.info.index)),
        };
        let Some(p) = chosen else {
            let available = probes
                .iter()
                .map(|p| format!("{}: {}", p.info.index, p.info.name))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(match &opts.device {
                Some(sel) => Error::NoSuchDevice {
                    backend: BackendKind::Vulkan,
                    selector: sel.to_string(),
                    available,
                },
                None => unavailable(format!(
                    "no device supports Vulkan 1.1 subgroup operations in compute shaders ({available})"
                )),
            });
        };
        if !usable(p) {
            return Err(Error::MissingFeature {
                device: p.info.name.clone(),
                missing: "Vulkan 1.1 with basic subgroup operations in compute shaders".into(),
            });
        }
        Self::open(inst.clone(), pds[p.info.index], p)
    }

    fn open(inst: Arc<Instance>, pd: vk::PhysicalDevice, p: &Probe) -> Result<Self> {
        let i = &inst.instance;
        let family = compute_family(i, pd).ok_or_else(|| Error::MissingFeature {
            device: p.info.name.clone(),
            missing: "a queue family with compute support".into(),
        })?;
        let priorities = [1.0f32];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family.0)
            .queue_priorities(&priorities)];
        let mut ext_names = Vec::new();
        if p.size_control_ext && p.size_control {
            ext_names.push(ash::ext::subgroup_size_control::NAME.as_ptr());
        }
        if p.portability_subset {
            ext_names.push(PORTABILITY_SUBSET.as_ptr());
        }
        if p.executable_stats {
            ext_names.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
        }
        if p.float_controls_ext && p.denorms != Denorms::default() {
            ext_names.push(ash::khr::shader_float_controls::NAME.as_ptr());
        }
        let features = vk::PhysicalDeviceFeatures::default()
            .shader_int64(p.int64)
            .shader_float64(p.float64);
        let mut sscf = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
            .subgroup_size_control(true)
            .compute_full_subgroups(true);
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_info)
            .enabled_extension_names(&ext_names)
            .enabled_features(&features);
        let mut pexf = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
            .pipeline_executable_info(true);
        if p.size_control {
            info = info.push_next(&mut sscf);
        }
        if p.executable_stats {
            info = info.push_next(&mut pexf);
        }
        let mut a64f = vk::PhysicalDeviceShaderAtomicInt64Features::default()
            .shader_buffer_int64_atomics(true);
        if p.atomic64 {
            info = info.push_next(&mut a64f);
        }
        // SAFETY: the create info and its chain live until the call returns; only features
        // and extensions the probe found supported are enabled.
        let device =
            unsafe { i.create_device(pd, &info, None) }.map_err(Error::vk("vkCreateDevice"))?;
        let core = Core::new(&inst, device, pd, &p.info.name, true)?;
        // SAFETY: the queue family and index were requested at device creation.
        let queue = unsafe { core.device.get_device_queue(family.0, 0) };
        Self::attach(core, queue, family, p, false, None)
    }

    /// Creates xwarp's own objects on `core`'s device: command pool and buffer, fence, query
    /// pool. `queue` belongs to family `family.0`, whose timestamps have `family.1` valid bits.
    /// `external` marks an application's device, `queue_lock` its lock around the queue.
    fn attach(
        core: Arc<Core>,
        queue: vk::Queue,
        family: (u32, u32),
        p: &Probe,
        external: bool,
        queue_lock: Option<Arc<Mutex<()>>>,
    ) -> Result<Self> {
        let d = &core.device;
        // From here on, objects are owned by `Self` or by `core`, whose Drop destroys them.
        // SAFETY: valid create infos on a live device; each object is destroyed in Drop.
        let (pool, fence, query_pool) = unsafe {
            let pool = d
                .create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(family.0)
                        .flags(vk::CommandPoolCreateFlags::TRANSIENT),
                    None,
                )
                .map_err(Error::vk("vkCreateCommandPool"))?;
            let fence = d
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .map_err(Error::vk("vkCreateFence"));
            let fence = match fence {
                Ok(f) => f,
                Err(e) => {
                    d.destroy_command_pool(pool, None);
                    return Err(e);
                }
            };
            let qp = d
                .create_query_pool(
                    &vk::QueryPoolCreateInfo::default()
                        .query_type(vk::QueryType::TIMESTAMP)
                        .query_count(2),
                    None,
                )
                .map_err(Error::vk("vkCreateQueryPool"));
            let qp = match qp {
                Ok(q) => q,
                Err(e) => {
                    d.destroy_fence(fence, None);
                    d.destroy_command_pool(pool, None);
                    return Err(e);
                }
            };
            (pool, fence, qp)
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
            stream: Mutex::new(Stream {
                pool,
                cmd: vk::CommandBuffer::null(),
                fence,
                recording: false,
                commands: 0,
                keep: Vec::new(),
                staging: Vec::new(),
                desc_pools: Vec::new(),
                desc_pool_current: 0,
            }),
            layouts: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
            pipelines: Mutex::new(HashMap::new()),
            executable_properties: p.executable_stats.then(|| {
                ash::khr::pipeline_executable_properties::Device::new(
                    &core._instance.instance,
                    &core.device,
                )
            }),
            external,
            queue_lock,
            counters: None,
            denorms: p.denorms,
            self_test: None,
        };
        // Allocated once `this` exists, so that its Drop cleans up if this fails.
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is alive and owned by this device.
        let cmds = unsafe { this.core.device.allocate_command_buffers(&alloc) }
            .map_err(Error::vk("vkAllocateCommandBuffers"))?;
        lock(&this.stream).cmd = cmds[0];
        // Zeroed by a recorded fill, which goes out with the first submit: opening submits
        // nothing and stages nothing.
        let counters = this.alloc(COUNTER_BYTES)?;
        this.record_zero(&counters)?;
        this.counters = Some(counters);
        this.run_self_test(p)?;
        Ok(this)
    }

    /// Runs the self-test (or takes its cached outcome) and records what it found about
    /// subnormals. A device that fails it is refused: the error drops `self`, which cleans up.
    fn run_self_test(&mut self, p: &Probe) -> Result<()> {
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
        let report = selftest::run(self, key, &blocks)?;
        let judged = |guaranteed: bool, kept: bool| match (guaranteed, kept) {
            (true, true) => Subnormals::Guaranteed,
            (false, true) => Subnormals::Observed,
            _ => Subnormals::Flushed,
        };
        self.info.subnormals_f32 = judged(self.denorms.f32, report.subnormals_f32_kept);
        self.info.subnormals_f64 = match report.subnormals_f64_kept {
            Some(kept) => judged(self.denorms.f64, kept),
            None => Subnormals::Unsupported,
        };
        self.self_test = Some(report);
        Ok(())
    }

    /// What the self-test found when this device opened (or, when an earlier open of the same
    /// device and driver in this process ran it, what that one found; then
    /// [`SelfTestReport::cached`] is set).
    pub fn self_test(&self) -> &SelfTestReport {
        self.self_test
            .as_ref()
            .expect("set by the constructor before the device is handed out")
    }

    /// Validation messages (warning and error severity) collected since the device was
    /// opened; empty when validation is off.
    pub fn validation_messages(&self) -> Vec<String> {
        lock(&self.core._instance.messages).clone()
    }

    /// Whether the validation layer is active on this device.
    pub fn validation_enabled(&self) -> bool {
        self.core._instance.debug.is_some()
    }

    /// Whether the validation layer checks synchronization too (through
    /// `VK_EXT_validation_features`).
    pub fn sync_validation_enabled(&self) -> bool {
        self.validation_enabled() && self.core._instance.sync_validation
    }

    /// The queue family index work is submitted to.
    pub fn queue_family(&self) -> u32 {
        self.queue_family
    }

    /// Records zeroing all of `buffer`, one of this device's own (submitted with the next work
    /// that is waited for).
    fn record_zero(&self, buffer: &RawBuffer) -> Result<()> {
        let target = self.target(buffer)?;
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        // SAFETY: recording command buffer of this device; the buffer is one of its own
        // (created with TRANSFER_DST), the range is all of it (a multiple of 4 bytes from its
        // start), and the stream keeps it alive until the submit finishes.
        unsafe {
            self.core
                .device
                .cmd_fill_buffer(s.cmd, target.buffer, target.base, buffer.bytes(), 0)
        };
        s.keep.push(buffer.keep_alive());
        Ok(())
    }

    /// Starts recording if needed, and separates the next command from earlier ones.
    fn begin(&self, s: &mut Stream) -> Result<()> {
        let d = &self.core.device;
        if !s.recording {
            // SAFETY: the command buffer is not in use: every submit waits for its fence.
            unsafe {
                d.begin_command_buffer(
                    s.cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
            }
            .map_err(Error::vk("vkBeginCommandBuffer"))?;
            s.recording = true;
            s.commands = 0;
            if self.external {
                // The application's earlier work on this queue (submission order) may have
                // written the buffers xwarp is about to use, or still read ones it writes.
                let barrier = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
                    .dst_access_mask(
                        vk::AccessFlags::SHADER_READ
                            | vk::AccessFlags::SHADER_WRITE
                            | vk::AccessFlags::TRANSFER_READ
                            | vk::AccessFlags::TRANSFER_WRITE,
                    );
                // SAFETY: recording command buffer of this device.
                unsafe {
                    d.cmd_pipeline_barrier(
                        s.cmd,
                        vk::PipelineStageFlags::ALL_COMMANDS,
                        vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                        vk::DependencyFlags::empty(),
                        &[barrier],
                        &[],
                        &[],
                    )
                };
            }
        }
        if s.commands > 0 {
            let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(
                    vk::AccessFlags::SHADER_READ
                        | vk::AccessFlags::SHADER_WRITE
                        | vk::AccessFlags::TRANSFER_READ
                        | vk::AccessFlags::TRANSFER_WRITE,
                );
            // SAFETY: recording command buffer of this device.
            unsafe {
                d.cmd_pipeline_barrier(
                    s.cmd,
                    stages,
                    stages,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                )
            };
        }
        s.commands += 1;
        Ok(())
    }

    /// Submits what was recorded and waits for it; releases what it kept alive.
    fn flush(&self, s: &mut Stream) -> Result<()> {
        if !s.recording {
            return Ok(());
        }
        let d = &self.core.device;
        s.recording = false;
        if self.external {
            // The application's later work on this queue, and its host reads after this call
            // returns, see what xwarp wrote.
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(
                    vk::AccessFlags::MEMORY_READ
                        | vk::AccessFlags::MEMORY_WRITE
                        | vk::AccessFlags::HOST_READ,
                );
            // SAFETY: recording command buffer of this device.
            unsafe {
                d.cmd_pipeline_barrier(
                    s.cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                )
            };
        }
        // SAFETY: the command buffer was recorded on this device; the fence is unsignalled
        // (reset after each wait) and the queue is externally synchronised by its mutex (and
        // by the application's lock, or its promise not to use the queue meanwhile).
        let result = unsafe {
            d.end_command_buffer(s.cmd)
                .map_err(Error::vk("vkEndCommandBuffer"))
                .and_then(|_| {
                    let cmds = [s.cmd];
                    let submit = vk::SubmitInfo::default().command_buffers(&cmds);
                    let queue = lock(&self.queue);
                    let _app = self.queue_lock.as_deref().map(lock);
                    d.queue_submit(*queue, &[submit], s.fence)
                        .map_err(Error::vk("vkQueueSubmit"))
                })
                .and_then(|_| {
                    let waited = self.wait(s.fence);
                    let reset = d
                        .reset_fences(&[s.fence])
                        .map_err(Error::vk("vkResetFences"));
                    waited.and(reset)
                })
        };
        if matches!(
            result,
            Err(Error::Vulkan {
                result: vk::Result::TIMEOUT,
                ..
            })
        ) {
            // The GPU still uses what this submit references: wait for it rather than free
            // memory under it. On an application's device only the queue is waited on:
            // vkDeviceWaitIdle would need all of its queues externally synchronised.
            // SAFETY: waiting is always allowed; the queue is synchronised as for the submit.
            unsafe {
                if self.external {
                    let queue = lock(&self.queue);
                    let _app = self.queue_lock.as_deref().map(lock);
                    let _ = d.queue_wait_idle(*queue);
                } else {
                    let _ = d.device_wait_idle();
                }
                let _ = d.reset_fences(&[s.fence]);
            }
        }
        // SAFETY: the submit finished (or never started): the pools' objects are unused.
        unsafe {
            let _ = d.reset_command_pool(s.pool, vk::CommandPoolResetFlags::empty());
            for &p in &s.desc_pools {
                let _ = d.reset_descriptor_pool(p, vk::DescriptorPoolResetFlags::empty());
            }
        }
        s.desc_pool_current = 0;
        s.keep.clear();
        s.staging.clear();
        result
    }

    /// Waits for `fence`: polls it for up to [`SPIN_WAIT`] (not on a CPU device), then blocks.
    fn wait(&self, fence: vk::Fence) -> Result<()> {
        let d = &self.core.device;
        if self.info.device_type != DeviceType::Cpu {
            let start = std::time::Instant::now();
            loop {
                // SAFETY: the fence belongs to this device and was submitted.
                match unsafe { d.get_fence_status(fence) } {
                    Ok(true) => return Ok(()),
                    Ok(false) if start.elapsed() < SPIN_WAIT => std::hint::spin_loop(),
                    Ok(false) => break,
                    Err(e) => return Err(Error::vk("vkGetFenceStatus")(e)),
                }
            }
        }
        // SAFETY: as above.
        unsafe { d.wait_for_fences(&[fence], true, FENCE_TIMEOUT_NS) }
            .map_err(Error::vk("vkWaitForFences"))
    }

    fn layout(&self, bindings: u32) -> Result<(vk::DescriptorSetLayout, vk::PipelineLayout)> {
        let mut layouts = lock(&self.layouts);
        if let Some(l) = layouts.get(&bindings) {
            return Ok((l.set, l.pipeline));
        }
        let d = &self.core.device;
        let b: Vec<_> = (0..bindings)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        // SAFETY: valid create infos on a live device; destroyed in Drop.
        unsafe {
            let set = d
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&b),
                    None,
                )
                .map_err(Error::vk("vkCreateDescriptorSetLayout"))?;
            let sets = [set];
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .size(MAX_PARAMS as u32)];
            let pipeline = d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&sets)
                    .push_constant_ranges(&ranges),
                None,
            );
            let pipeline = match pipeline {
                Ok(p) => p,
                Err(e) => {
                    d.destroy_descriptor_set_layout(set, None);
                    return Err(Error::vk("vkCreatePipelineLayout")(e));
                }
            };
            layouts.insert(bindings, Layout { set, pipeline });
            Ok((set, pipeline))
        }
    }

    fn pipeline(
        &self,
        launch: &Launch<'_>,
    ) -> Result<(vk::Pipeline, vk::PipelineLayout, vk::DescriptorSetLayout)> {
        let k = &launch.kernel;
        let (variant, spirv) = find_shader(k.name, k.elem.name())
            .or_else(|| find_shader(k.name, k.elem.bits_name()))
            .ok_or_else(|| Error::MissingKernel {
                kernel: k.name.to_string(),
                variant: format!("element type {}", k.elem),
            })?;
        let (set_layout, layout) = self.layout(launch.bindings.len() as u32)?;
        let key = PipelineKey {
            name: k.name,
            variant,
            block: launch.block,
            consts: k.consts.to_vec(),
        };
        let mut pipelines = lock(&self.pipelines);
        if let Some(&p) = pipelines.get(&key) {
            return Ok((p, layout, set_layout));
        }
        let d = &self.core.device;
        let module = {
            let mut modules = lock(&self.modules);
            match modules.get(&(k.name, variant)) {
                Some(&m) => m,
                None => {
                    let words =
                        ash::util::read_spv(&mut std::io::Cursor::new(spirv)).map_err(|e| {
                            Error::MissingKernel {
                                kernel: k.name.to_string(),
                                variant: format!("{variant} (corrupt SPIR-V: {e})"),
                            }
                        })?;
                    // Keep subnormals where the driver can promise it (see `Denorms::widths`).
                    let widths = self.denorms.widths(&spirv::float_widths(&words));
                    let words = spirv::with_denorm_preserve(&words, &widths).unwrap_or(words);
                    // SAFETY: the words are SPIR-V produced by the build script (with execution
                    // modes the device supports added by `spirv`).
                    let m = unsafe {
                        d.create_shader_module(
                            &vk::ShaderModuleCreateInfo::default().code(&words),
                            None,
                        )
                    }
                    .map_err(Error::vk("vkCreateShaderModule"))?;
                    modules.insert((k.name, variant), m);
                    m
                }
            }
        };
        // Constants by name: each goes to the constant_id its shader declares for it.
        let spec = crate::kernels::spec_entries(k.name, launch.block, k.consts)?;
        let data: Vec<u32> = spec.iter().map(|e| e.1).collect();
        let entries: Vec<_> = (0..spec.len() as u32)
            .map(|i| {
                vk::SpecializationMapEntry::default()
                    .constant_id(spec[i as usize].0)
                    .offset(i * 4)
                    .size(4)
            })
            .collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(bytemuck::cast_slice(&data));
        let mut required = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(self.info.subgroup_size);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&spec);
        if self.size_control {
            // Full subgroups always; the size itself is pinned where the workgroup fits in
            // the number of subgroups a workgroup may have at that size (llvmpipe at size 4
            // allows 32, i.e. 128 invocations). Unpinned, the device runs its default size,
            // which is the size reported.
            stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
            let fits = launch.block as u64
                <= self.info.subgroup_size as u64 * self.max_workgroup_subgroups as u64;
            if fits {
                stage = stage.push_next(&mut required);
            }
        }
        let flags = if self.executable_properties.is_some() {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
        } else {
            vk::PipelineCreateFlags::empty()
        };
        let info = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(layout);
        // SAFETY: module, layout and specialization data are alive for the call.
        let p = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) }
            .map_err(|(_, e)| Error::vk("vkCreateComputePipelines")(e))?[0];
        pipelines.insert(key, p);
        Ok((p, layout, set_layout))
    }

    fn descriptor_set(
        &self,
        s: &mut Stream,
        layout: vk::DescriptorSetLayout,
    ) -> Result<vk::DescriptorSet> {
        let d = &self.core.device;
        let layouts = [layout];
        loop {
            if s.desc_pool_current == s.desc_pools.len() {
                let sizes = [vk::DescriptorPoolSize::default()
                    .ty(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(SETS_PER_POOL * MAX_BINDINGS)];
                // SAFETY: valid create info; pools are destroyed in Drop.
                let pool = unsafe {
                    d.create_descriptor_pool(
                        &vk::DescriptorPoolCreateInfo::default()
                            .max_sets(SETS_PER_POOL)
                            .pool_sizes(&sizes),
                        None,
                    )
                }
                .map_err(Error::vk("vkCreateDescriptorPool"))?;
                s.desc_pools.push(pool);
            }
            let pool = s.desc_pools[s.desc_pool_current];
            // SAFETY: pool and layout are alive; sets are freed by resetting the pool after
            // the submit that uses them has finished.
            match unsafe {
                d.allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(pool)
                        .set_layouts(&layouts),
                )
            } {
                Ok(sets) => return Ok(sets[0]),
                Err(vk::Result::ERROR_OUT_OF_POOL_MEMORY)
                | Err(vk::Result::ERROR_FRAGMENTED_POOL) => {
                    s.desc_pool_current += 1;
                }
                Err(e) => return Err(Error::vk("vkAllocateDescriptorSets")(e)),
            }
        }
    }

    fn check_launch(&self, launch: &Launch<'_>) -> Result<()> {
        // With full subgroups required, the workgroup must hold whole subgroups of the largest
        // size the device may pick.
        let sg = if self.size_control {
            self.info.max_subgroup_size
        } else {
            self.info.subgroup_size
        }
        .max(1);
        if launch.block == 0
            || launch.block % 32 != 0
            || launch.block % sg != 0
            || launch.block > self.max_block
        {
            return Err(Error::invalid(
                "block",
                launch.block,
                format!(
                    "a multiple of 32 and of the subgroup size {sg}, at most {}",
                    self.max_block
                ),
            ));
        }
        for (i, (&g, &max)) in launch.groups.iter().zip(&self.info.max_groups).enumerate() {
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
                launch.params.len(),
                format!("at most {MAX_PARAMS} bytes"),
            ));
        }
        if launch.bindings.is_empty() || launch.bindings.len() > MAX_BINDINGS as usize {
            return Err(Error::invalid(
                "bindings",
                launch.bindings.len(),
                format!("1..={MAX_BINDINGS}"),
            ));
        }
        for b in launch.bindings {
            b.buffer.check_range(b.offset, b.bytes)?;
            if b.bytes == 0 || b.bytes > self.info.max_binding_bytes {
                return Err(Error::invalid(
                    "binding.bytes",
                    b.bytes,
                    format!(
                        "1..={} (the device's maxStorageBufferRange)",
                        self.info.max_binding_bytes
                    ),
                ));
            }
            if b.offset % self.info.binding_alignment != 0 {
                return Err(Error::invalid(
                    "binding.offset",
                    b.offset,
                    format!("a multiple of {}", self.info.binding_alignment),
                ));
            }
        }
        Ok(())
    }
}

/// Device features xwarp uses, as an application enabled them at `vkCreateDevice` (see
/// [`VulkanDevice::requirements`] for which ones xwarp needs on a given device).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VulkanFeatures {
    /// `VkPhysicalDeviceFeatures::shaderInt64`: 64-bit integer kernels.
    pub shader_int64: bool,
    /// `VkPhysicalDeviceFeatures::shaderFloat64`: `f64` kernels.
    pub shader_float64: bool,
    /// `subgroupSizeControl` (`VkPhysicalDeviceSubgroupSizeControlFeatures` or
    /// `VkPhysicalDeviceVulkan13Features`).
    pub subgroup_size_control: bool,
    /// `computeFullSubgroups` (same structures).
    pub compute_full_subgroups: bool,
    /// `shaderBufferInt64Atomics` (`VkPhysicalDeviceShaderAtomicInt64Features` or
    /// `VkPhysicalDeviceVulkan12Features`, with `shaderInt64`): the device scan keeps a 32-bit
    /// type's tile state in one 64-bit word, which is faster than the two 32-bit words it uses
    /// without, and the unordered compaction takes one atomic per tile instead of two.
    pub shader_buffer_int64_atomics: bool,
    /// `pipelineExecutableInfo` (`VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR`),
    /// with `VK_KHR_pipeline_executable_properties` among the enabled extensions: xwarp then
    /// creates its pipelines capturing the compiler's statistics and reports them in
    /// [`Device::kernel_stats`]. xwarp runs without it, so [`VulkanRequirements`] never asks
    /// for it.
    pub pipeline_executable_info: bool,
}

/// What an application must enable on its device for [`VulkanDevice::from_external`], as
/// [`VulkanDevice::requirements`] finds it for one physical device.
#[derive(Clone, Debug)]
pub struct VulkanRequirements {
    /// Device extensions to enable: `VK_EXT_subgroup_size_control` where subgroup size
    /// control is not core (before Vulkan 1.3), `VK_KHR_portability_subset` where offered.
    pub extensions: Vec<&'static CStr>,
    /// Features xwarp refuses to run without (`subgroupSizeControl` and
    /// `computeFullSubgroups` where the device supports them).
    pub required: VulkanFeatures,
    /// Features xwarp uses when enabled (`shaderInt64`, `shaderFloat64`,
    /// `shaderBufferInt64Atomics` where supported); without the first two the kernels of those
    /// types are refused with [`Error::MissingFeature`], without the third the device scan
    /// takes its slower 32-bit tile state.
    pub optional: VulkanFeatures,
    /// A queue family with compute support, the one xwarp would pick itself (timestamps
    /// first, then no graphics); any compute family works.
    pub queue_family_index: u32,
}

impl VulkanRequirements {
    /// Every feature xwarp uses: [`Self::required`] and [`Self::optional`] together.
    pub fn features(&self) -> VulkanFeatures {
        VulkanFeatures {
            shader_int64: self.required.shader_int64 || self.optional.shader_int64,
            shader_float64: self.required.shader_float64 || self.optional.shader_float64,
            shader_buffer_int64_atomics: self.required.shader_buffer_int64_atomics
                || self.optional.shader_buffer_int64_atomics,
            subgroup_size_control: self.required.subgroup_size_control
                || self.optional.subgroup_size_control,
            compute_full_subgroups: self.required.compute_full_subgroups
                || self.optional.compute_full_subgroups,
            pipeline_executable_info: self.required.pipeline_executable_info
                || self.optional.pipeline_executable_info,
        }
    }
}

/// An application's Vulkan objects to open the backend on, for
/// [`VulkanDevice::from_external`]. xwarp keeps clones of the ash handles (function tables)
/// and never destroys what they refer to.
#[derive(Clone)]
pub struct ExternalVulkan {
    /// The loader the instance was created through.
    pub entry: ash::Entry,
    /// The application's instance.
    pub instance: ash::Instance,
    /// The `apiVersion` the instance was created with (`VkApplicationInfo::apiVersion`); 1.1
    /// or newer.
    pub api_version: u32,
    /// The physical device the device was created on.
    pub physical_device: vk::PhysicalDevice,
    /// The application's device.
    pub device: ash::Device,
    /// The family of `queue`; it must support compute.
    pub queue_family_index: u32,
    /// The queue xwarp submits to (see the module docs on sharing it).
    pub queue: vk::Queue,
    /// The features the device was created with.
    pub enabled_features: VulkanFeatures,
    /// The device extensions the device was created with.
    pub enabled_extensions: Vec<CString>,
    /// A lock the application holds around each of its own uses of `queue`; xwarp holds it
    /// around each of its submits and queue waits, so both may use the queue from different
    /// threads. Never hold it while calling into xwarp (xwarp would wait for it forever).
    /// `None`: the application promises not to use the queue while an xwarp call runs.
    pub queue_lock: Option<Arc<Mutex<()>>>,
}

impl fmt::Debug for ExternalVulkan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalVulkan")
            .field("api_version", &self.api_version)
            .field("physical_device", &self.physical_device)
            .field("device", &self.device.handle())
            .field("queue_family_index", &self.queue_family_index)
            .field("queue", &self.queue)
            .field("enabled_features", &self.enabled_features)
            .field("enabled_extensions", &self.enabled_extensions)
            .field("queue_lock", &self.queue_lock.is_some())
            .finish_non_exhaustive()
    }
}

/// An application's buffer, as it was created: what [`VulkanDevice::wrap_buffer`] borrows.
#[derive(Clone, Copy, Debug)]
pub struct ExternalBuffer {
    /// The buffer, created on the device xwarp was opened on, with memory bound.
    pub buffer: vk::Buffer,
    /// `VkBufferCreateInfo::size`.
    pub size: u64,
    /// `VkBufferCreateInfo::usage`: `STORAGE_BUFFER` always; `TRANSFER_DST` for uploads
    /// (`Device::write`, `DeviceVec::fill`, copies into it), `TRANSFER_SRC` for downloads
    /// (`Device::read`, `DeviceVec::to_vec`, copies from it).
    pub usage: vk::BufferUsageFlags,
}

/// A byte range of an application's buffer, borrowed: nothing is freed when it drops.
struct AppBuffer {
    buffer: vk::Buffer,
    /// Where the range starts in `buffer`.
    base: u64,
    usage: vk::BufferUsageFlags,
}

/// What a command needs of a [`RawBuffer`]: the handle, where the RawBuffer's byte 0 lies in
/// it, and the usages it was created with.
#[derive(Clone, Copy)]
struct Target {
    buffer: vk::Buffer,
    base: u64,
    usage: vk::BufferUsageFlags,
}

impl Target {
    fn require(self, usage: vk::BufferUsageFlags, operation: &'static str) -> Result<Self> {
        if self.usage.contains(usage) {
            return Ok(self);
        }
        Err(Error::MissingUsage {
            usage: if usage == vk::BufferUsageFlags::TRANSFER_SRC {
                "VK_BUFFER_USAGE_TRANSFER_SRC_BIT"
            } else if usage == vk::BufferUsageFlags::TRANSFER_DST {
                "VK_BUFFER_USAGE_TRANSFER_DST_BIT"
            } else {
                "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT"
            },
            operation,
        })
    }
}

/// The probe of `pd` on an application's instance of `api_version`, adjusted to what that
/// version makes usable, and what the application must enable for xwarp.
fn external_plan(
    i: &ash::Instance,
    api_version: u32,
    pd: vk::PhysicalDevice,
) -> Result<(Probe, VulkanRequirements)> {
    let _guard = lifecycle();
    // SAFETY: plain queries on the application's live instance and its physical device.
    let (index, exts) = unsafe {
        (
            i.enumerate_physical_devices()
                .ok()
                .and_then(|all| all.iter().position(|&d| d == pd))
                .unwrap_or(0),
            i.enumerate_device_extension_properties(pd)
                .map_err(Error::vk("vkEnumerateDeviceExtensionProperties"))?,
        )
    };
    let offered = |name: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(name));
    let mut p = probe(i, pd, index);
    let api = api_version.min(p.api);
    if api < vk::API_VERSION_1_1 || !p.info.subgroup_features.contains(SubgroupFeatures::BASIC) {
        return Err(Error::MissingFeature {
            device: p.info.name.clone(),
            missing: format!(
                "Vulkan 1.1 with basic subgroup operations in compute shaders (instance API \
                 {}.{}, device API {}.{})",
                vk::api_version_major(api_version),
                vk::api_version_minor(api_version),
                vk::api_version_major(p.api),
                vk::api_version_minor(p.api)
            ),
        });
    }
    let size_ext = ash::ext::subgroup_size_control::NAME;
    // Below 1.3 (instance or device) subgroup size control exists only as the extension.
    p.size_control = p.size_control && (api >= vk::API_VERSION_1_3 || offered(size_ext));
    p.info.subgroup_size_pinned = p.size_control;
    let mut extensions = Vec::new();
    if p.size_control && api < vk::API_VERSION_1_3 {
        extensions.push(size_ext);
    }
    if p.portability_subset {
        extensions.push(PORTABILITY_SUBSET);
    }
    let queue_family_index = compute_family(i, pd)
        .ok_or_else(|| Error::MissingFeature {
            device: p.info.name.clone(),
            missing: "a queue family with compute support".into(),
        })?
        .0;
    let req = VulkanRequirements {
        extensions,
        required: VulkanFeatures {
            subgroup_size_control: p.size_control,
            compute_full_subgroups: p.size_control,
            ..VulkanFeatures::default()
        },
        optional: VulkanFeatures {
            shader_int64: p.int64,
            shader_float64: p.float64,
            shader_buffer_int64_atomics: p.atomic64,
            ..VulkanFeatures::default()
        },
        queue_family_index,
    };
    Ok((p, req))
}

impl VulkanDevice {
    /// What an application must enable when it creates a device on `physical_device` (of
    /// `instance`, created with `api_version`) for [`Self::from_external`] to accept it.
    ///
    /// Errors: [`Error::MissingFeature`] when the device cannot run xwarp at all (no Vulkan
    /// 1.1 with subgroup operations in compute shaders, no compute queue).
    pub fn requirements(
        instance: &ash::Instance,
        api_version: u32,
        physical_device: vk::PhysicalDevice,
    ) -> Result<VulkanRequirements> {
        external_plan(instance, api_version, physical_device).map(|(_, req)| req)
    }

    /// Opens the backend on an application's instance, device and queue, creating no device
    /// of its own. See the module docs for what the device must have enabled (checked here:
    /// a missing one is [`Error::NotEnabled`] naming it), the queue-sharing rule and the
    /// synchronisation contract.
    ///
    /// xwarp creates on the device only its own command pool, fence, query pool, descriptor
    /// pools, layouts, shader modules, pipelines and an allocator for its own memory (which
    /// holds, from the start, the small buffer of [`Device::counters`], zeroed by a fill that
    /// goes out with xwarp's first submit), and destroys only those. Dropping the returned device waits for xwarp's own submitted work
    /// (its fence), never for the device or queue as a whole.
    ///
    /// # Safety
    /// - Every handle in `ext` is valid: `device` was created from `physical_device` of
    ///   `instance` (loaded through `entry`), `queue` was retrieved from `device` in family
    ///   `queue_family_index`, and `api_version`, `enabled_features` and
    ///   `enabled_extensions` state exactly what the application passed at creation.
    /// - The instance and device outlive the returned [`VulkanDevice`] and every buffer made
    ///   by it or wrapped through it ([`RawBuffer`], `DeviceVec`, clones included).
    /// - No other thread uses `queue` (submit, wait idle, present, sparse binding) while an
    ///   xwarp call on this device runs, unless every such use holds `ext.queue_lock`; and the
    ///   application does not call `vkDeviceWaitIdle` while an xwarp call runs.
    /// - The application does not destroy, reset or otherwise touch the objects xwarp
    ///   creates on the device.
    pub unsafe fn from_external(ext: ExternalVulkan) -> Result<Self> {
        let _guard = lifecycle();
        let inst = Arc::new(Instance {
            entry: ext.entry,
            instance: ext.instance,
            debug: None,
            messages: Box::new(Mutex::new(Vec::new())),
            owned: false,
            sync_validation: false,
        });
        let pd = ext.physical_device;
        let (mut p, req) = external_plan(&inst.instance, ext.api_version, pd)?;
        let name = p.info.name.clone();
        let not_enabled = |feature: &str, how: &str| Error::NotEnabled {
            device: name.clone(),
            feature: feature.to_string(),
            how: how.to_string(),
        };
        let size_control_how = "set subgroupSizeControl and computeFullSubgroups in \
             VkPhysicalDeviceSubgroupSizeControlFeatures (or VkPhysicalDeviceVulkan13Features) \
             in the VkDeviceCreateInfo chain; xwarp's kernels rely on full subgroups";
        let on = ext.enabled_features;
        if req.required.subgroup_size_control && !on.subgroup_size_control {
            return Err(not_enabled("subgroupSizeControl", size_control_how));
        }
        if req.required.compute_full_subgroups && !on.compute_full_subgroups {
            return Err(not_enabled("computeFullSubgroups", size_control_how));
        }
        for &needed in &req.extensions {
            if !ext
                .enabled_extensions
                .iter()
                .any(|e| e.as_c_str() == needed)
            {
                return Err(not_enabled(
                    &needed.to_string_lossy(),
                    "list it in VkDeviceCreateInfo::ppEnabledExtensionNames",
                ));
            }
        }
        // SAFETY: `pd` belongs to the application's live instance.
        let families = unsafe {
            inst.instance
                .get_physical_device_queue_family_properties(pd)
        };
        let family = families
            .get(ext.queue_family_index as usize)
            .filter(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| {
                Error::invalid(
                    "queue_family_index",
                    ext.queue_family_index,
                    format!(
                        "a queue family of `{name}` with compute support (e.g. {})",
                        req.queue_family_index
                    ),
                )
            })?;
        let family = (ext.queue_family_index, family.timestamp_valid_bits);
        p.int64 = p.int64 && on.shader_int64;
        p.float64 = p.float64 && on.shader_float64;
        p.atomic64 = p.atomic64 && p.int64 && on.shader_buffer_int64_atomics;
        // Statistics only where the application enabled both the extension and the feature.
        let stats_ext = ash::khr::pipeline_executable_properties::NAME;
        p.executable_stats = p.executable_stats
            && on.pipeline_executable_info
            && ext
                .enabled_extensions
                .iter()
                .any(|e| e.as_c_str() == stats_ext);
        // Before Vulkan 1.2 the float controls (subnormals kept where asked) need their
        // extension enabled by the application; without it kernels ask for nothing.
        let float_controls = ash::khr::shader_float_controls::NAME;
        if p.float_controls_ext
            && !ext
                .enabled_extensions
                .iter()
                .any(|e| e.as_c_str() == float_controls)
        {
            p.denorms = Denorms::default();
        }
        if !p.float64 {
            p.denorms.f64 = false;
        }
        p.info.int64 = p.int64;
        p.info.float64 = p.float64;
        p.info.int64_atomics = p.atomic64;
        p.info.driver.push_str(", application's device");
        let core = Core::new(&inst, ext.device, pd, &p.info.name, false)?;
        Self::attach(core, ext.queue, family, &p, true, ext.queue_lock)
    }

    /// Whether this device runs on an application's Vulkan device ([`Self::from_external`]).
    pub fn is_external(&self) -> bool {
        self.external
    }

    /// Whether pipelines capture the compiler's statistics, which [`Device::kernel_stats`]
    /// then reports: where the device offers `VK_KHR_pipeline_executable_properties` with
    /// `pipelineExecutableInfo` (on an application's device: where the application enabled
    /// both, see [`VulkanFeatures::pipeline_executable_info`]). Capturing them does not change
    /// the compiled pipelines (the extension's rule), only, possibly, their creation time.
    pub fn captures_statistics(&self) -> bool {
        self.executable_properties.is_some()
    }

    /// The statistics of each executable of `pipeline`, labelled `kernel`; a failed query is
    /// reported as a statistic named `error`.
    fn pipeline_stats(
        &self,
        ext: &ash::khr::pipeline_executable_properties::Device,
        kernel: &str,
        pipeline: vk::Pipeline,
    ) -> Vec<KernelStats> {
        let failed = |executable: String, call: &str, e: vk::Result| KernelStats {
            kernel: kernel.to_string(),
            executable,
            stats: vec![("error".to_string(), format!("{call}: {e}"))],
        };
        let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
        // SAFETY: the pipeline was created on this device, with CAPTURE_STATISTICS_KHR since
        // the extension is enabled, and lives until the device drops (`&self` outlives the
        // call); the query takes no externally synchronised object.
        let executables = match unsafe { ext.get_pipeline_executable_properties(&info) } {
            Ok(list) => list,
            Err(e) => {
                return vec![failed(
                    String::new(),
                    "vkGetPipelineExecutablePropertiesKHR",
                    e,
                )]
            }
        };
        let mut out = Vec::with_capacity(executables.len());
        for (index, props) in executables.iter().enumerate() {
            let executable = c_text(props.name_as_c_str());
            let info = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(index as u32);
            // SAFETY: as above; `index` is below the executable count the driver reported.
            match unsafe { ext.get_pipeline_executable_statistics(&info) } {
                Ok(list) => out.push(KernelStats {
                    kernel: kernel.to_string(),
                    executable,
                    stats: list
                        .iter()
                        .map(|s| (c_text(s.name_as_c_str()), statistic_value(s)))
                        .collect(),
                }),
                Err(e) => out.push(failed(
                    executable,
                    "vkGetPipelineExecutableStatisticsKHR",
                    e,
                )),
            }
        }
        out
    }

    /// Borrows bytes `offset..offset + bytes` of an application's buffer as a [`RawBuffer`]
    /// usable wherever xwarp's own memory is (through [`DeviceVec::from_raw`], or
    /// [`Self::wrap_vec`]), with no copy. Dropping it frees nothing.
    ///
    /// Errors: [`Error::OutOfBounds`] when the range leaves the buffer,
    /// [`Error::InvalidParameter`] for an empty range or an `offset` that is not a multiple of
    /// [`DeviceInfo::binding_alignment`] (`minStorageBufferOffsetAlignment`),
    /// [`Error::MissingUsage`] when `buffer.usage` lacks `STORAGE_BUFFER` (transfer usages are
    /// checked by the operations that need them).
    ///
    /// Ranges of one buffer may be wrapped many times; xwarp does not know that they share
    /// memory, so passing overlapping ranges as the input and the output of one operation (or
    /// to [`Device::copy`]) gives unspecified results.
    ///
    /// # Safety
    /// - `buffer` describes a live buffer created on this device with exactly that size and
    ///   usage, bound to memory, and it (and its memory) stays alive until every clone of the
    ///   returned buffer has dropped and the work using it has finished (the next
    ///   [`Device::synchronize`], [`Device::read`] or drop of this device after the last use).
    /// - Between an xwarp call that uses the range and the next synchronize (or read) the
    ///   application does not access the range from the host or from other queues, and does not
    ///   submit work to xwarp's queue that reads xwarp's results (it would run first: see the
    ///   module docs).
    /// - A buffer created with `VK_SHARING_MODE_EXCLUSIVE` is owned by the queue family xwarp
    ///   submits to ([`Self::queue_family`]): the application released and acquired it if it
    ///   used it on another family.
    pub unsafe fn wrap_buffer(
        &self,
        buffer: ExternalBuffer,
        offset: u64,
        bytes: u64,
    ) -> Result<RawBuffer> {
        if buffer.buffer == vk::Buffer::null() {
            return Err(Error::invalid(
                "buffer",
                "VK_NULL_HANDLE",
                "a buffer created on this device",
            ));
        }
        if bytes == 0 {
            return Err(Error::invalid("bytes", 0, "1 or more"));
        }
        match offset.checked_add(bytes) {
            Some(end) if end <= buffer.size => {}
            _ => {
                return Err(Error::OutOfBounds {
                    offset,
                    end: offset.saturating_add(bytes),
                    size: buffer.size,
                })
            }
        }
        if offset % self.info.binding_alignment != 0 {
            return Err(Error::invalid(
                "offset",
                offset,
                format!(
                    "a multiple of {} (minStorageBufferOffsetAlignment of `{}`)",
                    self.info.binding_alignment, self.info.name
                ),
            ));
        }
        let target = Target {
            buffer: buffer.buffer,
            base: offset,
            usage: buffer.usage,
        };
        target.require(
            vk::BufferUsageFlags::STORAGE_BUFFER,
            "bind it to xwarp's kernels",
        )?;
        Ok(RawBuffer::new(
            Arc::new(AppBuffer {
                buffer: buffer.buffer,
                base: offset,
                usage: buffer.usage,
            }),
            bytes,
            self.id,
            &format!("{} (application buffer)", self.info.name),
        ))
    }

    /// [`Self::wrap_buffer`] of `len` elements of `T` from byte `offset`, typed.
    ///
    /// # Safety
    /// As for [`Self::wrap_buffer`].
    pub unsafe fn wrap_vec<T: Element>(
        &self,
        buffer: ExternalBuffer,
        offset: u64,
        len: usize,
    ) -> Result<DeviceVec<T>> {
        let bytes = (len as u64)
            .checked_mul(T::KIND.size() as u64)
            .filter(|&b| b > 0)
            .ok_or_else(|| Error::invalid("len", len, "1 or more, at most u64::MAX bytes"))?;
        // SAFETY: the caller upholds wrap_buffer's contract.
        let raw = unsafe { self.wrap_buffer(buffer, offset, bytes) }?;
        DeviceVec::from_raw(raw, len)
    }

    /// The handle, base offset and usages behind `raw`, if it belongs to this device.
    fn target(&self, raw: &RawBuffer) -> Result<Target> {
        match raw.downcast::<VkBuffer>(self.id, &self.info.name) {
            Ok(b) => Ok(Target {
                buffer: b.buffer,
                base: 0,
                usage: vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST,
            }),
            Err(e) => raw
                .downcast::<AppBuffer>(self.id, &self.info.name)
                .map(|b| Target {
                    buffer: b.buffer,
                    base: b.base,
                    usage: b.usage,
                })
                .map_err(|_| e),
        }
    }
}

/// A fixed-size string of a Vulkan structure as text (empty when it is not terminated).
fn c_text(s: std::result::Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The value of one pipeline-executable statistic as text, read by its format.
fn statistic_value(s: &vk::PipelineExecutableStatisticKHR<'_>) -> String {
    use vk::PipelineExecutableStatisticFormatKHR as F;
    // SAFETY: only the member of the value union that `format` names is read, which is the
    // one the driver wrote; every bit pattern is a valid value of each member's type.
    unsafe {
        match s.format {
            F::BOOL32 => (s.value.b32 != vk::FALSE).to_string(),
            F::INT64 => s.value.i64.to_string(),
            F::UINT64 => s.value.u64.to_string(),
            F::FLOAT64 => s.value.f64.to_string(),
            other => format!("(value of unknown format {})", other.as_raw()),
        }
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
        if bytes == 0 {
            return Err(Error::invalid("bytes", 0, "1 or more"));
        }
        let buf = VkBuffer::new(&self.core, bytes, MemoryLocation::GpuOnly, "xwarp buffer")?;
        Ok(RawBuffer::new(
            Arc::new(buf),
            bytes,
            self.id,
            &self.info.name,
        ))
    }

    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        dst.check_range(offset, src.len() as u64)?;
        let target = self.target(dst)?.require(
            vk::BufferUsageFlags::TRANSFER_DST,
            "upload into it (Device::write, DeviceVec::fill)",
        )?;
        if src.is_empty() {
            return Ok(());
        }
        let staging = VkBuffer::new(
            &self.core,
            src.len() as u64,
            MemoryLocation::CpuToGpu,
            "xwarp upload",
        )?;
        staging.with_mapped(|m| m[..src.len()].copy_from_slice(src))?;
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        let region = vk::BufferCopy::default()
            .dst_offset(target.base + offset)
            .size(src.len() as u64);
        // SAFETY: both buffers are alive until the submit finishes (kept in the stream) and
        // the region lies inside both.
        unsafe {
            self.core
                .device
                .cmd_copy_buffer(s.cmd, staging.buffer, target.buffer, &[region])
        };
        s.keep.push(dst.keep_alive());
        s.staging.push(staging);
        Ok(())
    }

    fn copy(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let from = self.target(src)?.require(
            vk::BufferUsageFlags::TRANSFER_SRC,
            "copy from it on the device (Device::copy)",
        )?;
        let to = self.target(dst)?.require(
            vk::BufferUsageFlags::TRANSFER_DST,
            "copy into it on the device (Device::copy)",
        )?;
        src.check_range(src_offset, bytes)?;
        dst.check_range(dst_offset, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        let region = vk::BufferCopy::default()
            .src_offset(from.base + src_offset)
            .dst_offset(to.base + dst_offset)
            .size(bytes);
        // SAFETY: both buffers are kept alive until the submit finishes; ranges checked above.
        unsafe {
            self.core
                .device
                .cmd_copy_buffer(s.cmd, from.buffer, to.buffer, &[region])
        };
        s.keep.push(src.keep_alive());
        s.keep.push(dst.keep_alive());
        Ok(())
    }

    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        src.check_range(offset, dst.len() as u64)?;
        let source = self.target(src)?.require(
            vk::BufferUsageFlags::TRANSFER_SRC,
            "download from it (Device::read, DeviceVec::to_vec)",
        )?;
        if dst.is_empty() {
            return self.synchronize();
        }
        let staging = VkBuffer::new(
            &self.core,
            dst.len() as u64,
            MemoryLocation::GpuToCpu,
            "xwarp download",
        )?;
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        let region = vk::BufferCopy::default()
            .src_offset(source.base + offset)
            .size(dst.len() as u64);
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: both buffers are alive until the wait below; the region lies inside both.
        unsafe {
            let d = &self.core.device;
            d.cmd_copy_buffer(s.cmd, source.buffer, staging.buffer, &[region]);
            d.cmd_pipeline_barrier(
                s.cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
        }
        s.keep.push(src.keep_alive());
        self.flush(&mut s)?;
        drop(s);
        staging.with_mapped(|m| dst.copy_from_slice(&m[..dst.len()]))
    }

    fn launch(&self, launch: &Launch<'_>) -> Result<()> {
        self.check_launch(launch)?;
        let buffers = launch
            .bindings
            .iter()
            .map(|b| self.target(b.buffer))
            .collect::<Result<Vec<_>>>()?;
        let (pipeline, layout, set_layout) = self.pipeline(launch)?;
        let mut s = lock(&self.stream);
        let set = self.descriptor_set(&mut s, set_layout)?;
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = launch
            .bindings
            .iter()
            .zip(&buffers)
            .map(|(b, vb)| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(vb.buffer)
                    .offset(vb.base + b.offset)
                    .range(b.bytes)]
            })
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        let mut params = [0u8; MAX_PARAMS];
        params[..launch.params.len()].copy_from_slice(launch.params);
        self.begin(&mut s)?;
        // SAFETY: the set is unused by pending work (freshly allocated); pipeline, layout and
        // buffers are alive until the submit finishes; ranges and limits were checked above.
        unsafe {
            let d = &self.core.device;
            d.update_descriptor_sets(&writes, &[]);
            d.cmd_bind_pipeline(s.cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            d.cmd_bind_descriptor_sets(
                s.cmd,
                vk::PipelineBindPoint::COMPUTE,
                layout,
                0,
                &[set],
                &[],
            );
            d.cmd_push_constants(s.cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, &params);
            d.cmd_dispatch(s.cmd, launch.groups[0], launch.groups[1], 1);
        }
        for b in launch.bindings {
            s.keep.push(b.buffer.keep_alive());
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        let mut s = lock(&self.stream);
        self.flush(&mut s)
    }

    fn counters(&self) -> Option<&RawBuffer> {
        self.counters.as_ref()
    }

    fn diagnostics(&self) -> Vec<String> {
        self.validation_messages()
    }

    fn kernel_stats(&self) -> Vec<KernelStats> {
        let Some(ext) = &self.executable_properties else {
            return Vec::new();
        };
        // Pipelines are destroyed only when the device drops, so the lock is not needed while
        // they are queried.
        let mut pipelines: Vec<(PipelineKey, vk::Pipeline)> = lock(&self.pipelines)
            .iter()
            .map(|(k, &p)| (k.clone(), p))
            .collect();
        pipelines.sort_by(|(a, _), (b, _)| {
            (a.name, a.variant, a.block, &a.consts).cmp(&(b.name, b.variant, b.block, &b.consts))
        });
        pipelines
            .into_iter()
            .flat_map(|(k, p)| {
                let label = kernel_label(k.name, k.variant, Some(k.block), k.consts);
                self.pipeline_stats(ext, &label, p)
            })
            .collect()
    }

    fn memory_usage(&self) -> Option<MemoryUsage> {
        let report = lock(&self.core.allocator).generate_report();
        Some(MemoryUsage {
            buffers: report.allocations.len() as u64,
            bytes: report.total_allocated_bytes,
            reserved_bytes: report.total_capacity_bytes,
        })
    }

    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        if self.timestamp_mask == 0 {
            return Err(Error::MissingFeature {
                device: self.info.name.clone(),
                missing: "timestamp queries on its compute queue".into(),
            });
        }
        // One timer at a time: another's reset must not land between this one's timestamps
        // and its read of them. Work other threads queue meanwhile counts in this time.
        let _timer = lock(&self.timer);
        {
            let mut s = lock(&self.stream);
            self.flush(&mut s)?;
            self.begin(&mut s)?;
            // SAFETY: recording command buffer; the query pool holds 2 queries.
            unsafe {
                let d = &self.core.device;
                d.cmd_reset_query_pool(s.cmd, self.query_pool, 0, 2);
                d.cmd_write_timestamp(
                    s.cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    self.query_pool,
                    0,
                );
            }
        }
        let worked = work();
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        // SAFETY: recording command buffer; query 1 was reset above.
        unsafe {
            self.core.device.cmd_write_timestamp(
                s.cmd,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                self.query_pool,
                1,
            )
        };
        self.flush(&mut s)?;
        worked?;
        let mut stamps = [0u64; 2];
        // SAFETY: both queries were written by the finished submit.
        unsafe {
            self.core.device.get_query_pool_results(
                self.query_pool,
                0,
                &mut stamps,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(Error::vk("vkGetQueryPoolResults"))?;
        let ticks = (stamps[1] & self.timestamp_mask).wrapping_sub(stamps[0] & self.timestamp_mask)
            & self.timestamp_mask;
        Ok(Duration::from_nanos(
            (ticks as f64 * self.timestamp_period) as u64,
        ))
    }
}

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        let mut s = lock(&self.stream);
        let _ = self.flush(&mut s);
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
            for (_, p) in lock(&self.pipelines).drain() {
                d.destroy_pipeline(p, None);
            }
            for (_, m) in lock(&self.modules).drain() {
                d.destroy_shader_module(m, None);
            }
            for (_, l) in lock(&self.layouts).drain() {
                d.destroy_pipeline_layout(l.pipeline, None);
                d.destroy_descriptor_set_layout(l.set, None);
            }
            for p in s.desc_pools.drain(..) {
                d.destroy_descriptor_pool(p, None);
            }
            d.destroy_query_pool(self.query_pool, None);
            d.destroy_fence(s.fence, None);
            d.destroy_command_pool(s.pool, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statistic(
        name: &CStr,
        format: vk::PipelineExecutableStatisticFormatKHR,
        value: vk::PipelineExecutableStatisticValueKHR,
    ) -> vk::PipelineExecutableStatisticKHR<'static> {
        let mut s = vk::PipelineExecutableStatisticKHR {
            format,
            value,
            ..Default::default()
        };
        for (dst, &src) in s.name.iter_mut().zip(name.to_bytes()) {
            *dst = src as std::ffi::c_char;
        }
        s
    }

    /// The widths a module asks to keep follow the driver's independence rule.
    #[test]
    fn denorm_widths_follow_the_independence_rule() {
        use vk::ShaderFloatControlsIndependence as I;
        let d = |f32, f64, independence| Denorms {
            f32,
            f64,
            independence,
        };
        assert_eq!(d(true, true, I::ALL).widths(&[32, 64]), [32, 64]);
        assert_eq!(d(true, false, I::ALL).widths(&[32, 64]), [32]);
        assert_eq!(d(true, false, I::TYPE_32_ONLY).widths(&[32, 64]), [32]);
        assert_eq!(d(true, true, I::TYPE_32_ONLY).widths(&[32, 64]), [32, 64]);
        assert_eq!(d(false, true, I::TYPE_32_ONLY).widths(&[32, 64]), [64]);
        assert!(d(true, false, I::NONE).widths(&[32, 64]).is_empty());
        assert_eq!(d(true, false, I::NONE).widths(&[32]), [32]);
        assert_eq!(d(true, true, I::NONE).widths(&[32, 64]), [32, 64]);
        assert!(Denorms::default().widths(&[32]).is_empty());
        assert!(d(true, true, I::ALL).widths(&[]).is_empty());
    }

    /// Every shader with the float modes added is still valid SPIR-V for Vulkan 1.2 (checked
    /// by `spirv-val` where it is installed; CI installs it).
    #[test]
    fn every_shader_with_denorm_preserve_validates() {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let probe = Command::new("spirv-val").arg("--version").output();
        if probe.is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI needs spirv-val (Debian: spirv-tools)"
            );
            eprintln!("spirv-val not installed: skipping");
            return;
        }
        let mut patched = 0;
        for (name, variant, bytes) in SHADERS {
            let words = ash::util::read_spv(&mut std::io::Cursor::new(bytes)).unwrap();
            let widths = spirv::float_widths(&words);
            let out = spirv::with_denorm_preserve(&words, &widths).unwrap();
            if widths.is_empty() {
                assert_eq!(out, words);
                continue;
            }
            patched += 1;
            let mut child = Command::new("spirv-val")
                .args(["--target-env", "vulkan1.2", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(bytemuck::cast_slice(&out))
                .unwrap();
            let result = child.wait_with_output().unwrap();
            assert!(
                result.status.success(),
                "{name} ({variant}) widths {widths:?}: {}{}",
                String::from_utf8_lossy(&result.stdout),
                String::from_utf8_lossy(&result.stderr)
            );
        }
        assert!(patched >= 12, "only {patched} shaders declare float types");
    }

    /// Each statistic is read by its format and named as the driver names it.
    #[test]
    fn statistics_are_formatted_by_their_format() {
        use vk::PipelineExecutableStatisticFormatKHR as F;
        use vk::PipelineExecutableStatisticValueKHR as V;
        let cases = [
            (
                statistic(c"Spilled", F::BOOL32, V { b32: vk::TRUE }),
                "true",
            ),
            (statistic(c"Flag", F::BOOL32, V { b32: vk::FALSE }), "false"),
            (statistic(c"Delta", F::INT64, V { i64: -12 }), "-12"),
            (
                statistic(c"VGPRs", F::UINT64, V { u64: 1 << 40 }),
                "1099511627776",
            ),
            (statistic(c"Ratio", F::FLOAT64, V { f64: 0.25 }), "0.25"),
            (
                statistic(c"Odd", F::from_raw(7), V { u64: 1 }),
                "(value of unknown format 7)",
            ),
        ];
        for (s, want) in &cases {
            assert_eq!(statistic_value(s), *want);
        }
        assert_eq!(c_text(cases[2].0.name_as_c_str()), "Delta");
        assert_eq!(c_text(CStr::from_bytes_until_nul(b"unterminated")), "");
    }
}
