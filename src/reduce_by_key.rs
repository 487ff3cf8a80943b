//! Reduce-by-key (CUB's `DeviceReduce::ReduceByKey`): for each run of equal consecutive keys,
//! its key and the reduction of its values (sum, product, min, max; and, or, xor for integers),
//! and the number of runs, in one pass ([`crate::runs`]). Keys of every element type are
//! compared by their bits; values of every element type are reduced.
//!
//! # Deterministic floats
//! A run's values are combined in one order that depends only on the positions of its elements
//! (README, "Deterministic floats"): the run is cut at indices that are multiples of
//! [`items`] (thread pieces) and of [`tile`] (tile pieces), for the key's and value's sizes;
//! each thread piece folds its values left to right from its first value, each tile piece folds
//! its thread pieces left to right, and the run folds its tile pieces left to right. No identity
//! enters, so a run of one value gives that value's bits. The result is bit-identical on CUDA,
//! on Vulkan at every subgroup size and in [`crate::cpu::runs::reduce_by_key`].
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::reduce::ReduceOp;
//! use xwarp::reduce_by_key::reduce_by_key_host;
//! let dev = xwarp::backend::open_default()?;
//! let keys = [1u32, 1, 2, 2, 2, 1];
//! let values = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
//! let (k, v) = reduce_by_key_host(&*dev, ReduceOp::Sum, &keys, &values)?;
//! assert_eq!((k, v), (vec![1, 2, 1], vec![3.0, 12.0, 6.0]));
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec, SubgroupFeatures};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::plan;
use crate::reduce::ReduceOp;
use crate::runs::{self, RunsCall};
pub use crate::runs::{items, tile, Tuning};
use crate::spec::reduce::Reduce;

/// Reduces the values of each run of equal consecutive `keys` by `op`: `keys_out[r]` gets the
/// run's key and `values_out[r]` the reduction of its values, for runs `r < runs`, and
/// `num_runs[0]` gets `runs`. `values` has one value per key; both outputs hold at least
/// `keys.len()` elements (those past `runs` are left as they were), and every output is a
/// buffer of its own.
#[allow(clippy::too_many_arguments)]
pub fn reduce_by_key<K: Element, V: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    keys: &DeviceVec<K>,
    values: &DeviceVec<V>,
    keys_out: &mut DeviceVec<K>,
    values_out: &mut DeviceVec<V>,
    num_runs: &mut DeviceVec<u64>,
) -> Result<()> {
    reduce_by_key_tuned(
        dev,
        op,
        keys,
        values,
        keys_out,
        values_out,
        num_runs,
        Tuning::default(),
    )
}

/// [`reduce_by_key`] with explicit [`Tuning`].
#[allow(clippy::too_many_arguments)]
pub fn reduce_by_key_tuned<K: Element, V: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    keys: &DeviceVec<K>,
    values: &DeviceVec<V>,
    keys_out: &mut DeviceVec<K>,
    values_out: &mut DeviceVec<V>,
    num_runs: &mut DeviceVec<u64>,
    tuning: Tuning,
) -> Result<()> {
    let n = keys.len();
    crate::reduce::check_op::<V>(op)?;
    if values.len() != n {
        return Err(Error::LengthMismatch {
            name: "values",
            expected: n as u64,
            actual: values.len() as u64,
        });
    }
    runs::check_output("keys_out", n, keys_out.len())?;
    runs::check_output("values_out", n, values_out.len())?;
    runs::check_common(dev, keys, num_runs)?;
    plan::check_launch_len(dev.info(), "values.len()", n, V::KIND.size())?;
    plan::check_distinct(
        "reduce-by-key",
        &[
            ("keys_out", keys_out.raw()),
            ("values_out", values_out.raw()),
            ("num_runs", num_runs.raw()),
        ],
        &[("keys", keys.raw()), ("values", values.raw())],
    )?;
    plan::require(dev.info(), V::KIND, SubgroupFeatures::BASIC)?;
    runs::launch(
        dev,
        &RunsCall {
            kernel: crate::tuning::reduce_by_key_kernel(dev.info(), V::KIND.size()),
            epochs: crate::tuning::reduce_by_key_epochs(dev.info(), V::KIND.size())
                .then_some("reduce_by_key_e64"),
            elem: V::KIND,
            key_bytes: K::KIND.size(),
            value_bytes: V::KIND.size(),
            op: Some(op.code()),
            n,
            keys: keys.binding(0, n),
            values: values.binding(0, n),
            keys_out: keys_out.binding(0, n),
            values_out: values_out.binding(0, n),
            runs: num_runs.binding(0, 1),
            tuning,
        },
    )
}

/// [`reduce_by_key`] on host data: each run's key and reduced value.
pub fn reduce_by_key_host<K: Element, V: Reduce>(
    dev: &dyn Device,
    op: ReduceOp,
    keys: &[K],
    values: &[V],
) -> Result<(Vec<K>, Vec<V>)> {
    let k_in = DeviceVec::from_slice(dev, keys)?;
    let v_in = DeviceVec::from_slice(dev, values)?;
    let mut k_out = DeviceVec::alloc(dev, keys.len())?;
    let mut v_out = DeviceVec::alloc(dev, keys.len())?;
    let mut count = DeviceVec::alloc(dev, 1)?;
    reduce_by_key(dev, op, &k_in, &v_in, &mut k_out, &mut v_out, &mut count)?;
    let runs = (count.to_vec(dev)?[0] as usize).min(keys.len());
    let mut k = k_out.to_vec(dev)?;
    let mut v = v_out.to_vec(dev)?;
    k.truncate(runs);
    v.truncate(runs);
    Ok((k, v))
}
