//! Segmented reduce (CUB's `DeviceSegmentedReduce`): one reduction per segment of the input,
//! segment `s` being elements `offsets[s] .. offsets[s + 1]`, for sum, product, min, max (and,
//! or, xor for integers).
//!
//! # Deterministic floats
//! Each segment's value is the device reduce of its elements alone, in the canonical order of
//! [`crate::reduce`] (README, "Deterministic floats": tiles of [`TILE`] from the segment's first
//! element, the 256-lane butterfly, tile totals reduced again while there is more than one), so
//! an empty segment gives the identity and every value has the bits
//! [`crate::reduce::device_reduce`] gives on the segment, on every backend.
//!
//! # Plan
//! The offsets are checked and planned once, on the host, when a [`Segments`] is made; then
//! they stay on the device and every call on them runs without a host round trip (and can be
//! recorded). Segments of at most [`SMALL`] elements take one invocation each (the tile's order
//! written out for so few elements); longer ones one workgroup per tile of [`TILE`] elements,
//! their tile totals reduced by one more launch per level (at most three in all). So many tiny
//! segments run as fast as one long one.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::reduce::ReduceOp;
//! use xwarp::segmented_reduce::segmented_reduce_host;
//! let dev = xwarp::backend::open_default()?;
//! let input = [1i32, 2, 3, 4, 5, 6];
//! let sums = segmented_reduce_host(&*dev, ReduceOp::Sum, &input, &[0, 2, 2, 6])?;
//! assert_eq!(sums, [3, 0, 18]); // the empty segment gives the identity
//! # Ok(()) }
//! ```
//!
//! # Limits
//! At most [`plan::MAX_LAUNCH_ELEMS`] elements, and no more than one binding spans. Every check
//! happens before anything is launched (the offsets' when the [`Segments`] is made), so a refused
//! call leaves its output untouched.

use crate::device::{Binding, Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::error::{Error, Result};
use crate::kernels::SegmentedReduceParams;
use crate::plan;
use crate::reduce::ReduceOp;
use crate::spec::reduce::Reduce;
pub use crate::spec::reduce::{ITEMS, TILE};

/// The longest segment one invocation reduces on its own (`SMALL` in the kernels).
pub const SMALL: usize = 32;
/// Threads per workgroup.
const BLOCK: u32 = plan::BLOCK;

/// One launch of tiles: four words per tile (first element, end, destination, whether the
/// destination is the next level's totals), and how many totals it writes.
struct Level {
    items: DeviceVec<u32>,
    tiles: usize,
    totals: usize,
}

/// Checked offsets of segments of an input of a given length, with the launches that reduce
/// them, on one device. Reusable for any element type and operator.
pub struct Segments {
    n: usize,
    count: usize,
    offsets: DeviceVec<u32>,
    small: Option<(DeviceVec<u32>, usize)>,
    levels: Vec<Level>,
}

impl std::fmt::Debug for Segments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segments")
            .field("n", &self.n)
            .field("segments", &self.count)
            .field("small", &self.small.as_ref().map_or(0, |s| s.1))
            .field("levels", &self.levels.len())
            .finish()
    }
}

/// Fails unless `offsets` is non-empty, non-decreasing and at most `n`.
fn check_offsets(offsets: &[u32], n: usize) -> Result<()> {
    if offsets.is_empty() {
        return Err(Error::invalid(
            "offsets",
            "no offsets",
            "at least one offset (segments: offsets.len() - 1)",
        ));
    }
    if n > plan::MAX_LAUNCH_ELEMS {
        return Err(Error::invalid(
            "input.len()",
            n,
            format!("at most {}", plan::MAX_LAUNCH_ELEMS),
        ));
    }
    let mut prev = 0u32;
    for (i, &o) in offsets.iter().enumerate() {
        if o as usize > n {
            return Err(Error::invalid(
                "offsets",
                format!("offsets[{i}] = {o}"),
                format!("0..={n} (at most input.len())"),
            ));
        }
        if i > 0 && o < prev {
            return Err(Error::invalid(
                "offsets",
                format!("offsets[{i}] = {o} below offsets[{}] = {prev}", i - 1),
                format!("{prev}..={n} (non-decreasing, at most input.len())"),
            ));
        }
        prev = o;
    }
    Ok(())
}

impl Segments {
    /// Checks `offsets` (non-empty, non-decreasing, each at most `n`) for an input of `n`
    /// elements, plans the launches and puts both on `dev`. Segment `s` is elements
    /// `offsets[s] .. offsets[s + 1]`; elements before `offsets[0]` and after the last offset
    /// belong to none.
    pub fn new(dev: &dyn Device, offsets: &[u32], n: usize) -> Result<Self> {
        check_offsets(offsets, n)?;
        let count = offsets.len() - 1;
        let mut small = Vec::new();
        // (segment, first element, length) of the segments (later: their totals) still to
        // reduce, level by level.
        let mut todo = Vec::new();
        for (s, w) in offsets.windows(2).enumerate() {
            let len = (w[1] - w[0]) as usize;
            if len <= SMALL {
                small.push(s as u32);
            } else {
                todo.push((s, w[0] as usize, len));
            }
        }
        let mut levels = Vec::new();
        while !todo.is_empty() {
            let mut items = Vec::new();
            let mut next = Vec::new();
            let mut totals = 0;
            for (s, first, len) in todo {
                let tiles = len.div_ceil(TILE);
                if tiles == 1 {
                    items.extend([first as u32, (first + len) as u32, s as u32, 0]);
                    continue;
                }
                for t in 0..tiles {
                    let start = first + t * TILE;
                    let end = (start + TILE).min(first + len);
                    items.extend([start as u32, end as u32, (totals + t) as u32, 1]);
                }
                next.push((s, totals, tiles));
                totals += tiles;
            }
            levels.push(Level {
                tiles: items.len() / 4,
                items: DeviceVec::from_slice(dev, &items)?,
                totals,
            });
            todo = next;
        }
        let small = if small.is_empty() {
            None
        } else {
            Some((DeviceVec::from_slice(dev, &small)?, small.len()))
        };
        Ok(Segments {
            n,
            count,
            offsets: DeviceVec::from_slice(dev, offsets)?,
            small,
            levels,
        })
    }

    /// The number of segments.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no segments.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The input length the offsets are for.
    pub fn input_len(&self) -> usize {
        self.n
    }
}

/// Reduces each segment of `input` by `op` into `output[s]` (one element per segment; an empty
/// segment gets the identity). `input` has the length `segments` was made for, and `output` is
/// a buffer of its own.
pub fn segmented_reduce<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &DeviceVec<T>,
    segments: &Segments,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    crate::reduce::check_op::<T>(op)?;
    for (name, expected, actual) in [
        ("input", segments.n, input.len()),
        ("output", segments.count, output.len()),
    ] {
        if expected != actual {
            return Err(Error::LengthMismatch {
                name,
                expected: expected as u64,
                actual: actual as u64,
            });
        }
    }
    plan::check_distinct(
        "segmented reduce",
        &[("output", output.raw())],
        &[("input", input.raw())],
    )?;
    let info = dev.info();
    plan::check_launch_len(info, "input.len()", input.len(), T::KIND.size())?;
    plan::require(
        info,
        T::KIND,
        SubgroupFeatures::BASIC | SubgroupFeatures::SHUFFLE,
    )?;
    // Every level's totals, allocated before anything is launched.
    let totals: Vec<Option<DeviceVec<T>>> = segments
        .levels
        .iter()
        .map(|l| {
            (l.totals > 0)
                .then(|| DeviceVec::<T>::alloc(dev, l.totals))
                .transpose()
        })
        .collect::<Result<_>>()?;
    let out = output.binding(0, segments.count);
    let offsets = segments.offsets.binding(0, segments.offsets.len());
    let run = |step: u32, groups: usize, items: usize, bindings: [Binding<'_>; 5]| {
        let mut consts = vec![("OP", op.code()), ("ITEMS", ITEMS), ("STEP", step)];
        // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs).
        if info.backend == crate::BackendKind::Cuda {
            consts.push(("BLOCK", BLOCK));
        }
        let params = SegmentedReduceParams {
            items: items as u32,
            ..Default::default()
        };
        dev.launch(&Launch {
            kernel: Kernel {
                name: "segmented_reduce",
                elem: T::KIND,
                consts: &consts,
            },
            block: BLOCK,
            groups: plan::grid(info, groups as u64)?,
            bindings: &bindings,
            params: bytemuck::bytes_of(&params),
        })
    };
    if let Some((list, len)) = &segments.small {
        let groups = len.div_ceil(BLOCK as usize);
        run(
            0,
            groups,
            *len,
            [whole(input), out, out, list.binding(0, *len), offsets],
        )?;
    }
    for (k, level) in segments.levels.iter().enumerate() {
        let src = if k == 0 {
            whole(input)
        } else {
            totals[k - 1].as_ref().map(whole::<T>).ok_or_else(|| {
                Error::invalid(
                    "segments",
                    "a level without totals",
                    "a plan from Segments::new",
                )
            })?
        };
        let dst_totals = totals[k].as_ref().map_or(out, whole::<T>);
        let items = level.items.binding(0, level.items.len());
        run(
            1,
            level.tiles,
            level.tiles,
            [src, out, dst_totals, items, offsets],
        )?;
    }
    Ok(())
}

/// A binding of all of `v`.
fn whole<T: crate::Element>(v: &DeviceVec<T>) -> Binding<'_> {
    v.binding(0, v.len())
}

/// [`segmented_reduce`] of host data: one value per segment `offsets[s] .. offsets[s + 1]`.
pub fn segmented_reduce_host<T: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    input: &[T],
    offsets: &[u32],
) -> Result<Vec<T>> {
    crate::reduce::check_op::<T>(op)?;
    let segments = Segments::new(dev, offsets, input.len())?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut out = DeviceVec::alloc(dev, segments.len())?;
    segmented_reduce(dev, op, &src, &segments, &mut out)?;
    out.to_vec(dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_checked_with_their_index() {
        assert!(check_offsets(&[0, 0, 5, 9], 9).is_ok());
        for (offsets, n, value) in [
            (&[][..], 3, "no offsets"),
            (&[0, 4][..], 3, "offsets[1] = 4"),
            (&[2, 1][..], 3, "offsets[1] = 1 below offsets[0] = 2"),
        ] {
            match check_offsets(offsets, n) {
                Err(Error::InvalidParameter { name, value: v, .. }) => {
                    assert_eq!((name, v.as_str()), ("offsets", value))
                }
                other => panic!("{offsets:?}: {other:?}"),
            }
        }
    }
}
