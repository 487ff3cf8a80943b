//! Throughput-chain cases: every operation at chain lengths around the kernel's eight-link
//! trips, for partial and whole subgroups and workgroups.
//!
//! The chain runs on each device's native subgroup, so its result depends on the subgroup
//! size: devices are checked against the CPU model at their own size, and compared with each
//! other only where the sizes agree (one case per size).

use super::{check_case, poison_value, CaseReport, Tally};
use std::fmt;
use xwarp::cpu;
use xwarp::device::{Device, DeviceVec};
use xwarp::element::Rng;
use xwarp::error::Result;
use xwarp::throughput::{self, ChainOp};

/// One chain case.
#[derive(Clone, Copy, Debug)]
pub struct ChainCase {
    /// The operation.
    pub op: ChainOp,
    /// Links per thread.
    pub iters: u32,
    /// Threads that store (`out.len()`).
    pub n: usize,
}

impl fmt::Display for ChainCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "throughput chain {} iters={} n={}",
            self.op, self.iters, self.n
        )
    }
}

/// Every chain case: each operation with no link, fewer than, exactly and more than one
/// eight-link trip and a long chain at small lengths, and a short odd chain at about a
/// million threads (fewer in `quick` mode).
pub fn chain_cases(quick: bool) -> Vec<ChainCase> {
    let (iters, sizes): (&[u32], &[usize]) = if quick {
        (&[1, 9], &[33, 257])
    } else {
        (
            &[0, 1, 7, 8, 9, 17, 100],
            &[1, 3, 31, 33, 257, (1 << 16) + 1],
        )
    };
    let mut cases = Vec::new();
    for op in ChainOp::ALL {
        for &n in sizes {
            for &iters in iters {
                cases.push(ChainCase { op, iters, n });
            }
        }
        if !quick {
            cases.push(ChainCase {
                op,
                iters: 11,
                n: 1_000_003,
            });
        }
    }
    cases
}

/// Runs a chain case on `dev`: fills the output with `poison` (a value the result must not
/// hold), runs the chain, downloads.
pub fn run_chain(dev: &dyn Device, case: &ChainCase, seed: u32, poison: u32) -> Result<Vec<u32>> {
    let mut out = DeviceVec::alloc(dev, case.n)?;
    out.fill(dev, poison)?;
    throughput::chain(dev, case.op, case.iters, seed, &mut out)?;
    out.to_vec(dev)
}

/// Runs every chain case.
pub fn run(
    devices: &[(String, &dyn Device)],
    quick: bool,
    rng: &mut Rng,
    tally: &mut Tally,
    report: &mut dyn FnMut(&CaseReport),
) {
    let mut sizes: Vec<u32> = devices.iter().map(|d| d.1.info().subgroup_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for case in chain_cases(quick) {
        let seed = rng.next_u64() as u32;
        for &size in &sizes {
            let group: Vec<(String, &dyn Device)> = devices
                .iter()
                .filter(|d| d.1.info().subgroup_size == size)
                .cloned()
                .collect();
            let expected = cpu::throughput::chain(case.op, case.iters, seed, size, case.n);
            let poison = poison_value(&expected);
            let r = check_case(
                &group,
                format!("{case} subgroup={size}"),
                &expected,
                |dev| run_chain(dev, &case, seed, poison),
            );
            tally.add(&r, report);
        }
    }
}
