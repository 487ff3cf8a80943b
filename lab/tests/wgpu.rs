//! xwarp inside a wgpu application (`xwarp::vulkan::wgpu`): each test plays the application,
//! with its own wgpu instance (Vulkan backend, validation layer with synchronization validation
//! where installed), device and buffers. wgpu passes write the inputs and read xwarp's results
//! on the GPU, and everything is compared with the CPU bit for bit, on fresh random inputs
//! with outputs poisoned beforehand. wgpu-hal reports the validation layer's messages through
//! `log`: any message fails the test.

mod common;

use std::ops::Range;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, device_scan_in_place, ScanKind};
use xwarp::sort::{all_bits, SortOrder, Sorter};
use xwarp::vulkan::wgpu::{request_device, WgpuDevice, WgpuXwarp};
use xwarp::vulkan::VulkanFeatures;
use xwarp::{Device, Error, Rng};
use xwarp_lab::validate::first_mismatch;

/// Vulkan validation messages (and any other warning of wgpu-hal's), as wgpu-hal logs them.
static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn && m.target().starts_with("wgpu_hal")
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let text = r.args().to_string();
        // The objects, queues and command buffers of a message come as lines of their own,
        // after the message.
        if text.starts_with('\t') {
            return;
        }
        // wgpu compiles WGSL to SPIR-V with debug information when the instance has
        // InstanceFlags::DEBUG (which the messenger needs): an OpSource of source language
        // WGSL (10), which validation layers built before WGSL had that number (Debian 12's
        // 1.3.239) refuse. wgpu's shaders, not xwarp's: xwarp's SPIR-V is checked in full.
        if text.contains("UNASSIGNED-CoreValidation-Shader-InconsistentSpirv")
            && text.contains("Invalid source language operand: 10")
        {
            return;
        }
        MESSAGES
            .lock()
            .unwrap()
            .push(format!("{} {}: {text}", r.level(), r.target()));
    }

    fn flush(&self) {}
}

/// The application's instance and adapter, shared by the tests of this binary.
struct App {
    _instance: wgpu::Instance,
    adapter: wgpu::Adapter,
}

fn app() -> &'static App {
    static APP: OnceLock<App> = OnceLock::new();
    APP.get_or_init(|| {
        static CAPTURE: Capture = Capture;
        log::set_logger(&CAPTURE).expect("the only logger");
        log::set_max_level(log::LevelFilter::Warn);
        let layer = validation_layer_installed();
        if std::env::var_os("CI").is_some() {
            assert!(
                layer,
                "CI runs need the Vulkan validation layer (Debian: vulkan-validationlayers)"
            );
        }
        eprintln!(
            "wgpu with the validation layer {}",
            if layer {
                "(and synchronization validation)"
            } else {
                "NOT installed"
            }
        );
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            flags: wgpu::InstanceFlags::VALIDATION | wgpu::InstanceFlags::DEBUG,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("a wgpu adapter of the Vulkan backend (mesa-vulkan-drivers)");
        eprintln!("adapter: {:?}", adapter.get_info());
        App {
            _instance: instance,
            adapter,
        }
    })
}

fn validation_layer_installed() -> bool {
    // SAFETY: loads the system's Vulkan loader for one query; nothing outlives it.
    let entry = unsafe { ash::Entry::load() }.expect("the Vulkan loader (libvulkan1)");
    // SAFETY: a plain query on the loaded entry.
    unsafe { entry.enumerate_instance_layer_properties() }
        .unwrap_or_default()
        .iter()
        .any(|l| l.layer_name_as_c_str() == Ok(c"VK_LAYER_KHRONOS_validation"))
}

/// The tests of this binary one at a time: the capture is one list for the process, and one
/// test makes a validation error on purpose.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Fails on any message wgpu-hal logged so far (validation layer included).
fn assert_no_messages(test: &str) {
    let messages = std::mem::take(&mut *MESSAGES.lock().unwrap());
    assert!(
        messages.is_empty(),
        "{test}: wgpu-hal / validation messages:\n{}",
        messages.join("\n")
    );
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

/// A wgpu device made for xwarp, and xwarp on it.
fn open() -> (WgpuDevice, WgpuXwarp) {
    let gpu =
        request_device(&app().adapter, &wgpu::DeviceDescriptor::default()).expect("request_device");
    // SAFETY: `features` are what request_device enabled; each test uses the queue from one
    // thread or through `submit_wgpu`, and destroys no buffer xwarp uses.
    let xw = unsafe { WgpuXwarp::open(&gpu.device, &gpu.queue, gpu.features) }
        .expect("xwarp opens on the wgpu device");
    (gpu, xw)
}

fn buffer(
    device: &wgpu::Device,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage,
        mapped_at_creation: false,
    })
}

fn storage() -> wgpu::BufferUsages {
    wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST
}

/// Keys: a hash of the index and a seed; a quarter of them folded onto 16 small values
/// (duplicates, a skewed first digit). `hash_key` is the same on the CPU.
const MAKE_KEYS: &str = r#"
struct Params { n: u32, seed: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;

fn hash(x: u32) -> u32 {
    var h = (x * 0x9E3779B9u) ^ params.seed;
    h ^= h >> 16u;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13u;
    h *= 0xC2B2AE35u;
    h ^= h >> 16u;
    return h;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i >= params.n) { return; }
    let h = hash(i);
    var k = h;
    if ((h & 3u) == 0u) { k = (h >> 8u) & 15u; }
    keys[i] = k;
}
"#;

fn hash_key(i: u32, seed: u32) -> u32 {
    let mut h = i.wrapping_mul(0x9E37_79B9) ^ seed;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    if h & 3 == 0 {
        (h >> 8) & 15
    } else {
        h
    }
}

/// Reads xwarp's results where they lie, on the GPU: counts descents of `sorted`, and places
/// where `prefix` (from word `params.prefix_at`) is not the exclusive running sum of `sorted`.
const CHECK: &str = r#"
struct Params { n: u32, seed: u32, prefix_at: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> sorted: array<u32>;
@group(0) @binding(2) var<storage, read> prefix: array<u32>;
@group(0) @binding(3) var<storage, read_write> errors: array<atomic<u32>, 2>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i + 1u >= params.n) { return; }
    let p = params.prefix_at;
    if (sorted[i] > sorted[i + 1u]) { atomicAdd(&errors[0], 1u); }
    if (prefix[p + i + 1u] != prefix[p + i] + sorted[i]) { atomicAdd(&errors[1], 1u); }
}
"#;

fn pipeline(device: &wgpu::Device, source: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// One compute pass of `pipeline` over `n` items, binding `buffers` in order.
fn pass(
    device: &wgpu::Device,
    pipeline: &wgpu::ComputePipeline,
    buffers: &[&wgpu::Buffer],
    n: u32,
) -> wgpu::CommandEncoder {
    let entries: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(n.div_ceil(64), 1, 1);
    }
    encoder
}

/// Maps `readback` (submitted already) and returns its words.
fn map_words(device: &wgpu::Device, readback: &wgpu::Buffer) -> Vec<u32> {
    let (tx, rx) = mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .expect("poll");
    rx.recv().unwrap().expect("map_async");
    let words = bytemuck::cast_slice::<u8, u32>(&readback.get_mapped_range(..).unwrap()).to_vec();
    readback.unmap();
    words
}

fn check_words(what: &str, n: usize, want: &[u32], got: &[u32]) {
    if let Some(m) = first_mismatch(want, got) {
        panic!("{what}, u32, n = {n}, backend vulkan via wgpu: {m}");
    }
}

/// What the application lays around the scan's output: bytes xwarp must leave alone.
const GUARD: u64 = 256;
const GUARD_BYTE: u8 = 0x5a;

/// wgpu writes keys; xwarp sorts them into a fresh wgpu buffer (poisoned through xwarp:
/// wgpu never wrote it, so only the initialisation at wrap time keeps wgpu from clearing
/// xwarp's result), scans the sorted keys into a range in the middle of a wgpu buffer
/// (poisoned by a `Queue::write_buffer` queued after the wrap: xwarp must submit it before its
/// own work), and reduces the keys (sum and max) into a poisoned wgpu buffer; a wgpu pass then
/// checks the results on the GPU and copies them for the host. Every result is compared with
/// the CPU bit for bit, and the bytes around the scan's range must be untouched.
#[test]
fn sort_scan_reduce_on_wgpu_buffers_match_the_cpu() {
    let _serial = serial();
    let (gpu, xw) = open();
    let device = &gpu.device;
    let mut rng = Rng::new(common::seed());
    let make_keys = pipeline(device, MAKE_KEYS);
    let check = pipeline(device, CHECK);
    for n in [1u32, 33, 4097, 1_000_003] {
        let seed = rng.next_u64() as u32;
        let len = n as usize;
        let bytes = 4 * u64::from(n);
        let params = buffer(
            device,
            "params",
            16,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let prefix_at = (GUARD / 4) as u32;
        gpu.queue
            .write_buffer(&params, 0, bytemuck::cast_slice(&[n, seed, prefix_at, 0]));
        let keys = buffer(device, "keys", bytes, storage());
        let sorted = buffer(device, "sorted", bytes, storage());
        let prefix = buffer(device, "prefix", GUARD + bytes + GUARD, storage());
        let totals = buffer(device, "totals", 8, storage());
        let errors = buffer(device, "errors", 8, storage());
        gpu.queue.write_buffer(&errors, 0, &[0; 8]);
        gpu.queue.write_buffer(
            &prefix,
            0,
            &vec![GUARD_BYTE; (GUARD + bytes + GUARD) as usize],
        );

        // 1. wgpu writes the keys (a plain submit: this thread is the queue's only user).
        gpu.queue
            .submit([pass(device, &make_keys, &[&params, &keys], n).finish()]);

        // 2. xwarp on wgpu's buffers.
        // SAFETY: the buffers are this device's and are not destroyed before the readback
        // below has finished; wgpu work touching them goes through `xw.submit`.
        let (keys_v, mut sorted_v, mut prefix_v, mut totals_v) = unsafe {
            (
                xw.wrap_vec::<u32>(&keys, 0, len).unwrap(),
                xw.wrap_vec::<u32>(&sorted, 0, len).unwrap(),
                xw.wrap_vec::<u32>(&prefix, GUARD, len).unwrap(),
                xw.wrap_vec::<u32>(&totals, 0, 2).unwrap(),
            )
        };
        let cpu_keys: Vec<u32> = (0..n).map(|i| hash_key(i, seed)).collect();
        check_words(
            "keys (written by wgpu, read by xwarp)",
            len,
            &cpu_keys,
            &keys_v.to_vec(&xw).unwrap(),
        );
        let poison = xwarp_lab::validate::poison_value(&cpu_keys);
        sorted_v.fill(&xw, poison).unwrap();
        let mut poisoned = vec![GUARD_BYTE; GUARD as usize];
        poisoned.extend(std::iter::repeat_n(poison.to_ne_bytes(), len).flatten());
        gpu.queue.write_buffer(&prefix, 0, &poisoned);
        gpu.queue
            .write_buffer(&totals, 0, bytemuck::cast_slice(&[poison, poison]));

        let mut sorter = Sorter::<u32>::new(&xw, len).unwrap();
        sorter
            .sort_keys(
                &xw,
                &keys_v,
                &mut sorted_v,
                SortOrder::Ascending,
                all_bits::<u32>(),
            )
            .unwrap();
        device_scan(
            &xw,
            ReduceOp::Sum,
            ScanKind::Exclusive,
            &sorted_v,
            &mut prefix_v,
        )
        .unwrap();
        device_reduce(&xw, ReduceOp::Sum, &keys_v, &mut totals_v, 0).unwrap();
        device_reduce(&xw, ReduceOp::Max, &keys_v, &mut totals_v, 1).unwrap();

        // 3. wgpu reads xwarp's results: on the GPU, and copies for the host.
        let prefix_bytes = GUARD + bytes + GUARD;
        let readback = buffer(
            device,
            "readback",
            bytes + prefix_bytes + 8 + 8,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        let mut encoder = pass(device, &check, &[&params, &sorted, &prefix, &errors], n);
        encoder.copy_buffer_to_buffer(&sorted, 0, &readback, 0, bytes);
        encoder.copy_buffer_to_buffer(&prefix, 0, &readback, bytes, prefix_bytes);
        encoder.copy_buffer_to_buffer(&totals, 0, &readback, bytes + prefix_bytes, 8);
        encoder.copy_buffer_to_buffer(&errors, 0, &readback, bytes + prefix_bytes + 8, 8);
        xw.submit_wgpu([encoder.finish()]).unwrap();
        drop((keys_v, sorted_v, prefix_v, totals_v));
        let words = map_words(device, &readback);
        let at = |r: Range<u64>| &words[(r.start / 4) as usize..(r.end / 4) as usize];

        let mut cpu_sorted = cpu_keys.clone();
        cpu_sorted.sort_unstable();
        let mut cpu_prefix = Vec::with_capacity(len);
        let mut sum = 0u32;
        for &k in &cpu_sorted {
            cpu_prefix.push(sum);
            sum = sum.wrapping_add(k);
        }
        let max = *cpu_keys.iter().max().unwrap();
        check_words("sort_keys ascending", len, &cpu_sorted, at(0..bytes));
        let guard_word = u32::from_ne_bytes([GUARD_BYTE; 4]);
        let guards = vec![guard_word; (GUARD / 4) as usize];
        check_words(
            "bytes before the scan's range",
            len,
            &guards,
            at(bytes..bytes + GUARD),
        );
        check_words(
            "device_scan exclusive sum",
            len,
            &cpu_prefix,
            at(bytes + GUARD..bytes + GUARD + bytes),
        );
        check_words(
            "bytes after the scan's range",
            len,
            &guards,
            at(bytes + GUARD + bytes..bytes + prefix_bytes),
        );
        check_words(
            "device_reduce sum, max",
            len,
            &[sum, max],
            at(bytes + prefix_bytes..bytes + prefix_bytes + 8),
        );
        check_words(
            "descents of sorted, wrong prefix sums (wgpu's check pass)",
            len,
            &[0, 0],
            at(bytes + prefix_bytes + 8..bytes + prefix_bytes + 16),
        );
        assert_no_messages(&format!("sort, scan, reduce on wgpu buffers, n = {n}"));
    }
}

/// Everything that can be wrong in the application's hand-over is a typed error naming it,
/// and both xwarp and wgpu still work afterwards.
#[test]
fn misuse_is_a_typed_error_and_both_still_work() {
    let _serial = serial();
    let (gpu, xw) = open();
    let device = &gpu.device;
    let app = app();

    // A wgpu device as wgpu creates it itself: where the adapter has subgroup size control,
    // computeFullSubgroups is missing, and the error says how to get it.
    let (plain, plain_queue) = block_on(
        app.adapter
            .request_device(&wgpu::DeviceDescriptor::default()),
    )
    .unwrap();
    // SAFETY: no features are claimed beyond wgpu's; one thread.
    match unsafe { WgpuXwarp::open(&plain, &plain_queue, VulkanFeatures::default()) } {
        Err(Error::NotEnabled { feature, how, .. }) => {
            assert!(gpu.features.compute_full_subgroups, "{feature}: {how}");
            assert_eq!(feature, "computeFullSubgroups");
            assert!(how.contains("request_device"), "{how}");
        }
        Ok(_) => assert!(
            !gpu.features.compute_full_subgroups,
            "a plain wgpu device was accepted although computeFullSubgroups is not enabled"
        ),
        Err(e) => panic!("plain wgpu device: {e}"),
    }
    // The queue of another device.
    // SAFETY: `features` are what request_device enabled on `gpu.device`; refused before
    // anything is used.
    match unsafe { WgpuXwarp::open(&gpu.device, &plain_queue, gpu.features) } {
        Err(Error::InvalidParameter { name: "queue", .. }) => {}
        other => panic!("another device's queue: {other:?}"),
    }

    // A device of another wgpu backend.
    let (noop, noop_queue) = wgpu::Device::noop(&wgpu::DeviceDescriptor::default());
    // SAFETY: refused before anything is used.
    match unsafe { WgpuXwarp::open(&noop, &noop_queue, VulkanFeatures::default()) } {
        Err(Error::InvalidParameter {
            name: "device",
            value,
            allowed,
        }) => {
            assert!(value.contains("Noop"), "{value}");
            assert!(allowed.contains("Vulkan"), "{allowed}");
        }
        other => panic!("a noop device: {other:?}"),
    }

    // An adapter of another wgpu backend.
    let noop_instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::NOOP,
        backend_options: wgpu::BackendOptions {
            noop: wgpu::NoopBackendOptions {
                enable: true,
                ..Default::default()
            },
            ..Default::default()
        },
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let noop_adapter =
        block_on(noop_instance.request_adapter(&wgpu::RequestAdapterOptions::default())).unwrap();
    match request_device(&noop_adapter, &wgpu::DeviceDescriptor::default()) {
        Err(Error::InvalidParameter {
            name: "adapter",
            value,
            ..
        }) => assert!(value.contains("Noop"), "{value}"),
        other => panic!("a noop adapter: {other:?}"),
    }

    // request_device with what the adapter does not offer.
    let lacking = wgpu::Features::all() - app.adapter.features();
    if !lacking.is_empty() {
        let desc = wgpu::DeviceDescriptor {
            required_features: lacking,
            ..Default::default()
        };
        match request_device(&app.adapter, &desc) {
            Err(Error::InvalidParameter {
                name: "desc.required_features",
                ..
            }) => {}
            other => panic!("unsupported features: {other:?}"),
        }
    }
    let limits = app.adapter.limits();
    let desc = wgpu::DeviceDescriptor {
        required_limits: wgpu::Limits {
            max_bind_groups: limits.max_bind_groups + 1,
            ..limits
        },
        ..Default::default()
    };
    match request_device(&app.adapter, &desc) {
        Err(Error::InvalidParameter {
            name: "desc.required_limits",
            value,
            ..
        }) => assert!(value.contains("max_bind_groups"), "{value}"),
        other => panic!("limits beyond the adapter's: {other:?}"),
    }

    let copy = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let no_storage = buffer(device, "no storage", 64, copy);
    let small = buffer(device, "small", 64, storage());
    let (other, _other_xw) = open();
    let foreign = buffer(&other.device, "foreign", 64, storage());
    let noop_buffer = buffer(&noop, "noop", 64, storage());
    let destroyed = buffer(device, "destroyed", 64, storage());
    destroyed.destroy();
    let mapped = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("mapped"),
        size: 64,
        usage: storage(),
        mapped_at_creation: true,
    });
    let align = xw.info().binding_alignment.max(4);
    // SAFETY: every call below is refused before the buffer is used.
    unsafe {
        match xw.wrap_vec::<u32>(&no_storage, 0, 16) {
            Err(Error::MissingUsage { usage, .. }) => {
                assert_eq!(usage, "wgpu::BufferUsages::STORAGE")
            }
            other => panic!("no STORAGE: {other:?}"),
        }
        match xw.wrap_vec::<u32>(&small, 0, 17) {
            Err(Error::InvalidParameter {
                name: "len",
                allowed,
                ..
            }) => assert!(allowed.contains("1 to 16"), "{allowed}"),
            other => panic!("too small: {other:?}"),
        }
        match xw.wrap_vec::<u64>(&small, 32, 5) {
            Err(Error::InvalidParameter {
                name: "len",
                allowed,
                ..
            }) => assert!(allowed.contains("1 to 4"), "{allowed}"),
            other => panic!("too small from an offset: {other:?}"),
        }
        match xw.wrap_vec::<u32>(&small, 0, 0) {
            Err(Error::InvalidParameter { name: "len", .. }) => {}
            other => panic!("empty: {other:?}"),
        }
        match xw.wrap_buffer(&small, 0, 68) {
            Err(Error::OutOfBounds {
                offset: 0,
                end: 68,
                size: 64,
            }) => {}
            other => panic!("past the end: {other:?}"),
        }
        match xw.wrap_buffer(&small, 0, 6) {
            Err(Error::InvalidParameter { name: "bytes", .. }) => {}
            other => panic!("bytes not a multiple of 4: {other:?}"),
        }
        if align < 64 {
            match xw.wrap_buffer(&small, align / 2, 4) {
                Err(Error::InvalidParameter { name: "offset", .. }) => {}
                other => panic!("misaligned offset: {other:?}"),
            }
        }
        match xw.wrap_vec::<u32>(&foreign, 0, 16) {
            Err(Error::ForeignBuffer { .. }) => {}
            other => panic!("a buffer of another wgpu device: {other:?}"),
        }
        match xw.wrap_vec::<u32>(&noop_buffer, 0, 16) {
            Err(Error::InvalidParameter { name: "buffer", .. }) => {}
            other => panic!("a buffer of another backend: {other:?}"),
        }
        match xw.wrap_vec::<u32>(&destroyed, 0, 16) {
            Err(Error::InvalidParameter { name: "buffer", .. }) => {}
            other => panic!("a destroyed buffer: {other:?}"),
        }
        match xw.wrap_vec::<u32>(&mapped, 0, 16) {
            Err(Error::InvalidParameter {
                name: "buffer",
                value,
                ..
            }) => assert_eq!(value, "a mapped buffer"),
            other => panic!("a mapped buffer: {other:?}"),
        }
    }

    // Usages the operations need beyond STORAGE, named as wgpu names them.
    let read_only = buffer(
        device,
        "no COPY_DST",
        64,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let write_only = buffer(
        device,
        "no COPY_SRC",
        64,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
    );
    // SAFETY: the buffers are this device's and outlive the work using them (the calls below
    // finish it or refuse it).
    let (mut read_only_v, write_only_v) = unsafe {
        (
            xw.wrap_vec::<u32>(&read_only, 0, 16).unwrap(),
            xw.wrap_vec::<u32>(&write_only, 0, 16).unwrap(),
        )
    };
    match device_scan_in_place(&xw, ReduceOp::Sum, ScanKind::Inclusive, &mut read_only_v) {
        Err(Error::MissingUsage { usage, .. }) => {
            assert!(usage.starts_with("wgpu::BufferUsages::COPY_DST"), "{usage}")
        }
        other => panic!("an in-place scan without COPY_DST: {other:?}"),
    }
    match write_only_v.to_vec(&xw) {
        Err(Error::MissingUsage { usage, .. }) => {
            assert!(usage.starts_with("wgpu::BufferUsages::COPY_SRC"), "{usage}")
        }
        other => panic!("a download without COPY_SRC: {other:?}"),
    }
    xw.synchronize().unwrap();

    // Both still work: wgpu writes, xwarp reduces, wgpu copies the result for the host.
    let input: Vec<u32> = Rng::new(common::seed()).vec(1000);
    let data = buffer(device, "data", 4000, storage());
    let out = buffer(device, "out", 4, storage());
    gpu.queue
        .write_buffer(&data, 0, bytemuck::cast_slice(&input));
    gpu.queue.write_buffer(&out, 0, &[0xcd; 4]);
    // SAFETY: as above.
    let (data_v, mut out_v) = unsafe {
        (
            xw.wrap_vec::<u32>(&data, 0, 1000).unwrap(),
            xw.wrap_vec::<u32>(&out, 0, 1).unwrap(),
        )
    };
    device_reduce(&xw, ReduceOp::Xor, &data_v, &mut out_v, 0).unwrap();
    let readback = buffer(
        device,
        "readback",
        4,
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    );
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, 4);
    xw.submit_wgpu([encoder.finish()]).unwrap();
    let want = input.iter().fold(0, |a, &b| a ^ b);
    check_words(
        "device_reduce xor after misuse",
        1000,
        &[want],
        &map_words(device, &readback),
    );
    assert_no_messages("misuse");
}

/// xwarp's recorded work is submitted when xwarp is dropped, after wgpu's queued writes, and
/// wgpu goes on working on the same buffers afterwards.
#[test]
fn wgpu_works_on_after_xwarp_is_dropped() {
    let _serial = serial();
    let (gpu, xw) = open();
    let device = &gpu.device;
    let input: Vec<u32> = Rng::new(common::seed()).vec(4097);
    let data = buffer(device, "data", 4 * 4097, storage());
    let out = buffer(device, "out", 4 * 4097, storage());
    // SAFETY: the buffers outlive the work (xwarp's drop below finishes it).
    let (data_v, mut out_v) = unsafe {
        (
            xw.wrap_vec::<u32>(&data, 0, 4097).unwrap(),
            xw.wrap_vec::<u32>(&out, 0, 4097).unwrap(),
        )
    };
    // Queued after the wrap, submitted by xwarp before its own work.
    gpu.queue
        .write_buffer(&data, 0, bytemuck::cast_slice(&input));
    device_scan(&xw, ReduceOp::Max, ScanKind::Inclusive, &data_v, &mut out_v).unwrap();
    drop((data_v, out_v));
    drop(xw);

    // wgpu alone from here: a copy of xwarp's result, then a pass of its own over it.
    let readback = buffer(
        device,
        "readback",
        4 * 4097,
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    );
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, 4 * 4097);
    gpu.queue.submit([encoder.finish()]);
    let mut running = 0u32;
    let want: Vec<u32> = input
        .iter()
        .map(|&x| {
            running = running.max(x);
            running
        })
        .collect();
    check_words(
        "device_scan inclusive max, read by wgpu after xwarp is gone",
        4097,
        &want,
        &map_words(device, &readback),
    );
    let params = buffer(
        device,
        "params",
        16,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    gpu.queue
        .write_buffer(&params, 0, bytemuck::cast_slice(&[4097u32, 9, 0, 0]));
    let make_keys = pipeline(device, MAKE_KEYS);
    let mut encoder = pass(device, &make_keys, &[&params, &out], 4097);
    encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, 4 * 4097);
    gpu.queue.submit([encoder.finish()]);
    let want: Vec<u32> = (0..4097).map(|i| hash_key(i, 9)).collect();
    check_words(
        "a wgpu pass after xwarp is gone",
        4097,
        &want,
        &map_words(device, &readback),
    );
    assert_no_messages("wgpu after xwarp");
}

/// Two threads share the queue: one runs xwarp reductions and reads, the other submits wgpu
/// passes through `WgpuXwarp::submit_wgpu`, which takes xwarp's lock around the queue.
#[test]
fn threads_share_the_queue_through_submit() {
    let _serial = serial();
    let (gpu, xw) = open();
    let xw = Arc::new(xw);
    let device = gpu.device.clone();
    let queue = gpu.queue.clone();
    let seed = common::seed();
    let wgpu_side = {
        let xw = xw.clone();
        std::thread::spawn(move || {
            let make_keys = pipeline(&device, MAKE_KEYS);
            let keys = buffer(&device, "keys", 4 * 33, storage());
            let readback = buffer(
                &device,
                "readback",
                4 * 33,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            );
            for round in 0..20u32 {
                let params = buffer(
                    &device,
                    "params",
                    16,
                    wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                );
                queue.write_buffer(&params, 0, bytemuck::cast_slice(&[33u32, round, 0, 0]));
                let mut encoder = pass(&device, &make_keys, &[&params, &keys], 33);
                encoder.copy_buffer_to_buffer(&keys, 0, &readback, 0, 4 * 33);
                xw.submit_wgpu([encoder.finish()]).unwrap();
                let want: Vec<u32> = (0..33).map(|i| hash_key(i, round)).collect();
                check_words(
                    "wgpu pass beside xwarp",
                    33,
                    &want,
                    &map_words(&device, &readback),
                );
            }
        })
    };
    let mut rng = Rng::new(seed);
    let data = buffer(&gpu.device, "data", 4 * 4097, storage());
    let out = buffer(&gpu.device, "out", 4, storage());
    // SAFETY: the buffers outlive the work; wgpu touches them on this thread only, before
    // xwarp's calls that read them.
    let (data_v, mut out_v) = unsafe {
        (
            xw.wrap_vec::<u32>(&data, 0, 4097).unwrap(),
            xw.wrap_vec::<u32>(&out, 0, 1).unwrap(),
        )
    };
    for _ in 0..20 {
        let input: Vec<u32> = rng.vec(4097);
        xw.write(data_v.raw(), 0, bytemuck::cast_slice(&input))
            .unwrap();
        device_reduce(&*xw, ReduceOp::Sum, &data_v, &mut out_v, 0).unwrap();
        let want = input.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        check_words(
            "device_reduce sum beside wgpu",
            4097,
            &[want],
            &out_v.to_vec(&*xw).unwrap(),
        );
    }
    wgpu_side.join().unwrap();
    assert_no_messages("threads");
}

/// The capture that fails these tests: a message sent through `VK_EXT_debug_utils` reaches it
/// (so wgpu-hal's messenger, `log` and the capture are hooked up), and, with the validation
/// layer installed, so does a real validation error made on purpose.
#[test]
fn validation_messages_reach_the_capture() {
    let _serial = serial();
    let (gpu, _xw) = open();
    assert_no_messages("before the probes");
    // SAFETY: the hal device is only read for its instance and device handles, used below
    // while `gpu` (which owns them) lives.
    let hal = unsafe { gpu.device.as_hal::<wgpu::hal::api::Vulkan>() }
        .expect("a device of wgpu's Vulkan backend");
    let shared = hal.shared_instance();
    let debug_utils = ash::ext::debug_utils::Instance::new(shared.entry(), shared.raw_instance());
    let text = c"xwarp capture probe: a message sent on purpose";
    let data = ash::vk::DebugUtilsMessengerCallbackDataEXT::default()
        .message_id_name(c"xwarp-capture-probe")
        .message(text);
    // SAFETY: the instance has VK_EXT_debug_utils (wgpu-hal enables it for
    // InstanceFlags::DEBUG, and the messenger the message goes to is wgpu-hal's); `data`
    // outlives the call.
    unsafe {
        debug_utils.submit_debug_utils_message(
            ash::vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
            ash::vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION,
            &data,
        )
    };
    let got = std::mem::take(&mut *MESSAGES.lock().unwrap());
    assert!(
        got.iter().any(|m| m.contains("xwarp-capture-probe")),
        "the message sent through VK_EXT_debug_utils did not reach the capture: {got:?}"
    );
    if !validation_layer_installed() {
        eprintln!("validation layer not installed: the real-error probe is skipped");
        return;
    }
    // A buffer shared concurrently by one queue family: VUID-VkBufferCreateInfo-sharingMode-00914
    // (concurrent sharing needs more than one family). Drivers ignore the family list, and the
    // buffer is destroyed at once.
    let families = [hal.queue_family_index()];
    let info = ash::vk::BufferCreateInfo::default()
        .size(256)
        .usage(ash::vk::BufferUsageFlags::STORAGE_BUFFER)
        .sharing_mode(ash::vk::SharingMode::CONCURRENT)
        .queue_family_indices(&families);
    let raw = hal.raw_device();
    // SAFETY: a buffer no memory is bound to, never used, destroyed before the device.
    unsafe {
        if let Ok(buffer) = raw.create_buffer(&info, None) {
            raw.destroy_buffer(buffer, None);
        }
    }
    let got = std::mem::take(&mut *MESSAGES.lock().unwrap());
    assert!(
        got.iter().any(|m| m.contains("00914")),
        "the validation layer's error did not reach the capture: {got:?}"
    );
}
