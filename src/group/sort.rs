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
/// 4. One exchange round: each rank sends each segment to its rank; a rank receives the
///    segments in source rank order. Keys equal in the bit range have the same bucket, so
///    they arrive in their global input order.
/// 5. Each rank sorts what it received stably by the bits up to `T`'s (one [`Sorter`] call;
///    the digits above are alike): it holds the sorted vector's places `A[d] .. A[d + 1]`.
/// 6. A second exchange round moves them to the output layout (each place to the rank whose
///    output part holds it); a rank whose range is its output part sorts straight into its
///    output in step 5, and the round is skipped when that holds for every rank.
///
/// Every rank decides the same from the same counts; the result is the one stable sort of the
/// whole vector, so it equals one device's [`Sorter`] result. Cost beyond one device's sort of
/// the same keys: one one-digit sort and two exchange rounds, the first moving (nearly) the
/// whole vector once, the second only the keys of the buckets that straddle the output's
/// boundaries (a bucket's worth between neighbours for keys spread over `T`'s values).
///
/// # Fallback: a distributed LSD radix sort
/// Where a rank would receive more keys in step 4 than twice the larger of its input and
/// output shards, or than one device sorts ([`crate::sort::max_len`]) — skewed keys, with most
/// of them in one bucket of `T` — every rank takes a distributed LSD radix sort instead:
/// - per active digit, lowest first: every rank sorts its part stably by the digit (a
///   one-digit [`Sorter`] call), and the digit's counts of every rank give each key its place
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

/// One rank's storage: its sorter and two key and value buffers between passes.
struct Storage<K: Element> {
    sorter: Sorter<K>,
    keys: [Option<RawBuffer>; 2],
    values: [Option<RawBuffer>; 2],
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
            ranks: (0..group.ranks())
                .map(|_| {
                    Mutex::new(Storage {
                        sorter: Sorter::with_tuning(tuning),
                        keys: [None, None],
                        values: [None, None],
                    })
                })
                .collect(),
            path: None,
        }
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
    /// Errors, all before anything runs: [`Error::InvalidParameter`] for a bad bit range, a
    /// shard longer than one device sorts, an output sharing an input's buffer, or a group of
    /// another size than the sorter's; [`Error::LengthMismatch`] for outputs of another total
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
        let mut limits = Vec::with_capacity(group.ranks());
        for r in 0..group.ranks() {
            let info = group.device(r).info();
            single::check_device(info)?;
            let plan = TilePlan::new(info, &self.tuning, K::KIND.size(), value_bytes)?;
            let limit = single::max_len::<K>(info, value_bytes, plan.tile());
            let most = in_lens[r].max(out_lens[r]);
            if most > limit {
                return Err(Error::invalid(
                    "keys_in",
                    format!("a shard of {most} keys on rank {r}"),
                    format!(
                        "at most {limit} keys of {} per shard on `{}`",
                        K::KIND,
                        info.name
                    ),
                ));
            }
            limits.push(limit);
        }
        let values = values.map(|(vin, vout)| (vin, &*vout));
        let job = Job {
            keys_in,
            keys_out: &*keys_out,
            values,
            order,
            bits,
            in_lens,
            out_lens,
            limits,
        };
        self.path = None;
        if group.ranks() == 1 {
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
    /// The most keys each rank's device sorts (with the call's values).
    limits: Vec<usize>,
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

    /// Sorts rank `r`'s `len` keys (and values) at `from` stably by `bits` into `to`.
    #[allow(clippy::too_many_arguments)]
    fn sort_digit(
        &self,
        dev: &dyn Device,
        st: &mut Storage<K>,
        r: usize,
        from: At,
        to: At,
        len: usize,
        bits: Range<u32>,
    ) -> Result<()> {
        let (keys_in, values_in) = self.at(st, r, from, len)?;
        let (mut keys_out, values_out) = self.at(st, r, to, len)?;
        match (values_in, values_out) {
            (Some(vin), Some(mut vout)) => st.sorter.sort_pairs(
                dev,
                &keys_in,
                &mut keys_out,
                &vin,
                &mut vout,
                self.order,
                bits,
            ),
            _ => st
                .sorter
                .sort_keys(dev, &keys_in, &mut keys_out, self.order, bits),
        }
    }

    /// One rank of a group of two or more: the counts, then the way every rank takes.
    fn rank(&self, rank: Rank<'_>, st: &mut Storage<K>) -> Result<SortPath> {
        let (r, dev) = (rank.rank, rank.dev());
        let rv = rank.ex.rendezvous();
        let radix = RADIX as usize;
        let digits: Vec<Range<u32>> = (self.bits.start..self.bits.end)
            .step_by(RADIX_BITS as usize)
            .map(|s| s..(s + RADIX_BITS).min(self.bits.end))
            .collect();
        // 1. Every digit's counts on every rank.
        let n_in = self.in_lens[r];
        let mut mine = vec![0u64; digits.len() * radix];
        if n_in > 0 {
            st.sorter
                .count_digits(dev, self.keys_in.shard(r), self.order, self.bits.clone())?;
            for d in 0..digits.len() {
                let counts = st.sorter.digit_counts(dev, d)?;
                for (m, c) in mine[d * radix..].iter_mut().zip(counts) {
                    *m = u64::from(c);
                }
            }
        }
        let table = rv.all_gather(r, &mine)?;
        let of_digit = |d: usize| -> Vec<Vec<u64>> {
            table
                .iter()
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
        let fits = (0..plan.ranks()).all(|d| {
            let most = self.in_lens[d].max(self.out_lens[d]) as u64;
            let m = plan.received(d);
            m <= self.limits[d] as u64 && m <= 2 * most
        });
        if fits {
            let bits = self.bits.start..digits[top].end;
            self.one_exchange(rank, st, &plan, digits[top].clone(), bits)?;
            Ok(SortPath::OneExchange)
        } else {
            self.lsd(rank, st, &digits, &active, &of_digit(active[0]))?;
            Ok(SortPath::Lsd)
        }
    }

    /// Steps 3 to 6 of the sort (see [`GroupSorter`]) on rank `rank`: stable by the top
    /// active digit `digit` locally, the bulk exchange of `plan`, the local sort by `bits`
    /// (up to the top active digit) and the rebalancing exchange.
    fn one_exchange(
        &self,
        rank: Rank<'_>,
        st: &mut Storage<K>,
        plan: &SplitPlan,
        digit: Range<u32>,
        bits: Range<u32>,
    ) -> Result<()> {
        let (r, dev) = (rank.rank, rank.dev());
        let n_in = self.in_lens[r];
        let m = plan.received(r) as usize;
        // Storage: the shard sorted by the digit, later the received keys sorted (scratch 0);
        // the received keys (scratch 1).
        let sizes = (K::KIND.size() as u64, V::KIND.size() as u64);
        let first = n_in.max(m) as u64;
        scratch(dev, &mut st.keys[0], first * sizes.0)?;
        scratch(dev, &mut st.keys[1], m as u64 * sizes.0)?;
        if self.values.is_some() {
            scratch(dev, &mut st.values[0], first * sizes.1)?;
            scratch(dev, &mut st.values[1], m as u64 * sizes.1)?;
        }
        // 3. Stable by the digit: the keys for each rank are one segment.
        if n_in > 0 {
            self.sort_digit(dev, st, r, At::Input, At::Scratch(0), n_in, digit)?;
        }
        // 4. Each segment to its rank; the received ones in source rank order.
        {
            let (src_keys, src_values) = self.at(st, r, At::Scratch(0), n_in)?;
            let (dst_keys, dst_values) = self.at(st, r, At::Scratch(1), m)?;
            let mut sends = Vec::new();
            let mut recvs = Vec::new();
            let ranks = plan.ranks();
            let mut from = 0;
            for d in 0..ranks {
                let count = plan.segment(r, d) as usize;
                if count > 0 {
                    let values = src_values.as_ref().map(DeviceVec::raw);
                    push_run(
                        &mut sends,
                        d,
                        (src_keys.raw(), values),
                        sizes,
                        (from, count),
                    );
                }
                from += count;
            }
            let mut to = 0;
            for s in 0..ranks {
                let count = plan.segment(s, r) as usize;
                if count > 0 {
                    let values = dst_values.as_ref().map(DeviceVec::raw);
                    push_run(&mut recvs, s, (dst_keys.raw(), values), sizes, (to, count));
                }
                to += count;
            }
            rank.ex.exchange(r, &sends, &recvs)?;
        }
        // 5. The received keys sorted: the sorted vector's places `A[r] .. A[r + 1]`; straight
        // into the output where those are its places.
        let direct = plan.in_place(r);
        let sorted = if direct { At::Output } else { At::Scratch(0) };
        if m > 0 {
            self.sort_digit(dev, st, r, At::Scratch(1), sorted, m, bits)?;
        }
        // 6. Into the output's layout.
        if plan.balanced() {
            return Ok(());
        }
        if direct {
            // Nothing moves to or from this rank: its range is its output part.
            return rank.ex.exchange(r, &[], &[]);
        }
        self.exchange_runs(rank, st, &plan.rebalance(), (sorted, m), At::Output)
    }

    /// The fallback (see [`GroupSorter`]): the distributed LSD radix sort on rank `rank`, over
    /// the `active` digits of `digits`; `first` holds the first active digit's counts of every
    /// rank.
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
        let mut cur_len = self.in_lens[r];
        for (i, &d) in active.iter().enumerate() {
            let last = i + 1 == active.len();
            // Stable by the digit locally, then the digit's counts of every rank.
            let part = match cur {
                At::Scratch(k) => At::Scratch(1 - k),
                _ => At::Scratch(0),
            };
            if cur_len > 0 {
                self.sort_digit(dev, st, r, cur, part, cur_len, digits[d].clone())?;
            }
            let counts = if i == 0 {
                first.to_vec()
            } else {
                let mine: Vec<u64> = if cur_len > 0 {
                    st.sorter
                        .digit_counts(dev, 0)?
                        .into_iter()
                        .map(u64::from)
                        .collect()
                } else {
                    vec![0; radix]
                };
                rv.all_gather(r, &mine)?
            };
            let plan = plan_pass(&counts, &self.out_lens);
            let received = match (last, part) {
                (true, _) => At::Output,
                (false, At::Scratch(k)) => At::Scratch(1 - k),
                (false, _) => At::Scratch(1),
            };
            self.send_pass(rank, st, &plan, part, received)?;
            cur_len = self.out_lens[r];
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
/// rank `s` (each rank's keys sorted stably by the digit), to the layout `out_lens`.
///
/// In the vector sorted stably by the digit, bucket `b` starts at `G[b]` (the keys of every
/// lower bucket), and rank `s`'s keys of bucket `b` follow those of the ranks before it: they
/// take places `P[s][b] ..` consecutively, in their local order. So each (rank, bucket) is one
/// run of places, cut where the output layout's parts begin.
fn plan_pass(counts: &[Vec<u64>], out_lens: &[usize]) -> PassPlan {
    let ranks = counts.len();
    let buckets = counts.first().map_or(0, Vec::len);
    let mut place = vec![vec![0u64; buckets]; ranks];
    let mut at = 0u64;
    for b in 0..buckets {
        for s in 0..ranks {
            place[s][b] = at;
            at += counts[s][b];
        }
    }
    let mut bounds = vec![0u64; ranks + 1];
    for d in 0..ranks {
        bounds[d + 1] = bounds[d] + out_lens[d] as u64;
    }
    let mut runs = Vec::new();
    for s in 0..ranks {
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
/// from the top active digit's counts.
#[derive(Debug, PartialEq, Eq)]
struct SplitPlan {
    /// `segments[s][d]`: the keys of rank `s` (its shard sorted stably by the digit) that go
    /// to rank `d`, one segment each, in rank order of `d`.
    segments: Vec<Vec<u64>>,
    /// `starts[d]`: where rank `d`'s range of the sorted vector starts (`A[d]`; the last
    /// entry is the vector's length).
    starts: Vec<u64>,
    /// The output layout's prefix sums (`P[d]`; the last entry is the vector's length).
    bounds: Vec<u64>,
}

impl SplitPlan {
    fn ranks(&self) -> usize {
        self.segments.len()
    }

    /// The keys that rank `s` sends to rank `d`.
    fn segment(&self, s: usize, d: usize) -> u64 {
        self.segments[s][d]
    }

    /// The keys that rank `d` receives.
    fn received(&self, d: usize) -> u64 {
        self.starts[d + 1] - self.starts[d]
    }

    /// Whether rank `d`'s range of the sorted vector is its part of the output layout (both
    /// empty included): nothing of it moves in the rebalancing round.
    fn in_place(&self, d: usize) -> bool {
        let (a, p) = (&self.starts[d..d + 2], &self.bounds[d..d + 2]);
        a == p || (a[0] == a[1] && p[0] == p[1])
    }

    /// Whether every rank's range is its part of the output (no rebalancing round).
    fn balanced(&self) -> bool {
        (0..self.ranks()).all(|d| self.in_place(d))
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
/// value (bucket) `b` on rank `s`, buckets in the sort's order, to the layout `out_lens`.
///
/// Bucket `b` starts at `G[b]` in the sorted vector (the keys of every lower bucket) and goes
/// to the rank whose output part `P[d] .. P[d + 1]` holds `G[b]`; an empty bucket goes where
/// the bucket before it went. The assignment never decreases with `b`, so each rank's keys
/// for rank `d` are one segment of its shard sorted by the digit, and rank `d` gets the
/// sorted vector's places `A[d] .. A[d + 1]`: `A[d]` is the start of its first bucket, at or
/// after `P[d]` and before the end of the bucket that holds `P[d]`.
fn plan_split(counts: &[Vec<u64>], out_lens: &[usize]) -> SplitPlan {
    let ranks = counts.len();
    let buckets = counts.first().map_or(0, Vec::len);
    let mut bounds = vec![0u64; ranks + 1];
    for d in 0..ranks {
        bounds[d + 1] = bounds[d] + out_lens[d] as u64;
    }
    let mut segments = vec![vec![0u64; ranks]; ranks];
    let mut start = 0u64;
    let mut d = 0;
    for b in 0..buckets {
        let total: u64 = counts.iter().map(|row| row[b]).sum();
        if total == 0 {
            continue;
        }
        // The rank whose output part holds the bucket's start (`start` < the vector's length,
        // so one does).
        while d + 1 < ranks && bounds[d + 1] <= start {
            d += 1;
        }
        for s in 0..ranks {
            segments[s][d] += counts[s][b];
        }
        start += total;
    }
    let mut starts = vec![0u64; ranks + 1];
    for d in 0..ranks {
        starts[d + 1] = starts[d] + segments.iter().map(|row| row[d]).sum::<u64>();
    }
    SplitPlan {
        segments,
        starts,
        bounds,
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
    /// start, and the steps give the one stable sort for any layouts.
    fn simulate_split(keys: &[u32], in_lens: &[usize], out_lens: &[usize]) {
        let ranks = in_lens.len();
        let digit_of = |k: u32, shift: u32| ((k >> shift) & 0xff) as usize;
        let Some(shift) = [24u32, 16, 8, 0].into_iter().find(|&shift| {
            keys.iter()
                .any(|&k| digit_of(k, shift) != digit_of(keys[0], shift))
        }) else {
            return;
        };
        let digit = |k: u32| digit_of(k, shift);
        let mut parts: Vec<Vec<(u32, usize)>> = Vec::new();
        let mut at = 0;
        for &n in in_lens {
            let mut part: Vec<(u32, usize)> =
                keys[at..at + n].iter().copied().zip(at..at + n).collect();
            part.sort_by_key(|&(k, _)| digit(k));
            parts.push(part);
            at += n;
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
        for d in 0..ranks {
            let (a, p) = (plan.starts[d], plan.bounds[d]);
            assert!(
                edges.contains(&a),
                "rank {d}: {a} inside a bucket: {plan:?}"
            );
            assert!(a >= p, "rank {d} starts before its part: {plan:?}");
            assert!(a < p + largest.max(1), "rank {d} starts too late: {plan:?}");
            if out_lens[d] == 0 {
                assert_eq!(plan.received(d), 0, "rank {d} of no output: {plan:?}");
            }
            assert_eq!(
                plan.segments[d].iter().sum::<u64>(),
                in_lens[d] as u64,
                "rank {d} sends its shard: {plan:?}"
            );
        }
        // Steps 4 and 5: segments in source rank order, then a stable sort by the key.
        let mut taken = vec![0usize; ranks];
        let mut held = Vec::new();
        for d in 0..ranks {
            let mut got = Vec::new();
            for s in 0..ranks {
                let n = plan.segment(s, d) as usize;
                got.extend_from_slice(&parts[s][taken[s]..taken[s] + n]);
                taken[s] += n;
            }
            got.sort_by_key(|&(k, _)| k);
            let range = plan.starts[d] as usize..plan.starts[d + 1] as usize;
            assert_eq!(got, want[range], "rank {d}'s range: {plan:?}");
            held.push(got);
        }
        // Step 6: every output place written once, with the sorted vector's element.
        let mut out: Vec<Vec<Option<(u32, usize)>>> =
            out_lens.iter().map(|&n| vec![None; n]).collect();
        for run in plan.rebalance() {
            for i in 0..run.count {
                let slot = &mut out[run.to][run.dst + i];
                assert!(slot.is_none(), "place written twice: {run:?}");
                *slot = Some(held[run.from][run.src + i]);
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
                    simulate_split(&keys, &in_lens, &out_lens);
                    simulate_split(&keys, &in_lens, &in_lens);
                }
            }
        }
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
