//! xwarp inside a wgpu application, on wgpu's own buffers, with no copy: a wgpu pass writes
//! keys, xwarp sorts them into another wgpu buffer, scans the sorted keys and sums them, and a
//! second wgpu pass checks xwarp's results on the GPU; the host then maps them and compares
//! them with the CPU, bit for bit.
//!
//! ```sh
//! cargo run --example wgpu_sort --features wgpu [-- N]
//! ```
//!
//! The contract in short (`xwarp::vulkan::wgpu` has it in full):
//! - create the wgpu device with `xwarp::vulkan::wgpu::request_device`, which enables what
//!   xwarp needs beneath wgpu, and open xwarp on it with `WgpuXwarp::open`;
//! - submit wgpu work through `WgpuXwarp::submit_wgpu`: xwarp's recorded work goes first, and it may
//!   be called from any thread; xwarp's own submits (synchronize, reads) send wgpu's held-back
//!   writes first;
//! - wrapping a buffer makes wgpu initialise the range, so wgpu never clears what xwarp writes.

use std::error::Error;
use std::future::Future;
use std::pin::pin;
use std::process::ExitCode;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, ScanKind};
use xwarp::sort::{all_bits, SortOrder, Sorter};
use xwarp::vulkan::wgpu::{request_device, WgpuXwarp};
use xwarp::Device;

/// Keys: a hash of the index, a quarter of them folded onto 16 small values (duplicates and a
/// skewed digit histogram). `hash_key` below is the same function on the CPU.
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

/// Checks xwarp's results where they lie: counts the places where `sorted` descends and where
/// `prefix` is not the exclusive running sum of `sorted`.
const CHECK: &str = r#"
struct Params { n: u32, seed: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> sorted: array<u32>;
@group(0) @binding(2) var<storage, read> prefix: array<u32>;
@group(0) @binding(3) var<storage, read_write> errors: array<atomic<u32>, 2>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i + 1u >= params.n) { return; }
    if (sorted[i] > sorted[i + 1u]) { atomicAdd(&errors[0], 1u); }
    if (prefix[i + 1u] != prefix[i] + sorted[i]) { atomicAdd(&errors[1], 1u); }
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

/// Runs a future of wgpu's native backend, which resolves without an executor.
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

fn run() -> Result<bool, Box<dyn Error>> {
    let n: u32 = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 1_000_003,
    };
    if n == 0 {
        return Err("N must be 1 or more".into());
    }
    let seed = 0x5eed_1234u32;

    // 1. The application's wgpu device, created with what xwarp needs, and xwarp on it.
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))?;
    let gpu = request_device(&adapter, &wgpu::DeviceDescriptor::default())?;
    // SAFETY: this thread is the only user of the queue (wgpu work goes through `xw.submit`),
    // and no buffer is destroyed while xwarp uses it.
    let xw = unsafe { WgpuXwarp::open(&gpu.device, &gpu.queue, gpu.features)? };
    println!("device: {}", xw.info());
    let device = &gpu.device;

    // 2. The application's buffers.
    let bytes = 4 * u64::from(n);
    let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let buffer = |label, size, usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let keys = buffer("keys", bytes, storage);
    let sorted = buffer("sorted", bytes, storage);
    let prefix = buffer("prefix", bytes, storage);
    let total = buffer("total", 4, storage);
    let errors = buffer("errors", 8, storage | wgpu::BufferUsages::COPY_DST);
    let params = buffer(
        "params",
        8,
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    );
    gpu.queue
        .write_buffer(&params, 0, bytemuck::cast_slice(&[n, seed]));
    gpu.queue.write_buffer(&errors, 0, &[0; 8]);

    // 3. A wgpu pass writes the keys.
    let groups = n.div_ceil(64);
    let make_keys = pipeline(device, MAKE_KEYS);
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("make keys"),
        layout: &make_keys.get_bind_group_layout(0),
        entries: &[entry(0, &params), entry(1, &keys)],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&make_keys);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    xw.submit_wgpu([encoder.finish()])?;

    // 4. xwarp sorts the keys into `sorted`, scans them into `prefix`, sums them into `total`:
    //    on wgpu's buffers, no copies.
    let len = n as usize;
    // SAFETY: the buffers belong to this device and stay alive (and undestroyed) until the
    // work using them has finished; wgpu work reading them goes through `xw.submit`.
    let (keys_v, mut sorted_v, mut prefix_v, mut total_v) = unsafe {
        (
            xw.wrap_vec::<u32>(&keys, 0, len)?,
            xw.wrap_vec::<u32>(&sorted, 0, len)?,
            xw.wrap_vec::<u32>(&prefix, 0, len)?,
            xw.wrap_vec::<u32>(&total, 0, 1)?,
        )
    };
    let mut sorter = Sorter::<u32>::new(&xw, len)?;
    sorter.sort_keys(
        &xw,
        &keys_v,
        &mut sorted_v,
        SortOrder::Ascending,
        all_bits::<u32>(),
    )?;
    device_scan(
        &xw,
        ReduceOp::Sum,
        ScanKind::Exclusive,
        &sorted_v,
        &mut prefix_v,
    )?;
    device_reduce(&xw, ReduceOp::Sum, &keys_v, &mut total_v, 0)?;

    // 5. A second wgpu pass checks xwarp's results on the GPU, and copies them for the host.
    //    `xw.submit` runs xwarp's recorded work first.
    let check = pipeline(device, CHECK);
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("check"),
        layout: &check.get_bind_group_layout(0),
        entries: &[
            entry(0, &params),
            entry(1, &sorted),
            entry(2, &prefix),
            entry(3, &errors),
        ],
    });
    let readback = buffer(
        "readback",
        2 * bytes + 4 + 8,
        wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
    );
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&check);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&sorted, 0, &readback, 0, bytes);
    encoder.copy_buffer_to_buffer(&prefix, 0, &readback, bytes, bytes);
    encoder.copy_buffer_to_buffer(&total, 0, &readback, 2 * bytes, 4);
    encoder.copy_buffer_to_buffer(&errors, 0, &readback, 2 * bytes + 4, 8);
    xw.submit_wgpu([encoder.finish()])?;

    // 6. The host maps the results and compares them with the CPU, bit for bit.
    let (tx, rx) = mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device.poll(wgpu::PollType::wait_indefinitely())?;
    rx.recv()??;
    let (got_sorted, got_prefix, got_total, gpu_errors) = {
        let view = readback.get_mapped_range(..)?;
        let words: &[u32] = bytemuck::cast_slice(&view);
        (
            words[..len].to_vec(),
            words[len..2 * len].to_vec(),
            words[2 * len],
            [words[2 * len + 1], words[2 * len + 2]],
        )
    };
    readback.unmap();

    let cpu_keys: Vec<u32> = (0..n).map(|i| hash_key(i, seed)).collect();
    let mut cpu_sorted = cpu_keys.clone();
    cpu_sorted.sort_unstable();
    let mut cpu_prefix = Vec::with_capacity(len);
    let mut running = 0u32;
    for &k in &cpu_sorted {
        cpu_prefix.push(running);
        running = running.wrapping_add(k);
    }
    let mut ok = true;
    for (what, got, want) in [
        ("sorted", &got_sorted, &cpu_sorted),
        ("prefix", &got_prefix, &cpu_prefix),
    ] {
        if let Some(i) = (0..len).find(|&i| got[i] != want[i]) {
            println!(
                "MISMATCH: {what}[{i}] = {:#010x}, CPU {:#010x}",
                got[i], want[i]
            );
            ok = false;
        }
    }
    if got_total != running {
        println!("MISMATCH: total = {got_total:#010x}, CPU {running:#010x}");
        ok = false;
    }
    if gpu_errors != [0, 0] {
        println!(
            "MISMATCH: the wgpu check pass found {} descents and {} wrong prefix sums",
            gpu_errors[0], gpu_errors[1]
        );
        ok = false;
    }
    let distinct = {
        let mut d = cpu_sorted.clone();
        d.dedup();
        d.len()
    };
    println!(
        "{n} keys ({distinct} distinct) written by wgpu, sorted, scanned and summed by xwarp \
         (sum {got_total:#010x}), checked by wgpu and against the CPU"
    );
    println!("{}", if ok { "OK" } else { "MISMATCH" });
    Ok(ok)
}

/// A compute pipeline of `source`'s `main`, with the layout wgpu derives from the shader.
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

fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}
