//! Running xwarp inside a wgpu application: on the wgpu device's own Vulkan device and queue,
//! on wgpu's own buffers, with no copy and no ownership taken (Cargo feature `wgpu`, which
//! brings wgpu 30 with its Vulkan backend and WGSL).
//!
//! Two ways in:
//! - [`request_device`] creates the wgpu device and queue from a wgpu [`Adapter`] of wgpu's
//!   Vulkan backend, with what xwarp needs enabled on the Vulkan device beneath (see
//!   [`VulkanDevice::requirements`]); [`WgpuDevice::features`] says what that is.
//! - [`WgpuXwarp::open`] opens xwarp on a wgpu device and its queue, however they were made:
//!   a device that is not Vulkan, or lacks something xwarp needs, is a typed error naming what
//!   is missing and what to request.
//!
//! [`WgpuXwarp`] is an xwarp [`Device`]: every algorithm takes it. [`WgpuXwarp::wrap_vec`]
//! borrows a range of a wgpu [`Buffer`] as a [`DeviceVec`].
//!
//! ```no_run
//! use xwarp::scan::{device_scan, ScanKind};
//! use xwarp::reduce::ReduceOp;
//! use xwarp::sort::{all_bits, SortOrder, Sorter};
//! use xwarp::vulkan::wgpu::{request_device, WgpuXwarp};
//!
//! fn sort(adapter: &wgpu::Adapter, n: usize) -> xwarp::Result<()> {
//!     let gpu = request_device(adapter, &wgpu::DeviceDescriptor::default())?;
//!     // SAFETY: this thread is the only one using the queue, and no wrapped buffer is
//!     // destroyed while xwarp works on it.
//!     let xw = unsafe { WgpuXwarp::open(&gpu.device, &gpu.queue, gpu.features)? };
//!     let usage = wgpu::BufferUsages::STORAGE
//!         | wgpu::BufferUsages::COPY_SRC
//!         | wgpu::BufferUsages::COPY_DST;
//!     let buffer = |label| {
//!         gpu.device.create_buffer(&wgpu::BufferDescriptor {
//!             label: Some(label),
//!             size: 4 * n as u64,
//!             usage,
//!             mapped_at_creation: false,
//!         })
//!     };
//!     let (keys, sorted, prefix) = (buffer("keys"), buffer("sorted"), buffer("prefix"));
//!     // ... wgpu passes write `keys`, submitted with `xw.submit_wgpu(..)` ...
//!     // SAFETY: the buffers are not destroyed while xwarp uses them.
//!     let (keys, mut sorted, mut prefix) = unsafe {
//!         (
//!             xw.wrap_vec::<u32>(&keys, 0, n)?,
//!             xw.wrap_vec::<u32>(&sorted, 0, n)?,
//!             xw.wrap_vec::<u32>(&prefix, 0, n)?,
//!         )
//!     };
//!     let mut sorter = Sorter::<u32>::new(&xw, n)?;
//!     sorter.sort_keys(&xw, &keys, &mut sorted, SortOrder::Ascending, all_bits::<u32>())?;
//!     device_scan(&xw, ReduceOp::Sum, ScanKind::Exclusive, &sorted, &mut prefix)?;
//!     // ... wgpu passes that read `sorted` and `prefix`, submitted with `xw.submit_wgpu(..)`:
//!     // that runs xwarp's work first ...
//!     Ok(())
//! }
//! # fn main() {}
//! ```
//! `examples/wgpu_sort.rs` is the whole program, with wgpu passes on both sides.
//!
//! # What the wgpu device must have
//! What [`VulkanDevice::requirements`] lists for its physical device. wgpu enables some of it
//! itself: `subgroupSizeControl` (Vulkan 1.3; before that only with [`Features::SUBGROUP`]),
//! `shaderInt64` with [`Features::SHADER_INT64`], `shaderFloat64` with [`Features::SHADER_F64`],
//! `shaderBufferInt64Atomics` with [`Features::SHADER_INT64_ATOMIC_ALL_OPS`]. It never enables
//! `computeFullSubgroups`, which xwarp requires wherever the device supports subgroup size
//! control (every Vulkan 1.3 device): such a device must come from [`request_device`], or from
//! the application's own `wgpu_hal` device creation (`Adapter::device_from_raw`) with it
//! enabled and passed to [`WgpuXwarp::open`] in `enabled`. The optional features (64-bit
//! types, the faster 64-bit scan state) work wherever they are enabled; without them 64-bit
//! kernels are refused with [`Error::MissingFeature`].
//!
//! # Ordering contract
//! wgpu and xwarp submit to the same `VkQueue`; Vulkan runs its submissions in order, and each
//! xwarp submission begins and ends with a full memory barrier (see the [`super`] module docs).
//! - **One submitter at a time.** `vkQueueSubmit` must not run on two threads at once, and wgpu
//!   cannot be made to take a lock of xwarp's. Calls into wgpu that submit (`Queue::submit`,
//!   `Queue::on_submitted_work_done`, `Buffer::map_async` of a buffer with pending writes,
//!   `SurfaceTexture::present`, ...) must not run while an xwarp call that submits runs
//!   ([`Device::synchronize`], [`Device::read`] and so `DeviceVec::to_vec` and the `*_host`
//!   helpers, [`Device::time`], [`Device::submit`], [`Device::wait`], [`Device::replay`],
//!   [`WgpuXwarp::wrap_vec`], dropping the [`WgpuXwarp`]): call both
//!   from one thread, or submit wgpu's work through [`WgpuXwarp::submit_wgpu`], which holds the lock
//!   xwarp holds around its own submits.
//! - **wgpu, then xwarp.** xwarp records algorithm calls and submits them at its next
//!   synchronize, read or time. Before it does, it submits what wgpu holds back (writes queued
//!   by `Queue::write_buffer`): all wgpu work submitted or queued before that call is complete
//!   and visible to xwarp's work.
//! - **xwarp, then wgpu.** When that call returns, xwarp's work has finished and its writes are
//!   visible to wgpu work submitted afterwards and to buffer mappings. [`WgpuXwarp::submit_wgpu`]
//!   synchronizes first, so wgpu work submitted through it always runs after the xwarp calls
//!   made before it; a plain `Queue::submit` between an algorithm call and the next
//!   synchronize runs *before* xwarp's work.
//! - **wgpu's bookkeeping.** wgpu tracks every buffer's last use, for its own barriers, and
//!   which bytes it has initialised, zeroing the others before their first read. xwarp's
//!   accesses are invisible to both: its barriers at both ends of each submission stand in for
//!   wgpu's, and wrapping a range first makes wgpu initialise it (a one-time zero fill of the
//!   bytes wgpu never wrote, in a small wgpu pass), so wgpu never clears what xwarp wrote.
//! - No `Device::poll` is needed for ordering (one queue); wgpu still needs one to run mapping
//!   callbacks.
//!
//! Lifetimes are kept: a wrapped range holds a clone of its wgpu [`Buffer`] and xwarp holds
//! the wgpu device and queue, until xwarp's last object and the work using them are gone. Do
//! not call `Buffer::destroy` or `Device::destroy` while xwarp may still use them.
//!
//! [`Adapter`]: ::wgpu::Adapter
//! [`Buffer`]: ::wgpu::Buffer
//! [`Features::SUBGROUP`]: ::wgpu::Features::SUBGROUP
//! [`Features::SHADER_INT64`]: ::wgpu::Features::SHADER_INT64
//! [`Features::SHADER_F64`]: ::wgpu::Features::SHADER_F64
//! [`Features::SHADER_INT64_ATOMIC_ALL_OPS`]: ::wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS

use super::instance::lock;
use super::{ExternalBuffer, ExternalVulkan, VulkanDevice, VulkanFeatures};
use crate::device::{
    Binding, Device, DeviceId, DeviceInfo, DeviceVec, KernelStats, Launch, LaunchTimes,
    MemoryUsage, RawBuffer, Recording, Ticket,
};
use crate::element::Element;
use crate::error::{Error, Result};
use ::wgpu::hal::api::Vulkan;
use ash::vk;
use std::ffi::{CStr, CString};
use std::fmt;
use std::future::Future;
use std::num::NonZeroU64;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// The queue family wgpu-hal opens its device's one queue in (its own `open` always takes 0).
const FAMILY: u32 = 0;

/// A wgpu device and queue made by [`request_device`], and what was enabled on the Vulkan
/// device beneath for xwarp.
#[derive(Debug)]
pub struct WgpuDevice {
    /// The wgpu device, the application's to use as any other.
    pub device: ::wgpu::Device,
    /// Its queue.
    pub queue: ::wgpu::Queue,
    /// The Vulkan features xwarp uses that the device was created with: pass them to
    /// [`WgpuXwarp::open`].
    pub features: VulkanFeatures,
}

/// The `apiVersion` wgpu-hal created its instance with, as far as xwarp may rely on it:
/// wgpu-hal 30 passes 1.3 to a loader of 1.1 or newer, 1.0 to a 1.0 loader; never more than
/// the loader's version is claimed here.
fn instance_api_version(shared: &::wgpu::hal::vulkan::InstanceShared) -> u32 {
    shared.instance_api_version().min(vk::API_VERSION_1_3)
}

/// The error for an adapter or device (`what`, named `param`) of another wgpu backend.
fn not_vulkan(param: &'static str, what: &str, backend: ::wgpu::Backend) -> Error {
    Error::invalid(
        param,
        format!("{what} of wgpu's {backend:?} backend"),
        format!("{what} of wgpu's Vulkan backend (wgpu::Backends::VULKAN)"),
    )
}

/// Creates a wgpu device and queue on `adapter` (of wgpu's Vulkan backend) as
/// `Adapter::request_device(desc)` would, with what xwarp needs enabled on the Vulkan device as
/// well: the extensions and features [`VulkanDevice::requirements`] lists for the adapter's
/// physical device (`computeFullSubgroups` among them, which wgpu never enables itself). wgpu
/// sees the device it asked for (`desc`'s features and limits); the extra Vulkan features only
/// add what xwarp's kernels use. The queue is in family 0, as wgpu-hal's own device creation
/// takes it.
///
/// Errors: [`Error::InvalidParameter`] for an adapter of another wgpu backend, or `desc`
/// asking for features or limits the adapter does not offer; [`Error::MissingFeature`] where
/// xwarp cannot run on the adapter at all (no Vulkan 1.1 subgroup operations in compute, no
/// compute in queue family 0); [`Error::Vulkan`] / [`Error::Wgpu`] when the driver or wgpu
/// refuses the device.
pub fn request_device(
    adapter: &::wgpu::Adapter,
    desc: &::wgpu::DeviceDescriptor<'_>,
) -> Result<WgpuDevice> {
    let info = adapter.get_info();
    if info.backend != ::wgpu::Backend::Vulkan {
        return Err(not_vulkan("adapter", "an adapter", info.backend));
    }
    let features = desc.required_features;
    let missing = features - adapter.features();
    if !missing.is_empty() {
        return Err(Error::invalid(
            "desc.required_features",
            format!("{features:?}"),
            format!(
                "features the adapter `{}` offers (it lacks {missing:?})",
                info.name
            ),
        ));
    }
    let mut over = Vec::new();
    desc.required_limits.check_limits_with_fail_fn(
        &adapter.limits(),
        false,
        |name, asked, allowed| {
            over.push(format!("{name} = {asked} (the adapter allows {allowed})"))
        },
    );
    if !over.is_empty() {
        return Err(Error::invalid(
            "desc.required_limits",
            over.join(", "),
            format!("limits within those of the adapter `{}`", info.name),
        ));
    }
    let experimental = features.intersection(::wgpu::Features::all_experimental_mask());
    if !experimental.is_empty() && !desc.experimental_features.is_enabled() {
        return Err(Error::invalid(
            "desc.experimental_features",
            "disabled",
            format!("enabled, for the experimental features {experimental:?}"),
        ));
    }
    let (open, enabled) = {
        // SAFETY: the guard lives only in this block; nothing is destroyed through it.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }
            .ok_or_else(|| not_vulkan("adapter", "an adapter", info.backend))?;
        let (raw, extensions, enabled) = create_vulkan_device(&hal, features)?;
        // SAFETY: `raw` was created from this adapter's physical device, in family FAMILY,
        // with `extensions` (a superset of `required_device_extensions(features)`) and the
        // features wgpu-hal chose for `features` (plus xwarp's, which only add). With no drop
        // callback wgpu-hal owns the device from here on.
        let open = unsafe {
            hal.device_from_raw(
                raw,
                None,
                &extensions,
                features,
                &desc.required_limits,
                &desc.memory_hints,
                FAMILY,
                0,
            )
        }
        .map_err(|e| Error::Wgpu {
            call: "wgpu_hal::vulkan::Adapter::device_from_raw",
            reason: e.to_string(),
        })?;
        (open, enabled)
    };
    // SAFETY: `open` was made from this adapter's wgpu-hal adapter; `desc.required_features`
    // are exactly the features it was opened with.
    let (device, queue) =
        unsafe { adapter.create_device_from_hal(open, desc) }.map_err(|e| Error::Wgpu {
            call: "Adapter::create_device_from_hal",
            reason: e.to_string(),
        })?;
    Ok(WgpuDevice {
        device,
        queue,
        features: enabled,
    })
}

/// The Vulkan device wgpu-hal would create for `features`, with xwarp's extensions and
/// features added: the device, its extensions and what xwarp may use of it.
fn create_vulkan_device(
    hal: &::wgpu::hal::vulkan::Adapter,
    features: ::wgpu::Features,
) -> Result<(ash::Device, Vec<&'static CStr>, VulkanFeatures)> {
    let shared = hal.shared_instance();
    let instance = shared.raw_instance();
    let pd = hal.raw_physical_device();
    let req = VulkanDevice::requirements(instance, instance_api_version(shared), pd)?;
    // SAFETY: a plain query on wgpu's live instance and its physical device.
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
    if !families
        .get(FAMILY as usize)
        .is_some_and(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
    {
        return Err(Error::MissingFeature {
            device: hal
                .physical_device_capabilities()
                .properties()
                .device_name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            missing: format!("compute in queue family {FAMILY}, where wgpu opens its queue"),
        });
    }
    let mut extensions = hal.required_device_extensions(features);
    for e in &req.extensions {
        if !extensions.contains(e) {
            extensions.push(e);
        }
    }
    let want = req.features();
    let mut phd = hal.physical_device_features(&extensions, features);
    let chosen = phd.get_core();
    let core = chosen
        .shader_int64(chosen.shader_int64 == vk::TRUE || want.shader_int64)
        .shader_float64(chosen.shader_float64 == vk::TRUE || want.shader_float64);
    let mut size_control = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
        .subgroup_size_control(want.subgroup_size_control)
        .compute_full_subgroups(want.compute_full_subgroups);
    let mut memory_model_features = vk::PhysicalDeviceVulkanMemoryModelFeatures::default()
        .vulkan_memory_model(true)
        .vulkan_memory_model_device_scope(true);
    let ext_ptrs: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(FAMILY)
        .queue_priorities(&priorities)];
    let mut info = phd
        .add_to_device_create(
            vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&ext_ptrs),
        )
        .enabled_features(&core);
    // wgpu-hal's chain already holds the structures of subgroup size control (Vulkan 1.3 or
    // the extension, which `extensions` holds where xwarp needs it) and 64-bit atomics (1.2 or
    // the extension) with only wgpu's flags set; a second structure of the same type would be
    // invalid, so xwarp's flags are set in wgpu-hal's.
    let mut size_flags = None;
    let mut atomics = false;
    let mut memory_model = None;
    // SAFETY: `info.p_next` is the chain wgpu-hal linked from `phd`'s structures, which `info`
    // borrows mutably and which live until the device is created; every structure begins
    // with sType and pNext, and a structure is written only as the type its sType names.
    unsafe {
        let mut next = info.p_next as *mut vk::BaseOutStructure<'_>;
        while !next.is_null() {
            match (*next).s_type {
                vk::StructureType::PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES => {
                    let f = &mut *next.cast::<vk::PhysicalDeviceSubgroupSizeControlFeatures<'_>>();
                    if want.subgroup_size_control {
                        f.subgroup_size_control = vk::TRUE;
                    }
                    if want.compute_full_subgroups {
                        f.compute_full_subgroups = vk::TRUE;
                    }
                    size_flags = Some((
                        f.subgroup_size_control == vk::TRUE,
                        f.compute_full_subgroups == vk::TRUE,
                    ));
                }
                vk::StructureType::PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES => {
                    let f = &mut *next.cast::<vk::PhysicalDeviceShaderAtomicInt64Features<'_>>();
                    if want.shader_buffer_int64_atomics && core.shader_int64 == vk::TRUE {
                        f.shader_buffer_int64_atomics = vk::TRUE;
                    }
                    atomics = f.shader_buffer_int64_atomics == vk::TRUE;
                }
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES => {
                    let f = &mut *next.cast::<vk::PhysicalDeviceVulkanMemoryModelFeatures<'_>>();
                    if want.vulkan_memory_model {
                        f.vulkan_memory_model = vk::TRUE;
                        f.vulkan_memory_model_device_scope = vk::TRUE;
                    }
                    memory_model = Some(
                        f.vulkan_memory_model == vk::TRUE
                            && f.vulkan_memory_model_device_scope == vk::TRUE,
                    );
                }
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => {
                    let f = &mut *next.cast::<vk::PhysicalDeviceVulkan12Features<'_>>();
                    if want.vulkan_memory_model {
                        f.vulkan_memory_model = vk::TRUE;
                        f.vulkan_memory_model_device_scope = vk::TRUE;
                    }
                    memory_model = Some(
                        f.vulkan_memory_model == vk::TRUE
                            && f.vulkan_memory_model_device_scope == vk::TRUE,
                    );
                }
                _ => {}
            }
            next = (*next).p_next;
        }
    }
    let (subgroup_size_control, compute_full_subgroups) = match size_flags {
        Some(flags) => flags,
        None if want.subgroup_size_control || want.compute_full_subgroups => {
            info = info.push_next(&mut size_control);
            (want.subgroup_size_control, want.compute_full_subgroups)
        }
        None => (false, false),
    };
    let memory_model = match memory_model {
        Some(on) => on,
        None if want.vulkan_memory_model => {
            info = info.push_next(&mut memory_model_features);
            true
        }
        None => false,
    };
    // SAFETY: `info` and everything it points to live until the call returns; it enables
    // extensions and features the physical device offers (wgpu-hal's choice for `features`,
    // and what `VulkanDevice::requirements` found supported).
    let raw =
        unsafe { instance.create_device(pd, &info, None) }.map_err(Error::vk("vkCreateDevice"))?;
    let enabled = VulkanFeatures {
        shader_int64: core.shader_int64 == vk::TRUE,
        shader_float64: core.shader_float64 == vk::TRUE,
        subgroup_size_control,
        compute_full_subgroups,
        shader_buffer_int64_atomics: atomics,
        pipeline_executable_info: false,
        vulkan_memory_model: memory_model,
    };
    Ok((raw, extensions, enabled))
}

/// The small wgpu pipeline that makes wgpu initialise a range before xwarp uses it: an empty
/// kernel, dispatched once per bind group of the range.
struct InitPass {
    layout: ::wgpu::BindGroupLayout,
    pipeline: ::wgpu::ComputePipeline,
}

/// xwarp on a wgpu device and its queue: an xwarp [`Device`] (every algorithm takes it) that
/// also borrows wgpu buffers. See the module docs for the ordering contract.
pub struct WgpuXwarp {
    xw: VulkanDevice,
    device: ::wgpu::Device,
    queue: ::wgpu::Queue,
    /// Held around every submit to the queue that xwarp makes (its own, and wgpu's on its
    /// behalf or through [`Self::submit_wgpu`]).
    queue_lock: Arc<Mutex<()>>,
    init: Mutex<Option<InitPass>>,
}

impl fmt::Debug for WgpuXwarp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WgpuXwarp")
            .field("device", &self.xw.info().name)
            .field("wgpu", &self.device)
            .finish_non_exhaustive()
    }
}

impl WgpuXwarp {
    /// Opens xwarp on a wgpu device and its queue: on the Vulkan device, queue and instance
    /// beneath them, creating no device of its own (see [`VulkanDevice::from_external`] for
    /// what xwarp creates on it, and for the self-test it runs before returning).
    ///
    /// `enabled`: Vulkan features the device was created with beyond what wgpu reports
    /// ([`WgpuDevice::features`] for a device from [`request_device`]; what the application
    /// enabled itself on a device it made through wgpu-hal; `VulkanFeatures::default()` for a
    /// device wgpu made on its own). What wgpu reports is read from the device: its
    /// [`::wgpu::Features`] and the extensions wgpu-hal enabled.
    ///
    /// Errors: [`Error::InvalidParameter`] for a device of another wgpu backend, or a `queue`
    /// that is not `device`'s; [`Error::NotEnabled`] naming what xwarp needs and the device
    /// lacks, and how to get it (typically `computeFullSubgroups`, which wgpu never enables:
    /// create the device with [`request_device`]); [`Error::SelfTestFailed`] for a device
    /// whose subgroups are not what its driver claims.
    ///
    /// # Safety
    /// - `enabled` claims only features the Vulkan device was created with.
    /// - Calls into wgpu that submit to the queue (`Queue::submit`,
    ///   `Queue::on_submitted_work_done`, `Buffer::map_async`, `SurfaceTexture::present`, ...)
    ///   or wait for it to be idle do not run on another thread while an xwarp call on the
    ///   returned device submits (see the module docs), unless they go through
    ///   [`Self::submit_wgpu`].
    /// - The application never calls `Device::destroy` on the wgpu device while the returned
    ///   device or any buffer made by it or wrapped through it is alive.
    pub unsafe fn open(
        device: &::wgpu::Device,
        queue: &::wgpu::Queue,
        enabled: VulkanFeatures,
    ) -> Result<Self> {
        let backend = device.adapter_info().backend;
        let (ext, name) = {
            // SAFETY: the guards live only in this block; nothing is destroyed through them,
            // and the handles cloned out of them are kept alive by the clones of `device` and
            // `queue` that xwarp holds.
            let hal = unsafe { device.as_hal::<Vulkan>() }
                .ok_or_else(|| not_vulkan("device", "a device", backend))?;
            // SAFETY: as above.
            let hal_queue = unsafe { queue.as_hal::<Vulkan>() }.ok_or_else(|| {
                Error::invalid(
                    "queue",
                    "a queue of another wgpu backend",
                    "the queue of `device`",
                )
            })?;
            if hal_queue.as_raw() != hal.raw_queue() {
                return Err(Error::invalid(
                    "queue",
                    "the queue of another wgpu device",
                    "the queue of `device`",
                ));
            }
            let shared = hal.shared_instance();
            let instance = shared.raw_instance().clone();
            let pd = hal.raw_physical_device();
            // SAFETY: a plain query on wgpu's live instance and its physical device.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = props
                .device_name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let extensions: Vec<CString> = hal
                .enabled_device_extensions()
                .iter()
                .map(|e| (*e).to_owned())
                .collect();
            let has = |e: &CStr| extensions.iter().any(|x| x.as_c_str() == e);
            let wf = device.features();
            // What wgpu-hal 30 enables for those features, on top of what the caller says.
            let seen = VulkanFeatures {
                shader_int64: enabled.shader_int64 || wf.contains(::wgpu::Features::SHADER_INT64),
                shader_float64: enabled.shader_float64 || wf.contains(::wgpu::Features::SHADER_F64),
                subgroup_size_control: enabled.subgroup_size_control
                    || props.api_version >= vk::API_VERSION_1_3
                    || has(ash::ext::subgroup_size_control::NAME),
                compute_full_subgroups: enabled.compute_full_subgroups,
                shader_buffer_int64_atomics: enabled.shader_buffer_int64_atomics
                    || wf.intersects(
                        ::wgpu::Features::SHADER_INT64_ATOMIC_ALL_OPS
                            | ::wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX,
                    ),
                pipeline_executable_info: enabled.pipeline_executable_info,
                vulkan_memory_model: enabled.vulkan_memory_model,
            };
            let api_version = instance_api_version(shared);
            let req = VulkanDevice::requirements(&instance, api_version, pd)?;
            let not_enabled = |feature: &str, how: &str| Error::NotEnabled {
                device: name.clone(),
                feature: feature.to_string(),
                how: how.to_string(),
            };
            if req.required.compute_full_subgroups && !seen.compute_full_subgroups {
                return Err(not_enabled(
                    "computeFullSubgroups",
                    "wgpu never enables it itself: create the wgpu device with \
                     xwarp::vulkan::wgpu::request_device and pass its `features` as `enabled` \
                     (or enable it in your own wgpu-hal device creation and say so in \
                     `enabled`)",
                ));
            }
            if req.required.subgroup_size_control && !seen.subgroup_size_control {
                return Err(not_enabled(
                    "subgroupSizeControl",
                    "request wgpu::Features::SUBGROUP (wgpu then enables \
                     VK_EXT_subgroup_size_control), or create the wgpu device with \
                     xwarp::vulkan::wgpu::request_device",
                ));
            }
            for &needed in &req.extensions {
                if !has(needed) {
                    return Err(not_enabled(
                        &needed.to_string_lossy(),
                        "create the wgpu device with xwarp::vulkan::wgpu::request_device, \
                         which enables it",
                    ));
                }
            }
            let ext = ExternalVulkan {
                entry: shared.entry().clone(),
                instance,
                api_version,
                physical_device: pd,
                device: hal.raw_device().clone(),
                queue_family_index: hal.queue_family_index(),
                queue: hal.raw_queue(),
                enabled_features: seen,
                enabled_extensions: extensions,
                queue_lock: None,
            };
            (ext, name)
        };
        let queue_lock = Arc::new(Mutex::new(()));
        let ext = ExternalVulkan {
            queue_lock: Some(queue_lock.clone()),
            ..ext
        };
        // wgpu's device and queue outlive every object xwarp makes on them: its instance
        // keeps these clones until the last of them is gone.
        let keep: Box<dyn std::any::Any + Send + Sync> = Box::new((device.clone(), queue.clone()));
        // SAFETY: the handles are wgpu's, for this device and its queue, alive as long as the
        // clones in `keep`; the features and extensions are those the device was created with
        // (wgpu-hal's, and the caller's `enabled`); the caller upholds the queue rule, and xwarp
        // takes `queue_lock` around its submits as every wgpu submit made here does.
        let xw = unsafe { VulkanDevice::open_external(ext, Some(keep)) }.map_err(|e| match e {
            Error::NotEnabled { feature, how, .. } => Error::NotEnabled {
                device: name.clone(),
                feature,
                how: format!("{how} (when creating the wgpu device)"),
            },
            e => e,
        })?;
        Ok(WgpuXwarp {
            xw,
            device: device.clone(),
            queue: queue.clone(),
            queue_lock,
            init: Mutex::new(None),
        })
    }

    /// The xwarp Vulkan device beneath (its [`VulkanDevice::self_test`],
    /// [`VulkanDevice::float_controls`], ...).
    pub fn vulkan(&self) -> &VulkanDevice {
        &self.xw
    }

    /// The wgpu device xwarp runs on.
    pub fn wgpu_device(&self) -> &::wgpu::Device {
        &self.device
    }

    /// Its queue.
    pub fn wgpu_queue(&self) -> &::wgpu::Queue {
        &self.queue
    }

    /// Submits wgpu command buffers after xwarp's recorded work: first xwarp's work recorded
    /// so far is submitted and waited for ([`Device::synchronize`]), then `command_buffers`
    /// are submitted under the lock xwarp holds around its own submits, so this may be called
    /// from any thread. Use it instead of `Queue::submit` for wgpu work that reads what xwarp
    /// wrote.
    pub fn submit_wgpu<I: IntoIterator<Item = ::wgpu::CommandBuffer>>(
        &self,
        command_buffers: I,
    ) -> Result<::wgpu::SubmissionIndex> {
        self.synchronize()?;
        let _queue = lock(&self.queue_lock);
        Ok(self.queue.submit(command_buffers))
    }

    /// Submits the writes wgpu holds back (`Queue::write_buffer`) to the queue.
    fn submit_wgpu_writes(&self) {
        let _queue = lock(&self.queue_lock);
        self.queue.submit(std::iter::empty());
    }

    /// Borrows bytes `offset..offset + bytes` of a wgpu buffer of this device as a
    /// [`RawBuffer`], with no copy; [`Self::wrap_vec`] is the typed form.
    ///
    /// Usages map to what xwarp needs: `STORAGE` always (binding to kernels), `COPY_DST` for
    /// uploads, `fill` and copies into the range (some algorithms copy into their outputs:
    /// `device_scan_in_place`), `COPY_SRC` for downloads (`to_vec`) and copies from it. A
    /// missing one is [`Error::MissingUsage`] naming the wgpu usage, here for `STORAGE`, at the
    /// operation that needs it for the others.
    ///
    /// Before it returns, wgpu initialises the range (see the module docs: a wgpu pass
    /// submitted now zero-fills the bytes wgpu never wrote, so that wgpu never clears what
    /// xwarp writes there; bytes wgpu wrote are left as they are). The range may start a bit
    /// before `offset` (at a multiple of wgpu's `min_storage_buffer_offset_alignment`).
    ///
    /// The returned buffer holds a clone of `buffer`: the buffer stays alive while it or work
    /// using it does.
    ///
    /// Errors: [`Error::MissingUsage`] without `STORAGE`; [`Error::InvalidParameter`] for an
    /// empty range, `bytes` not a multiple of 4, an `offset` that is not a multiple of
    /// [`DeviceInfo::binding_alignment`], or a buffer that is mapped, destroyed or of another
    /// wgpu backend; [`Error::OutOfBounds`] when the range leaves the buffer;
    /// [`Error::ForeignBuffer`] for a buffer of another wgpu device.
    ///
    /// # Safety
    /// - `buffer` is not destroyed (`Buffer::destroy`) until the work using the range has
    ///   finished (the next synchronize or read after the last use).
    /// - Between an xwarp call that uses the range and that synchronize, wgpu work that
    ///   touches the range is not submitted other than through [`Self::submit_wgpu`], and the
    ///   range is not mapped.
    pub unsafe fn wrap_buffer(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> Result<RawBuffer> {
        let wgpu_usage = buffer.usage();
        if !wgpu_usage.contains(::wgpu::BufferUsages::STORAGE) {
            return Err(Error::MissingUsage {
                usage: "wgpu::BufferUsages::STORAGE",
                operation: "bind it to xwarp's kernels",
            });
        }
        if bytes == 0 || !bytes.is_multiple_of(4) {
            return Err(Error::invalid(
                "bytes",
                bytes,
                "a positive multiple of 4 (wgpu binds storage buffers in 4-byte words)",
            ));
        }
        let size = buffer.size();
        match offset.checked_add(bytes) {
            Some(end) if end <= size => {}
            _ => {
                return Err(Error::OutOfBounds {
                    offset,
                    end: offset.saturating_add(bytes),
                    size,
                })
            }
        }
        let info = self.xw.info();
        // wgpu binds whole 4-byte words.
        let align = info.binding_alignment.max(4);
        if !offset.is_multiple_of(align) {
            return Err(Error::invalid(
                "offset",
                offset,
                format!(
                    "a multiple of {align} (minStorageBufferOffsetAlignment of `{}`, and 4)",
                    info.name
                ),
            ));
        }
        let raw = {
            // SAFETY: the guard lives only in this block and nothing is destroyed through it;
            // the handle is kept alive by the clone of `buffer` the returned range holds.
            let hal = unsafe { buffer.as_hal::<Vulkan>() }.ok_or_else(|| {
                Error::invalid(
                    "buffer",
                    "a destroyed buffer, or one of a device of another wgpu backend",
                    format!("a live buffer of the wgpu device of `{}`", info.name),
                )
            })?;
            // SAFETY: the handle is only passed to xwarp, which never destroys it.
            unsafe { hal.raw_handle() }
        };
        self.initialise(buffer, offset, bytes)?;
        let mut usage = vk::BufferUsageFlags::STORAGE_BUFFER;
        if wgpu_usage.contains(::wgpu::BufferUsages::COPY_SRC) {
            usage |= vk::BufferUsageFlags::TRANSFER_SRC;
        }
        if wgpu_usage.contains(::wgpu::BufferUsages::COPY_DST) {
            usage |= vk::BufferUsageFlags::TRANSFER_DST;
        }
        let external = ExternalBuffer {
            buffer: raw,
            size,
            usage,
        };
        // SAFETY: `raw` is a live buffer of this device (the wgpu pass above bound it on this
        // device) created with at least these usages (wgpu-hal maps STORAGE, COPY_SRC and
        // COPY_DST to exactly these) and bound to memory; the clone of `buffer` keeps it
        // alive as long as the range; wgpu-hal creates buffers with exclusive sharing on its
        // one queue family, which is xwarp's; the caller upholds the rest.
        unsafe {
            self.xw
                .wrap_app_buffer(external, offset, bytes, Some(Box::new(buffer.clone())))
        }
    }

    /// [`Self::wrap_buffer`] of `len` elements of `T` from byte `offset`, typed.
    ///
    /// Errors: as for [`Self::wrap_buffer`]; a buffer too small for `len` elements from
    /// `offset` is [`Error::InvalidParameter`] naming `len` and the most that fit.
    ///
    /// # Safety
    /// As for [`Self::wrap_buffer`].
    pub unsafe fn wrap_vec<T: Element>(
        &self,
        buffer: &::wgpu::Buffer,
        offset: u64,
        len: usize,
    ) -> Result<DeviceVec<T>> {
        let elem = T::KIND.size() as u64;
        let fit = buffer.size().saturating_sub(offset) / elem;
        let bytes = (len as u64)
            .checked_mul(elem)
            .filter(|_| len > 0 && (len as u64) <= fit)
            .ok_or_else(|| {
                Error::invalid(
                    "len",
                    len,
                    format!(
                        "1 to {fit} elements of {} (a {}-byte buffer from byte {offset})",
                        T::KIND,
                        buffer.size()
                    ),
                )
            })?;
        // SAFETY: the caller upholds wrap_buffer's contract.
        let raw = unsafe { self.wrap_buffer(buffer, offset, bytes) }?;
        DeviceVec::from_raw(raw, len)
    }

    /// Makes wgpu initialise bytes `offset..offset + bytes` of `buffer` (from the multiple of
    /// its storage offset alignment below `offset`): binds them in a pass of an empty kernel,
    /// before which wgpu zero-fills what it never wrote, and after which it counts them as
    /// written. The bind groups are made on this device, so a buffer of another is refused
    /// here.
    fn initialise(&self, buffer: &::wgpu::Buffer, offset: u64, bytes: u64) -> Result<()> {
        let limits = self.device.limits();
        let align = u64::from(limits.min_storage_buffer_offset_alignment).max(4);
        let chunk = (limits.max_storage_buffer_binding_size / align * align).max(align);
        let end = offset + bytes;
        let scope = self
            .device
            .push_error_scope(::wgpu::ErrorFilter::Validation);
        let mut init = lock(&self.init);
        let pass = init.get_or_insert_with(|| init_pass(&self.device));
        let mut groups = Vec::new();
        let mut at = offset / align * align;
        while at < end {
            let size = chunk.min(end - at);
            groups.push(self.device.create_bind_group(&::wgpu::BindGroupDescriptor {
                label: Some("xwarp: initialise a wrapped range"),
                layout: &pass.layout,
                entries: &[::wgpu::BindGroupEntry {
                    binding: 0,
                    resource: ::wgpu::BindingResource::Buffer(::wgpu::BufferBinding {
                        buffer,
                        offset: at,
                        size: NonZeroU64::new(size),
                    }),
                }],
            }));
            at += size;
        }
        if let Some(e) = block_on(scope.pop()) {
            return Err(if is_device_mismatch(&e) {
                Error::ForeignBuffer {
                    buffer: "a buffer of another wgpu device".into(),
                    device: format!("the wgpu device of `{}`", self.xw.info().name),
                }
            } else {
                Error::Wgpu {
                    call: "Device::create_bind_group (to initialise a wrapped range)",
                    reason: e.to_string(),
                }
            });
        }
        let scope = self
            .device
            .push_error_scope(::wgpu::ErrorFilter::Validation);
        let mut encoder = self
            .device
            .create_command_encoder(&::wgpu::CommandEncoderDescriptor {
                label: Some("xwarp: initialise a wrapped range"),
            });
        {
            let mut cpass = encoder.begin_compute_pass(&::wgpu::ComputePassDescriptor {
                label: Some("xwarp: initialise a wrapped range"),
                timestamp_writes: None,
            });
            cpass.set_pipeline(&pass.pipeline);
            for group in &groups {
                cpass.set_bind_group(0, group, &[]);
                cpass.dispatch_workgroups(1, 1, 1);
            }
        }
        drop(init);
        let commands = encoder.finish();
        {
            let _queue = lock(&self.queue_lock);
            self.queue.submit([commands]);
        }
        match block_on(scope.pop()) {
            None => Ok(()),
            Some(e) if is_still_mapped(&e) => Err(Error::invalid(
                "buffer",
                "a mapped buffer",
                "an unmapped buffer (Buffer::unmap before handing it to xwarp)",
            )),
            Some(e) => Err(Error::Wgpu {
                call: "Queue::submit",
                reason: e.to_string(),
            }),
        }
    }

    /// Maps the Vulkan names of usages in `e` to wgpu's.
    fn wgpu_names(e: Error) -> Error {
        match e {
            Error::MissingUsage { usage, operation } => Error::MissingUsage {
                usage: match usage {
                    "VK_BUFFER_USAGE_TRANSFER_SRC_BIT" => {
                        "wgpu::BufferUsages::COPY_SRC (VK_BUFFER_USAGE_TRANSFER_SRC_BIT)"
                    }
                    "VK_BUFFER_USAGE_TRANSFER_DST_BIT" => {
                        "wgpu::BufferUsages::COPY_DST (VK_BUFFER_USAGE_TRANSFER_DST_BIT)"
                    }
                    "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT" => {
                        "wgpu::BufferUsages::STORAGE (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)"
                    }
                    other => other,
                },
                operation,
            },
            e => e,
        }
    }
}

/// The empty kernel and the layout of one read-write storage binding.
fn init_pass(device: &::wgpu::Device) -> InitPass {
    let layout = device.create_bind_group_layout(&::wgpu::BindGroupLayoutDescriptor {
        label: Some("xwarp: initialise a wrapped range"),
        entries: &[::wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: ::wgpu::ShaderStages::COMPUTE,
            ty: ::wgpu::BindingType::Buffer {
                ty: ::wgpu::BufferBindingType::Storage { read_only: false },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let module = device.create_shader_module(::wgpu::ShaderModuleDescriptor {
        label: Some("xwarp: initialise a wrapped range"),
        source: ::wgpu::ShaderSource::Wgsl("@compute @workgroup_size(1) fn main() {}".into()),
    });
    let pipeline_layout = device.create_pipeline_layout(&::wgpu::PipelineLayoutDescriptor {
        label: Some("xwarp: initialise a wrapped range"),
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let pipeline = device.create_compute_pipeline(&::wgpu::ComputePipelineDescriptor {
        label: Some("xwarp: initialise a wrapped range"),
        layout: Some(&pipeline_layout),
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    InitPass { layout, pipeline }
}

/// Whether a validation error of wgpu's has a cause for which `matches` holds.
fn caused_by(
    e: &::wgpu::Error,
    matches: impl Fn(&(dyn std::error::Error + 'static)) -> bool,
) -> bool {
    let ::wgpu::Error::Validation { source, .. } = e else {
        return false;
    };
    let mut at: Option<&(dyn std::error::Error + 'static)> = Some(source.as_ref());
    while let Some(err) = at {
        if matches(err) {
            return true;
        }
        at = err.source();
    }
    false
}

/// Whether wgpu refused a resource for belonging to another device.
fn is_device_mismatch(e: &::wgpu::Error) -> bool {
    use ::wgpu::wgc::binding_model::CreateBindGroupError;
    use ::wgpu::wgc::device::{DeviceError, DeviceMismatch};
    caused_by(e, |err| {
        err.is::<DeviceMismatch>()
            || matches!(
                err.downcast_ref::<DeviceError>(),
                Some(DeviceError::DeviceMismatch(_))
            )
            || matches!(
                err.downcast_ref::<CreateBindGroupError>(),
                Some(CreateBindGroupError::Device(DeviceError::DeviceMismatch(_)))
            )
    })
}

/// Whether wgpu refused a submit for using a mapped buffer.
fn is_still_mapped(e: &::wgpu::Error) -> bool {
    use ::wgpu::wgc::device::queue::QueueSubmitError;
    caused_by(e, |err| {
        matches!(
            err.downcast_ref::<QueueSubmitError>(),
            Some(QueueSubmitError::BufferStillMapped(_))
        )
    })
}

/// Runs a future that wgpu's native backends resolve at once (error scopes) to its end.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

impl Device for WgpuXwarp {
    fn info(&self) -> &DeviceInfo {
        self.xw.info()
    }

    fn id(&self) -> DeviceId {
        self.xw.id()
    }

    fn alloc(&self, bytes: u64) -> Result<RawBuffer> {
        self.xw.alloc(bytes)
    }

    fn window(&self, raw: &RawBuffer, offset: u64, bytes: u64) -> Result<RawBuffer> {
        self.xw.window(raw, offset, bytes)
    }

    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        self.xw.write(dst, offset, src).map_err(Self::wgpu_names)
    }

    fn copy(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        self.xw
            .copy(src, src_offset, dst, dst_offset, bytes)
            .map_err(Self::wgpu_names)
    }

    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.submit_wgpu_writes();
        self.xw.read(src, offset, dst).map_err(Self::wgpu_names)
    }

    fn launch(&self, launch: &Launch<'_>) -> Result<()> {
        self.xw.launch(launch).map_err(Self::wgpu_names)
    }

    fn indirect_launches(&self) -> bool {
        self.xw.indirect_launches()
    }

    fn launch_then_indirect(
        &self,
        first: &Launch<'_>,
        then: &Launch<'_>,
        args: Binding<'_>,
    ) -> Result<()> {
        self.xw
            .launch_then_indirect(first, then, args)
            .map_err(Self::wgpu_names)
    }

    fn synchronize(&self) -> Result<()> {
        if self.xw.has_recorded_work() {
            self.submit_wgpu_writes();
        }
        self.xw.synchronize()
    }

    fn submit(&self) -> Result<Ticket> {
        if self.xw.has_recorded_work() {
            self.submit_wgpu_writes();
        }
        self.xw.submit()
    }

    fn wait(&self, ticket: Ticket) -> Result<()> {
        self.xw.wait(ticket)
    }

    fn is_done(&self, ticket: Ticket) -> Result<bool> {
        self.xw.is_done(ticket)
    }

    fn record(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Recording> {
        self.xw.record(work)
    }

    fn replay(&self, recording: &Recording) -> Result<Ticket> {
        // wgpu's held-back writes to the recording's buffers go first.
        self.submit_wgpu_writes();
        self.xw.replay(recording)
    }

    fn counters(&self) -> Option<&RawBuffer> {
        self.xw.counters()
    }

    fn epochs(&self) -> Option<&RawBuffer> {
        self.xw.epochs()
    }

    fn counter_slot(&self, bytes: u64) -> Option<&RawBuffer> {
        self.xw.counter_slot(bytes)
    }

    fn diagnostics(&self) -> Vec<String> {
        self.xw.diagnostics()
    }

    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        self.submit_wgpu_writes();
        self.xw.time(work)
    }

    fn time_launches(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<LaunchTimes> {
        self.submit_wgpu_writes();
        self.xw.time_launches(work)
    }

    fn fill_words(&self, dst: &RawBuffer, offset: u64, bytes: u64, word: u32) -> Result<()> {
        self.xw
            .fill_words(dst, offset, bytes, word)
            .map_err(Self::wgpu_names)
    }

    fn memory_usage(&self) -> Option<MemoryUsage> {
        self.xw.memory_usage()
    }

    fn kernel_stats(&self) -> Vec<KernelStats> {
        self.xw.kernel_stats()
    }
}

impl Drop for WgpuXwarp {
    fn drop(&mut self) {
        // Dropping the Vulkan device submits what xwarp recorded: wgpu's held-back writes go
        // first, as at every xwarp submit.
        if self.xw.has_recorded_work() {
            self.submit_wgpu_writes();
        }
    }
}
