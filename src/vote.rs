//! The warp vote family with CUDA semantics: `__ballot_sync`, `__any_sync`, `__all_sync`,
//! `__activemask`, `__popc` and `__ffs`, on a predicate chosen at run time.
//!
//! Each logical thread `t` evaluates the [`Predicate`] on element `t` and is lane `t % 32` of a
//! 32-lane *logical warp*, on every backend and every subgroup size (4, 8, 16, 32, 64, 128).
//! Per warp the kernel writes a [`WarpVote`] record (ballot, any, all, active mask, popcount,
//! find-first-set, leader lane), and per element its exclusive rank among the passing lanes of
//! its warp, `__popc(ballot & lanes_below)`: the rank the warp-aggregated enqueue
//! ([`crate::compact`]) adds to its warp's offset.
//!
//! An input whose length is not a multiple of 32 ends in a partial warp whose missing lanes are
//! *inactive*, as the tail lanes of a CUDA warp that have returned: the CUDA kernel computes
//! `__ballot_sync(0xffffffff, i < n)`, lets the tail lanes return and votes with that mask;
//! the shaders model it (missing lanes neither pass nor count for `all`, and are absent from the
//! active mask).
//!
//! On Vulkan a subgroup of 32 lanes uses the subgroup twins directly (`subgroupBallot`,
//! `subgroupAny/All`, `subgroupElect`, `subgroupBallotBitCount`, `subgroupBallotFindLSB`,
//! `subgroupBallotExclusiveBitCount`); wider subgroups take each warp's 32 bits out of the
//! `uvec4` ballot; narrower ones combine their ballots through shared memory.
//!
//! ```no_run
//! # fn main() -> xwarp::Result<()> {
//! use xwarp::vote::{vote_host, Predicate};
//! let dev = xwarp::backend::open_default()?;
//! let input: Vec<i32> = (0..40).collect();
//! let out = vote_host(&*dev, Predicate::Greater(4), &input)?;
//! assert_eq!(out.warps[0].ballot, 0xffff_ffe0); // lanes 5..31 hold 5..31
//! assert_eq!(out.warps[1].active_mask, 0xff); // 8 lanes in the last warp
//! assert_eq!(out.ranks[7], 2); // lanes 5 and 6 pass below lane 7
//! # Ok(()) }
//! ```

use crate::device::{Device, DeviceVec, Kernel, Launch, SubgroupFeatures};
use crate::error::{Error, Result};
use crate::kernels::VoteParams;
use crate::plan;
pub use crate::spec::vote::{
    Predicate, PredicateElement, VoteOutput, WarpVote, RECORD_WORDS, WARP,
};

/// Layers of [`plan::BLOCK`] elements each workgroup votes on, every load issued before the
/// first vote (memory-level parallelism; the results do not depend on it).
pub const ROWS: u32 = 4;

/// Logical warps covering `n` elements.
pub fn warps(n: usize) -> usize {
    n.div_ceil(WARP)
}

/// Votes on every logical warp of `input`: writes [`RECORD_WORDS`] words per warp into
/// `records` (length `warps(n) * RECORD_WORDS`, see [`WarpVote::from_words`]) and each
/// element's exclusive rank into `ranks` (length `n`). An empty input does nothing.
pub fn vote<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &DeviceVec<T>,
    records: &mut DeviceVec<u32>,
    ranks: &mut DeviceVec<u32>,
) -> Result<()> {
    validate(pred, input.len(), records.len(), ranks.len())?;
    let info = dev.info();
    plan::require(
        info,
        T::KIND,
        SubgroupFeatures::BASIC | SubgroupFeatures::VOTE | SubgroupFeatures::BALLOT,
    )?;
    let kernel = Kernel {
        name: "vote",
        elem: T::KIND,
        consts: &[("ROWS", ROWS)],
    };
    let [code, a_lo, a_hi, b_lo, b_hi] = pred.words();
    // Chunks hold whole workgroups, so no warp spans two launches and every chunk's records
    // start at a whole warp.
    let chunk = plan::chunk_elems(info, T::KIND.size(), plan::BLOCK as u64) as usize;
    for (start, n) in plan::chunks(chunk, input.len()) {
        let groups = plan::grid(info, (n as u64).div_ceil(u64::from(plan::BLOCK * ROWS)))?;
        let params = VoteParams {
            n: n as u32,
            pred: code,
            a_lo,
            a_hi,
            b_lo,
            b_hi,
            pad0: 0,
            pad1: 0,
        };
        dev.launch(&Launch {
            kernel,
            block: plan::BLOCK,
            groups,
            bindings: &[
                input.binding(start, n),
                records.binding(start / WARP * RECORD_WORDS, warps(n) * RECORD_WORDS),
                ranks.binding(start, n),
            ],
            params: bytemuck::bytes_of(&params),
        })?;
    }
    Ok(())
}

/// [`vote`] on host data: uploads, runs, downloads.
pub fn vote_host<T: PredicateElement>(
    dev: &dyn Device,
    pred: Predicate<T>,
    input: &[T],
) -> Result<VoteOutput> {
    let n = input.len();
    validate(pred, n, warps(n) * RECORD_WORDS, n)?;
    let src = DeviceVec::from_slice(dev, input)?;
    let mut records = DeviceVec::alloc(dev, warps(n) * RECORD_WORDS)?;
    let mut ranks = DeviceVec::alloc(dev, n)?;
    vote(dev, pred, &src, &mut records, &mut ranks)?;
    let words = records.to_vec(dev)?;
    Ok(VoteOutput {
        warps: words
            .chunks_exact(RECORD_WORDS)
            .map(|w| WarpVote::from_words(std::array::from_fn(|k| w[k])))
            .collect(),
        ranks: ranks.to_vec(dev)?,
    })
}

fn validate<T: PredicateElement>(
    pred: Predicate<T>,
    n: usize,
    records: usize,
    ranks: usize,
) -> Result<()> {
    pred.validate()?;
    if records != warps(n) * RECORD_WORDS {
        return Err(Error::LengthMismatch {
            name: "records",
            expected: (warps(n) * RECORD_WORDS) as u64,
            actual: records as u64,
        });
    }
    if ranks != n {
        return Err(Error::LengthMismatch {
            name: "ranks",
            expected: n as u64,
            actual: ranks as u64,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::Rng;

    /// The definition in words (an integer is finite and equal to its truncation; even or odd
    /// as that integer), with the host's exact float math.
    fn by_math(v: f64) -> (bool, bool) {
        if !v.is_finite() || v.trunc() != v {
            return (false, false);
        }
        let half = v * 0.5;
        (half.trunc() == half, half.trunc() != half)
    }

    fn values_f64(rng: &mut Rng) -> Vec<f64> {
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.5,
            2.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(1),
            f64::MIN_POSITIVE,
            f64::MAX,
            33_554_433.0,
            4_503_599_627_370_497.0,
            9_007_199_254_740_993.0,
            1_000_000_000_000_000.5,
            -16_777_217.25,
            1e300,
        ];
        for e in -1074..=1023 {
            let p = 2f64.powi(e);
            for x in [p, p + 1.0, p - 1.0, p * 1.5, p + 0.5, -p - 1.0] {
                v.push(x);
            }
        }
        for _ in 0..20_000 {
            v.push(f64::from_bits(rng.next_u64()));
            let e = rng.below(130) as i32 - 10;
            v.push((rng.next_u64() >> 11) as f64 * 2f64.powi(e - 53));
        }
        v
    }

    #[test]
    fn float_parity_from_bits_matches_the_definition() {
        let mut rng = Rng::new(0x5eed);
        for v in values_f64(&mut rng) {
            assert_eq!(
                (v.is_even(), v.is_odd()),
                by_math(v),
                "f64 {v:e} ({:#x})",
                v.to_bits()
            );
            let f = v as f32;
            assert_eq!(
                (f.is_even(), f.is_odd()),
                by_math(f as f64),
                "f32 {f:e} ({:#x})",
                f.to_bits()
            );
            let g = f32::from_bits(v.to_bits() as u32);
            assert_eq!((g.is_even(), g.is_odd()), by_math(g as f64), "f32 {g:e}");
        }
    }
}
