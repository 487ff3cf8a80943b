//! Top-k: the `k` largest ([`SortOrder::Descending`]) or smallest ([`SortOrder::Ascending`])
//! keys of `n`, with their values or input indices, sorted in the radix sort's order (integers
//! numerically, floats in IEEE totalOrder: `-NaN < -∞ < … < -0.0 < +0.0 < … < +∞ < +NaN`),
//! for keys of every element type, `k` from 1 to `n`. Deterministic: of keys equal across the
//! k-th place the lower input indices are taken, and equal keys come out by input index (CUB's
//! `DeviceTopK` returns an unspecified order and may differ between runs on ties).
//!
//! By radix selection rather than a full sort, on the sort's mapped keys
//! ([`crate::sort`]): one histogram pass per 8-bit digit, most significant first, each counting
//! only the keys that agree with the threshold found so far (in eight copies of each bin, so
//! skewed keys do not serialize on one counter), finds the k-th key `T`. The last workgroup of
//! each histogram launch chooses the digit, so a pass is one launch. Each workgroup also counts
//! its keys below the threshold pass by pass, from which the last pass's last workgroup scans
//! each workgroup's keys below and equal to `T`; a scatter pass then places the candidates —
//! every key below `T` and the first keys equal to `T` — in input order, and the
//! [`crate::sort::Sorter`] sorts the `k` candidates, stably.
//!
//! From [`FILTER_MIN_BYTES`] of keys on, the first (or, where its keys do not fit, the second)
//! digit's bucket is filtered out: a scatter pass (its counts scanned by the histogram's last
//! workgroup in the same way) places the keys below the bucket among the candidates and copies
//! the bucket's keys, in input order with what they carry, into a buffer of a sixteenth of the
//! keys; the later digits' histograms and the last scatter then read only that buffer. Spread
//! keys are so read twice instead of `key bits / 8 + 1` times; keys whose first two digits'
//! buckets are both too large (few distinct keys, narrow ranges) are read every pass as without
//! the filter. The sort moves only `k` keys.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::sort::SortOrder;
//! use xwarp::top_k::top_k_host;
//! let dev = xwarp::backend::open_default()?;
//! let keys = [5u32, 1, 9, 7, 9, 3];
//! assert_eq!(top_k_host(&*dev, &keys, 3, SortOrder::Descending)?, [9, 9, 7]);
//! # Ok(()) }
//! ```
//!
//! # Limits
//! At most [`plan::MAX_LAUNCH_ELEMS`] keys, and no more than one binding spans. Temporary
//! memory: the filter's buffer (a sixteenth of the keys, with their values or indices), and
//! 515 words per histogram workgroup (one per 4096 keys, at most 1024): at most 2.1 MB. Every
//! check happens before anything is launched, so a refused call leaves its outputs untouched.

use crate::device::{BackendKind, Binding, Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use crate::kernels::TopKParams;
use crate::plan;
use crate::sort::{all_bits, key_kind, SortIndex, SortOrder, Sorter};

/// Threads per workgroup.
const BLOCK: u32 = plan::BLOCK;
/// Bins of one radix pass.
const RADIX: usize = 256;
/// Words of the state before its histogram (`S_HIST` in the kernels).
const STATE_HEAD: usize = 16;
/// Most workgroups of a histogram pass. Each adds its nonzero bins to the pass's histogram at
/// its end, one atomic each, so at 1024 workgroups those atomics met 1024 deep on each bin:
/// 512 took 0.83–0.86× the time at 2^22 keys, 0.90–0.96× at 2^23 and 0.90–0.98× at 2^24 on
/// an H200, both backends (CUDA `u64` keys at 2^24 1.02×; NOTES.md version 37).
const MAX_GROUPS: usize = 512;
/// Loads in flight per invocation in a histogram pass (`BATCH` in the kernels).
const BATCH: usize = 16;
/// The fewest bytes of keys for which the selection may filter its candidates into a buffer
/// (2^23 32-bit or 2^22 64-bit keys): below, the filter cost about what it saved (NOTES.md,
/// version 23, when it took three launches), and the keys are read once per digit and once
/// more.
pub const FILTER_MIN_BYTES: usize = 1 << 25;
/// The digits (most significant first) after which a filter may run.
const FILTER_DIGITS: u32 = 2;

/// The candidates' buffer of `n` keys: a sixteenth of them, at least one tile.
fn filter_cap(n: usize) -> usize {
    n.div_ceil(16)
        .max(BLOCK as usize * items(8) as usize)
        .min(n)
}

/// Keys per invocation of a scatter tile: 16 of 4 bytes, 8 of 8 bytes.
pub const fn items(key_bytes: usize) -> u32 {
    if key_bytes > 4 {
        8
    } else {
        16
    }
}

/// The steps of the plan: `OP` in `shaders/top_k.comp` and `cuda/top_k.cu`.
#[derive(Clone, Copy)]
enum Step {
    /// A digit's histogram; its last workgroup selects the digit and, before a filter's or the
    /// last scatter, scans the workgroups' counts of the keys it places.
    Hist = 0,
    Scatter = 1,
    Clear = 2,
}

/// What travels with the keys into the candidates.
#[derive(Clone, Copy)]
enum Carried<'a> {
    Nothing,
    Values(Binding<'a>, u32),
    Indices(u32),
}

/// The `k` smallest (`Ascending`) or largest (`Descending`) keys of `keys`, sorted, into
/// `keys_out` (`k` elements, a buffer of its own).
pub fn top_k<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    k: usize,
    order: SortOrder,
    keys_out: &mut DeviceVec<K>,
) -> Result<()> {
    check(
        dev,
        keys,
        k,
        &[("keys_out", keys_out.len(), keys_out.raw())],
        &[],
    )?;
    let cand_keys = DeviceVec::<K>::alloc(dev, k)?;
    let cand_values = DeviceVec::<u32>::alloc(dev, 1)?;
    select(
        dev,
        keys,
        k,
        order,
        &cand_keys,
        &cand_values,
        Carried::Nothing,
    )?;
    Sorter::<K>::new(dev, k)?.sort_keys(dev, &cand_keys, keys_out, order, all_bits::<K>())
}

/// [`top_k`] with each key's value: `values` has one value per key, and `values_out` gets the
/// values of the keys in `keys_out` (`k` elements each, buffers of their own).
#[allow(clippy::too_many_arguments)]
pub fn top_k_pairs<K: Element, V: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    values: &DeviceVec<V>,
    k: usize,
    order: SortOrder,
    keys_out: &mut DeviceVec<K>,
    values_out: &mut DeviceVec<V>,
) -> Result<()> {
    if values.len() != keys.len() {
        return Err(Error::LengthMismatch {
            name: "values",
            expected: keys.len() as u64,
            actual: values.len() as u64,
        });
    }
    check(
        dev,
        keys,
        k,
        &[
            ("keys_out", keys_out.len(), keys_out.raw()),
            ("values_out", values_out.len(), values_out.raw()),
        ],
        &[("values", values.raw())],
    )?;
    plan::check_launch_len(dev.info(), "values.len()", values.len(), V::KIND.size())?;
    let cand_keys = DeviceVec::<K>::alloc(dev, k)?;
    let cand_values = DeviceVec::<V>::alloc(dev, k)?;
    let words = (V::KIND.size() / 4) as u32;
    let carried = Carried::Values(values.binding(0, values.len()), words);
    select(dev, keys, k, order, &cand_keys, &cand_values, carried)?;
    Sorter::<K>::for_pairs::<V>(dev, k)?.sort_pairs(
        dev,
        &cand_keys,
        keys_out,
        &cand_values,
        values_out,
        order,
        all_bits::<K>(),
    )
}

/// [`top_k`] with each key's input index (`u32` or `u64`) in `indices_out`.
pub fn top_k_indices<K: Element, I: SortIndex>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    k: usize,
    order: SortOrder,
    keys_out: &mut DeviceVec<K>,
    indices_out: &mut DeviceVec<I>,
) -> Result<()> {
    check(
        dev,
        keys,
        k,
        &[
            ("keys_out", keys_out.len(), keys_out.raw()),
            ("indices_out", indices_out.len(), indices_out.raw()),
        ],
        &[],
    )?;
    let cand_keys = DeviceVec::<K>::alloc(dev, k)?;
    let cand_indices = DeviceVec::<I>::alloc(dev, k)?;
    let words = (I::KIND.size() / 4) as u32;
    select(
        dev,
        keys,
        k,
        order,
        &cand_keys,
        &cand_indices,
        Carried::Indices(words),
    )?;
    Sorter::<K>::for_pairs::<I>(dev, k)?.sort_pairs(
        dev,
        &cand_keys,
        keys_out,
        &cand_indices,
        indices_out,
        order,
        all_bits::<K>(),
    )
}

/// [`top_k`] of host keys.
pub fn top_k_host<K: Element>(
    dev: &dyn Device,
    keys: &[K],
    k: usize,
    order: SortOrder,
) -> Result<Vec<K>> {
    check_k(keys.len(), k)?;
    let input = DeviceVec::from_slice(dev, keys)?;
    let mut out = DeviceVec::alloc(dev, k)?;
    top_k(dev, &input, k, order, &mut out)?;
    out.to_vec(dev)
}

fn check_k(n: usize, k: usize) -> Result<()> {
    if k == 0 || k > n {
        return Err(Error::invalid(
            "k",
            k,
            format!("1..={n} (at least one key, at most keys.len() = {n})"),
        ));
    }
    Ok(())
}

/// The checks of every form: `k`, each output's length (`k`) and buffer, the length limit and
/// the device.
fn check<K: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    k: usize,
    outputs: &[(&'static str, usize, &crate::device::RawBuffer)],
    inputs: &[(&'static str, &crate::device::RawBuffer)],
) -> Result<()> {
    let n = keys.len();
    check_k(n, k)?;
    for &(name, len, _) in outputs {
        if len != k {
            return Err(Error::LengthMismatch {
                name,
                expected: k as u64,
                actual: len as u64,
            });
        }
    }
    let outs: Vec<(&'static str, &crate::device::RawBuffer)> =
        outputs.iter().map(|&(name, _, raw)| (name, raw)).collect();
    let mut ins = vec![("keys", keys.raw())];
    ins.extend_from_slice(inputs);
    plan::check_distinct("top-k", &outs, &ins)?;
    let info = dev.info();
    plan::check_launch_len(info, "keys.len()", n, K::KIND.size())?;
    let ops = SubgroupFeatures::BASIC | SubgroupFeatures::BALLOT | SubgroupFeatures::SHUFFLE;
    // Keys are moved as 32-bit words.
    plan::require(info, ElemKind::U32, ops)
}

/// The radix selection: the `k` candidates (keys below the k-th key, then the first keys equal
/// to it, each group in input order, with what `carried` says) in `cand_keys` and
/// `cand_values`.
fn select<K: Element, W: Element>(
    dev: &dyn Device,
    keys: &DeviceVec<K>,
    k: usize,
    order: SortOrder,
    cand_keys: &DeviceVec<K>,
    cand_values: &DeviceVec<W>,
    carried: Carried<'_>,
) -> Result<()> {
    let info = dev.info();
    let n = keys.len();
    let key_bytes = K::KIND.size();
    // Workgroups of every launch but the clear, each over a chunk of whole tiles (a multiple of
    // BATCH * BLOCK keys, which the tiles of 32- and 64-bit keys divide): a scatter takes the
    // chunks its histograms counted.
    let step = BATCH * BLOCK as usize;
    let chunk = n.div_ceil(MAX_GROUPS).next_multiple_of(step).max(step);
    let groups = n.div_ceil(chunk);
    let state = DeviceVec::<u32>::alloc(dev, STATE_HEAD + RADIX)?;
    let width = key_bytes as u32 * 8;
    let digits = width / 8;
    // The digits after which a filter may run, and the candidates' buffer it fills.
    let filters = if n * key_bytes >= FILTER_MIN_BYTES {
        FILTER_DIGITS.min(digits - 1)
    } else {
        0
    };
    // Each histogram workgroup's rows of two passes in turn (the inclusive sums of its bins)
    // and its count of keys below the threshold, and the workgroups' exclusive sums of the keys
    // a scatter places.
    let counts = DeviceVec::<u32>::alloc(dev, (2 * RADIX + 1) * groups)?;
    let before = DeviceVec::<u32>::alloc(dev, 2 * groups)?;
    let (values, value_words, indices) = match carried {
        Carried::Nothing => (state.binding(0, state.len()), 0, false),
        Carried::Values(b, w) => (b, w, false),
        Carried::Indices(w) => (state.binding(0, state.len()), w, true),
    };
    let cap = if filters > 0 { filter_cap(n) } else { 0 };
    let buf_words = cap * (key_bytes / 4 + value_words as usize);
    let buf = DeviceVec::<u64>::alloc(dev, buf_words.div_ceil(2).max(1))?;
    let base = TopKParams {
        n: n as u32,
        k: k as u32,
        key_kind: key_kind(K::KIND),
        descending: u32::from(order == SortOrder::Descending),
        indices: u32::from(indices),
        cap: cap as u32,
        tiles: chunk as u32,
        ..TopKParams::default()
    };
    let launch = |step: Step, groups: usize, params: TopKParams| {
        let mut consts = vec![
            ("OP", step as u32),
            ("ITEMS", items(key_bytes)),
            ("VALUE_WORDS", value_words),
        ];
        // Only the CUDA twin reads BLOCK, for its launch bounds (src/kernels/table.rs).
        if info.backend == BackendKind::Cuda {
            consts.push(("BLOCK", BLOCK));
        }
        dev.launch(&Launch {
            kernel: Kernel {
                name: "top_k",
                elem: K::KIND,
                consts: &consts,
            },
            block: BLOCK,
            groups: plan::grid(info, groups as u64)?,
            bindings: &[
                keys.binding(0, n),
                values,
                cand_keys.binding(0, k),
                cand_values.binding(0, cand_values.len()),
                state.binding(0, state.len()),
                counts.binding(0, counts.len()),
                before.binding(0, before.len()),
                buf.binding(0, buf.len()),
            ],
            params: bytemuck::bytes_of(&params),
        })
    };
    launch(Step::Clear, 1, base)?;
    for d in 0..digits {
        let shift = width - 8 * (d + 1);
        // The mapped bits above the digit: those the passes before fixed.
        let above = if shift + 8 >= 64 {
            0
        } else {
            !0u64 << (shift + 8)
        };
        let params = TopKParams {
            shift,
            mask_lo: above as u32,
            mask_hi: (above >> 32) as u32,
            filtering: u32::from(d < filters),
            digit: d,
            ..base
        };
        launch(Step::Hist, groups, params)?;
        if d >= filters {
            continue;
        }
        // The filter: the keys below the digit's bucket to the candidates, those in it to the
        // buffer, each in input order (the histogram's last workgroup scanned its chunks'
        // counts); it returns at once where that workgroup chose not to filter.
        let at = !0u64 << shift;
        let filter = TopKParams {
            mask_lo: at as u32,
            mask_hi: (at >> 32) as u32,
            filtering: 1,
            ..base
        };
        launch(Step::Scatter, groups, filter)?;
    }
    // The candidates (the last histogram's last workgroup scanned the chunks' counts).
    launch(Step::Scatter, groups, base)
}
