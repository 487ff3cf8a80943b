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
            | vk::BufferUsageFlags::TRANSFER_DST;
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
