//! Memory: xwarp's own allocations, an application's memory borrowed through
//! [`CudaDevice::wrap_device_ptr`] and [`CudaDevice::wrap_slice`], and the transfers.

use super::probe::BINDING_ALIGNMENT;
use super::{cuda_err, lock, CudaDevice};
#[cfg(doc)]
use crate::device::{Device, DeviceInfo};
use crate::device::{DeviceVec, MemoryUsage, RawBuffer};
use crate::element::Element;
use crate::error::{Error, Result};
use cudarc::driver::{result as cu, sys, CudaContext, CudaSlice, DevicePtr, DevicePtrMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Device memory of a [`CudaDevice`]: what its [`RawBuffer`]s hold.
pub(super) struct CudaBuffer {
    /// Base device address, for kernel arguments.
    pub(super) ptr: sys::CUdeviceptr,
    /// Its context, bound to the dropping thread before the memory is freed.
    pub(super) ctx: Arc<CudaContext>,
    /// The allocation; cudarc's copies need `&mut` for writes, hence the lock.
    pub(super) slice: std::mem::ManuallyDrop<Mutex<CudaSlice<u8>>>,
    /// Its device's count of live buffers, and the bytes this one holds.
    pub(super) live: Arc<Live>,
    pub(super) bytes: u64,
    /// Allocated while [`Device::record`] captured the stream: the graph's own memory, freed
    /// inside the graph when the buffer drops during the capture.
    pub(super) in_capture: bool,
}

/// A stream xwarp created for a device, destroyed when the last holder of the device's [`Live`]
/// (the device and each of its buffers, whose frees go on the stream) drops.
pub(super) struct OwnedStream {
    pub(super) raw: sys::CUstream,
    ctx: Arc<CudaContext>,
}

// SAFETY: a CUDA stream handle may be used from any thread of the process; it is destroyed once,
// in Drop, with its context bound.
unsafe impl Send for OwnedStream {}
// SAFETY: as above; the handle itself is never written after creation.
unsafe impl Sync for OwnedStream {}

impl OwnedStream {
    /// A blocking stream (`CU_STREAM_DEFAULT`: ordered with the legacy default stream) of `ctx`.
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        ctx.bind_to_thread().map_err(cuda_err("cuCtxSetCurrent"))?;
        let raw = cu::stream::create(cu::stream::StreamKind::Default)
            .map_err(cuda_err("cuStreamCreate"))?;
        Ok(OwnedStream {
            raw,
            ctx: ctx.clone(),
        })
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: created in `new`, destroyed once; work still queued on it finishes first (the
        // driver releases the stream once it is idle).
        self.ctx
            .record_err(unsafe { cu::stream::destroy(self.raw) });
    }
}

/// Live buffers of one [`CudaDevice`] and their bytes, for [`Device::memory_usage`], and what
/// buffers must know of a capture ([`Device::record`]).
#[derive(Default)]
pub(super) struct Live {
    buffers: AtomicU64,
    bytes: AtomicU64,
    /// Who records, and which threads are inside a call ([`super::queue::Turn`]).
    pub(super) gate: Mutex<super::queue::Gate>,
    /// Signalled when a recording ends or a call leaves.
    pub(super) turn: std::sync::Condvar,
    /// Buffers allocated during the capture and still alive.
    pub(super) captured_alive: AtomicU64,
    /// Buffers allocated before the capture and dropped during it (their free joined the
    /// capture instead of running).
    pub(super) freed_in_capture: AtomicU64,
    /// Operations put on the stream so far (launches, copies, uploads, graph launches): a
    /// submit with none since the last ticket returns that ticket again.
    pub(super) queued: AtomicU64,
    /// The gate of timed spans and the events of `Device::time_launches`
    /// ([`super::timing`]): here, so that a buffer whose free waits for the stream opens it.
    pub(super) timing: Mutex<super::timing::Timing>,
    /// The device's stream when xwarp created it; last field, so dropped after the rest. Only
    /// held: its Drop destroys the stream.
    _stream: Option<OwnedStream>,
}

impl Live {
    /// For a device on a stream xwarp created.
    pub(super) fn with_stream(stream: OwnedStream) -> Self {
        Live {
            _stream: Some(stream),
            ..Live::default()
        }
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        self.live.buffers.fetch_sub(1, Ordering::Relaxed);
        self.live.bytes.fetch_sub(self.bytes, Ordering::Relaxed);
        // A free goes onto the stream: never into another thread's recording.
        let turn = super::queue::Turn::take(&self.live);
        if self.in_capture {
            self.live.captured_alive.fetch_sub(1, Ordering::Relaxed);
        } else if turn.recording() {
            self.live.freed_in_capture.fetch_add(1, Ordering::Relaxed);
        }
        // cudarc's CudaSlice frees without making its context current; the last handle may
        // drop on a thread that never used CUDA, so bind it first. Without memory pools the
        // free waits for the stream: a timed span's gate opens first.
        self.ctx.record_err(self.ctx.bind_to_thread());
        super::timing::open(&self.live.timing);
        // SAFETY: dropped once, here, while the turn is held; the field is never used after
        // (this is its Drop).
        unsafe { std::mem::ManuallyDrop::drop(&mut self.slice) };
        drop(turn);
    }
}

/// An application's device memory, borrowed: nothing is freed when it drops.
pub(super) struct AppMemory {
    /// First byte of the borrowed range.
    pub(super) ptr: sys::CUdeviceptr,
    /// For a window of a buffer ([`Device::window`]): what keeps that buffer's memory alive.
    pub(super) _keep: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl CudaDevice {
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
        if !ptr.is_multiple_of(BINDING_ALIGNMENT) {
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
            Arc::new(AppMemory { ptr, _keep: None }),
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

    /// [`Device::window`]: the range as borrowed memory that keeps `raw`'s alive.
    pub(super) fn window_of(&self, raw: &RawBuffer, offset: u64, bytes: u64) -> Result<RawBuffer> {
        let base = self.device_ptr(raw)?;
        raw.check_window(offset, bytes, BINDING_ALIGNMENT)?;
        Ok(RawBuffer::new(
            Arc::new(AppMemory {
                ptr: base + offset,
                _keep: Some(raw.keep_alive()),
            }),
            bytes,
            self.id,
            &format!("{} (window)", self.label),
        ))
    }

    /// The device address of byte 0 of `raw`, xwarp's memory or wrapped.
    pub(crate) fn device_ptr(&self, raw: &RawBuffer) -> Result<sys::CUdeviceptr> {
        match self.app_memory(raw) {
            Some(app) => Ok(app.ptr),
            None => self.buffer(raw).map(|b| b.ptr),
        }
    }

    /// [`Device::alloc`]: device memory on the stream, uninitialised.
    pub(super) fn alloc_buffer(&self, bytes: u64) -> Result<RawBuffer> {
        // An allocation goes onto the stream: never into another thread's recording.
        let turn = self.take_turn();
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
        let in_capture = turn.recording();
        if in_capture {
            self.live.captured_alive.fetch_add(1, Ordering::Relaxed);
        }
        let buffer = CudaBuffer {
            ptr,
            ctx: self.ctx.clone(),
            slice: std::mem::ManuallyDrop::new(Mutex::new(slice)),
            live: self.live.clone(),
            bytes: len as u64,
            in_capture,
        };
        Ok(RawBuffer::new(
            Arc::new(buffer),
            bytes,
            self.id,
            &self.label,
        ))
    }

    /// [`Device::write`]: a host-to-device copy on the stream.
    pub(super) fn upload(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        let _turn = self.refuse_in_recording("Device::write")?;
        self.live.queued.fetch_add(1, Ordering::Relaxed);
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
            .map_err(cuda_err("cuMemcpyHtoDAsync"))?;
        drop(slice);
        self.mark("write")
    }

    /// [`Device::copy`]: a device-to-device copy on the stream.
    pub(super) fn copy_on_device(
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
        let _turn = self.keep_for_capture(&[src, dst]);
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
        .map_err(cuda_err("cuMemcpyDtoDAsync"))?;
        self.mark("copy")
    }

    /// [`Device::read`]: a device-to-host copy, then the stream is synchronised.
    pub(super) fn download(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        let _turn = self.refuse_in_recording("Device::read")?;
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

    /// [`Device::memory_usage`]: xwarp's live buffers, and what the device has in use.
    pub(super) fn live_usage(&self) -> Option<MemoryUsage> {
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
}
