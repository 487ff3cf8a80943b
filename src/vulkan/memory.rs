//! Memory: the logical device with the allocator of xwarp's own memory, and the buffers
//! allocated from it.

use super::instance::{lifecycle, lock, Instance};
use super::VulkanDevice;
#[cfg(doc)]
use crate::device::Device;
use crate::device::{MemoryUsage, RawBuffer};
use crate::error::{Error, Result};
use ash::vk;
use gpu_allocator::vulkan::{
    Allocation, AllocationCreateDesc, AllocationScheme, Allocator, AllocatorCreateDesc,
};
use gpu_allocator::MemoryLocation;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

/// Logical-device state that buffers need to free themselves; dropped after every buffer.
pub(super) struct Core {
    pub(super) device: ash::Device,
    allocator: ManuallyDrop<Mutex<Allocator>>,
    name: String,
    /// False for an application's device: xwarp frees its own memory on it, nothing else.
    owned: bool,
    /// The device has a memory type that is device-local, host-visible and host-coherent
    /// (where small buffers go, [`HOST_READ_MAX_BYTES`]).
    mappable_device_memory: bool,
    pub(super) _instance: Arc<Instance>,
}

impl Core {
    /// Wraps `device` with an allocator for xwarp's own memory. On failure an owned device is
    /// destroyed (nothing else was created on it yet).
    pub(super) fn new(
        inst: &Arc<Instance>,
        device: ash::Device,
        pd: vk::PhysicalDevice,
        name: &str,
        owned: bool,
    ) -> Result<Arc<Self>> {
        // SAFETY: `pd` is a physical device of this instance.
        let props = unsafe { inst.instance.get_physical_device_memory_properties(pd) };
        let mappable_device_memory = props
            .memory_types_as_slice()
            .iter()
            .any(|t| t.property_flags.contains(HOST_READABLE));
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: inst.instance.clone(),
            device: device.clone(),
            physical_device: pd,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        });
        match allocator {
            Ok(a) => Ok(Arc::new(Core {
                device,
                allocator: ManuallyDrop::new(Mutex::new(a)),
                name: name.to_string(),
                owned,
                mappable_device_memory,
                _instance: inst.clone(),
            })),
            Err(e) => {
                if owned {
                    // SAFETY: nothing was created on the device yet.
                    unsafe { device.destroy_device(None) };
                }
                Err(Error::OutOfMemory {
                    bytes: 0,
                    device: name.to_string(),
                    reason: format!("creating the allocator: {e}"),
                })
            }
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        let _guard = lifecycle();
        // SAFETY: all buffers (which hold Arcs to the core) and all other device objects are
        // gone, and the work that used them has finished (buffers are kept alive by recorded
        // work until its fence signals); the allocator frees its memory blocks before an owned
        // device is destroyed. An application's device is neither waited on (vkDeviceWaitIdle
        // needs every queue externally synchronised) nor destroyed.
        unsafe {
            if self.owned {
                let _ = self.device.device_wait_idle();
            }
            ManuallyDrop::drop(&mut self.allocator);
            if self.owned {
                self.device.destroy_device(None);
            }
        }
    }
}

/// A buffer with its memory; frees both on drop.
pub(super) struct VkBuffer {
    core: Arc<Core>,
    pub(super) buffer: vk::Buffer,
    allocation: Mutex<Option<Allocation>>,
}

impl VkBuffer {
    pub(super) fn new(
        core: &Arc<Core>,
        bytes: u64,
        location: MemoryLocation,
        name: &str,
    ) -> Result<Self> {
        Self::create(core, bytes, location, name, false)
    }

    /// [`Self::new`] in memory of its own (a dedicated allocation) rather than a piece of one
    /// of the allocator's shared blocks: for a small buffer that lives as long as the device,
    /// which then keeps no shared block from being given back.
    pub(super) fn dedicated(
        core: &Arc<Core>,
        bytes: u64,
        location: MemoryLocation,
        name: &str,
    ) -> Result<Self> {
        Self::create(core, bytes, location, name, true)
    }

    fn create(
        core: &Arc<Core>,
        bytes: u64,
        location: MemoryLocation,
        name: &str,
        dedicated: bool,
    ) -> Result<Self> {
        let _guard = lifecycle();
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST
            | vk::BufferUsageFlags::INDIRECT_BUFFER;
        let info = vk::BufferCreateInfo::default()
            .size(bytes)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let oom = |reason: String| Error::OutOfMemory {
            bytes,
            device: core.name.clone(),
            reason,
        };
        // SAFETY: valid create info on a live device.
        let buffer =
            unsafe { core.device.create_buffer(&info, None) }.map_err(|e| oom(e.to_string()))?;
        // SAFETY: `buffer` was just created on this device.
        let requirements = unsafe { core.device.get_buffer_memory_requirements(buffer) };
        let allocation = lock(&core.allocator).allocate(&AllocationCreateDesc {
            name,
            requirements,
            location,
            linear: true,
            allocation_scheme: if dedicated {
                AllocationScheme::DedicatedBuffer(buffer)
            } else {
                AllocationScheme::GpuAllocatorManaged
            },
        });
        let allocation = match allocation {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the buffer has no memory bound and is used nowhere.
                unsafe { core.device.destroy_buffer(buffer, None) };
                return Err(oom(e.to_string()));
            }
        };
        // SAFETY: the allocation satisfies the buffer's requirements and is bound once.
        let bound = unsafe {
            core.device
                .bind_buffer_memory(buffer, allocation.memory(), allocation.offset())
        };
        let this = VkBuffer {
            core: core.clone(),
            buffer,
            allocation: Mutex::new(Some(allocation)),
        };
        bound.map_err(Error::vk("vkBindBufferMemory"))?;
        Ok(this)
    }

    /// Whether a read of `bytes` of this buffer comes straight from its mapping: the buffer
    /// lies in device-local memory the host has mapped and sees coherently, and either the read
    /// is small ([`HOST_READ_MAX_BYTES`]) or the host caches that memory (a CPU device's, a
    /// shared-memory GPU's), since reads through an uncached mapping of a PCIe BAR are slow.
    /// Unless `XWARP_VULKAN_READS=staged` sends every read through a copy into staging memory
    /// (so that the tests run that path on devices whose memory is all mapped).
    pub(super) fn read_directly(&self, bytes: u64) -> bool {
        static STAGED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let staged = *STAGED
            .get_or_init(|| std::env::var("XWARP_VULKAN_READS").is_ok_and(|v| v == "staged"));
        !staged
            && lock(&self.allocation).as_ref().is_some_and(|a| {
                let flags = a.memory_properties();
                flags.contains(HOST_READABLE)
                    && a.mapped_ptr().is_some()
                    && (bytes <= HOST_READ_MAX_BYTES
                        || flags.contains(vk::MemoryPropertyFlags::HOST_CACHED))
            })
    }

    /// Copies the buffer's mapped bytes from `offset` into `dst`. Where the host does not cache
    /// the memory (a PCIe BAR), the bytes are read in aligned 16-byte loads
    /// ([`copy_from_uncached`]).
    pub(super) fn read_mapped(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let guard = lock(&self.allocation);
        let allocation = guard.as_ref();
        let cached = allocation.is_some_and(|a| {
            a.memory_properties()
                .contains(vk::MemoryPropertyFlags::HOST_CACHED)
        });
        let mapping = allocation
            .and_then(|a| a.mapped_slice())
            .ok_or(Error::Vulkan {
                call: "map staging memory",
                result: vk::Result::ERROR_MEMORY_MAP_FAILED,
            })?;
        if cached {
            dst.copy_from_slice(&mapping[offset as usize..][..dst.len()]);
        } else {
            copy_from_uncached(mapping, offset as usize, dst);
        }
        Ok(())
    }

    /// The mapped bytes of a host-visible buffer.
    pub(super) fn with_mapped<R>(&self, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        let mut guard = lock(&self.allocation);
        let slice = guard
            .as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .ok_or(Error::Vulkan {
                call: "map staging memory",
                result: vk::Result::ERROR_MEMORY_MAP_FAILED,
            })?;
        Ok(f(slice))
    }
}

impl Drop for VkBuffer {
    fn drop(&mut self) {
        let _guard = lifecycle();
        if let Some(a) = lock(&self.allocation).take() {
            let _ = lock(&self.core.allocator).free(a);
        }
        // SAFETY: work that used the buffer has finished: recorded work holds a clone of the
        // buffer's Arc until its fence has signalled.
        unsafe { self.core.device.destroy_buffer(self.buffer, None) };
    }
}

/// Copies `dst.len()` bytes at `at` of `mapping`, memory the host maps without caching it (a
/// PCIe BAR), into `dst`. Every load from such memory is a round trip over the bus, and
/// `memcpy` reads a 4- or 8-byte value by two overlapping loads; here each aligned 16 bytes
/// that hold part of the range are read by one load (x86-64, where the range's aligned cover
/// lies inside the mapping and spans at most [`HOST_READ_MAX_BYTES`] + 16 bytes; elsewhere a
/// plain copy).
fn copy_from_uncached(mapping: &[u8], at: usize, dst: &mut [u8]) {
    let src = &mapping[at..][..dst.len()];
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_load_si128};
        const MAX: usize = HOST_READ_MAX_BYTES as usize + 16;
        let base = mapping.as_ptr() as usize;
        let first = src.as_ptr() as usize;
        let start = first & !15;
        let end = (first + src.len() + 15) & !15;
        if !src.is_empty() && start >= base && end <= base + mapping.len() && end - start <= MAX {
            let mut words = [[0u8; 16]; MAX / 16];
            for (i, word) in words.iter_mut().take((end - start) / 16).enumerate() {
                let p = (start + 16 * i) as *const __m128i;
                // SAFETY: `p` is 16-byte aligned and its 16 bytes lie inside `mapping` (checked
                // above), memory the host has mapped; SSE2 is part of x86-64. Nothing writes
                // the mapping meanwhile (the caller waited for the GPU).
                let v = unsafe { _mm_load_si128(p) };
                *word = bytemuck::cast(v);
            }
            let bytes: &[u8] = bytemuck::cast_slice(&words);
            let skip = first - start;
            dst.copy_from_slice(&bytes[skip..][..dst.len()]);
            return;
        }
    }
    dst.copy_from_slice(src);
}

/// Buffers of at most this many bytes ([`Device::alloc`]: one-value results, counts) lie in
/// device-local memory the host maps, where the device has such memory (a PCIe BAR, or a CPU
/// device's memory): reading one ([`Device::read`], `DeviceVec::to_vec`) waits for the queue
/// and copies from the mapping, with no copy command into staging memory before the wait.
/// Larger buffers, and small ones where no such memory is left, stay in device memory only.
pub(super) const HOST_READ_MAX_BYTES: u64 = 256;

/// The memory small buffers take where the device has it ([`HOST_READ_MAX_BYTES`]).
const HOST_READABLE: vk::MemoryPropertyFlags = vk::MemoryPropertyFlags::from_raw(
    vk::MemoryPropertyFlags::DEVICE_LOCAL.as_raw()
        | vk::MemoryPropertyFlags::HOST_VISIBLE.as_raw()
        | vk::MemoryPropertyFlags::HOST_COHERENT.as_raw(),
);

impl VulkanDevice {
    /// [`Device::alloc`]: a buffer of xwarp's own, in device memory (small ones host-readable,
    /// [`HOST_READ_MAX_BYTES`]).
    pub(super) fn alloc_buffer(&self, bytes: u64) -> Result<RawBuffer> {
        if bytes == 0 {
            return Err(Error::invalid("bytes", 0, "1 or more"));
        }
        let mapped = (bytes <= HOST_READ_MAX_BYTES && self.core.mappable_device_memory)
            .then(|| {
                VkBuffer::new(
                    &self.core,
                    bytes,
                    MemoryLocation::CpuToGpu,
                    "xwarp buffer (host-readable)",
                )
            })
            .and_then(|b| b.ok())
            // The allocator falls back to host memory where device-local mappable memory is
            // full (and, under `XWARP_VULKAN_READS=staged`, every small buffer stays in device
            // memory as before): such a buffer is dropped again.
            .filter(|b| b.read_directly(bytes));
        let buf = match mapped {
            Some(b) => b,
            None => VkBuffer::new(&self.core, bytes, MemoryLocation::GpuOnly, "xwarp buffer")?,
        };
        Ok(RawBuffer::new(
            Arc::new(buf),
            bytes,
            self.id,
            &self.info.name,
        ))
    }

    /// [`Device::memory_usage`]: what the allocator holds.
    pub(super) fn allocator_usage(&self) -> Option<MemoryUsage> {
        let report = lock(&self.core.allocator).generate_report();
        Some(MemoryUsage {
            buffers: report.allocations.len() as u64,
            bytes: report.total_allocated_bytes,
            reserved_bytes: report.total_capacity_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_from_uncached, HOST_READ_MAX_BYTES};

    /// Every range of up to `HOST_READ_MAX_BYTES` + 40 bytes, at every offset and every
    /// alignment of the mapping's start, comes out as the bytes a plain copy gives, including
    /// ranges whose aligned cover reaches past the mapping (which take the plain copy).
    #[test]
    fn uncached_copies_give_every_byte_of_the_range() {
        let backing: Vec<u8> = (0..1024u32).map(|i| (i * 151 + 7) as u8).collect();
        let most = HOST_READ_MAX_BYTES as usize + 40;
        for lead in 0..17 {
            for len in [0, 1, 5, 40, 77, 300] {
                let mapping = &backing[lead..lead + len];
                for at in 0..=mapping.len() {
                    for n in 0..=(mapping.len() - at).min(most) {
                        let mut dst = vec![0xa5u8; n];
                        copy_from_uncached(mapping, at, &mut dst);
                        assert_eq!(
                            dst,
                            &mapping[at..at + n],
                            "lead {lead}, mapping {len}, at {at}, {n} bytes"
                        );
                    }
                }
            }
        }
    }
}
