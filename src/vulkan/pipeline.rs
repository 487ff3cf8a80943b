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

/// What recording a launch needs of its kernel: the pipeline, its layouts, the bindings it
/// uses and the bytes of push constants it declares.
#[derive(Clone, Copy)]
pub(super) struct Pipeline {
    pub(super) pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    uses: spirv::BindingUse,
    /// What a launch pushes: the kernel's push constants ([`spirv::push_constant_bytes`]),
    /// or [`MAX_PARAMS`] where the module's block was not read.
    push_bytes: u32,
}

/// A launch's kernel as the launch names it (before its SPIR-V variant is chosen), and the
/// pipeline it was found to run: the launches after the first of each find it here without
/// choosing the variant, checking the constants or building a key again.
pub(super) struct KnownLaunch {
    name: &'static str,
    elem: ElemKind,
    block: u32,
    consts: Box<[(&'static str, u32)]>,
    pipeline: Pipeline,
}

impl KnownLaunch {
    fn matches(&self, launch: &Launch<'_>) -> bool {
        let k = &launch.kernel;
        self.name == k.name
            && self.elem == k.elem
            && self.block == launch.block
            && *self.consts == *k.consts
    }
}

/// [`KnownLaunch`]es by [`launch_hash`] (a list each, for the rare hashes two launches share).
pub(super) type KnownLaunches =
    std::collections::HashMap<u64, Vec<KnownLaunch>, std::hash::BuildHasherDefault<PassThrough>>;

/// The hasher of [`KnownLaunches`], whose keys are hashes already: it keeps the one `u64`.
#[derive(Default)]
pub(super) struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x;
    }
}

/// A hash of what names a launch's kernel (name, element type, workgroup size, constants),
/// FNV-1a over words: the names by where they lie (their `&'static str`'s address and length),
/// not their text. The same name at another address hashes apart and is found again by
/// [`KnownLaunch::matches`], which compares text: a second entry, never a wrong pipeline.
fn launch_hash(launch: &Launch<'_>) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |word: u64| h = (h ^ word).wrapping_mul(PRIME);
    let mut eat_str = |s: &str| {
        eat(s.as_ptr() as u64);
        eat(s.len() as u64);
    };
    let k = &launch.kernel;
    eat_str(k.name);
    eat(k.elem as u64);
    eat(u64::from(launch.block));
    for (name, value) in k.consts {
        eat(name.as_ptr() as u64 ^ (name.len() as u64) << 48);
        eat(u64::from(*value));
    }
    h
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

    fn pipeline(&self, launch: &Launch<'_>) -> Result<Pipeline> {
        let hash = launch_hash(launch);
        if let Some(known) = lock(&self.launches)
            .get(&hash)
            .and_then(|list| list.iter().find(|l| l.matches(launch)))
        {
            return Ok(known.pipeline);
        }
        let pipeline = self.build_pipeline(launch)?;
        let k = &launch.kernel;
        lock(&self.launches)
            .entry(hash)
            .or_default()
            .push(KnownLaunch {
                name: k.name,
                elem: k.elem,
                block: launch.block,
                consts: k.consts.into(),
                pipeline,
            });
        Ok(pipeline)
    }

    /// [`Self::pipeline`] of a launch not seen before: its variant chosen, its module and
    /// pipeline found or created.
    fn build_pipeline(&self, launch: &Launch<'_>) -> Result<Pipeline> {
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
        if let Some(&known) = pipelines.get(&key) {
            return Ok(known);
        }
        let d = &self.core.device;
        let (module, uses, push_bytes) = {
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
                    let push_bytes = spirv::push_constant_bytes(&words)
                        .filter(|&b| b as usize <= MAX_PARAMS)
                        .unwrap_or(MAX_PARAMS as u32);
                    let entry = (m, spirv::binding_use(&words), push_bytes);
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
        let made = Pipeline {
            pipeline: p,
            layout,
            set_layout,
            uses,
            push_bytes,
        };
        pipelines.insert(key, made);
        Ok(made)
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
        let mut buffers = [None; MAX_BINDINGS as usize];
        for (slot, b) in buffers.iter_mut().zip(launch.bindings) {
            *slot = Some(self.target(b.buffer)?);
        }
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
            pipeline: pipe,
        } = p;
        // At most MAX_BINDINGS bindings (`check_launch`), each with its target.
        let bound = || {
            launch
                .bindings
                .iter()
                .zip(buffers.iter().flatten())
                .enumerate()
        };
        let set = self.descriptor_set(s, pipe.set_layout)?;
        let mut infos = [vk::DescriptorBufferInfo::default(); MAX_BINDINGS as usize];
        for (i, (b, vb)) in bound() {
            infos[i] = vk::DescriptorBufferInfo::default()
                .buffer(vb.buffer)
                .offset(vb.base + b.offset)
                .range(b.bytes);
        }
        let n = launch.bindings.len();
        let mut writes = [vk::WriteDescriptorSet::default(); MAX_BINDINGS as usize];
        for (i, w) in writes[..n].iter_mut().enumerate() {
            *w = vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(i as u32)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(std::slice::from_ref(&infos[i]));
        }
        let mut params = [0u8; MAX_PARAMS];
        params[..launch.params.len()].copy_from_slice(launch.params);
        // The bindings the kernel uses, and the indirect launch's counts.
        let mut accesses =
            [Access::new(vk::Buffer::null(), 0, 0, false); MAX_BINDINGS as usize + 1];
        let mut used = 0;
        for (i, (b, vb)) in bound().filter(|(i, _)| pipe.uses.uses(*i)) {
            accesses[used] =
                Access::new(vb.buffer, vb.base + b.offset, b.bytes, pipe.uses.writes(i));
            used += 1;
        }
        match &args {
            Some((vb, offset, _)) => {
                accesses[used] = Access::new(vb.buffer, vb.base + offset, 12, false);
                self.begin_indirect(s, &accesses[..used + 1])?;
            }
            None => self.begin(s, &accesses[..used])?,
        }
        // SAFETY: the set is unused by pending work (freshly allocated); pipeline, layout and
        // buffers are alive until the submit finishes; ranges and limits were checked above;
        // the push constants pushed lie within the layout's range (at most MAX_PARAMS bytes).
        unsafe {
            let d = &self.core.device;
            d.update_descriptor_sets(&writes[..n], &[]);
            d.cmd_bind_pipeline(s.cmd, vk::PipelineBindPoint::COMPUTE, pipe.pipeline);
            d.cmd_bind_descriptor_sets(
                s.cmd,
                vk::PipelineBindPoint::COMPUTE,
                pipe.layout,
                0,
                &[set],
                &[],
            );
            if pipe.push_bytes > 0 {
                d.cmd_push_constants(
                    s.cmd,
                    pipe.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    &params[..pipe.push_bytes as usize],
                );
            }
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
            .map(|(k, p)| (k.clone(), p.pipeline))
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
    /// The targets of the launch's bindings, in order.
    buffers: [Option<Target>; MAX_BINDINGS as usize],
    /// What the kernel needs ([`VulkanDevice::pipeline`]).
    pipeline: Pipeline,
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

    /// A known launch is found only by a launch naming the same kernel, element type,
    /// workgroup size and constants, in order; each of those changes the hash too.
    #[test]
    fn known_launches_match_every_part_of_the_name() {
        use crate::device::Kernel;
        let launch = |name, elem, block, consts| Launch {
            kernel: Kernel { name, elem, consts },
            block,
            groups: [1, 1],
            bindings: &[],
            params: &[],
        };
        // One name and one list of constants for the launch and its copy: the hash takes
        // names by their address.
        let name = "scan_device";
        let consts: &[(&str, u32)] = &[("ITEMS", 8), ("PARTS", 2)];
        let base = launch(name, ElemKind::I32, 256, consts);
        let known = KnownLaunch {
            name,
            elem: ElemKind::I32,
            block: 256,
            consts: consts.into(),
            pipeline: Pipeline {
                pipeline: vk::Pipeline::null(),
                layout: vk::PipelineLayout::null(),
                set_layout: vk::DescriptorSetLayout::null(),
                uses: spirv::BindingUse::ALL,
                push_bytes: 0,
            },
        };
        assert!(known.matches(&base));
        assert_eq!(
            launch_hash(&base),
            launch_hash(&launch(name, ElemKind::I32, 256, consts))
        );
        // The same text elsewhere is still found by `matches`.
        let elsewhere: &'static str = Box::leak(String::from(name).into_boxed_str());
        let same_consts = [("ITEMS", 8), ("PARTS", 2)];
        assert!(known.matches(&launch(elsewhere, ElemKind::I32, 256, &same_consts)));
        let others = [
            launch("scan_devic", ElemKind::I32, 256, consts),
            launch("scan_device", ElemKind::U32, 256, consts),
            launch("scan_device", ElemKind::I32, 512, consts),
            launch(
                "scan_device",
                ElemKind::I32,
                256,
                &[("ITEMS", 8), ("PARTS", 3)],
            ),
            launch(
                "scan_device",
                ElemKind::I32,
                256,
                &[("PARTS", 2), ("ITEMS", 8)],
            ),
            launch("scan_device", ElemKind::I32, 256, &[("ITEMS", 8)]),
            launch("scan_device", ElemKind::I32, 256, &[]),
        ];
        for other in &others {
            assert!(!known.matches(other), "{}", other.kernel);
            assert_ne!(launch_hash(other), launch_hash(&base), "{}", other.kernel);
        }
    }

    /// Every shader the build compiled has its push constants read (a launch pushes only
    /// those), within what a launch may carry; a few by their declared members.
    #[test]
    fn push_constants_of_real_shaders_are_read() {
        for (name, variant, bytes) in SHADERS {
            let words = ash::util::read_spv(&mut std::io::Cursor::new(bytes)).unwrap();
            let pushed = spirv::push_constant_bytes(&words);
            assert!(
                pushed.is_some_and(|b| b as usize <= MAX_PARAMS),
                "{name} {variant}: {pushed:?}"
            );
        }
        let pushed = |name: &str, variant: &str| {
            let (_, bytes) = find_shader(name, variant).unwrap();
            spirv::push_constant_bytes(
                &ash::util::read_spv(&mut std::io::Cursor::new(bytes)).unwrap(),
            )
        };
        // reduce_device: n, groups, dst_index; scan_device: ten words (n ... gate_y); top_k:
        // twelve (n ... digit).
        assert_eq!(pushed("reduce_device", "i32"), Some(12));
        assert_eq!(pushed("reduce_device", "f64_exact"), Some(12));
        assert_eq!(pushed("scan_device", "u64"), Some(40));
        assert_eq!(pushed("top_k", "b32"), Some(48));
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
