//! Element types that kernels accept, and a small deterministic random generator for inputs.

use bytemuck::Pod;
use std::fmt;

/// The element types of the CUDA intrinsics: `int`, `unsigned`, `float` and their 64-bit kin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElemKind {
    /// `i32` / CUDA `int`.
    I32,
    /// `u32` / CUDA `unsigned int`.
    U32,
    /// `f32` / CUDA `float`.
    F32,
    /// `i64` / CUDA `long long`.
    I64,
    /// `u64` / CUDA `unsigned long long`.
    U64,
    /// `f64` / CUDA `double`.
    F64,
}

impl ElemKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ElemKind; 6] = [
        ElemKind::I32,
        ElemKind::U32,
        ElemKind::F32,
        ElemKind::I64,
        ElemKind::U64,
        ElemKind::F64,
    ];

    /// Size in bytes.
    pub fn size(self) -> usize {
        match self {
            ElemKind::I32 | ElemKind::U32 | ElemKind::F32 => 4,
            _ => 8,
        }
    }

    /// The Rust name (`"i32"`, ...), also the name of the shader variant built for the type.
    pub fn name(self) -> &'static str {
        match self {
            ElemKind::I32 => "i32",
            ElemKind::U32 => "u32",
            ElemKind::F32 => "f32",
            ElemKind::I64 => "i64",
            ElemKind::U64 => "u64",
            ElemKind::F64 => "f64",
        }
    }

    /// The name of the bit container of the same size (`"b32"` or `"b64"`): kernels that only
    /// move data (shuffles) are built once per size, not once per type.
    pub fn bits_name(self) -> &'static str {
        if self.size() == 4 {
            "b32"
        } else {
            "b64"
        }
    }

    /// The CUDA C++ type.
    pub fn cuda_type(self) -> &'static str {
        match self {
            ElemKind::I32 => "int",
            ElemKind::U32 => "unsigned int",
            ElemKind::F32 => "float",
            ElemKind::I64 => "long long",
            ElemKind::U64 => "unsigned long long",
            ElemKind::F64 => "double",
        }
    }
}

impl fmt::Display for ElemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A type that lives in device buffers and that kernels are built for.
pub trait Element: Pod + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// Which of the kernel element types this is.
    const KIND: ElemKind;
    /// The bit pattern, widened to 64 bits; results are compared by bits, so NaNs compare.
    fn to_bits64(self) -> u64;
    /// A random value: floats are finite and of mixed magnitudes and signs, integers use all bits.
    fn random(rng: &mut Rng) -> Self;
}

macro_rules! element {
    ($t:ty, $kind:ident, $bits:expr, $rand:expr) => {
        impl Element for $t {
            const KIND: ElemKind = ElemKind::$kind;
            fn to_bits64(self) -> u64 {
                #[allow(clippy::redundant_closure_call)]
                ($bits)(self)
            }
            fn random(rng: &mut Rng) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($rand)(rng)
            }
        }
    };
}

element!(
    i32,
    I32,
    |v: i32| v as u32 as u64,
    |r: &mut Rng| r.next_u64() as i32
);
element!(u32, U32, |v: u32| v as u64, |r: &mut Rng| r.next_u64()
    as u32);
element!(i64, I64, |v: i64| v as u64, |r: &mut Rng| r.next_u64()
    as i64);
element!(u64, U64, |v: u64| v, |r: &mut Rng| r.next_u64());
element!(
    f32,
    F32,
    |v: f32| v.to_bits() as u64,
    |r: &mut Rng| r.next_f64_mixed() as f32
);
element!(f64, F64, |v: f64| v.to_bits(), |r: &mut Rng| r
    .next_f64_mixed());

/// SplitMix64: small, fast, and the same sequence everywhere for a given seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// A generator seeded from the clock, for fresh inputs on every run.
    pub fn from_time() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9);
        Rng(nanos ^ (std::process::id() as u64) << 32)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }

    /// A finite float of random sign with magnitude spread over 2^-20 .. 2^20.
    pub fn next_f64_mixed(&mut self) -> f64 {
        let mantissa = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 + 1.0;
        let exp = self.below(41) as i32 - 20;
        let sign = if self.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
        sign * mantissa * 2f64.powi(exp)
    }

    /// `n` random values.
    pub fn vec<T: Element>(&mut self, n: usize) -> Vec<T> {
        (0..n).map(|_| T::random(self)).collect()
    }
}
