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
//! one stream of its own, so every upload, launch and download is ordered after the ones before
//! it without cross-stream events. The stream is created blocking (`CU_STREAM_DEFAULT`): like
//! the context's default stream, it is ordered with work on the legacy default stream, which
//! is all an application that uses `CudaContext::default_stream` needs. It is a stream of its
//! own because the legacy default stream cannot be captured into a CUDA Graph
//! ([`Device::record`]).
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
//! - [`Device::record`] captures the stream into a CUDA Graph: the legacy default stream
//!   cannot be captured, so on it recording is an [`Error::Recording`]; open xwarp on a stream
//!   the application created (`CudaContext::new_stream`) to record. While a recording is
//!   open, no work may go on the legacy default stream of the context (CUDA would end the
//!   capture with an error).
//! - Wrapped memory must stay allocated until the work that uses it has finished: see the
//!   safety contract of [`CudaDevice::wrap_device_ptr`].

#[cfg(doc)]
use crate::device::DeviceVec;
use crate::device::{
    BackendKind, Device, DeviceId, DeviceInfo, KernelStats, Launch, LaunchTimes, MemoryUsage,
    RawBuffer, Recording, Ticket, COUNTER_BYTES, EPOCH_BYTES,
};
use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::collections::HashMap;
use std::ffi::c_int;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

mod launch;
mod memory;
mod nvrtc;
mod probe;
mod queue;
mod timing;

pub use probe::{available, list_devices};

use memory::Live;
use nvrtc::{Cached, KernelKey};
use probe::{device_handle, pick_arch, probe, Probe};

/// First driver (12.8) with `cuEventElapsedTime_v2`, which cudarc calls with `cuda-13000`.
const DRIVER_WITH_ELAPSED_V2: c_int = 12080;

/// Maps a driver error to [`Error::Cuda`] naming what was being done.
pub(crate) fn cuda_err(call: &'static str) -> impl FnOnce(DriverError) -> Error {
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

/// One CUDA device: a context (the device's primary context), a stream of its own, and the
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
    /// The tickets of [`Device::submit`].
    tickets: Mutex<queue::Tickets>,
    /// [`Device::counters`]: set once the device is constructed.
    counters: Option<RawBuffer>,
    /// [`Device::epochs`]: set once the device is constructed.
    epochs: Option<RawBuffer>,
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
        self.open_gate();
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
        let own = memory::OwnedStream::new(&ctx)?;
        // SAFETY: `own.raw` is a stream of `ctx`, destroyed by `own` only when the last holder
        // of `live` (the device and its buffers, whose frees go on the stream) drops; xwarp
        // orders everything it puts on the stream itself.
        let stream = unsafe { ctx.wrap_borrowed_stream(own.raw) };
        CudaDevice {
            id: DeviceId::fresh(),
            label: format!("cuda:{ordinal} {}", info.name),
            info,
            ctx,
            stream,
            arch: pick_arch(capability),
            driver_version,
            kernels: Mutex::new(HashMap::new()),
            live: Arc::new(memory::Live::with_stream(own)),
            tickets: Mutex::default(),
            counters: None,
            epochs: None,
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
            tickets: Mutex::default(),
            counters: None,
            epochs: None,
        }
        .with_counters()
    }

    /// Allocates and zeroes the buffers of [`Device::counters`] and [`Device::epochs`].
    fn with_counters(mut self) -> Result<Self> {
        let counters = self.alloc(COUNTER_BYTES)?;
        self.write(&counters, 0, &vec![0; COUNTER_BYTES as usize])?;
        self.counters = Some(counters);
        let epochs = self.alloc(EPOCH_BYTES)?;
        self.write(&epochs, 0, &vec![0; EPOCH_BYTES as usize])?;
        self.epochs = Some(epochs);
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
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn id(&self) -> DeviceId {
        self.id
    }

    fn alloc(&self, bytes: u64) -> Result<RawBuffer> {
        self.alloc_buffer(bytes)
    }

    fn window(&self, raw: &RawBuffer, offset: u64, bytes: u64) -> Result<RawBuffer> {
        self.window_of(raw, offset, bytes)
    }

    fn write(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        self.upload(dst, offset, src)
    }

    fn copy(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        self.copy_on_device(src, src_offset, dst, dst_offset, bytes)
    }

    fn read(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        self.download(src, offset, dst)
    }

    fn launch(&self, l: &Launch<'_>) -> Result<()> {
        self.record_launch(l)
    }

    fn synchronize(&self) -> Result<()> {
        let _turn = self.refuse_in_recording("Device::synchronize")?;
        self.stream
            .synchronize()
            .map_err(cuda_err("cuStreamSynchronize"))?;
        self.all_done();
        Ok(())
    }

    fn submit(&self) -> Result<Ticket> {
        self.submit_work()
    }

    fn wait(&self, ticket: Ticket) -> Result<()> {
        self.wait_ticket(ticket)
    }

    fn is_done(&self, ticket: Ticket) -> Result<bool> {
        self.ticket_done(ticket)
    }

    fn record(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Recording> {
        self.record_work(work)
    }

    fn replay(&self, recording: &Recording) -> Result<Ticket> {
        self.replay_recording(recording)
    }

    fn counters(&self) -> Option<&RawBuffer> {
        self.counters.as_ref()
    }

    fn epochs(&self) -> Option<&RawBuffer> {
        self.epochs.as_ref()
    }

    fn kernel_stats(&self) -> Vec<KernelStats> {
        self.kernel_statistics()
    }

    fn memory_usage(&self) -> Option<MemoryUsage> {
        self.live_usage()
    }

    fn time(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        Ok(self.timed(work, false)?.total)
    }

    fn time_launches(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<LaunchTimes> {
        self.timed(work, true)
    }

    fn fill_words(&self, dst: &RawBuffer, offset: u64, bytes: u64, word: u32) -> Result<()> {
        self.fill_on_device(dst, offset, bytes, word)
    }
}
