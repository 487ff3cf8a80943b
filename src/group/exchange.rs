//! How the ranks of a [`Group`](super::Group) move data between their devices: the
//! [`Exchange`] trait, the host-side meeting point every implementation shares
//! ([`Rendezvous`]), and the in-process implementation ([`InProcess`]). The NCCL one is in
//! `group::nccl` (feature `nccl`).

use crate::device::{Device, RawBuffer};
use crate::error::{Error, Result};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A byte range of a device buffer that one rank sends to, or receives from, `peer`.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a> {
    /// The other rank (the rank itself is allowed: a copy on its own device).
    pub peer: usize,
    /// The buffer, on the calling rank's device.
    pub buffer: &'a RawBuffer,
    /// First byte.
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
}

/// Moves data between the devices of a group's ranks. Every rank runs on a thread of its own;
/// [`Exchange::exchange`] is collective (every rank calls it, once per round, in the same
/// order of rounds), and so are the [`Rendezvous`] calls.
///
/// The contract of one round:
/// - the `k`-th send of rank `a` to rank `b` is the `k`-th receive of `b` from `a`, of the same
///   length (else a typed error);
/// - the transfers of a round may run at once: no receive range may overlap another range of
///   the round, on any rank;
/// - when the call returns, every transfer is queued on the devices ahead of the work each rank
///   queues next: a receiver's next kernels see the data, a sender may overwrite what it sent.
///
/// Two implementations: [`InProcess`] (any xwarp devices, copies) and, with the feature `nccl`,
/// `NcclExchange` (CUDA devices of one host, NCCL's point-to-point transfers).
pub trait Exchange: Send + Sync {
    /// What moves the data, in words (e.g. `in-process`, `NCCL 2.21.5`).
    fn name(&self) -> String;
    /// The number of ranks.
    fn ranks(&self) -> usize;
    /// Rank `rank`'s device.
    fn device(&self, rank: usize) -> &dyn Device;
    /// The ranks' host-side meeting point.
    fn rendezvous(&self) -> &Rendezvous;
    /// One round of transfers (see the trait's contract), called by rank `rank` on its own
    /// thread with its sends and receives.
    fn exchange(&self, rank: usize, sends: &[Piece<'_>], recvs: &[Piece<'_>]) -> Result<()>;
    /// [`Exchange::exchange`] whose transfers may still be running when the call returns, so
    /// that the rank can queue other work meanwhile: they are ordered after the work the rank
    /// queued before the call, and the work it queues after [`Exchange::finish_exchange`]
    /// sees them. In between, the rank's work must not touch the round's ranges (neither
    /// read a receive range nor write a send range). At most one round per rank is started
    /// and not finished; collective as `exchange`. The default runs the round at once.
    fn start_exchange(&self, rank: usize, sends: &[Piece<'_>], recvs: &[Piece<'_>]) -> Result<()> {
        self.exchange(rank, sends, recvs)
    }
    /// Orders the round [`Exchange::start_exchange`] started before the work rank `rank`
    /// queues next (nothing where no round is open).
    fn finish_exchange(&self, rank: usize) -> Result<()> {
        let _ = rank;
        Ok(())
    }
    /// Called before each group operation while no rank runs: forgets whatever a previous
    /// operation left (one that failed may have left a round half done).
    fn begin(&self) {
        self.rendezvous().reset();
    }
}

/// Locks a mutex, ignoring poisoning: a panicking rank marks the rendezvous failed itself.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Default)]
struct State {
    arrived: usize,
    generation: u64,
    /// The first rank that failed in the current operation.
    failed: Option<usize>,
    /// [`Rendezvous::all_gather`]'s slots.
    slots: Vec<Vec<u64>>,
}

/// Where the ranks' threads meet on the host: barriers and a small all-gather, both failing for
/// every rank as soon as one rank has failed (so a failing rank never leaves the others
/// waiting).
///
/// A rank that waits first polls for up to [`Rendezvous::set_spin`] (yielding its core between
/// polls), then sleeps: waking a sleeping thread took 0.05–0.3 ms on the hosts measured,
/// against a round of transfers of tens of microseconds (NOTES.md version 38).
pub struct Rendezvous {
    ranks: usize,
    state: Mutex<State>,
    wake: Condvar,
    /// Bumped (under `state`'s lock) whenever waiting ranks may go on: a barrier completed, a
    /// rank failed, a new operation began. Read without the lock by polling ranks.
    moves: AtomicU64,
    /// How long a waiting rank polls before it sleeps, in nanoseconds.
    spin_ns: AtomicU64,
}

impl std::fmt::Debug for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rendezvous")
            .field("ranks", &self.ranks)
            .finish_non_exhaustive()
    }
}

impl Rendezvous {
    /// A meeting point of `ranks` ranks.
    pub fn new(ranks: usize) -> Self {
        Rendezvous {
            ranks,
            state: Mutex::new(State {
                slots: vec![Vec::new(); ranks],
                ..State::default()
            }),
            wake: Condvar::new(),
            moves: AtomicU64::new(0),
            spin_ns: AtomicU64::new(DEFAULT_SPIN.as_nanos() as u64),
        }
    }

    /// How long a rank that waits for the others polls before it sleeps (default
    /// [`DEFAULT_SPIN`]; zero: it sleeps at once). [`super::Group::set_spin`] sets it.
    pub fn set_spin(&self, spin: Duration) {
        let ns = u64::try_from(spin.as_nanos()).unwrap_or(u64::MAX);
        self.spin_ns.store(ns, Ordering::Relaxed);
    }

    /// The time [`Rendezvous::set_spin`] set.
    pub fn spin(&self) -> Duration {
        Duration::from_nanos(self.spin_ns.load(Ordering::Relaxed))
    }

    /// Wakes every waiting rank (the caller holds `state`'s lock and has changed it).
    fn moved(&self) {
        self.moves.fetch_add(1, Ordering::Release);
        self.wake.notify_all();
    }

    fn peer_failed(rank: usize) -> Error {
        Error::invalid(
            "group",
            format!("rank {rank} failed"),
            "every rank succeeding (the failing rank's error is the operation's)",
        )
    }

    /// Waits until every rank has arrived. [`Error::InvalidParameter`] naming the rank when a
    /// rank has failed (before or while waiting).
    pub fn barrier(&self) -> Result<()> {
        let mut st = lock(&self.state);
        if let Some(r) = st.failed {
            return Err(Self::peer_failed(r));
        }
        let generation = st.generation;
        st.arrived += 1;
        if st.arrived == self.ranks {
            st.arrived = 0;
            st.generation += 1;
            self.moved();
            return Ok(());
        }
        // Poll without the lock until something moves or the spin is over; the state decides
        // below, under the lock, as without polling.
        let seen = self.moves.load(Ordering::Acquire);
        drop(st);
        poll(self.spin(), || self.moves.load(Ordering::Acquire) != seen);
        let mut st = lock(&self.state);
        while st.generation == generation && st.failed.is_none() {
            st = self.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        match st.failed {
            Some(r) if st.generation == generation => Err(Self::peer_failed(r)),
            _ => Ok(()),
        }
    }

    /// Every rank's `values` (small: counts, sizes), in rank order.
    pub fn all_gather(&self, rank: usize, values: &[u64]) -> Result<Vec<Vec<u64>>> {
        lock(&self.state).slots[rank] = values.to_vec();
        self.barrier()?;
        let all = lock(&self.state).slots.clone();
        // Nobody writes the slots again before everyone has read them.
        self.barrier()?;
        Ok(all)
    }

    /// Marks the current operation failed by `rank` and wakes every waiting rank.
    pub fn fail(&self, rank: usize) {
        let mut st = lock(&self.state);
        st.failed.get_or_insert(rank);
        self.moved();
    }

    /// The first rank that failed in the current operation.
    pub fn failed(&self) -> Option<usize> {
        lock(&self.state).failed
    }

    /// Starts a new operation: no rank has arrived or failed.
    pub fn reset(&self) {
        let mut st = lock(&self.state);
        st.arrived = 0;
        st.failed = None;
        st.generation += 1;
        self.moved();
    }
}

/// How long a waiting rank thread polls before it sleeps, by default: 1 ms.
pub const DEFAULT_SPIN: Duration = Duration::from_millis(1);

/// Calls `done` until it holds or `spin` has passed, yielding the core between calls (so that
/// polling threads leave a busy host's cores to the threads with work).
pub(crate) fn poll(spin: Duration, mut done: impl FnMut() -> bool) -> bool {
    if spin.is_zero() {
        return done();
    }
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() >= spin {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Checks a round's pieces before anything moves: peers in range, ranges inside their buffers,
/// buffers on the rank's device.
pub(crate) fn check_pieces(
    ex: &dyn Exchange,
    rank: usize,
    sends: &[Piece<'_>],
    recvs: &[Piece<'_>],
) -> Result<()> {
    let dev = ex.device(rank);
    for p in sends.iter().chain(recvs) {
        if p.peer >= ex.ranks() {
            return Err(Error::invalid(
                "peer",
                p.peer,
                format!("0..{} (the group's ranks)", ex.ranks()),
            ));
        }
        p.buffer.check_range(p.offset, p.bytes)?;
        if p.buffer.device() != dev.id() {
            return Err(Error::ForeignBuffer {
                buffer: format!("{:?}", p.buffer),
                device: format!("rank {rank}: {}", dev.info().name),
            });
        }
    }
    Ok(())
}

/// A posted send: the buffer (kept alive) and its range.
struct Posted {
    buffer: RawBuffer,
    offset: u64,
    bytes: u64,
}

/// The in-process exchange: each rank is a thread with an xwarp device of its own (several ranks
/// may share one device, or open the same GPU more than once), and a transfer is a copy. Between
/// ranks on one device it is [`Device::copy`], queued on that device; between devices it goes
/// through host memory (a read of the sender's buffer, which waits for the sender's queued work,
/// and a write to the receiver's). It needs nothing beyond the devices, so the group's logic runs
/// on any device, llvmpipe and one GPU included; it is no fast path between GPUs.
pub struct InProcess<'d> {
    devices: Vec<&'d dyn Device>,
    rendezvous: Rendezvous,
    /// Sends posted in the current round, by (sender, receiver), in order.
    posted: Mutex<HashMap<(usize, usize), VecDeque<Posted>>>,
}

impl std::fmt::Debug for InProcess<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess")
            .field("ranks", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl<'d> InProcess<'d> {
    /// An exchange between `devices`, rank `r` on `devices[r]` (at least one).
    pub fn new(devices: Vec<&'d dyn Device>) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::invalid("devices", 0, "at least one device"));
        }
        Ok(InProcess {
            rendezvous: Rendezvous::new(devices.len()),
            devices,
            posted: Mutex::default(),
        })
    }

    fn receive(&self, rank: usize, recv: &Piece<'_>) -> Result<()> {
        let posted = lock(&self.posted)
            .get_mut(&(recv.peer, rank))
            .and_then(VecDeque::pop_front);
        let Some(send) = posted else {
            return Err(Error::invalid(
                "recvs",
                format!("a receive of rank {rank} from rank {}", recv.peer),
                "as many receives from a rank as it sends to this one",
            ));
        };
        if send.bytes != recv.bytes {
            return Err(Error::LengthMismatch {
                name: "recvs",
                expected: send.bytes,
                actual: recv.bytes,
            });
        }
        if recv.bytes == 0 {
            return Ok(());
        }
        let (from, to) = (self.devices[recv.peer], self.devices[rank]);
        if from.id() == to.id() {
            return to.copy(
                &send.buffer,
                send.offset,
                recv.buffer,
                recv.offset,
                recv.bytes,
            );
        }
        let bytes = usize::try_from(recv.bytes)
            .map_err(|_| Error::invalid("bytes", recv.bytes, "a host-sized transfer"))?;
        let mut staging = vec![0u8; bytes];
        from.read(&send.buffer, send.offset, &mut staging)?;
        to.write(recv.buffer, recv.offset, &staging)
    }
}

impl Exchange for InProcess<'_> {
    fn name(&self) -> String {
        let distinct: std::collections::HashSet<_> = self.devices.iter().map(|d| d.id()).collect();
        if distinct.len() == 1 && self.devices.len() > 1 {
            format!(
                "in-process ({} ranks sharing one device: copies)",
                self.devices.len()
            )
        } else {
            "in-process (copies, through the host between devices)".into()
        }
    }

    fn ranks(&self) -> usize {
        self.devices.len()
    }

    fn device(&self, rank: usize) -> &dyn Device {
        self.devices[rank]
    }

    fn rendezvous(&self) -> &Rendezvous {
        &self.rendezvous
    }

    fn begin(&self) {
        lock(&self.posted).clear();
        self.rendezvous.reset();
    }

    fn exchange(&self, rank: usize, sends: &[Piece<'_>], recvs: &[Piece<'_>]) -> Result<()> {
        check_pieces(self, rank, sends, recvs)?;
        {
            let mut posted = lock(&self.posted);
            for s in sends {
                posted.entry((rank, s.peer)).or_default().push_back(Posted {
                    buffer: s.buffer.clone(),
                    offset: s.offset,
                    bytes: s.bytes,
                });
            }
        }
        self.rendezvous.barrier()?;
        let received = recvs.iter().try_for_each(|r| self.receive(rank, r));
        let unmatched = {
            let mut posted = lock(&self.posted);
            let mine: Vec<(usize, usize)> =
                posted.keys().filter(|k| k.1 == rank).copied().collect();
            mine.into_iter()
                .filter_map(|k| posted.remove(&k))
                .any(|q| !q.is_empty())
        };
        received?;
        if unmatched {
            return Err(Error::invalid(
                "recvs",
                format!("rank {rank} left sends to it unreceived"),
                "one receive per send",
            ));
        }
        // Senders reuse their buffers only after every receiver has taken its copies.
        self.rendezvous.barrier()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_agree_whether_ranks_sleep_or_poll() {
        for spin in [Duration::ZERO, Duration::from_micros(30), DEFAULT_SPIN] {
            let rv = Rendezvous::new(4);
            rv.set_spin(spin);
            assert_eq!(rv.spin(), spin);
            std::thread::scope(|s| {
                for r in 0..4u64 {
                    let rv = &rv;
                    s.spawn(move || {
                        for round in 0..200u64 {
                            let all = rv.all_gather(r as usize, &[round * 10 + r]).unwrap();
                            let want: Vec<Vec<u64>> =
                                (0..4).map(|q| vec![round * 10 + q]).collect();
                            assert_eq!(all, want, "spin {spin:?} round {round}");
                        }
                    });
                }
            });
        }
    }

    #[test]
    fn a_failure_ends_the_polling_and_the_sleep() {
        // A poll far longer than the test: the waiting ranks must leave it on the failure.
        for spin in [Duration::ZERO, Duration::from_secs(600)] {
            let rv = Rendezvous::new(3);
            rv.set_spin(spin);
            std::thread::scope(|s| {
                let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| rv.barrier())).collect();
                std::thread::sleep(Duration::from_millis(20));
                rv.fail(2);
                for w in waiting {
                    let r = w.join().unwrap();
                    assert!(
                        matches!(r, Err(Error::InvalidParameter { name: "group", .. })),
                        "{r:?}"
                    );
                }
            });
            assert_eq!(rv.failed(), Some(2));
        }
    }
}
