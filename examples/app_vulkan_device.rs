//! Use xwarp on the Vulkan device your application already has, on your own buffers, with no
//! copy: the application creates the instance, device, queue and a buffer; xwarp borrows them.
//!
//! ```sh
//! cargo run --example app_vulkan_device
//! ```
//!
//! The contract in short (the `xwarp::vulkan` module docs have it in full):
//! - enable what `VulkanDevice::requirements` lists when you create the device;
//! - xwarp submits to your queue only inside `synchronize`, reads (`to_vec`), `time` and drop,
//!   and waits for its own fence there; don't use the queue from another thread meanwhile (or
//!   share a lock through `ExternalVulkan::queue_lock`);
//! - your work submitted to the queue before that is visible to xwarp, and xwarp's results are
//!   visible to your work submitted after it (xwarp records full barriers at both ends);
//! - keep the device and wrapped buffers alive until xwarp's objects are dropped.

use ash::vk;
use std::error::Error;
use std::ffi::CString;
use std::process::ExitCode;
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, ScanKind};
use xwarp::vulkan::{ExternalBuffer, ExternalVulkan, VulkanDevice};
use xwarp::Device;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the application owns.
struct App {
    entry: ash::Entry,
    instance: ash::Instance,
    api_version: u32,
    physical_device: vk::PhysicalDevice,
    device: ash::Device,
    family: u32,
    queue: vk::Queue,
    enabled: xwarp::vulkan::VulkanFeatures,
    extensions: Vec<CString>,
}

fn run() -> Result<bool, Box<dyn Error>> {
    // SAFETY: loads the system's Vulkan loader; `entry` outlives everything made through it.
    let entry = unsafe { ash::Entry::load()? };
    // SAFETY: a plain query on the loaded entry.
    let loader = unsafe { entry.try_enumerate_instance_version()? }.unwrap_or(vk::API_VERSION_1_0);
    let api_version = loader.min(vk::API_VERSION_1_3);
    let app_info = vk::ApplicationInfo::default()
        .application_name(c"my application")
        .api_version(api_version);
    // SAFETY: the create info lives until the call returns; the instance is destroyed below.
    let instance = unsafe {
        entry.create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app_info),
            None,
        )?
    };

    // 1. Pick a physical device and ask xwarp what to enable on it.
    // SAFETY: a plain query on the live instance.
    let candidates = unsafe { instance.enumerate_physical_devices()? };
    let Some((physical_device, req)) = candidates.into_iter().find_map(|pd| {
        VulkanDevice::requirements(&instance, api_version, pd)
            .ok()
            .map(|r| (pd, r))
    }) else {
        // SAFETY: nothing else was created from the instance.
        unsafe { instance.destroy_instance(None) };
        return Err("no Vulkan device with subgroup operations".into());
    };

    // 2. Create the device with xwarp's extensions and features (plus whatever the application
    //    itself needs).
    let enabled = req.features();
    let extensions: Vec<CString> = req.extensions.iter().map(|e| (*e).to_owned()).collect();
    let ext_ptrs: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
    let core_features = vk::PhysicalDeviceFeatures::default()
        .shader_int64(enabled.shader_int64)
        .shader_float64(enabled.shader_float64);
    let mut size_control = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
        .subgroup_size_control(enabled.subgroup_size_control)
        .compute_full_subgroups(enabled.compute_full_subgroups);
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(req.queue_family_index)
        .queue_priorities(&priorities)];
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&ext_ptrs)
        .enabled_features(&core_features);
    if enabled.subgroup_size_control {
        info = info.push_next(&mut size_control);
    }
    // SAFETY: the create info and its chain live until the call returns; only features and
    // extensions the device reported are enabled. The device is destroyed below.
    let device = unsafe { instance.create_device(physical_device, &info, None)? };
    // SAFETY: family and index were requested at device creation.
    let queue = unsafe { device.get_device_queue(req.queue_family_index, 0) };
    let app = App {
        entry,
        instance,
        api_version,
        physical_device,
        device,
        family: req.queue_family_index,
        queue,
        enabled,
        extensions,
    };

    let result = use_xwarp(&app);

    // 7. The application destroys what it created, after xwarp's objects are gone.
    // SAFETY: nothing made from the device or instance is alive any more.
    unsafe {
        app.device.device_wait_idle()?;
        app.device.destroy_device(None);
        app.instance.destroy_instance(None);
    }
    result
}

fn use_xwarp(app: &App) -> Result<bool, Box<dyn Error>> {
    // 3. xwarp on the application's device and queue: it creates its own pools and pipelines
    //    there, nothing else.
    let ext = ExternalVulkan {
        entry: app.entry.clone(),
        instance: app.instance.clone(),
        api_version: app.api_version,
        physical_device: app.physical_device,
        device: app.device.clone(),
        queue_family_index: app.family,
        queue: app.queue,
        enabled_features: app.enabled,
        enabled_extensions: app.extensions.clone(),
        queue_lock: None,
    };
    // SAFETY: the handles are the application's, alive until `run` destroys them after this
    // function has dropped every xwarp object; the features and extensions are those the
    // device was created with; this thread is the only user of the queue.
    let xw = unsafe { VulkanDevice::from_external(ext)? };
    println!("device: {}", xw.info());

    // 4. The application's buffer, laid out its own way: a header, then the input, then room
    //    for the results. Offsets handed to xwarp are multiples of `binding_alignment`.
    let n = 100_000usize;
    let align = xw.info().binding_alignment;
    let round = |x: u64| x.div_ceil(align) * align;
    let input_at = round(64);
    let prefix_at = round(input_at + 4 * n as u64);
    let total_at = round(prefix_at + 4 * n as u64);
    let size = total_at + align;
    let (buffer, memory, mapped) = host_visible_buffer(app, size)?;

    // The application fills it through the mapping (host writes made before xwarp submits are
    // visible to xwarp's work).
    let input: Vec<u32> = (0..n as u32).map(|i| i % 7).collect();
    // SAFETY: the mapping covers `size` bytes; no GPU work uses the buffer yet.
    let bytes = unsafe { std::slice::from_raw_parts_mut(mapped, size as usize) };
    bytes[input_at as usize..prefix_at as usize].copy_from_slice(bytemuck::cast_slice(&input));

    let checked = {
        // 5. Borrow ranges of it and run algorithms on them: no copy, no ownership.
        let whole = ExternalBuffer {
            buffer,
            size,
            usage: vk::BufferUsageFlags::STORAGE_BUFFER,
        };
        // SAFETY: `buffer` is this device's, of that size and usage; it outlives the views
        // (dropped at the end of this block, after the synchronize) and nothing else touches
        // it while xwarp's work is pending.
        let (src, mut prefix, mut total) = unsafe {
            (
                xw.wrap_vec::<u32>(whole, input_at, n)?,
                xw.wrap_vec::<u32>(whole, prefix_at, n)?,
                xw.wrap_vec::<u32>(whole, total_at, 1)?,
            )
        };
        device_scan(&xw, ReduceOp::Sum, ScanKind::Inclusive, &src, &mut prefix)?;
        device_reduce(&xw, ReduceOp::Sum, &src, &mut total, 0)?;
        // 6. Submit on the application's queue and wait: now the results are visible to the
        //    host and to work the application submits next.
        xw.synchronize()?;

        // SAFETY: xwarp's work has finished; the mapping covers these ranges.
        let bytes = unsafe { std::slice::from_raw_parts(mapped, size as usize) };
        let got_prefix: &[u32] =
            bytemuck::cast_slice(&bytes[prefix_at as usize..prefix_at as usize + 4 * n]);
        let got_total = u32::from_ne_bytes(
            bytes[total_at as usize..total_at as usize + 4]
                .try_into()
                .unwrap(),
        );
        let mut running = 0u32;
        let mut ok = true;
        for (i, (&x, &got)) in input.iter().zip(got_prefix).enumerate() {
            running += x;
            if got != running {
                println!("MISMATCH: prefix[{i}] = {got}, expected {running}");
                ok = false;
                break;
            }
        }
        println!("sum {got_total} (CPU {running}), {n} prefix sums checked");
        ok && got_total == running
    };

    drop(xw);
    // SAFETY: xwarp is gone and its work finished; the application frees its own buffer.
    unsafe {
        app.device.destroy_buffer(buffer, None);
        app.device.free_memory(memory, None);
    }
    println!("{}", if checked { "OK" } else { "MISMATCH" });
    Ok(checked)
}

/// A storage buffer in host-visible, coherent memory, mapped.
fn host_visible_buffer(
    app: &App,
    size: u64,
) -> Result<(vk::Buffer, vk::DeviceMemory, *mut u8), Box<dyn Error>> {
    let d = &app.device;
    // SAFETY: valid create and allocate infos on the live device; the caller destroys the
    // buffer and frees the memory.
    unsafe {
        let buffer = d.create_buffer(
            &vk::BufferCreateInfo::default()
                .size(size)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER),
            None,
        )?;
        let req = d.get_buffer_memory_requirements(buffer);
        let props = app
            .instance
            .get_physical_device_memory_properties(app.physical_device);
        let wanted = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let Some(type_index) = (0..props.memory_type_count).find(|&i| {
            req.memory_type_bits & (1 << i) != 0
                && props.memory_types[i as usize]
                    .property_flags
                    .contains(wanted)
        }) else {
            d.destroy_buffer(buffer, None);
            return Err("no host-visible coherent memory".into());
        };
        let memory = d.allocate_memory(
            &vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(type_index),
            None,
        )?;
        d.bind_buffer_memory(buffer, memory, 0)?;
        let mapped = d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())?;
        Ok((buffer, memory, mapped as *mut u8))
    }
}
