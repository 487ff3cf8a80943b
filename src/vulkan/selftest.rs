//! The self-test a Vulkan device runs when it opens: does the device run its subgroups the way
//! its driver claims, and does it keep subnormal floats?
//!
//! xwarp's kernels rely on the subgroup layout the driver reports: `gl_SubgroupSize` lanes per
//! subgroup, full subgroups, `gl_SubgroupInvocationID` below it, `gl_SubgroupID` below
//! `gl_NumSubgroups`, so that `(gl_SubgroupID, gl_SubgroupInvocationID)` numbers the workgroup's
//! invocations once each, and ballots and shuffles that act on exactly those lanes. A driver
//! was seen to break this (llvmpipe with `LP_NATIVE_VECTOR_WIDTH` above 512 claims 32, 64 or
//! 128 lanes and runs 16), which gives wrong answers and, unchecked, writes outside
//! shared-memory arrays. `shaders/selftest.comp` records, per invocation, what the driver
//! reports and what the operations return; this module checks every record. A device that
//! fails is refused with [`Error::SelfTestFailed`], which names the driver, the claim and the
//! measurement.
//!
//! The same run computes on subnormals of `f32` (and `f64` where the device has it) through
//! the kernels' float operations (`shaders/float_ops.glsl`) on the driver's arithmetic, for
//! [`DeviceInfo::subnormals_f32`](crate::DeviceInfo::subnormals_f32): kept as promised, kept
//! without a promise, or flushed. Where the kernels are to keep subnormals themselves, the
//! arithmetic runs once more with their exact variant, which must give the IEEE results
//! before the device uses it ([`emulation_holds`]).
//!
//! The outcomes are cached per physical device, driver version and claimed layout for the life
//! of the process, so a device opened again costs nothing more.

use crate::device::{Device, DeviceInfo, DeviceVec, Kernel, Launch};
use crate::element::{ElemKind, Element};
use crate::error::{Error, Result};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Words per invocation in the shader's `facts` (`FACTS` in `shaders/selftest.comp`).
const FACTS: usize = 12;
/// Results of the subnormal arithmetic (`results[0..9]` in the shader).
const RESULTS: usize = 9;

/// What the self-test found.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfTestReport {
    /// Workgroup sizes the layout was checked at (the kernels' common block and the largest
    /// block they use, where the device allows it).
    pub blocks: Vec<u32>,
    /// The subgroup size measured (equal to the one claimed, or the device was refused).
    pub subgroup_size: u32,
    /// Whether `f32` arithmetic kept subnormals.
    pub subnormals_f32_kept: bool,
    /// Whether `f64` arithmetic kept subnormals (`None`: no `f64` kernels on the device).
    pub subnormals_f64_kept: Option<bool>,
    /// How long the test took when it ran (pipeline creation, one submit, checks).
    pub took: Duration,
    /// Whether this open took the outcome from the process's cache instead of running it.
    pub cached: bool,
}

/// The cache key: what identifies a device, its driver and the layout it claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    pub vendor_id: u32,
    pub device_id: u32,
    pub driver_version: u32,
    pub uuid: [u8; 16],
    pub name: String,
    pub subgroup_size: u32,
    pub pinned: bool,
    pub float64: bool,
}

/// What a failed test says: the claim and the measurement.
#[derive(Clone, Debug)]
struct Refusal {
    claimed: String,
    measured: String,
}

type Outcome = std::result::Result<SelfTestReport, Refusal>;

static CACHE: Mutex<Vec<(Key, Outcome)>> = Mutex::new(Vec::new());
/// [`emulation_holds`]'s verdicts: (device, width, whether the exact variant gave the IEEE
/// results).
static EMULATION: Mutex<Vec<(Key, ElemKind, bool)>> = Mutex::new(Vec::new());

/// Runs the test on `dev` (or takes the cached outcome for `key`).
pub(crate) fn run(dev: &dyn Device, key: Key, blocks: &[u32]) -> Result<SelfTestReport> {
    let info = dev.info();
    let refuse = |r: &Refusal| Error::SelfTestFailed {
        device: info.name.clone(),
        driver: info.driver.clone(),
        claimed: r.claimed.clone(),
        measured: r.measured.clone(),
    };
    let cached = super::lock(&CACHE)
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, o)| o.clone());
    if let Some(outcome) = cached {
        return match outcome {
            Ok(report) => Ok(SelfTestReport {
                cached: true,
                ..report.clone()
            }),
            Err(r) => Err(refuse(&r)),
        };
    }
    let start = Instant::now();
    let mut layout = Ok(());
    for &block in blocks {
        layout = layout.and_then(|()| check_layout(dev, block));
    }
    let outcome = match layout {
        Err(Measured::Refused(r)) => Err(r),
        Err(Measured::Failed(e)) => return Err(e),
        Ok(()) => {
            let f32_kept = ieee_results::<f32>(dev)?;
            let f64_kept = if info.float64 {
                Some(ieee_results::<f64>(dev)?)
            } else {
                None
            };
            Ok(SelfTestReport {
                blocks: blocks.to_vec(),
                subgroup_size: info.subgroup_size,
                subnormals_f32_kept: f32_kept,
                subnormals_f64_kept: f64_kept,
                took: start.elapsed(),
                cached: false,
            })
        }
    };
    super::lock(&CACHE).push((key, outcome.clone()));
    outcome.map_err(|r| refuse(&r))
}

/// Why a layout check did not pass: the device failed it, or the test could not run.
enum Measured {
    Refused(Refusal),
    Failed(Error),
}

impl From<Error> for Measured {
    fn from(e: Error) -> Self {
        Measured::Failed(e)
    }
}

/// One dispatch of `selftest` at `block` invocations, and its facts.
fn facts(dev: &dyn Device, block: u32) -> Result<Vec<u32>> {
    let src = DeviceVec::from_slice(dev, &inputs::<f32>())?;
    let mut facts = DeviceVec::<u32>::alloc(dev, block as usize * FACTS)?;
    facts.fill(dev, u32::MAX)?;
    let results = DeviceVec::<f32>::alloc(dev, RESULTS)?;
    launch(dev, ElemKind::F32, block, &src, &facts, &results)?;
    facts.to_vec(dev)
}

fn launch<T: Element>(
    dev: &dyn Device,
    elem: ElemKind,
    block: u32,
    src: &DeviceVec<T>,
    facts: &DeviceVec<u32>,
    results: &DeviceVec<T>,
) -> Result<()> {
    dev.launch(&Launch {
        kernel: Kernel {
            name: "selftest",
            elem,
            consts: &[],
        },
        block,
        groups: [1, 1],
        bindings: &[
            src.binding(0, src.len()),
            facts.binding(0, facts.len()),
            results.binding(0, results.len()),
        ],
        params: &[],
    })
}

/// Checks every invocation's record of one workgroup of `block` invocations against the
/// claims in `dev.info()`.
fn check_layout(dev: &dyn Device, block: u32) -> std::result::Result<(), Measured> {
    let info = dev.info();
    let words = facts(dev, block)?;
    let verdict = judge(info, block, &words);
    verdict.map_err(|measured| {
        Measured::Refused(Refusal {
            claimed: format!(
                "subgroups of {} invocations{}, so {} full subgroups in a workgroup of {block}",
                info.subgroup_size,
                if info.subgroup_size_pinned {
                    " (pinned, full subgroups required)"
                } else {
                    ""
                },
                block / info.subgroup_size.max(1)
            ),
            measured,
        })
    })
}

/// The first way the records of a workgroup of `block` invocations break the claims, in words.
fn judge(info: &DeviceInfo, block: u32, words: &[u32]) -> std::result::Result<(), String> {
    let size = info.subgroup_size;
    let n = block as usize;
    let rec = |i: usize| &words[i * FACTS..(i + 1) * FACTS];
    // What the invocations saw, summarised for the message.
    let sizes: Vec<u32> = (0..n).map(|i| rec(i)[0]).collect();
    let max_lane = (0..n).map(|i| rec(i)[1]).max().unwrap_or(0);
    let max_id = (0..n).map(|i| rec(i)[2]).max().unwrap_or(0);
    let counts: Vec<u32> = (0..n).map(|i| rec(i)[4]).collect();
    let summary = format!(
        "gl_SubgroupSize {}, gl_SubgroupInvocationID up to {max_lane}, gl_SubgroupID up to \
         {max_id}, gl_NumSubgroups {}, a ballot of every lane counting {} to {}",
        range(&sizes),
        range(&(0..n).map(|i| rec(i)[3]).collect::<Vec<_>>()),
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0),
    );
    if size == 0 || !block.is_multiple_of(size) {
        return Err(format!(
            "a workgroup of {block} is no whole number of subgroups ({summary})"
        ));
    }
    let subgroups = block / size;
    let mut seen = vec![false; n];
    for i in 0..n {
        let r = rec(i);
        let (sg_size, lane, id, num) = (r[0], r[1], r[2], r[3]);
        let bad = |what: &str| {
            Err(format!(
                "{summary} (first disagreement: invocation {i}, {what})"
            ))
        };
        if sg_size != size {
            return bad(&format!("gl_SubgroupSize {sg_size}"));
        }
        if num != subgroups {
            return bad(&format!("gl_NumSubgroups {num}"));
        }
        if lane >= size || id >= subgroups {
            return bad(&format!(
                "gl_SubgroupInvocationID {lane}, gl_SubgroupID {id}"
            ));
        }
        let slot = (id * size + lane) as usize;
        if std::mem::replace(&mut seen[slot], true) {
            return bad(&format!(
                "subgroup {id} lane {lane} given to a second invocation"
            ));
        }
        if r[4] != size {
            return bad(&format!(
                "a ballot of every lane of its subgroup counts {}",
                r[4]
            ));
        }
        if r[5] != size / 2 {
            return bad(&format!(
                "a ballot of the odd lanes counts {} of {size}",
                r[5]
            ));
        }
        if r[10] != 1 {
            return bad(&format!("{} lanes elected in one subgroup", r[10]));
        }
        let low_word = if size >= 32 {
            u32::MAX
        } else {
            (1u32 << size) - 1
        };
        if r[11] != low_word {
            return bad(&format!(
                "a ballot of every lane gives the low word {:#x}",
                r[11]
            ));
        }
    }
    // Every (subgroup, lane) is taken once: the invocation holding each is now known, and the
    // shuffles must bring exactly its value.
    let mut at = vec![0u32; n];
    for i in 0..n {
        let r = rec(i);
        at[(r[2] * size + r[1]) as usize] = i as u32;
    }
    for i in 0..n {
        let r = rec(i);
        let (id, lane) = (r[2], r[1]);
        let who = |l: u32| at[(id * size + l) as usize];
        let bad = |what: &str, got: u32, want: u32| {
            Err(format!(
                "{summary} (first disagreement: invocation {i}, subgroup {id} lane {lane}: {what} \
                 returned invocation {got}'s value, expected invocation {want}'s)"
            ))
        };
        let next = who((lane + 1) % size);
        if r[6] != next {
            return bad("subgroupShuffle from lane + 1", r[6], next);
        }
        if size >= 2 && r[7] != who(lane ^ 1) {
            return bad("subgroupShuffleXor by 1", r[7], who(lane ^ 1));
        }
        if lane >= 1 && r[8] != who(lane - 1) {
            return bad("subgroupShuffleUp by 1", r[8], who(lane - 1));
        }
        if lane + 1 < size && r[9] != who(lane + 1) {
            return bad("subgroupShuffleDown by 1", r[9], who(lane + 1));
        }
    }
    Ok(())
}

/// `a` or `a..b` for the values of a list.
fn range(v: &[u32]) -> String {
    let (lo, hi) = (
        v.iter().min().copied().unwrap_or(0),
        v.iter().max().copied().unwrap_or(0),
    );
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}..{hi}")
    }
}

/// The float test's inputs: the smallest subnormal, the smallest normal, a normal whose
/// square is subnormal, the largest subnormal, 1, 0. (A flushing comparison finds the first
/// and the fourth equal, so min and max of them go wrong.)
trait SubnormalProbe: Element + Copy {
    fn inputs() -> [Self; 6];
    /// What the shader's `results` must hold where subnormals are kept (IEEE arithmetic).
    fn expected(x: [Self; 6]) -> [Self; RESULTS];
}

macro_rules! probe_float {
    ($t:ty, $small:expr) => {
        impl SubnormalProbe for $t {
            fn inputs() -> [Self; 6] {
                [
                    <$t>::from_bits(1),
                    <$t>::MIN_POSITIVE,
                    $small,
                    <$t>::from_bits(<$t>::MIN_POSITIVE.to_bits() - 1),
                    1.0,
                    0.0,
                ]
            }
            fn expected(x: [Self; 6]) -> [Self; RESULTS] {
                let [tiny, normal, small, largest, one, zero] = x;
                [
                    tiny + tiny,
                    normal - tiny,
                    small * small,
                    tiny * one,
                    if tiny > zero { one } else { zero },
                    largest + tiny,
                    largest,
                    tiny.max(largest),
                    largest.min(tiny),
                ]
            }
        }
    };
}
probe_float!(f32, 1e-20);
probe_float!(f64, 1e-160);

fn inputs<T: SubnormalProbe>() -> Vec<T> {
    T::inputs().to_vec()
}

/// Whether the device's `T` arithmetic, as its float kernels compute now, gives the IEEE
/// results on subnormal inputs and results.
fn ieee_results<T: SubnormalProbe>(dev: &dyn Device) -> Result<bool> {
    let block = crate::plan::BLOCK;
    let src = DeviceVec::from_slice(dev, &inputs::<T>())?;
    let facts = DeviceVec::<u32>::alloc(dev, block as usize * FACTS)?;
    let mut results = DeviceVec::<T>::alloc(dev, RESULTS)?;
    results.fill(dev, T::inputs()[4])?;
    launch(dev, T::KIND, block, &src, &facts, &results)?;
    let got = results.to_vec(dev)?;
    let want = T::expected(T::inputs());
    Ok(got
        .iter()
        .zip(&want)
        .all(|(g, w)| g.to_bits64() == w.to_bits64()))
}

/// Whether `dev`'s float kernels of `elem`, set to their exact variant, give the IEEE results
/// (cached for `key`, the device the caller identifies).
pub(crate) fn emulation_holds(dev: &dyn Device, key: &Key, elem: ElemKind) -> Result<bool> {
    let cached = super::lock(&EMULATION)
        .iter()
        .find(|(k, e, _)| k == key && *e == elem)
        .map(|c| c.2);
    if let Some(holds) = cached {
        return Ok(holds);
    }
    let holds = match elem {
        ElemKind::F64 => ieee_results::<f64>(dev)?,
        _ => ieee_results::<f32>(dev)?,
    };
    super::lock(&EMULATION).push((key.clone(), elem, holds));
    Ok(holds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{BackendKind, DeviceType, SubgroupFeatures, Subnormals};

    fn info(size: u32) -> DeviceInfo {
        DeviceInfo {
            backend: BackendKind::Vulkan,
            index: 0,
            name: "test".into(),
            vendor_id: 0,
            device_type: DeviceType::Cpu,
            driver: String::new(),
            subgroup_size: size,
            min_subgroup_size: size,
            max_subgroup_size: size,
            subgroup_size_pinned: true,
            subgroup_features: SubgroupFeatures::default(),
            max_binding_bytes: 1 << 27,
            binding_alignment: 16,
            max_groups: [65535; 3],
            shared_memory_bytes: 32768,
            max_shared_memory_bytes: 32768,
            unit_shared_memory_bytes: 0,
            compute_units: 0,
            max_block: 1024,
            int64: true,
            float64: true,
            int64_atomics: false,
            workgroup_coherence: false,
            subnormals_f32: Subnormals::Observed,
            subnormals_f64: Subnormals::Observed,
        }
    }

    /// The records a device that runs `run` lanes per subgroup writes, whatever it claims.
    fn records(block: u32, claim: u32, run: u32) -> Vec<u32> {
        let mut w = Vec::new();
        for i in 0..block {
            let (id, lane) = (i / run, i % run);
            let value = |l: u32| id * run + l % run;
            w.extend([
                claim,
                lane,
                id,
                block / run,
                run,
                run / 2,
                value(lane + 1),
                value(lane ^ 1),
                if lane >= 1 { value(lane - 1) } else { i },
                if lane + 1 < run { value(lane + 1) } else { i },
                1,
                if run >= 32 { u32::MAX } else { (1 << run) - 1 },
            ]);
        }
        w
    }

    #[test]
    fn a_device_that_runs_its_claim_passes() {
        for size in [4, 8, 16, 32, 64, 128] {
            assert_eq!(judge(&info(size), 256, &records(256, size, size)), Ok(()));
        }
    }

    #[test]
    fn a_device_that_runs_fewer_lanes_than_it_claims_is_refused() {
        for claim in [32, 64, 128] {
            let err = judge(&info(claim), 256, &records(256, claim, 16)).unwrap_err();
            assert!(err.contains("gl_NumSubgroups 16"), "{err}");
            assert!(err.contains("gl_SubgroupInvocationID up to 15"), "{err}");
        }
    }

    #[test]
    fn a_wrong_shuffle_is_refused() {
        let mut w = records(256, 8, 8);
        w[3 * FACTS + 7] ^= 1;
        let err = judge(&info(8), 256, &w).unwrap_err();
        assert!(err.contains("subgroupShuffleXor"), "{err}");
    }

    #[test]
    fn the_subnormal_probe_expects_subnormal_results() {
        let want = f32::expected(f32::inputs());
        assert_eq!(want[0].to_bits(), 2);
        assert!(want[1].is_subnormal() && want[2].is_subnormal());
        assert_eq!(want[4], 1.0);
        assert_eq!(want[5], f32::MIN_POSITIVE);
        assert_eq!(want[7].to_bits(), f32::MIN_POSITIVE.to_bits() - 1);
        assert_eq!(want[8].to_bits(), 1);
        let want = f64::expected(f64::inputs());
        assert!(want[2].is_subnormal() && want[2] > 0.0);
    }
}
