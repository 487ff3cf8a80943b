//! The self-test a Vulkan device runs when it opens: a device whose subgroups are what its
//! driver claims opens, with the measured layout and subnormal behaviour on record; a driver
//! that claims more lanes than it runs is refused with a typed error naming the claim and the
//! measurement, and nothing runs on it.
//!
//! How kernels treat subnormals follows the mode asked for (`XWARP_SUBNORMALS`, or
//! `VulkanOptions::subnormals`) over what the driver did in the self-test.
//!
//! `XWARP_EXPECT_REFUSAL=1` says the Vulkan device under test is one that must be refused
//! (CI runs this binary so on llvmpipe at `LP_NATIVE_VECTOR_WIDTH=1024`, which claims subgroups
//! of 32 and runs 16 lanes). Unset, the device must pass.

use xwarp::vulkan::{SubnormalMode, VulkanDevice, VulkanOptions};
use xwarp::{Device, Error, Subnormals};

fn expect_refusal() -> bool {
    std::env::var("XWARP_EXPECT_REFUSAL").is_ok_and(|v| v == "1")
}

fn open() -> xwarp::Result<VulkanDevice> {
    VulkanDevice::new(&VulkanOptions {
        device: None,
        validation: true,
        ..Default::default()
    })
}

#[test]
fn the_device_runs_its_claimed_subgroups_or_is_refused() {
    let first = open();
    if expect_refusal() {
        let e = first.err().expect("the device must be refused");
        let Error::SelfTestFailed {
            device,
            driver,
            claimed,
            measured,
        } = &e
        else {
            panic!("refused with the wrong error: {e}");
        };
        eprintln!("refused as expected: {e}");
        assert!(!device.is_empty() && !driver.is_empty(), "{e}");
        assert!(claimed.contains("subgroups of"), "{e}");
        assert!(measured.contains("first disagreement"), "{e}");
        // The refusal is remembered, and `auto` refuses it too rather than fall back quietly.
        let again = open().err().expect("refused again");
        assert!(matches!(again, Error::SelfTestFailed { .. }), "{again}");
        if xwarp::cuda::available().is_err() {
            let auto = xwarp::backend::open(&xwarp::backend::Options::default())
                .err()
                .expect("auto must refuse the only device");
            assert!(matches!(auto, Error::SelfTestFailed { .. }), "{auto}");
        }
        return;
    }
    let dev = first.unwrap_or_else(|e| panic!("the device must open: {e}"));
    let info = dev.info().clone();
    let report = dev.self_test().clone();
    eprintln!(
        "{info}: self-test {:.2} ms, blocks {:?}, f32 subnormals {}, f64 {}",
        report.took.as_secs_f64() * 1e3,
        report.blocks,
        info.subnormals_f32,
        info.subnormals_f64
    );
    assert!(
        !report.cached,
        "the first open in this process runs the test"
    );
    assert_eq!(report.subgroup_size, info.subgroup_size);
    assert!(report.blocks.contains(&256), "{report:?}");
    let mode = SubnormalMode::from_env().expect("XWARP_SUBNORMALS");
    assert_subnormals(mode, info.subnormals_f32, Some(report.subnormals_f32_kept));
    assert_subnormals(mode, info.subnormals_f64, report.subnormals_f64_kept);
    // A second open of the same device takes the cached verdict.
    let second = open().expect("opens again");
    assert!(second.self_test().cached, "{:?}", second.self_test());
    assert_eq!(second.info().subnormals_f32, info.subnormals_f32);
    let messages = dev.validation_messages();
    assert!(messages.is_empty(), "validation: {}", messages.join("\n"));
    every_subnormal_mode_is_what_it_says();
}

/// What `mode` makes of a width whose subnormals the driver kept in the self-test (`kept`;
/// `None`: no kernels of the width): the driver's verdict where the driver keeps them or
/// `native` asks for its arithmetic, the exact kernels where it flushes them or `emulate` asks,
/// and flushed for `flush`.
fn assert_subnormals(mode: SubnormalMode, got: Subnormals, kept: Option<bool>) {
    let Some(kept) = kept else {
        assert_eq!(got, Subnormals::Unsupported);
        return;
    };
    let driver = [Subnormals::Guaranteed, Subnormals::Observed];
    let ok = match mode {
        SubnormalMode::Auto if kept => driver.contains(&got),
        SubnormalMode::Auto | SubnormalMode::Emulate => got == Subnormals::Emulated,
        SubnormalMode::Native if kept => driver.contains(&got),
        SubnormalMode::Native | SubnormalMode::Flush => got == Subnormals::Flushed,
    };
    assert!(
        ok,
        "mode {mode}, the driver kept subnormals: {kept}, reported: {got}"
    );
}

/// Every mode asked for at open gives what it says over the same measurement, and each open
/// with the exact kernels has checked them on the device (a device whose exact kernels gave
/// other results than IEEE 754's would report the driver's verdict instead).
fn every_subnormal_mode_is_what_it_says() {
    for mode in [
        SubnormalMode::Auto,
        SubnormalMode::Native,
        SubnormalMode::Emulate,
        SubnormalMode::Flush,
    ] {
        let dev = VulkanDevice::new(&VulkanOptions {
            subnormals: Some(mode),
            validation: true,
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("the device must open with subnormals {mode}: {e}"));
        let (info, report) = (dev.info(), dev.self_test());
        eprintln!(
            "{mode}: f32 subnormals {}, f64 {}",
            info.subnormals_f32, info.subnormals_f64
        );
        assert_subnormals(mode, info.subnormals_f32, Some(report.subnormals_f32_kept));
        assert_subnormals(mode, info.subnormals_f64, report.subnormals_f64_kept);
        let messages = dev.validation_messages();
        assert!(messages.is_empty(), "validation: {}", messages.join("\n"));
    }
    assert!(matches!(
        "Emulate".parse::<SubnormalMode>(),
        Ok(SubnormalMode::Emulate)
    ));
    match "keep".parse::<SubnormalMode>() {
        Err(Error::InvalidParameter { name, allowed, .. }) => {
            assert_eq!(name, "subnormals");
            assert!(allowed.contains("emulate"), "{allowed}");
        }
        other => panic!("expected InvalidParameter, got {other:?}"),
    }
}
