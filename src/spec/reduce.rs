//! The reduction operators, their identities and the device reduce's tile: what the kernels,
//! the algorithm layer ([`crate::reduce`]) and the CPU reference ([`crate::cpu::reduce`]) share.

use crate::element::Element;
use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Threads per workgroup of every reduce kernel (part of the canonical order).
pub const BLOCK: u32 = 256;
/// Elements each thread folds in a device-reduce tile (part of the canonical order).
pub const ITEMS: u32 = 16;
/// Elements per device-reduce tile.
pub const TILE: usize = (BLOCK * ITEMS) as usize;

/// A reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `+` (wrapping for integers).
    Sum,
    /// `*` (wrapping for integers).
    Product,
    /// Minimum (minNum for floats).
    Min,
    /// Maximum (maxNum for floats).
    Max,
    /// Bitwise and (integers only).
    And,
    /// Bitwise or (integers only).
    Or,
    /// Bitwise xor (integers only).
    Xor,
}

impl ReduceOp {
    /// Every operator.
    pub const ALL: [ReduceOp; 7] = [
        ReduceOp::Sum,
        ReduceOp::Product,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::And,
        ReduceOp::Or,
        ReduceOp::Xor,
    ];

    /// The operator's code in the kernels.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Whether the operator is defined for floating-point types.
    pub fn for_floats(self) -> bool {
        matches!(
            self,
            ReduceOp::Sum | ReduceOp::Product | ReduceOp::Min | ReduceOp::Max
        )
    }

    /// The operator's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Product => "product",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
        }
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ReduceOp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ReduceOp::ALL
            .into_iter()
            .find(|op| op.name() == s)
            .ok_or_else(|| Error::invalid("op", s, "sum, product, min, max, and, or, xor"))
    }
}

/// The reduction operators on one element type, with the kernels' semantics.
pub trait Reduce: Element {
    /// The identity of `op` (sum: -0.0 for floats; min/max: NaN for floats).
    fn identity(op: ReduceOp) -> Self;
    /// `op(a, b)`, `a` from the lower lanes.
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
}

macro_rules! int_reduce {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum | ReduceOp::Or | ReduceOp::Xor => 0,
                    ReduceOp::Product => 1,
                    ReduceOp::And => !0,
                    ReduceOp::Min => <$t>::MAX,
                    ReduceOp::Max => <$t>::MIN,
                }
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a.wrapping_add(b),
                    ReduceOp::Product => a.wrapping_mul(b),
                    ReduceOp::Min => a.min(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::And => a & b,
                    ReduceOp::Or => a | b,
                    ReduceOp::Xor => a ^ b,
                }
            }
        }
    )*};
}
int_reduce!(i32, u32, i64, u64);

macro_rules! float_reduce {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            fn identity(op: ReduceOp) -> Self {
                match op {
                    ReduceOp::Sum => -0.0,
                    ReduceOp::Product => 1.0,
                    _ => <$t>::NAN,
                }
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum => a + b,
                    ReduceOp::Product => a * b,
                    // minNum/maxNum with -0.0 below +0.0.
                    ReduceOp::Min if a.is_nan() => b,
                    ReduceOp::Min if b.is_nan() => a,
                    ReduceOp::Min if a == b => if a.is_sign_negative() { a } else { b },
                    ReduceOp::Min => if a < b { a } else { b },
                    ReduceOp::Max if a.is_nan() => b,
                    ReduceOp::Max if b.is_nan() => a,
                    ReduceOp::Max if a == b => if a.is_sign_negative() { b } else { a },
                    ReduceOp::Max => if a > b { a } else { b },
                    // Refused for floats before any kernel runs.
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => a,
                }
            }
        }
    )*};
}
float_reduce!(f32, f64);
