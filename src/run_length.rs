//! Run-length encoding (CUB's `DeviceRunLengthEncode::Encode`): the key and the length of each
//! run of equal consecutive keys, and the number of runs, in one pass ([`crate::runs`]). Keys of
//! every element type are compared by their bits.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::run_length::encode_host;
//! let dev = xwarp::backend::open_default()?;
//! let (keys, lengths) = encode_host(&*dev, &[7i32, 7, 7, -1, 7, 7])?;
//! assert_eq!((keys, lengths), (vec![7, -1, 7], vec![3, 1, 2]));
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec};
use crate::element::{ElemKind, Element};
use crate::error::Result;
use crate::plan;
pub use crate::runs::Tuning;
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
    )?;
    runs::launch(
        dev,
        &RunsCall {
            kernel: "run_length",
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
