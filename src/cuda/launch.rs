//! Launches: the parameter block, the kernel arguments, and the launch itself.

use super::probe::WARP;
use super::{cuda_err, CudaDevice};
use crate::device::{check_launch, Launch, LaunchLimits, MAX_PARAMS};
#[cfg(doc)]
use crate::device::{Device, DeviceInfo};
use crate::error::{Error, Result};
use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};

/// Largest block CUDA launches (every compute capability).
pub(super) const MAX_BLOCK: u32 = 1024;

/// What CUDA allows of a launch beyond the device's [`DeviceInfo`], for [`check_launch`].
const LIMITS: LaunchLimits = LaunchLimits {
    max_block: MAX_BLOCK,
    subgroup: WARP,
    // The 4 KiB of kernel parameters every architecture and driver accepts: one 8-byte
    // pointer per binding, then the parameter block.
    max_bindings: (4096 - MAX_PARAMS) / 8,
};

/// The launch parameter block, passed to kernels by value.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct ParamBlock([u8; MAX_PARAMS]);

// SAFETY: a `#[repr(C)]` array of plain bytes: no pointers, no padding, every bit pattern
// valid. The driver copies the kernel's declared parameter size from its address, which is
// at most MAX_PARAMS bytes (checked against cuFuncGetParamInfo where the driver has it).
unsafe impl DeviceRepr for ParamBlock {}

impl CudaDevice {
    /// [`Device::launch`]: checks the launch, builds the arguments (one device pointer per
    /// binding, then the parameter block) and queues the kernel on the stream.
    pub(super) fn record_launch(&self, l: &Launch<'_>) -> Result<()> {
        check_launch(&self.info, &LIMITS, l)?;
        let mut pointers: Vec<u64> = Vec::with_capacity(l.bindings.len());
        for b in l.bindings {
            pointers.push(self.device_ptr(b.buffer)? + b.offset);
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
        // `params` fits: check_launch held its length to MAX_PARAMS.
        if let Some(head) = block.0.get_mut(..l.params.len()) {
            head.copy_from_slice(l.params);
        }
        let cfg = LaunchConfig {
            grid_dim: (l.groups[0], l.groups[1], 1),
            block_dim: (l.block, 1, 1),
            shared_mem_bytes: l.kernel.dynamic_shared_bytes(),
        };
        let bound: Vec<&crate::device::RawBuffer> = l.bindings.iter().map(|b| b.buffer).collect();
        let _turn = self.keep_for_capture(&bound);
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
        self.mark(l.kernel.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_block_is_max_params_bytes() {
        assert_eq!(std::mem::size_of::<ParamBlock>(), MAX_PARAMS);
    }
}
