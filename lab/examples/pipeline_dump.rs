//! Writes out what a Vulkan driver makes of one compute shader, with plain `ash`: the
//! pipeline cache's data, the executables' statistics and, where the driver offers them, their
//! internal representations (`VK_KHR_pipeline_executable_properties`).
//!
//! ```text
//! cargo run --release -p xwarp-lab --example pipeline_dump -- \
//!     --spv spirv/sort_onesweep_u32.spv --spec 0=256,1=32,4=8192 --out DIR [--bindings 5] [--device N]
//! ```
//!
//! `--spec` gives specialization constants as `id=value` (32-bit words); the pipeline layout has
//! `--bindings` storage buffers (default 8) in set 0 and 128 bytes of push constants, which a
//! shader may use in part. In DIR: `cache.bin` (`vkGetPipelineCacheData` of a cache that holds
//! this pipeline only), `stats.txt`, and `ir-E-R.txt` or `.bin` per executable E and
//! representation R. The cache's layout is the driver's own; the tool does not interpret it.
//! `--unchecked` creates the pipeline without the driver's bounds checks on buffers
//! (`VK_EXT_pipeline_robustness`), as the library does for most kernels.
//! `--time GROUPS` also dispatches (on queue family `--family`, default the first with compute) GROUPS workgroups of the pipeline (every binding on one zeroed
//! buffer of `--buffer-mib` MiB, default 64; push constants zero) and prints the GPU time's
//! median over 11 runs: with a shader whose workgroups each take a fixed time, the time of
//! growing dispatches shows how many workgroups the device keeps resident at once.
//! The occupancy probe of NOTES.md (version 18), compiled with `glslangValidator -V
//! --target-env vulkan1.1` and dispatched as `--spec 0=256,1=WORDS,2=20000 --bindings 1
//! --time $((132 * k))` for k = 1, 2, ...: the time steps up where k passes the workgroups an
//! SM keeps with WORDS words of shared memory (132: the H100's SMs).
//!
//! ```glsl
//! #version 450
//! layout(local_size_x_id = 0) in;
//! layout(constant_id = 1) const uint WORDS = 1u;
//! layout(constant_id = 2) const uint SPIN = 20000u;
//! layout(std430, binding = 0) buffer B { uint v[]; };
//! shared uint s[WORDS];
//! void main() {
//!     uint t = gl_LocalInvocationID.x;
//!     for (uint i = t; i < WORDS; i += gl_WorkGroupSize.x) s[i] = i;
//!     barrier();
//!     if (t == 0u) {
//!         uint a = s[(gl_WorkGroupID.x * 7u) % WORDS] + gl_WorkGroupID.x;
//!         for (uint i = 0u; i < SPIN; ++i) a = a * a + i;
//!         v[gl_WorkGroupID.x % 1024u] = a;
//!     }
//! }
//! ```
//!
//! A tool for reading a driver's compile of a kernel (for instance a binary a disassembler can
//! read inside the cache data), not part of the library.

use ash::vk;
use std::path::PathBuf;
use std::process::ExitCode;

type Res<T> = Result<T, String>;

fn or_vk<T>(r: Result<T, vk::Result>, call: &str) -> Res<T> {
    r.map_err(|e| format!("{call} failed: {e}"))
}

struct Args {
    spv: PathBuf,
    spec: Vec<(u32, u32)>,
    out: PathBuf,
    bindings: u32,
    device: usize,
    /// Workgroups to dispatch and time (0: none).
    time: u32,
    buffer_mib: u64,
    /// Queue family of the timed dispatches (`None`: the first with compute).
    family: Option<u32>,
    /// Storage and uniform buffers without the driver's bounds checks
    /// (`VK_EXT_pipeline_robustness`), as the library creates most of its pipelines.
    unchecked: bool,
}

fn parse_args() -> Res<Args> {
    let mut spv = None;
    let mut spec = Vec::new();
    let mut out = None;
    let mut bindings = 8;
    let mut device = 0;
    let mut time = 0;
    let mut buffer_mib = 64;
    let mut family = None;
    let mut unchecked = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--spv" => spv = Some(PathBuf::from(value()?)),
            "--out" => out = Some(PathBuf::from(value()?)),
            "--bindings" => bindings = value()?.parse().map_err(|e| format!("--bindings: {e}"))?,
            "--device" => device = value()?.parse().map_err(|e| format!("--device: {e}"))?,
            "--family" => family = Some(value()?.parse().map_err(|e| format!("--family: {e}"))?),
            "--unchecked" => unchecked = true,
            "--time" => time = value()?.parse().map_err(|e| format!("--time: {e}"))?,
            "--buffer-mib" => {
                buffer_mib = value()?.parse().map_err(|e| format!("--buffer-mib: {e}"))?
            }
            "--spec" => {
                for pair in value()?.split(',').filter(|s| !s.is_empty()) {
                    let (id, v) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("--spec: `{pair}` is not id=value"))?;
                    let id = id.trim().parse().map_err(|e| format!("--spec id: {e}"))?;
                    let v = v.trim().parse().map_err(|e| format!("--spec value: {e}"))?;
                    spec.push((id, v));
                }
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(Args {
        spv: spv.ok_or("--spv is required")?,
        spec,
        out: out.ok_or("--out is required")?,
        bindings,
        device,
        time,
        buffer_mib,
        family,
        unchecked,
    })
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pipeline_dump: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args) -> Res<()> {
    let bytes = std::fs::read(&a.spv).map_err(|e| format!("{}: {e}", a.spv.display()))?;
    if bytes.len() % 4 != 0 {
        return Err(format!("{}: not a SPIR-V file", a.spv.display()));
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    // SAFETY: loads the system's Vulkan loader; the entry outlives everything made from it
    // (all is destroyed before this function returns).
    let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("libvulkan: {e}"))?;
    let app = vk::ApplicationInfo::default()
        .application_name(c"xwarp pipeline_dump")
        .api_version(vk::API_VERSION_1_2);
    // SAFETY: the create info lives until the call returns; destroyed below.
    let instance = or_vk(
        unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        },
        "vkCreateInstance",
    )?;
    let result = with_instance(&instance, a, &words);
    // SAFETY: every object made from the instance was destroyed in `with_instance`.
    unsafe { instance.destroy_instance(None) };
    result
}

fn with_instance(instance: &ash::Instance, a: &Args, words: &[u32]) -> Res<()> {
    // SAFETY: plain queries on a live instance.
    let pds = or_vk(
        unsafe { instance.enumerate_physical_devices() },
        "vkEnumeratePhysicalDevices",
    )?;
    let pd = *pds
        .get(a.device)
        .ok_or_else(|| format!("--device {} of {}", a.device, pds.len()))?;
    // SAFETY: as above.
    let (props, families, exts) = unsafe {
        (
            instance.get_physical_device_properties(pd),
            instance.get_physical_device_queue_family_properties(pd),
            instance
                .enumerate_device_extension_properties(pd)
                .unwrap_or_default(),
        )
    };
    let name = props
        .device_name_as_c_str()
        .unwrap_or(c"?")
        .to_string_lossy()
        .into_owned();
    println!("device {}: {name}", a.device);
    let family = match a.family {
        Some(f)
            if families
                .get(f as usize)
                .is_some_and(|p| p.queue_flags.contains(vk::QueueFlags::COMPUTE)) =>
        {
            f
        }
        Some(f) => return Err(format!("--family {f}: not a compute queue family")),
        None => families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("no compute queue family")? as u32,
    };
    println!(
        "queue family {family}: {:?}",
        families[family as usize].queue_flags
    );
    let ext = ash::khr::pipeline_executable_properties::NAME;
    let has_ext = exts.iter().any(|e| e.extension_name_as_c_str() == Ok(ext));
    let robust_ext = ash::ext::pipeline_robustness::NAME;
    if a.unchecked
        && !exts
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(robust_ext))
    {
        return Err("--unchecked: the device has no VK_EXT_pipeline_robustness".into());
    }
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let mut names = Vec::new();
    if has_ext {
        names.push(ext.as_ptr());
    }
    if a.unchecked {
        names.push(robust_ext.as_ptr());
    }
    let mut feat = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
        .pipeline_executable_info(true);
    let mut robust =
        vk::PhysicalDevicePipelineRobustnessFeaturesEXT::default().pipeline_robustness(true);
    // The Vulkan memory model where the device has it (the kernels may be compiled under it).
    let mut has_vmm = vk::PhysicalDeviceVulkanMemoryModelFeatures::default();
    {
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut has_vmm);
        // SAFETY: a valid physical device of this instance; the chain lives for the call.
        unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    }
    let vmm_ok = has_vmm.vulkan_memory_model == vk::TRUE
        && has_vmm.vulkan_memory_model_device_scope == vk::TRUE;
    let mut vmm = vk::PhysicalDeviceVulkanMemoryModelFeatures::default()
        .vulkan_memory_model(true)
        .vulkan_memory_model_device_scope(true);
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&names);
    if vmm_ok {
        info = info.push_next(&mut vmm);
    }
    if has_ext {
        info = info.push_next(&mut feat);
    }
    if a.unchecked {
        info = info.push_next(&mut robust);
    }
    // SAFETY: the create info and its chain live until the call returns; the extensions and their
    // features are enabled only where listed; destroyed below.
    let device = or_vk(
        unsafe { instance.create_device(pd, &info, None) },
        "vkCreateDevice",
    )?;
    let result = with_device(instance, pd, family, &device, has_ext, a, words);
    // SAFETY: every object made from the device was destroyed in `with_device`.
    unsafe { device.destroy_device(None) };
    result
}

fn with_device(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    family: u32,
    d: &ash::Device,
    has_ext: bool,
    a: &Args,
    words: &[u32],
) -> Res<()> {
    let bindings: Vec<_> = (0..a.bindings)
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let ranges = [vk::PushConstantRange::default()
        .stage_flags(vk::ShaderStageFlags::COMPUTE)
        .size(128)];
    let data: Vec<u32> = a.spec.iter().map(|e| e.1).collect();
    let entries: Vec<_> = a
        .spec
        .iter()
        .enumerate()
        .map(|(i, e)| {
            vk::SpecializationMapEntry::default()
                .constant_id(e.0)
                .offset(4 * i as u32)
                .size(4)
        })
        .collect();
    let spec = vk::SpecializationInfo::default()
        .map_entries(&entries)
        .data(bytemuck::cast_slice(&data));
    let mut out = String::new();
    // SAFETY: every create info lives until its call returns; every object made here is
    // destroyed before the block ends; the pipeline's queries follow the extension's rules
    // (count, then fill) on a pipeline created with the capture flags, and only where the
    // extension is enabled.
    unsafe {
        let set_layout = or_vk(
            d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                None,
            ),
            "vkCreateDescriptorSetLayout",
        )?;
        let layouts = [set_layout];
        let layout = or_vk(
            d.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default()
                    .set_layouts(&layouts)
                    .push_constant_ranges(&ranges),
                None,
            ),
            "vkCreatePipelineLayout",
        )?;
        let module = or_vk(
            d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(words), None),
            "vkCreateShaderModule",
        )?;
        let cache = or_vk(
            d.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None),
            "vkCreatePipelineCache",
        )?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&spec);
        let flags = if has_ext {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR
        } else {
            vk::PipelineCreateFlags::empty()
        };
        let mut robustness = vk::PipelineRobustnessCreateInfoEXT::default()
            .storage_buffers(vk::PipelineRobustnessBufferBehaviorEXT::DISABLED)
            .uniform_buffers(vk::PipelineRobustnessBufferBehaviorEXT::DISABLED);
        let mut info = vk::ComputePipelineCreateInfo::default()
            .flags(flags)
            .stage(stage)
            .layout(layout);
        if a.unchecked {
            info = info.push_next(&mut robustness);
        }
        let pipeline = d
            .create_compute_pipelines(cache, &[info], None)
            .map_err(|(_, e)| format!("vkCreateComputePipelines failed: {e}"))?[0];
        let blob = or_vk(d.get_pipeline_cache_data(cache), "vkGetPipelineCacheData")?;
        write(&a.out.join("cache.bin"), &blob)?;
        out += &format!("cache.bin: {} bytes\n", blob.len());
        if has_ext {
            let ep = ash::khr::pipeline_executable_properties::Device::new(instance, d);
            let pinfo = vk::PipelineInfoKHR::default().pipeline(pipeline);
            let execs = or_vk(
                ep.get_pipeline_executable_properties(&pinfo),
                "vkGetPipelineExecutablePropertiesKHR",
            )?;
            for (e, x) in execs.iter().enumerate() {
                let name = x
                    .name_as_c_str()
                    .unwrap_or(c"?")
                    .to_string_lossy()
                    .into_owned();
                out += &format!(
                    "executable {e}: {name}, subgroup size {}\n",
                    x.subgroup_size
                );
                let einfo = vk::PipelineExecutableInfoKHR::default()
                    .pipeline(pipeline)
                    .executable_index(e as u32);
                let stats = or_vk(
                    ep.get_pipeline_executable_statistics(&einfo),
                    "vkGetPipelineExecutableStatisticsKHR",
                )?;
                for s in &stats {
                    let n = s
                        .name_as_c_str()
                        .unwrap_or(c"?")
                        .to_string_lossy()
                        .into_owned();
                    let v = match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        _ => s.value.f64.to_string(),
                    };
                    out += &format!("  {n}: {v}\n");
                }
                // First the sizes (ash's call leaves the data pointers null), then the data
                // into buffers of those sizes through the raw entry point.
                let mut reps = or_vk(
                    ep.get_pipeline_executable_internal_representations(&einfo),
                    "vkGetPipelineExecutableInternalRepresentationsKHR",
                )?;
                let mut bufs: Vec<Vec<u8>> = reps.iter().map(|r| vec![0u8; r.data_size]).collect();
                for (r, b) in reps.iter_mut().zip(bufs.iter_mut()) {
                    r.p_data = b.as_mut_ptr().cast();
                }
                let mut count = reps.len() as u32;
                or_vk(
                    (ep.fp().get_pipeline_executable_internal_representations_khr)(
                        d.handle(),
                        &einfo,
                        &mut count,
                        reps.as_mut_ptr(),
                    )
                    .result(),
                    "vkGetPipelineExecutableInternalRepresentationsKHR",
                )?;
                for (r, (rep, b)) in reps.iter().zip(&bufs).enumerate() {
                    let n = rep
                        .name_as_c_str()
                        .unwrap_or(c"?")
                        .to_string_lossy()
                        .into_owned();
                    let text = rep.is_text == vk::TRUE;
                    let file = format!("ir-{e}-{r}.{}", if text { "txt" } else { "bin" });
                    out += &format!("  representation {r}: {n}, {} bytes -> {file}\n", b.len());
                    write(&a.out.join(file), b)?;
                }
            }
        } else {
            out += "VK_KHR_pipeline_executable_properties: not offered\n";
        }
        if a.time > 0 {
            out += &time_dispatches(instance, pd, family, d, pipeline, layout, set_layout, a)?;
        }
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_cache(cache, None);
        d.destroy_shader_module(module, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_set_layout(set_layout, None);
    }
    print!("{out}");
    write(&a.out.join("stats.txt"), out.as_bytes())
}

/// Dispatches `a.time` workgroups of `pipeline` (every binding on one zeroed buffer of
/// `a.buffer_mib` MiB, push constants zero) between two timestamps, 3 times to warm up, then 11
/// times; the GPU time's median and extremes, in microseconds.
#[allow(clippy::too_many_arguments)]
fn time_dispatches(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    family: u32,
    d: &ash::Device,
    pipeline: vk::Pipeline,
    layout: vk::PipelineLayout,
    set_layout: vk::DescriptorSetLayout,
    a: &Args,
) -> Res<String> {
    let size = a.buffer_mib << 20;
    // SAFETY: every create info lives until its call returns; every object made here is
    // destroyed before the block ends, after the fence of the last submission signalled; the
    // memory type is one the buffer accepts; the command buffer records valid commands on
    // objects that outlive its execution.
    unsafe {
        let props = instance.get_physical_device_properties(pd);
        let mem_props = instance.get_physical_device_memory_properties(pd);
        let buffer = or_vk(
            d.create_buffer(
                &vk::BufferCreateInfo::default().size(size).usage(
                    vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST,
                ),
                None,
            ),
            "vkCreateBuffer",
        )?;
        let req = d.get_buffer_memory_requirements(buffer);
        let ty = (0..mem_props.memory_type_count)
            .find(|&i| {
                req.memory_type_bits & (1 << i) != 0
                    && mem_props.memory_types[i as usize]
                        .property_flags
                        .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
            })
            .ok_or("no device-local memory type for the buffer")?;
        let memory = or_vk(
            d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(ty),
                None,
            ),
            "vkAllocateMemory",
        )?;
        or_vk(
            d.bind_buffer_memory(buffer, memory, 0),
            "vkBindBufferMemory",
        )?;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(a.bindings.max(1))];
        let pool = or_vk(
            d.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default()
                    .max_sets(1)
                    .pool_sizes(&sizes),
                None,
            ),
            "vkCreateDescriptorPool",
        )?;
        let layouts = [set_layout];
        let set = or_vk(
            d.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(pool)
                    .set_layouts(&layouts),
            ),
            "vkAllocateDescriptorSets",
        )?[0];
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = (0..a.bindings)
            .map(|_| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(buffer)
                    .range(vk::WHOLE_SIZE)]
            })
            .collect();
        let writes: Vec<_> = (0..a.bindings)
            .map(|b| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&infos[b as usize])
            })
            .collect();
        d.update_descriptor_sets(&writes, &[]);
        let cmd_pool = or_vk(
            d.create_command_pool(
                &vk::CommandPoolCreateInfo::default().queue_family_index(family),
                None,
            ),
            "vkCreateCommandPool",
        )?;
        let cmd = or_vk(
            d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(cmd_pool)
                    .command_buffer_count(1),
            ),
            "vkAllocateCommandBuffers",
        )?[0];
        let queries = or_vk(
            d.create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(2),
                None,
            ),
            "vkCreateQueryPool",
        )?;
        let fence = or_vk(
            d.create_fence(&vk::FenceCreateInfo::default(), None),
            "vkCreateFence",
        )?;
        let queue = d.get_device_queue(family, 0);
        let push = [0u8; 128];
        let mut times = Vec::new();
        for rep in 0..14 {
            or_vk(
                d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default()),
                "vkBeginCommandBuffer",
            )?;
            d.cmd_fill_buffer(cmd, buffer, 0, vk::WHOLE_SIZE, 0);
            let barrier = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &barrier,
                &[],
                &[],
            );
            d.cmd_reset_query_pool(cmd, queries, 0, 2);
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            d.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, layout, 0, &[set], &[]);
            d.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, &push);
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::COMPUTE_SHADER, queries, 0);
            d.cmd_dispatch(cmd, a.time, 1, 1);
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::COMPUTE_SHADER, queries, 1);
            or_vk(d.end_command_buffer(cmd), "vkEndCommandBuffer")?;
            let cmds = [cmd];
            or_vk(
                d.queue_submit(
                    queue,
                    &[vk::SubmitInfo::default().command_buffers(&cmds)],
                    fence,
                ),
                "vkQueueSubmit",
            )?;
            or_vk(
                d.wait_for_fences(&[fence], true, u64::MAX),
                "vkWaitForFences",
            )?;
            or_vk(d.reset_fences(&[fence]), "vkResetFences")?;
            let mut ts = [0u64; 2];
            or_vk(
                d.get_query_pool_results(
                    queries,
                    0,
                    &mut ts,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                ),
                "vkGetQueryPoolResults",
            )?;
            if rep >= 3 {
                let ns =
                    ts[1].wrapping_sub(ts[0]) as f64 * f64::from(props.limits.timestamp_period);
                times.push(ns / 1000.0);
            }
        }
        d.destroy_fence(fence, None);
        d.destroy_query_pool(queries, None);
        d.destroy_command_pool(cmd_pool, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_buffer(buffer, None);
        d.free_memory(memory, None);
        times.sort_by(f64::total_cmp);
        Ok(format!(
            "time of {} workgroups: median {:.2} us (min {:.2}, max {:.2}, {} runs)\n",
            a.time,
            times[times.len() / 2],
            times[0],
            times[times.len() - 1],
            times.len()
        ))
    }
}

fn write(path: &std::path::Path, bytes: &[u8]) -> Res<()> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}
