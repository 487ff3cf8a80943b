//! GPU timing: what `Device::time` and `Device::time_launches` measure. The tests run one at
//! a time: another thread's work or wait during a timed span would count in it (the
//! documented contract), so no other test of this binary runs meanwhile.

mod common;

use common::for_each_device;
use xwarp::shfl::ShflOp;
use xwarp::{DeviceVec, Rng};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// GPU time is GPU time: host work between the commands of a timed span (here a sleep far
/// longer than the commands) does not count. On Vulkan nothing of the span runs before its
/// end is recorded; on CUDA the span waits behind a gate the host opens once all of it is
/// queued.
#[test]
fn host_work_inside_a_timed_span_is_not_gpu_time() {
    let _serial = serial();
    let mut rng = Rng::new(common::seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let data: Vec<u32> = rng.vec(1 << 16);
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let mut dst = DeviceVec::<u32>::alloc(dev, data.len()).unwrap();
        let op = ShflOp::Xor { lane_mask: 1 };
        // The kernel compiled and loaded first: a first launch's module load opens the gate
        // (CUDA may wait for the device while it loads one).
        xwarp::shfl::shfl(dev, op, 32, &src, &mut dst).unwrap();
        dev.synchronize().unwrap();
        let sleep = std::time::Duration::from_millis(300);
        let t = dev
            .time(&mut || {
                xwarp::shfl::shfl(dev, op, 32, &src, &mut dst)?;
                std::thread::sleep(sleep);
                xwarp::shfl::shfl(dev, op, 32, &src, &mut dst)
            })
            .unwrap();
        let gate = d.cuda.as_ref().map(|c| c.timing_gate());
        assert!(
            t < sleep / 2,
            "{}: {t:?} with a {sleep:?} sleep inside (CUDA's timing gate: {gate:?})",
            d.label
        );
        if let Some(gate) = gate {
            assert_eq!(gate, Ok(()), "{}", d.label);
        }
        // A wait inside the span (a read) still works: it opens the gate first.
        let t = dev
            .time(&mut || {
                xwarp::shfl::shfl(dev, op, 32, &src, &mut dst)?;
                dst.to_vec(dev).map(|_| ())
            })
            .unwrap();
        assert!(t.as_secs() < 60, "{}: {t:?}", d.label);
        assert_eq!(dst.to_vec(dev).unwrap()[0], data[1], "{}", d.label);
    });
}

/// `time_launches`: each command of the span by name, in order, with times that add up to at
/// most the span's total.
#[test]
fn time_launches_names_each_command_in_order() {
    let _serial = serial();
    let mut rng = Rng::new(common::seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let data: Vec<u32> = rng.vec(100_003);
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let mut dst = DeviceVec::<u32>::alloc(dev, data.len()).unwrap();
        let back = DeviceVec::<u32>::alloc(dev, data.len()).unwrap();
        let times = dev
            .time_launches(&mut || {
                dst.fill(dev, 7)?;
                xwarp::shfl::shfl(dev, ShflOp::Up { delta: 1 }, 32, &src, &mut dst)?;
                dev.copy(dst.raw(), 0, back.raw(), 0, 400_012)
            })
            .unwrap();
        let names: Vec<&str> = times.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fill", "shfl", "copy"], "{}", d.label);
        let sum: std::time::Duration = times.commands.iter().map(|c| c.gpu).sum();
        assert!(
            sum <= times.total + std::time::Duration::from_micros(50),
            "{}: commands {sum:?}, span {:?}",
            d.label,
            times.total
        );
        let want = xwarp::cpu::shfl::shfl(ShflOp::Up { delta: 1 }, 32, 1, &data);
        assert_eq!(back.to_vec(dev).unwrap(), want, "{}", d.label);
        // A sort: the clearing and histogram launches, then a digit pass per byte.
        let mut sorter = xwarp::sort::Sorter::<u32>::new(dev, data.len()).unwrap();
        let times = dev
            .time_launches(&mut || {
                sorter.sort_keys(
                    dev,
                    &src,
                    &mut dst,
                    xwarp::sort::SortOrder::Ascending,
                    0..32,
                )
            })
            .unwrap();
        let passes = times
            .commands
            .iter()
            .filter(|c| c.name == "sort_onesweep")
            .count();
        assert_eq!(passes, 4, "{}: {:?}", d.label, times.commands);
        let mut sorted = data.clone();
        sorted.sort_unstable();
        assert_eq!(dst.to_vec(dev).unwrap(), sorted, "{}", d.label);
    });
}

/// A kernel compiled and loaded for the first time inside a timed span (CUDA may wait for the
/// device while it loads a module): the span still ends, and the result is right.
#[test]
fn a_first_launch_inside_a_timed_span_finishes() {
    let _serial = serial();
    let mut rng = Rng::new(common::seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let data: Vec<i64> = rng.vec(70_001);
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let mut dst = DeviceVec::<i64>::alloc(dev, data.len()).unwrap();
        // Broadcast of i64 at width 8: a variant no other test of this binary launches.
        let op = ShflOp::Broadcast { src_lane: 5 };
        let t = dev
            .time(&mut || xwarp::shfl::shfl(dev, op, 8, &src, &mut dst))
            .unwrap();
        assert!(t.as_secs() < 60, "{}: {t:?}", d.label);
        let want = xwarp::cpu::shfl::shfl(op, 8, 1, &data);
        assert_eq!(dst.to_vec(dev).unwrap(), want, "{}", d.label);
    });
}
