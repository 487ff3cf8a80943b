//! Unique (CUB's `DeviceSelect::Unique`): the first key of each run of equal consecutive keys,
//! in input order, and the number of runs, in one pass. Keys of every element type are compared
//! by their bits: `+0.0` and `-0.0` are different keys, and a NaN equals only a NaN of the same
//! payload.
//!
//! The pass is the stable compaction's ([`crate::compact`]) with a predicate of its own, "differs
//! from the element before it": each subgroup ballots its steps, a lane taking its predecessor
//! from the lane below by one shuffle, and the tiles' offsets come from the compaction's decoupled
//! look-back. Keys are moved as 32- or 64-bit words, so no float passes through the device's
//! arithmetic. On a Vulkan device without `shaderInt64`, 64-bit keys take the runs kernel of
//! run-length encoding ([`crate::runs`]) instead, with the same result.
//!
//! # Limits
//! At most [`crate::plan::MAX_LAUNCH_ELEMS`] keys, and no more than one kernel binding spans.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::unique::unique_host;
//! let dev = xwarp::backend::open_default()?;
//! let keys = [1u32, 1, 2, 2, 2, 1, 3];
//! assert_eq!(unique_host(&*dev, &keys)?, [1, 2, 1, 3]);
//! # Ok(()) }
//! ```

/// Knobs that change speed, never results: the stable compaction's.
pub use crate::compact::Tuning;
use crate::device::{Device, DeviceVec};
use crate::element::{ElemKind, Element};
use crate::error::Result;
use crate::plan;
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
    check(dev, keys, keys_out, num_runs)?;
    let n = keys.len();
    let Some(words) = crate::compact::key_words(dev.info(), K::KIND.size()) else {
        let tuning = runs::Tuning {
            spin: tuning.spin,
            ..Default::default()
        };
        return unique_runs_kernel(dev, keys, keys_out, num_runs, tuning);
    };
    let (input, output) = (keys.raw(), keys_out.raw());
    crate::compact::heads(dev, words, n, input, output, None, num_runs, tuning)
}

/// The checks of every unique call, before anything runs.
fn check<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &DeviceVec<K>,
    num_runs: &DeviceVec<u64>,
) -> Result<()> {
    runs::check_output("keys_out", keys.len(), keys_out.len())?;
    runs::check_common(dev, keys, num_runs)?;
    plan::check_distinct(
        "unique",
        &[("keys_out", keys_out.raw()), ("num_runs", num_runs.raw())],
        &[("keys", keys.raw())],
    )
}

/// [`unique`] by the runs kernel of run-length encoding, which needs no 64-bit integers in
/// kernels: what 64-bit keys take on a device without `shaderInt64`, and what the tests
/// compare on every device.
#[doc(hidden)]
pub fn unique_runs_kernel<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    keys_out: &mut DeviceVec<K>,
    num_runs: &mut DeviceVec<u64>,
    tuning: runs::Tuning,
) -> Result<()> {
    check(dev, keys, keys_out, num_runs)?;
    let n = keys.len();
    let bytes = K::KIND.size();
    runs::launch(
        dev,
        &RunsCall {
            kernel: "unique",
            epochs: None,
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
