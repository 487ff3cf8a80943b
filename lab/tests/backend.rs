//! Backend selection, device facts, buffers, timing, and typed errors when a driver is missing.

mod common;

use common::{for_each_device, open_vulkan};
use std::sync::Arc;
use xwarp::backend::{BackendChoice, DeviceSelector};
use xwarp::device::{Binding, Kernel, Launch, SubgroupFeatures};
use xwarp::reduce::ReduceOp;
use xwarp::shfl::ShflOp;
use xwarp::vulkan::{VulkanDevice, VulkanOptions};
use xwarp::{BackendKind, Device, DeviceVec, ElemKind, Error, Rng};

#[test]
fn backend_choice_parses_and_rejects_unknown_names() {
    assert_eq!(
        "cuda".parse::<BackendChoice>().unwrap(),
        BackendChoice::Cuda
    );
    assert_eq!(
        "Vulkan".parse::<BackendChoice>().unwrap(),
        BackendChoice::Vulkan
    );
    assert_eq!(
        "auto".parse::<BackendChoice>().unwrap(),
        BackendChoice::Auto
    );
    match "metal".parse::<BackendChoice>() {
        Err(Error::InvalidParameter {
            name,
            value,
            allowed,
        }) => {
            assert_eq!((name, value.as_str()), ("backend", "metal"));
            assert!(allowed.contains("vulkan") && allowed.contains("cuda"));
        }
        other => panic!("expected InvalidParameter, got {other:?}"),
    }
    assert_eq!(
        "1".parse::<DeviceSelector>().unwrap(),
        DeviceSelector::Index(1)
    );
    assert_eq!(
        "llvm".parse::<DeviceSelector>().unwrap(),
        DeviceSelector::Name("llvm".into())
    );
}

#[test]
fn cuda_backend_is_a_typed_error_or_a_working_device() {
    match xwarp::cuda::available() {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, BackendKind::Cuda);
            assert!(!reason.is_empty());
            assert!(matches!(
                xwarp::cuda::CudaDevice::new(0),
                Err(Error::BackendUnavailable {
                    backend: BackendKind::Cuda,
                    ..
                })
            ));
            // Auto falls back to Vulkan when CUDA is missing.
            let dev = xwarp::backend::open(&Default::default()).unwrap();
            assert_eq!(dev.info().backend, BackendKind::Vulkan);
        }
        Err(other) => panic!("expected BackendUnavailable, got {other:?}"),
        Ok(count) => {
            assert!(count > 0);
            let dev = xwarp::cuda::CudaDevice::new(0).unwrap();
            assert_eq!(
                (dev.info().subgroup_size, dev.info().vendor_id),
                (32, 0x10de)
            );
            assert!(matches!(
                xwarp::cuda::CudaDevice::new(count),
                Err(Error::NoSuchDevice {
                    backend: BackendKind::Cuda,
                    ..
                })
            ));
            let auto = xwarp::backend::open(&Default::default()).unwrap();
            assert_eq!(auto.info().backend, BackendKind::Cuda);
        }
    }
}

#[test]
fn vulkan_device_facts_are_consistent() {
    let vk = open_vulkan();
    let info = vk.info();
    assert_eq!(info.backend, BackendKind::Vulkan);
    assert!(info.subgroup_size.is_power_of_two(), "{info}");
    assert!(
        (info.min_subgroup_size..=info.max_subgroup_size).contains(&info.subgroup_size),
        "{info}"
    );
    assert!(
        info.subgroup_features.contains(SubgroupFeatures::BASIC),
        "{info}"
    );
    assert!(info.max_binding_bytes >= 1 << 27, "{info}");
    // llvmpipe's subgroup size follows LP_NATIVE_VECTOR_WIDTH (bits): 128 → 4, 256 → 8, 512 → 16.
    if info.name.contains("llvmpipe") {
        let width: u32 = std::env::var("LP_NATIVE_VECTOR_WIDTH")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256);
        assert_eq!(info.subgroup_size, width / 32, "{info}");
    }
}

#[test]
fn vulkan_device_selection_by_index_and_name() {
    let list = xwarp::vulkan::list_devices().unwrap();
    assert!(!list.is_empty());
    let first = &list[0];
    let by_index = VulkanDevice::new(&VulkanOptions {
        device: Some(DeviceSelector::Index(0)),
        validation: false,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(by_index.info().name, first.name);
    let part: String = first.name.chars().take(4).collect();
    let by_name = VulkanDevice::new(&VulkanOptions {
        device: Some(DeviceSelector::Name(part.to_uppercase())),
        validation: false,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(by_name.info().name, first.name);
    match VulkanDevice::new(&VulkanOptions {
        device: Some(DeviceSelector::Name("no-such-gpu".into())),
        validation: false,
        ..Default::default()
    }) {
        Err(Error::NoSuchDevice {
            backend,
            selector,
            available,
        }) => {
            assert_eq!(
                (backend, selector.as_str()),
                (BackendKind::Vulkan, "no-such-gpu")
            );
            assert!(available.contains(&first.name));
        }
        Err(e) => panic!("expected NoSuchDevice, got {e:?}"),
        Ok(_) => panic!("expected NoSuchDevice, got a device"),
    }
}

#[test]
fn buffers_round_trip_at_awkward_lengths() {
    let mut rng = Rng::new(common::seed());
    for_each_device(|d| {
        for n in [1usize, 31, 33, 4097, 1_000_003] {
            let data: Vec<u64> = rng.vec(n);
            let v = DeviceVec::from_slice(&*d.dev, &data).unwrap();
            assert_eq!(v.to_vec(&*d.dev).unwrap(), data, "{} n={n}", d.label);
        }
    });
}

/// A 2 GiB buffer written, copied on the device and read back (`XWARP_LARGE=1`): one copy
/// region of 2 GiB crashed llvmpipe's queue thread (a signed 32-bit width in the driver).
#[test]
fn two_gib_transfers_round_trip() {
    if std::env::var("XWARP_LARGE").map_or(true, |v| v.is_empty() || v == "0") {
        eprintln!("XWARP_LARGE=1 runs the 2 GiB round trip");
        return;
    }
    let mut rng = Rng::new(common::seed());
    let n = 1usize << 28; // u64: 2^31 bytes
    let data: Vec<u64> = rng.vec(n);
    for_each_device(|d| {
        let v = DeviceVec::from_slice(&*d.dev, &data).unwrap();
        let mut w = DeviceVec::<u64>::alloc(&*d.dev, n).unwrap();
        w.fill(&*d.dev, 0xcdcd_cdcd_cdcd_cdcd).unwrap();
        d.dev.copy(v.raw(), 0, w.raw(), 0, (n * 8) as u64).unwrap();
        let got = w.to_vec(&*d.dev).unwrap();
        if let Some(i) = (0..n).find(|&i| got[i] != data[i]) {
            panic!(
                "{}: element {i} of {n}: {:#x}, expected {:#x}",
                d.label, got[i], data[i]
            );
        }
    });
}

#[test]
fn buffer_of_another_device_is_refused() {
    let a = open_vulkan();
    let b: Arc<dyn Device> = open_vulkan();
    let buf = DeviceVec::from_slice(&*a, &[1i32, 2, 3]).unwrap();
    let mut out = [0u8; 12];
    match b.read(buf.raw(), 0, &mut out) {
        Err(Error::ForeignBuffer { .. }) => {}
        other => panic!("expected ForeignBuffer, got {other:?}"),
    }
    let mut dst = DeviceVec::<i32>::alloc(&*b, 3).unwrap();
    assert!(matches!(
        xwarp::shfl::shfl(&*b, ShflOp::Up { delta: 1 }, 4, &buf, &mut dst),
        Err(Error::ForeignBuffer { .. })
    ));
    assert_eq!(buf.to_vec(&*a).unwrap(), [1, 2, 3]);
}

#[test]
fn out_of_range_transfers_and_launches_are_refused() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let buf = DeviceVec::from_slice(dev, &[5u32; 8]).unwrap();
        assert!(matches!(
            dev.write(buf.raw(), 30, &[0; 4]),
            Err(Error::OutOfBounds { .. })
        ));
        let mut out = [0u8; 8];
        assert!(matches!(
            dev.read(buf.raw(), 28, &mut out),
            Err(Error::OutOfBounds { .. })
        ));
        let consts = [("OP", 0), ("SEGM", 1)];
        let kernel = Kernel {
            name: "shfl",
            elem: ElemKind::U32,
            consts: &consts,
        };
        let params = [8u32, 0, 32, 0];
        let too_long = Binding {
            buffer: buf.raw(),
            offset: 0,
            bytes: 64,
        };
        let launch = Launch {
            kernel,
            block: 256,
            groups: [1, 1],
            bindings: &[too_long, buf.binding(0, 8)],
            params: bytemuck::cast_slice(&params),
        };
        assert!(
            matches!(dev.launch(&launch), Err(Error::OutOfBounds { .. })),
            "{}",
            d.label
        );
        let bad_block = Launch {
            block: 100,
            bindings: &[buf.binding(0, 8), buf.binding(0, 8)],
            ..launch
        };
        assert!(matches!(
            dev.launch(&bad_block),
            Err(Error::InvalidParameter { name: "block", .. })
        ));
        let missing = Launch {
            kernel: Kernel {
                name: "no_such_kernel",
                ..kernel
            },
            ..bad_block
        };
        let missing = Launch {
            block: 256,
            ..missing
        };
        assert!(
            matches!(dev.launch(&missing), Err(Error::MissingKernel { .. })),
            "{}",
            d.label
        );
        assert_eq!(buf.to_vec(dev).unwrap(), [5; 8]);
    });
}

#[test]
fn gpu_timer_measures_queued_work() {
    let mut rng = Rng::new(common::seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let data: Vec<u32> = rng.vec(1 << 20);
        let src = DeviceVec::from_slice(dev, &data).unwrap();
        let mut dst = DeviceVec::<u32>::alloc(dev, data.len()).unwrap();
        let t = dev
            .time(&mut || xwarp::shfl::shfl(dev, ShflOp::Xor { lane_mask: 1 }, 32, &src, &mut dst))
            .unwrap();
        assert!(t.as_nanos() > 0, "{}: {t:?}", d.label);
        assert!(t.as_secs() < 60, "{}: {t:?}", d.label);
        let out = dst.to_vec(dev).unwrap();
        assert_eq!(out[0], data[1]);
    });
}

/// `kernel_stats` after a launch: on CUDA, and on a Vulkan device that captures the compiler's
/// statistics (`VK_KHR_pipeline_executable_properties`), it names the reduce kernel with
/// named statistics; on a Vulkan device without the extension it is empty.
#[test]
fn kernel_stats_name_a_launched_kernel_where_the_device_reports_them() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let data: Vec<i32> = (0..5000).map(|i| i % 7 - 3).collect();
        let sum = xwarp::reduce::device_reduce_host(dev, ReduceOp::Sum, &data).unwrap();
        assert_eq!(sum, data.iter().sum::<i32>(), "{}", d.label);
        let stats = dev.kernel_stats();
        let captured = d.vulkan.as_ref().is_none_or(|vk| vk.captures_statistics());
        if !captured {
            assert!(stats.is_empty(), "{}: {stats:?}", d.label);
            println!(
                "{}: the device does not offer VK_KHR_pipeline_executable_properties with \
                 pipelineExecutableInfo: kernel_stats() is empty",
                d.label
            );
            return;
        }
        let reduce: Vec<_> = stats
            .iter()
            .filter(|k| {
                k.kernel.starts_with("reduce i32 block=")
                    || k.kernel.starts_with("reduce_device i32 block=")
            })
            .collect();
        assert!(
            !reduce.is_empty(),
            "{}: no reduce kernel in {stats:?}",
            d.label
        );
        for k in &reduce {
            assert!(
                k.stats.iter().any(|(name, _)| !name.is_empty()),
                "{}: {k:?}",
                d.label
            );
            assert!(
                k.stats.iter().all(|(name, _)| name != "error"),
                "{}: {k:?}",
                d.label
            );
        }
        if d.vulkan.is_none() {
            let names: Vec<&str> = reduce[0].stats.iter().map(|(n, _)| n.as_str()).collect();
            for want in [
                "NUM_REGS",
                "SHARED_SIZE_BYTES",
                "LOCAL_SIZE_BYTES",
                "max active",
            ] {
                assert!(
                    names.iter().any(|n| n.starts_with(want)),
                    "{}: no {want} in {names:?}",
                    d.label
                );
            }
        }
        println!(
            "{}: the device reports compiler statistics: {} entries; {:?}",
            d.label,
            stats.len(),
            reduce[0]
        );
    });
}

/// `fill_words` and `DeviceVec::fill`: the range filled, the rest untouched, misaligned and
/// out-of-range fills refused with typed errors; 64-bit values with equal or unequal halves.
#[test]
fn fills_write_their_range_and_refuse_bad_ones() {
    for_each_device(|d| {
        let dev = &*d.dev;
        let mut v = DeviceVec::from_slice(dev, &[1u32; 33]).unwrap();
        dev.fill_words(v.raw(), 8, 20, 0xdead_beef).unwrap();
        let got = v.to_vec(dev).unwrap();
        for (i, w) in got.iter().enumerate() {
            let want = if (2..7).contains(&i) { 0xdead_beef } else { 1 };
            assert_eq!(*w, want, "{}: word {i}", d.label);
        }
        for (offset, bytes) in [(2u64, 8u64), (4, 6)] {
            let e = dev.fill_words(v.raw(), offset, bytes, 0).unwrap_err();
            assert!(
                matches!(e, Error::InvalidParameter { .. }),
                "{}: {e}",
                d.label
            );
        }
        let e = dev.fill_words(v.raw(), 128, 8, 0).unwrap_err();
        assert!(matches!(e, Error::OutOfBounds { .. }), "{}: {e}", d.label);
        assert_eq!(
            v.to_vec(dev).unwrap(),
            got,
            "{}: a refused fill wrote",
            d.label
        );
        v.fill(dev, 0x1234_5678).unwrap();
        assert_eq!(v.to_vec(dev).unwrap(), vec![0x1234_5678; 33], "{}", d.label);
        let mut w = DeviceVec::<u64>::alloc(dev, 17).unwrap();
        for value in [0xcdcd_cdcd_cdcd_cdcd_u64, 0x0123_4567_89ab_cdef, u64::MAX] {
            w.fill(dev, value).unwrap();
            assert_eq!(w.to_vec(dev).unwrap(), vec![value; 17], "{}", d.label);
        }
    });
}

/// A window ([`Device::window`]) is a view: writes through it land in its buffer at its
/// offset, reads see the buffer's bytes, copies and kernels take it as any buffer (a reduce of
/// a window against the CPU's of the same range), a window of a window adds the offsets, and it
/// keeps the buffer alive after the buffer's handle drops. Empty, misaligned and out-of-range
/// windows and buffers of another device are typed errors.
#[test]
fn windows_are_views_of_their_buffer() {
    let mut rng = Rng::new(common::seed());
    for_each_device(|d| {
        let dev = &*d.dev;
        let align = dev.info().binding_alignment.max(4);
        let n = 10_000usize;
        let data: Vec<u32> = rng.vec(n);
        let whole = DeviceVec::from_slice(dev, &data).unwrap();
        let at = (3 * align / 4) as usize; // elements: byte offset 3 * align
        let len = 4097;
        let w = dev
            .window(whole.raw(), at as u64 * 4, len as u64 * 4)
            .unwrap();
        assert_eq!(w.bytes(), len as u64 * 4, "{}", d.label);
        let view = DeviceVec::<u32>::from_raw(w.clone(), len).unwrap();
        assert_eq!(view.to_vec(dev).unwrap(), data[at..at + len], "{}", d.label);
        // A kernel on the window.
        let mut out = DeviceVec::<u32>::alloc(dev, 1).unwrap();
        xwarp::reduce::device_reduce(dev, ReduceOp::Sum, &view, &mut out, 0).unwrap();
        let want = xwarp::cpu::reduce::device_reduce(ReduceOp::Sum, &data[at..at + len]);
        assert_eq!(out.to_vec(dev).unwrap(), [want], "{}", d.label);
        // A window of the window; writes through it land in the buffer.
        let inner = dev.window(&w, align, 8).unwrap();
        dev.write(&inner, 0, bytemuck::cast_slice(&[7u32, 9]))
            .unwrap();
        let first = at + (align / 4) as usize;
        let mut want_all = data.clone();
        want_all[first] = 7;
        want_all[first + 1] = 9;
        assert_eq!(whole.to_vec(dev).unwrap(), want_all, "{}", d.label);
        // A copy from one window into another of another buffer.
        let other = DeviceVec::<u32>::from_slice(dev, &vec![0u32; n]).unwrap();
        let dst = dev.window(other.raw(), 2 * align, 4 * 100).unwrap();
        dev.copy(&w, 0, &dst, 0, 4 * 100).unwrap();
        let got = other.to_vec(dev).unwrap();
        let o = (2 * align / 4) as usize;
        assert_eq!(got[o..o + 100], want_all[at..at + 100], "{}", d.label);
        assert!(got[..o].iter().all(|&x| x == 0), "{}", d.label);
        // The window keeps the memory alive.
        drop((whole, view, w));
        assert_eq!(
            DeviceVec::<u32>::from_raw(inner, 2)
                .unwrap()
                .to_vec(dev)
                .unwrap(),
            [7, 9],
            "{}",
            d.label
        );
        // Refusals.
        let raw = other.raw();
        let bytes = raw.bytes();
        assert!(matches!(
            dev.window(raw, 0, 0),
            Err(Error::InvalidParameter { name: "bytes", .. })
        ));
        assert!(matches!(
            dev.window(raw, bytes - 4, 8),
            Err(Error::OutOfBounds { .. })
        ));
        if align > 1 {
            assert!(matches!(
                dev.window(raw, align / 2, 4),
                Err(Error::InvalidParameter { name: "offset", .. })
            ));
        }
    });
    // A buffer of another device.
    let devs = common::devices();
    if devs.len() > 1 {
        let b = devs[0].dev.alloc(64).unwrap();
        assert!(matches!(
            devs[1].dev.window(&b, 0, 16),
            Err(Error::ForeignBuffer { .. })
        ));
    }
}
