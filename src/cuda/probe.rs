//! Probing: whether the driver and NVRTC can be loaded, the devices and their facts, the
//! driver's version, and the architecture kernels are compiled for.

use super::{cuda_err, unavailable};
use crate::device::{BackendKind, DeviceInfo, DeviceType, SubgroupFeatures, Subnormals};
use crate::error::{Error, Result};
use cudarc::driver::{result as cu, sys};
use cudarc::nvrtc;
use std::ffi::c_int;

/// Threads per warp on every CUDA device.
pub(super) const WARP: u32 = 32;
/// Required alignment of a binding's byte offset.
pub(super) const BINDING_ALIGNMENT: u64 = 16;

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
pub(super) fn device_handle(ordinal: usize) -> Result<sys::CUdevice> {
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
pub(super) fn attribute(dev: sys::CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    // SAFETY: `dev` came from cuDeviceGet after cuInit, as cuDeviceGetAttribute requires; the
    // call writes one int into a local of cudarc's.
    unsafe { cu::device::get_attribute(dev, attr) }.map_err(cuda_err("cuDeviceGetAttribute"))
}

/// What [`probe`] learns about a device.
pub(super) struct Probe {
    pub(super) info: DeviceInfo,
    /// Compute capability as `major * 10 + minor`.
    pub(super) capability: u32,
    /// The driver's CUDA version (`13000` for 13.0).
    pub(super) driver_version: c_int,
}

/// Queries the facts about device `ordinal` (handle `dev`); needs no context.
pub(super) fn probe(ordinal: usize, dev: sys::CUdevice) -> Result<Probe> {
    use sys::CUdevice_attribute as A;
    let name = cu::device::get_name(dev).map_err(cuda_err("cuDeviceGetName"))?;
    let major = attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let integrated = attribute(dev, A::CU_DEVICE_ATTRIBUTE_INTEGRATED)?;
    let shared = attribute(dev, A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?;
    // What a kernel may opt into with dynamic shared memory (never below the static limit).
    // (A driver that cannot say keeps the static limit, and the unit's 0: unknown.)
    let opt_in = attribute(
        dev,
        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    )
    .map_or(shared, |b| b.max(shared));
    let units = attribute(dev, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let unit_shared = attribute(
        dev,
        A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
    )
    .unwrap_or(0);
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
        max_shared_memory_bytes: u32::try_from(opt_in).unwrap_or(0),
        unit_shared_memory_bytes: u32::try_from(unit_shared).unwrap_or(0),
        compute_units: u32::try_from(units).unwrap_or(0),
        max_block: super::launch::MAX_BLOCK,
        int64: true,
        float64: true,
        int64_atomics: true,
        workgroup_coherence: true,
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
pub(super) fn pick_arch(capability: u32) -> u32 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::CudaDevice;

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
