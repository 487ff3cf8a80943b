//! The vote family's vocabulary: the 32-lane logical warp, run-time predicates (even/odd of
//! floats decided from the bits) and a warp's vote record.

use crate::element::Element;
use crate::error::{Error, Result};
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
