//! Grid planning shared by every algorithm, for every backend.

use crate::device::{DeviceInfo, SubgroupFeatures};
use crate::element::ElemKind;
use crate::error::{Error, Result};

/// Threads per workgroup for the element-wise kernels: a multiple of 32 and of every subgroup
/// size up to 128.
pub const BLOCK: u32 = 256;

/// Splits `groups` workgroups into a two-dimensional grid the device accepts.
pub fn grid(info: &DeviceInfo, groups: u64) -> Result<[u32; 2]> {
    let max_x = info.max_groups[0].max(1) as u64;
    let x = groups.clamp(1, max_x);
    let y = groups.div_ceil(x).max(1);
    if y > info.max_groups[1] as u64 {
        return Err(Error::invalid(
            "groups",
            groups,
            format!(
                "at most {} workgroups on `{}`",
                max_x * info.max_groups[1] as u64,
                info.name
            ),
        ));
    }
    Ok([x as u32, y as u32])
}

/// The largest number of elements of `elem_size` bytes one launch may span on this device: a
/// multiple of `granule`, within the device's binding range and 2^30 (so element indices fit
/// in 32 bits in every kernel).
pub fn chunk_elems(info: &DeviceInfo, elem_size: usize, granule: u64) -> u64 {
    let by_binding = info.max_binding_bytes / elem_size as u64;
    let limit = by_binding.min(1 << 30);
    (limit / granule * granule).max(granule)
}

/// Checks that the device can run kernels that compute on `elem` and use the subgroup
/// operation classes `ops`.
pub fn require(info: &DeviceInfo, elem: ElemKind, ops: SubgroupFeatures) -> Result<()> {
    let missing_type = match elem {
        ElemKind::I64 | ElemKind::U64 if !info.int64 => {
            Some("shaderInt64 (64-bit integer kernels)")
        }
        ElemKind::F64 if !info.float64 => Some("shaderFloat64 (f64 kernels)"),
        _ => None,
    };
    if let Some(missing) = missing_type {
        return Err(Error::MissingFeature {
            device: info.name.clone(),
            missing: missing.into(),
        });
    }
    if !info.subgroup_features.contains(ops) {
        return Err(Error::MissingFeature {
            device: info.name.clone(),
            missing: format!(
                "subgroup operations {} in compute shaders",
                info.subgroup_features.missing(ops)
            ),
        });
    }
    Ok(())
}
