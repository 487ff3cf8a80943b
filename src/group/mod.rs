//! Past one device: reduce, scan and sort a vector sharded over the devices of a group, one
//! rank per device, each rank holding a contiguous part (its *shard*) in global order.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::group::{self, Group, GroupVec, GroupSorter};
//! use xwarp::reduce::ReduceOp;
//! use xwarp::sort::{all_bits, SortOrder};
//! let dev = xwarp::backend::open_default()?;
//! // Four ranks sharing one device (the in-process exchange); `Group::nccl` takes the GPUs of a
//! // host (feature `nccl`).
//! let group = Group::in_process(vec![&*dev; 4])?;
//! let data: Vec<f32> = (0..1_000_003).map(|i| (i as f32).sin()).collect();
//! let lens = group::split_even(data.len(), group.ranks());
//! let x = GroupVec::from_slice(&group, &data, &lens)?;
//! let total = group::reduce_host(&group, ReduceOp::Sum, &x)?; // the one-device bits
//! let mut sorted = GroupVec::<f32>::alloc(&group, &lens)?;
//! GroupSorter::new(&group).sort_keys(&group, &x, &mut sorted, SortOrder::Ascending, all_bits::<f32>())?;
//! # let _ = total;
//! # Ok(())
//! # }
//! ```
//!
//! # The group
//! A [`Group`] is a set of ranks, rank `r` on device `r`, and an [`Exchange`] that moves data
//! between them: [`InProcess`] (any xwarp devices, even one device shared by every rank; a
//! transfer is a copy) or, with the feature `nccl`, NCCL between the GPUs of one host
//! (`Group::nccl`). Each operation runs every rank on a thread of its own (rank 0 on the
//! caller's, the others on threads the group keeps), each calling the library's device
//! algorithms ([`crate::reduce`], [`crate::scan`], [`crate::sort`]) on its shard; the exchange
//! rounds in between are collective. A thread that waits (for the next operation, or for the
//! other ranks at a meeting) polls for [`Group::set_spin`] (1 ms by default), yielding its core
//! between polls, before it sleeps: a call that follows within that time starts without
//! waking a thread. Every argument is checked before any
//! rank starts, so a refused call leaves every output untouched; if a rank fails while running
//! (a driver error), every other rank stops at its next meeting point and the call returns the
//! failing rank's error.
//!
//! # Sharded vectors
//! A [`GroupVec`] holds one [`DeviceVec`] per rank, on that rank's device, in global order: the
//! vector is shard 0, then shard 1, ... Shards may have any lengths, zero included
//! ([`GroupVec::lens`]). [`split_even`] gives the layout that keeps floats bit-identical to one
//! device (below): shards of whole [`TILE`]s but the last, as even as that allows.
//!
//! # Operations and their float order
//! - [`reduce`]: every rank cuts its shard into tiles of [`TILE`] = 4096 elements from the
//!   shard's start and computes the tiles' totals (the first level of
//!   [`crate::reduce::device_reduce`], [`crate::reduce`]'s order); the totals of all ranks, in
//!   rank order, go to every rank, which reduces them with `device_reduce` (a single total is
//!   the result itself; none gives the identity). Every rank gets the same total, an all-reduce.
//!   **When every shard boundary is a multiple of [`TILE`]** (as [`split_even`] makes them),
//!   the tiles are the one-device tiles and the result is the one-device
//!   `device_reduce` of the whole vector, bit for bit, floats included. Other boundaries cut a
//!   tile in two: the result is then this group order's (the CPU reference
//!   [`crate::cpu::group::reduce`]), the same value for integers and for min and max
//!   unless every element is NaN.
//! - [`scan`] (inclusive or exclusive): reduce, then scan. Each rank reduces its shard
//!   (`device_reduce`, `T[r]`); the totals go to the later ranks; rank `r`'s carry `E[r]` is
//!   element `r` of the exclusive `device_scan` of `T` (for up to 16 ranks the left fold
//!   `op(… op(op(id, T[0]), T[1]) …, T[r-1])`). Then each rank runs one `device_scan` over a
//!   leading tile of identities and `E[r]` (the scan's tile: [`TILE`] elements for floats,
//!   the one-device scan's choice for integers), followed by its shard: the tile's total
//!   is exactly `E[r]`, so the scan's look-back carries `E[r]` into the shard's first tile and
//!   folds the shard's tile totals onto it, in [`crate::scan`]'s documented order (rank 0 needs
//!   no leading tile). The CPU reference is [`crate::cpu::group::scan`]. Integer results equal
//!   the one-device scan (their operators are associative); float min and max too, but where
//!   every element of a prefix is NaN the result is a NaN of possibly another payload. **Float
//!   sums follow the group order and are not the one-device bits**: those come from a left fold
//!   of every tile total before a tile, one tile after another across all shards, which no
//!   rank can start before every earlier rank has finished.
//! - [`GroupSorter`]: stable sort of keys, or of key-value pairs, by a bit range, ascending or
//!   descending, exactly as [`crate::sort`] orders them; the result is sharded in global order
//!   by the output's layout, and equals the one-device sort (a stable sort has one result).
//!   One digit pass, one bulk exchange, one local sort and a small rebalancing exchange; a
//!   distributed LSD radix sort for keys too skewed for that (see [`GroupSorter`]).
//!
//! # Limits
//! - The sort takes shards of any length its devices' memory holds: where a shard, or the
//!   range a rank receives, exceeds what one of its device's sorts takes
//!   ([`crate::sort::max_len`], about 2^30 keys), the rank works through it in chunks
//!   ([`GroupSorter`]). Keys so skewed that one value of their top digit outgrows that too
//!   are sorted by the distributed LSD way, chunk by chunk.
//! - An operation holds the group's lock: operations on one group run one after another.
//! - While an operation runs, nothing else may record ([`Device::record`]) on the group's
//!   devices.

mod exchange;
#[cfg(feature = "nccl")]
mod nccl;
mod reduce;
mod scan;
mod sort;

pub use crate::spec::reduce::TILE;
pub use exchange::{Exchange, InProcess, Piece, Rendezvous, DEFAULT_SPIN};
#[cfg(feature = "nccl")]
pub use nccl::NcclExchange;
pub use reduce::{reduce, reduce_host};
pub use scan::scan;
#[doc(hidden)]
pub use sort::SortPath;
pub use sort::{GroupSorter, CHUNK_UNIT, PIPELINE_MIN_KEYS, PIPELINE_PIECES};

use crate::device::{Device, DeviceVec};
use crate::element::Element;
use crate::error::{Error, Result};
use exchange::lock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A set of ranks, one per device, and the exchange between them (see the module docs).
pub struct Group<'d> {
    exchange: Box<dyn Exchange + 'd>,
    /// Held by a running operation: collectives of two operations never interleave.
    running: Mutex<()>,
    /// The steps' times of the operations since [`Group::set_step_timing`] turned it on.
    steps: Mutex<Option<Vec<StepTime>>>,
    /// A thread for each rank but rank 0 (which runs on the caller's), made by the first
    /// operation and kept: starting threads per call cost 0.1–0.4 ms (NOTES.md version 24).
    threads: std::sync::OnceLock<rayon_core::ThreadPool>,
    /// Bumped when an operation starts: ends the rank threads' polling for one
    /// ([`Group::set_spin`]).
    epoch: Arc<AtomicU64>,
}

/// When one rank finished one step of a group operation (see [`Group::set_step_timing`]).
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq)]
pub struct StepTime {
    /// The rank.
    pub rank: usize,
    /// The step, in words (`"start"`: the rank's thread began the operation).
    pub step: &'static str,
    /// Seconds from the operation's start to the step's end, the rank's device idle.
    pub at: f64,
}

impl std::fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group")
            .field("ranks", &self.ranks())
            .field("exchange", &self.exchange.name())
            .finish()
    }
}

impl<'d> Group<'d> {
    /// A group of `devices.len()` ranks (at least one), rank `r` on `devices[r]`, with the
    /// in-process exchange ([`InProcess`]). A device may appear more than once: ranks then share
    /// it.
    pub fn in_process(devices: Vec<&'d dyn Device>) -> Result<Self> {
        Ok(Self::with_exchange(Box::new(InProcess::new(devices)?)))
    }

    /// A group of `devices.len()` CUDA devices of this host (distinct GPUs), exchanging through
    /// NCCL ([`NcclExchange`]).
    ///
    /// Errors: [`Error::MissingFeature`] where NCCL (`libnccl.so`) cannot be loaded,
    /// [`Error::InvalidParameter`] for no device or a GPU listed twice, [`Error::Cuda`] if NCCL
    /// refuses the communicators.
    #[cfg(feature = "nccl")]
    pub fn nccl(devices: Vec<Arc<crate::cuda::CudaDevice>>) -> Result<Group<'static>> {
        Ok(Group::with_exchange(Box::new(NcclExchange::new(devices)?)))
    }

    /// A group over any [`Exchange`].
    pub fn with_exchange(exchange: Box<dyn Exchange + 'd>) -> Self {
        Group {
            exchange,
            running: Mutex::new(()),
            steps: Mutex::new(None),
            threads: std::sync::OnceLock::new(),
            epoch: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How long the ranks' threads poll before they sleep, yielding their cores between polls:
    /// after an operation, for the next one; within one, for each other at the host-side
    /// meetings ([`Rendezvous`]). Default [`DEFAULT_SPIN`] (1 ms); zero: they sleep at once.
    /// Waking a sleeping thread took 0.05–0.3 ms on the hosts measured, which a call that
    /// follows within the time saves (NOTES.md version 38).
    pub fn set_spin(&self, spin: Duration) {
        self.exchange.rendezvous().set_spin(spin);
    }

    /// The time [`Group::set_spin`] set.
    pub fn spin(&self) -> Duration {
        self.exchange.rendezvous().spin()
    }

    /// Turns step timing on or off (for the bench; not part of the API). While on, each rank
    /// of an operation waits for its device at the end of each step and records when
    /// ([`StepTime`]): the waits serialize what the steps would overlap, so the operation
    /// takes at least as long as without. Turning it on clears the records.
    #[doc(hidden)]
    pub fn set_step_timing(&self, on: bool) {
        *lock(&self.steps) = on.then(Vec::new);
    }

    /// The step times recorded since step timing was turned on, in the order recorded; empty
    /// while it is off.
    #[doc(hidden)]
    pub fn take_step_times(&self) -> Vec<StepTime> {
        lock(&self.steps)
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.exchange.ranks()
    }

    /// Rank `rank`'s device.
    ///
    /// # Panics
    /// If `rank >= self.ranks()`.
    pub fn device(&self, rank: usize) -> &dyn Device {
        self.exchange.device(rank)
    }

    /// The exchange, in words.
    pub fn exchange_name(&self) -> String {
        self.exchange.name()
    }

    /// Waits until every rank's device has finished its queued work.
    pub fn synchronize(&self) -> Result<()> {
        (0..self.ranks()).try_for_each(|r| self.device(r).synchronize())
    }

    /// The group's threads, one for each rank but the first, made on first use.
    fn threads(&self) -> Result<&rayon_core::ThreadPool> {
        if let Some(pool) = self.threads.get() {
            return Ok(pool);
        }
        let pool = rayon_core::ThreadPoolBuilder::new()
            .num_threads(self.ranks().saturating_sub(1).max(1))
            .thread_name(|i| format!("xwarp-group-{i}"))
            .build()
            .map_err(|e| Error::MissingFeature {
                device: format!("the group of {} ranks", self.ranks()),
                missing: format!("a thread per rank: {e}"),
            })?;
        Ok(self.threads.get_or_init(|| pool))
    }

    /// Runs `body` once per rank, rank 0 on the calling thread and each other on a thread of
    /// the group's, and returns their results in rank order, or the error of the first rank
    /// that failed.
    fn run<R: Send>(&self, body: impl Fn(Rank<'_>) -> Result<R> + Sync) -> Result<Vec<R>> {
        let _running = lock(&self.running);
        let threads = self.threads()?;
        // Ends the threads' polling after the previous operation: they take this one's ranks.
        self.epoch.fetch_add(1, Ordering::AcqRel);
        let ex = &*self.exchange;
        let start = Instant::now();
        let timing = lock(&self.steps).is_some();
        let steps = timing.then_some(&self.steps);
        ex.begin();
        let rv = ex.rendezvous();
        let one = |rank: usize| {
            // Wakes the other ranks if this one panics, so that they return instead of waiting.
            struct FailOnUnwind<'a>(&'a Rendezvous, usize);
            impl Drop for FailOnUnwind<'_> {
                fn drop(&mut self) {
                    if std::thread::panicking() {
                        self.0.fail(self.1);
                    }
                }
            }
            let _guard = FailOnUnwind(rv, rank);
            let me = Rank {
                rank,
                ex,
                start,
                steps,
            };
            let out = me.step("start").and_then(|()| body(me));
            if out.is_err() {
                rv.fail(rank);
            }
            out
        };
        // Rank 0 runs on the calling thread, every other rank on a thread of the pool (one per
        // rank: a rank waiting at a meeting never holds up another's start). The caller polls
        // for the others' end before rayon's wait, which sleeps. A panic comes back after
        // every rank has returned.
        let spin = self.spin();
        let n = self.ranks();
        let slots: Vec<Mutex<Option<Result<R>>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let done = AtomicUsize::new(0);
        let run_rank = |r: usize| {
            let out = one(r);
            *lock(&slots[r]) = Some(out);
            done.fetch_add(1, Ordering::Release);
        };
        threads.in_place_scope(|scope| {
            for r in 1..n {
                let run_rank = &run_rank;
                scope.spawn(move |_| run_rank(r));
            }
            run_rank(0);
            exchange::poll(spin, || done.load(Ordering::Acquire) == n);
        });
        // The pool's threads poll for the next operation before they sleep.
        if !spin.is_zero() {
            let epoch = self.epoch.clone();
            let seen = epoch.load(Ordering::Acquire);
            threads.spawn_broadcast(move |_| {
                exchange::poll(spin, || epoch.load(Ordering::Acquire) != seen);
            });
        }
        let results = slots.into_iter().map(|slot| {
            slot.into_inner()
                .unwrap_or_else(PoisonError::into_inner)
                // Unreachable: the scope returns after every rank has run.
                .unwrap_or_else(|| Err(Error::invalid("rank", "not run", "every rank run")))
        });
        // The failing rank's error; the others' only say that it failed.
        let origin = rv.failed();
        let mut outputs = Vec::with_capacity(n);
        let mut error = None;
        for (rank, result) in results.enumerate() {
            match result {
                Ok(out) => outputs.push(out),
                Err(e) if error.is_none() || origin == Some(rank) => error = Some(e),
                Err(_) => {}
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(outputs),
        }
    }
}

/// One rank's view inside an operation.
#[derive(Clone, Copy)]
struct Rank<'a> {
    rank: usize,
    ex: &'a (dyn Exchange + 'a),
    /// When the operation started.
    start: Instant,
    /// Where step times go, while step timing is on.
    steps: Option<&'a Mutex<Option<Vec<StepTime>>>>,
}

impl Rank<'_> {
    fn dev(&self) -> &dyn Device {
        self.ex.device(self.rank)
    }

    /// Ends step `step` (with step timing on: waits for the device, then records the time).
    fn step(&self, step: &'static str) -> Result<()> {
        let Some(steps) = self.steps else {
            return Ok(());
        };
        self.dev().synchronize()?;
        let at = self.start.elapsed().as_secs_f64();
        if let Some(v) = lock(steps).as_mut() {
            v.push(StepTime {
                rank: self.rank,
                step,
                at,
            });
        }
        Ok(())
    }
}

/// A vector sharded over a group's ranks: shard `r` on rank `r`'s device, the shards in global
/// order (see the module docs).
pub struct GroupVec<T: Element> {
    shards: Vec<DeviceVec<T>>,
}

impl<T: Element> std::fmt::Debug for GroupVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupVec")
            .field("elem", &T::KIND)
            .field("lens", &self.lens())
            .finish()
    }
}

impl<T: Element> GroupVec<T> {
    /// Allocates shards of lengths `lens` (one per rank; contents undefined).
    pub fn alloc(group: &Group<'_>, lens: &[usize]) -> Result<Self> {
        check_layout(group, lens)?;
        let shards = lens
            .iter()
            .enumerate()
            .map(|(r, &len)| DeviceVec::alloc(group.device(r), len))
            .collect::<Result<_>>()?;
        Ok(GroupVec { shards })
    }

    /// Uploads `data` in shards of lengths `lens` (which must add up to `data.len()`).
    pub fn from_slice(group: &Group<'_>, data: &[T], lens: &[usize]) -> Result<Self> {
        check_layout(group, lens)?;
        let total: usize = lens.iter().sum();
        if total != data.len() {
            return Err(Error::LengthMismatch {
                name: "lens",
                expected: data.len() as u64,
                actual: total as u64,
            });
        }
        let mut start = 0;
        let mut shards = Vec::with_capacity(lens.len());
        for (r, &len) in lens.iter().enumerate() {
            shards.push(DeviceVec::from_slice(
                group.device(r),
                &data[start..start + len],
            )?);
            start += len;
        }
        Ok(GroupVec { shards })
    }

    /// A group vector of existing buffers: `shards[r]` must belong to rank `r`'s device.
    pub fn from_shards(group: &Group<'_>, shards: Vec<DeviceVec<T>>) -> Result<Self> {
        let v = GroupVec { shards };
        v.check_on(group, "shards")?;
        Ok(v)
    }

    /// The shards, in rank order.
    pub fn into_shards(self) -> Vec<DeviceVec<T>> {
        self.shards
    }

    /// Rank `rank`'s shard.
    ///
    /// # Panics
    /// If `rank` is not a rank of the vector.
    pub fn shard(&self, rank: usize) -> &DeviceVec<T> {
        &self.shards[rank]
    }

    /// Rank `rank`'s shard, to write.
    ///
    /// # Panics
    /// If `rank` is not a rank of the vector.
    pub fn shard_mut(&mut self, rank: usize) -> &mut DeviceVec<T> {
        &mut self.shards[rank]
    }

    /// The shards' lengths, in rank order.
    pub fn lens(&self) -> Vec<usize> {
        self.shards.iter().map(DeviceVec::len).collect()
    }

    /// The whole vector's length.
    pub fn len(&self) -> usize {
        self.shards.iter().map(DeviceVec::len).sum()
    }

    /// Whether the whole vector is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Downloads the whole vector, shard after shard (waits for each rank's queued work).
    pub fn to_vec(&self, group: &Group<'_>) -> Result<Vec<T>> {
        self.check_on(group, "vector")?;
        let mut out = Vec::with_capacity(self.len());
        for (r, shard) in self.shards.iter().enumerate() {
            out.extend(shard.to_vec(group.device(r))?);
        }
        Ok(out)
    }

    /// Fills every shard with `value`.
    pub fn fill(&mut self, group: &Group<'_>, value: T) -> Result<()> {
        self.check_on(group, "vector")?;
        for (r, shard) in self.shards.iter_mut().enumerate() {
            shard.fill(group.device(r), value)?;
        }
        Ok(())
    }

    /// Checks that the vector has one shard per rank of `group`, each on its rank's device.
    fn check_on(&self, group: &Group<'_>, name: &'static str) -> Result<()> {
        if self.shards.len() != group.ranks() {
            return Err(Error::LengthMismatch {
                name,
                expected: group.ranks() as u64,
                actual: self.shards.len() as u64,
            });
        }
        for (r, shard) in self.shards.iter().enumerate() {
            let dev = group.device(r);
            if shard.raw().device() != dev.id() {
                return Err(Error::ForeignBuffer {
                    buffer: format!("{name}: shard {r}: {:?}", shard.raw()),
                    device: format!("rank {r}: {}", dev.info().name),
                });
            }
        }
        Ok(())
    }
}

/// A second typed handle of `v`'s buffer, for the calls that take their output as `&mut`
/// (each rank writes only its own shard).
fn view<T: Element>(v: &DeviceVec<T>) -> Result<DeviceVec<T>> {
    DeviceVec::from_raw(v.raw().clone(), v.len())
}

/// Checks that `lens` has one length per rank.
fn check_layout(group: &Group<'_>, lens: &[usize]) -> Result<()> {
    if lens.len() != group.ranks() {
        return Err(Error::LengthMismatch {
            name: "lens",
            expected: group.ranks() as u64,
            actual: lens.len() as u64,
        });
    }
    Ok(())
}

/// Fails when an output shard shares its buffer with an input shard of the same rank.
fn check_distinct<A: Element, B: Element>(
    output: (&'static str, &GroupVec<A>),
    inputs: &[(&'static str, &GroupVec<B>)],
) -> Result<()> {
    for (r, out) in output.1.shards.iter().enumerate() {
        for &(name, input) in inputs {
            let same = Arc::ptr_eq(&out.raw().keep_alive(), &input.shards[r].raw().keep_alive());
            if same {
                return Err(Error::invalid(
                    output.0,
                    format!("shard {r} in the buffer of {name}"),
                    "buffers that no input of the call uses",
                ));
            }
        }
    }
    Ok(())
}

/// The layout of `n` elements over `ranks` ranks that keeps floats bit-identical to one
/// device: every shard but the last a whole number of [`TILE`]s, the tiles spread as evenly as
/// possible (earlier ranks take the odd ones), the last rank the remainder. `ranks` must be at
/// least 1 (0 gives an empty layout).
pub fn split_even(n: usize, ranks: usize) -> Vec<usize> {
    if ranks == 0 {
        return Vec::new();
    }
    let tiles = n.div_ceil(TILE);
    let mut lens: Vec<usize> = (0..ranks)
        .map(|r| (tiles / ranks + usize::from(r < tiles % ranks)) * TILE)
        .collect();
    // The last tile may be partial: take what is missing from the last non-empty shard.
    let excess = tiles * TILE - n;
    if let Some(last) = lens.iter_mut().rev().find(|l| **l > 0) {
        *last -= excess;
    }
    lens
}
