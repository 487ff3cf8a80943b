//! Reduction-ladder cases: every rung and integer type at several block sizes and awkward
//! lengths; each case checks the per-block partials and the finished sum.

use super::{check_case, poison_value, CaseReport, Tally};
use std::fmt;
use xwarp::cpu::ladder::{self as cpu, LadderElem};
use xwarp::device::{Device, DeviceVec};
use xwarp::element::{ElemKind, Rng};
use xwarp::error::Result;
use xwarp::ladder::{self, LadderKernel};

/// The element types of the ladder.
pub const LADDER_ELEMS: [ElemKind; 4] =
    [ElemKind::I32, ElemKind::U32, ElemKind::I64, ElemKind::U64];

/// One ladder case.
#[derive(Clone, Copy, Debug)]
pub struct LadderCase {
    /// The rung.
    pub kernel: LadderKernel,
    /// Threads per block.
    pub block: u32,
    /// Element type.
    pub elem: ElemKind,
    /// Input length.
    pub n: usize,
}

impl fmt::Display for LadderCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ladder {} block={} {} n={}",
            self.kernel, self.block, self.elem, self.n
        )
    }
}

/// Every ladder case: each rung and type at blocks 64, 256 and 1024 and small awkward lengths,
/// and at block 512 with 2^20 + 7 elements (`quick`: block 256, 33 and 1000 elements). `large`
/// adds 2^24 + 1 and 2^28 elements for each rung at block 512, `i32` (for GPUs).
pub fn ladder_cases(quick: bool, large: bool) -> Vec<LadderCase> {
    let (blocks, sizes): (&[u32], &[usize]) = if quick {
        (&[256], &[33, 1000])
    } else {
        (&[64, 256, 1024], &[1, 31, 33, 1000, 4099])
    };
    let mut cases = Vec::new();
    for elem in LADDER_ELEMS {
        for kernel in LadderKernel::ALL {
            for &block in blocks {
                for &n in sizes {
                    cases.push(LadderCase {
                        kernel,
                        block,
                        elem,
                        n,
                    });
                }
            }
            if !quick {
                cases.push(LadderCase {
                    kernel,
                    block: 512,
                    elem,
                    n: (1 << 20) + 7,
                });
            }
        }
    }
    if large {
        for kernel in LadderKernel::ALL {
            for n in [(1 << 24) + 1, 1 << 28] {
                cases.push(LadderCase {
                    kernel,
                    block: 512,
                    elem: ElemKind::I32,
                    n,
                });
            }
        }
    }
    cases
}

/// The CPU reference's result for a case: the per-block partials followed by the sum.
pub fn expected<T: LadderElem>(case: &LadderCase, input: &[T]) -> Vec<T> {
    let mut out = cpu::block_sums(case.kernel, case.block, input);
    out.push(cpu::reduce(input));
    out
}

/// Runs a case on `dev` over an uploaded input: [`ladder::reduce_with_partials`] into outputs
/// filled with `poison` first; returns the per-block partials followed by the sum.
pub fn run_ladder_on<T: LadderElem>(
    dev: &dyn Device,
    kernel: LadderKernel,
    block: u32,
    src: &DeviceVec<T>,
    poison: T,
) -> Result<Vec<T>> {
    let mut partials = DeviceVec::alloc(dev, kernel.partials(block, src.len()))?;
    partials.fill(dev, poison)?;
    let mut total = DeviceVec::alloc(dev, 1)?;
    total.fill(dev, poison)?;
    ladder::reduce_with_partials(dev, kernel, block, src, &mut partials, &mut total)?;
    let mut out = partials.to_vec(dev)?;
    out.extend(total.to_vec(dev)?);
    Ok(out)
}

/// Runs a case on `dev`: uploads `input`, then [`run_ladder_on`].
pub fn run_ladder<T: LadderElem>(
    dev: &dyn Device,
    case: &LadderCase,
    input: &[T],
    poison: T,
) -> Result<Vec<T>> {
    let src = DeviceVec::from_slice(dev, input)?;
    run_ladder_on(dev, case.kernel, case.block, &src, poison)
}

fn case_on<T: LadderElem>(
    devices: &[(String, &dyn Device)],
    case: &LadderCase,
    rng: &mut Rng,
) -> CaseReport {
    let input: Vec<T> = (0..case.n).map(|_| T::random(rng)).collect();
    let want = expected(case, &input);
    let poison = poison_value(&want);
    check_case(devices, case.to_string(), &want, |dev| {
        run_ladder(dev, case, &input, poison)
    })
}

/// Whether every device accepts the case's block size and type (a device may have subgroups
/// wider than 64 or too little shared memory).
fn runs_everywhere(devices: &[(String, &dyn Device)], case: &LadderCase) -> bool {
    fn ok<T: LadderElem>(devices: &[(String, &dyn Device)], case: &LadderCase) -> bool {
        devices
            .iter()
            .all(|(_, d)| ladder::check_block::<T>(d.info(), case.kernel, case.block).is_ok())
    }
    match case.elem {
        ElemKind::I32 => ok::<i32>(devices, case),
        ElemKind::U32 => ok::<u32>(devices, case),
        ElemKind::I64 => ok::<i64>(devices, case),
        ElemKind::U64 => ok::<u64>(devices, case),
        // The ladder sums integers only.
        ElemKind::F32 | ElemKind::F64 => false,
    }
}

/// Runs every ladder case (`large` adds the GPU-sized ones); cases with a block size some
/// device refuses are left out.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    large: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    for case in ladder_cases(quick, large) {
        if !runs_everywhere(devices, &case) {
            continue;
        }
        let r = match case.elem {
            ElemKind::I32 => case_on::<i32>(devices, &case, rng),
            ElemKind::U32 => case_on::<u32>(devices, &case, rng),
            ElemKind::I64 => case_on::<i64>(devices, &case, rng),
            ElemKind::U64 => case_on::<u64>(devices, &case, rng),
            ElemKind::F32 | ElemKind::F64 => continue,
        };
        tally.add(&r, report);
    }
}
