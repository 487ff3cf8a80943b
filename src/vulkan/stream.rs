//! The command stream: recording into command buffers (frames) with a barrier between
//! commands, submitting without waiting (tickets) and waiting, recorded sequences and their
//! replays, the transfers, and GPU timing.

use super::instance::lock;
use super::memory::VkBuffer;
use super::VulkanDevice;
use crate::device::{
    CommandTime, Device, DeviceType, LaunchTimes, RawBuffer, Recording, Ticket, MAX_IN_FLIGHT,
    MAX_TIMED_COMMANDS,
};
use crate::error::{Error, Result};
use ash::vk;
use gpu_allocator::MemoryLocation;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// How long a submit may run before the backend gives up with `VK_TIMEOUT` instead of hanging.
const FENCE_TIMEOUT_NS: u64 = 600_000_000_000;

/// Largest region of one buffer copy. Mesa's gallium drivers (llvmpipe) keep a copy's width in
/// a signed 32-bit field: a region of 2 GiB or more overflowed it and crashed the driver's
/// queue thread (Mesa 22.3.6 and 25.0.7 alike). Smaller regions cost nothing elsewhere.
const MAX_COPY_REGION: u64 = 1 << 30;

/// The regions of one copy of `bytes` from `src` to `dst` (byte offsets in their buffers), none
/// larger than [`MAX_COPY_REGION`].
fn copy_regions(src: u64, dst: u64, bytes: u64) -> Vec<vk::BufferCopy> {
    (0..bytes)
        .step_by(MAX_COPY_REGION as usize)
        .map(|at| {
            vk::BufferCopy::default()
                .src_offset(src + at)
                .dst_offset(dst + at)
                .size(MAX_COPY_REGION.min(bytes - at))
        })
        .collect()
}
/// How long a submit's waiter polls its fence before it blocks in `vkWaitForFences`. A blocked
/// waiter is woken by the driver some time after the fence signals; polling sees it at once,
/// which is most of a short call's host time (NOTES.md, version 7). Longer work blocks after
/// this, so a long wait costs no more than this much of a core. A CPU device (llvmpipe) runs
/// the work on the host's cores, so its waiter blocks at once rather than take one from it.
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(200);

/// Bytes of the staging buffer each device keeps for small reads and writes
/// ([`Staging`]); larger ones stage through a buffer of their own.
pub(super) const STAGING_BYTES: u64 = 64 << 10;

/// Where a piece of the staging buffer starts: pieces begin at multiples of this.
const STAGING_ALIGN: u64 = 16;

/// The device's staging buffer for small reads and writes: host-visible, mapped for its whole
/// life, and handed out in pieces from its start, one per write or read.
///
/// A piece holds a write's bytes until the copy out of it has run, or receives a read's bytes
/// until the host has copied them out. Pieces are handed out only while the stream is locked,
/// and the whole buffer is handed out again from its start only once no work that uses it is
/// being recorded or pending: the frame being recorded has no piece of it
/// ([`Frame::uses_staging`]) and every submit that had one has finished (`busy_until`). A read
/// submits, waits and copies its bytes out without unlocking the stream, so no other piece is
/// handed out over them meanwhile. Writes and reads are refused while a recording is open
/// ([`Device::record`]), so no recording (replayed any number of times later) holds a piece.
pub(super) struct Staging {
    buffer: VkBuffer,
    /// Bytes handed out, from the start, since the buffer was last free.
    used: u64,
    /// The latest ticket whose submit holds a piece (0: none yet).
    busy_until: u64,
}

impl Staging {
    /// A staging buffer of [`STAGING_BYTES`] on `core`'s device.
    pub(super) fn new(core: &Arc<super::memory::Core>) -> Result<Self> {
        let buffer = VkBuffer::dedicated(
            core,
            STAGING_BYTES,
            MemoryLocation::GpuToCpu,
            "xwarp staging",
        )?;
        // Mapped from the start (gpu-allocator maps host-visible memory for its whole life).
        buffer.with_mapped(|_| ())?;
        Ok(Staging {
            buffer,
            used: 0,
            busy_until: 0,
        })
    }
}

/// Most buffer ranges a frame tracks between two barriers; a command past them gets a barrier
/// before it whatever it touches, so the tracking stays a short scan.
const MAX_TRACKED_ACCESSES: usize = 64;

/// A buffer range one command reads, or reads and writes (shaders and transfers alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Access {
    buffer: vk::Buffer,
    start: u64,
    end: u64,
    write: bool,
}

impl Access {
    /// `bytes` of `buffer` from byte `offset`, written when `write`.
    pub(super) fn new(buffer: vk::Buffer, offset: u64, bytes: u64, write: bool) -> Self {
        Access {
            buffer,
            start: offset,
            end: offset.saturating_add(bytes),
            write,
        }
    }

    /// Whether a command doing `self` must wait for one that did `earlier`: they touch
    /// overlapping bytes of one buffer (an empty range overlaps nothing) and at least one of
    /// them writes (a read after a write, a write after a read, or two writes).
    fn depends_on(&self, earlier: &Access) -> bool {
        (self.write || earlier.write)
            && self.buffer == earlier.buffer
            && self.start < self.end
            && earlier.start < earlier.end
            && self.start < earlier.end
            && earlier.start < self.end
    }
}

/// Whether a command doing `accesses` must be separated by a barrier from commands that did
/// `earlier` since the last one ([`Access::depends_on`]), or the tracking is full.
fn needs_barrier(earlier: &[Access], accesses: &[Access]) -> bool {
    earlier.len() + accesses.len() > MAX_TRACKED_ACCESSES
        || accesses
            .iter()
            .any(|a| earlier.iter().any(|e| a.depends_on(e)))
}

/// One command buffer with what its submit needs: its own pool (reset as a whole once the
/// submit has finished), fence, descriptor pools, and what it keeps alive.
pub(super) struct Frame {
    pub(super) pool: vk::CommandPool,
    pub(super) cmd: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    /// Whether `cmd` has begun recording.
    pub(super) recording: bool,
    /// Commands recorded since it began.
    pub(super) commands: u32,
    /// What the commands recorded since the last barrier (or the start) touch: a command
    /// that depends on none of them needs no barrier before it.
    pub(super) since_barrier: Vec<Access>,
    /// Barriers recorded between commands since it began.
    pub(super) barriers: u32,
    pub(super) keep: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    /// Staging buffers of writes too large for the device's [`Staging`] buffer.
    pub(super) staging: Vec<VkBuffer>,
    /// Whether a command recorded here uses a piece of the device's [`Staging`] buffer.
    pub(super) uses_staging: bool,
    pub(super) desc_pools: Vec<vk::DescriptorPool>,
    pub(super) desc_pool_current: usize,
    /// Recorded for [`Device::record`]: begun for simultaneous use, replayed many times.
    pub(super) reusable: bool,
}

/// A submitted frame and its ticket number.
pub(super) struct Pending {
    ticket: u64,
    frame: Frame,
}

/// The device's command stream: the frame being recorded, the frames submitted and not yet
/// seen finished (oldest first), spare frames, the ticket numbers, and the staging buffer of
/// small reads and writes.
pub(super) struct Stream {
    frame: Frame,
    small_staging: Staging,
    in_flight: VecDeque<Pending>,
    spare: Vec<Frame>,
    /// Frames whose work finished, their kept objects released, their pools and fence not yet
    /// reset: [`VulkanDevice::submit_frame`] resets them while the GPU runs the next submit,
    /// so a synchronous call does not wait for the resets (a frame is reset before reuse).
    finished: Vec<Frame>,
    /// The latest ticket number handed out (0: none yet).
    issued: u64,
    /// Every ticket up to this one has finished.
    done: u64,
    /// The thread whose [`Device::record`] records into `frame`: other threads' calls wait
    /// until it ends.
    capture_owner: Option<std::thread::ThreadId>,
    /// While [`Device::time_launches`] runs: the names of the commands timed so far, each
    /// followed by a timestamp (query `2 + index`).
    stamps: Option<Vec<String>>,
}

impl std::ops::Deref for Stream {
    type Target = Frame;
    fn deref(&self) -> &Frame {
        &self.frame
    }
}

impl std::ops::DerefMut for Stream {
    fn deref_mut(&mut self) -> &mut Frame {
        &mut self.frame
    }
}

impl Stream {
    /// A stream recording into `frame`, staging small reads and writes through `staging`.
    pub(super) fn new(frame: Frame, staging: Staging) -> Self {
        Stream {
            frame,
            small_staging: staging,
            in_flight: VecDeque::new(),
            spare: Vec::new(),
            finished: Vec::new(),
            issued: 0,
            done: 0,
            capture_owner: None,
            stamps: None,
        }
    }
}

/// A sequence recorded by [`Device::record`]: its frame, destroyed with it.
pub(super) struct VkRecording {
    core: Arc<super::memory::Core>,
    frame: Frame,
}

impl Drop for VkRecording {
    fn drop(&mut self) {
        // SAFETY: no replay of this recording runs: each replay's pending entry keeps the
        // recording alive until its fence was seen signalled. The objects are this frame's own.
        unsafe { destroy_frame(&self.core.device, &mut self.frame) };
    }
}

/// Destroys a frame's objects (its command buffer goes with its pool).
///
/// # Safety
/// The frame's command buffer is not pending on the device, and its objects are destroyed once.
pub(super) unsafe fn destroy_frame(d: &ash::Device, f: &mut Frame) {
    // SAFETY: by the caller's promise.
    unsafe {
        for p in f.desc_pools.drain(..) {
            d.destroy_descriptor_pool(p, None);
        }
        d.destroy_fence(f.fence, None);
        d.destroy_command_pool(f.pool, None);
    }
    f.keep.clear();
    f.staging.clear();
}

/// A new frame on `d` for queue family `family`: a command pool with one command buffer, and an
/// unsignalled fence.
pub(super) fn new_frame(d: &ash::Device, family: u32) -> Result<Frame> {
    // SAFETY: valid create infos on a live device; on failure what was made is destroyed,
    // otherwise the frame owns every object (destroyed by `destroy_frame`).
    unsafe {
        let pool = d
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(family)
                    .flags(vk::CommandPoolCreateFlags::TRANSIENT),
                None,
            )
            .map_err(Error::vk("vkCreateCommandPool"))?;
        let cmd = d.allocate_command_buffers(
            &vk::CommandBufferAllocateInfo::default()
                .command_pool(pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1),
        );
        let cmd = match cmd {
            Ok(c) => c[0],
            Err(e) => {
                d.destroy_command_pool(pool, None);
                return Err(Error::vk("vkAllocateCommandBuffers")(e));
            }
        };
        let fence = match d.create_fence(&vk::FenceCreateInfo::default(), None) {
            Ok(f) => f,
            Err(e) => {
                d.destroy_command_pool(pool, None);
                return Err(Error::vk("vkCreateFence")(e));
            }
        };
        Ok(Frame {
            pool,
            cmd,
            fence,
            recording: false,
            commands: 0,
            since_barrier: Vec::new(),
            barriers: 0,
            keep: Vec::new(),
            staging: Vec::new(),
            uses_staging: false,
            desc_pools: Vec::new(),
            desc_pool_current: 0,
            reusable: false,
        })
    }
}

impl VulkanDevice {
    /// The queue family index work is submitted to.
    pub fn queue_family(&self) -> u32 {
        self.queue_family
    }

    /// The stream, once no other thread records into it ([`Device::record`]): a recording
    /// holds only its own thread's work, and other threads' calls wait for it to end.
    pub(super) fn stream_lock(&self) -> std::sync::MutexGuard<'_, Stream> {
        let me = std::thread::current().id();
        let mut s = lock(&self.stream);
        while s.capture_owner.is_some_and(|owner| owner != me) {
            s = self
                .stream_turn
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        s
    }

    /// A new frame on this device.
    fn new_frame(&self) -> Result<Frame> {
        new_frame(&self.core.device, self.queue_family)
    }

    /// A spare frame, a finished one reset, or a new one.
    fn spare_frame(&self, s: &mut Stream) -> Result<Frame> {
        if let Some(f) = s.spare.pop() {
            return Ok(f);
        }
        if let Some(mut f) = s.finished.pop() {
            self.recycle(&mut f);
            return Ok(f);
        }
        self.new_frame()
    }

    /// Resets the finished frames ([`Stream::finished`]) and makes them spare.
    fn recycle_finished(&self, s: &mut Stream) {
        while let Some(mut f) = s.finished.pop() {
            self.recycle(&mut f);
            s.spare.push(f);
        }
    }

    /// Releases what a frame whose work finished kept alive, and puts it with the finished
    /// frames, to be reset later ([`Stream::finished`]).
    fn retire_frame(&self, s: &mut Stream, mut f: Frame) {
        f.keep.clear();
        f.staging.clear();
        s.finished.push(f);
    }

    /// Makes a frame whose work finished (or never went out) ready for reuse: resets its pools
    /// and fence, releases what it kept alive.
    fn recycle(&self, f: &mut Frame) {
        let d = &self.core.device;
        // SAFETY: the frame's submit finished or never happened: its command buffer and
        // descriptor sets are not in use, and its fence is not pending.
        unsafe {
            let _ = d.reset_command_pool(f.pool, vk::CommandPoolResetFlags::empty());
            for &p in &f.desc_pools {
                let _ = d.reset_descriptor_pool(p, vk::DescriptorPoolResetFlags::empty());
            }
            let _ = d.reset_fences(&[f.fence]);
        }
        f.desc_pool_current = 0;
        f.recording = false;
        f.commands = 0;
        f.reusable = false;
        f.uses_staging = false;
        f.keep.clear();
        f.staging.clear();
    }

    /// [`Error::Recording`] for `call` while a recording is open.
    pub(super) fn refuse_in_recording(&self, s: &Stream, call: &'static str) -> Result<()> {
        if s.capture_owner.is_some() {
            return Err(Error::Recording {
                call,
                device: self.info.name.clone(),
                reason: "a recording (Device::record) is open; it can hold launches and device \
                         copies only: call this before or after recording"
                    .into(),
            });
        }
        Ok(())
    }

    /// Records zeroing all of `buffer`, one of this device's own (submitted with the next work
    /// that is waited for).
    pub(super) fn record_zero(&self, buffer: &RawBuffer) -> Result<()> {
        let target = self.target(buffer)?;
        let mut s = self.stream_lock();
        let zeroed = Access::new(target.buffer, target.base, buffer.bytes(), true);
        self.begin(&mut s, &[zeroed])?;
        // SAFETY: recording command buffer of this device; the buffer is one of its own
        // (created with TRANSFER_DST), the range is all of it (a multiple of 4 bytes from its
        // start), and the stream keeps it alive until the submit finishes.
        unsafe {
            self.core
                .device
                .cmd_fill_buffer(s.cmd, target.buffer, target.base, buffer.bytes(), 0)
        };
        s.keep.push(buffer.keep_alive());
        self.stamp(&mut s, "fill");
        Ok(())
    }

    /// [`Device::fill_words`]: records a fill of the range with `word`.
    pub(super) fn record_fill(
        &self,
        dst: &RawBuffer,
        offset: u64,
        bytes: u64,
        word: u32,
    ) -> Result<()> {
        crate::device::check_fill(dst, offset, bytes)?;
        let target = self.target(dst)?.require(
            vk::BufferUsageFlags::TRANSFER_DST,
            "fill it on the device (Device::fill_words, DeviceVec::fill)",
        )?;
        if bytes == 0 {
            return Ok(());
        }
        let mut s = self.stream_lock();
        let filled = Access::new(target.buffer, target.base + offset, bytes, true);
        self.begin(&mut s, &[filled])?;
        // SAFETY: recording command buffer of this device; the buffer allows transfers into
        // it, the range lies inside it and is a multiple of 4 bytes from a multiple of 4
        // (checked above; buffers start 4-byte aligned), and the stream keeps the buffer alive
        // until the submit finishes.
        unsafe {
            self.core.device.cmd_fill_buffer(
                s.cmd,
                target.buffer,
                target.base + offset,
                bytes,
                word,
            )
        };
        s.keep.push(dst.keep_alive());
        self.stamp(&mut s, "fill");
        Ok(())
    }

    /// While [`Device::time_launches`] runs, writes a timestamp after the command just
    /// recorded and names it; otherwise nothing. Commands past [`MAX_TIMED_COMMANDS`] are
    /// counted (the span then fails) but get no timestamp.
    pub(super) fn stamp(&self, s: &mut Stream, name: &str) {
        let Some(names) = s.stamps.as_mut() else {
            return;
        };
        let index = names.len();
        names.push(name.to_string());
        if index < MAX_TIMED_COMMANDS {
            // SAFETY: recording command buffer of this device; query 2 + index lies inside the
            // pool (2 + MAX_TIMED_COMMANDS queries), reset at the start of the span.
            unsafe {
                self.core.device.cmd_write_timestamp(
                    s.cmd,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    self.query_pool,
                    2 + index as u32,
                )
            };
        }
    }

    /// Starts recording if needed, and separates the next command, which does `accesses`,
    /// from earlier ones where it depends on one of them: a barrier where it reads what an
    /// earlier command since the last barrier wrote, or writes what one read or wrote. An
    /// independent command gets none and may run beside the earlier ones (NVIDIA's driver:
    /// 0.14-0.19 us a dispatch against 1.6-1.7 behind a barrier, NOTES.md version 14).
    /// Distinct buffers are taken to be distinct memory: xwarp's own never alias, and an
    /// application's buffers given to xwarp must not alias each other.
    pub(super) fn begin(&self, s: &mut Stream, accesses: &[Access]) -> Result<()> {
        self.start(s)?;
        if s.commands > 0 && needs_barrier(&s.since_barrier, accesses) {
            self.barrier_before_use(
                s.cmd,
                vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
            );
            s.since_barrier.clear();
            s.barriers += 1;
        }
        s.since_barrier.extend_from_slice(accesses);
        s.commands += 1;
        Ok(())
    }

    /// [`Self::begin`] for an indirect dispatch, whose workgroup counts an earlier command (of
    /// this recording or an earlier submission) may have written: always a barrier before it,
    /// from everything earlier to the reading of those counts as well as to compute shaders
    /// and transfers.
    pub(super) fn begin_indirect(&self, s: &mut Stream, accesses: &[Access]) -> Result<()> {
        self.start(s)?;
        self.barrier_to(
            s.cmd,
            (
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::AccessFlags::MEMORY_WRITE,
            ),
            (
                vk::PipelineStageFlags::DRAW_INDIRECT,
                vk::AccessFlags::INDIRECT_COMMAND_READ,
            ),
        );
        s.since_barrier.clear();
        s.barriers += 1;
        s.since_barrier.extend_from_slice(accesses);
        s.commands += 1;
        Ok(())
    }

    /// Starts recording if needed (with the dependency on earlier submissions a new recording
    /// takes), without separating what comes next from the commands already recorded: for
    /// timestamps and query resets, which touch no buffer (a bottom-of-pipe timestamp is
    /// written only once every earlier command has finished, with no barrier before it).
    fn start(&self, s: &mut Stream) -> Result<()> {
        let d = &self.core.device;
        if !s.recording {
            let flags = if s.reusable {
                vk::CommandBufferUsageFlags::SIMULTANEOUS_USE
            } else {
                vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT
            };
            // SAFETY: the command buffer is not in use: frames are recorded only once their
            // earlier submit has finished (recycled) or when new.
            unsafe {
                d.begin_command_buffer(s.cmd, &vk::CommandBufferBeginInfo::default().flags(flags))
            }
            .map_err(Error::vk("vkBeginCommandBuffer"))?;
            s.recording = true;
            s.commands = 0;
            s.barriers = 0;
            s.since_barrier.clear();
            // Earlier work on this queue may still run (submitted without a wait: xwarp's own,
            // a replay's, or the application's) and may have written the buffers this work
            // uses, or still read ones it writes: a dependency on everything before it in
            // submission order. A recording may be replayed behind anything, so it always
            // starts with one.
            if self.external || s.reusable || !s.in_flight.is_empty() {
                self.barrier_before_use(
                    s.cmd,
                    vk::PipelineStageFlags::ALL_COMMANDS,
                    vk::AccessFlags::MEMORY_WRITE,
                );
            }
        }
        Ok(())
    }

    /// A barrier in `cmd` that makes what `src_access` wrote in `src_stages` visible to later
    /// compute shaders and transfers, reading or writing.
    fn barrier_before_use(
        &self,
        cmd: vk::CommandBuffer,
        src_stages: vk::PipelineStageFlags,
        src_access: vk::AccessFlags,
    ) {
        self.barrier_to(
            cmd,
            (src_stages, src_access),
            (vk::PipelineStageFlags::empty(), vk::AccessFlags::empty()),
        );
    }

    /// [`Self::barrier_before_use`] to the stages and accesses of `also` as well (an indirect
    /// dispatch's reading of its workgroup counts).
    fn barrier_to(
        &self,
        cmd: vk::CommandBuffer,
        (src_stages, src_access): (vk::PipelineStageFlags, vk::AccessFlags),
        also: (vk::PipelineStageFlags, vk::AccessFlags),
    ) {
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(src_access)
            .dst_access_mask(
                vk::AccessFlags::SHADER_READ
                    | vk::AccessFlags::SHADER_WRITE
                    | vk::AccessFlags::TRANSFER_READ
                    | vk::AccessFlags::TRANSFER_WRITE
                    | also.1,
            );
        // SAFETY: `cmd` is a recording command buffer of this device (the callers hold the
        // stream and have begun it).
        unsafe {
            self.core.device.cmd_pipeline_barrier(
                cmd,
                src_stages,
                vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER | also.0,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            )
        };
    }

    /// Ends the recording of `f`, first with a barrier that makes what it wrote visible to host
    /// reads (a read of a buffer the host maps then only waits for the fence,
    /// [`Self::download`]) and, on an application's device, to the application's later work.
    fn end_frame(&self, f: &mut Frame) -> Result<()> {
        let d = &self.core.device;
        f.recording = false;
        let (dst_stages, dst_access) = if self.external {
            (
                vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST,
                vk::AccessFlags::MEMORY_READ
                    | vk::AccessFlags::MEMORY_WRITE
                    | vk::AccessFlags::HOST_READ,
            )
        } else {
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ)
        };
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(dst_access);
        // SAFETY: recording command buffer of this device.
        unsafe {
            d.cmd_pipeline_barrier(
                f.cmd,
                vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                dst_stages,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            )
        };
        // SAFETY: the command buffer is recording (begun by `begin`).
        unsafe { d.end_command_buffer(f.cmd) }.map_err(Error::vk("vkEndCommandBuffer"))
    }

    /// Submits `cmd` with `fence` on the queue.
    fn queue_submit(&self, cmd: vk::CommandBuffer, fence: vk::Fence) -> Result<()> {
        let cmds = [cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        let queue = lock(&self.queue);
        let _app = self.queue_lock.as_deref().map(lock);
        // SAFETY: the command buffer was recorded on this device and is executable; the fence
        // is unsignalled and not pending; the queue is externally synchronised by its mutex
        // (and by the application's lock, or its promise not to use the queue meanwhile).
        unsafe { self.core.device.queue_submit(*queue, &[submit], fence) }
            .map_err(Error::vk("vkQueueSubmit"))
    }

    /// Makes room for one more submission: with [`MAX_IN_FLIGHT`] running, waits for the
    /// oldest.
    fn make_room(&self, s: &mut Stream) -> Result<()> {
        self.retire(s, false)?;
        if s.in_flight.len() >= MAX_IN_FLIGHT {
            let oldest = s.in_flight.front().map_or(0, |p| p.ticket);
            self.wait_for(s, oldest)?;
        }
        Ok(())
    }

    /// Submits the frame being recorded, without waiting, and returns the latest ticket (the
    /// frame's, or the one before when nothing was recorded).
    pub(super) fn submit_frame(&self, s: &mut Stream) -> Result<u64> {
        if !s.recording {
            return Ok(s.issued);
        }
        self.make_room(s)?;
        // The frame to record into next exists before this one goes out (made now if needed),
        // so that nothing after the submit can fail.
        if s.spare.is_empty() && s.finished.is_empty() {
            let f = self.new_frame()?;
            s.spare.push(f);
        }
        let sent = self
            .end_frame(&mut s.frame)
            .and_then(|_| self.queue_submit(s.frame.cmd, s.frame.fence));
        if let Err(e) = sent {
            // Nothing of the frame went out: its kept objects are released unused.
            self.recycle(&mut s.frame);
            return Err(e);
        }
        s.issued += 1;
        if s.frame.uses_staging {
            s.small_staging.busy_until = s.issued;
        }
        // While the GPU runs it: the resets of the frames that finished before (H100, a
        // synchronous 2^10 reduce with its value: 20.6-20.9 us against 21.3-23.9 with the
        // resets after each wait; NOTES.md, version 28).
        self.recycle_finished(s);
        // A spare frame exists (above): this takes no new one.
        let next = self.spare_frame(s)?;
        let frame = std::mem::replace(&mut s.frame, next);
        s.in_flight.push_back(Pending {
            ticket: s.issued,
            frame,
        });
        Ok(s.issued)
    }

    /// Retires the submitted frames seen finished, oldest first, up to and including ticket
    /// `upto` when `block` (waiting for each), else only those already finished.
    fn retire_upto(&self, s: &mut Stream, upto: u64, block: bool) -> Result<()> {
        while let Some(front) = s.in_flight.front() {
            if front.ticket > upto {
                break;
            }
            let fence = front.frame.fence;
            if block {
                if let Err(e) = self.wait(fence) {
                    self.settle_after_failed_wait(s, &e);
                    return Err(e);
                }
            } else {
                // SAFETY: the fence belongs to this device and was submitted.
                match unsafe { self.core.device.get_fence_status(fence) } {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => return Err(Error::vk("vkGetFenceStatus")(e)),
                }
            }
            let Some(p) = s.in_flight.pop_front() else {
                break;
            };
            s.done = p.ticket;
            self.retire_frame(s, p.frame);
        }
        Ok(())
    }

    /// Retires what finished: everything submitted when `block`, else what already finished.
    fn retire(&self, s: &mut Stream, block: bool) -> Result<()> {
        self.retire_upto(s, u64::MAX, block)
    }

    /// Waits until ticket `t` has finished.
    pub(super) fn wait_for(&self, s: &mut Stream, t: u64) -> Result<()> {
        if t <= s.done {
            return Ok(());
        }
        self.retire_upto(s, t, true)
    }

    /// After a wait failed (a timeout, a lost device): the GPU may still use what the pending
    /// submits reference, so wait for the queue rather than free memory under it, then retire
    /// them all. On an application's device only the queue is waited on: vkDeviceWaitIdle
    /// would need all of its queues externally synchronised.
    fn settle_after_failed_wait(&self, s: &mut Stream, e: &Error) {
        let d = &self.core.device;
        if matches!(
            e,
            Error::Vulkan {
                result: vk::Result::TIMEOUT,
                ..
            }
        ) {
            // SAFETY: waiting is always allowed; the queue is synchronised as for a submit.
            unsafe {
                if self.external {
                    let queue = lock(&self.queue);
                    let _app = self.queue_lock.as_deref().map(lock);
                    let _ = d.queue_wait_idle(*queue);
                } else {
                    let _ = d.device_wait_idle();
                }
            }
        }
        while let Some(mut p) = s.in_flight.pop_front() {
            s.done = p.ticket;
            self.recycle(&mut p.frame);
            s.spare.push(p.frame);
        }
    }

    /// Submits what was recorded and waits for everything submitted; releases what it kept
    /// alive.
    pub(super) fn flush(&self, s: &mut Stream) -> Result<()> {
        let t = self.submit_frame(s)?;
        self.wait_for(s, t)
    }

    /// [`Device::submit`].
    pub(super) fn submit_work(&self) -> Result<Ticket> {
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::submit")?;
        let t = self.submit_frame(&mut s)?;
        Ok(Ticket::new(self.id, t))
    }

    /// [`Device::wait`].
    pub(super) fn wait_ticket(&self, ticket: Ticket) -> Result<()> {
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::wait")?;
        let t = ticket.check(self.id, s.issued)?;
        self.wait_for(&mut s, t)
    }

    /// [`Device::is_done`].
    pub(super) fn ticket_done(&self, ticket: Ticket) -> Result<bool> {
        let mut s = self.stream_lock();
        let t = ticket.check(self.id, s.issued)?;
        self.retire(&mut s, false)?;
        Ok(t <= s.done)
    }

    /// [`Device::record`]: `work` records into a frame of its own, which becomes the recording.
    pub(super) fn record_work(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Recording> {
        {
            let mut s = self.stream_lock();
            self.refuse_in_recording(&s, "Device::record")?;
            // Work queued before goes out first, in order.
            self.submit_frame(&mut s)?;
            let mut capture = self.spare_frame(&mut s)?;
            capture.reusable = true;
            let idle = std::mem::replace(&mut s.frame, capture);
            s.spare.push(idle);
            s.capture_owner = Some(std::thread::current().id());
        }
        let worked = work();
        let mut s = self.stream_lock();
        s.capture_owner = None;
        self.stream_turn.notify_all();
        let next = self.spare_frame(&mut s)?;
        let mut capture = std::mem::replace(&mut s.frame, next);
        let ended = worked.and_then(|_| {
            if !capture.recording {
                // An empty recording is still one that replays (as nothing).
                std::mem::swap(&mut s.frame, &mut capture);
                let begun = self.begin(&mut s, &[]);
                std::mem::swap(&mut s.frame, &mut capture);
                begun?;
                capture.commands = 0;
            }
            self.end_frame(&mut capture)
        });
        if let Err(e) = ended {
            if capture.recording {
                // SAFETY: the command buffer is recording; ending it lets the pool reset it.
                let _ = unsafe { self.core.device.end_command_buffer(capture.cmd) };
            }
            self.recycle(&mut capture);
            s.spare.push(capture);
            return Err(e);
        }
        let operations = capture.commands as usize;
        let barriers = capture.barriers as usize;
        let rec = Arc::new(VkRecording {
            core: self.core.clone(),
            frame: capture,
        });
        Ok(Recording::new(
            self.id,
            operations,
            Some(barriers),
            Box::new(rec),
        ))
    }

    /// [`Device::replay`].
    pub(super) fn replay_recording(&self, recording: &Recording) -> Result<Ticket> {
        let rec = recording.inner::<Arc<VkRecording>>(self.id)?;
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::replay")?;
        self.submit_frame(&mut s)?;
        self.make_room(&mut s)?;
        // A frame of its own carries the fence and keeps the recording alive while it runs.
        let mut frame = self.spare_frame(&mut s)?;
        if let Err(e) = self.queue_submit(rec.frame.cmd, frame.fence) {
            s.spare.push(frame);
            return Err(e);
        }
        frame.keep.push(rec.clone());
        s.issued += 1;
        let ticket = s.issued;
        s.in_flight.push_back(Pending { ticket, frame });
        Ok(Ticket::new(self.id, ticket))
    }

    /// Waits for every submit and destroys every frame (the device is dropping).
    pub(super) fn destroy_stream(&self, s: &mut Stream) {
        let _ = self.flush(s);
        let d = &self.core.device;
        let mut frames: Vec<Frame> = s.spare.drain(..).collect();
        frames.append(&mut s.finished);
        frames.extend(s.in_flight.drain(..).map(|p| p.frame));
        // SAFETY: the flush above waited for every submit (or settled after a failed wait);
        // each frame is destroyed once.
        unsafe {
            if s.frame.recording {
                let _ = d.end_command_buffer(s.frame.cmd);
            }
            destroy_frame(d, &mut s.frame);
            for mut f in frames {
                destroy_frame(d, &mut f);
            }
        }
    }

    /// Waits for `fence`: polls it for up to [`SPIN_WAIT`] (not on a CPU device), then blocks.
    fn wait(&self, fence: vk::Fence) -> Result<()> {
        let d = &self.core.device;
        if self.info.device_type != DeviceType::Cpu {
            let start = std::time::Instant::now();
            loop {
                // SAFETY: the fence belongs to this device and was submitted.
                match unsafe { d.get_fence_status(fence) } {
                    Ok(true) => return Ok(()),
                    Ok(false) if start.elapsed() < SPIN_WAIT => std::hint::spin_loop(),
                    Ok(false) => break,
                    Err(e) => return Err(Error::vk("vkGetFenceStatus")(e)),
                }
            }
        }
        // SAFETY: as above.
        unsafe { d.wait_for_fences(&[fence], true, FENCE_TIMEOUT_NS) }
            .map_err(Error::vk("vkWaitForFences"))
    }

    /// [`Device::write`]: stages `src` and records its copy into `dst`. Up to
    /// [`STAGING_BYTES`] go through a free piece of the device's [`Staging`] buffer; larger
    /// writes, and any while no piece is free, through a staging buffer of their own, freed
    /// once the submit has finished.
    pub(super) fn upload(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        dst.check_range(offset, src.len() as u64)?;
        let target = self.target(dst)?.require(
            vk::BufferUsageFlags::TRANSFER_DST,
            "upload into it (Device::write, DeviceVec::fill)",
        )?;
        if src.is_empty() {
            return Ok(());
        }
        let bytes = src.len() as u64;
        {
            let mut s = self.stream_lock();
            self.refuse_in_recording(&s, "Device::write")?;
            if let Some(at) = self.staging_room(&mut s, bytes)? {
                // The piece is free: no recorded or pending command uses it (`staging_room`).
                s.small_staging
                    .buffer
                    .with_mapped(|m| m[at as usize..][..src.len()].copy_from_slice(src))?;
                let piece = Access::new(s.small_staging.buffer.buffer, at, bytes, false);
                let written = Access::new(target.buffer, target.base + offset, bytes, true);
                self.begin(&mut s, &[piece, written])?;
                let regions = copy_regions(at, target.base + offset, bytes);
                // SAFETY: recording command buffer of this device; the staging buffer lives as
                // long as the stream, and `dst` is kept alive until the submit finishes; the
                // regions lie inside both (the piece inside the staging buffer, the range
                // inside `dst`, checked above).
                unsafe {
                    self.core.device.cmd_copy_buffer(
                        s.cmd,
                        s.small_staging.buffer.buffer,
                        target.buffer,
                        &regions,
                    )
                };
                self.take_staging(&mut s, at, bytes);
                s.keep.push(dst.keep_alive());
                self.stamp(&mut s, "write");
                return Ok(());
            }
        }
        let staging = VkBuffer::new(
            &self.core,
            src.len() as u64,
            MemoryLocation::CpuToGpu,
            "xwarp upload",
        )?;
        staging.with_mapped(|m| m[..src.len()].copy_from_slice(src))?;
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::write")?;
        let bytes = src.len() as u64;
        let staged = Access::new(staging.buffer, 0, bytes, false);
        let written = Access::new(target.buffer, target.base + offset, bytes, true);
        self.begin(&mut s, &[staged, written])?;
        let regions = copy_regions(0, target.base + offset, src.len() as u64);
        // SAFETY: both buffers are alive until the submit finishes (kept in the stream) and
        // the regions lie inside both.
        unsafe {
            self.core
                .device
                .cmd_copy_buffer(s.cmd, staging.buffer, target.buffer, &regions)
        };
        s.keep.push(dst.keep_alive());
        s.staging.push(staging);
        self.stamp(&mut s, "write");
        Ok(())
    }

    /// [`Device::copy`]: records a copy between two buffers.
    pub(super) fn copy_on_device(
        &self,
        src: &RawBuffer,
        src_offset: u64,
        dst: &RawBuffer,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let from = self.target(src)?.require(
            vk::BufferUsageFlags::TRANSFER_SRC,
            "copy from it on the device (Device::copy)",
        )?;
        let to = self.target(dst)?.require(
            vk::BufferUsageFlags::TRANSFER_DST,
            "copy into it on the device (Device::copy)",
        )?;
        src.check_range(src_offset, bytes)?;
        dst.check_range(dst_offset, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        let mut s = self.stream_lock();
        self.begin(
            &mut s,
            &[
                Access::new(from.buffer, from.base + src_offset, bytes, false),
                Access::new(to.buffer, to.base + dst_offset, bytes, true),
            ],
        )?;
        let regions = copy_regions(from.base + src_offset, to.base + dst_offset, bytes);
        // SAFETY: both buffers are kept alive until the submit finishes; ranges checked above.
        unsafe {
            self.core
                .device
                .cmd_copy_buffer(s.cmd, from.buffer, to.buffer, &regions)
        };
        s.keep.push(src.keep_alive());
        s.keep.push(dst.keep_alive());
        self.stamp(&mut s, "copy");
        Ok(())
    }

    /// [`Device::read`]: records a copy into staging memory, submits, waits and copies out.
    /// The staging memory is a piece of the device's [`Staging`] buffer for up to
    /// [`STAGING_BYTES`] where one is free (writes not yet waited for may hold it all), else a
    /// buffer of its own.
    pub(super) fn download(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        src.check_range(offset, dst.len() as u64)?;
        let source = self.target(src)?.require(
            vk::BufferUsageFlags::TRANSFER_SRC,
            "download from it (Device::read, DeviceVec::to_vec)",
        )?;
        if dst.is_empty() {
            return self.synchronize();
        }
        let bytes = dst.len() as u64;
        if let Ok(mapped) = src.downcast::<VkBuffer>(self.id, &self.info.name) {
            if mapped.read_directly(bytes) {
                return self.read_mapped(mapped, offset, dst);
            }
        }
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::read")?;
        if let Some(at) = self.staging_room(&mut s, bytes)? {
            let staging = s.small_staging.buffer.buffer;
            let read = Access::new(source.buffer, source.base + offset, bytes, false);
            self.begin(&mut s, &[read, Access::new(staging, at, bytes, true)])?;
            self.record_download(
                &s,
                (source.buffer, source.base + offset),
                (staging, at),
                bytes,
            );
            self.take_staging(&mut s, at, bytes);
            s.keep.push(src.keep_alive());
            self.flush(&mut s)?;
            // Still locked since the piece was found: no later write or read was handed these
            // bytes, and the flush waited for the copy into them.
            return s
                .small_staging
                .buffer
                .with_mapped(|m| dst.copy_from_slice(&m[at as usize..][..dst.len()]));
        }
        drop(s);
        let staging = VkBuffer::new(
            &self.core,
            bytes,
            MemoryLocation::GpuToCpu,
            "xwarp download",
        )?;
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::read")?;
        let read = Access::new(source.buffer, source.base + offset, bytes, false);
        self.begin(&mut s, &[read, Access::new(staging.buffer, 0, bytes, true)])?;
        self.record_download(
            &s,
            (source.buffer, source.base + offset),
            (staging.buffer, 0),
            bytes,
        );
        s.keep.push(src.keep_alive());
        self.flush(&mut s)?;
        drop(s);
        staging.with_mapped(|m| dst.copy_from_slice(&m[..dst.len()]))
    }

    /// [`Self::download`] of a buffer the host maps (`buffer`, behind `src`; see
    /// `memory::HOST_READ_MAX_BYTES`): the work recorded so far is submitted, everything
    /// submitted waited for (each submission ends with a barrier that makes its writes visible
    /// to the host, [`Self::end_frame`]), then the bytes come straight from the mapping: no
    /// copy command, and no submission at all where the work was submitted already.
    fn read_mapped(&self, buffer: &VkBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        let mut s = self.stream_lock();
        self.refuse_in_recording(&s, "Device::read")?;
        let t = self.submit_frame(&mut s)?;
        self.wait_for(&mut s, t)?;
        // Still holding the stream: no later command can write the buffer before the copy.
        buffer.read_mapped(offset, dst)
    }

    /// Records the copy of a read: `bytes` from `(buffer, offset)` `from` into the host-visible
    /// `(buffer, offset)` `to`, then a barrier that makes them visible to the host once the
    /// submit's fence has signalled.
    ///
    /// Both buffers must stay alive until the submit has finished, and both ranges must lie
    /// inside their buffers.
    fn record_download(
        &self,
        s: &Stream,
        from: (vk::Buffer, u64),
        to: (vk::Buffer, u64),
        bytes: u64,
    ) {
        let regions = copy_regions(from.1, to.1, bytes);
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: recording command buffer of this device (the caller holds the stream and
        // has begun it); the caller keeps both buffers alive until the submit has finished,
        // and the regions lie inside both.
        unsafe {
            let d = &self.core.device;
            d.cmd_copy_buffer(s.cmd, from.0, to.0, &regions);
            d.cmd_pipeline_barrier(
                s.cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
        }
    }

    /// Where a piece of `bytes` of the staging buffer can start now, if one is free (never for
    /// more than [`STAGING_BYTES`]). It only finds the piece: [`Self::take_staging`] hands it
    /// out once the command that uses it is recorded, under the same lock of the stream.
    fn staging_room(&self, s: &mut Stream, bytes: u64) -> Result<Option<u64>> {
        if bytes > STAGING_BYTES {
            return Ok(None);
        }
        // The whole buffer is free again once nothing recorded or pending uses it.
        let free = |s: &Stream| !s.frame.uses_staging && s.done >= s.small_staging.busy_until;
        if free(s) {
            s.small_staging.used = 0;
        }
        let fits = |s: &Stream| s.small_staging.used + bytes <= STAGING_BYTES;
        if !fits(s) && !s.frame.uses_staging && !s.in_flight.is_empty() {
            // Without waiting: the submits that used it may have finished unseen.
            self.retire(s, false)?;
            if free(s) {
                s.small_staging.used = 0;
            }
        }
        Ok(fits(s).then_some(s.small_staging.used))
    }

    /// Hands out the piece of `bytes` at `at` that [`Self::staging_room`] found, to the frame
    /// being recorded, whose command using it has just been recorded.
    fn take_staging(&self, s: &mut Stream, at: u64, bytes: u64) {
        s.small_staging.used = (at + bytes).next_multiple_of(STAGING_ALIGN);
        s.frame.uses_staging = true;
    }

    /// [`Device::time`]: timestamps around `work`, one timer at a time.
    pub(super) fn time_work(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        Ok(self.timed(work, false)?.total)
    }

    /// [`Device::time_launches`]: [`Self::time_work`] with a timestamp after each command.
    pub(super) fn time_commands(
        &self,
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<LaunchTimes> {
        self.timed(work, true)
    }

    /// Timestamps around `work` (queries 0 and 1) and, with `each`, after each of its commands
    /// (queries 2, 3, ...). Nothing host-side lies between the timestamps: the commands run
    /// only when the frame is submitted, after `work` returns (unless `work` itself waits).
    fn timed(&self, work: &mut dyn FnMut() -> Result<()>, each: bool) -> Result<LaunchTimes> {
        if self.timestamp_mask == 0 {
            return Err(Error::MissingFeature {
                device: self.info.name.clone(),
                missing: "timestamp queries on its compute queue".into(),
            });
        }
        // One timer at a time: another's reset must not land between this one's timestamps
        // and its read of them. Work other threads queue meanwhile counts in this time.
        let _timer = lock(&self.timer);
        let queries = if each {
            2 + MAX_TIMED_COMMANDS as u32
        } else {
            2
        };
        {
            let mut s = self.stream_lock();
            self.refuse_in_recording(&s, "Device::time")?;
            self.flush(&mut s)?;
            if self.host_query_reset {
                // Outside the timed span.
                // SAFETY: hostQueryReset is enabled; no submitted command uses the pool: the
                // timer lock is held, the last timer read its queries after its submit
                // finished, and the flush above waited for the rest.
                unsafe {
                    self.core
                        .device
                        .reset_query_pool(self.query_pool, 0, queries)
                };
            }
            // No barrier after these: they touch no buffer, so the first command of `work`
            // needs none (timestamps and the reset take no place in the command count).
            self.start(&mut s)?;
            // SAFETY: recording command buffer; the query pool holds `queries` queries.
            unsafe {
                let d = &self.core.device;
                if !self.host_query_reset {
                    d.cmd_reset_query_pool(s.cmd, self.query_pool, 0, queries);
                }
                d.cmd_write_timestamp(
                    s.cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    self.query_pool,
                    0,
                );
            }
            if each {
                s.stamps = Some(Vec::new());
            }
        }
        let worked = work();
        let mut s = self.stream_lock();
        let names = s.stamps.take().unwrap_or_default();
        // A bottom-of-pipe timestamp waits for every earlier command: no barrier before it.
        self.start(&mut s)?;
        // SAFETY: recording command buffer; query 1 was reset above.
        unsafe {
            self.core.device.cmd_write_timestamp(
                s.cmd,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                self.query_pool,
                1,
            )
        };
        self.flush(&mut s)?;
        drop(s);
        worked?;
        if names.len() > MAX_TIMED_COMMANDS {
            return Err(Error::invalid(
                "work",
                format!("{} commands", names.len()),
                format!("at most {MAX_TIMED_COMMANDS} commands in one Device::time_launches"),
            ));
        }
        let mut stamps = vec![0u64; 2 + names.len()];
        // SAFETY: queries 0 .. 2 + names.len() were all written by the finished submit.
        unsafe {
            self.core.device.get_query_pool_results(
                self.query_pool,
                0,
                &mut stamps,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(Error::vk("vkGetQueryPoolResults"))?;
        let span = |from: u64, to: u64| {
            let ticks = (to & self.timestamp_mask).wrapping_sub(from & self.timestamp_mask)
                & self.timestamp_mask;
            Duration::from_nanos((ticks as f64 * self.timestamp_period) as u64)
        };
        let mut before = stamps[0];
        let commands = names
            .into_iter()
            .zip(&stamps[2..])
            .map(|(name, &at)| {
                let gpu = span(before, at);
                before = at;
                CommandTime { name, gpu }
            })
            .collect();
        Ok(LaunchTimes {
            total: span(stamps[0], stamps[1]),
            commands,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    #[test]
    fn barriers_separate_dependent_commands_only() {
        let (a, b) = (vk::Buffer::from_raw(1), vk::Buffer::from_raw(2));
        let read = |buf, at, n| Access::new(buf, at, n, false);
        let write = |buf, at, n| Access::new(buf, at, n, true);
        let earlier = [read(a, 0, 64), write(b, 0, 64)];
        // Reads of what was read, and anything of other bytes or buffers: independent.
        assert!(!needs_barrier(&earlier, &[read(a, 0, 64)]));
        assert!(!needs_barrier(
            &earlier,
            &[write(a, 64, 8), write(b, 64, 8)]
        ));
        assert!(!needs_barrier(
            &earlier,
            &[write(vk::Buffer::from_raw(3), 0, 64)]
        ));
        assert!(!needs_barrier(&[], &[write(a, 0, 64)]));
        // A read after a write, a write after a read, two writes: dependent.
        assert!(needs_barrier(&earlier, &[read(b, 63, 1)]));
        assert!(needs_barrier(&earlier, &[write(a, 10, 1)]));
        assert!(needs_barrier(&earlier, &[write(b, 0, 1)]));
        assert!(needs_barrier(&earlier, &[read(b, 32, 0), read(b, 0, 1)]));
        // Empty ranges touch nothing.
        assert!(!needs_barrier(&earlier, &[write(a, 8, 0)]));
        // Past the tracked number, always.
        let many: Vec<Access> = (0..MAX_TRACKED_ACCESSES as u64)
            .map(|i| read(a, i * 8, 8))
            .collect();
        assert!(needs_barrier(&many, &[read(b, 1000, 8)]));
        assert!(!needs_barrier(&many[1..], &[read(b, 1000, 8)]));
    }

    #[test]
    fn copy_regions_cover_the_range_in_pieces_below_2_gib() {
        assert!(copy_regions(0, 0, 0).is_empty());
        let one = copy_regions(8, 16, 100);
        assert_eq!(
            (one.len(), one[0].src_offset, one[0].dst_offset, one[0].size),
            (1, 8, 16, 100)
        );
        let bytes = (1u64 << 31) + 12;
        let r = copy_regions(4, 64, bytes);
        assert_eq!(r.len(), 3);
        let mut at = 0;
        for c in &r {
            assert!(c.size < 1 << 31, "{c:?}");
            assert_eq!((c.src_offset, c.dst_offset), (4 + at, 64 + at));
            at += c.size;
        }
        assert_eq!(at, bytes);
    }
}
