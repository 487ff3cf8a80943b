//! Pipelines and descriptors: layouts, shader modules (with the float modes the device
//! offers added to their SPIR-V), compute pipelines, descriptor sets, recording launches, and
//! the compiler's statistics of each pipeline.

use super::external::Target;
use super::instance::lock;
use super::spirv;
use super::stream::{Access, Stream};
use super::VulkanDevice;
#[cfg(doc)]
use super::VulkanFeatures;
use crate::device::{
    check_launch, kernel_label, Binding, KernelStats, Launch, LaunchLimits, MAX_PARAMS,
};
#[cfg(doc)]
use crate::device::{Device, DeviceInfo};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use ash::vk;
use std::any::Any;
use std::ffi::CStr;
use std::sync::Arc;

include!(concat!(env!("OUT_DIR"), "/shaders.rs"));

/// Descriptor sets per pool; pools are added as needed and reset after each submit.
const SETS_PER_POOL: u32 = 256;
/// Most bindings a launch may carry; descriptor pools are sized for it.
const MAX_BINDINGS: u32 = 8;

#[derive(Hash, PartialEq, Eq, Clone)]
pub(super) struct PipelineKey {
    name: &'static str,
    variant: &'static str,
    block: u32,
    consts: Vec<(&'static str, u32)>,
}

pub(super) struct Layout {
    pub(super) set: vk::DescriptorSetLayout,
    pub(super) pipeline: vk::PipelineLayout,
}

/// The variant of an integer kernel compiled under the Vulkan memory model (see
/// `MEMORY_MODEL_VARIANTS` in `crate::kernels`).
fn memory_model_variant(elem: ElemKind) -> Option<&'static str> {
    match elem {
        ElemKind::I32 => Some("i32_vmm"),
        ElemKind::U32 => Some("u32_vmm"),
        ElemKind::I64 => Some("i64_vmm"),
        ElemKind::U64 => Some("u64_vmm"),
        _ => None,
    }
}

/// The variant of a bit-container kernel for devices with `shaderInt64` (see
/// `INT64_BIT_VARIANTS` in `crate::kernels`).
fn int64_bits_variant(elem: ElemKind) -> Option<&'static str> {
    (elem.size() == 8).then_some("b64_int64")
}

impl VulkanDevice {
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
    ) -> Result<(
        vk::Pipeline,
        vk::PipelineLayout,
        vk::DescriptorSetLayout,
        spirv::BindingUse,
    )> {
        let k = &launch.kernel;
        // A float kernel's treatment of subnormals is the device's, chosen at open: its
        // variant for the element type where the kernel has one. Under the Vulkan memory
        // model, a kernel's `_vmm` variant where it has one; with `shaderInt64`, a bit
        // container's `_int64` variant where it has one.
        let (variant, spirv) = self
            .float_variant(k.elem)
            .and_then(|v| find_shader(k.name, v))
            .or_else(|| {
                memory_model_variant(k.elem)
                    .filter(|_| self.info.workgroup_coherence)
                    .and_then(|v| find_shader(k.name, v))
            })
            .or_else(|| find_shader(k.name, k.elem.name()))
            .or_else(|| {
                int64_bits_variant(k.elem)
                    .filter(|_| self.info.int64)
                    .and_then(|v| find_shader(k.name, v))
            })
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
        if let Some(&(p, uses)) = pipelines.get(&key) {
            return Ok((p, layout, set_layout, uses));
        }
        let d = &self.core.device;
        let (module, uses) = {
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
                    let entry = (m, spirv::binding_use(&words));
                    modules.insert((k.name, variant), entry);
                    entry
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
        // Every kernel keeps its buffer accesses in bounds itself (the CUDA twins have no
        // other guard, and the tests run them under compute-sanitizer); a driver whose default
        // checks each access (NVIDIA's: two instructions a load or store) is told not to,
        // where it was measured faster (`tuning::vulkan_unchecked_buffers`).
        // The others ask for the checks by name (robustBufferAccess's behaviour, which every
        // device supports): with pipelineRobustness enabled, a pipeline that names none may
        // get another default.
        let buffers = if crate::tuning::vulkan_unchecked_buffers(k.name, k.elem, k.consts) {
            vk::PipelineRobustnessBufferBehaviorEXT::DISABLED
        } else {
            vk::PipelineRobustnessBufferBehaviorEXT::ROBUST_BUFFER_ACCESS
        };
        let mut robustness = vk::PipelineRobustnessCreateInfoEXT::default()
            .storage_buffers(buffers)
            .uniform_buffers(buffers)
            .vertex_inputs(vk::PipelineRobustnessBufferBehaviorEXT::DEVICE_DEFAULT)
            .images(vk::PipelineRobustnessImageBehaviorEXT::DEVICE_DEFAULT);
        let mut info = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(layout);
        if self.no_robustness {
            info = info.push_next(&mut robustness);
        }
        // SAFETY: module, layout and specialization data are alive for the call.
        let p = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) }
            .map_err(|(_, e)| Error::vk("vkCreateComputePipelines")(e))?[0];
        pipelines.insert(key, (p, uses));
        Ok((p, layout, set_layout, uses))
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

    /// What this device allows of a launch beyond its [`DeviceInfo`], for [`check_launch`].
    fn launch_limits(&self) -> LaunchLimits {
        LaunchLimits {
            max_block: self.max_block,
            // With full subgroups required, the workgroup must hold whole subgroups of the
            // largest size the device may pick.
            subgroup: if self.size_control {
                self.info.max_subgroup_size
            } else {
                self.info.subgroup_size
            },
            max_bindings: MAX_BINDINGS as usize,
        }
    }

    /// [`Device::launch`]: binds the buffers and parameters and records the dispatch.
    pub(super) fn record_launch(&self, launch: &Launch<'_>) -> Result<()> {
        self.record_dispatch(launch, None)
    }

    /// [`Device::launch_then_indirect`]: `first`, then `then` with its workgroup counts read by
    /// the GPU from `args`, recorded under one hold of the stream so that no other thread's
    /// work comes between them.
    pub(super) fn record_launch_then_indirect(
        &self,
        first: &Launch<'_>,
        then: &Launch<'_>,
        args: Binding<'_>,
    ) -> Result<()> {
        args.buffer.check_range(args.offset, 12)?;
        if !args.offset.is_multiple_of(4) {
            return Err(Error::invalid(
                "args.offset",
                args.offset,
                "a multiple of 4 bytes",
            ));
        }
        let a = self.prepare(first, None)?;
        let b = self.prepare(then, Some(args))?;
        let mut s = self.stream_lock();
        self.record_prepared(&mut s, first, a)?;
        self.record_prepared(&mut s, then, b)
    }

    /// Records `launch`, directly or with its workgroup counts at `indirect`.
    fn record_dispatch(&self, launch: &Launch<'_>, indirect: Option<Binding<'_>>) -> Result<()> {
        let prepared = self.prepare(launch, indirect)?;
        let mut s = self.stream_lock();
        self.record_prepared(&mut s, launch, prepared)
    }

    /// What recording `launch` needs before it takes the stream: the launch checked, its
    /// buffers' targets, its pipeline, and the target of `indirect`'s workgroup counts.
    fn prepare(&self, launch: &Launch<'_>, indirect: Option<Binding<'_>>) -> Result<Prepared> {
        check_launch(&self.info, &self.launch_limits(), launch)?;
        let args = indirect
            .map(|a| {
                let target = self.target(a.buffer)?;
                if !target.usage.contains(vk::BufferUsageFlags::INDIRECT_BUFFER) {
                    return Err(Error::MissingUsage {
                        usage: "INDIRECT_BUFFER",
                        operation: "read a launch's workgroup counts from it",
                    });
                }
                Ok((target, a.offset, a.buffer.keep_alive()))
            })
            .transpose()?;
        let buffers = launch
            .bindings
            .iter()
            .map(|b| self.target(b.buffer))
            .collect::<Result<Vec<_>>>()?;
        Ok(Prepared {
            args,
            buffers,
            pipeline: self.pipeline(launch)?,
        })
    }

    /// Records a prepared launch into the held stream `s`.
    fn record_prepared(&self, s: &mut Stream, launch: &Launch<'_>, p: Prepared) -> Result<()> {
        let Prepared {
            args,
            buffers,
            pipeline: (pipeline, layout, set_layout, uses),
        } = p;
        let set = self.descriptor_set(s, set_layout)?;
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
        let mut accesses: Vec<Access> = launch
            .bindings
            .iter()
            .zip(&buffers)
            .enumerate()
            .filter(|(i, _)| uses.uses(*i))
            .map(|(i, (b, vb))| Access::new(vb.buffer, vb.base + b.offset, b.bytes, uses.writes(i)))
            .collect();
        match &args {
            Some((vb, offset, _)) => {
                accesses.push(Access::new(vb.buffer, vb.base + offset, 12, false));
                self.begin_indirect(s, &accesses)?;
            }
            None => self.begin(s, &accesses)?,
        }
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
            match &args {
                Some((vb, offset, _)) => {
                    d.cmd_dispatch_indirect(s.cmd, vb.buffer, vb.base + offset)
                }
                None => d.cmd_dispatch(s.cmd, launch.groups[0], launch.groups[1], 1),
            }
        }
        for b in launch.bindings {
            s.keep.push(b.buffer.keep_alive());
        }
        if let Some((_, _, keep)) = args {
            s.keep.push(keep);
        }
        self.stamp(s, launch.kernel.name);
        Ok(())
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

    /// [`Device::kernel_stats`]: the statistics of every pipeline created so far.
    pub(super) fn kernel_statistics(&self) -> Vec<KernelStats> {
        let Some(ext) = &self.executable_properties else {
            return Vec::new();
        };
        // Pipelines are destroyed only when the device drops, so the lock is not needed while
        // they are queried.
        let mut pipelines: Vec<(PipelineKey, vk::Pipeline)> = lock(&self.pipelines)
            .iter()
            .map(|(k, &(p, _))| (k.clone(), p))
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

/// A launch ready to record ([`VulkanDevice::prepare`]).
struct Prepared {
    /// The indirect launch's workgroup counts: their buffer, offset, and what keeps it alive.
    args: Option<(Target, u64, Arc<dyn Any + Send + Sync>)>,
    buffers: Vec<Target>,
    /// The pipeline, its layout, its set's layout and the bindings it uses ([`VulkanDevice::pipeline`]).
    pipeline: (
        vk::Pipeline,
        vk::PipelineLayout,
        vk::DescriptorSetLayout,
        spirv::BindingUse,
    ),
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

    /// Every shader the build compiled: its bindings as `BindingUse` reads them.
    #[test]
    fn bindings_of_real_shaders_are_read() {
        let words = |name: &str, variant: &str| {
            let (_, bytes) = find_shader(name, variant).unwrap();
            ash::util::read_spv(&mut std::io::Cursor::new(bytes)).unwrap()
        };
        // scan_device: src (0) readonly, dst (1) writeonly, the counters and tile states (2,
        // 3) coherent; the module, optimised, has no variable for the buffers it never touches
        // (4, 5: the values sit in the states' words).
        let scan = spirv::binding_use(&words("scan_device", "i32"));
        assert_ne!(scan, spirv::BindingUse::ALL);
        assert!(scan.uses(0) && !scan.writes(0));
        for b in 1..=3 {
            assert!(scan.uses(b) && scan.writes(b), "binding {b}");
        }
        for b in 4..=6 {
            assert!(!scan.uses(b) && !scan.writes(b), "binding {b}");
        }
        // Every module of the build is understood.
        for &(name, variant, _) in SHADERS {
            let u = spirv::binding_use(&words(name, variant));
            assert_ne!(u, spirv::BindingUse::ALL, "{name} {variant}");
            assert_eq!(u.written & !u.declared, 0, "{name} {variant}");
        }
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
