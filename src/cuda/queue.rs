//! Work without waiting and recorded sequences: tickets as events on the stream, recordings as
//! CUDA Graphs captured from it.

use super::memory::CudaBuffer;
use super::memory::Live;
use super::{cuda_err, lock, CudaDevice};
use crate::device::{RawBuffer, Recording, Ticket, MAX_IN_FLIGHT};
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaEvent, CudaGraph};
use std::any::Any;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

/// The tickets handed out: an event recorded on the stream for each, oldest first.
#[derive(Default)]
pub(super) struct Tickets {
    /// The latest ticket number handed out (0: none yet).
    issued: u64,
    /// [`Live::queued`] when it was handed out: a submit with nothing queued since returns it
    /// again.
    queued_at: u64,
    /// Every ticket up to this one has finished.
    done: u64,
    pending: VecDeque<(u64, CudaEvent)>,
}

/// What a capture in progress collects.
#[derive(Default)]
pub(super) struct Capture {
    /// Buffers from before the capture that its work uses: the recording keeps them.
    keep: Vec<Arc<dyn Any + Send + Sync>>,
    /// Launches and copies captured.
    operations: usize,
}

/// Who records ([`crate::Device::record`] captures the one stream), and which threads are
/// inside a call that puts work on the stream. A recording holds only its own thread's work:
/// other threads' calls wait until it ends, and it starts once no other thread is inside one.
#[derive(Default)]
pub(super) struct Gate {
    owner: Option<ThreadId>,
    active: HashMap<ThreadId, usize>,
    capture: Option<Capture>,
}

/// A thread's turn at the stream, held for the length of one call.
pub(super) struct Turn<'a> {
    live: &'a Live,
    me: ThreadId,
    recording: bool,
}

impl<'a> Turn<'a> {
    /// Waits while another thread records, then enters.
    pub(super) fn take(live: &'a Live) -> Self {
        let me = std::thread::current().id();
        let mut g = lock(&live.gate);
        while g.owner.is_some_and(|o| o != me) {
            g = live.turn.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        *g.active.entry(me).or_default() += 1;
        let recording = g.owner == Some(me);
        Turn {
            live,
            me,
            recording,
        }
    }

    /// Whether this thread is recording.
    pub(super) fn recording(&self) -> bool {
        self.recording
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut g = lock(&self.live.gate);
        if let Some(n) = g.active.get_mut(&self.me) {
            *n -= 1;
            if *n == 0 {
                g.active.remove(&self.me);
            }
        }
        drop(g);
        self.live.turn.notify_all();
    }
}

/// A recorded sequence: the instantiated graph and the buffers it uses.
struct CudaRecording {
    /// `None` for an empty capture.
    graph: Mutex<Option<CudaGraph>>,
    _keep: Vec<Arc<dyn Any + Send + Sync>>,
}

// SAFETY: CUDA's graph handles may be used from any thread as long as calls on one graph are
// serialised, which the mutex does; the kept buffers are `Send + Sync` themselves.
unsafe impl Send for CudaRecording {}
// SAFETY: as above: every use of the graph goes through the mutex.
unsafe impl Sync for CudaRecording {}

impl CudaDevice {
    /// This thread's turn at the stream for a call a recording cannot hold:
    /// [`Error::Recording`] when this thread records.
    /// Every such call may make the host wait for the stream: it opens the timing gate first
    /// ([`super::timing`]).
    pub(super) fn refuse_in_recording(&self, call: &'static str) -> Result<Turn<'_>> {
        // The turn first: a timed span that starts after it leaves its gate open
        // ([`Self::alone`]), and one that started before is opened here.
        let turn = Turn::take(&self.live);
        self.open_gate();
        if turn.recording() {
            return Err(self.recording_open(call));
        }
        Ok(turn)
    }

    /// Runs `f` while no other thread is inside a call on the stream, keeping them out until
    /// it returns; `None`, without running `f`, where another thread is inside one. A timed
    /// span closes its gate only this way ([`super::timing`]): a thread that waits for the
    /// stream takes its turn before it opens the gate, so it either sees the gate closed and
    /// opens it, or is seen here and the span runs ungated. (Eight threads sharing one device,
    /// one of them timing, otherwise hung: a module load waiting for the stream behind a closed
    /// gate held the driver while the span's own launch waited for it.)
    pub(super) fn alone<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        let me = std::thread::current().id();
        let g = lock(&self.live.gate);
        if g.active.keys().any(|&t| t != me) {
            return None;
        }
        let r = f();
        drop(g);
        Some(r)
    }

    /// This thread's turn at the stream for a call a recording can hold.
    pub(super) fn take_turn(&self) -> Turn<'_> {
        Turn::take(&self.live)
    }

    fn recording_open(&self, call: &'static str) -> Error {
        Error::Recording {
            call,
            device: self.label.clone(),
            reason: "a recording (Device::record) is open; it can hold launches and device \
                     copies only: call this before or after recording"
                .into(),
        }
    }

    /// The turn for one launch or copy: when this thread records, counts the operation and
    /// keeps the buffers it uses that were allocated before the capture (those allocated
    /// during it belong to the graph).
    pub(super) fn keep_for_capture(&self, buffers: &[&RawBuffer]) -> Turn<'_> {
        let turn = Turn::take(&self.live);
        self.live.queued.fetch_add(1, Ordering::Relaxed);
        if turn.recording() {
            let mut g = lock(&self.live.gate);
            if let Some(c) = g.capture.as_mut() {
                c.operations += 1;
                for b in buffers {
                    let graph_owned = b
                        .downcast::<CudaBuffer>(self.id, "")
                        .is_ok_and(|cb| cb.in_capture);
                    if !graph_owned {
                        c.keep.push(b.keep_alive());
                    }
                }
            }
        }
        turn
    }

    /// [`crate::Device::submit`]: an event recorded after the work queued so far.
    pub(super) fn submit_work(&self) -> Result<Ticket> {
        let _turn = self.refuse_in_recording("Device::submit")?;
        let mut t = lock(&self.tickets);
        self.retire(&mut t, false)?;
        let queued = self.live.queued.load(Ordering::Relaxed);
        if queued == t.queued_at {
            return Ok(Ticket::new(self.id, t.issued));
        }
        if t.pending.len() >= MAX_IN_FLIGHT {
            let oldest = t.pending.front().map_or(0, |p| p.0);
            self.wait_for(&mut t, oldest)?;
        }
        let event = self
            .stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(cuda_err("cuEventRecord"))?;
        t.issued += 1;
        t.queued_at = queued;
        let ticket = t.issued;
        t.pending.push_back((ticket, event));
        Ok(Ticket::new(self.id, ticket))
    }

    /// Retires the tickets whose events finished, oldest first: all up to `upto`, waiting for
    /// them, when `block`; else those already finished.
    fn retire_upto(&self, t: &mut Tickets, upto: u64, block: bool) -> Result<()> {
        if block {
            // The newest event at or before `upto`: the stream runs in order.
            if let Some((ticket, event)) = t.pending.iter().rev().find(|(n, _)| *n <= upto) {
                event
                    .synchronize()
                    .map_err(cuda_err("cuEventSynchronize"))?;
                let ticket = *ticket;
                while t.pending.front().is_some_and(|(n, _)| *n <= ticket) {
                    t.pending.pop_front();
                }
                t.done = t.done.max(ticket);
            }
            return Ok(());
        }
        while let Some((n, event)) = t.pending.front() {
            if *n > upto || !event.try_is_complete().map_err(cuda_err("cuEventQuery"))? {
                break;
            }
            t.done = *n;
            t.pending.pop_front();
        }
        Ok(())
    }

    fn retire(&self, t: &mut Tickets, block: bool) -> Result<()> {
        self.retire_upto(t, u64::MAX, block)
    }

    fn wait_for(&self, t: &mut Tickets, ticket: u64) -> Result<()> {
        if ticket <= t.done {
            return Ok(());
        }
        self.retire_upto(t, ticket, true)
    }

    /// After the stream was synchronised: every ticket has finished.
    pub(super) fn all_done(&self) {
        let mut t = lock(&self.tickets);
        t.pending.clear();
        t.done = t.issued;
    }

    /// [`crate::Device::wait`].
    pub(super) fn wait_ticket(&self, ticket: Ticket) -> Result<()> {
        let _turn = self.refuse_in_recording("Device::wait")?;
        let mut t = lock(&self.tickets);
        let n = ticket.check(self.id, t.issued)?;
        self.wait_for(&mut t, n)
    }

    /// [`crate::Device::is_done`].
    pub(super) fn ticket_done(&self, ticket: Ticket) -> Result<bool> {
        let mut t = lock(&self.tickets);
        let n = ticket.check(self.id, t.issued)?;
        self.retire(&mut t, false)?;
        Ok(n <= t.done)
    }

    /// [`crate::Device::record`]: captures the stream into a CUDA Graph while `work` runs
    /// (relaxed mode: other threads' CUDA calls are not restricted).
    pub(super) fn record_work(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<Recording> {
        self.open_gate();
        let me = std::thread::current().id();
        // The legacy default stream (a null handle, or CU_STREAM_LEGACY) cannot be captured.
        let raw = self.stream.cu_stream() as usize;
        if raw == 0 || raw == 1 {
            return Err(Error::Recording {
                call: "Device::record",
                device: self.label.clone(),
                reason: "xwarp runs on the context's legacy default stream (from_external with \
                         CudaContext::default_stream), which CUDA cannot capture into a graph: \
                         open xwarp on a stream of the application's own \
                         (CudaContext::new_stream) to record"
                    .into(),
            });
        }
        {
            let mut g = lock(&self.live.gate);
            if g.owner == Some(me) {
                return Err(self.recording_open("Device::record"));
            }
            if !self.ctx.has_async_alloc() {
                return Err(Error::MissingFeature {
                    device: self.label.clone(),
                    missing: "memory pools (cuMemAllocAsync), from which a recording's \
                              temporaries are allocated inside its graph"
                        .into(),
                });
            }
            // Once no other thread records or is inside a call (this thread may be, e.g.
            // inside `Device::time`'s work).
            while g.owner.is_some() || g.active.iter().any(|(&t, &n)| t != me && n > 0) {
                g = self
                    .live
                    .turn
                    .wait(g)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            self.stream
                .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
                .map_err(cuda_err("cuStreamBeginCapture"))?;
            self.live.freed_in_capture.store(0, Ordering::Relaxed);
            g.owner = Some(me);
            g.capture = Some(Capture::default());
        }
        let worked = work();
        let (graph, Capture { keep, operations }) = {
            let mut g = lock(&self.live.gate);
            let capture = g.capture.take().unwrap_or_default();
            let graph = self
                .stream
                .end_capture(sys::CUgraphInstantiate_flags(0))
                .map_err(cuda_err("cuStreamEndCapture"));
            g.owner = None;
            (graph, capture)
        };
        self.live.turn.notify_all();
        worked?;
        let graph = graph?;
        let outliving = self.live.captured_alive.load(Ordering::Relaxed);
        if outliving > 0 {
            return Err(Error::Recording {
                call: "Device::record",
                device: self.label.clone(),
                reason: format!(
                    "{outliving} buffer(s) allocated inside the recording outlive it; their \
                     memory belongs to the graph: allocate the buffers a recording uses before \
                     recording"
                ),
            });
        }
        let freed = self.live.freed_in_capture.load(Ordering::Relaxed);
        if freed > 0 {
            return Err(Error::Recording {
                call: "Device::record",
                device: self.label.clone(),
                reason: format!(
                    "{freed} buffer(s) allocated before the recording were dropped inside it; \
                     drop them after recording"
                ),
            });
        }
        if let Some(g) = &graph {
            g.upload().map_err(cuda_err("cuGraphUpload"))?;
        }
        let rec = Arc::new(CudaRecording {
            graph: Mutex::new(graph),
            _keep: keep,
        });
        Ok(Recording::new(self.id, operations, None, Box::new(rec)))
    }

    /// [`crate::Device::replay`]: launches the graph on the stream, then a ticket after it.
    pub(super) fn replay_recording(&self, recording: &Recording) -> Result<Ticket> {
        let rec = recording.inner::<Arc<CudaRecording>>(self.id)?;
        let turn = self.refuse_in_recording("Device::replay")?;
        if let Some(g) = lock(&rec.graph).as_ref() {
            g.launch().map_err(cuda_err("cuGraphLaunch"))?;
            self.live.queued.fetch_add(1, Ordering::Relaxed);
        }
        drop(turn);
        // The graph's kept buffers stay alive while it runs: dropping the recording frees
        // them with cuMemFreeAsync on this stream, after the launch.
        self.submit_work()
    }
}
