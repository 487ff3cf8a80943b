//! The group sort: one digit pass, one bulk exchange, one local sort and a rebalancing
//! exchange over the library's sorts, or a distributed LSD radix sort where that would put too
//! many keys on one rank.

use super::{check_distinct, exchange::lock, Group, GroupVec, Piece, Rank};
use crate::device::{Device, DeviceVec, RawBuffer};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::sort::{self as single, SortOrder, Sorter, TilePlan, Tuning, RADIX, RADIX_BITS};
use std::ops::Range;
use std::sync::Mutex;

/// Stable sort of a [`GroupVec`] of keys (or of keys and values) across a group, results
/// sharded in global order by the output's layout; temporary storage per rank, reusable: a call
/// that fits the storage allocates only the exchange's small temporaries.
///
/// # Algorithm
/// Over the 8-bit digits of the mapped keys (the order of [`crate::sort`]: totalOrder for
/// floats, a bit range, ascending or descending), on a group of two or more ranks:
/// 1. every rank counts every digit of its shard (the sort's histogram launch); the counts go
///    to every rank. Digits that every key of the vector shares are inactive; the highest
///    *active* digit `T` splits the vector: with every higher digit alike, the keys of a lower
///    value of `T` come first in the sorted vector.
/// 2. From `T`'s counts of every rank, every rank computes where each value (bucket) of `T`
///    starts in the sorted vector and gives each bucket to the rank whose part of the output
///    layout holds that start: buckets go to ranks in order, so rank `d` gets a contiguous
///    range `A[d] .. A[d + 1]` of the sorted vector, cut at bucket boundaries (within a bucket
///    of the output's boundary; ranks with empty output parts get nothing).
/// 3. Every rank sorts its shard stably by `T` alone (a one-digit [`Sorter`] call): its keys
///    for each rank are one segment.
/// 4. The exchange: each rank sends each segment to its rank; a rank receives the segments
///    in source rank order. Keys equal in the bit range have the same bucket, so they arrive
///    in their global input order.
/// 5. Each rank sorts what it received stably by the bits up to `T`'s (the digits above are
///    alike): it holds the sorted vector's places `A[d] .. A[d + 1]`.
/// 6. A second exchange round moves them to the output layout (each place to the rank whose
///    output part holds it).
///
/// Steps 4 and 5 overlap: each rank cuts its buckets into *pieces* of consecutive buckets
/// (about [`PIPELINE_PIECES`], each of twice the keys of the one before and at least
/// [`PIPELINE_MIN_KEYS`]; the first and the last bucket alone where they cross the rank's
/// output part's ends), the exchange moves one piece of every rank per round, and a rank sorts
/// piece `i` (one [`Sorter`] call) while round `i + 1` moves the next
/// ([`super::Exchange::start_exchange`]: NCCL on a second stream). A piece whose places in the sorted vector lie in the rank's own output part is
/// sorted straight into the output; only the others (at most the first and the last of a
/// rank, for even layouts) go through the round of step 6, which is skipped when no rank has
/// one.
///
/// # Parts larger than one sort
/// One device's sort takes at most [`crate::sort::max_len`] keys (about 2^30). A rank whose
/// shard is longer counts and sorts it in *chunks* of that many keys (the last shorter; a
/// multiple of [`CHUNK_UNIT`]), each chunk a source of its own in global order: steps 1 and
/// 3 run per chunk, and each chunk's segments go out as above. A rank that receives more
/// than a chunk cuts its buckets into *groups* of consecutive buckets of at most a chunk's
/// keys: each segment goes out as one piece per group, the rank receives each group in
/// source order (in a region of its own, aligned for a window) and sorts each group in step
/// 5 (groups in bucket order are the range in order). The chunks and groups are windows of
/// the rank's buffers ([`Device::window`]); one rank whose shard exceeds a chunk takes these
/// steps too, with itself.
///
/// Every rank decides the same from the same counts; the result is the one stable sort of the
/// whole vector, so it equals one device's [`Sorter`] result. Cost beyond one device's sort of
/// the same keys: one one-digit sort, the exchange of (nearly) the whole vector, overlapped
/// with the local sorts but for its first piece, and the round of step 6, which moves the
/// pieces that straddle the output's boundaries (for keys spread over `T`'s values, about a
/// piece between neighbours).
///
/// # Fallback: a distributed LSD radix sort
/// Where a rank would receive more keys in step 4 than twice the larger of its input and
/// output shards, or one bucket holds more keys than its rank's chunk — skewed keys, with
/// most of them in one bucket of `T` — every rank takes a distributed LSD radix sort instead:
/// - per active digit, lowest first: every rank sorts its part stably by the digit (a
///   one-digit [`Sorter`] call per chunk, each chunk a source as above), and the digit's
///   counts of every source give each key its place
///   in the vector sorted stably by that digit — its bucket's start, the bucket's keys on the
///   ranks before, its rank within the bucket here; so each rank's run of one digit value
///   lands on consecutive places, and goes (split where the output layout splits it) straight
///   to its place on the rank that holds it (one exchange round, a piece per digit value and
///   destination).
///
/// After the last digit every rank holds its part of the output in global order. Each active
/// digit costs one one-digit sort on every rank and one exchange of the whole vector.
///
/// Where no digit is active (every key alike in the bit range), the input order is the result:
/// one exchange round moves it into the output's layout.
pub struct GroupSorter<K: Element> {
    tuning: Tuning,
    /// The most keys one rank's sort takes, below the device's own limit (tests).
    chunk_limit: Option<usize>,
    /// The fewest keys of a piece of the overlapped exchange (tests: smaller).
    pipeline_min: usize,
    ranks: Vec<Mutex<Storage<K>>>,
    /// The way the latest call that ran took.
    path: Option<SortPath>,
}

/// Which way a [`GroupSorter`] call took (for tests: [`GroupSorter::last_path`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortPath {
    /// One rank: one device's sort.
    OneRank,
    /// No active digit: the input order, moved into the output's layout.
    InOrder,
    /// The digit pass, one bulk exchange, the local sort and the rebalancing exchange.
    OneExchange,
    /// The fallback: the distributed LSD radix sort.
    Lsd,
}

impl<K: Element> std::fmt::Debug for GroupSorter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupSorter")
            .field("key", &K::KIND)
            .field("ranks", &self.ranks.len())
            .field("tuning", &self.tuning)
            .finish()
    }
}

/// One rank's storage: its sorter and three key and value buffers between passes.
struct Storage<K: Element> {
    sorter: Sorter<K>,
    keys: [Option<RawBuffer>; 3],
    values: [Option<RawBuffer>; 3],
}

/// Where a rank's current keys (and values) are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    Input,
    Scratch(usize),
    Output,
}

impl<K: Element> GroupSorter<K> {
    /// A sorter for `group`'s ranks, with no storage yet (the first call allocates it).
    pub fn new(group: &Group) -> Self {
        Self::with_tuning(group, Tuning::default())
    }

    /// [`GroupSorter::new`] with the ranks' [`Sorter`]s tuned by `tuning` (speed, never
    /// results).
    pub fn with_tuning(group: &Group, tuning: Tuning) -> Self {
        GroupSorter {
            tuning,
            chunk_limit: None,
            pipeline_min: PIPELINE_MIN_KEYS,
            ranks: (0..group.ranks())
                .map(|_| {
                    Mutex::new(Storage {
                        sorter: Sorter::with_tuning(tuning),
                        keys: [None, None, None],
                        values: [None, None, None],
                    })
                })
                .collect(),
            path: None,
        }
    }

    /// Caps the keys one rank's sort takes at `keys` (at least [`CHUNK_UNIT`]; `None`: the
    /// device's limit alone), so that tests reach the chunked ways at small sizes. For tests;
    /// not part of the API.
    #[doc(hidden)]
    pub fn set_chunk_limit(&mut self, keys: Option<usize>) {
        self.chunk_limit = keys.map(|k| k.max(CHUNK_UNIT));
    }

    /// Sets the fewest keys of a piece of the overlapped exchange (at least 1; default
    /// [`PIPELINE_MIN_KEYS`]), so that tests reach many pieces at small sizes. For tests; not
    /// part of the API.
    #[doc(hidden)]
    pub fn set_pipeline_min(&mut self, keys: usize) {
        self.pipeline_min = keys.max(1);
    }

    /// The way the latest call that ran took (`None` before the first, and after a call
    /// that failed). For tests; not part of the API.
    #[doc(hidden)]
    pub fn last_path(&self) -> Option<SortPath> {
        self.path
    }

    /// Sorts `keys_in` into `keys_out` (the same number of keys in any layout) by bits `bits`
    /// of the mapped keys, stably (see [`crate::sort`] for the order).
    ///
    /// Errors, all before anything runs: [`Error::InvalidParameter`] for a bad bit range, an
    /// output sharing an input's buffer, or a group of another size than the sorter's;
    /// [`Error::MissingFeature`] where a part larger than one device's sort meets a device
    /// without [`Device::window`]s; [`Error::LengthMismatch`] for outputs of another total
    /// length; [`Error::ForeignBuffer`] for a shard on another rank's device;
    /// [`Error::MissingFeature`] where a device lacks what the sort kernels need.
    pub fn sort_keys(
        &mut self,
        group: &Group,
        keys_in: &GroupVec<K>,
        keys_out: &mut GroupVec<K>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        self.sort::<u32>(group, keys_in, keys_out, None, order, bits)
    }

    /// Sorts key-value pairs: `keys_out` gets the sorted keys and `values_out` each key's
    /// value; values share their keys' layout (`values_in` that of `keys_in`, `values_out`
    /// that of `keys_out`). Stable: values of equal keys keep their input order. Errors as
    /// [`GroupSorter::sort_keys`].
    #[allow(clippy::too_many_arguments)]
    pub fn sort_pairs<V: Element>(
        &mut self,
        group: &Group,
        keys_in: &GroupVec<K>,
        keys_out: &mut GroupVec<K>,
        values_in: &GroupVec<V>,
        values_out: &mut GroupVec<V>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        self.sort(
            group,
            keys_in,
            keys_out,
            Some((values_in, values_out)),
            order,
            bits,
        )
    }

    fn sort<V: Element>(
        &mut self,
        group: &Group,
        keys_in: &GroupVec<K>,
        keys_out: &mut GroupVec<K>,
        values: Option<(&GroupVec<V>, &mut GroupVec<V>)>,
        order: SortOrder,
        bits: Range<u32>,
    ) -> Result<()> {
        if self.ranks.len() != group.ranks() {
            return Err(Error::invalid(
                "group",
                format!("{} ranks", group.ranks()),
                format!("the {} ranks this sorter was made for", self.ranks.len()),
            ));
        }
        single::check_bits::<K>(&bits)?;
        keys_in.check_on(group, "keys_in")?;
        keys_out.check_on(group, "keys_out")?;
        if keys_in.len() != keys_out.len() {
            return Err(Error::LengthMismatch {
                name: "keys_out",
                expected: keys_in.len() as u64,
                actual: keys_out.len() as u64,
            });
        }
        check_distinct(("keys_out", keys_out), &[("keys_in", keys_in)])?;
        let value_bytes = if values.is_some() { V::KIND.size() } else { 0 };
        if let Some((vin, vout)) = &values {
            vin.check_on(group, "values_in")?;
            vout.check_on(group, "values_out")?;
            same_layout("values_in", &vin.lens(), &keys_in.lens())?;
            same_layout("values_out", &vout.lens(), &keys_out.lens())?;
            check_distinct(("keys_out", keys_out), &[("values_in", *vin)])?;
            check_distinct(("values_out", *vout), &[("values_in", *vin)])?;
            check_distinct(
                ("values_out", *vout),
                &[("keys_in", keys_in), ("keys_out", &*keys_out)],
            )?;
        }
        let (in_lens, out_lens) = (keys_in.lens(), keys_out.lens());
        let mut chunk = Vec::with_capacity(group.ranks());
        let mut pad = Vec::with_capacity(group.ranks());
        let mut windows = Vec::with_capacity(group.ranks());
        for r in 0..group.ranks() {
            let info = group.device(r).info();
            single::check_device(info)?;
            let plan = TilePlan::for_len(
                info,
                &self.tuning,
                K::KIND.size(),
                value_bytes,
                single::MAX_LEN,
            )?;
            let limit = single::max_len::<K>(info, value_bytes, plan.tile())
                .min(self.chunk_limit.unwrap_or(usize::MAX));
            let c = limit / CHUNK_UNIT * CHUNK_UNIT;
            if c == 0 {
                return Err(Error::invalid(
                    "keys_in",
                    format!("rank {r} on `{}`", info.name),
                    format!(
                        "devices whose sort takes at least {CHUNK_UNIT} keys of {} (this one: \
                         {limit})",
                        K::KIND
                    ),
                ));
            }
            // A rank whose part, or what it may receive, exceeds a chunk works through windows:
            // a device without them is refused here, before anything runs.
            let raw = keys_out.shard(r).raw();
            let window = group.device(r).window(raw, 0, raw.bytes().min(16));
            if 2 * in_lens[r].max(out_lens[r]) > c {
                window?;
                windows.push(true);
            } else {
                // Without windows, a rank sorts what it receives in one piece.
                windows.push(window.is_ok());
            }
            chunk.push(c);
            pad.push((info.binding_alignment as usize).max(1));
        }
        let pipeline_min = self.pipeline_min;
        let values = values.map(|(vin, vout)| (vin, &*vout));
        let job = Job {
            keys_in,
            keys_out: &*keys_out,
            values,
            order,
            bits,
            in_lens,
            out_lens,
            chunk,
            pad,
            windows,
            pipeline_min,
        };
        self.path = None;
        if group.ranks() == 1 && job.in_lens[0].max(job.out_lens[0]) <= job.chunk[0] {
            let mut st = lock(&self.ranks[0]);
            job.local(group.device(0), &mut st.sorter)?;
            self.path = Some(SortPath::OneRank);
            return Ok(());
        }
        let ranks = &self.ranks;
        let paths = group.run(|rank| job.rank(rank, &mut lock(&ranks[rank.rank])))?;
        // Every rank decided from the same counts.
        debug_assert!(paths.windows(2).all(|w| w[0] == w[1]));
        self.path = paths.first().copied();
        Ok(())
    }
}

fn same_layout(name: &'static str, got: &[usize], keys: &[usize]) -> Result<()> {
    if got != keys {
        return Err(Error::invalid(
            name,
            format!("shards of {got:?} elements"),
            format!("the keys' layout {keys:?}"),
        ));
    }
    Ok(())
}

/// One call's arguments.
struct Job<'a, K: Element, V: Element> {
    keys_in: &'a GroupVec<K>,
    keys_out: &'a GroupVec<K>,
    values: Option<(&'a GroupVec<V>, &'a GroupVec<V>)>,
    order: SortOrder,
    bits: Range<u32>,
    in_lens: Vec<usize>,
    out_lens: Vec<usize>,
    /// Each rank's chunk: the most keys one of its sorts takes (with the call's values), a
    /// multiple of [`CHUNK_UNIT`].
    chunk: Vec<usize>,
    /// Each rank's alignment of windows, in bytes ([`crate::DeviceInfo::binding_alignment`];
    /// as a count of elements, a multiple of the alignment in bytes).
    pad: Vec<usize>,
    /// Whether each rank's device has [`Device::window`]s (else it sorts what it receives in
    /// one piece).
    windows: Vec<bool>,
    /// The fewest keys of a piece of the overlapped exchange.
    pipeline_min: usize,
}

/// Pieces of the overlapped exchange per rank: what a rank receives is cut into about this
/// many, each twice the one before (see [`GroupSorter`]; two H100s, 2^28 u32 keys a rank,
/// ms a sort: 10.0-10.3 at 4, 10.3-10.4 at 5, 10.9 at 6, 10.2-10.5 at 8 of equal size, 10.8-10.9
/// without pieces; NOTES.md version 32).
pub const PIPELINE_PIECES: usize = 4;

/// The fewest keys of a piece of the overlapped exchange (a piece is one sort: below about
/// 2^22 keys the sort's fixed cost outweighs what the overlap hides).
pub const PIPELINE_MIN_KEYS: usize = 1 << 22;

/// Chunks are multiples of this many keys (so that every chunk's window is aligned).
pub const CHUNK_UNIT: usize = 4096;

/// The sources of a layout `lens`: each rank's part cut into chunks of at most `chunk[rank]`
/// keys (the last one shorter), as (rank, range in its part), in global order.
fn sources(lens: &[usize], chunk: &[usize]) -> Vec<(usize, Range<usize>)> {
    let mut out = Vec::new();
    for (r, (&n, &c)) in lens.iter().zip(chunk).enumerate() {
        let mut at = 0;
        while at < n {
            let end = (at + c).min(n);
            out.push((r, at..end));
            at = end;
        }
    }
    out
}

/// Each source's row of `len` counts from the gathered `table` (rank `q`'s entry: its chunks'
/// rows one after another), in the order of `srcs`.
fn source_rows<'t>(
    table: &'t [Vec<u64>],
    srcs: &[(usize, Range<usize>)],
    len: usize,
) -> Result<Vec<&'t [u64]>> {
    let mut taken = vec![0usize; table.len()];
    srcs.iter()
        .map(|&(q, _)| {
            let at = taken[q];
            taken[q] += len;
            table[q].get(at..at + len).ok_or_else(|| {
                Error::invalid("counts", format!("rank {q}'s rows"), "one row per chunk")
            })
        })
        .collect()
}

/// `v` itself where `range` is all of it, else a window of `range` ([`Device::window`]).
fn part<T: Element>(
    dev: &dyn Device,
    v: DeviceVec<T>,
    range: &Range<usize>,
) -> Result<DeviceVec<T>> {
    if range.start == 0 && range.end == v.len() {
        return Ok(v);
    }
    let size = T::KIND.size() as u64;
    let raw = dev.window(
        v.raw(),
        range.start as u64 * size,
        range.len() as u64 * size,
    )?;
    DeviceVec::from_raw(raw, range.len())
}

/// A second typed handle of the first `len` elements of `raw`.
fn typed<T: Element>(raw: &RawBuffer, len: usize) -> Result<DeviceVec<T>> {
    DeviceVec::from_raw(raw.clone(), len)
}

/// A buffer of at least `bytes` in `slot`, grown (replaced) when it holds less.
fn scratch(dev: &dyn Device, slot: &mut Option<RawBuffer>, bytes: u64) -> Result<RawBuffer> {
    match slot {
        Some(b) if b.bytes() >= bytes => Ok(b.clone()),
        _ => {
            // Free the old one first, so growing never needs both at once.
            *slot = None;
            let b = dev.alloc(bytes.max(8))?;
            *slot = Some(b.clone());
            Ok(b)
        }
    }
}

impl<K: Element, V: Element> Job<'_, K, V> {
    /// One rank: the whole sort on its device.
    fn local(&self, dev: &dyn Device, sorter: &mut Sorter<K>) -> Result<()> {
        let mut keys_out = super::view(self.keys_out.shard(0))?;
        match self.values {
            None => sorter.sort_keys(
                dev,
                self.keys_in.shard(0),
                &mut keys_out,
                self.order,
                self.bits.clone(),
            ),
            Some((vin, vout)) => sorter.sort_pairs(
                dev,
                self.keys_in.shard(0),
                &mut keys_out,
                vin.shard(0),
                &mut super::view(vout.shard(0))?,
                self.order,
                self.bits.clone(),
            ),
        }
    }

    /// Copies `count` keys (and values) of rank `r` from index `from.2` of its `from.1` keys at
    /// `from.0` to index `to.2` of its `to.1` keys at `to.0`, on its device.
    fn copy_keys(
        &self,
        dev: &dyn Device,
        st: &Storage<K>,
        r: usize,
        from: (At, usize, usize),
        to: (At, usize, usize),
        count: usize,
    ) -> Result<()> {
        let (src_keys, src_values) = self.at(st, r, from.0, from.1)?;
        let (dst_keys, dst_values) = self.at(st, r, to.0, to.1)?;
        let copy = |src: &RawBuffer, dst: &RawBuffer, size: usize| {
            let size = size as u64;
            dev.copy(
                src,
                from.2 as u64 * size,
                dst,
                to.2 as u64 * size,
                count as u64 * size,
            )
        };
        copy(src_keys.raw(), dst_keys.raw(), K::KIND.size())?;
        if let (Some(sv), Some(dv)) = (src_values, dst_values) {
            copy(sv.raw(), dv.raw(), V::KIND.size())?;
        }
        Ok(())
    }

    /// The keys (and values) of rank `r` at `at`, `len` of them.
    fn at(
        &self,
        st: &Storage<K>,
        r: usize,
        at: At,
        len: usize,
    ) -> Result<(DeviceVec<K>, Option<DeviceVec<V>>)> {
        let missing = || Error::invalid("scratch", "missing", "storage made before the pass");
        let keys = match at {
            At::Input => super::view(self.keys_in.shard(r))?,
            At::Output => super::view(self.keys_out.shard(r))?,
            At::Scratch(i) => typed(st.keys[i].as_ref().ok_or_else(missing)?, len)?,
        };
        let values = match (self.values, at) {
            (None, _) => None,
            (Some((vin, _)), At::Input) => Some(super::view(vin.shard(r))?),
            (Some((_, vout)), At::Output) => Some(super::view(vout.shard(r))?),
            (Some(_), At::Scratch(i)) => {
                Some(typed(st.values[i].as_ref().ok_or_else(missing)?, len)?)
            }
        };
        Ok((keys, values))
    }

    /// Sorts keys `range` of rank `r`'s `from_len` keys (and values) at `from` stably by
    /// `bits` into keys `to_range` (as long) of its `to_len` keys at `to` (through windows
    /// where a range is not all of them).
    #[allow(clippy::too_many_arguments)]
    fn sort_range(
        &self,
        dev: &dyn Device,
        st: &mut Storage<K>,
        r: usize,
        (from, from_len): (At, usize),
        (to, to_len): (At, usize),
        (range, to_range): (&Range<usize>, &Range<usize>),
        bits: Range<u32>,
    ) -> Result<()> {
        let (keys_in, values_in) = self.at(st, r, from, from_len)?;
        let (keys_out, values_out) = self.at(st, r, to, to_len)?;
        let keys_in = part(dev, keys_in, range)?;
        let mut keys_out = part(dev, keys_out, to_range)?;
        match (values_in, values_out) {
            (Some(vin), Some(vout)) => {
                let vin = part(dev, vin, range)?;
                let mut vout = part(dev, vout, to_range)?;
                st.sorter.sort_pairs(
                    dev,
                    &keys_in,
                    &mut keys_out,
                    &vin,
                    &mut vout,
                    self.order,
                    bits,
                )
            }
            _ => st
                .sorter
                .sort_keys(dev, &keys_in, &mut keys_out, self.order, bits),
        }
    }

    /// One rank of a group (of one rank only where its part exceeds its chunk): the counts,
    /// then the way every rank takes.
    fn rank(&self, rank: Rank<'_>, st: &mut Storage<K>) -> Result<SortPath> {
        let (r, dev) = (rank.rank, rank.dev());
        let rv = rank.ex.rendezvous();
        let radix = RADIX as usize;
        let digits: Vec<Range<u32>> = (self.bits.start..self.bits.end)
            .step_by(RADIX_BITS as usize)
            .map(|s| s..(s + RADIX_BITS).min(self.bits.end))
            .collect();
        let row = digits.len() * radix;
        // 1. Every digit's counts of every chunk of every rank.
        let srcs = sources(&self.in_lens, &self.chunk);
        let mut mine = Vec::new();
        for (_, range) in srcs.iter().filter(|(q, _)| *q == r) {
            let keys = part(dev, super::view(self.keys_in.shard(r))?, range)?;
            let value_bytes = self.values.map_or(0, |_| V::KIND.size());
            st.sorter
                .count_digits(dev, &keys, self.order, self.bits.clone(), value_bytes)?;
            let counts = st.sorter.counts_of_digits(dev, digits.len())?;
            mine.extend(counts.into_iter().map(u64::from));
        }
        let table = rv.all_gather(r, &mine)?;
        rank.step("counts")?;
        let rows = source_rows(&table, &srcs, row)?;
        let of_digit = |d: usize| -> Vec<Vec<u64>> {
            rows.iter()
                .map(|row| row[d * radix..(d + 1) * radix].to_vec())
                .collect()
        };
        let active: Vec<usize> = (0..digits.len())
            .filter(|&d| {
                let rows = of_digit(d);
                (0..radix)
                    .filter(|&b| rows.iter().any(|row| row[b] > 0))
                    .count()
                    > 1
            })
            .collect();
        let Some(&top) = active.last() else {
            // Every key alike in the range: the input order is the result, moved into the
            // output's layout.
            let counts: Vec<Vec<u64>> = self.in_lens.iter().map(|&n| vec![n as u64]).collect();
            let plan = plan_pass(&counts, &self.out_lens);
            self.send_pass(rank, st, &plan, At::Input, At::Output)?;
            return Ok(SortPath::InOrder);
        };
        let plan = plan_split(&of_digit(top), &self.out_lens);
        let groups: Option<Vec<Vec<Range<usize>>>> = (0..self.out_lens.len())
            .map(|d| {
                let most = self.in_lens[d].max(self.out_lens[d]) as u64;
                if plan.received(d) > 2 * most {
                    return None;
                }
                plan.groups(d, self.chunk[d])
            })
            .collect();
        if let Some(groups) = groups {
            // Each group cut into the overlapped exchange's pieces.
            let groups: Vec<Vec<Range<usize>>> = groups
                .iter()
                .enumerate()
                .map(|(d, g)| match self.windows[d] {
                    true => plan.rank_pieces(d, g, self.pipeline_min as u64),
                    false => g.clone(),
                })
                .collect();
            let bits = self.bits.start..digits[top].end;
            let held: Vec<Held> = groups
                .iter()
                .enumerate()
                .map(|(d, g)| Held::new(&plan, d, g, self.pad[d], self.windows[d]))
                .collect();
            let split = Split {
                plan: &plan,
                srcs: &srcs,
                groups: &groups,
                held: &held,
            };
            self.one_exchange(rank, st, &split, digits[top].clone(), bits)?;
            Ok(SortPath::OneExchange)
        } else {
            self.lsd(rank, st, &digits, &active, &of_digit(active[0]))?;
            Ok(SortPath::Lsd)
        }
    }

    /// Steps 3 to 6 of the sort (see [`GroupSorter`]) on rank `rank`: each chunk stable by
    /// the top active digit `digit`, the bulk exchange of `split` piece by piece, each received
    /// piece sorted by `bits` (up to the top active digit) while the next one moves, and the
    /// rebalancing exchange of the pieces not sorted into the output.
    fn one_exchange(
        &self,
        rank: Rank<'_>,
        st: &mut Storage<K>,
        split: &Split<'_>,
        digit: Range<u32>,
        bits: Range<u32>,
    ) -> Result<()> {
        let (r, dev) = (rank.rank, rank.dev());
        let Split {
            plan,
            srcs,
            groups,
            held,
        } = *split;
        let n_in = self.in_lens[r];
        let mine = &held[r];
        let m = mine.len;
        let sizes = (K::KIND.size() as u64, V::KIND.size() as u64);
        let staged = mine.direct.iter().any(|&d| !d);
        // Storage: the shard's chunks sorted by the digit (scratch 0, the sends), the
        // received pieces (scratch 1, each piece's window aligned) and the sorted pieces that
        // do not go straight into the output (scratch 2, the same layout).
        let staged_len = if staged { m } else { 0 };
        scratch(dev, &mut st.keys[0], n_in as u64 * sizes.0)?;
        scratch(dev, &mut st.keys[1], m as u64 * sizes.0)?;
        scratch(dev, &mut st.keys[2], staged_len as u64 * sizes.0)?;
        if self.values.is_some() {
            scratch(dev, &mut st.values[0], n_in as u64 * sizes.1)?;
            scratch(dev, &mut st.values[1], m as u64 * sizes.1)?;
            scratch(dev, &mut st.values[2], staged_len as u64 * sizes.1)?;
        }
        // 3. Each chunk stable by the digit: its keys for each piece of each rank are one
        // segment. A shard of one chunk was counted last (step 1): its digit's counts serve.
        let chunks = srcs.iter().filter(|(q, _)| *q == r).count();
        for (_, range) in srcs.iter().filter(|(q, _)| *q == r) {
            if chunks == 1 {
                st.sorter.take_counts_next();
            }
            self.sort_range(
                dev,
                st,
                r,
                (At::Input, n_in),
                (At::Scratch(0), n_in),
                (range, range),
                digit.clone(),
            )?;
        }
        rank.step("by the top digit")?;
        // 4 and 5. Round i moves piece i of every rank (each segment of it from every source,
        // received in source order); the rank sorts its piece i while round i + 1 runs.
        let rounds = groups.iter().map(Vec::len).max().unwrap_or(0);
        let round = |st: &Storage<K>, i: usize| -> Result<()> {
            let (src_keys, src_values) = self.at(st, r, At::Scratch(0), n_in)?;
            let (dst_keys, dst_values) = self.at(st, r, At::Scratch(1), m)?;
            let src = (src_keys.raw(), src_values.as_ref().map(DeviceVec::raw));
            let dst = (dst_keys.raw(), dst_values.as_ref().map(DeviceVec::raw));
            let mut sends = Vec::new();
            for (s, (_, range)) in srcs.iter().enumerate().filter(|(_, (q, _))| *q == r) {
                for (d, gs) in groups.iter().enumerate() {
                    if let Some(g) = gs.get(i) {
                        let (at, count) = plan.sub(s, g);
                        if count > 0 {
                            push_run(&mut sends, d, src, sizes, (range.start + at, count));
                        }
                    }
                }
            }
            let mut recvs = Vec::new();
            if let Some(g) = groups[r].get(i) {
                let mut filled = mine.offsets[i];
                for (s, (q, _)) in srcs.iter().enumerate() {
                    let (_, count) = plan.sub(s, g);
                    if count > 0 {
                        push_run(&mut recvs, *q, dst, sizes, (filled, count));
                        filled += count;
                    }
                }
            }
            rank.ex.start_exchange(r, &sends, &recvs)
        };
        if rounds > 0 {
            round(st, 0)?;
        }
        for i in 0..rounds {
            rank.ex.finish_exchange(r)?;
            rank.step("round")?;
            if i + 1 < rounds {
                round(st, i + 1)?;
            }
            if i < groups[r].len() {
                let (at, n, shift) = (mine.offsets[i], mine.sizes[i], mine.shift[i]);
                let place = plan.starts[r] + mine.sizes[..i].iter().sum::<usize>() as u64;
                let (to, to_range) = if mine.direct[i] {
                    let out = (place - plan.bounds[r]) as usize;
                    if shift > 0 {
                        // The window starts `shift` keys early, at an aligned place: the
                        // previous piece's last keys (the sorted vector's places before this
                        // piece, below every key of it) go before its keys, sort first and land
                        // where they are.
                        let from = if mine.direct[i - 1] {
                            (At::Output, self.out_lens[r], out - shift)
                        } else {
                            let end = mine.offsets[i - 1] + mine.sizes[i - 1];
                            (At::Scratch(2), m, end - shift)
                        };
                        self.copy_keys(dev, st, r, from, (At::Scratch(1), m, at - shift), shift)?;
                    }
                    ((At::Output, self.out_lens[r]), out - shift..out + n)
                } else {
                    ((At::Scratch(2), m), at..at + n)
                };
                self.sort_range(
                    dev,
                    st,
                    r,
                    (At::Scratch(1), m),
                    to,
                    (&(at - shift..at + n), &to_range),
                    bits.clone(),
                )?;
                rank.step("piece sort")?;
            }
        }
        // 6. The pieces not sorted into the output, into the output's layout.
        if held.iter().all(|h| h.direct.iter().all(|&d| d)) {
            return Ok(());
        }
        let runs = Held::split_runs(plan.rebalance(), held);
        self.exchange_runs(rank, st, &runs, (At::Scratch(2), staged_len), At::Output)?;
        rank.step("rebalance")
    }

    /// The fallback (see [`GroupSorter`]): the distributed LSD radix sort on rank `rank`, over
    /// the `active` digits of `digits`; `first` holds the first active digit's counts of every
    /// chunk of the input.
    fn lsd(
        &self,
        rank: Rank<'_>,
        st: &mut Storage<K>,
        digits: &[Range<u32>],
        active: &[usize],
        first: &[Vec<u64>],
    ) -> Result<()> {
        let (r, dev) = (rank.rank, rank.dev());
        let rv = rank.ex.rendezvous();
        let radix = RADIX as usize;
        // Storage: two buffers of keys (and values) of this rank's larger part.
        let most = self.in_lens[r].max(self.out_lens[r]) as u64;
        for i in 0..2 {
            scratch(dev, &mut st.keys[i], most * K::KIND.size() as u64)?;
            if self.values.is_some() {
                scratch(dev, &mut st.values[i], most * V::KIND.size() as u64)?;
            }
        }
        let mut cur = At::Input;
        let mut lens = &self.in_lens;
        for (i, &d) in active.iter().enumerate() {
            let last = i + 1 == active.len();
            let cur_len = lens[r];
            let srcs = sources(lens, &self.chunk);
            // Each chunk stable by the digit locally, then the digit's counts of every chunk.
            let part = match cur {
                At::Scratch(k) => At::Scratch(1 - k),
                _ => At::Scratch(0),
            };
            let mut mine: Vec<u64> = Vec::new();
            for (_, range) in srcs.iter().filter(|(q, _)| *q == r) {
                self.sort_range(
                    dev,
                    st,
                    r,
                    (cur, cur_len),
                    (part, cur_len),
                    (range, range),
                    digits[d].clone(),
                )?;
                if i > 0 {
                    let counts = st.sorter.counts_of_digits(dev, 1)?;
                    mine.extend(counts.into_iter().map(u64::from));
                }
            }
            rank.step("digit pass")?;
            let counts = if i == 0 {
                first.to_vec()
            } else {
                let table = rv.all_gather(r, &mine)?;
                source_rows(&table, &srcs, radix)?
                    .into_iter()
                    .map(<[u64]>::to_vec)
                    .collect()
            };
            let plan = plan_pass(&counts, &self.out_lens);
            // Runs from sources to runs from ranks: a chunk's index in its rank's part.
            let runs: Vec<Run> = plan
                .runs
                .iter()
                .map(|run| Run {
                    from: srcs[run.from].0,
                    src: srcs[run.from].1.start + run.src,
                    ..*run
                })
                .collect();
            let received = match (last, part) {
                (true, _) => At::Output,
                (false, At::Scratch(k)) => At::Scratch(1 - k),
                (false, _) => At::Scratch(1),
            };
            self.exchange_runs(rank, st, &runs, (part, cur_len), received)?;
            rank.step("exchange")?;
            lens = &self.out_lens;
            cur = received;
        }
        debug_assert_eq!(cur, At::Output);
        Ok(())
    }

    /// One exchange round: rank `r`'s part at `from` (its current layout, sorted stably by the
    /// pass's digit) goes where `plan` says; what it receives lands at its places at `to` (the
    /// output's layout).
    fn send_pass(
        &self,
        rank: Rank<'_>,
        st: &Storage<K>,
        plan: &PassPlan,
        from: At,
        to: At,
    ) -> Result<()> {
        let r = rank.rank;
        let sent: usize = plan
            .runs
            .iter()
            .filter(|run| run.from == r)
            .map(|run| run.count)
            .sum();
        self.exchange_runs(rank, st, &plan.runs, (from, sent), to)
    }

    /// One exchange of `runs` on rank `r`: the runs it sends leave from its `len` keys at
    /// `from`, and the runs it receives land at their places at `to` (the output's layout).
    fn exchange_runs(
        &self,
        rank: Rank<'_>,
        st: &Storage<K>,
        runs: &[Run],
        (from, len): (At, usize),
        to: At,
    ) -> Result<()> {
        let r = rank.rank;
        let (src_keys, src_values) = self.at(st, r, from, len)?;
        let (dst_keys, dst_values) = self.at(st, r, to, self.out_lens[r])?;
        let sizes = (K::KIND.size() as u64, V::KIND.size() as u64);
        let mut sends = Vec::new();
        let mut recvs = Vec::new();
        for run in runs {
            if run.from == r {
                let values = src_values.as_ref().map(DeviceVec::raw);
                push_run(
                    &mut sends,
                    run.to,
                    (src_keys.raw(), values),
                    sizes,
                    (run.src, run.count),
                );
            }
            if run.to == r {
                let values = dst_values.as_ref().map(DeviceVec::raw);
                push_run(
                    &mut recvs,
                    run.from,
                    (dst_keys.raw(), values),
                    sizes,
                    (run.dst, run.count),
                );
            }
        }
        rank.ex.exchange(r, &sends, &recvs)
    }
}

/// Adds the pieces of one run of `count` keys from index `first` for `peer`: its keys, then
/// its values (sender and receiver list them in this order). `sizes`: key and value bytes.
fn push_run<'a>(
    pieces: &mut Vec<Piece<'a>>,
    peer: usize,
    (keys, values): (&'a RawBuffer, Option<&'a RawBuffer>),
    (ks, vs): (u64, u64),
    (first, count): (usize, usize),
) {
    pieces.push(Piece {
        peer,
        buffer: keys,
        offset: first as u64 * ks,
        bytes: count as u64 * ks,
    });
    if let Some(v) = values {
        pieces.push(Piece {
            peer,
            buffer: v,
            offset: first as u64 * vs,
            bytes: count as u64 * vs,
        });
    }
}

/// One run of a pass: `count` keys of one digit value from rank `from`'s index `src` (its
/// part sorted stably by the digit) to rank `to`'s index `dst` (its part of the output
/// layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    from: usize,
    to: usize,
    src: usize,
    dst: usize,
    count: usize,
}

/// Where one pass moves the keys: its runs ordered by sender, receiver, then digit value, so
/// that a sender's sends to one rank and that rank's receives from it come in the same order.
#[derive(Debug, PartialEq, Eq)]
struct PassPlan {
    runs: Vec<Run>,
}

/// The plan of one pass from `counts[s][b]`, the number of keys of digit value (bucket) `b` on
/// source `s` (a rank, or a chunk of one, in global order; each source's keys sorted stably by
/// the digit), to the layout `out_lens`. The runs' `from` and `src` name the source and the
/// index in it.
///
/// In the vector sorted stably by the digit, bucket `b` starts at `G[b]` (the keys of every
/// lower bucket), and rank `s`'s keys of bucket `b` follow those of the ranks before it: they
/// take places `P[s][b] ..` consecutively, in their local order. So each (rank, bucket) is one
/// run of places, cut where the output layout's parts begin.
fn plan_pass(counts: &[Vec<u64>], out_lens: &[usize]) -> PassPlan {
    let (sources, ranks) = (counts.len(), out_lens.len());
    let buckets = counts.first().map_or(0, Vec::len);
    let mut place = vec![vec![0u64; buckets]; sources];
    let mut at = 0u64;
    for b in 0..buckets {
        for s in 0..sources {
            place[s][b] = at;
            at += counts[s][b];
        }
    }
    let mut bounds = vec![0u64; ranks + 1];
    for d in 0..ranks {
        bounds[d + 1] = bounds[d] + out_lens[d] as u64;
    }
    let mut runs = Vec::new();
    for s in 0..sources {
        for d in 0..ranks {
            // The local index of rank s's first key of bucket b.
            let mut local = 0u64;
            for b in 0..buckets {
                let (first, count) = (place[s][b], counts[s][b]);
                let lo = first.max(bounds[d]);
                let hi = (first + count).min(bounds[d + 1]);
                if lo < hi {
                    runs.push(Run {
                        from: s,
                        to: d,
                        src: (local + lo - first) as usize,
                        dst: (lo - bounds[d]) as usize,
                        count: (hi - lo) as usize,
                    });
                }
                local += count;
            }
        }
    }
    PassPlan { runs }
}

/// Where the bulk exchange moves the keys (steps 2, 4 and 6 of [`GroupSorter`]'s algorithm),
/// from the top active digit's counts of each source (a rank, or a chunk of one, in global
/// order).
#[derive(Debug, PartialEq, Eq)]
struct SplitPlan {
    /// `segments[s][d]`: the keys of source `s` (sorted stably by the digit) that go to rank
    /// `d`, one segment each, in rank order of `d`.
    segments: Vec<Vec<u64>>,
    /// `starts[d]`: where rank `d`'s range of the sorted vector starts (`A[d]`; the last
    /// entry is the vector's length).
    starts: Vec<u64>,
    /// The output layout's prefix sums (`P[d]`; the last entry is the vector's length).
    bounds: Vec<u64>,
    /// `before[s][b]`: the keys of source `s` in the buckets below `b` (`b` up to the number
    /// of buckets).
    before: Vec<Vec<u64>>,
    /// Each bucket's keys over every source.
    totals: Vec<u64>,
    /// The rank each non-empty bucket goes to.
    owner: Vec<Option<usize>>,
}

impl SplitPlan {
    fn ranks(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Where source `s`'s keys of the buckets `g` start in it (sorted by the digit), and how
    /// many there are.
    fn sub(&self, s: usize, g: &Range<usize>) -> (usize, usize) {
        let row = &self.before[s];
        (row[g.start] as usize, (row[g.end] - row[g.start]) as usize)
    }

    /// The keys that rank `d` receives.
    fn received(&self, d: usize) -> u64 {
        self.starts[d + 1] - self.starts[d]
    }

    /// Whether rank `d`'s range of the sorted vector is its part of the output layout (both
    /// empty included): nothing of it moves in the rebalancing round.
    #[cfg(test)]
    fn in_place(&self, d: usize) -> bool {
        let (a, p) = (&self.starts[d..d + 2], &self.bounds[d..d + 2]);
        a == p || (a[0] == a[1] && p[0] == p[1])
    }

    /// Whether every rank's range is its part of the output (no rebalancing round).
    #[cfg(test)]
    fn balanced(&self) -> bool {
        (0..self.ranks()).all(|d| self.in_place(d))
    }

    /// Rank `d`'s buckets in groups of consecutive buckets, each of at most `cap` keys (one
    /// group where all its keys fit): each group is one sort. `None` where one bucket alone
    /// holds more than `cap` keys; no group for a rank that receives nothing.
    fn groups(&self, d: usize, cap: usize) -> Option<Vec<Range<usize>>> {
        let mine: Vec<usize> = (0..self.owner.len())
            .filter(|&b| self.owner[b] == Some(d))
            .collect();
        let (Some(&lo), Some(&last)) = (mine.first(), mine.last()) else {
            return Some(Vec::new());
        };
        let hi = last + 1;
        let cap = cap as u64;
        if self.received(d) <= cap {
            return Some(std::iter::once(lo..hi).collect());
        }
        let mut groups = Vec::new();
        let (mut start, mut size) = (lo, 0u64);
        for b in lo..hi {
            let t = self.totals[b];
            if t > cap {
                return None;
            }
            if size + t > cap {
                groups.push(start..b);
                (start, size) = (b, 0);
            }
            size += t;
        }
        groups.push(start..hi);
        Some(groups)
    }

    /// A rank's `groups` ([`SplitPlan::groups`]) cut further at bucket boundaries into the
    /// overlapped exchange's pieces: piece `j` ends with the first bucket that brings it to
    /// `target(j)` keys or more while keys remain in its group (so a bucket of more keys ends
    /// a piece, and only a group's last piece may be smaller), and a bucket that `alone` marks
    /// (a non-empty one) is a piece of its own. No piece is empty.
    fn pieces(
        &self,
        groups: &[Range<usize>],
        target: impl Fn(usize) -> u64,
        alone: impl Fn(usize) -> bool,
    ) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        for g in groups {
            let mut left: u64 = self.totals[g.clone()].iter().sum();
            let (mut start, mut size) = (g.start, 0u64);
            for b in g.clone() {
                if alone(b) && size > 0 {
                    out.push(start..b);
                    (start, size) = (b, 0);
                }
                size += self.totals[b];
                left -= self.totals[b];
                if (size >= target(out.len()) || alone(b)) && size > 0 && left > 0 {
                    out.push(start..b + 1);
                    (start, size) = (b + 1, 0);
                }
            }
            out.push(start..g.end);
        }
        out
    }

    /// Rank `d`'s `groups` cut into the overlapped exchange's pieces ([`SplitPlan::pieces`]):
    /// about [`PIPELINE_PIECES`] of at least `min` keys, each twice the one before (the first
    /// round's transfer, the one the local sorts cannot hide, is then short, and each later
    /// round has the previous piece's sort to hide in; each piece is a sort of its own, so
    /// fewer and larger ones sort faster); the first and the last bucket alone where they
    /// cross the rank's output part's ends (so that only they go through the rebalancing
    /// round) where the rank receives more than `min` keys.
    fn rank_pieces(&self, d: usize, groups: &[Range<usize>], min: u64) -> Vec<Range<usize>> {
        let (Some(first), Some(last)) = (groups.first(), groups.last()) else {
            return Vec::new();
        };
        let (lo, hi) = (first.start, last.end - 1);
        // Only where the rank takes several pieces anyway (a lone bucket is a sort of its
        // own, which a small rebalancing round costs less than).
        let several = self.received(d) > min;
        let cut_lo = several && self.starts[d] != self.bounds[d];
        let cut_hi = several && self.starts[d + 1] != self.bounds[d + 1];
        let alone = |b: usize| (b == lo && cut_lo) || (b == hi && cut_hi);
        let first = (self.received(d) / ((1 << PIPELINE_PIECES) - 1)).max(min);
        self.pieces(groups, |j| first.saturating_mul(1 << j.min(40)), alone)
    }

    /// The rebalancing round: the part of rank `d`'s range that lies in rank `e`'s output part
    /// goes from `d` (index in its range) to `e` (index in its output part), `e == d`
    /// included. Ordered by sender, then receiver.
    fn rebalance(&self) -> Vec<Run> {
        let ranks = self.ranks();
        let mut runs = Vec::new();
        for d in 0..ranks {
            for e in 0..ranks {
                let lo = self.starts[d].max(self.bounds[e]);
                let hi = self.starts[d + 1].min(self.bounds[e + 1]);
                if lo < hi {
                    runs.push(Run {
                        from: d,
                        to: e,
                        src: (lo - self.starts[d]) as usize,
                        dst: (lo - self.bounds[e]) as usize,
                        count: (hi - lo) as usize,
                    });
                }
            }
        }
        runs
    }
}

/// The bulk exchange's plan from `counts[s][b]`, the number of keys of the top active digit's
/// value (bucket) `b` on source `s`, buckets in the sort's order, to the layout `out_lens`.
///
/// Bucket `b` starts at `G[b]` in the sorted vector (the keys of every lower bucket) and goes
/// to the rank whose output part `P[d] .. P[d + 1]` holds `G[b]`; an empty bucket goes where
/// the bucket before it went. The assignment never decreases with `b`, so each source's keys
/// for rank `d` are one segment of it sorted by the digit, and rank `d` gets the sorted
/// vector's places `A[d] .. A[d + 1]`: `A[d]` is the start of its first bucket, at or after
/// `P[d]` and before the end of the bucket that holds `P[d]`.
fn plan_split(counts: &[Vec<u64>], out_lens: &[usize]) -> SplitPlan {
    let (sources, ranks) = (counts.len(), out_lens.len());
    let buckets = counts.first().map_or(0, Vec::len);
    let mut bounds = vec![0u64; ranks + 1];
    for d in 0..ranks {
        bounds[d + 1] = bounds[d] + out_lens[d] as u64;
    }
    let mut segments = vec![vec![0u64; ranks]; sources];
    let mut totals = vec![0u64; buckets];
    let mut owner = vec![None; buckets];
    let mut start = 0u64;
    let mut d = 0;
    for b in 0..buckets {
        let total: u64 = counts.iter().map(|row| row[b]).sum();
        totals[b] = total;
        if total == 0 {
            continue;
        }
        // The rank whose output part holds the bucket's start (`start` < the vector's length,
        // so one does).
        while d + 1 < ranks && bounds[d + 1] <= start {
            d += 1;
        }
        owner[b] = Some(d);
        for s in 0..sources {
            segments[s][d] += counts[s][b];
        }
        start += total;
    }
    let mut starts = vec![0u64; ranks + 1];
    for d in 0..ranks {
        starts[d + 1] = starts[d] + segments.iter().map(|row| row[d]).sum::<u64>();
    }
    let before = counts
        .iter()
        .map(|row| {
            let mut acc = 0;
            let mut out = Vec::with_capacity(buckets + 1);
            out.push(0);
            for &c in row {
                acc += c;
                out.push(acc);
            }
            out
        })
        .collect();
    SplitPlan {
        segments,
        starts,
        bounds,
        before,
        totals,
        owner,
    }
}

/// The bulk exchange's whole plan, as every rank sees it.
#[derive(Clone, Copy)]
struct Split<'a> {
    plan: &'a SplitPlan,
    /// The input's chunks.
    srcs: &'a [(usize, Range<usize>)],
    /// Each rank's groups of buckets.
    groups: &'a [Vec<Range<usize>>],
    /// Where each rank holds its groups.
    held: &'a [Held],
}

/// Where a rank holds the pieces it receives (and later the pieces sorted that do not go
/// straight into its output): piece `i` of `sizes[i]` keys from index `offsets[i]`, in bucket
/// order; `len` indices in all. Piece `i` goes straight into the output where `direct[i]`:
/// its places in the sorted vector lie in the rank's output part, `shift[i]` past a multiple
/// of the window alignment there; the window then starts `shift[i]` keys early in the output
/// and in the held keys, where the previous piece's last `shift[i]` sorted keys are put (so a
/// direct piece with a shift follows a piece of at least that many keys). Each piece starts
/// `shift[i]` (0 for the others) past a multiple of the alignment, after a gap of as many
/// free places.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Held {
    offsets: Vec<usize>,
    sizes: Vec<usize>,
    direct: Vec<bool>,
    shift: Vec<usize>,
    len: usize,
}

impl Held {
    /// Rank `d`'s pieces `groups` of `plan`, windows aligned to `align` elements; without
    /// `windows` (a device without [`Device::window`]), a piece goes straight into the output
    /// only where it is the whole output part.
    fn new(
        plan: &SplitPlan,
        d: usize,
        groups: &[Range<usize>],
        align: usize,
        windows: bool,
    ) -> Held {
        let align = align.max(1);
        let sizes: Vec<usize> = groups
            .iter()
            .map(|g| plan.totals[g.clone()].iter().sum::<u64>() as usize)
            .collect();
        let (mut direct, mut shift) = (Vec::new(), Vec::new());
        let mut place = plan.starts[d];
        for (i, &n) in sizes.iter().enumerate() {
            let (lo, hi) = (place, place + n as u64);
            place = hi;
            let inside = lo >= plan.bounds[d] && hi <= plan.bounds[d + 1];
            let phase = if inside {
                ((lo - plan.bounds[d]) % align as u64) as usize
            } else {
                0
            };
            let ok = if windows {
                inside && (phase == 0 || (i > 0 && sizes[i - 1] >= phase))
            } else {
                lo == plan.bounds[d] && hi == plan.bounds[d + 1]
            };
            direct.push(ok);
            shift.push(if ok { phase } else { 0 });
        }
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut len = 0usize;
        for (&n, &sh) in sizes.iter().zip(&shift) {
            let at = len.next_multiple_of(align) + sh;
            offsets.push(at);
            len = at + n;
        }
        Held {
            offsets,
            sizes,
            direct,
            shift,
            len,
        }
    }

    /// `runs` from places of the senders' ranges to places where the senders hold them, each
    /// run cut where a sender's pieces end (both sides cut alike, so the pieces pair up);
    /// none from a piece sorted straight into the output (`direct`: already in place).
    fn split_runs(runs: Vec<Run>, held: &[Held]) -> Vec<Run> {
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            let h = &held[run.from];
            let mut place = 0;
            for (i, (&at, &n)) in h.offsets.iter().zip(&h.sizes).enumerate() {
                let lo = run.src.max(place);
                let hi = (run.src + run.count).min(place + n);
                if lo < hi && !h.direct[i] {
                    out.push(Run {
                        src: at + (lo - place),
                        dst: run.dst + (lo - run.src),
                        count: hi - lo,
                        ..run
                    });
                }
                place += n;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::Rng;

    /// The pass plans on the host, with a stable sort by digit for each rank's local sorts:
    /// the distributed LSD sort must give the one stable sort for any layouts.
    fn simulate(keys: &[u32], in_lens: &[usize], out_lens: &[usize], digit_bits: u32) -> Vec<u32> {
        let mut parts: Vec<Vec<(u32, usize)>> = Vec::new();
        let mut at = 0;
        for &n in in_lens {
            parts.push(keys[at..at + n].iter().copied().zip(at..at + n).collect());
            at += n;
        }
        let radix = 1usize << digit_bits;
        for shift in (0..32).step_by(digit_bits as usize) {
            let digit = |k: u32| ((k >> shift) as usize) & (radix - 1);
            for p in &mut parts {
                p.sort_by_key(|&(k, _)| digit(k));
            }
            let counts: Vec<Vec<u64>> = parts
                .iter()
                .map(|p| {
                    let mut c = vec![0u64; radix];
                    p.iter().for_each(|&(k, _)| c[digit(k)] += 1);
                    c
                })
                .collect();
            let plan = plan_pass(&counts, out_lens);
            // Where the runs put the keys, against the whole vector sorted stably by the digit.
            let mut next: Vec<Vec<Option<(u32, usize)>>> =
                out_lens.iter().map(|&n| vec![None; n]).collect();
            for run in &plan.runs {
                for i in 0..run.count {
                    let slot = &mut next[run.to][run.dst + i];
                    assert!(slot.is_none(), "place written twice: {run:?}");
                    *slot = Some(parts[run.from][run.src + i]);
                }
            }
            let mut whole: Vec<(u32, usize)> = parts.concat();
            whole.sort_by_key(|&(k, _)| digit(k));
            let placed: Vec<(u32, usize)> = next
                .into_iter()
                .flatten()
                .map(|slot| slot.expect("a place left empty"))
                .collect();
            assert_eq!(placed, whole, "not the vector sorted stably by the digit");
            let mut at = 0;
            parts = out_lens
                .iter()
                .map(|&n| {
                    at += n;
                    placed[at - n..at].to_vec()
                })
                .collect();
        }
        let mut want: Vec<(u32, usize)> = keys.iter().copied().zip(0..).collect();
        want.sort();
        let got: Vec<(u32, usize)> = parts.concat();
        assert_eq!(got, want);
        got.into_iter().map(|(k, _)| k).collect()
    }

    fn layout(rng: &mut Rng, n: usize, ranks: usize) -> Vec<usize> {
        let mut cuts: Vec<usize> = (0..ranks - 1)
            .map(|_| rng.below(n as u64 + 1) as usize)
            .collect();
        cuts.sort();
        let mut lens = Vec::new();
        let mut prev = 0;
        for c in cuts.into_iter().chain([n]) {
            lens.push(c - prev);
            prev = c;
        }
        lens
    }

    #[test]
    fn passes_sort_stably_for_any_layouts() {
        let mut rng = Rng::new(7);
        for ranks in [1, 2, 3, 4, 8] {
            for n in [0, 1, 2, 31, 33, 200] {
                for skew in [0u32, 4, 28] {
                    let keys: Vec<u32> = (0..n).map(|_| (rng.next_u64() as u32) >> skew).collect();
                    let in_lens = layout(&mut rng, n, ranks);
                    let out_lens = layout(&mut rng, n, ranks);
                    simulate(&keys, &in_lens, &out_lens, 8);
                    simulate(&keys, &in_lens, &out_lens, 4);
                }
            }
        }
    }

    /// The bulk exchange's plan on the host, with stable sorts for the ranks' local sorts:
    /// each rank's range starts at a bucket boundary within a bucket of its output part's
    /// start, and the steps give the one stable sort for any layouts. Each rank's part is cut
    /// into chunks of `chunk` keys (the sources), each rank sorts what it receives in groups
    /// of at most `cap` keys, each cut into pieces of about `target` keys, held at multiples of
    /// `align`, the pieces at multiples of `align` in the output sorted straight there;
    /// returns whether the plan's groups fit (else the sort takes the LSD way, and nothing
    /// more is checked).
    fn simulate_split(
        keys: &[u32],
        in_lens: &[usize],
        out_lens: &[usize],
        (chunk, cap, align, target): (usize, usize, usize, u64),
    ) -> bool {
        let ranks = in_lens.len();
        let digit_of = |k: u32, shift: u32| ((k >> shift) & 0xff) as usize;
        let Some(shift) = [24u32, 16, 8, 0].into_iter().find(|&shift| {
            keys.iter()
                .any(|&k| digit_of(k, shift) != digit_of(keys[0], shift))
        }) else {
            return true;
        };
        let digit = |k: u32| digit_of(k, shift);
        let srcs = sources(in_lens, &vec![chunk; ranks]);
        let mut parts: Vec<Vec<(u32, usize)>> = Vec::new();
        let mut firsts = vec![0usize; ranks + 1];
        for r in 0..ranks {
            firsts[r + 1] = firsts[r] + in_lens[r];
        }
        for (q, range) in &srcs {
            let at = firsts[*q];
            let mut part: Vec<(u32, usize)> = (at + range.start..at + range.end)
                .map(|i| (keys[i], i))
                .collect();
            part.sort_by_key(|&(k, _)| digit(k));
            parts.push(part);
        }
        let counts: Vec<Vec<u64>> = parts
            .iter()
            .map(|p| {
                let mut c = vec![0u64; 256];
                p.iter().for_each(|&(k, _)| c[digit(k)] += 1);
                c
            })
            .collect();
        let plan = plan_split(&counts, out_lens);
        let mut want: Vec<(u32, usize)> = keys.iter().copied().zip(0..).collect();
        want.sort();
        // Bucket boundaries of the sorted vector; the largest bucket.
        let mut edges = vec![0u64];
        let mut largest = 0;
        for b in 0..256 {
            let total: u64 = counts.iter().map(|c| c[b]).sum();
            largest = largest.max(total);
            if total > 0 {
                edges.push(edges.last().unwrap() + total);
            }
        }
        for (d, &out_len) in out_lens.iter().enumerate() {
            let (a, p) = (plan.starts[d], plan.bounds[d]);
            assert!(
                edges.contains(&a),
                "rank {d}: {a} inside a bucket: {plan:?}"
            );
            assert!(a >= p, "rank {d} starts before its part: {plan:?}");
            assert!(a < p + largest.max(1), "rank {d} starts too late: {plan:?}");
            if out_len == 0 {
                assert_eq!(plan.received(d), 0, "rank {d} of no output: {plan:?}");
            }
        }
        for (s, p) in parts.iter().enumerate() {
            assert_eq!(plan.segments[s].iter().sum::<u64>(), p.len() as u64);
        }
        let Some(groups) = (0..ranks)
            .map(|d| plan.groups(d, cap))
            .collect::<Option<Vec<_>>>()
        else {
            assert!(
                largest > cap as u64,
                "groups refused below the cap: {plan:?}"
            );
            return false;
        };
        let groups: Vec<Vec<Range<usize>>> = groups
            .iter()
            .enumerate()
            .map(|(d, g)| {
                let pieces = plan.rank_pieces(d, g, target);
                // The pieces cut the groups, none empty.
                let whole: Vec<usize> = pieces.iter().flat_map(Clone::clone).collect();
                let want: Vec<usize> = g.iter().flat_map(Clone::clone).collect();
                assert_eq!(whole, want, "pieces of {g:?}: {pieces:?}");
                for p in &pieces {
                    let n: u64 = plan.totals[p.clone()].iter().sum();
                    assert!(n > 0, "piece {p:?} empty: {pieces:?}");
                }
                pieces
            })
            .collect();
        let held: Vec<Held> = groups
            .iter()
            .enumerate()
            .map(|(d, g)| Held::new(&plan, d, g, align, true))
            .collect();
        let direct: Vec<&[bool]> = held.iter().map(|h| h.direct.as_slice()).collect();
        let mut out: Vec<Vec<Option<(u32, usize)>>> =
            out_lens.iter().map(|&n| vec![None; n]).collect();
        // A place written a second time only with the same element.
        let put = |slot: &mut Option<(u32, usize)>, x: (u32, usize)| {
            assert!(slot.is_none() || *slot == Some(x), "place written twice");
            *slot = Some(x);
        };
        // Steps 4 and 5: each piece's segments in source order, then a stable sort by the
        // key, into the output where it is direct (with the previous piece's last keys before
        // it where it is shifted), else held (scratch 2).
        let mut kept: Vec<Vec<Option<(u32, usize)>>> = Vec::new();
        for d in 0..ranks {
            let h = &held[d];
            let mut slots = vec![None; h.len];
            let mut got_all: Vec<(u32, usize)> = Vec::new();
            for (i, g) in groups[d].iter().enumerate() {
                assert!(h.sizes[i] <= cap, "group over the cap");
                let (at, sh) = (h.offsets[i], h.shift[i]);
                assert_eq!((at - sh) % align, 0, "window start not aligned: {h:?}");
                let end = if i == 0 {
                    0
                } else {
                    h.offsets[i - 1] + h.sizes[i - 1]
                };
                assert!(at - sh >= end, "pieces overlap: {h:?}");
                let mut got = Vec::new();
                for (s, p) in parts.iter().enumerate() {
                    let (at, n) = plan.sub(s, g);
                    got.extend_from_slice(&p[at..at + n]);
                }
                assert_eq!(got.len(), h.sizes[i]);
                let mut window: Vec<(u32, usize)> = got_all[got_all.len() - sh..].to_vec();
                window.extend_from_slice(&got);
                window.sort_by_key(|&(k, _)| k);
                assert_eq!(
                    window[..sh],
                    got_all[got_all.len() - sh..],
                    "shifted keys moved"
                );
                let place = plan.starts[d] as usize + got_all.len();
                if direct[d][i] {
                    let o = place - plan.bounds[d] as usize;
                    assert_eq!((o - sh) % align, 0, "output window not aligned: {h:?}");
                    for (j, &x) in window.iter().enumerate() {
                        put(&mut out[d][o - sh + j], x);
                    }
                } else {
                    assert_eq!(sh, 0);
                    for (j, &x) in window.iter().enumerate() {
                        slots[at + j] = Some(x);
                    }
                }
                got_all.extend_from_slice(&window[sh..]);
            }
            let range = plan.starts[d] as usize..plan.starts[d + 1] as usize;
            assert_eq!(got_all, want[range], "rank {d}'s range: {plan:?}");
            kept.push(slots);
        }
        // Step 6: every output place written, with the sorted vector's element.
        for run in Held::split_runs(plan.rebalance(), &held) {
            for i in 0..run.count {
                let x = kept[run.from][run.src + i].expect("a held place left empty");
                put(&mut out[run.to][run.dst + i], x);
            }
        }
        let got: Vec<(u32, usize)> = out
            .into_iter()
            .flatten()
            .map(|slot| slot.expect("a place left empty"))
            .collect();
        assert_eq!(got, want);
        let moved = plan.rebalance().iter().any(|run| run.from != run.to);
        assert!(
            !plan.balanced() || !moved,
            "a balanced plan moves keys: {plan:?}"
        );
        // Only the pieces that cross a rank's output part's ends go through the rebalancing
        // round, and, where the rank's range begins inside its part, the first piece: at most
        // two a rank (pieces of fewer keys than a window's alignment may need more).
        for (d, h) in held.iter().enumerate() {
            let staged = h.direct.iter().filter(|&&x| !x).count();
            let small = h.sizes.iter().any(|&n| n < align);
            assert!(staged <= 2 || small, "rank {d}: {h:?} {plan:?}");
            if plan.in_place(d) {
                // Every piece but the first straight into the output, unless the piece
                // before it is shorter than the alignment.
                for i in 1..h.sizes.len() {
                    assert!(h.direct[i] || h.sizes[i - 1] < align, "rank {d}: {h:?}");
                }
            }
        }
        true
    }

    #[test]
    fn the_bulk_exchange_sorts_stably_for_any_layouts() {
        let mut rng = Rng::new(11);
        for ranks in [1, 2, 3, 4, 8] {
            for n in [1, 2, 31, 33, 200, 3000] {
                // Uniform, few distinct keys, top digits alike, one bucket holding most keys.
                for kind in 0..4 {
                    let keys: Vec<u32> = (0..n)
                        .map(|i| {
                            let x = rng.next_u64() as u32;
                            match kind {
                                0 => x,
                                1 => (x % 5) << 27 | (x >> 29),
                                2 => 0xab00_0000 | (x >> 8),
                                _ if i % 50 == 7 => x,
                                _ => 0x4200_0000 | (x >> 8),
                            }
                        })
                        .collect();
                    let in_lens = layout(&mut rng, n, ranks);
                    let out_lens = layout(&mut rng, n, ranks);
                    let whole = (usize::MAX, usize::MAX, 1, u64::MAX);
                    assert!(simulate_split(&keys, &in_lens, &out_lens, whole));
                    assert!(simulate_split(&keys, &in_lens, &in_lens, whole));
                    // Pieces of the overlapped exchange: one key, a few, many.
                    for target in [1, 1 + n as u64 / 13, 1 + n as u64 / 3] {
                        let pieces = (usize::MAX, usize::MAX, 1, target);
                        assert!(simulate_split(&keys, &in_lens, &out_lens, pieces));
                        assert!(simulate_split(&keys, &in_lens, &in_lens, pieces));
                        let aligned = (usize::MAX, usize::MAX, 4, target);
                        assert!(simulate_split(&keys, &in_lens, &in_lens, aligned));
                    }
                    // Chunks and groups: small, odd sizes, aligned windows.
                    let chunk = 1 + n / 3;
                    let cap = (n / ranks / 2).max(1);
                    simulate_split(&keys, &in_lens, &out_lens, (chunk, cap, 4, u64::MAX));
                    let target = 1 + n as u64 / 20;
                    simulate_split(&keys, &in_lens, &out_lens, (chunk, cap, 4, target));
                    simulate_split(&keys, &in_lens, &in_lens, (7, cap.max(1 + n / 8), 8, 5));
                }
            }
        }
    }

    #[test]
    fn groups_cut_at_buckets_and_refuse_a_bucket_over_the_cap() {
        // Buckets of 3, 0, 2, 4, 1 keys, all to rank 0.
        let counts = [vec![1, 0, 2, 0, 1], vec![2, 0, 0, 4, 0]];
        let plan = plan_split(&counts, &[10, 0]);
        assert_eq!(plan.groups(0, 10), Some(std::iter::once(0..5).collect()));
        assert_eq!(plan.groups(0, 5), Some(vec![0..3, 3..5]));
        assert_eq!(plan.groups(0, 4), Some(vec![0..2, 2..3, 3..4, 4..5]));
        assert_eq!(plan.groups(0, 3), None);
        assert_eq!(plan.groups(1, 3), Some(vec![]));
        // Source 1's keys of buckets 1..4: after its 2 keys of bucket 0, 4 of them.
        assert_eq!(plan.sub(1, &(1..4)), (2, 4));
        // Pieces of 3, 2 and 5 keys at places 0, 3 and 5 of rank 0's output part: straight
        // into it, the second and third after 3 and 1 keys of the piece before (windows of
        // 4); held at 0, 4 + 3 and 12 + 1.
        let held = Held::new(&plan, 0, &[0..1, 1..3, 3..5], 4, true);
        assert_eq!(held.sizes, vec![3, 2, 5]);
        assert_eq!(held.direct, vec![true; 3]);
        assert_eq!(held.shift, vec![0, 3, 1]);
        assert_eq!(held.offsets, vec![0, 7, 13]);
        assert_eq!(held.len, 18);
        // Windows of 8: the third piece's 5 keys would need 5 before it, its predecessor has
        // 2: held, at an aligned place.
        let held = Held::new(&plan, 0, &[0..1, 1..3, 3..5], 8, true);
        assert_eq!(held.direct, vec![true, true, false]);
        assert_eq!(held.shift, vec![0, 3, 0]);
        assert_eq!(held.offsets, vec![0, 11, 16]);
        // Without windows: only a piece that is the whole output part goes straight there.
        let held = Held::new(&plan, 0, &[0..1, 1..3, 3..5], 4, false);
        assert_eq!(held.direct, vec![false; 3]);
        assert_eq!(held.offsets, vec![0, 4, 8]);
        let held = Held::new(&plan, 0, std::slice::from_ref(&(0..5)), 4, false);
        assert_eq!((held.direct, held.shift), (vec![true], vec![0]));
        let part = plan_split(&counts, &[9, 1]);
        let held = Held::new(&part, 0, std::slice::from_ref(&(0..3)), 4, false);
        assert_eq!(held.direct, vec![false]);
        // A run over places 2..7 of rank 0, its pieces held at 0, 4 and 8: places 2 (piece
        // 0), 3..5 (piece 1), 5..7 (piece 2).
        let held = Held {
            offsets: vec![0, 4, 8],
            sizes: vec![3, 2, 5],
            direct: vec![false; 3],
            shift: vec![0; 3],
            len: 13,
        };
        let run = Run {
            from: 0,
            to: 1,
            src: 2,
            dst: 10,
            count: 5,
        };
        let runs = Held::split_runs(vec![run], std::slice::from_ref(&held));
        let at: Vec<(usize, usize, usize)> = runs.iter().map(|r| (r.src, r.dst, r.count)).collect();
        assert_eq!(at, vec![(2, 10, 1), (4, 11, 2), (8, 13, 2)]);
        // Piece 1 already in place: its part of the run stays.
        let held = Held {
            direct: vec![false, true, false],
            ..held
        };
        let runs = Held::split_runs(vec![run], &[held]);
        let at: Vec<(usize, usize, usize)> = runs.iter().map(|r| (r.src, r.dst, r.count)).collect();
        assert_eq!(at, vec![(2, 10, 1), (8, 13, 2)]);
        // Pieces: buckets of 3, 0, 2, 4, 1 keys cut at 3 or more keys while keys remain.
        let none = |_| false;
        let all = std::slice::from_ref(&(0..5));
        assert_eq!(plan.pieces(all, |_| 3, none), vec![0..1, 1..4, 4..5]);
        assert_eq!(plan.pieces(all, |_| 5, none), vec![0..3, 3..5]);
        assert_eq!(plan.pieces(all, |_| 100, none), vec![0..5]);
        let pieces = plan.pieces(&[0..2, 2..5], |_| 1, none);
        assert_eq!(pieces, vec![0..2, 2..3, 3..4, 4..5]);
        // Growing targets (2, then 4, ...), and buckets 2 and 4 alone.
        assert_eq!(plan.pieces(all, |j| 2 << j, none), vec![0..1, 1..4, 4..5]);
        let alone = |b| b == 2 || b == 4;
        assert_eq!(
            plan.pieces(all, |_| 100, alone),
            vec![0..2, 2..3, 3..4, 4..5]
        );
        assert_eq!(
            plan.pieces(all, |_| 1, |b| b == 0),
            vec![0..1, 1..3, 3..4, 4..5]
        );
    }

    #[test]
    fn buckets_go_to_the_part_that_holds_their_start() {
        // Buckets of 3, 0, 2, 4 keys over three ranks; output parts of 4, 0 and 5.
        let counts = [vec![1, 0, 2, 0], vec![2, 0, 0, 3], vec![0, 0, 0, 1]];
        let plan = plan_split(&counts, &[4, 0, 5]);
        // Starts 0, 3, 5: buckets 0 and 2 (start 3 < 4) go to rank 0, bucket 3 (start 5) to
        // rank 2; rank 1 has no output part and gets nothing.
        assert_eq!(
            plan.segments,
            vec![vec![3, 0, 0], vec![2, 0, 3], vec![0, 0, 1]]
        );
        assert_eq!(plan.starts, vec![0, 5, 5, 9]);
        assert_eq!(plan.bounds, vec![0, 4, 4, 9]);
        assert!(!plan.balanced() && !plan.in_place(0) && plan.in_place(1));
        // Rank 0's fifth key goes to rank 2's first place.
        let run = |from, to, src, dst, count| Run {
            from,
            to,
            src,
            dst,
            count,
        };
        assert_eq!(
            plan.rebalance(),
            vec![run(0, 0, 0, 0, 4), run(0, 2, 4, 0, 1), run(2, 2, 0, 1, 4)]
        );
        // One bucket holding nearly everything goes whole to one rank.
        let plan = plan_split(&[vec![9, 1], vec![10, 0]], &[10, 10]);
        assert_eq!(plan.starts, vec![0, 19, 20]);
    }

    #[test]
    fn each_digit_value_goes_straight_to_its_place() {
        // Two ranks, two buckets: rank 0 holds [0, 1, 1], rank 1 holds [0, 1].
        let plan = plan_pass(&[vec![1, 2], vec![1, 1]], &[2, 3]);
        // Sorted: 0 (r0), 0 (r1), 1, 1 (r0), 1 (r1): rank 0's 0 goes to rank 0's place 0, its
        // 1s to rank 1's places 0 and 1; rank 1's 0 to rank 0's place 1, its 1 to rank 1's 2.
        let run = |from, to, src, dst, count| Run {
            from,
            to,
            src,
            dst,
            count,
        };
        assert_eq!(
            plan.runs,
            vec![
                run(0, 0, 0, 0, 1),
                run(0, 1, 1, 0, 2),
                run(1, 0, 0, 1, 1),
                run(1, 1, 1, 2, 1)
            ]
        );
        // A bucket cut by the layout: three keys of one value on rank 0, parts of 1 and 2.
        let plan = plan_pass(&[vec![0, 3], vec![0, 0]], &[1, 2]);
        assert_eq!(plan.runs, vec![run(0, 0, 0, 0, 1), run(0, 1, 1, 0, 2)]);
    }
}
