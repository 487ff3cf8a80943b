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
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::VoteParams;
use crate::plan;
use std::cmp::Ordering;
use std::fmt;

/// Lanes of the logical warp every vote acts on (CUDA's warp size).
pub const WARP: usize = 32;

/// 32-bit words per warp in the device-resident record buffer (one [`WarpVote`]).
pub const RECORD_WORDS: usize = 8;

/// Element types a [`Predicate`] can test: the six kernel types.
///
/// Even and odd are defined for floats too: a float is even (odd) when it is an integer —
/// finite and equal to its truncation — and even (odd) as that integer. So `-0.0`, `4.0` and
/// `1e30` are even, `3.0` and `-1.0` odd, and `2.5`, subnormals, infinities and NaN neither.
/// Every kernel decides this from the value's bits alone (exponent and significand), never by
/// the driver's float math, so the answer is the same on every device, subnormals included:
/// with the unbiased exponent `e` and `F` fraction bits (23 for `f32`, 52 for `f64`), a finite
/// non-zero value is an integer when `e >= 0` and the `F - e` lowest bits of its significand
/// (the fraction with its implicit leading one) are zero, and it is odd when bit `F - e` of the
/// significand is one (so every value of magnitude `2^(F+1)` or more is even).
pub trait PredicateElement: Element + PartialOrd {
    /// Whether the value is even (see the trait's documentation for floats).
    fn is_even(self) -> bool;
    /// Whether the value is odd (see the trait's documentation for floats).
    fn is_odd(self) -> bool;
}

macro_rules! int_predicate_element {
    ($($t:ty),*) => {$(
        impl PredicateElement for $t {
            fn is_even(self) -> bool {
                self & 1 == 0
            }
            fn is_odd(self) -> bool {
                self & 1 != 0
            }
        }
    )*};
}
int_predicate_element!(i32, u32, i64, u64);

/// 0: not an integer, 1: even, 2: odd, from the bits of a float with `frac` fraction bits and
/// exponent bias `bias` (the kernels' rule, documented on [`PredicateElement`]).
fn float_parity(bits: u64, frac: u32, bias: u64) -> u8 {
    let sign = 1u64 << (if frac == 23 { 31 } else { 63 });
    let magnitude = bits & !sign;
    if magnitude == 0 {
        return 1;
    }
    let e = magnitude >> frac;
    let exp_max = (sign >> frac) - 1;
    if e == exp_max || e < bias {
        return 0;
    }
    let x = (e - bias) as u32;
    if x > frac {
        return 1;
    }
    let m = (magnitude & ((1u64 << frac) - 1)) | 1u64 << frac;
    let k = frac - x;
    if m & ((1u64 << k) - 1) != 0 {
        return 0;
    }
    if (m >> k) & 1 == 1 {
        2
    } else {
        1
    }
}

macro_rules! float_predicate_element {
    ($($t:ty: $frac:expr, $bias:expr),*) => {$(
        impl PredicateElement for $t {
            fn is_even(self) -> bool {
                float_parity(self.to_bits() as u64, $frac, $bias) == 1
            }
            fn is_odd(self) -> bool {
                float_parity(self.to_bits() as u64, $frac, $bias) == 2
            }
        }
    )*};
}
float_predicate_element!(f32: 23, 127, f64: 52, 1023);

/// A per-element test chosen at run time: it travels to the kernel in the parameter block, so
/// changing it recompiles nothing. Comparisons follow IEEE 754 for floats (NaN passes only
/// `NonZero`; `-0.0` equals `0.0`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Predicate<T> {
    /// The value is even ([`PredicateElement`] defines it for floats).
    Even,
    /// The value is odd ([`PredicateElement`] defines it for floats).
    Odd,
    /// The value is not zero (NaN is not zero).
    NonZero,
    /// `v > threshold`.
    Greater(T),
    /// `v < threshold`.
    Less(T),
    /// `lo <= v && v <= hi`; `lo <= hi` is required.
    InRange {
        /// Smallest passing value.
        lo: T,
        /// Largest passing value.
        hi: T,
    },
}

impl<T: PredicateElement> Predicate<T> {
    /// The predicate's code in the shaders and CUDA kernels.
    pub fn code(self) -> u32 {
        match self {
            Predicate::Even => 0,
            Predicate::Odd => 1,
            Predicate::NonZero => 2,
            Predicate::Greater(_) => 3,
            Predicate::Less(_) => 4,
            Predicate::InRange { .. } => 5,
        }
    }

    /// Whether `v` passes: the CPU twin of `xw_predicate` in the kernels.
    pub fn eval(self, v: T) -> bool {
        match self {
            Predicate::Even => v.is_even(),
            Predicate::Odd => v.is_odd(),
            Predicate::NonZero => v != T::zeroed(),
            Predicate::Greater(a) => v > a,
            Predicate::Less(a) => v < a,
            Predicate::InRange { lo, hi } => lo <= v && v <= hi,
        }
    }

    /// Checks the bounds: a range needs `lo <= hi` (NaN bounds are refused).
    pub fn validate(self) -> Result<()> {
        match self {
            Predicate::InRange { lo, hi }
                if !matches!(lo.partial_cmp(&hi), Some(Ordering::Less | Ordering::Equal)) =>
            {
                Err(Error::invalid(
                    "lo",
                    format!("{lo:?} (with hi = {hi:?})"),
                    "a value <= hi (the range is lo..=hi, NaN bounds are not allowed)",
                ))
            }
            _ => Ok(()),
        }
    }

    /// The predicate's words in the parameter block: code, then the two operands as two
    /// 32-bit words each (low word first; 32-bit types leave the high word zero).
    pub fn words(self) -> [u32; 5] {
        let (a, b) = match self {
            Predicate::Greater(a) | Predicate::Less(a) => (a, T::zeroed()),
            Predicate::InRange { lo, hi } => (lo, hi),
            _ => (T::zeroed(), T::zeroed()),
        };
        let (a, b) = (a.to_bits64(), b.to_bits64());
        [
            self.code(),
            a as u32,
            (a >> 32) as u32,
            b as u32,
            (b >> 32) as u32,
        ]
    }
}

impl<T: fmt::Debug> fmt::Display for Predicate<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Predicate::Even => write!(f, "even"),
            Predicate::Odd => write!(f, "odd"),
            Predicate::NonZero => write!(f, "nonzero"),
            Predicate::Greater(a) => write!(f, "greater({a:?})"),
            Predicate::Less(a) => write!(f, "less({a:?})"),
            Predicate::InRange { lo, hi } => write!(f, "in_range({lo:?}..={hi:?})"),
        }
    }
}

/// What one 32-lane logical warp voted: the values CUDA's intrinsics return to its leader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarpVote {
    /// `__ballot_sync(active_mask, pass)`: bit `l` set when lane `l` is active and passes.
    pub ballot: u32,
    /// `__any_sync(active_mask, pass) != 0`, as 0 or 1.
    pub any: u32,
    /// `__all_sync(active_mask, pass) != 0`, as 0 or 1.
    pub all: u32,
    /// `__activemask()`: the lanes that hold an element (all 32 but in a partial last warp).
    pub active_mask: u32,
    /// `__popc(ballot)`: passing lanes.
    pub popc: u32,
    /// `__ffs(ballot)`: the lowest passing lane plus one, 0 when none passes.
    pub ffs: u32,
    /// `__ffs(__activemask()) - 1`: the lane elected to act for the warp (`subgroupElect`).
    pub leader: u32,
    /// `__popc(__activemask())`: active lanes.
    pub active_lanes: u32,
}

impl WarpVote {
    /// The record as the kernels lay it out: [`RECORD_WORDS`] words in field order.
    pub fn to_words(self) -> [u32; RECORD_WORDS] {
        [
            self.ballot,
            self.any,
            self.all,
            self.active_mask,
            self.popc,
            self.ffs,
            self.leader,
            self.active_lanes,
        ]
    }

    /// The record from its [`RECORD_WORDS`] words.
    pub fn from_words(w: [u32; RECORD_WORDS]) -> Self {
        WarpVote {
            ballot: w[0],
            any: w[1],
            all: w[2],
            active_mask: w[3],
            popc: w[4],
            ffs: w[5],
            leader: w[6],
            active_lanes: w[7],
        }
    }
}

/// Host-side results of a vote: one record per warp and one rank per element.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VoteOutput {
    /// Warp `w` covers elements `32w .. 32w + 32`.
    pub warps: Vec<WarpVote>,
    /// Per element, `__popc(ballot & lanes_below)`: passing lanes below it in its warp.
    pub ranks: Vec<u32>,
}

impl VoteOutput {
    /// Records then ranks as one flat list of words (what tests and `validate` compare).
    pub fn to_words(&self) -> Vec<u32> {
        let mut words: Vec<u32> = self.warps.iter().flat_map(|w| w.to_words()).collect();
        words.extend_from_slice(&self.ranks);
        words
    }
}

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
