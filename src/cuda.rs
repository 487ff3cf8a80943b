//! The CUDA backend: warp intrinsics in kernels compiled at run time by NVRTC, driven through
//! the CUDA driver API (via `cudarc`).
//!
//! Every kernel source `cuda/NAME.cu` is embedded in the library at build time, with
//! `cuda/common.cuh` prepended to it, and compiled on first use for the device's compute
//! capability with `-std=c++17`, `-DXW_T=xw_elem_t` (a typedef of the element's CUDA type,
//! declared ahead of `common.cuh`: the macro must be one token for `XW_T(0)` to parse when the
//! type is `unsigned int`) and one `-DNAME=value` per variant constant. Loaded kernels are
//! cached per device and variant; [`Device::kernel_stats`] reports, for each one and each block
//! size it was launched with, the driver's function attributes (registers, static shared
//! memory, local memory, largest block) and the occupancy
//! (`cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags`).
//!
//! Both libraries are loaded at run time: `libcuda.so` (NVIDIA driver) and `libnvrtc.so`
//! (CUDA toolkit). [`available`] says, as a typed error, which one is missing instead of
//! panicking as `cudarc` would.
//!
//! A [`CudaDevice`] holds one context (the device's primary context) and issues all work on
//! that context's default stream, so every upload, launch and download is ordered after the
//! ones before it without cross-stream events.
//!
//! # Using an application's CUDA context and memory
//!
//! [`CudaDevice::from_external`] opens the backend on the application's `cudarc` context and
//! stream: xwarp issues every copy and launch on that stream, so it is ordered with the
//! application's own work on the stream by stream order, with nothing else to do. xwarp holds
//! clones of the two `Arc`s (the cudarc way of keeping a context alive) and creates only its
//! own kernel modules (NVRTC-compiled on first use) and the memory it allocates itself, on that
//! stream; it never destroys the context or the stream.
//!
//! [`CudaDevice::wrap_slice`] (a `CudaSlice`, `CudaViewMut`) and [`CudaDevice::wrap_device_ptr`]
//! (a raw device pointer and a length) make the application's memory usable wherever a
//! [`DeviceVec`] is, with no copy; dropping the wrapper frees nothing.
//!
//! **Synchronisation contract.**
//! - Launches and device copies are queued on the stream and return at once; uploads return
//!   once the host data is staged; [`Device::read`] (`DeviceVec::to_vec`) and
//!   [`Device::synchronize`] return when the stream has finished everything queued so far (the
//!   application's work on it included).
//! - Work on the same stream needs nothing more. Work on other streams is ordered by the
//!   application: record an event on xwarp's stream after the xwarp call and wait on it
//!   (`CudaStream::join`), or synchronize. `wrap_slice` makes xwarp's stream wait for the
//!   slice's pending reads and writes that cudarc tracks (when the context tracks events).
//! - xwarp records no events the application must wait on; dropping the [`CudaDevice`]
//!   synchronizes the stream, so the kernels it loaded are unloaded only when idle.
//! - Wrapped memory must stay allocated until the work that uses it has finished: see the
//!   safety contract of [`CudaDevice::wrap_device_ptr`].

use crate::device::{
    kernel_label, BackendKind, Device, DeviceId, DeviceInfo, DeviceType, DeviceVec, Kernel,
    KernelStats, Launch, MemoryUsage, RawBuffer, SubgroupFeatures, Subnormals, COUNTER_BYTES,
    MAX_PARAMS,
};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use cudarc::driver::{
    result as cu, sys, CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{self, CompileError, CompileOptions};
use std::collections::{BTreeSet, HashMap};
use std::ffi::c_int;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Shared helpers, prepended to every kernel source.
const COMMON: &str = include_str!("../cuda/common.cuh");

// `SOURCES`: every `cuda/*.cu`, as (file stem, text); `HEADERS`: every `cuda/*.cuh` but
// common.cuh, as (file name, text). Written by build.rs.
include!(concat!(env!("OUT_DIR"), "/cuda_sources.rs"));

/// The embedded source of kernel `name`, if there is one.
fn source(name: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Threads per warp on every CUDA device.
const WARP: u32 = 32;
/// Largest block CUDA launches (every compute capability).
const MAX_BLOCK: u32 = 1024;
/// Required alignment of a binding's byte offset.
const BINDING_ALIGNMENT: u64 = 16;
/// Most kernel parameters asked of `cuFuncGetParamInfo` before giving up.
const MAX_KERNEL_PARAMS: usize = 256;
/// First driver (12.4) with `cuFuncGetParamInfo`.
const DRIVER_WITH_PARAM_INFO: c_int = 12040;
/// First driver (12.8) with `cuEventElapsedTime_v2`, which cudarc calls with `cuda-13000`.
const DRIVER_WITH_ELAPSED_V2: c_int = 12080;

/// The number of parameters the PTX entry `name` declares (`.param` lines of its parameter
/// list), or `None` when the entry is not found.
fn entry_param_count(ptx: &str, name: &str) -> Option<usize> {
    let start = ptx.find(&format!(".entry {name}("))?;
    let list = &ptx[start..];
    let end = list.find(')')?;
    Some(list[..end].matches(".param").count())
}

/// Maps a driver error to [`Error::Cuda`] naming what was being done.
fn cuda_err(call: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        reason: format!("{e:?}"),
    }
}

/// [`Error::BackendUnavailable`] for CUDA.
fn unavailable(reason: impl Into<String>) -> Error {
    Error::BackendUnavailable {
        backend: BackendKind::Cuda,
        reason: reason.into(),
    }
}

/// Locks a mutex, ignoring poisoning: the guarded data (caches, buffer handles) stays valid
/// whatever a panicking holder was doing.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Number of CUDA devices, or why CUDA cannot be used on this machine.
///
/// Checks that the driver library (`libcuda.so`) and NVRTC (`libnvrtc.so`) can be loaded before
/// touching either, so a machine without them gets [`Error::BackendUnavailable`] naming what
/// is missing, never a panic. A driver that finds no device is also reported as unavailable.
pub fn available() -> Result<usize> {
    // SAFETY: this only tries to dlopen the driver library under its usual names and closes it
    // again; loading runs the library's own initialisers, which the NVIDIA driver supports, and
    // cudarc loads exactly these names when the driver is first used.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(
            "the CUDA driver library libcuda.so (libcuda.so.1) was not found: it comes with the \
             NVIDIA GPU driver; install the driver (e.g. the nvidia-driver / libcuda1 package, \
             or NVIDIA's installer) and make sure the library is on the loader path \
             (ldconfig or LD_LIBRARY_PATH)",
        ));
    }
    // SAFETY: as above, for NVRTC, whose initialisers are likewise safe to run.
    if !unsafe { nvrtc::sys::is_culib_present() } {
        return Err(unavailable(
            "the NVRTC runtime compiler libnvrtc.so (libnvrtc.so.13) was not found: it comes \
             with the CUDA toolkit (13.x), or from the `nvidia-cuda-nvrtc` Python wheel; put \
             the directory holding it on LD_LIBRARY_PATH",
        ));
    }
    cu::init().map_err(|e| {
        unavailable(format!(
            "cuInit failed: {e:?}; check that the NVIDIA driver is loaded (nvidia-smi) and \
             that the GPU is visible (CUDA_VISIBLE_DEVICES)"
        ))
    })?;
    let count = cu::device::get_count()
        .map_err(|e| unavailable(format!("cuDeviceGetCount failed: {e:?}")))?;
    match usize::try_from(count) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(unavailable(
            "the CUDA driver reports no device (check CUDA_VISIBLE_DEVICES and nvidia-smi)",
        )),
    }
}

/// Facts about every CUDA device, by ordinal, without creating contexts on them.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    let n = available()?;
    (0..n)
        .map(|ordinal| {
            let dev = device_handle(ordinal)?;
            Ok(probe(ordinal, dev)?.info)
        })
        .collect()
}

/// The driver's handle for device `ordinal` (after [`available`] ran `cuInit`).
fn device_handle(ordinal: usize) -> Result<sys::CUdevice> {
    let index = c_int::try_from(ordinal)
        .map_err(|_| Error::invalid("ordinal", ordinal, "a CUDA device ordinal"))?;
    cu::device::get(index).map_err(cuda_err("cuDeviceGet"))
}

/// The installed driver's CUDA version, e.g. 13000 for 13.0.
fn driver_version() -> Result<c_int> {
    let mut version: c_int = 0;
    // SAFETY: cuDriverGetVersion writes one int through the pointer, which points at a live
    // local; it needs no context.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(cuda_err("cuDriverGetVersion"))?;
    Ok(version)
}

/// One device attribute.
fn attribute(dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    // SAFETY: `dev` came from cuDeviceGet after cuInit, as cuDeviceGetAttribute requires; the
    // call writes one int into a local of cudarc's.
    unsafe { cu::device::get_attribute(dev, attr) }.map_err(cuda_err("cuDeviceGetAttribute"))
}

/// What [`probe`] learns about a device.
struct Probe {
    info: DeviceInfo,
    /// Compute capability as `major * 10 + minor`.
    capability: u32,
    /// The driver's CUDA version (`13000` for 13.0).
    driver_version: c_int,
}

/// Queries the facts about device `ordinal` (handle `dev`); needs no context.
fn probe(ordinal: usize, dev: sys::CUdevice) -> Result<Probe> {
    use sys::CUdevice_attribute as A;
    let name = cu::device::get_name(dev).map_err(cuda_err("cuDeviceGetName"))?;
    let major = attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let integrated = attribute(dev, A::CU_DEVICE_ATTRIBUTE_INTEGRATED)?;
    let shared = attribute(dev, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?;
    let version = driver_version()?;
    let capability = u32::try_from(major.saturating_mul(10).saturating_add(minor)).unwrap_or(0);
    let info = DeviceInfo {
        backend: BackendKind::Cuda,
        index: ordinal,
        name,
        vendor_id: 0x10de,
        device_type: if integrated != 0 {
            DeviceType::Integrated
        } else {
            DeviceType::Discrete
        },
        driver: format!(
            "CUDA driver {}.{}, compute capability {major}.{minor}",
            version / 1000,
            version % 1000 / 10
        ),
        subgroup_size: WARP,
        min_subgroup_size: WARP,
        max_subgroup_size: WARP,
        subgroup_size_pinned: true,
        subgroup_features: SubgroupFeatures::BASIC
            | SubgroupFeatures::VOTE
            | SubgroupFeatures::ARITHMETIC
            | SubgroupFeatures::BALLOT
            | SubgroupFeatures::SHUFFLE
            | SubgroupFeatures::SHUFFLE_RELATIVE
            | SubgroupFeatures::CLUSTERED
            | SubgroupFeatures::QUAD,
        max_binding_bytes: u64::MAX,
        binding_alignment: BINDING_ALIGNMENT,
        max_groups: [i32::MAX as u32, 65535, 65535],
        shared_memory_bytes: u32::try_from(shared).unwrap_or(0),
        int64: true,
        float64: true,
        int64_atomics: true,
        // NVRTC compiles without --ftz: every kernel keeps subnormals.
        subnormals_f32: Subnormals::Guaranteed,
        subnormals_f64: Subnormals::Guaranteed,
    };
    Ok(Probe {
        info,
        capability,
        driver_version: version,
    })
}

/// The virtual architectures NVRTC can compile for (`75`, `80`, ...), if it says.
fn nvrtc_archs() -> Option<Vec<c_int>> {
    let mut count: c_int = 0;
    // SAFETY: nvrtcGetNumSupportedArchs writes one int through a pointer to a live local.
    unsafe { nvrtc::sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .ok()?;
    let len = usize::try_from(count).ok().filter(|&n| n > 0)?;
    let mut archs: Vec<c_int> = vec![0; len];
    // SAFETY: `archs` holds exactly the `count` ints NVRTC just said it would write.
    unsafe { nvrtc::sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .ok()?;
    Some(archs)
}

/// The newest architecture NVRTC supports that runs on a device of `capability`, or the
/// capability itself when NVRTC does not say (compilation then reports the mismatch).
fn pick_arch(capability: u32) -> u32 {
    nvrtc_archs()
        .and_then(|archs| {
            archs
                .into_iter()
                .filter_map(|a| u32::try_from(a).ok())
                .filter(|&a| a <= capability)
                .max()
        })
        .unwrap_or(capability)
}

/// Whether `s` is a C identifier (and so a safe macro name).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The one-token name of the element type that `XW_T` expands to in kernel sources.
const ELEM_TYPEDEF: &str = "xw_elem_t";

/// Compiles kernel `k` to PTX for virtual architecture `compute_<arch>`.
/// Replaces each `#include "NAME.cuh"` line with that embedded header (NVRTC sees one source),
/// with `#line` markers so compile errors name the right file and line.
fn expand_includes(text: &str, file: &str, depth: u32) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    for (number, line) in text.lines().enumerate() {
        let included = line
            .trim()
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'));
        match included {
            Some(name) => {
                let header = HEADERS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| *t)
                    .filter(|_| depth < 8)
                    .ok_or_else(|| Error::MissingKernel {
                        kernel: file.to_string(),
                        variant: format!("the header {name} (cuda/{name} is not embedded)"),
                    })?;
                out.push_str(&format!("#line 1 \"{name}\"\n"));
                out.push_str(&expand_includes(header, name, depth + 1)?);
                out.push_str(&format!("#line {} \"{file}\"\n", number + 2));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

fn compile(k: &Kernel<'_>, arch: u32) -> Result<nvrtc::Ptx> {
    let body = source(k.name).ok_or_else(|| Error::MissingKernel {
        kernel: k.name.to_string(),
        variant: format!("{k} on CUDA (no cuda/{}.cu is embedded)", k.name),
    })?;
    let mut options = vec![
        format!("--gpu-architecture=compute_{arch}"),
        "-std=c++17".to_string(),
        // XW_T must be one token: kernels write `XW_T(0)`, which C++ rejects for
        // `unsigned int(0)`; so it names a typedef of the CUDA type, declared first below.
        format!("-DXW_T={ELEM_TYPEDEF}"),
    ];
    for &(name, value) in k.consts {
        if !is_identifier(name) {
            return Err(Error::invalid(
                "kernel.consts",
                name,
                "C identifiers ([A-Za-z_][A-Za-z0-9_]*)",
            ));
        }
        options.push(format!("-D{name}={value}"));
    }
    let common: String = COMMON
        .lines()
        .filter(|line| line.trim() != "#pragma once")
        .map(|line| format!("{line}\n"))
        .collect();
    let file = format!("{}.cu", k.name);
    let src = format!(
        "typedef {} {ELEM_TYPEDEF};\n#line 1 \"common.cuh\"\n{common}#line 1 \"{file}\"\n{}",
        k.elem.cuda_type(),
        expand_includes(body, &file, 0)?
    );
    let opts = CompileOptions {
        options,
        name: Some(format!("{}.cu", k.name)),
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| Error::Compile {
        kernel: k.to_string(),
        log: match e {
            CompileError::CompileError {
                nvrtc,
                options,
                log,
            } => format!(
                "{nvrtc:?} (options {options:?}):\n{}",
                log.to_string_lossy().trim_end()
            ),
            other => format!("{other:?}"),
        },
    })
}

/// Device memory of a [`CudaDevice`]: what its [`RawBuffer`]s hold.
struct CudaBuffer {
    /// Base device address, for kernel arguments.
    ptr: sys::CUdeviceptr,
    /// Its context, bound to the dropping thread before the memory is freed.
    ctx: Arc<CudaContext>,
    /// The allocation; cudarc's copies need `&mut` for writes, hence the lock.
    slice: Mutex<CudaSlice<u8>>,
    /// Its device's count of live buffers, and the bytes this one holds.
    live: Arc<Live>,
    bytes: u64,
}

/// Live buffers of one [`CudaDevice`] and their bytes, for [`Device::memory_usage`].
#[derive(Default)]
struct Live {
    buffers: AtomicU64,
    bytes: AtomicU64,
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        self.live.buffers.fetch_sub(1, Ordering::Relaxed);
        self.live.bytes.fetch_sub(self.bytes, Ordering::Relaxed);
        // cudarc's CudaSlice frees without making its context current; the last handle may
        // drop on a thread that never used CUDA, so bind it first (fields drop after this).
        self.ctx.record_err(self.ctx.bind_to_thread());
    }
}

/// An application's device memory, borrowed: nothing is freed when it drops.
struct AppMemory {
    /// First byte of the borrowed range.
    ptr: sys::CUdeviceptr,
}

/// The launch parameter block, passed to kernels by value.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct ParamBlock([u8; MAX_PARAMS]);

// SAFETY: a `#[repr(C)]` array of plain bytes: no pointers, no padding, every bit pattern
// valid. The driver copies the kernel's declared parameter size from its address, which is
// at most MAX_PARAMS bytes (checked against cuFuncGetParamInfo where the driver has it).
unsafe impl DeviceRepr for ParamBlock {}

/// Identity of a compiled kernel variant.
#[derive(Clone, PartialEq, Eq, Hash)]
struct KernelKey {
    name: &'static str,
    elem: ElemKind,
    consts: Vec<(&'static str, u32)>,
}

/// A loaded kernel and what the driver says about its parameters.
#[derive(Clone)]
struct Loaded {
    func: CudaFunction,
    /// Size of each declared parameter, in order, when the driver can tell.
    params: Option<Vec<usize>>,
}

/// A loaded kernel in the device's cache, with the block sizes it was launched with (for the
/// occupancy [`Device::kernel_stats`] reports).
struct Cached {
    loaded: Loaded,
    blocks: BTreeSet<u32>,
}

/// One CUDA device: a context (the device's primary context), its default stream, and the
/// kernels compiled for it so far.
///
/// All work goes to that one stream, so it runs in issue order. Buffers keep the context alive
/// and are freed in stream order, after queued work that uses them.
pub struct CudaDevice {
    id: DeviceId,
    info: DeviceInfo,
    /// `cuda:N name`, naming the device in errors and buffers.
    label: String,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Virtual architecture kernels are compiled for (`90` for `compute_90`).
    arch: u32,
    driver_version: c_int,
    kernels: Mutex<HashMap<KernelKey, Cached>>,
    live: Arc<Live>,
    /// [`Device::counters`]: set once the device is constructed.
    counters: Option<RawBuffer>,
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaDevice")
            .field("info", &self.info)
            .field("arch", &format_args!("compute_{}", self.arch))
            .finish_non_exhaustive()
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // The kernel modules unload when `kernels` drops: let queued launches finish first.
        // An error here means the context is already broken; the next user of the stream (or
        // the application's own check of its context) meets it.
        let _ = self.stream.synchronize();
    }
}

impl CudaDevice {
    /// Opens CUDA device `ordinal` (`0..available()`).
    ///
    /// Errors: [`Error::BackendUnavailable`] without driver, NVRTC or devices,
    /// [`Error::NoSuchDevice`] for an ordinal out of range, [`Error::Cuda`] if the driver
    /// refuses a context.
    pub fn new(ordinal: usize) -> Result<Self> {
        let count = available()?;
        if ordinal >= count {
            let names: Vec<String> = (0..count)
                .map(|i| match device_handle(i).and_then(|d| probe(i, d)) {
                    Ok(p) => format!("{i} ({})", p.info.name),
                    Err(_) => i.to_string(),
                })
                .collect();
            return Err(Error::NoSuchDevice {
                backend: BackendKind::Cuda,
                selector: ordinal.to_string(),
                available: names.join(", "),
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(cuda_err("cuDevicePrimaryCtxRetain"))?;
        let Probe {
            info,
            capability,
            driver_version,
        } = probe(ordinal, ctx.cu_device())?;
        let stream = ctx.default_stream();
        CudaDevice {
            id: DeviceId::fresh(),
            label: format!("cuda:{ordinal} {}", info.name),
            info,
            ctx,
            stream,
            arch: pick_arch(capability),
            driver_version,
            kernels: Mutex::new(HashMap::new()),
            live: Arc::default(),
            counters: None,
        }
        .with_counters()
    }

    /// Opens the backend on an application's context and stream: every copy and launch of
    /// xwarp goes on `stream`, in order with the application's own work there (see the module
    /// docs). Memory xwarp allocates itself is allocated on `stream` too.
    ///
    /// Errors: [`Error::BackendUnavailable`] without NVRTC, [`Error::InvalidParameter`] when
    /// `stream` belongs to another context.
    pub fn from_external(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Result<Self> {
        available()?;
        if stream.context() != &ctx {
            return Err(Error::invalid(
                "stream",
                format!("a stream of context {:?}", stream.context().cu_ctx()),
                format!("a stream of the given context {:?}", ctx.cu_ctx()),
            ));
        }
        let ordinal = ctx.ordinal();
        let Probe {
            mut info,
            capability,
            driver_version,
        } = probe(ordinal, ctx.cu_device())?;
        info.driver.push_str(", application's context");
        CudaDevice {
            id: DeviceId::fresh(),
            label: format!("cuda:{ordinal} {} (application context)", info.name),
            info,
            ctx,
            stream,
            arch: pick_arch(capability),
            driver_version,
            kernels: Mutex::new(HashMap::new()),
            live: Arc::default(),
            counters: None,
        }
        .with_counters()
    }

    /// Allocates and zeroes the buffer of [`Device::counters`].
    fn with_counters(mut self) -> Result<Self> {
        let counters = self.alloc(COUNTER_BYTES)?;
        self.write(&counters, 0, &[0; COUNTER_BYTES as usize])?;
        self.counters = Some(counters);
        Ok(self)
    }

    /// The stream xwarp issues its work on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The context xwarp works in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Borrows `bytes` of the application's device memory from `ptr` as a [`RawBuffer`]
    /// usable wherever xwarp's own memory is (through [`DeviceVec::from_raw`]), with no copy.
    /// Dropping it frees nothing.
    ///
    /// Errors: [`Error::InvalidParameter`] for an empty range or a `ptr` that is not a multiple
    /// of [`DeviceInfo::binding_alignment`] (16 bytes); [`Error::OutOfBounds`] when the driver
    /// reports that `ptr..ptr + bytes` does not lie inside one allocation. Overlapping wrapped
    /// ranges passed as the input and the output of one operation give unspecified results.
    ///
    /// # Safety
    /// - `ptr..ptr + bytes` is device memory of this context's device, accessible in this
    ///   context, and stays allocated until every clone of the returned buffer has dropped and
    ///   the work that used it has finished (a [`Device::synchronize`] after the last use, or
    ///   stream order: memory freed with `cuMemFreeAsync` on xwarp's stream after the last use
    ///   is fine).
    /// - The application does not access the range from other streams or the host while
    ///   xwarp's work on it is queued, unless it orders that access after xwarp's work.
    pub unsafe fn wrap_device_ptr(&self, ptr: sys::CUdeviceptr, bytes: u64) -> Result<RawBuffer> {
        if bytes == 0 {
            return Err(Error::invalid("bytes", 0, "1 or more"));
        }
        if ptr % BINDING_ALIGNMENT != 0 {
            return Err(Error::invalid(
                "ptr",
                format!("{ptr:#x}"),
                format!("a multiple of {BINDING_ALIGNMENT} bytes"),
            ));
        }
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("cuCtxSetCurrent"))?;
        let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: the out-pointers point at live locals; the call only looks `ptr` up in the
        // driver's address map, with this device's context current.
        unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) }
            .result()
            .map_err(|e| {
                Error::invalid(
                    "ptr",
                    format!("{ptr:#x} ({e:?})"),
                    format!("a device pointer of {}", self.label),
                )
            })?;
        let offset = ptr - base;
        if offset
            .checked_add(bytes)
            .is_none_or(|end| end > size as u64)
        {
            return Err(Error::OutOfBounds {
                offset,
                end: offset.saturating_add(bytes),
                size: size as u64,
            });
        }
        Ok(RawBuffer::new(
            Arc::new(AppMemory { ptr }),
            bytes,
            self.id,
            &format!("{} (application memory)", self.label),
        ))
    }

    /// Borrows an application's `CudaSlice<T>` (or `CudaViewMut<T>`, for a sub-range) as a
    /// [`DeviceVec<T>`] with no copy. xwarp's stream first waits for the slice's pending reads
    /// and writes that cudarc tracks (where the context tracks events).
    ///
    /// Errors: [`Error::ForeignBuffer`] when the slice belongs to another context, and those of
    /// [`Self::wrap_device_ptr`].
    ///
    /// # Safety
    /// As for [`Self::wrap_device_ptr`]: the slice is not dropped (freed) until the work using
    /// the returned vector has finished, unless it was allocated on xwarp's stream (cudarc
    /// frees it in that stream's order); it is not used on other streams or the host
    /// meanwhile.
    pub unsafe fn wrap_slice<T: Element, S: DevicePtrMut<T>>(
        &self,
        slice: &mut S,
    ) -> Result<DeviceVec<T>> {
        if slice.stream().context() != &self.ctx {
            return Err(Error::ForeignBuffer {
                buffer: format!(
                    "a CudaSlice of cuda:{} context {:?}",
                    slice.stream().context().ordinal(),
                    slice.stream().context().cu_ctx()
                ),
                device: self.label.clone(),
            });
        }
        let len = slice.len();
        let bytes = (len as u64) * T::KIND.size() as u64;
        let ptr = {
            // Makes xwarp's stream wait for the slice's tracked accesses; the returned guard
            // records a write on xwarp's stream as it drops.
            let (ptr, _write) = slice.device_ptr_mut(&self.stream);
            ptr
        };
        // SAFETY: the caller upholds wrap_device_ptr's contract for the slice's memory.
        let raw = unsafe { self.wrap_device_ptr(ptr, bytes) }?;
        DeviceVec::from_raw(raw, len)
    }

    /// The buffer object behind `raw`, if xwarp allocated it on this device.
    fn buffer<'a>(&self, raw: &'a RawBuffer) -> Result<&'a CudaBuffer> {
        raw.downcast::<CudaBuffer>(self.id, &self.label)
    }

    /// The application memory behind `raw`, if it was wrapped on this device.
    fn app_memory<'a>(&self, raw: &'a RawBuffer) -> Option<&'a AppMemory> {
        raw.downcast::<AppMemory>(self.id, &self.label).ok()
    }

    /// The device address of byte 0 of `raw`, xwarp's memory or wrapped.
    fn device_ptr(&self, raw: &RawBuffer) -> Result<sys::CUdeviceptr> {
        match self.app_memory(raw) {
            Some(app) => Ok(app.ptr),
            None => self.buffer(raw).map(|b| b.ptr),
        }
    }

    /// The loaded kernel for `k`, compiling and loading it on first use; notes that it is
    /// launched with `block` threads per block.
    fn function(&self, k: &Kernel<'_>, block: u32) -> Result<Loaded> {
        let key = KernelKey {
            name: k.name,
            elem: k.elem,
            consts: k.consts.to_vec(),
        };
        if let Some(cached) = lock(&self.kernels).get_mut(&key) {
            cached.blocks.insert(block);
            return Ok(cached.loaded.clone());
        }
        // Compile without holding the lock, so launches of cached kernels go on meanwhile.
        let loaded = self.build(k)?;
        let mut kernels = lock(&self.kernels);
        let cached = kernels.entry(key).or_insert(Cached {
            loaded,
            blocks: BTreeSet::new(),
        });
        cached.blocks.insert(block);
        Ok(cached.loaded.clone())
    }

    /// What the driver says about one loaded kernel launched with `block` threads per block
    /// (`None`: never launched), for [`Device::kernel_stats`]; `sm_threads` is the device's
    /// most resident threads per multiprocessor, when known.
    fn function_stats(
        &self,
        func: &CudaFunction,
        block: Option<u32>,
        sm_threads: Option<u32>,
    ) -> Vec<(String, String)> {
        use sys::CUfunction_attribute as F;
        let text = |r: std::result::Result<i32, DriverError>| match r {
            Ok(v) => v.to_string(),
            Err(e) => format!("error: {e:?}"),
        };
        let mut stats: Vec<(String, String)> = [
            (
                "NUM_REGS (registers per thread)",
                F::CU_FUNC_ATTRIBUTE_NUM_REGS,
            ),
            (
                "SHARED_SIZE_BYTES (static shared memory per block)",
                F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            ),
            (
                "LOCAL_SIZE_BYTES (local memory per thread: spills, stack)",
                F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
            ),
            (
                "MAX_THREADS_PER_BLOCK",
                F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            ),
        ]
        .into_iter()
        .map(|(name, attr)| (name.to_string(), text(func.get_attribute(attr))))
        .collect();
        let Some(block) = block else {
            return stats;
        };
        // The occupancy query does not make the context current itself.
        let blocks = self
            .ctx
            .bind_to_thread()
            .and_then(|()| func.occupancy_max_active_blocks_per_multiprocessor(block, 0, None));
        match blocks {
            Ok(n) => {
                stats.push(("max active blocks per SM".to_string(), n.to_string()));
                if let Some(max) = sm_threads.filter(|&t| t > 0) {
                    let threads = n.saturating_mul(block);
                    stats.push((
                        "occupancy (resident threads of the SM's maximum)".to_string(),
                        format!(
                            "{:.0}% ({threads} of {max})",
                            100.0 * f64::from(threads) / f64::from(max)
                        ),
                    ));
                }
            }
            Err(e) => stats.push((
                "max active blocks per SM".to_string(),
                format!("error: {e:?}"),
            )),
        }
        stats
    }

    /// Compiles `k` with NVRTC and loads it into the context.
    fn build(&self, k: &Kernel<'_>) -> Result<Loaded> {
        let ptx = compile(k, self.arch)?;
        let declared = entry_param_count(&ptx.to_src(), k.name);
        let module = self.ctx.load_module(ptx).map_err(|e| Error::Cuda {
            call: "cuModuleLoadData",
            reason: if e.0 == sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION {
                format!(
                    "{e:?}: the NVRTC library is newer than the driver (CUDA {}.{}); upgrade \
                     the NVIDIA driver or use an NVRTC no newer than it",
                    self.driver_version / 1000,
                    self.driver_version % 1000 / 10
                )
            } else {
                format!("{e:?}")
            },
        })?;
        let func = module
            .load_function(k.name)
            .map_err(cuda_err("cuModuleGetFunction"))?;
        let params = declared.and_then(|count| self.param_sizes(&func, count));
        Ok(Loaded { func, params })
    }

    /// Sizes of the kernel's `count` declared parameters (counted in its PTX, so no query asks
    /// past the last one), or `None` where the driver cannot say (before 12.4, or on any error).
    fn param_sizes(&self, func: &CudaFunction, count: usize) -> Option<Vec<usize>> {
        if self.driver_version < DRIVER_WITH_PARAM_INFO || count > MAX_KERNEL_PARAMS {
            return None;
        }
        self.ctx.bind_to_thread().ok()?;
        let mut sizes = Vec::new();
        for index in 0..count {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: the function handle is valid while `func` (which holds its module) lives;
            // the out-pointers point at live locals; this device's context is current.
            let r = unsafe {
                sys::cuFuncGetParamInfo(func.cu_function(), index, &mut offset, &mut size)
            };
            if r != sys::CUresult::CUDA_SUCCESS {
                return None;
            }
            sizes.push(size);
        }
        Some(sizes)
    }
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn id(&self) -> DeviceId {
        self.id
    }

    fn alloc(&self, bytes: u64) -> Result<RawBuffer> {
        let oom = |reason: String| Error::OutOfMemory {
            bytes,
            device: self.label.clone(),
            reason,
        };
        // The driver refuses zero-byte allocations; the buffer still reports `bytes`.
        let len = usize::try_from(bytes.max(1))
            .map_err(|_| oom("larger than the host address space".to_string()))?;
        // Contents are undefined by the trait's contract, so no memset joins the stream (it
        // would run inside every timed call that allocates temporaries).
        // SAFETY: `u8` is valid for every bit pattern, and the memory is only reached through
        // the returned buffer, which frees it on drop.
        let slice = unsafe { self.stream.alloc::<u8>(len) }.map_err(|e| match e.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY | sys::CUresult::CUDA_ERROR_INVALID_VALUE => {
                oom(format!("{e:?}"))
            }
            _ => cuda_err("cuMemAllocAsync")(e),
        })?;
        let ptr = {
            let (ptr, _record) = slice.device_ptr(&self.stream);
            ptr
        };
        self.live.buffers.fetch_add(1, Ordering::Relaxed);
        self.live.bytes.fetch_add(len as u64, Ordering::Relaxed);
        let buffer = CudaBuffer {
            ptr,
            ctx: self.ctx.clone(),
            slice: Mutex::new(slice),
            live: self.live.clone(),
            bytes: len as u64,
        };
        Ok(RawBuffer::new(
            Arc::new(buffer),
            bytes,
            self.id,
            &self.label,
        ))
    }

    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        if let Some(app) = self.app_memory(dst) {
            dst.check_range(offset, src.len() as u64)?;
            if src.is_empty() {
                return Ok(());
            }
            self.ctx
                .bind_to_thread()
                .map_err(cuda_err("cuCtxSetCurrent"))?;
            // SAFETY: the range lies inside the wrapped memory (checked above), which the
            // wrap contract keeps allocated while work on it is queued; `src` is pageable, so
            // the driver has staged it when the call returns.
            return unsafe {
                cu::memcpy_htod_async(app.ptr + offset, src, self.stream.cu_stream())
            }
            .map_err(cuda_err("cuMemcpyHtoDAsync"));
        }
        let buffer = self.buffer(dst)?;
        dst.check_range(offset, src.len() as u64)?;
        if src.is_empty() {
            return Ok(());
        }
        let start = usize::try_from(offset)
            .map_err(|_| Error::invalid("offset", offset, "inside the buffer"))?;
        let mut slice = lock(&buffer.slice);
        let mut view = slice
            .try_slice_mut(start..start + src.len())
            .ok_or(Error::OutOfBounds {
                offset,
                end: offset.saturating_add(src.len() as u64),
                size: dst.bytes(),
            })?;
        // Pageable host memory: the driver has staged `src` when this returns.
        self.stream
            .memcpy_htod(src, &mut view)
            .map_err(cuda_err("cuMemcpyHtoDAsync"))
    }

    fn copy(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let from = self.device_ptr(src)?;
        let to = self.device_ptr(dst)?;
        src.check_range(src_offset, bytes)?;
        dst.check_range(dst_offset, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("cuCtxSetCurrent"))?;
        // SAFETY: both ranges lie inside live allocations of this context (checked above, and
        // the buffers are borrowed for the call); the copy is ordered on the device's one
        // stream, where the memory is freed too, so it cannot outlive them.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                to + dst_offset,
                from + src_offset,
                bytes as usize,
                self.stream.cu_stream(),
            )
        }
        .map_err(cuda_err("cuMemcpyDtoDAsync"))
    }

    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        if let Some(app) = self.app_memory(src) {
            src.check_range(offset, dst.len() as u64)?;
            if !dst.is_empty() {
                self.ctx
                    .bind_to_thread()
                    .map_err(cuda_err("cuCtxSetCurrent"))?;
                // SAFETY: the range lies inside the wrapped memory (checked above); `dst` is
                // pageable host memory, which the driver fills before the call returns, and
                // the stream is synchronised below before `dst` is handed back anyway.
                unsafe { cu::memcpy_dtoh_async(dst, app.ptr + offset, self.stream.cu_stream()) }
                    .map_err(cuda_err("cuMemcpyDtoHAsync"))?;
            }
            return self
                .stream
                .synchronize()
                .map_err(cuda_err("cuStreamSynchronize"));
        }
        let buffer = self.buffer(src)?;
        src.check_range(offset, dst.len() as u64)?;
        if dst.is_empty() {
            return Ok(());
        }
        let start = usize::try_from(offset)
            .map_err(|_| Error::invalid("offset", offset, "inside the buffer"))?;
        {
            let slice = lock(&buffer.slice);
            let view = slice
                .try_slice(start..start + dst.len())
                .ok_or(Error::OutOfBounds {
                    offset,
                    end: offset.saturating_add(dst.len() as u64),
                    size: src.bytes(),
                })?;
            self.stream
                .memcpy_dtoh(&view, dst)
                .map_err(cuda_err("cuMemcpyDtoHAsync"))?;
        }
        self.stream
            .synchronize()
            .map_err(cuda_err("cuStreamSynchronize"))
    }

    fn launch(&self, l: &Launch<'_>) -> Result<()> {
        if l.params.len() > MAX_PARAMS {
            return Err(Error::invalid(
                "params",
                format!("{} bytes", l.params.len()),
                format!("at most {MAX_PARAMS} bytes"),
            ));
        }
        if !(WARP..=MAX_BLOCK).contains(&l.block) || l.block % WARP != 0 {
            return Err(Error::invalid(
                "block",
                l.block,
                format!("a multiple of {WARP} in {WARP}..={MAX_BLOCK}"),
            ));
        }
        for (axis, (&g, &max)) in l.groups.iter().zip(&self.info.max_groups).enumerate() {
            if g == 0 || g > max {
                return Err(Error::invalid(
                    "groups",
                    format!("{:?}", l.groups),
                    format!("1..={max} along axis {axis}"),
                ));
            }
        }
        let mut pointers: Vec<u64> = Vec::with_capacity(l.bindings.len());
        for b in l.bindings {
            let ptr = self.device_ptr(b.buffer)?;
            b.buffer.check_range(b.offset, b.bytes)?;
            if b.offset % BINDING_ALIGNMENT != 0 {
                return Err(Error::invalid(
                    "binding.offset",
                    b.offset,
                    format!("a multiple of {BINDING_ALIGNMENT} bytes"),
                ));
            }
            pointers.push(ptr + b.offset);
        }
        let loaded = self.function(&l.kernel, l.block)?;
        if let Some(sizes) = &loaded.params {
            let n = pointers.len();
            let fits = (sizes.len() == n || sizes.len() == n + 1)
                && sizes
                    .iter()
                    .take(n)
                    .all(|&s| s == std::mem::size_of::<u64>())
                && sizes.get(n).is_none_or(|&s| s <= MAX_PARAMS);
            if !fits {
                return Err(Error::invalid(
                    "bindings",
                    format!("{n} buffers and a parameter block"),
                    format!(
                        "what kernel `{}` declares: parameters of {sizes:?} bytes (one 8-byte \
                         pointer per buffer, then at most a {MAX_PARAMS}-byte struct)",
                        l.kernel
                    ),
                ));
            }
        }
        let mut block = ParamBlock([0; MAX_PARAMS]);
        // `params` fits: its length was checked against MAX_PARAMS above.
        if let Some(head) = block.0.get_mut(..l.params.len()) {
            head.copy_from_slice(l.params);
        }
        let cfg = LaunchConfig {
            grid_dim: (l.groups[0], l.groups[1], 1),
            block_dim: (l.block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut args = self.stream.launch_builder(&loaded.func);
        for p in &pointers {
            args.arg(p);
        }
        args.arg(&block);
        // SAFETY: the arguments follow the xwarp kernel convention (`kernel(T* binding0, ...,
        // Params p)`): one u64 device pointer per binding, then the by-value parameter block;
        // where the driver reports the kernel's parameters (12.4+) their count and sizes were
        // checked above, so the driver never reads past `pointers` or `block`, both of which
        // live until the launch has copied them. Each pointer is the base of a live allocation
        // in this context (or of a wrapped application range) plus an offset whose `bytes` range was checked to lie inside it, and
        // the kernels touch only those ranges. The memory cannot be freed under the kernel:
        // CudaSlice's Drop frees with cuMemFreeAsync on this same stream (or synchronises the
        // stream first when the device lacks memory pools), i.e. after this launch completes;
        // wrapped application memory stays allocated by the contract of `wrap_device_ptr`.
        unsafe { args.launch(cfg) }.map_err(cuda_err("cuLaunchKernel"))?;
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(cuda_err("cuStreamSynchronize"))
    }

    fn counters(&self) -> Option<&RawBuffer> {
        self.counters.as_ref()
    }

    fn kernel_stats(&self) -> Vec<KernelStats> {
        let sm_threads = attribute(
            self.ctx.cu_device(),
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )
        .ok()
        .and_then(|t| u32::try_from(t).ok());
        // One entry per kernel and block size launched (a kernel loaded but never launched
        // gets one without a block size); queried outside the lock, so launches go on.
        let mut entries: Vec<(KernelKey, Option<u32>, CudaFunction)> = Vec::new();
        for (key, cached) in lock(&self.kernels).iter() {
            let func = &cached.loaded.func;
            if cached.blocks.is_empty() {
                entries.push((key.clone(), None, func.clone()));
            }
            for &block in &cached.blocks {
                entries.push((key.clone(), Some(block), func.clone()));
            }
        }
        entries.sort_by(|(a, ab, _), (b, bb, _)| {
            (a.name, a.elem.name(), ab, &a.consts).cmp(&(b.name, b.elem.name(), bb, &b.consts))
        });
        entries
            .into_iter()
            .map(|(key, block, func)| KernelStats {
                kernel: kernel_label(key.name, key.elem.name(), block, key.consts),
                executable: String::new(),
                stats: self.function_stats(&func, block, sm_threads),
            })
            .collect()
    }

    fn memory_usage(&self) -> Option<MemoryUsage> {
        let bytes = self.live.bytes.load(Ordering::Relaxed);
        // Device-wide use (every context and process), as the driver counts it.
        let used = self
            .ctx
            .mem_get_info()
            .map(|(free, total)| total.saturating_sub(free) as u64)
            .unwrap_or(0);
        Some(MemoryUsage {
            buffers: self.live.buffers.load(Ordering::Relaxed),
            bytes,
            reserved_bytes: used.max(bytes),
        })
    }

    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        if self.driver_version < DRIVER_WITH_ELAPSED_V2 {
            return Err(Error::Cuda {
                call: "cuEventElapsedTime_v2",
                reason: format!(
                    "GPU timing needs a CUDA 12.8 or newer driver; this one is CUDA {}.{}",
                    self.driver_version / 1000,
                    self.driver_version % 1000 / 10
                ),
            });
        }
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .stream
            .record_event(timing)
            .map_err(cuda_err("cuEventRecord"))?;
        work()?;
        let end = self
            .stream
            .record_event(timing)
            .map_err(cuda_err("cuEventRecord"))?;
        end.synchronize().map_err(cuda_err("cuEventSynchronize"))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(cuda_err("cuEventElapsedTime"))?;
        Duration::try_from_secs_f64(f64::from(ms) / 1e3).map_err(|e| Error::Cuda {
            call: "cuEventElapsedTime",
            reason: format!("elapsed time {ms} ms: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_is_found() {
        for (name, text) in SOURCES {
            assert_eq!(source(name), Some(*text));
            assert!(
                text.contains(&format!("void {name}(")),
                "{name}.cu defines {name}"
            );
        }
        assert_eq!(source("no_such_kernel"), None);
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("OP"));
        assert!(is_identifier("_SEGM2"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("2X"));
        assert!(!is_identifier("A=B"));
        assert!(!is_identifier("A B"));
    }

    #[test]
    fn entry_parameters_are_counted_from_ptx() {
        let ptx = ".visible .entry shfl(\n\t.param .u64 .ptr .align 1 shfl_param_0,\n\t\
                   .param .u64 shfl_param_1,\n\t.param .align 16 .b8 shfl_param_2[128]\n)\n{";
        assert_eq!(entry_param_count(ptx, "shfl"), Some(3));
        assert_eq!(entry_param_count(ptx, "vote"), None);
        assert_eq!(entry_param_count(".entry none(\n)\n{", "none"), Some(0));
    }

    #[test]
    fn param_block_is_max_params_bytes() {
        assert_eq!(std::mem::size_of::<ParamBlock>(), MAX_PARAMS);
    }

    /// The architecture NVRTC compiles for on a 9.0 device, or `None` (said on stderr) where
    /// NVRTC is not installed: the compile tests then have nothing to check.
    fn nvrtc_arch_for_tests() -> Option<u32> {
        // SAFETY: only tries to load NVRTC under its usual names, as `available` does.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            eprintln!("NVRTC not found: skipping");
            return None;
        }
        Some(pick_arch(90))
    }

    /// Compiles one kernel variant and returns the parameter count of its PTX entry; panics
    /// with the variant and NVRTC's log on failure, or when the entry is missing.
    fn compiles(
        name: &'static str,
        elem: ElemKind,
        consts: &[(&'static str, u32)],
        arch: u32,
    ) -> usize {
        let k = Kernel { name, elem, consts };
        match compile(&k, arch) {
            Ok(ptx) => entry_param_count(&ptx.to_src(), name)
                .unwrap_or_else(|| panic!("{k}: no `.entry {name}` in the PTX")),
            Err(e) => panic!("{k}: {e}"),
        }
    }

    /// Compiles every variant of the reduce kernels the library launches when NVRTC is
    /// installed (no GPU needed).
    #[test]
    fn reduce_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for elem in ElemKind::ALL {
            let ops = if matches!(elem, ElemKind::F32 | ElemKind::F64) {
                4
            } else {
                7
            };
            for op in 0..ops {
                for scope in 0..4 {
                    let consts = [
                        ("OP", op),
                        ("SCOPE", scope),
                        ("ITEMS", crate::reduce::ITEMS),
                    ];
                    compiles("reduce", elem, &consts, arch);
                }
                for grouped in 0..2 {
                    let consts = [
                        ("OP", op),
                        ("ITEMS", crate::reduce::ITEMS),
                        ("GROUPED", grouped),
                    ];
                    // Four buffers and the parameter block.
                    assert_eq!(compiles("reduce_device", elem, &consts, arch), 5);
                }
            }
        }
    }

    /// Compiles every variant of the scan kernels the library launches when NVRTC is installed.
    #[test]
    fn scan_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for elem in ElemKind::ALL {
            for op in [0, 2, 3] {
                for exclusive in [0, 1] {
                    for scope in [0, 1] {
                        let consts = [("OP", op), ("SCOPE", scope), ("EXCLUSIVE", exclusive)];
                        compiles("scan", elem, &consts, arch);
                    }
                    let partials = crate::scan::partials_in_shared(BackendKind::Cuda, elem);
                    for window in 1..=crate::scan::MAX_LOOKBACK_TILES {
                        let consts = [
                            ("OP", op),
                            ("EXCLUSIVE", exclusive),
                            ("ITEMS", crate::scan::ITEMS),
                            ("LB_TILES", window),
                            ("PARTIALS_IN_SHARED", u32::from(partials)),
                        ];
                        compiles("scan_device", elem, &consts, arch);
                    }
                }
            }
        }
    }

    /// Compiles every variant of the radix sort's kernels the library launches (and larger
    /// tiles) when NVRTC is installed.
    #[test]
    fn sort_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for elem in ElemKind::ALL {
            // Keys, the work buffer and the parameter block.
            assert_eq!(compiles("sort_histogram", elem, &[], arch), 3);
        }
        let variants = crate::sort::cuda_onesweep_variants();
        assert!(variants.len() >= 6 * 3 * 3);
        for (elem, consts) in &variants {
            // Keys in and out, values in and out, the work buffer and the parameter block.
            assert_eq!(compiles("sort_onesweep", *elem, consts, arch), 6);
        }
    }

    /// Compiles every variant of the reduction-ladder kernels when NVRTC is installed.
    #[test]
    fn ladder_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for elem in [ElemKind::I32, ElemKind::U32, ElemKind::I64, ElemKind::U64] {
            for rung in crate::ladder::LadderKernel::ALL {
                if rung != crate::ladder::LadderKernel::CompleteUnroll {
                    compiles(rung.name(), elem, &[], arch);
                }
            }
            for block in [64, 128, 256, 512, 1024] {
                compiles("reduce_complete_unroll", elem, &[("IBLOCK", block)], arch);
            }
        }
    }

    /// Compiles every variant of the stencil kernel when NVRTC is installed.
    #[test]
    fn stencil_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for elem in [ElemKind::F32, ElemKind::F64] {
            for smem in [0, 1] {
                for rows in [
                    crate::stencil::FEW_ROWS,
                    crate::stencil::ROWS,
                    crate::stencil::MANY_ROWS,
                ] {
                    let consts = [("SMEM", smem), ("ROWS", rows)];
                    compiles("stencil", elem, &consts, arch);
                }
            }
        }
    }

    /// Compiles every variant of the vote and compaction kernels when NVRTC is installed.
    #[test]
    fn vote_and_compact_compile_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for elem in ElemKind::ALL {
            compiles("vote", elem, &[("ROWS", crate::vote::ROWS)], arch);
            let items = crate::compact::items_per_thread(elem.size());
            for op in 0..3 {
                let consts = [
                    ("OP", op),
                    ("ITEMS", items),
                    ("BLOCK", crate::compact::BLOCK),
                ];
                compiles("compact", elem, &consts, arch);
            }
        }
    }

    /// Compiles the roofline kernel (both modes) and every subgroup-op chain when NVRTC is
    /// installed.
    #[test]
    fn roofline_and_chain_compile_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        for mode in [0, 1] {
            compiles("roofline", ElemKind::U32, &[("MODE", mode)], arch);
        }
        for op in crate::throughput::ChainOp::ALL {
            compiles("chain", ElemKind::U32, &[("OP", op.code())], arch);
        }
    }

    /// Compiles every variant of the shuffle kernel when NVRTC is installed (no GPU needed).
    #[test]
    fn shfl_compiles_with_nvrtc() {
        let Some(arch) = nvrtc_arch_for_tests() else {
            return;
        };
        assert!(
            (75..=90).contains(&arch),
            "NVRTC offers compute_{arch} for a 9.0 device"
        );
        assert!(pick_arch(10_000) >= arch);
        for elem in ElemKind::ALL {
            for op in 0..5 {
                for segm in [1, 4] {
                    let consts = [("OP", op), ("SEGM", segm), ("ROWS", crate::shfl::ROWS)];
                    // Two buffers and the parameter block.
                    assert_eq!(compiles("shfl", elem, &consts, arch), 3);
                }
            }
        }
        let bad = [("OP", 9), ("SEGM", 1), ("ROWS", 4)];
        let k = Kernel {
            name: "shfl",
            elem: ElemKind::F32,
            consts: &bad,
        };
        match compile(&k, arch) {
            Err(Error::Compile { kernel, log }) => {
                assert_eq!(kernel, "shfl<f32,OP=9,SEGM=1,ROWS=4>");
                assert!(log.contains("unknown OP"), "{log}");
                assert!(log.contains("shfl.cu"), "{log}");
            }
            other => panic!("expected a compile error, got {:?}", other.map(|_| ())),
        }
        let k = Kernel {
            name: "nope",
            elem: ElemKind::F32,
            consts: &[],
        };
        assert!(matches!(
            compile(&k, arch),
            Err(Error::MissingKernel { .. })
        ));
    }

    #[test]
    fn missing_libraries_are_typed_errors() {
        // On a machine without CUDA this must be BackendUnavailable, never a panic; with CUDA
        // it is a device count.
        match available() {
            Ok(n) => assert!(n > 0),
            Err(Error::BackendUnavailable { backend, reason }) => {
                assert_eq!(backend, BackendKind::Cuda);
                assert!(!reason.is_empty());
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
        if available().is_err() {
            assert!(list_devices().is_err());
            assert!(CudaDevice::new(0).is_err());
        }
    }
}
