//! Unique (CUB's `DeviceSelect::Unique`): the first key of each run of equal consecutive keys,
//! in input order, and the number of runs, in one pass ([`crate::runs`]). Keys of every element
//! type are compared by their bits.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::unique::unique_host;
//! let dev = xwarp::backend::open_default()?;
//! let keys = [1u32, 1, 2, 2, 2, 1, 3];
//! assert_eq!(unique_host(&*dev, &keys)?, [1, 2, 1, 3]);
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec};
use crate::element::{ElemKind, Element};
use crate::error::Result;
use crate::plan;
pub use crate::runs::Tuning;
use crate::runs::{self, RunsCall};

/// Writes the first key of each run of `keys` to `keys_out[0 .. runs]` and `runs` to
/// `num_runs[0]`; `keys_out` holds at least `keys.len()` elements (those past `runs` are left as
/// they were), and every output is a buffer of its own.
pub fn unique<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &mut DeviceVec<K>,
    num_runs: &mut DeviceVec<u64>,
) -> Result<()> {
    unique_tuned(dev, keys, keys_out, num_runs, Tuning::default())
}

/// [`unique`] with explicit [`Tuning`].
pub fn unique_tuned<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &mut DeviceVec<K>,
    num_runs: &mut DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    runs::check_output("keys_out", keys.len(), keys_out.len())?;
    runs::check_common(dev, keys, num_runs)?;
    plan::check_distinct(
        "unique",
        &[("keys_out", keys_out.raw()), ("num_runs", num_runs.raw())],
        &[("keys", keys.raw())],
    )?;
    let n = keys.len();
    let bytes = K::KIND.size();
    runs::launch(
        dev,
        &RunsCall {
            kernel: "unique",
            elem: ElemKind::U32,
            key_bytes: bytes,
            value_bytes: 0,
            op: None,
            n,
            keys: keys.binding(0, n),
            values: keys.binding(0, n),
            keys_out: keys_out.binding(0, n),
            values_out: keys_out.binding(0, n),
            runs: num_runs.binding(0, 1),
            tuning,
        },
    )
}

/// [`unique`] on host keys: the first key of each run.
pub fn unique_host<K: Element>(dev: &dyn Device, keys: &[K]) -> Result<Vec<K>> {
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut out = DeviceVec::alloc(dev, keys.len())?;
    let mut count = DeviceVec::alloc(dev, 1)?;
    unique(dev, &input, &mut out, &mut count)?;
    let runs = count.to_vec(dev)?[0] as usize;
    let mut v = out.to_vec(dev)?;
    v.truncate(runs.min(keys.len()));
    Ok(v)
}
