//! GPU timing on the stream: the gate that holds a timed span back until the host has queued
//! all of it, and the events between the commands of [`Device::time_launches`].
//!
//! Two events around a call measure whatever the stream does between them, and on CUDA the
//! stream starts as soon as the first command is queued: host work inside the call (recording
//! launches, an allocation, a driver stall) would land in the figure whenever the GPU catches
//! up with the host. So a timed span starts with a gate: a one-thread kernel that waits until
//! the host writes a word of pinned, mapped host memory (read through the device's mapping).
//! The start event, the work and the end event are queued behind it, and only then does the
//! host write the word: the GPU runs the span back to back, as it would inside a longer
//! sequence. Any call that makes the host wait for the stream (a read, a write, a
//! synchronisation, a ticket's wait, a recording, a module load, a free that waits) opens the
//! gate first, so nothing can wait on itself; the host work after that point then counts, as
//! it must. Where the gate cannot be made (no mapped host memory, a failed compile), spans run
//! ungated as before, and [`CudaDevice::timing_gate`] says why.
//!
//! [`Device::time_launches`]: crate::Device::time_launches

use super::{cuda_err, lock, CudaDevice};
use crate::device::{CommandTime, LaunchTimes};
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaFunction, LaunchConfig, PushKernelArg};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A word of pinned host memory the stream can wait on.
pub(super) struct GateWord {
    host: *mut u32,
    device: sys::CUdeviceptr,
    ctx: Arc<CudaContext>,
}

// SAFETY: the word is plain pinned host memory owned by this value; the host writes it only
// through `CudaDevice::open_gate` under the timing mutex, the GPU only reads it.
unsafe impl Send for GateWord {}
// SAFETY: as above.
unsafe impl Sync for GateWord {}

impl GateWord {
    /// Allocates the word (zero) in `ctx`; `None` where the driver cannot map it.
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Option<Self> {
        ctx.bind_to_thread().ok()?;
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: allocates 4 bytes of page-locked host memory in the current context (bound
        // above); on a 64-bit system with unified addressing it is mapped for the device too.
        let status = unsafe { sys::cuMemAllocHost_v2(&mut host, 4) };
        if status != sys::CUresult::CUDA_SUCCESS || host.is_null() {
            return None;
        }
        let mut word = GateWord {
            host: host.cast(),
            device: 0,
            ctx: ctx.clone(),
        };
        // SAFETY: `host` points at the 4 bytes just allocated.
        unsafe { std::ptr::write_volatile(word.host, 0) };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` is a live pinned allocation of this context; the call writes the
        // device address of it through a pointer to a live local.
        let status = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) };
        // With unified addressing the host address is the device address too.
        word.device = if status == sys::CUresult::CUDA_SUCCESS && device != 0 {
            device
        } else {
            host as sys::CUdeviceptr
        };
        Some(word)
    }
}

impl Drop for GateWord {
    fn drop(&mut self) {
        // The device has synchronised its stream (CudaDevice's Drop) before its fields drop,
        // so no wait on the word is pending. A failure leaves 4 bytes allocated until the
        // context goes: nothing to report it to.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `host` came from cuMemAllocHost in this context and is freed once.
            let _ = unsafe { sys::cuMemFreeHost(self.host.cast()) };
        }
    }
}

/// The gate's kernel: waits until the host has written `value` or more into the word (a
/// wrapping comparison), polling the host memory every half microsecond.
const GATE_SOURCE: &str = r#"
extern "C" __global__ void xwarp_timing_gate(const volatile unsigned int* word, unsigned int value) {
    while ((int)(*word - value) < 0) {
        __nanosleep(500);
    }
}
"#;

/// The gate: its word and the kernel that waits on it.
pub(super) struct Gate {
    word: GateWord,
    kernel: CudaFunction,
}

impl Gate {
    /// Makes the gate for the device `ctx` of compute capability `arch` (e.g. 90).
    pub(super) fn new(ctx: &Arc<CudaContext>, arch: u32) -> std::result::Result<Self, String> {
        let word = GateWord::new(ctx).ok_or("no mapped pinned host memory")?;
        let opts = cudarc::nvrtc::CompileOptions {
            options: vec![format!("--gpu-architecture=compute_{arch}")],
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(GATE_SOURCE, opts)
            .map_err(|e| format!("compiling the gate: {e:?}"))?;
        let module = ctx
            .load_module(ptx)
            .map_err(|e| format!("loading the gate: {e:?}"))?;
        let kernel = module
            .load_function("xwarp_timing_gate")
            .map_err(|e| format!("the gate's kernel: {e:?}"))?;
        Ok(Gate { word, kernel })
    }
}

/// The timing state of one device.
#[derive(Default)]
pub(super) struct Timing {
    /// The gate; `None` until the first timed span, or where it could not be made.
    pub(super) gate: Option<Gate>,
    /// Why there is no gate, once it was tried.
    pub(super) ungated: Option<String>,
    /// The last value a wait was queued for.
    issued: u32,
    /// Whether a queued wait may still be waiting for the host.
    closed: bool,
    /// While [`Device::time_launches`] runs: each command queued so far and the event after
    /// it.
    ///
    /// [`Device::time_launches`]: crate::Device::time_launches
    marks: Option<Vec<(String, CudaEvent)>>,
}

/// Releases every wait queued on the gate of `timing` ([`CudaDevice::open_gate`]).
pub(super) fn open(timing: &Mutex<Timing>) {
    let mut t = lock(timing);
    if !t.closed {
        return;
    }
    if let Some(gate) = &t.gate {
        // SAFETY: `host` is the live pinned word; a volatile store the GPU's wait reads.
        unsafe { std::ptr::write_volatile(gate.word.host, t.issued) };
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
    t.closed = false;
}

impl CudaDevice {
    /// Queues a wait on the gate: the stream stops here until [`Self::open_gate`]. Makes the
    /// gate at the first span. Only while no other thread is inside a call on the stream
    /// ([`Self::alone`]); otherwise the span runs ungated (its figure may then hold host work,
    /// as any span where threads share the device may).
    fn close_gate(&self) {
        let _ = self.alone(|| self.close_gate_alone());
    }

    fn close_gate_alone(&self) {
        let mut t = lock(&self.live.timing);
        if t.gate.is_none() && t.ungated.is_none() {
            match Gate::new(&self.ctx, self.arch) {
                Ok(g) => t.gate = Some(g),
                Err(why) => t.ungated = Some(why),
            }
        }
        let Some(gate) = &t.gate else { return };
        let value = t.issued.wrapping_add(1);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut args = self.stream.launch_builder(&gate.kernel);
        args.arg(&gate.word.device);
        args.arg(&value);
        // SAFETY: the kernel takes (const volatile unsigned*, unsigned): a device address of
        // the live pinned word (kept until the device's stream has finished, see GateWord's
        // Drop) and a value; it only reads the word, and ends once the host writes `value` or
        // more, which `open_gate` does before any host wait on the stream.
        match unsafe { args.launch(cfg) } {
            Ok(_) => {
                t.issued = value;
                t.closed = true;
            }
            Err(e) => {
                // Nothing was queued: time without a gate from now on.
                t.ungated = Some(format!("launching the gate: {e:?}"));
                t.gate = None;
            }
        }
    }

    /// Whether timed spans are gated (see the module docs): `Ok` once a span ran gated (or
    /// before any ran), `Err` with the reason where the gate could not be made.
    pub fn timing_gate(&self) -> std::result::Result<(), String> {
        match &lock(&self.live.timing).ungated {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }

    /// Releases every wait queued on the gate. Called before anything that makes the host
    /// wait for the stream.
    pub(super) fn open_gate(&self) {
        open(&self.live.timing);
    }

    /// While [`Self::timed`] times each command: an event after the command just queued.
    pub(super) fn mark(&self, name: &str) -> Result<()> {
        let mut t = lock(&self.live.timing);
        if let Some(marks) = t.marks.as_mut() {
            let event = self
                .stream
                .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(cuda_err("cuEventRecord"))?;
            marks.push((name.to_string(), event));
        }
        Ok(())
    }

    /// [`crate::Device::time`] and, with `each`, [`crate::Device::time_launches`].
    pub(super) fn timed(
        &self,
        work: &mut dyn FnMut() -> Result<()>,
        each: bool,
    ) -> Result<LaunchTimes> {
        if self.driver_version < super::DRIVER_WITH_ELAPSED_V2 {
            return Err(Error::Cuda {
                call: "cuEventElapsedTime_v2",
                reason: format!(
                    "GPU timing needs a CUDA 12.8 or newer driver; this one is CUDA {}.{}",
                    self.driver_version / 1000,
                    self.driver_version % 1000 / 10
                ),
            });
        }
        let _turn = self.refuse_in_recording("Device::time")?;
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("cuCtxSetCurrent"))?;
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        self.close_gate();
        let start = match self.stream.record_event(timing) {
            Ok(e) => e,
            Err(e) => {
                self.open_gate();
                return Err(cuda_err("cuEventRecord")(e));
            }
        };
        if each {
            lock(&self.live.timing).marks = Some(Vec::new());
        }
        let worked = work();
        let marks = lock(&self.live.timing).marks.take().unwrap_or_default();
        let end = self.stream.record_event(timing);
        self.open_gate();
        let end = end.map_err(cuda_err("cuEventRecord"))?;
        end.synchronize().map_err(cuda_err("cuEventSynchronize"))?;
        worked?;
        let span = |from: &CudaEvent, to: &CudaEvent| -> Result<Duration> {
            let ms = from
                .elapsed_ms(to)
                .map_err(cuda_err("cuEventElapsedTime"))?;
            Duration::try_from_secs_f64(f64::from(ms) / 1e3).map_err(|e| Error::Cuda {
                call: "cuEventElapsedTime",
                reason: format!("elapsed time {ms} ms: {e}"),
            })
        };
        let mut commands = Vec::with_capacity(marks.len());
        let mut before = &start;
        for (name, event) in &marks {
            commands.push(CommandTime {
                name: name.clone(),
                gpu: span(before, event)?,
            });
            before = event;
        }
        Ok(LaunchTimes {
            total: span(&start, &end)?,
            commands,
        })
    }

    /// [`crate::Device::fill_words`]: a 32-bit memset on the stream.
    pub(super) fn fill_on_device(
        &self,
        dst: &crate::device::RawBuffer,
        offset: u64,
        bytes: u64,
        word: u32,
    ) -> Result<()> {
        crate::device::check_fill(dst, offset, bytes)?;
        let ptr = self.device_ptr(dst)?;
        if bytes == 0 {
            return Ok(());
        }
        let _turn = self.keep_for_capture(&[dst]);
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("cuCtxSetCurrent"))?;
        // SAFETY: the range lies inside a live allocation of this context (or a wrapped
        // application range) and is 4-byte aligned (checked above; allocations start aligned);
        // the memset is ordered on the device's stream, where the memory is also freed.
        unsafe {
            sys::cuMemsetD32Async(
                ptr + offset,
                word,
                (bytes / 4) as usize,
                self.stream.cu_stream(),
            )
        }
        .result()
        .map_err(cuda_err("cuMemsetD32Async"))?;
        self.mark("fill")
    }
}
