//! Measures what one more `vkCmdDispatch` costs on the GPU, with plain `ash` (none of xwarp).
//!
//! ```text
//! cargo run --release -p xwarp-lab --example dispatch_cost -- [--device N] [--reps R] [--json PATH]
//! ```
//!
//! On every Vulkan device (or device `N` only), on one queue of every queue family that
//! supports compute and timestamps, one command buffer records k = 1..=8 dispatches of a
//! trivial shader (one workgroup of 64 invocations, each adding 1 to its own `u32` of a storage
//! buffer) between two timestamps, under every combination of:
//! - the barrier between consecutive dispatches: `none`; `compute` (a global memory barrier,
//!   compute shader to compute shader, shader writes to shader reads and writes); `full`
//!   (compute shader and transfer to the same, with the transfer accesses too); `full+ts`
//!   (`full`, plus a full barrier before the end timestamp);
//! - where the two queries are reset: `cmd` (`vkCmdResetQueryPool` in the command buffer,
//!   before the first timestamp) or `host` (`vkResetQueryPool` before the submission: Vulkan
//!   1.2's hostQueryReset, skipped with a note where the device lacks it);
//! - descriptors: `fresh` (a descriptor set allocated, written and bound for every dispatch,
//!   as a library that allocates per dispatch does) or `cached` (one set, bound once before the
//!   first timestamp).
//!
//! Each (configuration, k) is submitted a few times to warm up, then R times (default 51), each
//! submission waited on with a fence; its GPU time is the median over the R. The table gives
//! t(k=1), t(k=8) and the least-squares line through the eight medians, in microseconds. The
//! slope is the GPU cost of one more dispatch (with its barrier and, for `fresh`, its descriptor
//! set); the intercept is what is left with no dispatch at all (the timestamps and whatever the
//! queue does around them). A slope close to t(k=1) means every dispatch pays its whole launch
//! again; a slope far below it means dispatches overlap or cost little next to the fixed part.
//! `--json PATH` writes the same numbers, with all eight medians, as JSON. On a CPU driver
//! (llvmpipe) the "GPU" times are the CPU's.
//!
//! Then, per queue, the host's side of a synchronous call with nothing else in it: the host
//! time from `vkQueueSubmit` until the host sees the fence signalled, for a command buffer that
//! is empty or holds one dispatch (recorded beforehand, outside the timing), waited on either
//! by `vkWaitForFences` or by polling `vkGetFenceStatus`, or (where the device has Vulkan 1.2's
//! timelineSemaphore) with no fence, the submission signalling a timeline semaphore that the
//! host polls (`vkGetSemaphoreCounterValue`) or waits on (`vkWaitSemaphores`); and, for the
//! dispatch, by polling the counter it writes in host-coherent memory (the GPU's write seen by
//! the host, no synchronisation object; the fence is waited on afterwards, untimed); and
//! `vkQueueSubmit`'s own return time. Medians over R (at least 201) submissions, in microseconds: the floor of a
//! synchronous call on the driver, whatever the library does around it.
//!
//! Afterwards each configuration checks that every counter equals the number of dispatches it
//! ran, and the program ends with an error otherwise. The shader adds atomically, so the count
//! is exact even with `none`, where consecutive dispatches are unordered.

use ash::vk;
use serde::Serialize;
use std::process::ExitCode;

/// The shader, compiled with `glslangValidator -V --target-env vulkan1.0 -g0`:
///
/// ```glsl
/// #version 450
/// layout(local_size_x = 64) in;
/// layout(std430, set = 0, binding = 0) buffer Counters { uint count[]; };
/// void main() { atomicAdd(count[gl_LocalInvocationID.x], 1u); }
/// ```
const SHADER: &[u32] = &[
    0x07230203, 0x00010000, 0x0008000b, 0x0000001a, 0x00000000, 0x00020011, 0x00000001, 0x0006000b,
    0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e, 0x00000000, 0x00000001,
    0x0006000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000f, 0x00060010, 0x00000004,
    0x00000011, 0x00000040, 0x00000001, 0x00000001, 0x00040047, 0x00000007, 0x00000006, 0x00000004,
    0x00050048, 0x00000008, 0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x00000008, 0x00000003,
    0x00040047, 0x0000000a, 0x00000022, 0x00000000, 0x00040047, 0x0000000a, 0x00000021, 0x00000000,
    0x00040047, 0x0000000f, 0x0000000b, 0x0000001b, 0x00040047, 0x00000019, 0x0000000b, 0x00000019,
    0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00040015, 0x00000006, 0x00000020,
    0x00000000, 0x0003001d, 0x00000007, 0x00000006, 0x0003001e, 0x00000008, 0x00000007, 0x00040020,
    0x00000009, 0x00000002, 0x00000008, 0x0004003b, 0x00000009, 0x0000000a, 0x00000002, 0x00040015,
    0x0000000b, 0x00000020, 0x00000001, 0x0004002b, 0x0000000b, 0x0000000c, 0x00000000, 0x00040017,
    0x0000000d, 0x00000006, 0x00000003, 0x00040020, 0x0000000e, 0x00000001, 0x0000000d, 0x0004003b,
    0x0000000e, 0x0000000f, 0x00000001, 0x0004002b, 0x00000006, 0x00000010, 0x00000000, 0x00040020,
    0x00000011, 0x00000001, 0x00000006, 0x00040020, 0x00000014, 0x00000002, 0x00000006, 0x0004002b,
    0x00000006, 0x00000016, 0x00000001, 0x0004002b, 0x00000006, 0x00000018, 0x00000040, 0x0006002c,
    0x0000000d, 0x00000019, 0x00000018, 0x00000016, 0x00000016, 0x00050036, 0x00000002, 0x00000004,
    0x00000000, 0x00000003, 0x000200f8, 0x00000005, 0x00050041, 0x00000011, 0x00000012, 0x0000000f,
    0x00000010, 0x0004003d, 0x00000006, 0x00000013, 0x00000012, 0x00060041, 0x00000014, 0x00000015,
    0x0000000a, 0x0000000c, 0x00000013, 0x000700ea, 0x00000006, 0x00000017, 0x00000015, 0x00000016,
    0x00000010, 0x00000016, 0x000100fd, 0x00010038,
];
/// The shader's workgroup size: the number of counters.
const LANES: usize = 64;
/// Dispatches per command buffer: k = 1..=MAX_K.
const MAX_K: u32 = 8;
/// Submissions per (configuration, k) before those that are timed.
const WARMUP: usize = 3;

type Res<T> = Result<T, String>;

/// Turns a Vulkan error into a message that names the call.
trait OrVk<T> {
    fn or_vk(self, call: &str) -> Res<T>;
}

impl<T> OrVk<T> for Result<T, vk::Result> {
    fn or_vk(self, call: &str) -> Res<T> {
        self.map_err(|e| format!("{call} failed: {e}"))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Barrier {
    None,
    Compute,
    Full,
    FullTs,
}

/// One point of the three dimensions.
#[derive(Clone, Copy)]
struct Config {
    barrier: Barrier,
    host_reset: bool,
    fresh_sets: bool,
}

impl Config {
    /// Every configuration, barrier by barrier.
    fn all() -> impl Iterator<Item = Config> {
        let barriers = [
            Barrier::None,
            Barrier::Compute,
            Barrier::Full,
            Barrier::FullTs,
        ];
        barriers.into_iter().flat_map(|barrier| {
            [(false, true), (false, false), (true, true), (true, false)].map(
                |(host_reset, fresh_sets)| Config {
                    barrier,
                    host_reset,
                    fresh_sets,
                },
            )
        })
    }

    /// The names of the barrier, the reset place and the descriptors.
    fn names(self) -> [&'static str; 3] {
        [
            ["none", "compute", "full", "full+ts"][self.barrier as usize],
            if self.host_reset { "host" } else { "cmd" },
            if self.fresh_sets { "fresh" } else { "cached" },
        ]
    }
}

struct Args {
    device: Option<usize>,
    reps: usize,
    json: Option<std::path::PathBuf>,
}

#[derive(Serialize)]
struct Report {
    reps: usize,
    warmup: usize,
    devices: Vec<DeviceReport>,
}

#[derive(Serialize)]
struct DeviceReport {
    index: usize,
    name: String,
    api_version: String,
    driver_version: String,
    driver_version_raw: u32,
    driver: String,
    timestamp_period_ns: f32,
    host_query_reset: bool,
    timeline_semaphore: bool,
    notes: Vec<String>,
    families: Vec<FamilyReport>,
}

#[derive(Serialize)]
struct FamilyReport {
    index: u32,
    flags: String,
    timestamp_valid_bits: u32,
    rows: Vec<Row>,
    round_trips: Vec<RoundTrip>,
}

/// The host's side of one submission and its wait (medians, microseconds).
#[derive(Serialize)]
struct RoundTrip {
    /// `empty` (a command buffer with no command) or `dispatch` (one dispatch).
    contents: &'static str,
    /// `fence` (`vkWaitForFences`), `poll` (`vkGetFenceStatus` until signalled), `tl-poll`
    /// (`vkGetSemaphoreCounterValue` of a timeline semaphore), `tl-wait` (`vkWaitSemaphores`)
    /// or `memory` (the dispatch's counter read from the mapping until it changes).
    wait: &'static str,
    /// `vkQueueSubmit`'s return.
    submit_us: f64,
    /// From the submission until the host sees the fence signalled.
    total_us: f64,
}

#[derive(Serialize)]
struct Row {
    barrier: &'static str,
    reset: &'static str,
    descriptors: &'static str,
    /// The median GPU times of k = 1..=8 dispatches, in microseconds.
    median_us: Vec<f64>,
    slope_us: f64,
    intercept_us: f64,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dispatch_cost: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> Res<Option<Args>> {
    let mut args = Args {
        device: None,
        reps: 51,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a}: missing value"));
        match a.as_str() {
            "--device" => {
                let v = value()?;
                args.device = Some(v.parse().map_err(|e| format!("--device {v}: {e}"))?);
            }
            "--reps" => {
                let v = value()?;
                args.reps = v.parse().map_err(|e| format!("--reps {v}: {e}"))?;
                if args.reps == 0 {
                    return Err("--reps must be at least 1".into());
                }
            }
            "--json" => args.json = Some(value()?.into()),
            "-h" | "--help" => {
                println!("usage: dispatch_cost [--device N] [--reps R] [--json PATH]");
                return Ok(None);
            }
            _ => return Err(format!("unknown argument {a} (try --help)")),
        }
    }
    Ok(Some(args))
}

fn run() -> Res<()> {
    let Some(args) = parse_args()? else {
        return Ok(());
    };
    let vkx = Instance::new()?;
    // SAFETY: a plain query on the live instance.
    let pds =
        unsafe { vkx.instance.enumerate_physical_devices() }.or_vk("vkEnumeratePhysicalDevices")?;
    if let Some(n) = args.device.filter(|&n| n >= pds.len()) {
        return Err(format!(
            "--device {n}: there are {} Vulkan devices",
            pds.len()
        ));
    }
    let mut report = Report {
        reps: args.reps,
        warmup: WARMUP,
        devices: Vec::new(),
    };
    for (index, &pd) in pds.iter().enumerate() {
        if args.device.is_none_or(|n| n == index) {
            report
                .devices
                .push(bench_device(&vkx, index, pd, args.reps)?);
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| format!("JSON: {e}"))?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}

/// The loader and an instance, destroyed on drop.
struct Instance {
    _entry: ash::Entry,
    instance: ash::Instance,
    api_version: u32,
}

impl Instance {
    fn new() -> Res<Instance> {
        // SAFETY: loads the system's Vulkan loader; `_entry` outlives the instance made from it.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| format!("loading the Vulkan loader (libvulkan): {e}"))?;
        // SAFETY: a plain query on the loaded entry.
        let loader = unsafe { entry.try_enumerate_instance_version() }
            .or_vk("vkEnumerateInstanceVersion")?
            .unwrap_or(vk::API_VERSION_1_0);
        let api_version = loader.min(vk::API_VERSION_1_3);
        let app = vk::ApplicationInfo::default()
            .application_name(c"xwarp dispatch_cost")
            .api_version(api_version);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: the create info lives until the call returns; `Drop` destroys the instance,
        // after every device made from it.
        let instance = unsafe { entry.create_instance(&info, None) }.or_vk("vkCreateInstance")?;
        Ok(Instance {
            _entry: entry,
            instance,
            api_version,
        })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: every device made from the instance (each `Gpu`) has been dropped before.
        unsafe { self.instance.destroy_instance(None) };
    }
}

/// `major.minor.patch` of a Vulkan-style version number.
fn version(v: u32) -> String {
    let (major, minor) = (vk::api_version_major(v), vk::api_version_minor(v));
    format!("{major}.{minor}.{}", vk::api_version_patch(v))
}

/// Describes device `pd`, then times every configuration on each of its compute queue families.
fn bench_device(
    vkx: &Instance,
    index: usize,
    pd: vk::PhysicalDevice,
    reps: usize,
) -> Res<DeviceReport> {
    let inst = &vkx.instance;
    // SAFETY: plain queries on a physical device of the live instance.
    let (props, families) = unsafe {
        let families = inst.get_physical_device_queue_family_properties(pd);
        (inst.get_physical_device_properties(pd), families)
    };
    let mut driver = "(driver properties need Vulkan 1.2)".to_string();
    let mut host_query_reset = false;
    let mut timeline = false;
    if props.api_version.min(vkx.api_version) >= vk::API_VERSION_1_2 {
        let mut dp = vk::PhysicalDeviceDriverProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut dp);
        let mut hqr = vk::PhysicalDeviceHostQueryResetFeatures::default();
        let mut tls = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut hqr)
            .push_next(&mut tls);
        // SAFETY: Vulkan 1.1 queries (instance and device are at least 1.2) into chains that
        // live until the calls return.
        unsafe {
            inst.get_physical_device_properties2(pd, &mut p2);
            inst.get_physical_device_features2(pd, &mut f2);
        }
        let text =
            |c: Result<&std::ffi::CStr, _>| c.map_or(String::new(), |s| s.to_string_lossy().into());
        driver = format!(
            "{} {}",
            text(dp.driver_name_as_c_str()),
            text(dp.driver_info_as_c_str())
        );
        host_query_reset = hqr.host_query_reset == vk::TRUE;
        timeline = tls.timeline_semaphore == vk::TRUE;
    }
    let v = props.driver_version;
    let mut rep = DeviceReport {
        index,
        name: props
            .device_name_as_c_str()
            .map_or("?".into(), |s| s.to_string_lossy().into()),
        api_version: version(props.api_version),
        driver_version: match props.vendor_id {
            // NVIDIA packs 10.8.8.6 bits.
            0x10de => format!(
                "{}.{}.{}.{}",
                v >> 22,
                (v >> 14) & 0xff,
                (v >> 6) & 0xff,
                v & 0x3f
            ),
            _ => version(v),
        },
        driver_version_raw: v,
        driver: driver.trim().to_string(),
        timestamp_period_ns: props.limits.timestamp_period,
        host_query_reset,
        timeline_semaphore: timeline,
        notes: Vec::new(),
        families: Vec::new(),
    };
    println!("\ndevice {index}: {}", rep.name);
    println!(
        "  Vulkan {}, driver version {} ({v:#x}), driver {}, timestampPeriod {} ns",
        rep.api_version, rep.driver_version, rep.driver, rep.timestamp_period_ns
    );
    let note = |rep: &mut DeviceReport, text: String| {
        println!("  note: {text}");
        rep.notes.push(text);
    };
    if !host_query_reset {
        note(
            &mut rep,
            "no hostQueryReset (a Vulkan 1.2 feature): reset=host skipped".into(),
        );
    }
    let mut chosen = Vec::new();
    for (i, f) in (0u32..).zip(&families) {
        if f.queue_flags.contains(vk::QueueFlags::COMPUTE) {
            if f.timestamp_valid_bits > 0 {
                chosen.push(i);
            } else {
                let flags = f.queue_flags;
                note(
                    &mut rep,
                    format!("queue family {i} ({flags:?}) has no timestamps: skipped"),
                );
            }
        }
    }
    if chosen.is_empty() || props.limits.timestamp_period <= 0.0 {
        note(
            &mut rep,
            "no compute queue family with timestamps: device skipped".into(),
        );
        return Ok(rep);
    }
    if !timeline {
        note(
            &mut rep,
            "no timelineSemaphore (a Vulkan 1.2 feature): tl-poll and tl-wait skipped".into(),
        );
    }
    let gpu = Gpu::new(
        inst,
        pd,
        &chosen,
        host_query_reset,
        timeline,
        props.limits.timestamp_period,
    )?;
    for lane in &gpu.lanes {
        let f = &families[lane.family as usize];
        let bits = f.timestamp_valid_bits;
        println!(
            "  queue family {}: {:?}, timestampValidBits {bits}",
            lane.family, f.queue_flags
        );
        println!(
            "  {:>3} {:>3}  {:<8} {:<5} {:<7} {:>10} {:>10} {:>9} {:>12}",
            "dev",
            "fam",
            "barrier",
            "reset",
            "descr",
            "t(k=1) us",
            "t(k=8) us",
            "slope us",
            "intercept us"
        );
        let mut family = FamilyReport {
            index: lane.family,
            flags: format!("{:?}", f.queue_flags),
            timestamp_valid_bits: bits,
            rows: Vec::new(),
            round_trips: Vec::new(),
        };
        for config in Config::all().filter(|c| host_query_reset || !c.host_reset) {
            let row = gpu.measure(lane, bits, config, reps)?;
            let (t1, t8) = (row.median_us[0], row.median_us[MAX_K as usize - 1]);
            println!(
                "  {index:>3} {:>3}  {:<8} {:<5} {:<7} {t1:>10.2} {t8:>10.2} {:>9.3} {:>12.2}",
                lane.family,
                row.barrier,
                row.reset,
                row.descriptors,
                row.slope_us,
                row.intercept_us
            );
            family.rows.push(row);
        }
        let waits = [
            Wait::Fence,
            Wait::Poll,
            Wait::TimelineSpin,
            Wait::TimelineBlock,
            Wait::Memory,
        ];
        for (dispatch, wait) in [false, true]
            .into_iter()
            .flat_map(|d| waits.map(|w| (d, w)))
            .filter(|&(d, w)| (timeline || !w.timeline()) && (d || w != Wait::Memory))
        {
            let rt = gpu.round_trip(lane, dispatch, wait, reps.max(201))?;
            println!(
                "  {index:>3} {:>3}  host round trip, {:<8} wait by {:<7}: submit {:>6.2} us, \
                 until signalled {:>6.2} us",
                lane.family, rt.contents, rt.wait, rt.submit_us, rt.total_us
            );
            family.round_trips.push(rt);
        }
        rep.families.push(family);
    }
    Ok(rep)
}

/// One queue, with the pool, command buffer and fence of its submissions.
struct Lane {
    family: u32,
    queue: vk::Queue,
    cmd_pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    /// A timeline semaphore (null without the feature) and the last value submitted to it.
    timeline: vk::Semaphore,
    signalled: std::cell::Cell<u64>,
}

/// How the host learns that a submission has finished.
#[derive(Clone, Copy, PartialEq)]
enum Wait {
    Fence,
    Poll,
    TimelineSpin,
    TimelineBlock,
    Memory,
}

impl Wait {
    fn timeline(self) -> bool {
        matches!(self, Wait::TimelineSpin | Wait::TimelineBlock)
    }

    fn name(self) -> &'static str {
        match self {
            Wait::Fence => "fence",
            Wait::Poll => "poll",
            Wait::TimelineSpin => "tl-poll",
            Wait::TimelineBlock => "tl-wait",
            Wait::Memory => "memory",
        }
    }
}

/// A device and every object made on it. `Drop` destroys them in reverse order of creation;
/// destroying a null handle does nothing, so a half-built `Gpu` cleans up too.
struct Gpu {
    device: ash::Device,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// The mapped counters (null until mapped).
    counters: *mut u32,
    shader: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    query_pool: vk::QueryPool,
    cached_pool: vk::DescriptorPool,
    cached_set: vk::DescriptorSet,
    fresh_pool: vk::DescriptorPool,
    lanes: Vec<Lane>,
    timestamp_period: f64,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let d = &self.device;
        // SAFETY: after the wait no submitted work uses these objects; each is destroyed once,
        // in reverse order of creation (the descriptor sets and command buffers with their
        // pools), the device last.
        unsafe {
            let _ = d.device_wait_idle();
            for lane in self.lanes.iter().rev() {
                d.destroy_fence(lane.fence, None);
                d.destroy_semaphore(lane.timeline, None);
                d.destroy_command_pool(lane.cmd_pool, None);
            }
            d.destroy_descriptor_pool(self.fresh_pool, None);
            d.destroy_descriptor_pool(self.cached_pool, None);
            d.destroy_query_pool(self.query_pool, None);
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.pipeline_layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_shader_module(self.shader, None);
            if !self.counters.is_null() {
                d.unmap_memory(self.memory);
            }
            d.free_memory(self.memory, None);
            d.destroy_buffer(self.buffer, None);
            d.destroy_device(None);
        }
    }
}

impl Gpu {
    /// Creates a device with one queue of each of `families`, the counters, the pipeline, the
    /// query and descriptor pools, and each queue's command pool, command buffer and fence.
    fn new(
        inst: &ash::Instance,
        pd: vk::PhysicalDevice,
        families: &[u32],
        host_query_reset: bool,
        timeline: bool,
        timestamp_period: f32,
    ) -> Res<Gpu> {
        let priorities = [1.0f32];
        let queues: Vec<_> = families
            .iter()
            .map(|&f| {
                vk::DeviceQueueCreateInfo::default()
                    .queue_family_index(f)
                    .queue_priorities(&priorities)
            })
            .collect();
        let mut hqr = vk::PhysicalDeviceHostQueryResetFeatures::default().host_query_reset(true);
        let mut info = vk::DeviceCreateInfo::default().queue_create_infos(&queues);
        if host_query_reset {
            info = info.push_next(&mut hqr);
        }
        let mut tls =
            vk::PhysicalDeviceTimelineSemaphoreFeatures::default().timeline_semaphore(true);
        if timeline {
            info = info.push_next(&mut tls);
        }
        // SAFETY: the create info and its chain live until the call returns; the features are
        // enabled only where the device reported them; `Drop` destroys the device.
        let device = unsafe { inst.create_device(pd, &info, None) }.or_vk("vkCreateDevice")?;
        let mut gpu = Gpu {
            device,
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            counters: std::ptr::null_mut(),
            shader: vk::ShaderModule::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            query_pool: vk::QueryPool::null(),
            cached_pool: vk::DescriptorPool::null(),
            cached_set: vk::DescriptorSet::null(),
            fresh_pool: vk::DescriptorPool::null(),
            lanes: Vec::new(),
            timestamp_period: f64::from(timestamp_period),
        };
        let d = &gpu.device;
        // SAFETY: every create info lives until its call returns; each object goes into `gpu`
        // as soon as it exists, so `Drop` destroys it on every path; the memory type is one the
        // buffer accepts, and the mapping covers the whole allocation.
        unsafe {
            let info = vk::BufferCreateInfo::default()
                .size((LANES * size_of::<u32>()) as u64)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER);
            gpu.buffer = d.create_buffer(&info, None).or_vk("vkCreateBuffer")?;
            let req = d.get_buffer_memory_requirements(gpu.buffer);
            let mem = inst.get_physical_device_memory_properties(pd);
            let host =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let type_index = (0..mem.memory_type_count)
                .find(|&i| {
                    req.memory_type_bits & (1 << i) != 0
                        && mem.memory_types[i as usize].property_flags.contains(host)
                })
                .ok_or("no HOST_VISIBLE | HOST_COHERENT memory type for the counters")?;
            let info = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(type_index);
            gpu.memory = d.allocate_memory(&info, None).or_vk("vkAllocateMemory")?;
            d.bind_buffer_memory(gpu.buffer, gpu.memory, 0)
                .or_vk("vkBindBufferMemory")?;
            let flags = vk::MemoryMapFlags::empty();
            let mapped = d
                .map_memory(gpu.memory, 0, vk::WHOLE_SIZE, flags)
                .or_vk("vkMapMemory")?;
            gpu.counters = mapped.cast();

            let info = vk::ShaderModuleCreateInfo::default().code(SHADER);
            gpu.shader = d
                .create_shader_module(&info, None)
                .or_vk("vkCreateShaderModule")?;
            let bindings = [vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)];
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
            gpu.set_layout = d
                .create_descriptor_set_layout(&info, None)
                .or_vk("vkCreateDescriptorSetLayout")?;
            let layouts = [gpu.set_layout];
            let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
            gpu.pipeline_layout = d
                .create_pipeline_layout(&info, None)
                .or_vk("vkCreatePipelineLayout")?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(gpu.shader)
                .name(c"main");
            let info = [vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(gpu.pipeline_layout)];
            gpu.pipeline = d
                .create_compute_pipelines(vk::PipelineCache::null(), &info, None)
                .map_err(|(_, e)| format!("vkCreateComputePipelines failed: {e}"))?[0];
            let info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2);
            gpu.query_pool = d
                .create_query_pool(&info, None)
                .or_vk("vkCreateQueryPool")?;

            let pool = |sets: u32| {
                let sizes = [vk::DescriptorPoolSize {
                    ty: vk::DescriptorType::STORAGE_BUFFER,
                    descriptor_count: sets,
                }];
                let info = vk::DescriptorPoolCreateInfo::default()
                    .max_sets(sets)
                    .pool_sizes(&sizes);
                d.create_descriptor_pool(&info, None)
                    .or_vk("vkCreateDescriptorPool")
            };
            gpu.cached_pool = pool(1)?;
            gpu.fresh_pool = pool(MAX_K)?;
            gpu.cached_set = gpu.new_set(gpu.cached_pool)?;

            for &family in families {
                let info = vk::CommandPoolCreateInfo::default()
                    .flags(vk::CommandPoolCreateFlags::TRANSIENT)
                    .queue_family_index(family);
                let cmd_pool = d
                    .create_command_pool(&info, None)
                    .or_vk("vkCreateCommandPool")?;
                gpu.lanes.push(Lane {
                    family,
                    queue: d.get_device_queue(family, 0),
                    cmd_pool,
                    cmd: vk::CommandBuffer::null(),
                    fence: vk::Fence::null(),
                    timeline: vk::Semaphore::null(),
                    signalled: std::cell::Cell::new(0),
                });
                let lane = gpu.lanes.last_mut().expect("pushed just above");
                let info = vk::FenceCreateInfo::default();
                lane.fence = d.create_fence(&info, None).or_vk("vkCreateFence")?;
                if timeline {
                    let mut kind = vk::SemaphoreTypeCreateInfo::default()
                        .semaphore_type(vk::SemaphoreType::TIMELINE)
                        .initial_value(0);
                    let info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
                    lane.timeline = d.create_semaphore(&info, None).or_vk("vkCreateSemaphore")?;
                }
                let info = vk::CommandBufferAllocateInfo::default()
                    .command_pool(cmd_pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1);
                lane.cmd = d
                    .allocate_command_buffers(&info)
                    .or_vk("vkAllocateCommandBuffers")?[0];
            }
        }
        Ok(gpu)
    }

    /// Allocates a set from `pool` and points its binding 0 at the counters.
    fn new_set(&self, pool: vk::DescriptorPool) -> Res<vk::DescriptorSet> {
        let layouts = [self.set_layout];
        let info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(pool)
            .set_layouts(&layouts);
        let buffers = [vk::DescriptorBufferInfo {
            buffer: self.buffer,
            offset: 0,
            range: vk::WHOLE_SIZE,
        }];
        // SAFETY: the pool, layout and buffer are alive; the new set is used by no command
        // buffer while it is written.
        unsafe {
            let set = self
                .device
                .allocate_descriptor_sets(&info)
                .or_vk("vkAllocateDescriptorSets")?[0];
            let write = vk::WriteDescriptorSet::default()
                .dst_set(set)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&buffers);
            self.device.update_descriptor_sets(&[write], &[]);
            Ok(set)
        }
    }

    /// Records a global memory barrier: `compute`'s, or `full`'s where `full`.
    fn barrier(&self, cmd: vk::CommandBuffer, full: bool) {
        use vk::AccessFlags as A;
        use vk::PipelineStageFlags as S;
        let (stages, src, dst) = if full {
            let read_write =
                A::SHADER_READ | A::SHADER_WRITE | A::TRANSFER_READ | A::TRANSFER_WRITE;
            (
                S::COMPUTE_SHADER | S::TRANSFER,
                A::SHADER_WRITE | A::TRANSFER_WRITE,
                read_write,
            )
        } else {
            (
                S::COMPUTE_SHADER,
                A::SHADER_WRITE,
                A::SHADER_READ | A::SHADER_WRITE,
            )
        };
        let b = [vk::MemoryBarrier::default()
            .src_access_mask(src)
            .dst_access_mask(dst)];
        let none = vk::DependencyFlags::empty();
        // SAFETY: `cmd` is recording; compute and transfer stages exist on every compute queue.
        unsafe {
            self.device
                .cmd_pipeline_barrier(cmd, stages, stages, none, &b, &[], &[])
        };
    }

    /// Records k dispatches between two timestamps, submits them, waits, and returns the GPU
    /// time in nanoseconds.
    fn submit_once(&self, lane: &Lane, mask: u64, config: Config, k: u32) -> Res<f64> {
        let (d, cmd, qp) = (&self.device, lane.cmd, self.query_pool);
        let compute = vk::PipelineBindPoint::COMPUTE;
        // SAFETY: the previous submission on this lane has been waited on, so its command pool,
        // the fresh descriptor pool and the queries are in use by nothing; every handle is
        // alive; the query pool has 2 queries; every set bound has binding 0 written.
        unsafe {
            d.reset_command_pool(lane.cmd_pool, vk::CommandPoolResetFlags::empty())
                .or_vk("vkResetCommandPool")?;
            if config.fresh_sets {
                d.reset_descriptor_pool(self.fresh_pool, vk::DescriptorPoolResetFlags::empty())
                    .or_vk("vkResetDescriptorPool")?;
            }
            if config.host_reset {
                d.reset_query_pool(qp, 0, 2);
            }
            let begin = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            d.begin_command_buffer(cmd, &begin)
                .or_vk("vkBeginCommandBuffer")?;
            if !config.host_reset {
                d.cmd_reset_query_pool(cmd, qp, 0, 2);
            }
            let layout = self.pipeline_layout;
            let bind = |set| d.cmd_bind_descriptor_sets(cmd, compute, layout, 0, &[set], &[]);
            d.cmd_bind_pipeline(cmd, compute, self.pipeline);
            if !config.fresh_sets {
                bind(self.cached_set);
            }
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, qp, 0);
            for i in 0..k {
                if i > 0 && config.barrier != Barrier::None {
                    self.barrier(cmd, config.barrier != Barrier::Compute);
                }
                if config.fresh_sets {
                    bind(self.new_set(self.fresh_pool)?);
                }
                d.cmd_dispatch(cmd, 1, 1, 1);
            }
            if config.barrier == Barrier::FullTs {
                self.barrier(cmd, true);
            }
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, qp, 1);
            // Outside the timed span: the counters made visible to the host.
            let to_host = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ)];
            let (src, dst) = (
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
            );
            let none = vk::DependencyFlags::empty();
            d.cmd_pipeline_barrier(cmd, src, dst, none, &to_host, &[], &[]);
            d.end_command_buffer(cmd).or_vk("vkEndCommandBuffer")?;

            let cmds = [cmd];
            let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
            d.queue_submit(lane.queue, &submit, lane.fence)
                .or_vk("vkQueueSubmit")?;
            d.wait_for_fences(&[lane.fence], true, u64::MAX)
                .or_vk("vkWaitForFences")?;
            d.reset_fences(&[lane.fence]).or_vk("vkResetFences")?;
            let mut ts = [0u64; 2];
            let flags = vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT;
            d.get_query_pool_results(qp, 0, &mut ts, flags)
                .or_vk("vkGetQueryPoolResults")?;
            Ok((ts[1].wrapping_sub(ts[0]) & mask) as f64 * self.timestamp_period)
        }
    }

    /// The host time of `reps` submissions (after a few to warm up) of a command buffer that is
    /// empty or holds one dispatch, each waited on as `wait` says; then checks the counters
    /// (one per dispatch).
    fn round_trip(&self, lane: &Lane, dispatch: bool, wait: Wait, reps: usize) -> Res<RoundTrip> {
        let d = &self.device;
        let compute = vk::PipelineBindPoint::COMPUTE;
        // SAFETY: the mapping holds LANES coherent u32s, and no GPU work is pending.
        unsafe { self.counters.write_bytes(0, LANES) };
        let (mut submit, mut total) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
        for rep in 0..WARMUP + reps {
            // SAFETY: the previous submission on this lane has been waited on, so its command
            // pool is in use by nothing; every handle is alive; the cached set has binding 0
            // written; the timeline semaphore (used only where it exists) gets a value above
            // every earlier one; the mapping holds LANES coherent u32s, read as volatile words
            // while the GPU may write them.
            let (s_ns, t_ns) = unsafe {
                d.reset_command_pool(lane.cmd_pool, vk::CommandPoolResetFlags::empty())
                    .or_vk("vkResetCommandPool")?;
                let begin = vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
                d.begin_command_buffer(lane.cmd, &begin)
                    .or_vk("vkBeginCommandBuffer")?;
                if dispatch {
                    d.cmd_bind_pipeline(lane.cmd, compute, self.pipeline);
                    let layout = self.pipeline_layout;
                    d.cmd_bind_descriptor_sets(
                        lane.cmd,
                        compute,
                        layout,
                        0,
                        &[self.cached_set],
                        &[],
                    );
                    d.cmd_dispatch(lane.cmd, 1, 1, 1);
                    let to_host = [vk::MemoryBarrier::default()
                        .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                        .dst_access_mask(vk::AccessFlags::HOST_READ)];
                    d.cmd_pipeline_barrier(
                        lane.cmd,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::PipelineStageFlags::HOST,
                        vk::DependencyFlags::empty(),
                        &to_host,
                        &[],
                        &[],
                    );
                }
                d.end_command_buffer(lane.cmd).or_vk("vkEndCommandBuffer")?;
                let cmds = [lane.cmd];
                let value = lane.signalled.get() + 1;
                let values = [value];
                let semaphores = [lane.timeline];
                let mut tl_info =
                    vk::TimelineSemaphoreSubmitInfo::default().signal_semaphore_values(&values);
                let mut one = vk::SubmitInfo::default().command_buffers(&cmds);
                let fence = if wait.timeline() {
                    one = one.signal_semaphores(&semaphores).push_next(&mut tl_info);
                    vk::Fence::null()
                } else {
                    lane.fence
                };
                let info = [one];
                // The counter before this submission's dispatch (memory wait).
                let counter = self.counters.cast_const();
                let before = counter.read_volatile();
                let t0 = std::time::Instant::now();
                d.queue_submit(lane.queue, &info, fence)
                    .or_vk("vkQueueSubmit")?;
                let t1 = std::time::Instant::now();
                match wait {
                    Wait::Poll => {
                        while !d.get_fence_status(lane.fence).or_vk("vkGetFenceStatus")? {}
                    }
                    Wait::Fence => {
                        d.wait_for_fences(&[lane.fence], true, u64::MAX)
                            .or_vk("vkWaitForFences")?;
                    }
                    Wait::TimelineSpin => {
                        while d
                            .get_semaphore_counter_value(lane.timeline)
                            .or_vk("vkGetSemaphoreCounterValue")?
                            < value
                        {}
                    }
                    Wait::TimelineBlock => {
                        let info = vk::SemaphoreWaitInfo::default()
                            .semaphores(&semaphores)
                            .values(&values);
                        d.wait_semaphores(&info, u64::MAX)
                            .or_vk("vkWaitSemaphores")?;
                    }
                    Wait::Memory => {
                        while counter.read_volatile() == before {
                            std::hint::spin_loop();
                        }
                    }
                }
                let t2 = std::time::Instant::now();
                if wait.timeline() {
                    lane.signalled.set(value);
                } else {
                    // The memory wait saw the write, not the end of the submission.
                    d.wait_for_fences(&[lane.fence], true, u64::MAX)
                        .or_vk("vkWaitForFences")?;
                    d.reset_fences(&[lane.fence]).or_vk("vkResetFences")?;
                }
                ((t1 - t0).as_secs_f64(), (t2 - t0).as_secs_f64())
            };
            if rep >= WARMUP {
                submit.push(s_ns * 1e6);
                total.push(t_ns * 1e6);
            }
        }
        let expected = if dispatch { (WARMUP + reps) as u32 } else { 0 };
        // SAFETY: as above; every submission has been waited on (and with a dispatch, its
        // barrier made the writes visible to the host).
        let counters = unsafe { std::slice::from_raw_parts(self.counters, LANES) }.to_vec();
        if let Some((i, c)) = counters.iter().enumerate().find(|&(_, &c)| c != expected) {
            return Err(format!(
                "wrong count after the round trips on queue family {}: counter {i} is {c}, \
                 expected {expected}",
                lane.family
            ));
        }
        Ok(RoundTrip {
            contents: if dispatch { "dispatch" } else { "empty" },
            wait: wait.name(),
            submit_us: median(&mut submit),
            total_us: median(&mut total),
        })
    }

    /// Times one configuration at k = 1..=8, then checks the counters.
    fn measure(&self, lane: &Lane, valid_bits: u32, config: Config, reps: usize) -> Res<Row> {
        let mask = u64::MAX >> (64 - valid_bits.min(64));
        // SAFETY: the mapping holds LANES coherent u32s, and no GPU work is pending.
        unsafe { self.counters.write_bytes(0, LANES) };
        let mut median_us = Vec::new();
        for k in 1..=MAX_K {
            let mut ns = Vec::with_capacity(reps);
            for rep in 0..WARMUP + reps {
                let t = self.submit_once(lane, mask, config, k)?;
                if rep >= WARMUP {
                    ns.push(t);
                }
            }
            median_us.push(median(&mut ns) / 1000.0);
        }
        let expected = ((WARMUP + reps) * (1..=MAX_K as usize).sum::<usize>()) as u64;
        // SAFETY: as above; every submission has been waited on, and the barrier at the end of
        // each made its writes visible to the host.
        let counters = unsafe { std::slice::from_raw_parts(self.counters, LANES) }.to_vec();
        let [barrier, reset, descriptors] = config.names();
        if let Some((i, c)) = counters
            .iter()
            .enumerate()
            .find(|&(_, &c)| u64::from(c) != expected)
        {
            return Err(format!(
                "wrong count on queue family {} with barrier={barrier} reset={reset} \
                 descriptors={descriptors}: counter {i} is {c}, expected {expected} (one per \
                 dispatch)",
                lane.family
            ));
        }
        let (slope_us, intercept_us) = fit(&median_us);
        Ok(Row {
            barrier,
            reset,
            descriptors,
            median_us,
            slope_us,
            intercept_us,
        })
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The least-squares line through (k, y[k - 1]) for k = 1..=y.len(): (slope, intercept).
fn fit(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mean_k = (n + 1.0) / 2.0;
    let mean_y = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (k, &yk) in (1..).zip(y) {
        let dk = f64::from(k) - mean_k;
        sxy += dk * (yk - mean_y);
        sxx += dk * dk;
    }
    let slope = sxy / sxx;
    (slope, mean_y - slope * mean_k)
}
