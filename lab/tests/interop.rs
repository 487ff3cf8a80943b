//! Interop: xwarp on an application's own Vulkan instance, device, queue and buffers (and on an
//! application's CUDA context and memory where CUDA is present).
//!
//! Each test plays the application: it creates its own instance (with the validation layer and
//! synchronization validation when installed, and its own messenger), device (with what
//! `VulkanDevice::requirements` asks for), queue and buffers, hands them to xwarp, and checks
//! the results against the CPU reference, that bytes outside the ranges it gave are untouched,
//! that its device still works after xwarp is dropped, and that the validation layer said
//! nothing — including at `vkDestroyDevice`, where it reports objects left behind.

mod common;

use ash::vk;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Arc, Mutex};
use xwarp::compact::{compact, Order};
use xwarp::cpu::ladder::{self as cpu_ladder, LadderElem};
use xwarp::device::{RawBuffer, SubgroupFeatures};
use xwarp::ladder::{self, LadderKernel};
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, device_scan_in_place, ScanKind};
use xwarp::shfl::{shfl, ShflOp};
use xwarp::vote::Predicate;
use xwarp::vote::PredicateElement;
use xwarp::vulkan::{ExternalBuffer, ExternalVulkan, VulkanDevice, VulkanFeatures};
use xwarp::{Device, DeviceVec, Element, Error, Rng};
use xwarp_lab::validate::compact::{
    compact_cases, comparable, expected_output, run_compact, CompactCase,
};
use xwarp_lab::validate::ladder::run_ladder_on;
use xwarp_lab::validate::reduce::ReduceInput;
use xwarp_lab::validate::scan::{expected, run_scan, scan_cases, ScanCase, Scope};
use xwarp_lab::validate::vote::case_input;
use xwarp_lab::validate::{first_mismatch, poison_value};

const VALIDATION_LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";
/// What the application fills its buffers with outside the data it gives xwarp.
const POISON: u8 = 0xA5;

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data for the duration of the call; `user` is the
    // boxed `Mutex<Vec<String>>` of the `App` that registered the messenger, alive until the
    // messenger is destroyed.
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
        sink.lock().unwrap().push(format!("{severity:?}: {text}"));
    }
    vk::FALSE
}

/// A buffer of the application with its own memory, mapped when host-visible.
struct AppBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    usage: vk::BufferUsageFlags,
    mapped: *mut u8,
}

// SAFETY: the mapping is plain host memory that stays valid until `App::free`; the tests read
// and write it only while no GPU work or other thread writes it.
unsafe impl Send for AppBuffer {}
// SAFETY: as above.
unsafe impl Sync for AppBuffer {}

impl AppBuffer {
    fn external(&self) -> ExternalBuffer {
        ExternalBuffer {
            buffer: self.buffer,
            size: self.size,
            usage: self.usage,
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: host-visible, coherent, mapped for its whole size; the GPU work writing it
        // has been waited on by the caller.
        unsafe { std::slice::from_raw_parts(self.mapped, self.size as usize) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; no GPU work uses it while the caller writes.
        unsafe { std::slice::from_raw_parts_mut(self.mapped, self.size as usize) }
    }
}

/// One test at a time. Each test is an application that opens and closes its own Vulkan
/// instance and device; NVIDIA's 580 driver deadlocks when threads open or close devices while
/// others work (xwarp serialises its own opening, closing and allocating for that reason, see
/// `src/vulkan/instance.rs`, but these applications' calls are their own). On their default
/// threads the tests hung in 4 of 11 runs on an H100; an application with several threads must
/// serialise the same way.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The application: its own instance, device, queue, command buffers and messenger.
struct App {
    _entry: ash::Entry,
    instance: ash::Instance,
    api_version: u32,
    debug: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    messages: Box<Mutex<Vec<String>>>,
    physical_device: vk::PhysicalDevice,
    device: ash::Device,
    family: u32,
    queue: vk::Queue,
    features: VulkanFeatures,
    extensions: Vec<CString>,
    pool: vk::CommandPool,
    name: String,
    closed: bool,
}

impl App {
    /// Creates everything with what xwarp asks for, or with `features` instead when given.
    fn new(override_features: Option<VulkanFeatures>) -> App {
        // SAFETY: the test owns every object it creates here and destroys them in `Drop`, in
        // reverse order; all create infos live until their calls return.
        unsafe {
            let entry = ash::Entry::load().expect("the Vulkan loader (libvulkan1)");
            let loader_version = entry
                .try_enumerate_instance_version()
                .unwrap()
                .unwrap_or(vk::API_VERSION_1_0);
            let api_version = loader_version.min(vk::API_VERSION_1_3);
            let layers = entry.enumerate_instance_layer_properties().unwrap();
            let validation = layers
                .iter()
                .any(|l| l.layer_name_as_c_str() == Ok(VALIDATION_LAYER));
            let mut layer_names = Vec::new();
            let mut ext_names = Vec::new();
            let mut sync = false;
            if validation {
                layer_names.push(VALIDATION_LAYER.as_ptr());
                ext_names.push(ash::ext::debug_utils::NAME.as_ptr());
                sync = entry
                    .enumerate_instance_extension_properties(Some(VALIDATION_LAYER))
                    .unwrap_or_default()
                    .iter()
                    .any(|e| {
                        e.extension_name_as_c_str() == Ok(ash::ext::validation_features::NAME)
                    });
                if sync {
                    ext_names.push(ash::ext::validation_features::NAME.as_ptr());
                }
            } else {
                eprintln!("validation layer not installed: interop tests run without it");
            }
            let app_info = vk::ApplicationInfo::default()
                .application_name(c"xwarp interop test")
                .api_version(api_version);
            let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
            let mut vf = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
            let mut info = vk::InstanceCreateInfo::default()
                .application_info(&app_info)
                .enabled_layer_names(&layer_names)
                .enabled_extension_names(&ext_names);
            if sync {
                info = info.push_next(&mut vf);
            }
            let instance = entry.create_instance(&info, None).unwrap();
            let messages = Box::new(Mutex::new(Vec::new()));
            let debug = validation.then(|| {
                let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
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
                    .pfn_user_callback(Some(on_message))
                    .user_data(&*messages as *const Mutex<Vec<String>> as *mut c_void);
                let m = loader.create_debug_utils_messenger(&info, None).unwrap();
                (loader, m)
            });
            // The first device xwarp can run on (llvmpipe here).
            let (physical_device, req) = instance
                .enumerate_physical_devices()
                .unwrap()
                .into_iter()
                .find_map(|pd| {
                    VulkanDevice::requirements(&instance, api_version, pd)
                        .ok()
                        .map(|r| (pd, r))
                })
                .expect("a Vulkan device with subgroup operations (mesa-vulkan-drivers)");
            let features = override_features.unwrap_or(req.features());
            let mut extensions: Vec<CString> =
                req.extensions.iter().map(|e| (*e).to_owned()).collect();
            if features.pipeline_executable_info {
                extensions.push(ash::khr::pipeline_executable_properties::NAME.to_owned());
            }
            let ext_ptrs: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
            let core = vk::PhysicalDeviceFeatures::default()
                .shader_int64(features.shader_int64)
                .shader_float64(features.shader_float64);
            let mut size_control = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
                .subgroup_size_control(features.subgroup_size_control)
                .compute_full_subgroups(features.compute_full_subgroups);
            let mut executable_info =
                vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                    .pipeline_executable_info(true);
            let mut atomic64 = vk::PhysicalDeviceShaderAtomicInt64Features::default()
                .shader_buffer_int64_atomics(true);
            let priorities = [1.0f32];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(req.queue_family_index)
                .queue_priorities(&priorities)];
            let mut info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&ext_ptrs)
                .enabled_features(&core);
            if features.subgroup_size_control || features.compute_full_subgroups {
                info = info.push_next(&mut size_control);
            }
            if features.pipeline_executable_info {
                info = info.push_next(&mut executable_info);
            }
            if features.shader_buffer_int64_atomics {
                info = info.push_next(&mut atomic64);
            }
            let mut memory_model = vk::PhysicalDeviceVulkanMemoryModelFeatures::default()
                .vulkan_memory_model(true)
                .vulkan_memory_model_device_scope(true);
            if features.vulkan_memory_model {
                info = info.push_next(&mut memory_model);
            }
            let device = instance
                .create_device(physical_device, &info, None)
                .unwrap();
            let queue = device.get_device_queue(req.queue_family_index, 0);
            let pool = device
                .create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(req.queue_family_index)
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                    None,
                )
                .unwrap();
            let name = instance
                .get_physical_device_properties(physical_device)
                .device_name_as_c_str()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            App {
                _entry: entry,
                instance,
                api_version,
                debug,
                messages,
                physical_device,
                device,
                family: req.queue_family_index,
                queue,
                features,
                extensions,
                pool,
                name,
                closed: false,
            }
        }
    }

    fn external(&self, queue_lock: Option<Arc<Mutex<()>>>) -> ExternalVulkan {
        ExternalVulkan {
            entry: self._entry.clone(),
            instance: self.instance.clone(),
            api_version: self.api_version,
            physical_device: self.physical_device,
            device: self.device.clone(),
            queue_family_index: self.family,
            queue: self.queue,
            enabled_features: self.features,
            enabled_extensions: self.extensions.clone(),
            queue_lock,
        }
    }

    /// xwarp on this application's device and queue.
    fn xwarp(&self, queue_lock: Option<Arc<Mutex<()>>>) -> VulkanDevice {
        // SAFETY: every handle is this application's and alive; the features and extensions are
        // exactly those the device was created with; the App outlives the VulkanDevice and its
        // buffers (each test drops them first); the queue is used by one thread at a time or
        // under `queue_lock`.
        unsafe { VulkanDevice::from_external(self.external(queue_lock)) }.unwrap()
    }

    /// A host-visible, coherent, mapped buffer of `size` bytes.
    fn buffer(&self, size: u64, usage: vk::BufferUsageFlags) -> AppBuffer {
        // SAFETY: valid create infos on the live device; the buffer is destroyed by `free`.
        unsafe {
            let buffer = self
                .device
                .create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(size)
                        .usage(usage)
                        .sharing_mode(vk::SharingMode::EXCLUSIVE),
                    None,
                )
                .unwrap();
            let req = self.device.get_buffer_memory_requirements(buffer);
            let props = self
                .instance
                .get_physical_device_memory_properties(self.physical_device);
            let wanted =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let type_index = (0..props.memory_type_count)
                .find(|&i| {
                    req.memory_type_bits & (1 << i) != 0
                        && props.memory_types[i as usize]
                            .property_flags
                            .contains(wanted)
                })
                .expect("a host-visible coherent memory type");
            let memory = self
                .device
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(req.size)
                        .memory_type_index(type_index),
                    None,
                )
                .unwrap();
            self.device.bind_buffer_memory(buffer, memory, 0).unwrap();
            let mapped = self
                .device
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                .unwrap() as *mut u8;
            AppBuffer {
                buffer,
                memory,
                size,
                usage,
                mapped,
            }
        }
    }

    fn free(&self, b: AppBuffer) {
        // SAFETY: no work using the buffer is pending (every submit was waited on).
        unsafe {
            self.device.destroy_buffer(b.buffer, None);
            self.device.free_memory(b.memory, None);
        }
    }

    /// Records `record` into a fresh command buffer and submits it with a fresh fence; the
    /// caller waits with [`App::wait`].
    fn submit(&self, record: impl FnOnce(vk::CommandBuffer)) -> (vk::CommandBuffer, vk::Fence) {
        // SAFETY: the command buffer and fence are new; the queue is used by this thread only
        // (or under the lock the caller holds).
        unsafe {
            let cmd = self
                .device
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(self.pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                )
                .unwrap()[0];
            self.device
                .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .unwrap();
            record(cmd);
            self.device.end_command_buffer(cmd).unwrap();
            let fence = self
                .device
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .unwrap();
            let cmds = [cmd];
            self.device
                .queue_submit(
                    self.queue,
                    &[vk::SubmitInfo::default().command_buffers(&cmds)],
                    fence,
                )
                .unwrap();
            (cmd, fence)
        }
    }

    fn wait(&self, (cmd, fence): (vk::CommandBuffer, vk::Fence)) {
        // SAFETY: the fence belongs to a submit of this device; afterwards neither is in use.
        unsafe {
            self.device
                .wait_for_fences(&[fence], true, u64::MAX)
                .unwrap();
            self.device.destroy_fence(fence, None);
            self.device.free_command_buffers(self.pool, &[cmd]);
        }
    }

    /// Copies all of `src` into `dst` on the GPU (same size), then makes it host-visible.
    fn copy(&self, src: &AppBuffer, dst: &AppBuffer) -> (vk::CommandBuffer, vk::Fence) {
        self.submit(|cmd| {
            let to_host = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            // SAFETY: recording; both buffers are alive and `size` bytes long.
            unsafe {
                self.device.cmd_copy_buffer(
                    cmd,
                    src.buffer,
                    dst.buffer,
                    &[vk::BufferCopy::default().size(src.size.min(dst.size))],
                );
                self.device.cmd_pipeline_barrier(
                    cmd,
                    vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[to_host],
                    &[],
                    &[],
                );
            }
        })
    }

    fn messages(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }
}

impl App {
    /// Destroys the device and the instance. xwarp's objects must be gone by then: the
    /// validation layer reports any object left on the device at vkDestroyDevice, into
    /// `messages`, which outlive this call.
    fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        // SAFETY: everything below was created by this App and is destroyed once, children
        // first; every submit was waited on.
        unsafe {
            self.device.device_wait_idle().unwrap();
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_device(None);
            if let Some((loader, m)) = self.debug.take() {
                loader.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.close();
    }
}

/// Usage of the application's data buffers: everything xwarp may need.
fn full_usage() -> vk::BufferUsageFlags {
    vk::BufferUsageFlags::STORAGE_BUFFER
        | vk::BufferUsageFlags::TRANSFER_SRC
        | vk::BufferUsageFlags::TRANSFER_DST
}

/// Byte ranges in one application buffer: region `i` starts at a non-zero multiple of the
/// binding alignment, with at least one alignment's worth of poison before and after it.
struct Layout {
    regions: Vec<(u64, u64)>,
    size: u64,
}

impl Layout {
    fn new(align: u64, sizes: &[u64]) -> Layout {
        let mut at = 3 * align;
        let regions = sizes
            .iter()
            .map(|&bytes| {
                let r = (at, bytes);
                at = (at + bytes + align).div_ceil(align) * align;
                r
            })
            .collect();
        Layout {
            regions,
            size: at + align,
        }
    }
}

/// The application fills a buffer on the GPU (poison everywhere, `init[i]` in region `i`
/// where given) and submits that copy without waiting; `run` gets the regions wrapped and uses
/// xwarp on them, then synchronises; the application copies the buffer back on the GPU after
/// xwarp's work. Fails if any byte outside the regions changed; returns the regions' bytes.
fn with_regions(
    app: &App,
    xw: &VulkanDevice,
    sizes: &[u64],
    init: &[Option<&[u8]>],
    run: impl FnOnce(&[RawBuffer]),
) -> Vec<Vec<u8>> {
    let layout = Layout::new(xw.info().binding_alignment, sizes);
    let mut staging = app.buffer(layout.size, vk::BufferUsageFlags::TRANSFER_SRC);
    staging.bytes_mut().fill(POISON);
    let mut expected_outside = staging.bytes().to_vec();
    for (&(offset, bytes), data) in layout.regions.iter().zip(init) {
        if let Some(data) = data {
            assert_eq!(data.len() as u64, bytes);
            staging.bytes_mut()[offset as usize..(offset + bytes) as usize].copy_from_slice(data);
        }
        expected_outside[offset as usize..(offset + bytes) as usize].fill(0);
    }
    let data = app.buffer(layout.size, full_usage());
    let readback = app.buffer(layout.size, vk::BufferUsageFlags::TRANSFER_DST);
    // Not waited on: xwarp's first submit must be ordered after it by the queue alone.
    let upload = app.copy(&staging, &data);
    {
        let raws: Vec<RawBuffer> = layout
            .regions
            .iter()
            .map(|&(offset, bytes)| {
                // SAFETY: `data` is this device's buffer of that size and usage; it outlives
                // the wrappers (dropped at the end of this block) and xwarp's work on them
                // (synchronised inside `run`); nothing else touches it meanwhile.
                unsafe { xw.wrap_buffer(data.external(), offset, bytes) }.unwrap()
            })
            .collect();
        run(&raws);
    }
    let download = app.copy(&data, &readback);
    app.wait(upload);
    app.wait(download);
    let got = readback.bytes().to_vec();
    let mut outside = got.clone();
    for &(offset, bytes) in &layout.regions {
        outside[offset as usize..(offset + bytes) as usize].fill(0);
    }
    if let Some(i) = (0..outside.len()).find(|&i| outside[i] != expected_outside[i]) {
        panic!(
            "byte {i} outside the regions {:?} changed: {:#04x}, expected {:#04x}",
            layout.regions, outside[i], expected_outside[i]
        );
    }
    let regions = layout
        .regions
        .iter()
        .map(|&(offset, bytes)| got[offset as usize..(offset + bytes) as usize].to_vec())
        .collect();
    app.free(staging);
    app.free(data);
    app.free(readback);
    regions
}

fn bytes_of<T: Element>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

fn elems<T: Element>(b: &[u8]) -> Vec<T> {
    b.chunks_exact(T::KIND.size())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

fn vec<T: Element>(raw: &RawBuffer) -> DeviceVec<T> {
    let len = raw.bytes() as usize / T::KIND.size();
    DeviceVec::from_raw(raw.clone(), len).unwrap()
}

fn check<T: Element>(case: &str, app: &App, want: &[T], got: &[T]) {
    if let Some(m) = first_mismatch(want, got) {
        panic!("vulkan:{} (application device): {case}: {m}", app.name);
    }
}

/// Closes the application's device and instance, then fails on any validation message,
/// including those about objects left on the device at its destruction.
fn close_and_check(mut app: App) {
    app.close();
    let messages = app.messages();
    assert!(
        messages.is_empty(),
        "validation messages:\n{}",
        messages.join("\n")
    );
}

#[test]
fn algorithms_run_on_application_buffers() {
    let _serial = serial();
    let seed = common::seed();
    let mut rng = xwarp::Rng::new(seed);
    let app = App::new(None);
    let xw = app.xwarp(None);
    assert!(xw.is_external());
    eprintln!("testing {} on the application's device", xw.info());
    let dev: &dyn Device = &xw;

    // Device reduce of a multi-tile input (xwarp allocates its tile totals on the application's
    // device) into element 1 of a 3-element output: elements 0 and 2 must stay poison.
    let n = 3 * xwarp::reduce::TILE + 77;
    let input: Vec<f32> = rng.vec(n);
    let out = with_regions(
        &app,
        &xw,
        &[(n * 4) as u64, 12],
        &[Some(bytes_of(&input)), None],
        |r| {
            let mut total = vec::<f32>(&r[1]);
            device_reduce(dev, ReduceOp::Sum, &vec(&r[0]), &mut total, 1).unwrap();
            dev.synchronize().unwrap();
        },
    );
    assert_eq!(out[0], bytes_of(&input), "reduce changed its input");
    let want = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &input);
    let got: Vec<f32> = elems(&out[1]);
    check("device_reduce sum f32, index 1", &app, &[want], &got[1..2]);
    assert_eq!(&out[1][..4], &[POISON; 4], "reduce wrote output[0]");
    assert_eq!(&out[1][8..], &[POISON; 4], "reduce wrote output[2]");

    // Device scan, then the same in place (a device copy between application ranges).
    let n = 5000;
    let input: Vec<u32> = rng.vec(n);
    let out = with_regions(
        &app,
        &xw,
        &[(n * 4) as u64, (n * 4) as u64],
        &[Some(bytes_of(&input)), None],
        |r| {
            let mut dst = vec::<u32>(&r[1]);
            device_scan(
                dev,
                ReduceOp::Sum,
                ScanKind::Inclusive,
                &vec(&r[0]),
                &mut dst,
            )
            .unwrap();
            let mut data = vec::<u32>(&r[0]);
            device_scan_in_place(dev, ReduceOp::Sum, ScanKind::Exclusive, &mut data).unwrap();
            dev.synchronize().unwrap();
        },
    );
    let inclusive = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &input);
    let exclusive = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Exclusive, &input);
    check(
        "device_scan inclusive sum u32",
        &app,
        &inclusive,
        &elems(&out[1]),
    );
    check(
        "device_scan_in_place exclusive sum u32",
        &app,
        &exclusive,
        &elems(&out[0]),
    );

    // Stable compaction: the count lands in its own range; output past the count stays poison.
    let n = 3000;
    let input: Vec<u32> = rng.vec(n);
    let out = with_regions(
        &app,
        &xw,
        &[(n * 4) as u64, (n * 4) as u64, 8],
        &[Some(bytes_of(&input)), None, None],
        |r| {
            let mut dst = vec::<u32>(&r[1]);
            let mut count = vec::<u64>(&r[2]);
            compact(
                dev,
                Order::Stable,
                Predicate::Odd,
                &vec(&r[0]),
                &mut dst,
                &mut count,
            )
            .unwrap();
            // Read back through xwarp too: a download from an application range.
            let c = count.to_vec(dev).unwrap()[0] as usize;
            assert_eq!(c, input.iter().filter(|v| *v % 2 == 1).count());
        },
    );
    let want = xwarp::cpu::compact::stable(Predicate::Odd, &input);
    let count: Vec<u64> = elems(&out[2]);
    assert_eq!(count[0] as usize, want.len());
    let kept: Vec<u32> = elems(&out[1][..want.len() * 4]);
    check("compact stable odd u32", &app, &want, &kept);
    assert!(
        out[1][want.len() * 4..].iter().all(|&b| b == POISON),
        "compact wrote past its count"
    );

    // Shuffle down by 3 in segments of 16, on i32.
    let n = 1000;
    let input: Vec<i32> = rng.vec(n);
    let op = ShflOp::Down { delta: 3 };
    let out = with_regions(
        &app,
        &xw,
        &[(n * 4) as u64, (n * 4) as u64],
        &[Some(bytes_of(&input)), None],
        |r| {
            let mut dst = vec::<i32>(&r[1]);
            shfl(dev, op, 16, &vec(&r[0]), &mut dst).unwrap();
            dev.synchronize().unwrap();
        },
    );
    let want = xwarp::cpu::shfl::shfl(op, 16, 1, &input);
    check("shfl down 3 width 16 i32", &app, &want, &elems(&out[1]));

    // Uploads and downloads through the wrappers: fill and to_vec touch only their range.
    let out = with_regions(&app, &xw, &[64, 64], &[None, None], |r| {
        let mut a = vec::<u32>(&r[0]);
        a.fill(dev, 7).unwrap();
        dev.write(&r[1], 16, &[1, 2, 3, 4]).unwrap();
        assert_eq!(a.to_vec(dev).unwrap(), vec![7u32; 16]);
    });
    assert_eq!(elems::<u32>(&out[0]), vec![7u32; 16]);
    let mut second = vec![POISON; 64];
    second[16..20].copy_from_slice(&[1, 2, 3, 4]);
    assert_eq!(out[1], second);

    drop(xw);
    close_and_check(app);
}

#[test]
fn dropping_xwarp_leaves_the_application_device_usable() {
    let _serial = serial();
    let app = App::new(None);
    let xw = app.xwarp(None);
    // xwarp's own memory on the application's device, outliving the VulkanDevice.
    let own = DeviceVec::from_slice(&xw, &[1u32, 2, 3]).unwrap();
    let sum = xwarp::reduce::device_reduce_host(&xw, ReduceOp::Sum, &[5u32; 1000]).unwrap();
    assert_eq!(sum, 5000);
    drop(xw);
    drop(own);
    // The application's device, queue and command pool still work.
    let mut src = app.buffer(256, full_usage());
    src.bytes_mut()
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = i as u8);
    let dst = app.buffer(256, full_usage());
    let copy = app.copy(&src, &dst);
    app.wait(copy);
    assert_eq!(src.bytes(), dst.bytes());
    app.free(src);
    app.free(dst);
    // A second xwarp on the same device works as well.
    let xw = app.xwarp(None);
    let scan = xwarp::scan::device_scan_host(&xw, ReduceOp::Sum, ScanKind::Inclusive, &[1u32; 100])
        .unwrap();
    assert_eq!(scan[99], 100);
    drop(xw);
    close_and_check(app);
}

#[test]
fn wrapping_errors_are_typed() {
    let _serial = serial();
    let app = App::new(None);
    let xw = app.xwarp(None);
    let align = xw.info().binding_alignment;
    let data = app.buffer(1024, full_usage());
    let storage_only = app.buffer(1024, vk::BufferUsageFlags::STORAGE_BUFFER);
    let transfer_only = app.buffer(1024, vk::BufferUsageFlags::TRANSFER_SRC);
    // SAFETY: every wrap below: the buffers are this device's, of the stated size and usage,
    // alive until the end of the test, and no GPU work is pending on them at that point.
    unsafe {
        match xw.wrap_buffer(data.external(), align / 2 + 2, 64) {
            Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "offset"),
            other => panic!("misaligned offset: {other:?}"),
        }
        match xw.wrap_buffer(data.external(), 1024 - 2 * align, 4 * align) {
            Err(Error::OutOfBounds { size, .. }) => assert_eq!(size, 1024),
            other => panic!("range past the end: {other:?}"),
        }
        match xw.wrap_buffer(data.external(), align, 0) {
            Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "bytes"),
            other => panic!("empty range: {other:?}"),
        }
        match xw.wrap_buffer(transfer_only.external(), 0, 64) {
            Err(Error::MissingUsage { usage, .. }) => {
                assert_eq!(usage, "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT")
            }
            other => panic!("no storage usage: {other:?}"),
        }
        // A view longer than the wrapped range.
        let raw = xw.wrap_buffer(data.external(), align, 64).unwrap();
        match DeviceVec::<u32>::from_raw(raw.clone(), 17) {
            Err(Error::OutOfBounds { end, size, .. }) => assert_eq!((end, size), (68, 64)),
            other => panic!("view past the range: {other:?}"),
        }
        assert!(DeviceVec::<u32>::from_raw(raw, 16).is_ok());
        // Storage-only: kernels may use it, transfers may not.
        let mut v = xw
            .wrap_vec::<u32>(storage_only.external(), align, 16)
            .unwrap();
        match v.fill(&xw, 1) {
            Err(Error::MissingUsage { usage, .. }) => {
                assert_eq!(usage, "VK_BUFFER_USAGE_TRANSFER_DST_BIT")
            }
            other => panic!("upload without TRANSFER_DST: {other:?}"),
        }
        match v.to_vec(&xw) {
            Err(Error::MissingUsage { usage, .. }) => {
                assert_eq!(usage, "VK_BUFFER_USAGE_TRANSFER_SRC_BIT")
            }
            other => panic!("download without TRANSFER_SRC: {other:?}"),
        }
        // A wrapper made by one xwarp device is refused by another.
        let other = app.xwarp(None);
        let w = xw.wrap_vec::<u32>(data.external(), 0, 16).unwrap();
        match w.to_vec(&other) {
            Err(Error::ForeignBuffer { .. }) => {}
            other => panic!("buffer of another xwarp device: {other:?}"),
        }
    }
    drop(xw);
    app.free(data);
    app.free(storage_only);
    app.free(transfer_only);
    close_and_check(app);
}

#[test]
fn missing_features_are_named() {
    let _serial = serial();
    let full = App::new(None);
    let req =
        VulkanDevice::requirements(&full.instance, full.api_version, full.physical_device).unwrap();
    let bad_family = ExternalVulkan {
        queue_family_index: 999,
        ..full.external(None)
    };
    // SAFETY: the handles are valid; only the family index is wrong, which must be refused
    // before anything is created.
    match unsafe { VulkanDevice::from_external(bad_family) } {
        Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "queue_family_index"),
        other => panic!("bad queue family: {:?}", other.map(|_| ())),
    }
    let old_api = ExternalVulkan {
        api_version: vk::API_VERSION_1_0,
        ..full.external(None)
    };
    // SAFETY: as above; an instance version below 1.1 is refused before anything is created.
    match unsafe { VulkanDevice::from_external(old_api) } {
        Err(Error::MissingFeature { missing, .. }) => assert!(missing.contains("1.1"), "{missing}"),
        other => panic!("Vulkan 1.0: {:?}", other.map(|_| ())),
    }
    close_and_check(full);
    if !req.required.subgroup_size_control {
        eprintln!("the device has no subgroup size control: nothing more to refuse");
        return;
    }
    // The application forgot subgroup size control.
    let app = App::new(Some(VulkanFeatures {
        subgroup_size_control: false,
        compute_full_subgroups: false,
        ..req.features()
    }));
    // SAFETY: the handles are valid and describe the device as created.
    match unsafe { VulkanDevice::from_external(app.external(None)) } {
        Err(Error::NotEnabled { feature, .. }) => assert_eq!(feature, "subgroupSizeControl"),
        other => panic!("no size control: {:?}", other.map(|_| ())),
    }
    // Enabled but not declared: the application's claim is what xwarp checks.
    let ext = ExternalVulkan {
        enabled_features: VulkanFeatures {
            compute_full_subgroups: false,
            ..req.features()
        },
        ..app.external(None)
    };
    // SAFETY: as above (the claimed features are a subset of what is enabled).
    match unsafe { VulkanDevice::from_external(ext) } {
        Err(Error::NotEnabled { feature, .. }) => assert_eq!(feature, "computeFullSubgroups"),
        other => panic!("no full subgroups: {:?}", other.map(|_| ())),
    }
    // Without shaderInt64 64-bit kernels are refused by name, 32-bit ones run.
    let no_int64 = App::new(Some(VulkanFeatures {
        shader_int64: false,
        shader_float64: false,
        ..req.features()
    }));
    let xw = no_int64.xwarp(None);
    assert!(!xw.info().int64);
    match xwarp::reduce::device_reduce_host(&xw, ReduceOp::Sum, &[1u64; 10]) {
        Err(Error::MissingFeature { missing, .. }) => assert!(missing.contains("shaderInt64")),
        other => panic!("u64 without shaderInt64: {other:?}"),
    }
    assert_eq!(
        xwarp::reduce::device_reduce_host(&xw, ReduceOp::Sum, &[1u32; 10]).unwrap(),
        10
    );
    drop(xw);
    close_and_check(app);
    close_and_check(no_int64);
}

/// Whether the application's physical device offers `VK_KHR_pipeline_executable_properties`
/// with `pipelineExecutableInfo`.
fn offers_executable_info(app: &App) -> bool {
    // SAFETY: plain queries on the application's live instance and its physical device; the
    // chained struct is of an extension the device offers and outlives the call.
    unsafe {
        let offered = app
            .instance
            .enumerate_device_extension_properties(app.physical_device)
            .unwrap()
            .iter()
            .any(|e| {
                e.extension_name_as_c_str() == Ok(ash::khr::pipeline_executable_properties::NAME)
            });
        if !offered {
            return false;
        }
        let mut pexf = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut pexf);
        app.instance
            .get_physical_device_features2(app.physical_device, &mut f2);
        pexf.pipeline_executable_info == vk::TRUE
    }
}

/// The ladder's in-place rungs on an application's device with `vulkanMemoryModel` enabled
/// (where offered: their `_vmm` variants, the scratch buffer coherent within the workgroup)
/// and without it (`coherent`, device-wide): every rung at every block size on fresh random
/// inputs of awkward lengths against the CPU reference, partials and total, into poisoned
/// outputs, and the variant each one ran named in the kernel statistics where offered.
#[test]
fn ladder_runs_with_and_without_the_vulkan_memory_model() {
    let _serial = serial();
    let probe = App::new(None);
    let req = VulkanDevice::requirements(&probe.instance, probe.api_version, probe.physical_device)
        .unwrap();
    let offered = req.optional.vulkan_memory_model;
    let stats = offers_executable_info(&probe);
    close_and_check(probe);
    if !offered {
        eprintln!("the device has no vulkanMemoryModel: only the coherent rungs run");
    }
    let mut rng = Rng::new(common::seed());
    for on in [offered, false] {
        let app = App::new(Some(VulkanFeatures {
            vulkan_memory_model: on,
            pipeline_executable_info: stats,
            ..req.features()
        }));
        let xw = app.xwarp(None);
        assert_eq!(xw.info().workgroup_coherence, on);
        ladder_case::<i32>(&xw, &mut rng);
        ladder_case::<u64>(&xw, &mut rng);
        if stats {
            let labels: Vec<String> = xw.kernel_stats().into_iter().map(|k| k.kernel).collect();
            for kernel in LadderKernel::ALL {
                let mine: Vec<_> = labels
                    .iter()
                    .filter(|l| l.starts_with(&format!("{} ", kernel.name())))
                    .collect();
                assert!(!mine.is_empty(), "{kernel}: not in {labels:?}");
                for l in mine {
                    let vmm = l.split(' ').nth(1).is_some_and(|v| v.ends_with("_vmm"));
                    assert_eq!(vmm, on && kernel.uses_scratch(), "{l}");
                }
            }
        }
        drop(xw);
        close_and_check(app);
    }
}

/// Every rung at every block size on `xw` for fresh random inputs of a few lengths.
fn ladder_case<T: LadderElem>(xw: &VulkanDevice, rng: &mut Rng) {
    for n in [1usize, 33, 4097, 1_000_003] {
        let input: Vec<T> = (0..n).map(|_| T::random(rng)).collect();
        let src = DeviceVec::from_slice(xw, &input).unwrap();
        let total = cpu_ladder::reduce(&input);
        for kernel in LadderKernel::ALL {
            for block in ladder::blocks::<T>(xw.info(), kernel) {
                let case = format!("{kernel} block={block} {} n={n}", T::KIND);
                let mut want = cpu_ladder::block_sums(kernel, block, &input);
                want.push(total);
                let got = run_ladder_on(xw, kernel, block, &src, poison_value(&want))
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                if let Some(m) = first_mismatch(&want, &got) {
                    panic!("{case}: {m}");
                }
            }
        }
        assert!(
            src.to_vec(xw).unwrap() == input,
            "n={n}: the input was modified"
        );
    }
}

/// Kernel statistics on an application's device: only where the application enabled
/// `VK_KHR_pipeline_executable_properties` with `pipelineExecutableInfo` and says so.
#[test]
fn kernel_stats_only_where_the_application_enabled_them() {
    let _serial = serial();
    let app = App::new(None);
    let req =
        VulkanDevice::requirements(&app.instance, app.api_version, app.physical_device).unwrap();
    assert!(!req.features().pipeline_executable_info, "never required");
    let xw = app.xwarp(None);
    assert_eq!(
        xwarp::reduce::device_reduce_host(&xw, ReduceOp::Sum, &[3u32; 1000]).unwrap(),
        3000
    );
    assert!(!xw.captures_statistics());
    assert!(xw.kernel_stats().is_empty());
    drop(xw);
    let offered = offers_executable_info(&app);
    close_and_check(app);
    if !offered {
        println!(
            "the device does not offer VK_KHR_pipeline_executable_properties with \
             pipelineExecutableInfo: nothing more to check"
        );
        return;
    }
    let app = App::new(Some(VulkanFeatures {
        pipeline_executable_info: true,
        ..req.features()
    }));
    let xw = app.xwarp(None);
    assert!(xw.captures_statistics());
    xwarp::reduce::device_reduce_host(&xw, ReduceOp::Sum, &[3u32; 1000]).unwrap();
    let stats = xw.kernel_stats();
    let reduce: Vec<_> = stats
        .iter()
        .filter(|k| k.kernel.starts_with("reduce u32 "))
        .collect();
    assert!(!reduce.is_empty(), "no reduce kernel in {stats:?}");
    for k in &reduce {
        assert!(k.stats.iter().any(|(n, _)| !n.is_empty()), "{k:?}");
        assert!(k.stats.iter().all(|(n, _)| n != "error"), "{k:?}");
    }
    println!("statistics on the application's device: {:?}", reduce[0]);
    drop(xw);
    // Enabled but not declared: the application's claim is what xwarp goes by.
    let ext = ExternalVulkan {
        enabled_features: VulkanFeatures {
            pipeline_executable_info: false,
            ..app.features
        },
        ..app.external(None)
    };
    // SAFETY: the handles are valid; the claimed features are a subset of what is enabled.
    let xw = unsafe { VulkanDevice::from_external(ext) }.unwrap();
    xwarp::reduce::device_reduce_host(&xw, ReduceOp::Sum, &[3u32; 1000]).unwrap();
    assert!(!xw.captures_statistics());
    assert!(xw.kernel_stats().is_empty());
    drop(xw);
    close_and_check(app);
}

#[test]
fn shared_queue_under_the_application_lock() {
    let _serial = serial();
    let app = App::new(None);
    let lock = Arc::new(Mutex::new(()));
    let xw = app.xwarp(Some(lock.clone()));
    let mut a = app.buffer(4096, full_usage());
    a.bytes_mut().fill(1);
    let b = app.buffer(4096, full_usage());
    std::thread::scope(|s| {
        // The application keeps submitting its own work on the same queue from another
        // thread, holding its lock around each submit.
        s.spawn(|| {
            for _ in 0..40 {
                let pending = {
                    let _q = lock.lock().unwrap();
                    app.copy(&a, &b)
                };
                app.wait(pending);
            }
        });
        for i in 0..10u32 {
            let input: Vec<u32> = (0..5000).map(|k| k ^ i).collect();
            let got = xwarp::reduce::device_reduce_host(&xw, ReduceOp::Xor, &input).unwrap();
            assert_eq!(got, input.iter().fold(0, |x, v| x ^ v));
        }
    });
    assert_eq!(a.bytes(), b.bytes());
    drop(xw);
    app.free(a);
    app.free(b);
    close_and_check(app);
}

/// The CUDA side: an application's context, stream and memory. Runs where CUDA is present.
#[test]
fn cuda_application_context_and_memory() {
    let _serial = serial();
    use cudarc::driver::CudaContext;
    use xwarp::cuda::CudaDevice;
    if let Err(e) = xwarp::cuda::available() {
        let required = std::env::var("XWARP_TEST_BACKENDS")
            .is_ok_and(|b| b.split(',').any(|s| s.trim().eq_ignore_ascii_case("cuda")));
        assert!(!required, "CUDA is required but unavailable: {e}");
        eprintln!("CUDA interop not tested: {e}");
        return;
    }
    let ctx = CudaContext::new(0).expect("CUDA device 0");
    let stream = ctx.new_stream().expect("a stream");
    let dev = CudaDevice::from_external(ctx.clone(), stream.clone()).unwrap();
    eprintln!("testing {} on the application's stream", dev.info());
    let n = 10_000usize;
    let pad = 16usize;
    let input: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let poison = f32::from_bits(0xA5A5_A5A5);
    let mut host = vec![poison; n + 2 * pad];
    host[pad..pad + n].copy_from_slice(&input);
    // The application's memory, filled on its stream.
    let mut data = stream.clone_htod(&host).unwrap();
    let mut out = stream.clone_htod(&vec![poison; 3 * pad]).unwrap();
    {
        let mut view = data.slice_mut(pad..pad + n);
        // SAFETY: `data` and `out` outlive the wrappers; xwarp's work on them is synchronised
        // below before they are read or freed, and nothing else uses them meanwhile.
        let src = unsafe { dev.wrap_slice::<f32, _>(&mut view) }.unwrap();
        let mut out_view = out.slice_mut(pad..2 * pad);
        // SAFETY: as for `src` above.
        let mut total = unsafe { dev.wrap_slice::<f32, _>(&mut out_view) }.unwrap();
        device_reduce(&dev, ReduceOp::Sum, &src, &mut total, 1).unwrap();
        let mut scanned = DeviceVec::<f32>::alloc(&dev, n).unwrap();
        device_scan(&dev, ReduceOp::Sum, ScanKind::Inclusive, &src, &mut scanned).unwrap();
        let want = xwarp::cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &input);
        assert!(first_mismatch(&want, &scanned.to_vec(&dev).unwrap()).is_none());
        // A raw pointer into the application's allocation, and one range past its end.
        use cudarc::driver::DevicePtr;
        let (base, _read) = data.device_ptr(&stream);
        // SAFETY: inside `data`, which outlives the wrapper; no work uses it after the read.
        let raw = unsafe { dev.wrap_device_ptr(base + (pad * 4) as u64, (n * 4) as u64) }.unwrap();
        assert_eq!(vec::<f32>(&raw).to_vec(&dev).unwrap(), input);
        // Far past any allocation, whatever granularity the driver rounds allocations to.
        let past = 1u64 << 40;
        // SAFETY: refused before anything uses it.
        match unsafe { dev.wrap_device_ptr(base, past) } {
            Err(Error::OutOfBounds { .. }) => {}
            other => panic!("range past the allocation: {other:?}"),
        }
        dev.synchronize().unwrap();
    }
    let back = stream.clone_dtoh(&out).unwrap();
    let want = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &input);
    assert_eq!(
        back[pad + 1].to_bits(),
        want.to_bits(),
        "device_reduce on CUDA"
    );
    for (i, v) in back.iter().enumerate() {
        if i != pad + 1 {
            assert_eq!(v.to_bits(), poison.to_bits(), "out[{i}] changed");
        }
    }
    let back = stream.clone_dtoh(&data).unwrap();
    assert!(back[..pad]
        .iter()
        .chain(&back[pad + n..])
        .all(|v| v.to_bits() == poison.to_bits()));
    // A recording on the application's stream (captured into a CUDA Graph): nothing runs
    // until it is replayed, and each replay reduces what the input holds then.
    let src = DeviceVec::from_slice(&dev, &input).unwrap();
    let mut sum = DeviceVec::<f32>::alloc(&dev, 1).unwrap();
    sum.fill(&dev, poison).unwrap();
    let rec = dev
        .record(&mut || device_reduce(&dev, ReduceOp::Sum, &src, &mut sum, 0))
        .unwrap();
    assert_eq!(sum.to_vec(&dev).unwrap()[0].to_bits(), poison.to_bits());
    let t = dev.replay(&rec).unwrap();
    dev.wait(t).unwrap();
    assert_eq!(sum.to_vec(&dev).unwrap()[0].to_bits(), want.to_bits());
    let doubled: Vec<f32> = input.iter().map(|v| v * 2.0).collect();
    dev.write(src.raw(), 0, bytemuck::cast_slice(&doubled))
        .unwrap();
    let t = dev.replay(&rec).unwrap();
    dev.wait(t).unwrap();
    assert_eq!(
        sum.to_vec(&dev).unwrap()[0].to_bits(),
        xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &doubled).to_bits()
    );
    drop((rec, src, sum));
    // The context's legacy default stream cannot be captured: a typed error, and the device
    // goes on.
    let legacy = CudaDevice::from_external(ctx.clone(), ctx.default_stream()).unwrap();
    match legacy.record(&mut || Ok(())) {
        Err(Error::Recording { call, .. }) => assert_eq!(call, "Device::record"),
        other => panic!(
            "recording on the legacy default stream: {:?}",
            other.map(|_| ())
        ),
    }
    let one = DeviceVec::from_slice(&legacy, &input[..33]).unwrap();
    let mut total = DeviceVec::<f32>::alloc(&legacy, 1).unwrap();
    device_reduce(&legacy, ReduceOp::Sum, &one, &mut total, 0).unwrap();
    assert_eq!(
        total.to_vec(&legacy).unwrap()[0].to_bits(),
        xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &input[..33]).to_bits()
    );
    drop((one, total, legacy));
    drop(dev);
    // The application's stream still works.
    let again = stream.clone_htod(&[1u32, 2, 3]).unwrap();
    assert_eq!(stream.clone_dtoh(&again).unwrap(), vec![1, 2, 3]);
}

#[test]
fn kernels_take_either_form_of_their_atomics() {
    let _serial = serial();
    // With 64-bit buffer atomics the device scan keeps a 32-bit type's tile state in one 64-bit
    // word, without them in two 32-bit words; the unordered compaction keeps a chunk's count
    // and tiles done in one 64-bit word, without them in two counters. An application's device
    // decides which: every device-scope scan case of the 32-bit types (fresh random inputs,
    // poisoned outputs, the look-back's fallback and several launches among them) and every
    // unordered compaction case of the quick set (every type, many chunks and windows among
    // them) on a device with the feature where offered, then on one without it. Reduce-by-key of
    // 4-byte values keeps each tile state in one 64-bit word with them, without them in words
    // written before a flag (reduce_by_key_cases; with them a call of several tiles tags its
    // states by epochs). The partition's one launch of several tiles
    // tags its tile states by epochs with them, without them counts its tiles done and zeroes
    // the states (partition_cases). Run-length
    // encoding likewise: with them each tile closes the run before its first head from one
    // word a tile carried through the look-back (states tagged by epochs), without them the
    // pass's last tile closes the runs (to CLOSE_IN_PASS_MAX_TILES) or a last launch does.
    let mut rng = Rng::new(common::seed());
    with_and_without(
        "64-bit buffer atomics",
        |f| f.shader_buffer_int64_atomics,
        |f| VulkanFeatures {
            shader_buffer_int64_atomics: false,
            ..f
        },
        |xw, atomics| {
            assert_eq!(xw.info().int64_atomics, atomics);
            for case in scan_cases(false, false)
                .iter()
                .filter(|c| matches!(c.scope, Scope::Device(_)) && c.elem.size() == 4)
            {
                xwarp_lab::with_elem!(case.elem, scan_case(xw, case, atomics, &mut rng));
            }
            for case in compact_cases(true, false)
                .iter()
                .filter(|c| c.order == Order::Unordered)
            {
                xwarp_lab::with_elem!(case.elem, compact_case(xw, case, atomics, &mut rng));
            }
            run_length_cases(xw, atomics, &mut rng);
            reduce_by_key_cases(xw, atomics, &mut rng);
            partition_cases(xw, atomics, &mut rng);
        },
    );
}

/// Runs `cases` on an application's device with the optional feature `name` enabled where the
/// device offers it (`offered` of its optional features), then on one whose application left
/// it out (`without` of the features it enables); `cases` gets xwarp's device and whether the
/// feature is on. Each device is closed and checked for validation messages after its cases.
fn with_and_without(
    name: &str,
    offered: fn(&VulkanFeatures) -> bool,
    without: fn(VulkanFeatures) -> VulkanFeatures,
    mut cases: impl FnMut(&VulkanDevice, bool),
) {
    let full = App::new(None);
    let req =
        VulkanDevice::requirements(&full.instance, full.api_version, full.physical_device).unwrap();
    let on = offered(&req.optional);
    if !on {
        eprintln!("the device has no {name}: only the form without it runs");
    }
    let less = without(req.features());
    for (app, with) in [(full, on), (App::new(Some(less)), false)] {
        let xw = app.xwarp(None);
        cases(&xw, with);
        drop(xw);
        close_and_check(app);
    }
}

#[test]
fn sorts_take_either_form_of_the_64_bit_digit() {
    let _serial = serial();
    // With shaderInt64 the sort's and top-k's 64-bit kernels take a key's digit by one 64-bit
    // shift (their `b64_int64` variant), without it by shifting and joining two 32-bit words
    // (`b64`): the same bits. Keys, pairs and argsort of every 64-bit key type over bit ranges
    // whose digits straddle the two words (3..29 has none; 28..36, 1..64 and 29..61 do), at
    // one, 33, one tile and one key more, and many tiles (the look-back), outputs poisoned, and
    // top-k; on a device with the feature where offered, then on one without it.
    let mut rng = Rng::new(common::seed());
    with_and_without(
        "shaderInt64",
        |f| f.shader_int64,
        |f| VulkanFeatures {
            shader_int64: false,
            ..f
        },
        |xw, int64| {
            assert_eq!(xw.info().int64, int64);
            sort64_cases::<u64>(xw, &mut rng);
            sort64_cases::<i64>(xw, &mut rng);
            sort64_cases::<f64>(xw, &mut rng);
        },
    );
}

/// [`sorts_take_either_form_of_the_64_bit_digit`]'s cases of key type `K` on `xw`, each
/// against the CPU's stable sort.
fn sort64_cases<K: Element>(xw: &VulkanDevice, rng: &mut Rng) {
    use xwarp::cpu::{sort as cpu_sort, top_k as cpu_top_k};
    use xwarp::sort::{SortOrder, Sorter};
    let ranges = [0..64, 28..36, 1..64, 29..61, 3..29, 32..64, 63..64];
    for (i, bits) in ranges.into_iter().enumerate() {
        for n in [1usize, 33, 4096, 4097, 70_001] {
            let order = [SortOrder::Ascending, SortOrder::Descending][(i + n) % 2];
            let keys: Vec<K> = (0..n)
                .map(|j| {
                    if j % 3 == 0 {
                        K::random_hard(rng, xwarp::HardValues::ALL)
                    } else {
                        K::random(rng)
                    }
                })
                .collect();
            let case = format!("{} bits {bits:?} n={n} {order:?}", K::KIND);
            let values: Vec<u32> = (0..n as u32).collect();
            let (want_keys, want_values) =
                cpu_sort::sort_pairs(&keys, &values, order, bits.clone());
            let input = DeviceVec::from_slice(xw, &keys).unwrap();
            let key_poison = poison_value(&keys);
            let mut sorter = Sorter::<K>::new(xw, n).unwrap();
            let mut out = DeviceVec::from_slice(xw, &vec![key_poison; n]).unwrap();
            sorter
                .sort_keys(xw, &input, &mut out, order, bits.clone())
                .unwrap();
            expect(
                xw,
                &format!("keys {case}"),
                &want_keys,
                &out.to_vec(xw).unwrap(),
            );
            let values_in = DeviceVec::from_slice(xw, &values).unwrap();
            let mut out = DeviceVec::from_slice(xw, &vec![key_poison; n]).unwrap();
            let mut values_out = DeviceVec::from_slice(xw, &vec![u32::MAX; n]).unwrap();
            sorter
                .sort_pairs(
                    xw,
                    &input,
                    &mut out,
                    &values_in,
                    &mut values_out,
                    order,
                    bits.clone(),
                )
                .unwrap();
            expect(
                xw,
                &format!("pair keys {case}"),
                &want_keys,
                &out.to_vec(xw).unwrap(),
            );
            expect(
                xw,
                &format!("pair values {case}"),
                &want_values,
                &values_out.to_vec(xw).unwrap(),
            );
            let mut indices = DeviceVec::from_slice(xw, &vec![u32::MAX; n]).unwrap();
            sorter
                .argsort(xw, &input, &mut indices, order, bits.clone())
                .unwrap();
            expect(
                xw,
                &format!("argsort {case}"),
                &want_values,
                &indices.to_vec(xw).unwrap(),
            );
            if bits == (0..64) && n > 1 {
                let k = n.min(1024) - 1;
                let mut top = DeviceVec::from_slice(xw, &vec![key_poison; k]).unwrap();
                xwarp::top_k::top_k(xw, &input, k, order, &mut top).unwrap();
                let want = cpu_top_k::top_k(&keys, k, order);
                expect(
                    xw,
                    &format!("top-k {k} {case}"),
                    &want,
                    &top.to_vec(xw).unwrap(),
                );
            }
        }
    }
}

/// Fails with `case` where `got` differs from `want` on the application's device `xw`.
fn expect<T: Element>(xw: &VulkanDevice, case: &str, want: &[T], got: &[T]) {
    if let Some(m) = first_mismatch(want, got) {
        panic!(
            "vulkan:{} (application device): {case}: {m}",
            xw.info().name
        );
    }
}

/// Run-length encodings on `xw` against the CPU reference (poisoned outputs): 4- and 8-byte
/// keys from one key to one tile past the most tiles whose pass closes its runs, short runs and
/// all keys equal, with and without the look-back's fallback; the device's counters buffer zero
/// after each.
fn run_length_cases(xw: &VulkanDevice, atomics: bool, rng: &mut Rng) {
    use xwarp_lab::validate::runs::{planned_rle_matches, rotating_case};
    for (i, elem_bytes) in [4usize, 8].into_iter().enumerate() {
        let tile = xwarp::compact::tile_elems(elem_bytes);
        let closed = xwarp::compact::CLOSE_IN_PASS_MAX_TILES * tile;
        let sizes = [1, 33, tile - 1, tile + 1, 31 * tile + 5, closed, closed + 1];
        for (j, &n) in sizes.iter().enumerate() {
            let (tuning, pattern) = rotating_case(i, j);
            let at = format!(
                "run-length {elem_bytes}-byte n={n} {pattern} {tuning:?}, 64-bit atomics {atomics}"
            );
            let ok = planned_rle_matches(xw, elem_bytes, n, pattern, tuning, rng).unwrap();
            assert!(ok, "{at}: wrong encoding");
            // The pass's last tile zeroes what it kept in the counters buffer.
            common::assert_counters_zero(xw, &at);
        }
    }
}

/// Reduce-by-key on `xw` against the CPU reference (fresh values as the suite draws them: for
/// floats in every other case hard ones, subnormals, NaN payloads and extreme magnitudes among
/// them; poisoned outputs): 4-byte
/// values keep each tile state in 64-bit words where the device has 64-bit buffer atomics (a call
/// of several tiles in the device's epochs buffer, tagged with the call's epoch, but for every
/// other case, which keeps them in the counters buffer), else in words written before a flag. 4- and 8-byte keys, `i32` sums, `u32` maxima and `f32` sums
/// (their canonical order), from one key to one tile past the most tiles of the device's counters
/// buffer (beyond them a clearing launch zeroes the states), short runs and all keys equal, with
/// and without the look-back's fallback; the device's counters buffer zero after each.
fn reduce_by_key_cases(xw: &VulkanDevice, atomics: bool, rng: &mut Rng) {
    use xwarp_lab::validate::runs::{
        expected_reduce_by_key, rbk_values, rotating_case, run_reduce_by_key,
    };
    fn one<K: Element, V: ReduceInput>(
        xw: &VulkanDevice,
        op: ReduceOp,
        n: usize,
        (i, j): (usize, usize),
        poisons: (K, V),
        rng: &mut Rng,
        at: &str,
    ) {
        let (mut tuning, pattern) = rotating_case(i, j);
        // Every other case without epochs: the 64-bit states in the counters buffer.
        if j % 2 == 1 {
            tuning.epoch_max_tiles = Some(0);
        }
        let keys: Vec<K> = pattern.keys(n, rng);
        let values: Vec<V> = rbk_values(&[("vulkan".into(), xw as &dyn Device)], op, n, rng);
        let epoch = || common::epoch_words(xw).map(|w| w[1]);
        let before = epoch();
        let got = run_reduce_by_key(xw, op, &keys, &values, poisons, tuning).unwrap();
        let want = expected_reduce_by_key(op, &keys, &values, poisons);
        assert!(got == want, "{at} {pattern:?} {tuning:?}: wrong runs");
        common::assert_counters_zero(xw, at);
        // A call of several tiles tags its states by epochs where the device has 64-bit
        // atomics and ballots and the tuning lets it (taking an epoch); the others leave the
        // epochs alone.
        let info = xw.info();
        let tiles = n.div_ceil(xwarp::runs::tile(K::KIND.size(), 4));
        let ops = SubgroupFeatures::BALLOT | SubgroupFeatures::VOTE;
        let tagged = info.int64_atomics
            && info.subgroup_features.contains(ops)
            && tiles > 1
            && tiles
                <= tuning
                    .epoch_max_tiles
                    .unwrap_or(xwarp::runs::EPOCH_MAX_TILES);
        assert_eq!(epoch() != before, tagged, "{at}: tagged states {tagged}");
    }
    for (i, key_bytes) in [4usize, 8].into_iter().enumerate() {
        let tile = xwarp::runs::tile(key_bytes, 4);
        let most = xwarp::runs::SELF_CLEARING_MAX_TILES * tile;
        let sizes = [1, 33, tile - 1, tile + 1, 31 * tile + 5, most, most + 1];
        for (j, &n) in sizes.iter().enumerate() {
            let at = format!("reduce-by-key {key_bytes}-byte keys n={n}, 64-bit atomics {atomics}");
            let ops = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Sum];
            match (key_bytes, j % 3) {
                (4, 0) => one::<u32, i32>(xw, ops[0], n, (i, j), (7, -7), rng, &at),
                (4, 1) => one::<u32, u32>(xw, ops[1], n, (i, j), (7, 9), rng, &at),
                (4, _) => one::<u32, f32>(xw, ops[2], n, (i, j), (7, 0.5), rng, &at),
                (_, 0) => one::<u64, i32>(xw, ops[0], n, (i, j), (7, -7), rng, &at),
                (_, 1) => one::<u64, u32>(xw, ops[1], n, (i, j), (7, 9), rng, &at),
                _ => one::<f64, f32>(xw, ops[2], n, (i, j), (0.5, 0.5), rng, &at),
            }
        }
    }
}

/// One-launch partitions on `xw` against the CPU reference (poisoned outputs): with 64-bit
/// buffer atomics the tile states of a call of several tiles are tagged by epochs in the
/// device's epochs buffer, without them they lie in its counters buffer and the last tile done
/// zeroes them; every type, every predicate, one tile to the path's most, with and without the
/// fallback; the counters buffer zero after each.
fn partition_cases(xw: &VulkanDevice, atomics: bool, rng: &mut Rng) {
    use xwarp::partition::{self, ONE_LAUNCH_MAX_TILES, ONE_LAUNCH_SPIN};
    use xwarp::vote::PredicateElement;
    use xwarp_lab::validate::partition::{expected, run_partition_tuned};
    use xwarp_lab::validate::poison_value;
    use xwarp_lab::validate::vote::{case_input, PredSpec};
    fn one<T: PredicateElement>(
        xw: &VulkanDevice,
        atomics: bool,
        i: usize,
        n: usize,
        rng: &mut Rng,
        at: &str,
    ) {
        let spec = PredSpec::ALL[i % PredSpec::ALL.len()];
        let (input, pred) = case_input::<T>(spec, n, rng);
        let poison = poison_value(&input);
        let tuning = partition::Tuning {
            one_launch_max_tiles: Some(ONE_LAUNCH_MAX_TILES),
            spin: if i.is_multiple_of(2) {
                0
            } else {
                ONE_LAUNCH_SPIN
            },
            ..Default::default()
        };
        let epoch = || common::epoch_words(xw).map(|w| w[1]);
        let before = epoch();
        let got = run_partition_tuned(xw, pred, &input, poison, tuning).unwrap();
        assert!(
            got == expected(pred, &input, poison),
            "{at} {} {pred}: wrong partition",
            T::KIND
        );
        common::assert_counters_zero(xw, at);
        // The tagged states' call takes an epoch; the others leave the epochs alone.
        let tagged = atomics && n > partition::tile_elems(T::KIND.size());
        assert_eq!(epoch() != before, tagged, "{at}: tagged states {tagged}");
    }
    for (i, elem) in xwarp::ElemKind::ALL.into_iter().enumerate() {
        let tile = partition::tile_elems(elem.size());
        let sizes = [1, tile + 1, 7 * tile - 5, ONE_LAUNCH_MAX_TILES * tile];
        for (j, &n) in sizes.iter().enumerate() {
            let at = format!("partition n={n}, 64-bit atomics {atomics}");
            xwarp_lab::with_elem!(elem, one(xw, atomics, i + j, n, rng, &at));
        }
    }
}

/// One compaction case on `xw` against the CPU reference, on a fresh input into a poisoned
/// output: the count, the passing elements and the poison past them.
fn compact_case<T: PredicateElement>(
    xw: &VulkanDevice,
    case: &CompactCase,
    atomics: bool,
    rng: &mut Rng,
) {
    let (input, pred) = case_input::<T>(case.spec, case.n, rng);
    let poison = poison_value(&input);
    let (count, out) = expected_output(case.order, pred, &input, poison);
    let (got_count, got) = run_compact(xw, case.order, pred, &input, poison, case.tuning).unwrap();
    let at = format!("{case} ({pred}), 64-bit atomics {atomics}");
    assert_eq!(got_count, count, "{at}");
    let want = comparable(case.order, count, &out);
    let got = comparable(case.order, got_count, &got);
    assert!(first_mismatch(&want, &got).is_none(), "{at}");
}

/// One scan case on `xw` against the CPU reference, on a fresh input into a poisoned output.
fn scan_case<T: ReduceInput>(xw: &VulkanDevice, case: &ScanCase, atomics: bool, rng: &mut Rng) {
    let input = T::input(case.op, case.n, rng);
    let want = expected(case, &input);
    let got = run_scan(xw, case, &input, poison_value(&want)).unwrap();
    let at = format!("{case}, 64-bit atomics {atomics}");
    assert!(first_mismatch(&want, &got).is_none(), "{at}");
}
