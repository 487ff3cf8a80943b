//! The memory roofline: a copy and a read-only pass that move data as fast as the device's
//! memory allows. `xwarp bench` measures every algorithm against them.
//!
//! Both kernels treat the data as 32-bit words, whatever the element type, and move them in
//! 16-byte vectors: workgroup (block) `g` of [`BLOCK`] threads owns the *tile* of
//! [`TILE_WORDS`] words (16 KiB) that starts at word `g * TILE_WORDS`; each thread issues four
//! independent 16-byte loads before any store. The words after the input's last whole vector
//! (at most three) are moved one each.
//!
//! - [`copy`] writes `output = input`.
//! - [`read`] reads every word once and writes one word per tile: `folds[g]` is the XOR of the
//!   words `g * TILE_WORDS .. (g + 1) * TILE_WORDS` of the input (missing words past the end
//!   count as zero), so the write traffic is 1/4096 of the read traffic and no load can be
//!   dropped. [`read_folds`] gives the number of folds; [`crate::cpu::roofline::read`] gives
//!   the same folds on the CPU.
//! - [`digest`] reads every word once and writes two words: a position-dependent digest of
//!   the input, [`crate::cpu::roofline::digest`]'s on the CPU, to compare large results
//!   without downloading them.
//!
//! Inputs longer than one binding run in several launches of whole tiles: the tiles, and so
//! the folds, do not depend on the device.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::roofline::{self, read_folds};
//! use xwarp::{DeviceVec, ElemKind};
//! let dev = xwarp::backend::open_default()?;
//! let data: Vec<u64> = (0..1_000_003).collect();
//! let input = DeviceVec::from_slice(&*dev, &data)?;
//! let mut copy = DeviceVec::<u64>::alloc(&*dev, data.len())?;
//! roofline::copy(&*dev, &input, &mut copy)?;
//! let mut folds = DeviceVec::<u32>::alloc(&*dev, read_folds(data.len(), ElemKind::U64))?;
//! roofline::read(&*dev, &input, &mut folds)?;
//! assert_eq!(folds.to_vec(&*dev)?, xwarp::cpu::roofline::read(&data));
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use crate::kernels::RooflineParams;
use crate::plan;
pub use crate::spec::roofline::{BLOCK, TILE_WORDS};

const TILE_BYTES: usize = TILE_WORDS * 4;

/// Where a launch writes: the copy's output, the folds of a read, or a digest's two sums.
#[derive(Clone, Copy)]
enum Dst<'a, T: Element> {
    Copy(&'a DeviceVec<T>),
    Read(&'a DeviceVec<u32>),
    Digest(&'a DeviceVec<u32>),
}

/// The number of folds [`read`] writes for `n_elems` elements of type `elem`: one per tile of
/// [`TILE_WORDS`] words.
pub fn read_folds(n_elems: usize, elem: ElemKind) -> usize {
    n_elems.div_ceil(TILE_BYTES / elem.size())
}

/// Copies `input` into `output` (same length) at the speed of the device's memory.
pub fn copy<T: Element>(
    dev: &dyn Device,
    input: &DeviceVec<T>,
    output: &mut DeviceVec<T>,
) -> Result<()> {
    check_input(input)?;
    check_len("output", input.len(), output.len())?;
    run(dev, input, Dst::Copy(output))
}

/// Reads every word of `input` once, writing one XOR fold per tile into `folds`
/// (`folds.len()` must be [`read_folds`]`(input.len(), T::KIND)`).
pub fn read<T: Element>(
    dev: &dyn Device,
    input: &DeviceVec<T>,
    folds: &mut DeviceVec<u32>,
) -> Result<()> {
    check_input(input)?;
    check_len("folds", read_folds(input.len(), T::KIND), folds.len())?;
    run(dev, input, Dst::Read(folds))
}

/// Reads every word of `input` once and writes its digest into `digest` (two words): the sums,
/// wrapping, of [`crate::cpu::roofline::digest_hash`] of every word and its index in the
/// input. Equal to [`crate::cpu::roofline::digest`] of the same data, whatever the device: a
/// check that two buffers (on two devices, or a device and the host) hold the same bits
/// without moving them. A changed word always changes both sums; several changes leave both
/// unchanged with a chance of about 2^-64.
pub fn digest<T: Element>(
    dev: &dyn Device,
    input: &DeviceVec<T>,
    digest: &mut DeviceVec<u32>,
) -> Result<()> {
    check_input(input)?;
    check_len("digest", 2, digest.len())?;
    if input.len() as u64 * T::KIND.size() as u64 / 4 > u32::MAX as u64 {
        return Err(Error::invalid(
            "input.len()",
            input.len(),
            format!(
                "at most {} elements of {} (word indices are 32-bit)",
                u32::MAX as u64 * 4 / T::KIND.size() as u64,
                T::KIND
            ),
        ));
    }
    digest.fill(dev, 0)?;
    run(dev, input, Dst::Digest(digest))
}

fn check_input<T: Element>(input: &DeviceVec<T>) -> Result<()> {
    if input.is_empty() {
        return Err(Error::EmptyInput { name: "input" });
    }
    Ok(())
}

fn check_len(name: &'static str, expected: usize, actual: usize) -> Result<()> {
    if expected != actual {
        return Err(Error::LengthMismatch {
            name,
            expected: expected as u64,
            actual: actual as u64,
        });
    }
    Ok(())
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Launches the kernel over `input` in chunks of whole tiles whose byte offsets are multiples
/// of both the tile and the device's binding alignment, so every binding starts 16-byte
/// aligned.
fn run<T: Element>(dev: &dyn Device, input: &DeviceVec<T>, dst: Dst<'_, T>) -> Result<()> {
    let info = dev.info();
    let (mode, ops) = match dst {
        Dst::Copy(_) => (0, SubgroupFeatures::BASIC),
        Dst::Read(_) => (1, SubgroupFeatures::BASIC | SubgroupFeatures::ARITHMETIC),
        Dst::Digest(_) => (2, SubgroupFeatures::BASIC | SubgroupFeatures::ARITHMETIC),
    };
    plan::require(info, ElemKind::U32, ops)?;
    let size = T::KIND.size();
    let tile_elems = TILE_BYTES / size;
    let align_elems = (info.binding_alignment as usize / size).max(1);
    let granule = tile_elems / gcd(tile_elems, align_elems) * align_elems;
    let chunk = plan::chunk_elems(info, size, granule as u64) as usize;
    let consts = [("MODE", mode)];
    let kernel = Kernel {
        name: "roofline",
        elem: ElemKind::U32,
        consts: &consts,
    };
    for (start, n) in plan::chunks(chunk, input.len()) {
        let words = n * size / 4;
        let tiles = words.div_ceil(TILE_WORDS);
        let (out, fold0) = match dst {
            Dst::Copy(output) => (output.binding(start, n), 0),
            Dst::Read(folds) => {
                let (base, index) = plan::aligned_output(info, 4, start / tile_elems);
                (folds.binding(base, index + tiles), index)
            }
            Dst::Digest(sums) => (sums.binding(0, 2), 0),
        };
        let params = RooflineParams {
            n: words as u32,
            fold0: fold0 as u32,
            word0: (start * size / 4) as u32,
            pad1: 0,
        };
        dev.launch(&Launch {
            kernel,
            block: BLOCK,
            groups: plan::grid(info, tiles as u64)?,
            bindings: &[input.binding(start, n), out],
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}
const _: () = assert!(BLOCK == plan::BLOCK);
