//! Probing physical devices (what each offers xwarp), listing them, choosing one and creating
//! the logical device on it.

use super::instance::{lifecycle, unavailable, Instance};
use super::memory::Core;
use super::{SubnormalMode, VulkanDevice};
#[cfg(doc)]
use crate::device::Device;
use crate::device::DeviceSelector;
use crate::device::{BackendKind, DeviceInfo, DeviceType, SubgroupFeatures, Subnormals};
use crate::error::{Error, Result};
use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;

/// Must be enabled on devices that offer it (the specification's rule for non-conformant
/// implementations such as MoltenVK).
pub(super) const PORTABILITY_SUBSET: &CStr = c"VK_KHR_portability_subset";

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
    /// How the float kernels treat subnormals; `None` takes it from
    /// [`SUBNORMALS_ENV`](super::SUBNORMALS_ENV) (default [`SubnormalMode::Auto`]: kept on
    /// every device, by the kernels where the driver flushes them).
    pub subnormals: Option<SubnormalMode>,
}

/// Facts read from one physical device, and what the backend enables on it.
pub(super) struct Probe {
    pub(super) info: DeviceInfo,
    pub(super) api: u32,
    pub(super) size_control: bool,
    pub(super) size_control_ext: bool,
    pub(super) portability_subset: bool,
    pub(super) int64: bool,
    pub(super) float64: bool,
    /// `shaderBufferInt64Atomics` (with `shaderInt64`; Vulkan 1.2 devices).
    pub(super) atomic64: bool,
    /// `vulkanMemoryModel` (Vulkan 1.2): the ladder's `_vmm` variants may run.
    pub(super) memory_model: bool,
    /// `VK_KHR_pipeline_executable_properties` with `pipelineExecutableInfo`: pipelines are
    /// created capturing the compiler's statistics, for [`Device::kernel_stats`].
    pub(super) executable_stats: bool,
    /// `hostQueryReset` (Vulkan 1.2): the timer resets its queries from the host, outside the
    /// timed span (1.4 µs less GPU time a span on an H100's compute queue, NOTES.md version 17).
    pub(super) host_query_reset: bool,
    /// `VK_EXT_pipeline_robustness` with `pipelineRobustness`: pipelines ask for no bounds
    /// checks on storage and uniform buffers (every kernel keeps its accesses in bounds itself;
    /// a driver's default may check each access, e.g. NVIDIA's).
    pub(super) pipeline_robustness: bool,
    pub(super) max_block: u32,
    pub(super) max_workgroup_subgroups: u32,
    pub(super) timestamp_period: f32,
    /// Float controls: which widths' subnormals the driver keeps where a kernel asks.
    pub(super) denorms: Denorms,
    /// `VK_KHR_shader_float_controls` must be enabled (before Vulkan 1.2) for `denorms`.
    pub(super) float_controls_ext: bool,
    /// For the self-test's cache: what identifies the device and its driver.
    pub(super) device_id: u32,
    pub(super) driver_version: u32,
    pub(super) uuid: [u8; 16],
}

/// What a device's float controls allow xwarp to ask of subnormals
/// (`VkPhysicalDeviceFloatControlsProperties`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Denorms {
    /// `shaderDenormPreserveFloat32`.
    pub(super) f32: bool,
    /// `shaderDenormPreserveFloat64`.
    pub(super) f64: bool,
    /// `denormBehaviorIndependence`.
    pub(super) independence: vk::ShaderFloatControlsIndependence,
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
    pub(super) fn widths(self, used: &[u32]) -> Vec<u32> {
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

pub(super) fn probe(i: &ash::Instance, pd: vk::PhysicalDevice, index: usize) -> Probe {
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
        // The device's multiprocessors, where the driver names them (DeviceInfo::compute_units).
        let mut sm = vk::PhysicalDeviceShaderSMBuiltinsPropertiesNV::default();
        let sm_known = has_ext(ash::nv::shader_sm_builtins::NAME);
        let mut amd = vk::PhysicalDeviceShaderCorePropertiesAMD::default();
        let amd_known = has_ext(ash::amd::shader_core_properties::NAME);
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sub);
        if sm_known {
            p2 = p2.push_next(&mut sm);
        }
        if amd_known {
            p2 = p2.push_next(&mut amd);
        }
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
        let mut vmmf = vk::PhysicalDeviceVulkanMemoryModelFeatures::default();
        let mut hqrf = vk::PhysicalDeviceHostQueryResetFeatures::default();
        let executable_ext = has_ext(ash::khr::pipeline_executable_properties::NAME);
        let robustness_ext = has_ext(ash::ext::pipeline_robustness::NAME);
        let mut prf = vk::PhysicalDevicePipelineRobustnessFeaturesEXT::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default();
        if size_control_known {
            f2 = f2.push_next(&mut sscf);
        }
        if api >= vk::API_VERSION_1_2 {
            f2 = f2
                .push_next(&mut a64f)
                .push_next(&mut vmmf)
                .push_next(&mut hqrf);
        }
        if executable_ext {
            f2 = f2.push_next(&mut pexf);
        }
        if robustness_ext {
            f2 = f2.push_next(&mut prf);
        }
        i.get_physical_device_features2(pd, &mut f2);
        let features = f2.features;
        let atomic64 = features.shader_int64 == vk::TRUE
            && a64f.shader_buffer_int64_atomics == vk::TRUE
            && api >= vk::API_VERSION_1_2;
        // With vulkanMemoryModel on, a shader under the GLSL memory model may no longer use Device
        // scope (its `coherent` buffers and buffer barriers do) unless
        // vulkanMemoryModelDeviceScope is on as well: the model is used only with both.
        let memory_model = vmmf.vulkan_memory_model == vk::TRUE
            && vmmf.vulkan_memory_model_device_scope == vk::TRUE
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
        let compute_units = if sm_known {
            sm.shader_sm_count
        } else if amd_known {
            amd.shader_engine_count
                .saturating_mul(amd.shader_arrays_per_engine_count)
                .saturating_mul(amd.compute_units_per_shader_array)
        } else {
            0
        };
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
                max_shared_memory_bytes: limits.max_compute_shared_memory_size,
                unit_shared_memory_bytes: 0,
                compute_units,
                max_block: limits.max_compute_work_group_size[0]
                    .min(limits.max_compute_work_group_invocations),
                int64: features.shader_int64 == vk::TRUE,
                float64: features.shader_float64 == vk::TRUE,
                int64_atomics: atomic64,
                workgroup_coherence: memory_model,
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
            memory_model,
            executable_stats: executable_ext && pexf.pipeline_executable_info == vk::TRUE,
            host_query_reset: hqrf.host_query_reset == vk::TRUE && api >= vk::API_VERSION_1_2,
            pipeline_robustness: robustness_ext && prf.pipeline_robustness == vk::TRUE,
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
pub(super) fn compute_family(i: &ash::Instance, pd: vk::PhysicalDevice) -> Option<(u32, u32)> {
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

impl VulkanDevice {
    /// Opens a device: the one `opts.device` selects, else the best one.
    pub fn new(opts: &VulkanOptions) -> Result<Self> {
        let subnormals = match opts.subnormals {
            Some(mode) => mode,
            None => SubnormalMode::from_env()?,
        };
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
        Self::open(inst.clone(), pds[p.info.index], p, subnormals)
    }

    fn open(
        inst: Arc<Instance>,
        pd: vk::PhysicalDevice,
        p: &Probe,
        subnormals: SubnormalMode,
    ) -> Result<Self> {
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
        if p.pipeline_robustness {
            ext_names.push(ash::ext::pipeline_robustness::NAME.as_ptr());
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
        let mut vmmf = vk::PhysicalDeviceVulkanMemoryModelFeatures::default()
            .vulkan_memory_model(true)
            .vulkan_memory_model_device_scope(true);
        if p.memory_model {
            info = info.push_next(&mut vmmf);
        }
        let mut hqrf = vk::PhysicalDeviceHostQueryResetFeatures::default().host_query_reset(true);
        if p.host_query_reset {
            info = info.push_next(&mut hqrf);
        }
        let mut prf =
            vk::PhysicalDevicePipelineRobustnessFeaturesEXT::default().pipeline_robustness(true);
        if p.pipeline_robustness {
            info = info.push_next(&mut prf);
        }
        // SAFETY: the create info and its chain live until the call returns; only features
        // and extensions the probe found supported are enabled.
        let device =
            unsafe { i.create_device(pd, &info, None) }.map_err(Error::vk("vkCreateDevice"))?;
        let core = Core::new(&inst, device, pd, &p.info.name, true)?;
        // SAFETY: the queue family and index were requested at device creation.
        let queue = unsafe { core.device.get_device_queue(family.0, 0) };
        Self::attach(core, queue, family, p, (false, None), subnormals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
