//! Work without waiting and recorded sequences on every test device: `Device::submit`,
//! `wait` and `is_done`; `Device::record` and `replay`. Every result is compared with the CPU
//! reference (and with the synchronous form) bit for bit, on fresh random inputs, with outputs
//! poisoned before each run; misuse gives typed errors and leaves the device working.

mod common;

use common::{for_each_device, hard_values, seed};
use xwarp::compact::{compact, Order};
use xwarp::device::MAX_IN_FLIGHT;
use xwarp::reduce::{device_reduce, ReduceOp};
use xwarp::scan::{device_scan, ScanKind};
use xwarp::sort::{SortOrder, Sorter};
use xwarp::vote::Predicate;
use xwarp::{cpu, BackendKind, Device, DeviceVec, ElemKind, Element, Error, Rng};
use xwarp_lab::validate::{first_mismatch, first_mismatch_nan_as_class, poison_value};

/// The tests of this binary one at a time: they share each device, and some count what the
/// device's queue holds (a submit with nothing queued since returns the same ticket).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
const SIZES: [usize; 6] = [1, 31, 33, 4097, 65537, 1_000_003];

#[track_caller]
fn same<T: Element>(what: &str, want: &[T], got: &[T]) {
    if let Some(m) = first_mismatch(want, got) {
        panic!("{what}: {m}");
    }
}

/// [`same`] for sums (reduce, scan): a NaN matches any NaN, whatever its payload (the
/// documented rule: `∞ - ∞`, which hard inputs reach by overflow, is each device's own NaN).
fn same_sum<T: Element>(what: &str, want: &[T], got: &[T]) {
    if let Some(m) = first_mismatch_nan_as_class(want, got) {
        panic!("{what}: {m}");
    }
}

/// Buffers of one pipeline of operations: a sum, an inclusive scan, a stable compaction of
/// the odd values and an ascending sort, all of one input.
struct Pipeline<T: Element> {
    input: DeviceVec<T>,
    sum: DeviceVec<T>,
    scan: DeviceVec<T>,
    kept: DeviceVec<T>,
    count: DeviceVec<u64>,
    sorted: DeviceVec<T>,
    sorter: Sorter<T>,
}

impl<T: Element + xwarp::reduce::Reduce + xwarp::vote::PredicateElement> Pipeline<T> {
    fn new(dev: &dyn Device, n: usize) -> Self {
        Pipeline {
            input: DeviceVec::alloc(dev, n).unwrap(),
            sum: DeviceVec::alloc(dev, 1).unwrap(),
            scan: DeviceVec::alloc(dev, n).unwrap(),
            kept: DeviceVec::alloc(dev, n).unwrap(),
            count: DeviceVec::alloc(dev, 1).unwrap(),
            sorted: DeviceVec::alloc(dev, n).unwrap(),
            sorter: Sorter::new(dev, n).unwrap(),
        }
    }

    /// Writes `data` and poisons every output.
    fn load(&mut self, dev: &dyn Device, data: &[T]) {
        self.input.write(dev, data);
        let poison = poison_value(data);
        for out in [
            &mut self.sum,
            &mut self.scan,
            &mut self.kept,
            &mut self.sorted,
        ] {
            out.fill(dev, poison).unwrap();
        }
        self.count.fill(dev, u64::MAX).unwrap();
    }

    /// Queues the four operations (no wait).
    fn queue(&mut self, dev: &dyn Device) -> xwarp::Result<()> {
        device_reduce(dev, ReduceOp::Sum, &self.input, &mut self.sum, 0)?;
        device_scan(
            dev,
            ReduceOp::Sum,
            ScanKind::Inclusive,
            &self.input,
            &mut self.scan,
        )?;
        compact(
            dev,
            Order::Stable,
            Predicate::Odd,
            &self.input,
            &mut self.kept,
            &mut self.count,
        )?;
        let bits = 0..(T::KIND.size() as u32 * 8);
        self.sorter.sort_keys(
            dev,
            &self.input,
            &mut self.sorted,
            SortOrder::Ascending,
            bits,
        )
    }

    /// Reads every output and compares it with the CPU reference of `data`.
    fn check(&self, dev: &dyn Device, what: &str, data: &[T]) {
        let sum = self.sum.to_vec(dev).unwrap();
        same_sum(
            &format!("{what} sum"),
            &[cpu::reduce::device_reduce(ReduceOp::Sum, data)],
            &sum,
        );
        same_sum(
            &format!("{what} scan"),
            &cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, data),
            &self.scan.to_vec(dev).unwrap(),
        );
        let want = cpu::compact::stable(Predicate::Odd, data);
        let count = self.count.to_vec(dev).unwrap()[0];
        assert_eq!(count, want.len() as u64, "{what} compaction count");
        same(
            &format!("{what} compaction"),
            &want,
            &self.kept.to_vec(dev).unwrap()[..want.len()],
        );
        let bits = 0..(T::KIND.size() as u32 * 8);
        same(
            &format!("{what} sort"),
            &cpu::sort::sort_keys(data, SortOrder::Ascending, bits),
            &self.sorted.to_vec(dev).unwrap(),
        );
    }
}

trait Write<T: Element> {
    fn write(&mut self, dev: &dyn Device, data: &[T]);
}

impl<T: Element> Write<T> for DeviceVec<T> {
    fn write(&mut self, dev: &dyn Device, data: &[T]) {
        dev.write(self.raw(), 0, bytemuck::cast_slice(data))
            .unwrap();
    }
}

fn inputs_i32(rng: &mut Rng, n: usize) -> Vec<i32> {
    rng.vec(n)
}

fn inputs_f32(rng: &mut Rng, n: usize) -> Vec<f32> {
    // Finite hard values (a float sum of infinities of both signs is NaN, which is fine, but
    // the compaction's odd test and the sort see every class either way).
    rng.hard_vec(n, hard_values(ElemKind::F32, false))
}

#[test]
fn submitted_work_runs_while_the_host_goes_on_and_matches_the_cpu() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        for n in SIZES {
            let data = inputs_i32(&mut rng, n);
            let mut p = Pipeline::<i32>::new(dev, n);
            p.load(dev, &data);
            p.queue(dev).unwrap();
            let ticket = dev.submit().unwrap();
            assert_eq!(ticket.device(), dev.id());
            // Nothing more was queued: the same ticket again.
            assert_eq!(dev.submit().unwrap(), ticket);
            dev.wait(ticket).unwrap();
            assert!(dev.is_done(ticket).unwrap(), "{}: n={n}", d.label);
            p.check(dev, &format!("{} submit i32 n={n}", d.label), &data);

            let data = inputs_f32(&mut rng, n);
            let mut p = Pipeline::<f32>::new(dev, n);
            p.load(dev, &data);
            p.queue(dev).unwrap();
            let ticket = dev.submit().unwrap();
            dev.wait(ticket).unwrap();
            p.check(dev, &format!("{} submit f32 n={n}", d.label), &data);
        }
    });
}

#[test]
fn more_submits_than_run_at_once_finish_in_order() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let rounds = MAX_IN_FLIGHT * 2 + 3;
        let mut work = Vec::new();
        let mut tickets = Vec::new();
        for k in 0..rounds {
            let n = 1 + rng.below(5000) as usize;
            let data: Vec<u32> = rng.vec(n);
            let input = DeviceVec::from_slice(dev, &data).unwrap();
            let mut out = DeviceVec::<u32>::alloc(dev, n).unwrap();
            out.fill(dev, poison_value(&data)).unwrap();
            let kind = if k % 2 == 0 {
                ScanKind::Inclusive
            } else {
                ScanKind::Exclusive
            };
            device_scan(dev, ReduceOp::Sum, kind, &input, &mut out).unwrap();
            let t = dev.submit().unwrap();
            if let Some(&last) = tickets.last() {
                assert!(
                    t.seq() > xwarp::Ticket::seq(last),
                    "{}: tickets grow",
                    d.label
                );
            }
            tickets.push(t);
            work.push((data, kind, out));
        }
        // Waiting for one in the middle finishes every one before it.
        let mid = tickets[rounds / 2];
        dev.wait(mid).unwrap();
        for &t in &tickets[..=rounds / 2] {
            assert!(dev.is_done(t).unwrap(), "{}: ticket {}", d.label, t.seq());
        }
        dev.wait(*tickets.last().unwrap()).unwrap();
        for (k, (data, kind, out)) in work.iter().enumerate() {
            same(
                &format!("{} round {k} n={}", d.label, data.len()),
                &cpu::scan::device_scan(ReduceOp::Sum, *kind, data),
                &out.to_vec(dev).unwrap(),
            );
        }
    });
}

#[test]
fn a_recording_replays_with_new_data_like_the_synchronous_calls() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        for n in [1, 33, 4097, 1_000_003] {
            let mut p = Pipeline::<i32>::new(dev, n);
            let first = inputs_i32(&mut rng, n);
            // The recording captures the operations, not their results: the buffers hold
            // the first data while it records, but nothing runs.
            p.load(dev, &first);
            let poison = poison_value(&first);
            let rec = dev.record(&mut || p.queue(dev)).unwrap();
            assert!(rec.operations() >= 4, "{}: {rec:?}", d.label);
            assert_eq!(rec.device(), dev.id());
            assert_eq!(
                p.scan.to_vec(dev).unwrap()[0],
                poison,
                "{}: recording ran the work",
                d.label
            );
            for round in 0..3 {
                let data = if round == 0 {
                    first.clone()
                } else {
                    inputs_i32(&mut rng, n)
                };
                p.load(dev, &data);
                let t = dev.replay(&rec).unwrap();
                dev.wait(t).unwrap();
                let what = format!("{} replay {round} i32 n={n}", d.label);
                p.check(dev, &what, &data);
                // The synchronous calls on the same data give the same bits.
                let mut q = Pipeline::<i32>::new(dev, n);
                q.load(dev, &data);
                q.queue(dev).unwrap();
                dev.synchronize().unwrap();
                for (a, b) in [(&p.scan, &q.scan), (&p.sorted, &q.sorted), (&p.sum, &q.sum)] {
                    same(&what, &b.to_vec(dev).unwrap(), &a.to_vec(dev).unwrap());
                }
            }
            // Replays queue behind each other without waits in between.
            let data = inputs_i32(&mut rng, n);
            p.load(dev, &data);
            let tickets: Vec<_> = (0..5).map(|_| dev.replay(&rec).unwrap()).collect();
            dev.wait(tickets[4]).unwrap();
            p.check(dev, &format!("{} five replays n={n}", d.label), &data);
        }
        // f32, with every class of finite hard value.
        let n = 65537;
        let mut p = Pipeline::<f32>::new(dev, n);
        p.load(dev, &inputs_f32(&mut rng, n));
        let rec = dev.record(&mut || p.queue(dev)).unwrap();
        for round in 0..2 {
            let data = inputs_f32(&mut rng, n);
            p.load(dev, &data);
            dev.replay(&rec).unwrap();
            dev.synchronize().unwrap();
            p.check(dev, &format!("{} replay {round} f32 n={n}", d.label), &data);
        }
    });
}

/// Vulkan separates recorded commands by a barrier only where one depends on an earlier one
/// through a buffer: copies between four pairs of their own buffers run side by side, a chain
/// of copies waits at every link, copies into two halves of one buffer are independent, and
/// the results are the sequential ones either way. CUDA's stream orders every command.
#[test]
fn recorded_commands_wait_only_for_what_they_depend_on() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let n = 4097;
        let bytes = (n * 4) as u64;
        let data: Vec<Vec<i32>> = (0..4).map(|_| inputs_i32(&mut rng, n)).collect();
        let src: Vec<DeviceVec<i32>> = data
            .iter()
            .map(|v| DeviceVec::from_slice(dev, v).unwrap())
            .collect();
        let mut dst: Vec<DeviceVec<i32>> =
            (0..4).map(|_| DeviceVec::alloc(dev, n).unwrap()).collect();
        let halves = DeviceVec::<i32>::alloc(dev, 2 * n).unwrap();
        let barriers = |rec: &xwarp::Recording| {
            if dev.info().backend == BackendKind::Cuda {
                assert_eq!(rec.barriers(), None, "{}", d.label);
            }
        };
        // Four independent copies, then each copied again into one half of `halves`: the
        // second round reads what the first wrote (one barrier), its two halves do not overlap.
        let rec = dev
            .record(&mut || {
                for (s, t) in src.iter().zip(&dst) {
                    dev.copy(s.raw(), 0, t.raw(), 0, bytes)?;
                }
                for (k, t) in dst[..2].iter().enumerate() {
                    dev.copy(t.raw(), 0, halves.raw(), k as u64 * bytes, bytes)?;
                }
                Ok(())
            })
            .unwrap();
        barriers(&rec);
        if dev.info().backend == BackendKind::Vulkan {
            assert_eq!(rec.operations(), 6, "{}", d.label);
            assert_eq!(rec.barriers(), Some(1), "{}: {rec:?}", d.label);
        }
        // A chain: each copy reads what the one before wrote.
        let chain = dev
            .record(&mut || {
                dev.copy(src[0].raw(), 0, dst[0].raw(), 0, bytes)?;
                dev.copy(dst[0].raw(), 0, dst[1].raw(), 0, bytes)?;
                dev.copy(dst[1].raw(), 0, dst[2].raw(), 0, bytes)?;
                // Writes what the first copy of this chain read: waits too.
                dev.copy(dst[2].raw(), 0, src[0].raw(), 0, bytes)?;
                Ok(())
            })
            .unwrap();
        barriers(&chain);
        if dev.info().backend == BackendKind::Vulkan {
            assert_eq!(chain.barriers(), Some(3), "{}: {chain:?}", d.label);
        }
        for round in 0..2 {
            let poison = poison_value(&data[0]);
            for t in dst.iter_mut() {
                t.fill(dev, poison).unwrap();
            }
            let t = dev.replay(&rec).unwrap();
            dev.wait(t).unwrap();
            let what = format!("{} round {round}", d.label);
            for (want, t) in data.iter().zip(&dst) {
                same(&what, want, &t.to_vec(dev).unwrap());
            }
            let both = halves.to_vec(dev).unwrap();
            same(&what, &data[0], &both[..n]);
            same(&what, &data[1], &both[n..]);
        }
        let t = dev.replay(&chain).unwrap();
        dev.wait(t).unwrap();
        for t in &dst[..3] {
            same(&d.label, &data[0], &t.to_vec(dev).unwrap());
        }
        same(&d.label, &data[0], &src[0].to_vec(dev).unwrap());
    });
}

#[test]
fn an_empty_recording_replays_as_nothing() {
    let _serial = serial();
    for_each_device(|d| {
        let dev = &*d.dev;
        let rec = dev.record(&mut || Ok(())).unwrap();
        assert_eq!(rec.operations(), 0);
        let t = dev.replay(&rec).unwrap();
        dev.wait(t).unwrap();
        assert!(dev.is_done(t).unwrap());
    });
}

/// Asserts `r` is `Error::Recording` for `call`.
#[track_caller]
fn refused<T: std::fmt::Debug>(label: &str, call: &str, r: xwarp::Result<T>) {
    match r {
        Err(Error::Recording { call: c, .. }) if c == call => {}
        other => panic!("{label}: {call} inside a recording gave {other:?}"),
    }
}

#[test]
fn calls_a_recording_cannot_hold_are_typed_errors_and_the_device_goes_on() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let data: Vec<u32> = rng.vec(1000);
        let input = DeviceVec::from_slice(dev, &data).unwrap();
        let mut out = DeviceVec::<u32>::alloc(dev, 1000).unwrap();
        let empty = dev.record(&mut || Ok(())).unwrap();
        let before = dev.submit().unwrap();
        type Misuse<'a> = (&'a str, Box<dyn Fn() -> xwarp::Result<()> + 'a>);
        let misuses: Vec<Misuse> = vec![
            ("Device::read", Box::new(|| input.to_vec(dev).map(|_| ()))),
            (
                "Device::write",
                Box::new(|| dev.write(input.raw(), 0, &[1, 2, 3, 4])),
            ),
            ("Device::synchronize", Box::new(|| dev.synchronize())),
            ("Device::submit", Box::new(|| dev.submit().map(|_| ()))),
            ("Device::wait", Box::new(|| dev.wait(before))),
            (
                "Device::time",
                Box::new(|| dev.time(&mut || Ok(())).map(|_| ())),
            ),
            (
                "Device::record",
                Box::new(|| dev.record(&mut || Ok(())).map(|_| ())),
            ),
            (
                "Device::replay",
                Box::new(|| dev.replay(&empty).map(|_| ())),
            ),
        ];
        for (call, misuse) in &misuses {
            let mut inner = None;
            let r = dev.record(&mut || {
                let r = misuse();
                let failed = r.is_err();
                inner = Some(r);
                if failed {
                    Err(Error::invalid("test", call, "a refused call"))
                } else {
                    Ok(())
                }
            });
            refused(&d.label, call, inner.expect("the closure ran"));
            assert!(
                r.is_err(),
                "{}: the recording with {call} was kept",
                d.label
            );
        }
        // The device still works, and a later recording is unaffected.
        let rec = dev
            .record(&mut || device_scan(dev, ReduceOp::Sum, ScanKind::Inclusive, &input, &mut out))
            .unwrap();
        out.fill(dev, poison_value(&data)).unwrap();
        let t = dev.replay(&rec).unwrap();
        dev.wait(t).unwrap();
        same(
            &d.label,
            &cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &data),
            &out.to_vec(dev).unwrap(),
        );
    });
}

#[test]
fn tickets_and_recordings_of_another_device_are_refused() {
    let _serial = serial();
    let other = common::open_vulkan();
    let foreign_ticket = {
        let buf = DeviceVec::<u32>::from_slice(&*other, &[1, 2, 3]).unwrap();
        drop(buf);
        other.submit().unwrap()
    };
    let foreign_rec = other.record(&mut || Ok(())).unwrap();
    for_each_device(|d| {
        let dev = &*d.dev;
        for r in [
            dev.wait(foreign_ticket),
            dev.is_done(foreign_ticket).map(|_| ()),
            dev.replay(&foreign_rec).map(|_| ()),
        ] {
            match r {
                Err(Error::InvalidParameter { name, .. }) => {
                    assert!(name == "ticket" || name == "recording", "{name}")
                }
                other => panic!("{}: a foreign ticket or recording gave {other:?}", d.label),
            }
        }
        // The device's own still work.
        let t = dev.submit().unwrap();
        dev.wait(t).unwrap();
        assert!(dev.is_done(t).unwrap());
    });
}

#[test]
fn other_threads_calls_wait_for_a_recording_and_stay_out_of_it() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let mine: Vec<u32> = rng.vec(3000);
        let theirs: Vec<u32> = rng.vec(5000);
        let my_in = DeviceVec::from_slice(dev, &mine).unwrap();
        let mut my_out = DeviceVec::<u32>::alloc(dev, mine.len()).unwrap();
        my_out.fill(dev, poison_value(&mine)).unwrap();
        let their_in = DeviceVec::from_slice(dev, &theirs).unwrap();
        let mut their_out = DeviceVec::<u32>::alloc(dev, theirs.len()).unwrap();
        their_out.fill(dev, poison_value(&theirs)).unwrap();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (their_in, their_out) = (&their_in, &mut their_out);
        let rec = std::thread::scope(|scope| {
            // Owned by the scope's closure: if the recording fails, the sender drops and the
            // other thread's wait ends instead of hanging the test.
            let started_tx = started_tx;
            let other = scope.spawn(move || {
                started_rx
                    .recv_timeout(std::time::Duration::from_secs(60))
                    .expect("the recording started");
                // Waits for the recording to end, then runs at once: not part of it.
                device_scan(dev, ReduceOp::Sum, ScanKind::Inclusive, their_in, their_out).unwrap();
                their_out.to_vec(dev).unwrap()
            });
            let rec = dev
                .record(&mut || {
                    started_tx.send(()).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    device_scan(dev, ReduceOp::Sum, ScanKind::Exclusive, &my_in, &mut my_out)
                })
                .unwrap();
            let got = other.join().unwrap();
            same(
                &format!("{} other thread", d.label),
                &cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Inclusive, &theirs),
                &got,
            );
            rec
        });
        // Only this thread's scan was recorded: it has not run yet, and runs at replay.
        assert_eq!(
            my_out.to_vec(dev).unwrap()[0],
            poison_value(&mine),
            "{}",
            d.label
        );
        let t = dev.replay(&rec).unwrap();
        dev.wait(t).unwrap();
        same(
            &format!("{} recording thread", d.label),
            &cpu::scan::device_scan(ReduceOp::Sum, ScanKind::Exclusive, &mine),
            &my_out.to_vec(dev).unwrap(),
        );
    });
}

/// Small writes and reads at byte offsets, queued, submitted without waiting and read back in
/// turn, keep their own bytes: also where together they stage more than the 64 KiB Vulkan
/// stages small transfers through, and where a later write to the same bytes is queued
/// before an earlier one has run (the later one wins, as in order).
#[test]
fn small_writes_and_reads_in_flight_keep_their_bytes() {
    let _serial = serial();
    let mut rng = Rng::new(seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        const BYTES: usize = 40_000;
        let buffers: Vec<_> = (0..4).map(|_| dev.alloc(BYTES as u64).unwrap()).collect();
        let mut want = vec![vec![0u8; BYTES]; buffers.len()];
        for (b, w) in buffers.iter().zip(&want) {
            dev.write(b, 0, w).unwrap();
        }
        let mut tickets = Vec::new();
        for step in 0..60 {
            let k = rng.below(buffers.len() as u64) as usize;
            let len = match step % 4 {
                0 => 1 + rng.below(16) as usize,
                1 => 1 + rng.below(4096) as usize,
                _ => 1 + rng.below(BYTES as u64) as usize,
            };
            let at = rng.below((BYTES - len + 1) as u64) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            dev.write(&buffers[k], at as u64, &bytes).unwrap();
            want[k][at..at + len].copy_from_slice(&bytes);
            match step % 7 {
                2 | 5 => tickets.push(dev.submit().unwrap()),
                3 => {
                    // A read while writes before it may still be pending or queued.
                    let r = rng.below(buffers.len() as u64) as usize;
                    let len = 1 + rng.below(8192) as usize;
                    let at = rng.below((BYTES - len + 1) as u64) as usize;
                    let mut got = vec![0u8; len];
                    dev.read(&buffers[r], at as u64, &mut got).unwrap();
                    assert!(
                        got == want[r][at..at + len],
                        "{}: step {step}: buffer {r} bytes {at}..{}",
                        d.label,
                        at + len
                    );
                }
                _ => {}
            }
        }
        for t in tickets {
            dev.wait(t).unwrap();
        }
        for (k, b) in buffers.iter().enumerate() {
            let mut got = vec![0u8; BYTES];
            dev.read(b, 0, &mut got).unwrap();
            let first = got.iter().zip(&want[k]).position(|(g, w)| g != w);
            assert_eq!(first, None, "{}: buffer {k}: first wrong byte", d.label);
        }
    });
}
