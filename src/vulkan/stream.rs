//! The command stream: recording into one command buffer with a barrier between commands,
//! submitting and waiting, the transfers, and GPU timing.

use super::instance::lock;
use super::memory::VkBuffer;
use super::VulkanDevice;
use crate::device::{Device, DeviceType, RawBuffer};
use crate::error::{Error, Result};
use ash::vk;
use gpu_allocator::MemoryLocation;
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

/// The command buffer being recorded and what it keeps alive.
pub(super) struct Stream {
    pub(super) pool: vk::CommandPool,
    pub(super) cmd: vk::CommandBuffer,
    pub(super) fence: vk::Fence,
    pub(super) recording: bool,
    pub(super) commands: u32,
    pub(super) keep: Vec<Arc<dyn std::any::Any + Send + Sync>>,
    pub(super) staging: Vec<VkBuffer>,
    pub(super) desc_pools: Vec<vk::DescriptorPool>,
    pub(super) desc_pool_current: usize,
}

impl VulkanDevice {
    /// The queue family index work is submitted to.
    pub fn queue_family(&self) -> u32 {
        self.queue_family
    }

    /// Records zeroing all of `buffer`, one of this device's own (submitted with the next work
    /// that is waited for).
    pub(super) fn record_zero(&self, buffer: &RawBuffer) -> Result<()> {
        let target = self.target(buffer)?;
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        // SAFETY: recording command buffer of this device; the buffer is one of its own
        // (created with TRANSFER_DST), the range is all of it (a multiple of 4 bytes from its
        // start), and the stream keeps it alive until the submit finishes.
        unsafe {
            self.core
                .device
                .cmd_fill_buffer(s.cmd, target.buffer, target.base, buffer.bytes(), 0)
        };
        s.keep.push(buffer.keep_alive());
        Ok(())
    }

    /// Starts recording if needed, and separates the next command from earlier ones.
    pub(super) fn begin(&self, s: &mut Stream) -> Result<()> {
        let d = &self.core.device;
        if !s.recording {
            // SAFETY: the command buffer is not in use: every submit waits for its fence.
            unsafe {
                d.begin_command_buffer(
                    s.cmd,
                    &vk::CommandBufferBeginInfo::default()
                        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
                )
            }
            .map_err(Error::vk("vkBeginCommandBuffer"))?;
            s.recording = true;
            s.commands = 0;
            if self.external {
                // The application's earlier work on this queue (submission order) may have
                // written the buffers xwarp is about to use, or still read ones it writes.
                let barrier = vk::MemoryBarrier::default()
                    .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
                    .dst_access_mask(
                        vk::AccessFlags::SHADER_READ
                            | vk::AccessFlags::SHADER_WRITE
                            | vk::AccessFlags::TRANSFER_READ
                            | vk::AccessFlags::TRANSFER_WRITE,
                    );
                // SAFETY: recording command buffer of this device.
                unsafe {
                    d.cmd_pipeline_barrier(
                        s.cmd,
                        vk::PipelineStageFlags::ALL_COMMANDS,
                        vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                        vk::DependencyFlags::empty(),
                        &[barrier],
                        &[],
                        &[],
                    )
                };
            }
        }
        if s.commands > 0 {
            let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(
                    vk::AccessFlags::SHADER_READ
                        | vk::AccessFlags::SHADER_WRITE
                        | vk::AccessFlags::TRANSFER_READ
                        | vk::AccessFlags::TRANSFER_WRITE,
                );
            // SAFETY: recording command buffer of this device.
            unsafe {
                d.cmd_pipeline_barrier(
                    s.cmd,
                    stages,
                    stages,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                )
            };
        }
        s.commands += 1;
        Ok(())
    }

    /// Submits what was recorded and waits for it; releases what it kept alive.
    pub(super) fn flush(&self, s: &mut Stream) -> Result<()> {
        if !s.recording {
            return Ok(());
        }
        let d = &self.core.device;
        s.recording = false;
        if self.external {
            // The application's later work on this queue, and its host reads after this call
            // returns, see what xwarp wrote.
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(
                    vk::AccessFlags::MEMORY_READ
                        | vk::AccessFlags::MEMORY_WRITE
                        | vk::AccessFlags::HOST_READ,
                );
            // SAFETY: recording command buffer of this device.
            unsafe {
                d.cmd_pipeline_barrier(
                    s.cmd,
                    vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST,
                    vk::DependencyFlags::empty(),
                    &[barrier],
                    &[],
                    &[],
                )
            };
        }
        // SAFETY: the command buffer was recorded on this device; the fence is unsignalled
        // (reset after each wait) and the queue is externally synchronised by its mutex (and
        // by the application's lock, or its promise not to use the queue meanwhile).
        let result = unsafe {
            d.end_command_buffer(s.cmd)
                .map_err(Error::vk("vkEndCommandBuffer"))
                .and_then(|_| {
                    let cmds = [s.cmd];
                    let submit = vk::SubmitInfo::default().command_buffers(&cmds);
                    let queue = lock(&self.queue);
                    let _app = self.queue_lock.as_deref().map(lock);
                    d.queue_submit(*queue, &[submit], s.fence)
                        .map_err(Error::vk("vkQueueSubmit"))
                })
                .and_then(|_| {
                    let waited = self.wait(s.fence);
                    let reset = d
                        .reset_fences(&[s.fence])
                        .map_err(Error::vk("vkResetFences"));
                    waited.and(reset)
                })
        };
        if matches!(
            result,
            Err(Error::Vulkan {
                result: vk::Result::TIMEOUT,
                ..
            })
        ) {
            // The GPU still uses what this submit references: wait for it rather than free
            // memory under it. On an application's device only the queue is waited on:
            // vkDeviceWaitIdle would need all of its queues externally synchronised.
            // SAFETY: waiting is always allowed; the queue is synchronised as for the submit.
            unsafe {
                if self.external {
                    let queue = lock(&self.queue);
                    let _app = self.queue_lock.as_deref().map(lock);
                    let _ = d.queue_wait_idle(*queue);
                } else {
                    let _ = d.device_wait_idle();
                }
                let _ = d.reset_fences(&[s.fence]);
            }
        }
        // SAFETY: the submit finished (or never started): the pools' objects are unused.
        unsafe {
            let _ = d.reset_command_pool(s.pool, vk::CommandPoolResetFlags::empty());
            for &p in &s.desc_pools {
                let _ = d.reset_descriptor_pool(p, vk::DescriptorPoolResetFlags::empty());
            }
        }
        s.desc_pool_current = 0;
        s.keep.clear();
        s.staging.clear();
        result
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

    /// [`Device::write`]: stages `src` and records its copy into `dst`.
    pub(super) fn upload(&self, dst: &RawBuffer, offset: u64, src: &[u8]) -> Result<()> {
        dst.check_range(offset, src.len() as u64)?;
        let target = self.target(dst)?.require(
            vk::BufferUsageFlags::TRANSFER_DST,
            "upload into it (Device::write, DeviceVec::fill)",
        )?;
        if src.is_empty() {
            return Ok(());
        }
        let staging = VkBuffer::new(
            &self.core,
            src.len() as u64,
            MemoryLocation::CpuToGpu,
            "xwarp upload",
        )?;
        staging.with_mapped(|m| m[..src.len()].copy_from_slice(src))?;
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
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
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        let regions = copy_regions(from.base + src_offset, to.base + dst_offset, bytes);
        // SAFETY: both buffers are kept alive until the submit finishes; ranges checked above.
        unsafe {
            self.core
                .device
                .cmd_copy_buffer(s.cmd, from.buffer, to.buffer, &regions)
        };
        s.keep.push(src.keep_alive());
        s.keep.push(dst.keep_alive());
        Ok(())
    }

    /// [`Device::read`]: records a copy into staging memory, submits, waits and copies out.
    pub(super) fn download(&self, src: &RawBuffer, offset: u64, dst: &mut [u8]) -> Result<()> {
        src.check_range(offset, dst.len() as u64)?;
        let source = self.target(src)?.require(
            vk::BufferUsageFlags::TRANSFER_SRC,
            "download from it (Device::read, DeviceVec::to_vec)",
        )?;
        if dst.is_empty() {
            return self.synchronize();
        }
        let staging = VkBuffer::new(
            &self.core,
            dst.len() as u64,
            MemoryLocation::GpuToCpu,
            "xwarp download",
        )?;
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
        let regions = copy_regions(source.base + offset, 0, dst.len() as u64);
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        // SAFETY: both buffers are alive until the wait below; the regions lie inside both.
        unsafe {
            let d = &self.core.device;
            d.cmd_copy_buffer(s.cmd, source.buffer, staging.buffer, &regions);
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
        s.keep.push(src.keep_alive());
        self.flush(&mut s)?;
        drop(s);
        staging.with_mapped(|m| dst.copy_from_slice(&m[..dst.len()]))
    }

    /// [`Device::time`]: timestamps around `work`, one timer at a time.
    pub(super) fn time_work(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        if self.timestamp_mask == 0 {
            return Err(Error::MissingFeature {
                device: self.info.name.clone(),
                missing: "timestamp queries on its compute queue".into(),
            });
        }
        // One timer at a time: another's reset must not land between this one's timestamps
        // and its read of them. Work other threads queue meanwhile counts in this time.
        let _timer = lock(&self.timer);
        {
            let mut s = lock(&self.stream);
            self.flush(&mut s)?;
            self.begin(&mut s)?;
            // SAFETY: recording command buffer; the query pool holds 2 queries.
            unsafe {
                let d = &self.core.device;
                d.cmd_reset_query_pool(s.cmd, self.query_pool, 0, 2);
                d.cmd_write_timestamp(
                    s.cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    self.query_pool,
                    0,
                );
            }
        }
        let worked = work();
        let mut s = lock(&self.stream);
        self.begin(&mut s)?;
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
        worked?;
        let mut stamps = [0u64; 2];
        // SAFETY: both queries were written by the finished submit.
        unsafe {
            self.core.device.get_query_pool_results(
                self.query_pool,
                0,
                &mut stamps,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(Error::vk("vkGetQueryPoolResults"))?;
        let ticks = (stamps[1] & self.timestamp_mask).wrapping_sub(stamps[0] & self.timestamp_mask)
            & self.timestamp_mask;
        Ok(Duration::from_nanos(
            (ticks as f64 * self.timestamp_period) as u64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
