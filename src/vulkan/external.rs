//! Running on an application's Vulkan device: what it must enable, opening the backend on its
//! instance, device and queue, and borrowing ranges of its buffers.

use super::instance::{lifecycle, Instance};
use super::memory::{Core, VkBuffer};
use super::probe::{compute_family, probe, Denorms, Probe, PORTABILITY_SUBSET};
use super::{SubnormalMode, VulkanDevice};
#[cfg(doc)]
use crate::device::{Device, DeviceInfo};
use crate::device::{DeviceVec, RawBuffer, SubgroupFeatures};
use crate::element::Element;
use crate::error::{Error, Result};
use ash::vk;
use std::any::Any;
use std::ffi::{CStr, CString};
use std::fmt;
use std::sync::{Arc, Mutex};

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
    /// `vulkanMemoryModel` together with `vulkanMemoryModelDeviceScope`
    /// (`VkPhysicalDeviceVulkanMemoryModelFeatures` or `VkPhysicalDeviceVulkan12Features`;
    /// Vulkan 1.2): the reduction ladder's in-place rungs then keep their scratch buffer
    /// coherent within the workgroup only, as CUDA does, which is faster than the device-wide
    /// coherence they use without it (see [`DeviceInfo::workgroup_coherence`]). Enable both or
    /// neither: with `vulkanMemoryModel` alone no shader may use device scope, which xwarp's
    /// other kernels do.
    pub vulkan_memory_model: bool,
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
    /// `shaderBufferInt64Atomics`, `vulkanMemoryModel` where supported); without the first two
    /// the kernels of those types are refused with [`Error::MissingFeature`], without the third
    /// the device scan takes its slower 32-bit tile state, without the fourth the reduction
    /// ladder's in-place rungs their slower device-wide coherence.
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
            vulkan_memory_model: self.required.vulkan_memory_model
                || self.optional.vulkan_memory_model,
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
    /// What keeps the application's buffer alive while the range is in use, where the
    /// application hands that over (a clone of a wgpu buffer).
    _keep: Option<Box<dyn Any + Send + Sync>>,
}

/// What a command needs of a [`RawBuffer`]: the handle, where the RawBuffer's byte 0 lies in
/// it, and the usages it was created with.
#[derive(Clone, Copy)]
pub(super) struct Target {
    pub(super) buffer: vk::Buffer,
    pub(super) base: u64,
    pub(super) usage: vk::BufferUsageFlags,
}

impl Target {
    pub(super) fn require(
        self,
        usage: vk::BufferUsageFlags,
        operation: &'static str,
    ) -> Result<Self> {
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
            vulkan_memory_model: p.memory_model && api >= vk::API_VERSION_1_2,
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
    /// goes out with xwarp's first submit, and a 64 KiB host-visible staging buffer for small
    /// reads and writes), and destroys only those. Dropping the returned
    /// device waits for xwarp's own submitted work (its fence), never for the device or queue
    /// as a whole.
    ///
    /// Before it returns, it runs the self-test every xwarp device runs at open (one small
    /// submit on `queue`, waited for; skipped when this process already tested the same
    /// device and driver): a device whose subgroups are not what its driver claims is refused
    /// with [`Error::SelfTestFailed`]. Its float kernels treat subnormals as
    /// [`SUBNORMALS_ENV`](super::SUBNORMALS_ENV) says (an invalid value is
    /// [`Error::InvalidParameter`]; unset, they are kept on every device).
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
        // SAFETY: the caller upholds this function's contract.
        unsafe { Self::open_external(ext, None) }
    }

    /// [`Self::from_external`], keeping `keep` alive until every object xwarp made on the
    /// device (its own, buffers included) is gone.
    ///
    /// # Safety
    /// As for [`Self::from_external`].
    pub(super) unsafe fn open_external(
        ext: ExternalVulkan,
        keep: Option<Box<dyn Any + Send + Sync>>,
    ) -> Result<Self> {
        let subnormals = SubnormalMode::from_env()?;
        let _guard = lifecycle();
        let inst = Arc::new(Instance {
            entry: ext.entry,
            instance: ext.instance,
            debug: None,
            messages: Box::new(Mutex::new(Vec::new())),
            owned: false,
            sync_validation: false,
            _keep: keep,
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
        // The Vulkan memory model as a 1.2 feature: the instance must ask for 1.2 as well.
        p.memory_model =
            p.memory_model && on.vulkan_memory_model && ext.api_version >= vk::API_VERSION_1_2;
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
        // The application's device may not have hostQueryReset on: queries are reset in the
        // command buffer there.
        p.host_query_reset = false;
        // Nor pipelineRobustness: its pipelines keep the driver's default bounds checks.
        p.pipeline_robustness = false;
        p.info.int64 = p.int64;
        p.info.float64 = p.float64;
        p.info.int64_atomics = p.atomic64;
        p.info.workgroup_coherence = p.memory_model;
        p.info.driver.push_str(", application's device");
        let core = Core::new(&inst, ext.device, pd, &p.info.name, false)?;
        Self::attach(
            core,
            ext.queue,
            family,
            &p,
            (true, ext.queue_lock),
            subnormals,
        )
    }

    /// Whether this device runs on an application's Vulkan device ([`Self::from_external`]).
    pub fn is_external(&self) -> bool {
        self.external
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
    /// - `buffer` shares no memory with another buffer given to xwarp (two buffers bound to
    ///   overlapping memory): xwarp orders its commands by the buffers and ranges they read
    ///   and write, and would let work on one run beside work on the other. Ranges of the
    ///   same buffer are ordered correctly, however they overlap.
    /// - A buffer created with `VK_SHARING_MODE_EXCLUSIVE` is owned by the queue family xwarp
    ///   submits to ([`Self::queue_family`]): the application released and acquired it if it
    ///   used it on another family.
    pub unsafe fn wrap_buffer(
        &self,
        buffer: ExternalBuffer,
        offset: u64,
        bytes: u64,
    ) -> Result<RawBuffer> {
        // SAFETY: the caller upholds this function's contract.
        unsafe { self.wrap_app_buffer(buffer, offset, bytes, None) }
    }

    /// [`Self::wrap_buffer`], keeping `keep` alive as long as the returned buffer (and the work
    /// using it).
    ///
    /// # Safety
    /// As for [`Self::wrap_buffer`].
    pub(super) unsafe fn wrap_app_buffer(
        &self,
        buffer: ExternalBuffer,
        offset: u64,
        bytes: u64,
        keep: Option<Box<dyn Any + Send + Sync>>,
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
        if !offset.is_multiple_of(self.info.binding_alignment) {
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
                _keep: keep,
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

    /// [`Device::window`]: the range as a borrowed range of the same buffer that keeps `raw`
    /// alive.
    pub(super) fn window_of(&self, raw: &RawBuffer, offset: u64, bytes: u64) -> Result<RawBuffer> {
        let t = self.target(raw)?;
        raw.check_window(offset, bytes, self.info.binding_alignment)?;
        Ok(RawBuffer::new(
            Arc::new(AppBuffer {
                buffer: t.buffer,
                base: t.base + offset,
                usage: t.usage,
                _keep: Some(Box::new(raw.keep_alive())),
            }),
            bytes,
            self.id,
            &format!("{} (window)", self.info.name),
        ))
    }

    /// The handle, base offset and usages behind `raw`, if it belongs to this device.
    pub(super) fn target(&self, raw: &RawBuffer) -> Result<Target> {
        match raw.downcast::<VkBuffer>(self.id, &self.info.name) {
            Ok(b) => Ok(Target {
                buffer: b.buffer,
                base: 0,
                usage: vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST
                    | vk::BufferUsageFlags::INDIRECT_BUFFER,
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
