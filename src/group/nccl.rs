//! The NCCL exchange (feature `nccl`): one communicator per GPU of the host, made at once by
//! `ncclCommInitAll`, and each round as NCCL point-to-point sends and receives in one NCCL
//! group, on each rank's xwarp stream (so they are ordered with the rank's kernels by stream
//! order), or, for a round started with `start_exchange`, on a second stream of the rank's
//! device, ordered with the xwarp stream by two events (the round waits for the work queued
//! before it; `finish_exchange` makes the xwarp stream wait for the round), so that the rank's
//! kernels run while the round moves data. NCCL is loaded at run time, as cudarc loads the
//! driver: a machine without it gets [`Error::MissingFeature`], never a panic.

use super::exchange::{check_pieces, Exchange, Piece, Rendezvous};
use crate::cuda::{cuda_err as cu_err, CudaDevice};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::driver::result::{event, stream as cu_stream};
use cudarc::driver::sys as cu;
use cudarc::nccl::{result as nccl, sys};
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// An NCCL communicator, destroyed with the exchange.
struct Comm(sys::ncclComm_t);

// SAFETY: an NCCL communicator may be used from any thread as long as calls on it do not
// overlap; rank r's communicator is used only by rank r's thread inside one group operation
// (operations on a group run one after another), and destroyed only in `Drop`.
unsafe impl Send for Comm {}
// SAFETY: as above: no two threads call NCCL with the same communicator at once.
unsafe impl Sync for Comm {}

/// [`Error::Cuda`] naming the NCCL call and NCCL's own words for the result.
fn nccl_err(call: &'static str) -> impl FnOnce(nccl::NcclError) -> Error {
    move |e| {
        // SAFETY: ncclGetErrorString returns a pointer to a static, NUL-terminated string for
        // every result code; the library is loaded (this error came from it).
        let words = unsafe { CStr::from_ptr(sys::ncclGetErrorString(e.0)) };
        Error::Cuda {
            call,
            reason: format!("{:?}: {}", e.0, words.to_string_lossy()),
        }
    }
}

/// A rank's second stream, where a started round runs, and its two events: `ready`, recorded
/// on the xwarp stream when the round starts (the side stream waits for it), and `done`,
/// recorded on the side stream after the round (the xwarp stream waits for it when the round
/// is finished). `open`: a round started and not finished.
struct Side {
    stream: cu::CUstream,
    ready: cu::CUevent,
    done: cu::CUevent,
    open: AtomicBool,
}

// SAFETY: a stream and an event handle may be used from any thread; rank r's side is used by
// rank r's thread inside one group operation (operations run one after another), by `begin`
// while no rank runs, and destroyed only in `Drop`.
unsafe impl Send for Side {}
// SAFETY: as above: no two threads use one rank's side at once.
unsafe impl Sync for Side {}

impl Side {
    /// A non-blocking stream and two events in `dev`'s context.
    fn new(dev: &CudaDevice) -> Result<Side> {
        dev.context()
            .bind_to_thread()
            .map_err(cu_err("cuCtxSetCurrent"))?;
        let stream = cu_stream::create(cu_stream::StreamKind::NonBlocking)
            .map_err(cu_err("cuStreamCreate"))?;
        let flags = cu::CUevent_flags::CU_EVENT_DISABLE_TIMING;
        let ready = event::create(flags).map_err(cu_err("cuEventCreate"))?;
        let done = event::create(flags).map_err(cu_err("cuEventCreate"))?;
        Ok(Side {
            stream,
            ready,
            done,
            open: AtomicBool::new(false),
        })
    }

    /// Waits on the host for a round left open (an operation that failed between start and
    /// finish), so that nothing of it runs into the next operation.
    fn settle(&self, dev: &CudaDevice) {
        if self.open.swap(false, Ordering::AcqRel) {
            self.drain(dev);
        }
    }

    /// Waits on the host for everything queued on the side stream.
    fn drain(&self, dev: &CudaDevice) {
        let _ = dev.context().bind_to_thread();
        // SAFETY: the stream was created in `Side::new` and is destroyed only in `Drop`.
        let _ = unsafe { cu_stream::synchronize(self.stream) };
    }
}

/// The exchange of a group of CUDA devices through NCCL (see the module docs).
pub struct NcclExchange {
    devices: Vec<Arc<CudaDevice>>,
    comms: Vec<Comm>,
    sides: Vec<Side>,
    version: c_int,
    rendezvous: Rendezvous,
}

impl std::fmt::Debug for NcclExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclExchange")
            .field("ranks", &self.devices.len())
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl NcclExchange {
    /// Communicators between `devices` (distinct GPUs of this host), rank `r` on
    /// `devices[r]`.
    ///
    /// Errors: [`Error::InvalidParameter`] for no device or a GPU listed twice (NCCL runs one
    /// rank per GPU), [`Error::MissingFeature`] where `libnccl.so` cannot be loaded,
    /// [`Error::Cuda`] when NCCL refuses.
    pub fn new(devices: Vec<Arc<CudaDevice>>) -> Result<Self> {
        if devices.is_empty() {
            return Err(Error::invalid("devices", 0, "at least one CUDA device"));
        }
        let ordinals: Vec<c_int> = devices
            .iter()
            .map(|d| d.context().ordinal() as c_int)
            .collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return Err(Error::invalid(
                    "devices",
                    format!("CUDA device {o} listed twice"),
                    "distinct GPUs (NCCL runs one rank per GPU; ranks sharing a GPU take \
                     Group::in_process)",
                ));
            }
        }
        let names: Vec<String> = devices.iter().map(|d| d.info().name.clone()).collect();
        // SAFETY: this only tries to dlopen libnccl under its usual names and closes it again;
        // NCCL's initialisers are safe to run, and cudarc loads exactly these names on first
        // use.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::MissingFeature {
                device: format!("the group of {}", names.join(", ")),
                missing: "NCCL: the library libnccl.so (libnccl.so.2) was not found; install \
                          NCCL 2.18 or newer (e.g. the libnccl2 package or the nvidia-nccl-cu13 \
                          wheel) and put its directory on LD_LIBRARY_PATH"
                    .into(),
            });
        }
        let version = nccl::get_nccl_version().map_err(nccl_err("ncclGetVersion"))?;
        let mut raw: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        let count = c_int::try_from(devices.len())
            .map_err(|_| Error::invalid("devices", devices.len(), "at most i32::MAX"))?;
        // SAFETY: `raw` has room for `count` communicators and `ordinals` holds `count`
        // distinct device ordinals, as ncclCommInitAll requires; NCCL writes the handles.
        unsafe { nccl::comm_init_all(raw.as_mut_ptr(), count, ordinals.as_ptr()) }
            .map_err(nccl_err("ncclCommInitAll"))?;
        // Owned at once, so that a failure below destroys them.
        let mut ex = NcclExchange {
            rendezvous: Rendezvous::new(devices.len()),
            comms: raw.into_iter().map(Comm).collect(),
            sides: Vec::with_capacity(devices.len()),
            devices,
            version,
        };
        for d in 0..ex.devices.len() {
            let side = Side::new(&ex.devices[d])?;
            ex.sides.push(side);
        }
        Ok(ex)
    }

    /// Issues rank `rank`'s NCCL sends and receives (device addresses and lengths) in one
    /// NCCL group; returns the first error after closing the group.
    fn issue(
        &self,
        rank: usize,
        sends: &[(usize, u64, u64)],
        recvs: &[(usize, u64, u64)],
        stream: cu::CUstream,
    ) -> Result<()> {
        let comm = self.comms[rank].0;
        let stream = stream as sys::cudaStream_t;
        nccl::group_start().map_err(nccl_err("ncclGroupStart"))?;
        let mut first = Ok(());
        let transfers = sends
            .iter()
            .map(|&t| (true, t))
            .chain(recvs.iter().map(|&t| (false, t)));
        for (send, (peer, ptr, bytes)) in transfers {
            let (ptr, peer, kind) = (
                ptr as *mut c_void,
                peer as c_int,
                sys::ncclDataType_t::ncclUint8,
            );
            // SAFETY: `ptr .. ptr + bytes` lies inside a live buffer of this rank's device
            // (checked by check_pieces; the caller keeps the buffer alive until the stream has
            // run the transfer, and buffers are freed in stream order); a received range is
            // written by this transfer alone in the round (the exchange's contract); `comm` is
            // this rank's communicator and `stream` a stream of its device.
            let result = unsafe {
                if send {
                    nccl::send(ptr, bytes as usize, kind, peer, comm, stream)
                } else {
                    nccl::recv(ptr, bytes as usize, kind, peer, comm, stream)
                }
            };
            if let Err(e) = result {
                first = Err(nccl_err(if send { "ncclSend" } else { "ncclRecv" })(e));
                break;
            }
        }
        let end = nccl::group_end()
            .map(|_| ())
            .map_err(nccl_err("ncclGroupEnd"));
        first.and(end)
    }
}

impl Exchange for NcclExchange {
    fn name(&self) -> String {
        let v = self.version;
        format!("NCCL {}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    }

    fn ranks(&self) -> usize {
        self.devices.len()
    }

    fn device(&self, rank: usize) -> &dyn Device {
        &*self.devices[rank]
    }

    fn rendezvous(&self) -> &Rendezvous {
        &self.rendezvous
    }

    fn exchange(&self, rank: usize, sends: &[Piece<'_>], recvs: &[Piece<'_>]) -> Result<()> {
        let (to_peers, from_peers) = self.prepare(rank, sends, recvs)?;
        let stream = self.devices[rank].stream().cu_stream();
        self.issue(rank, &to_peers, &from_peers, stream)
    }

    fn start_exchange(&self, rank: usize, sends: &[Piece<'_>], recvs: &[Piece<'_>]) -> Result<()> {
        let side = &self.sides[rank];
        if side.open.load(Ordering::Acquire) {
            return Err(Error::invalid(
                "start_exchange",
                format!("a second round on rank {rank}"),
                "one started round per rank, finished before the next starts",
            ));
        }
        let (to_peers, from_peers) = self.prepare(rank, sends, recvs)?;
        let main = self.devices[rank].stream().cu_stream();
        // SAFETY: both events and the side stream were created in this device's context in
        // `Side::new` and live until `Drop`; `main` is the device's live xwarp stream. The
        // side stream waits for everything queued on `main` so far.
        unsafe {
            event::record(side.ready, main).map_err(cu_err("cuEventRecord"))?;
            cu_stream::wait_event(
                side.stream,
                side.ready,
                cu::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
            .map_err(cu_err("cuStreamWaitEvent"))?;
        }
        side.open.store(true, Ordering::Release);
        self.issue(rank, &to_peers, &from_peers, side.stream)?;
        // SAFETY: as above; `done` marks the end of the round on the side stream.
        unsafe { event::record(side.done, side.stream) }.map_err(cu_err("cuEventRecord"))
    }

    fn finish_exchange(&self, rank: usize) -> Result<()> {
        let side = &self.sides[rank];
        if !side.open.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let main = self.devices[rank].stream().cu_stream();
        // SAFETY: `done` and `main` are live (see `start_exchange`); the xwarp stream's next
        // work waits for the round.
        unsafe {
            cu_stream::wait_event(
                main,
                side.done,
                cu::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .map_err(cu_err("cuStreamWaitEvent"))
    }

    fn begin(&self) {
        for (side, dev) in self.sides.iter().zip(&self.devices) {
            side.settle(dev);
        }
        self.rendezvous.reset();
    }
}

impl NcclExchange {
    /// What every round does before NCCL runs: the checks, the rank's copies to itself (on
    /// its xwarp stream) and the ranks' meeting; returns the transfers to and from peers as
    /// (peer, device address, bytes).
    #[allow(clippy::type_complexity)]
    fn prepare(
        &self,
        rank: usize,
        sends: &[Piece<'_>],
        recvs: &[Piece<'_>],
    ) -> Result<(Vec<(usize, u64, u64)>, Vec<(usize, u64, u64)>)> {
        check_pieces(self, rank, sends, recvs)?;
        let dev = &self.devices[rank];
        // Everything that can fail before NCCL runs: once one rank has issued its transfers,
        // the others must issue theirs, or its stream waits for ever.
        let address = |p: &Piece<'_>| -> Result<(usize, u64, u64)> {
            Ok((p.peer, dev.device_ptr(p.buffer)? + p.offset, p.bytes))
        };
        let remote = |p: &&Piece<'_>| p.peer != rank && p.bytes > 0;
        let to_peers: Vec<_> = sends
            .iter()
            .filter(remote)
            .map(address)
            .collect::<Result<_>>()?;
        let from_peers: Vec<_> = recvs
            .iter()
            .filter(remote)
            .map(address)
            .collect::<Result<_>>()?;
        // A rank's transfers to itself are copies on its stream.
        let own_sends: Vec<&Piece<'_>> = sends.iter().filter(|p| p.peer == rank).collect();
        let own_recvs: Vec<&Piece<'_>> = recvs.iter().filter(|p| p.peer == rank).collect();
        if own_sends.len() != own_recvs.len()
            || own_sends
                .iter()
                .zip(&own_recvs)
                .any(|(s, r)| s.bytes != r.bytes)
        {
            return Err(Error::invalid(
                "recvs",
                format!("rank {rank}'s receives from itself"),
                "one receive of the same length per send to itself",
            ));
        }
        for (s, r) in own_sends.iter().zip(&own_recvs) {
            if s.bytes > 0 {
                dev.copy(s.buffer, s.offset, r.buffer, r.offset, s.bytes)?;
            }
        }
        dev.context()
            .bind_to_thread()
            .map_err(cu_err("cuCtxSetCurrent"))?;
        self.rendezvous.barrier()?;
        Ok((to_peers, from_peers))
    }
}

impl Drop for NcclExchange {
    fn drop(&mut self) {
        // Communicators are destroyed only when no transfer is queued. Errors here mean a
        // broken context, which the devices' next users meet.
        for d in &self.devices {
            let _ = d.synchronize();
        }
        for (side, dev) in self.sides.iter().zip(&self.devices) {
            side.drain(dev);
            // SAFETY: the side's stream and events were created in `Side::new`, nothing runs
            // on the stream any more (synchronized just above), and they are destroyed once.
            unsafe {
                let _ = event::destroy(side.ready);
                let _ = event::destroy(side.done);
                let _ = cu_stream::destroy(side.stream);
            }
        }
        for c in &self.comms {
            // SAFETY: each communicator came from ncclCommInitAll, is destroyed once, here,
            // and nothing uses it any more (the exchange is being dropped).
            let _ = unsafe { nccl::comm_destroy(c.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_nccl_or_cuda_the_group_is_a_typed_error() {
        // Here there may be no CUDA at all: then no device opens, and that is a typed error
        // too. With CUDA and without NCCL, the group is a MissingFeature naming NCCL.
        let dev = match CudaDevice::new(0) {
            Ok(d) => Arc::new(d),
            Err(e) => {
                assert!(matches!(e, Error::BackendUnavailable { .. }), "{e}");
                return;
            }
        };
        match NcclExchange::new(vec![dev.clone(), dev]) {
            Err(Error::InvalidParameter { name, .. }) => assert_eq!(name, "devices"),
            other => panic!("a GPU listed twice: {other:?}"),
        }
        // SAFETY: as in `NcclExchange::new`.
        if !unsafe { sys::is_culib_present() } {
            let dev = Arc::new(CudaDevice::new(0).unwrap());
            match NcclExchange::new(vec![dev]) {
                Err(Error::MissingFeature { missing, .. }) => assert!(missing.contains("NCCL")),
                other => panic!("no NCCL: {other:?}"),
            }
        }
    }
}
