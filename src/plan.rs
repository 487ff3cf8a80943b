//! Grid planning shared by every algorithm, for every backend.

use crate::device::{DeviceInfo, RawBuffer, SubgroupFeatures};
use crate::element::ElemKind;
use crate::error::{Error, Result};
use std::sync::Arc;

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

/// The most elements one launch may index: element indices and counts fit in 32 bits.
pub const MAX_LAUNCH_ELEMS: usize = 1 << 30;

/// Fails with [`Error::InvalidParameter`] naming `name` when `n` elements of `elem_size` bytes
/// exceed what one launch may span on this device ([`MAX_LAUNCH_ELEMS`], and one binding).
/// For the algorithms that run a whole input in one launch (partition, unique, run-length
/// encoding, histogram, segmented reduce, reduce-by-key, top-k).
pub fn check_launch_len(
    info: &DeviceInfo,
    name: &'static str,
    n: usize,
    elem_size: usize,
) -> Result<()> {
    let limit = ((info.max_binding_bytes / elem_size as u64) as usize).min(MAX_LAUNCH_ELEMS);
    if n > limit {
        return Err(Error::invalid(
            name,
            n,
            format!(
                "at most {limit} elements of {elem_size} bytes on `{}` (one launch)",
                info.name
            ),
        ));
    }
    Ok(())
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

/// The launches covering `len` elements in chunks of at most `chunk`: `(start, count)` pairs.
pub fn chunks(chunk: usize, len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len)
        .step_by(chunk.max(1))
        .map(move |start| (start, chunk.min(len - start)))
}

/// One buffer for a call's temporaries instead of one each (one allocation, one free): the
/// byte offset of each of `sizes` in it, each a multiple of the device's binding alignment (and
/// of 8 bytes), and the buffer's length.
pub fn regions<const K: usize>(info: &DeviceInfo, sizes: [u64; K]) -> ([u64; K], u64) {
    let align = info.binding_alignment.max(8);
    let mut offsets = [0; K];
    let mut end = 0u64;
    for (offset, size) in offsets.iter_mut().zip(sizes) {
        *offset = end.div_ceil(align) * align;
        end = *offset + size.max(1);
    }
    (offsets, end)
}

/// Where to bind an output whose first written element is `first`: binding offsets must be
/// multiples of the device's alignment, so the binding starts at the aligned element at or
/// below `first` and the kernel gets the rest as an index. Returns `(base, index)`.
pub fn aligned_output(info: &DeviceInfo, elem_size: usize, first: usize) -> (usize, usize) {
    let align = (info.binding_alignment / elem_size as u64).max(1) as usize;
    let base = first - first % align;
    (base, first - base)
}

/// Whether two buffers are the same allocation.
fn same_buffer(a: &RawBuffer, b: &RawBuffer) -> bool {
    Arc::ptr_eq(&a.keep_alive(), &b.keep_alive())
}

/// Fails with [`Error::InvalidParameter`] naming the output when an output of operation `what`
/// shares its buffer with any other argument (an input or another output). Detected for buffers
/// of one allocation; an application's wrapped ranges are the application's to keep apart.
pub(crate) fn check_distinct(
    what: &str,
    outputs: &[(&'static str, &RawBuffer)],
    others: &[(&'static str, &RawBuffer)],
) -> Result<()> {
    for (i, &(name, out)) in outputs.iter().enumerate() {
        for &(other, buffer) in others.iter().chain(&outputs[..i]) {
            if same_buffer(out, buffer) {
                return Err(Error::invalid(
                    name,
                    format!("the buffer of {other}"),
                    format!("a buffer that no other argument of the {what} uses"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{BackendKind, DeviceType};

    #[test]
    fn chunks_cover_the_range_once_in_order() {
        for (chunk, len) in [
            (256, 0),
            (256, 1),
            (256, 256),
            (256, 257),
            (1024, 1_000_003),
            (7, 50),
        ] {
            let parts: Vec<_> = chunks(chunk, len).collect();
            let mut next = 0;
            for &(start, n) in &parts {
                assert_eq!(start, next, "chunk {chunk}, len {len}");
                assert!(n >= 1 && n <= chunk, "chunk {chunk}, len {len}: {n}");
                next += n;
            }
            assert_eq!(next, len);
            assert_eq!(parts.len(), len.div_ceil(chunk));
        }
    }

    #[test]
    fn aligned_output_binds_at_an_aligned_element() {
        let mut info = DeviceInfo {
            backend: BackendKind::Vulkan,
            index: 0,
            name: "test".into(),
            vendor_id: 0,
            device_type: DeviceType::Other,
            driver: String::new(),
            subgroup_size: 32,
            min_subgroup_size: 32,
            max_subgroup_size: 32,
            subgroup_size_pinned: false,
            subgroup_features: SubgroupFeatures::default(),
            max_binding_bytes: 1 << 30,
            binding_alignment: 16,
            max_groups: [65535; 3],
            shared_memory_bytes: 49152,
            max_shared_memory_bytes: 49152,
            unit_shared_memory_bytes: 0,
            compute_units: 0,
            max_block: 1024,
            int64: true,
            float64: true,
            int64_atomics: true,
            workgroup_coherence: false,
            subnormals_f32: crate::device::Subnormals::Guaranteed,
            subnormals_f64: crate::device::Subnormals::Guaranteed,
        };
        for (size, first, want) in [
            (4, 0, (0, 0)),
            (4, 5, (4, 1)),
            (8, 5, (4, 1)),
            (8, 7, (6, 1)),
            (4, 3, (0, 3)),
        ] {
            assert_eq!(
                aligned_output(&info, size, first),
                want,
                "size {size}, first {first}"
            );
        }
        info.binding_alignment = 4;
        assert_eq!(aligned_output(&info, 8, 7), (7, 0));
    }
}
