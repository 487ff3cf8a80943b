//! Run-length encoding (CUB's `DeviceRunLengthEncode::Encode`): the key and the length of each
//! run of equal consecutive keys, and the number of runs, in one pass. Keys of every element
//! type are compared by their bits.
//!
//! The pass is unique's ([`crate::unique`]: the stable compaction with the predicate "differs
//! from the key before it"), which also stages each head's run length: the distance to the next
//! head of its tile, found from the same ballots (the lowest passing lane above it, else the
//! first head of a later step or subgroup). On CUDA, and on Vulkan devices with 64-bit buffer
//! atomics, to 2048 tiles (2^23 4-byte keys), each tile also publishes the place of its last head (or of the last one before it) beside its
//! count, so the look-back gives a tile the head before its first, which then closes that run,
//! and the last tile closes the input's: one launch, no clearing one. Elsewhere a tile's last
//! head holds its position, and the pass's last tile (to 256 tiles) or one small launch
//! afterwards turns it into a length from the position of the next tile's first head (two
//! words a tile) or from the input's end. Keys are moved as 32- or 64-bit words.
//! Inputs longer than one launch of the compaction (more than 2^29 keys, or more than one
//! kernel binding holds, or than [`Tuning::max_binding_elems`]), and 64-bit keys on a device without `shaderInt64`, take the runs
//! kernel ([`crate::runs`]) instead, with the same result.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::run_length::encode_host;
//! let dev = xwarp::backend::open_default()?;
//! let (keys, lengths) = encode_host(&*dev, &[7i32, 7, 7, -1, 7, 7])?;
//! assert_eq!((keys, lengths), (vec![7, -1, 7], vec![3, 1, 2]));
//! # Ok(()) }
//! ```

/// Knobs that change speed, never results: the stable compaction's.
pub use crate::compact::Tuning;
use crate::device::{Device, DeviceVec};
use crate::element::{ElemKind, Element};
use crate::error::Result;
use crate::plan;
use crate::runs::{self, RunsCall};

/// Writes each run's key to `keys_out[r]` and its length to `lengths[r]` for runs
/// `r < runs`, and `runs` to `num_runs[0]`; both outputs hold at least `keys.len()` elements
/// (those past `runs` are left as they were), and every output is a buffer of its own.
pub fn encode<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &mut DeviceVec<K>,
    lengths: &mut DeviceVec<u32>,
    num_runs: &mut DeviceVec<u64>,
) -> Result<()> {
    encode_tuned(dev, keys, keys_out, lengths, num_runs, Tuning::default())
}

/// [`encode`] with explicit [`Tuning`].
pub fn encode_tuned<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &mut DeviceVec<K>,
    lengths: &mut DeviceVec<u32>,
    num_runs: &mut DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    check(dev, keys, keys_out, lengths, num_runs)?;
    let n = keys.len();
    let info = dev.info();
    match crate::compact::key_words(info, K::KIND.size()) {
        Some(words) if crate::compact::lengths_fit(info, K::KIND.size(), n, tuning) => {
            let (input, output, lengths) = (keys.raw(), keys_out.raw(), Some(lengths.raw()));
            crate::compact::heads(dev, words, n, input, output, lengths, num_runs, tuning)
        }
        _ => {
            let tuning = runs::Tuning {
                spin: tuning.spin,
                ..Default::default()
            };
            encode_runs_kernel(dev, keys, keys_out, lengths, num_runs, tuning)
        }
    }
}

/// The checks of every encoding, before anything runs.
fn check<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &DeviceVec<K>,
    lengths: &DeviceVec<u32>,
    num_runs: &DeviceVec<u64>,
) -> Result<()> {
    let n = keys.len();
    runs::check_output("keys_out", n, keys_out.len())?;
    runs::check_output("lengths", n, lengths.len())?;
    runs::check_common(dev, keys, num_runs)?;
    plan::check_distinct(
        "run-length encoding",
        &[
            ("keys_out", keys_out.raw()),
            ("lengths", lengths.raw()),
            ("num_runs", num_runs.raw()),
        ],
        &[("keys", keys.raw())],
    )
}

/// [`encode`] by the runs kernel, which needs no 64-bit integers in kernels and takes any
/// input one launch may span: what longer inputs and 64-bit keys on a device without
/// `shaderInt64` take, and what the tests compare on every device.
#[doc(hidden)]
pub fn encode_runs_kernel<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &mut DeviceVec<K>,
    lengths: &mut DeviceVec<u32>,
    num_runs: &mut DeviceVec<u64>,
    tuning: runs::Tuning,
) -> Result<()> {
    check(dev, keys, keys_out, lengths, num_runs)?;
    let n = keys.len();
    runs::launch(
        dev,
        &RunsCall {
            kernel: "run_length",
            epochs: None,
            elem: ElemKind::U32,
            key_bytes: K::KIND.size(),
            value_bytes: 0,
            op: None,
            n,
            keys: keys.binding(0, n),
            values: keys.binding(0, n),
            keys_out: keys_out.binding(0, n),
            values_out: lengths.binding(0, n),
            runs: num_runs.binding(0, 1),
            tuning,
        },
    )
}

/// [`encode`] on host keys: each run's key and length.
pub fn encode_host<K: Element>(dev: &dyn Device, keys: &[K]) -> Result<(Vec<K>, Vec<u32>)> {
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut keys_out = DeviceVec::alloc(dev, keys.len())?;
    let mut lengths = DeviceVec::alloc(dev, keys.len())?;
    let mut count = DeviceVec::alloc(dev, 1)?;
    encode(dev, &input, &mut keys_out, &mut lengths, &mut count)?;
    let runs = (count.to_vec(dev)?[0] as usize).min(keys.len());
    let mut k = keys_out.to_vec(dev)?;
    let mut l = lengths.to_vec(dev)?;
    k.truncate(runs);
    l.truncate(runs);
    Ok((k, l))
}
