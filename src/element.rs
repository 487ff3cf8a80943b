//! Element types that kernels accept, and a small deterministic random generator for inputs:
//! [`Element::random`] for representative data (what the benchmark times), and
//! [`Element::random_hard`] for the values that break careless kernels (what tests and checks
//! use).

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
    /// A random *hard* value, for tests and checks rather than timing. Integers: edge values
    /// (0, ±1, 2, the lowest and largest, their neighbours) mixed with random bits and small
    /// integers. Floats ([`Rng::hard_f32`], [`Rng::hard_f64`]): normals with exponents over the
    /// whole range, subnormals down to the smallest, ±0.0, halves, integers just below and above
    /// 2^24 (`f32`) or 2^53 (`f64`), where consecutive integers stop being representable, small
    /// integers, and, as `hard` asks, NaNs with random payloads and ±∞.
    fn random_hard(rng: &mut Rng, hard: HardValues) -> Self;
}

/// Which of the hard float values [`Element::random_hard`] may give (integers ignore it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HardValues {
    /// Subnormals. Without them, normals below 2^(emin + F) (2^-103 for `f32`, 2^-970 for
    /// `f64`, F being the fraction bits) are left out too: every such value is then a multiple
    /// of the smallest normal, so every sum of them, rounded at each step or not, is zero or
    /// normal, and a device that flushes subnormals computes it as the CPU does. Products of
    /// them can still be subnormal: a caller that must avoid subnormal results chooses product
    /// inputs itself.
    pub subnormals: bool,
    /// NaNs (both signs, quiet and signalling, random payloads) and ±∞. Worth it wherever
    /// values are only compared or moved (min, max, predicates, shuffles, compaction); a sum or
    /// product that meets them is ±∞ or NaN, and little of the rest of its input shows.
    pub specials: bool,
    /// Normals of the top 24 binades (2^104 and up for `f32`, 2^1000 and up for `f64`), the
    /// largest finite value among them. A sum of a few of them overflows, and `∞ - ∞` is NaN;
    /// without them every magnitude is below 2^(emax - 23), so that a sum of fewer than 2^23
    /// values never overflows and stays a number to compare bit for bit.
    pub huge: bool,
}

impl HardValues {
    /// Finite values of every magnitude, subnormals included: for products and the stencil.
    pub const FINITE: HardValues = HardValues {
        subnormals: true,
        specials: false,
        huge: true,
    };
    /// Everything: for min, max, predicates and moves.
    pub const ALL: HardValues = HardValues {
        subnormals: true,
        specials: true,
        huge: true,
    };

    /// The same without subnormals (for a device that flushes them).
    pub fn without_subnormals(self) -> HardValues {
        HardValues {
            subnormals: false,
            ..self
        }
    }

    /// The same without the largest magnitudes (for sums that are to stay finite).
    pub fn without_huge(self) -> HardValues {
        HardValues {
            huge: false,
            ..self
        }
    }
}

macro_rules! element {
    ($t:ty, $kind:ident, $bits:expr, $rand:expr, $hard:expr) => {
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
            fn random_hard(rng: &mut Rng, hard: HardValues) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($hard)(rng, hard)
            }
        }
    };
}

element!(
    i32,
    I32,
    |v: i32| v as u32 as u64,
    |r: &mut Rng| r.next_u64() as i32,
    |r: &mut Rng, _| r.hard_int_bits(32) as i32
);
element!(
    u32,
    U32,
    |v: u32| v as u64,
    |r: &mut Rng| r.next_u64() as u32,
    |r: &mut Rng, _| r.hard_int_bits(32) as u32
);
element!(
    i64,
    I64,
    |v: i64| v as u64,
    |r: &mut Rng| r.next_u64() as i64,
    |r: &mut Rng, _| r.hard_int_bits(64) as i64
);
element!(
    u64,
    U64,
    |v: u64| v,
    |r: &mut Rng| r.next_u64(),
    |r: &mut Rng, _| r.hard_int_bits(64)
);
element!(
    f32,
    F32,
    |v: f32| v.to_bits() as u64,
    |r: &mut Rng| r.next_f64_mixed() as f32,
    |r: &mut Rng, h| r.hard_f32(h)
);
element!(
    f64,
    F64,
    |v: f64| v.to_bits(),
    |r: &mut Rng| r.next_f64_mixed(),
    |r: &mut Rng, h| r.hard_f64(h)
);

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

    /// Skips `draws` calls of [`Rng::next_u64`] at once: SplitMix64's state moves by a
    /// constant per draw, so a generator can start anywhere in its sequence. [`Element::random`]
    /// takes one draw per integer and three per float ([`Rng::draws_per_value`]), so the value
    /// at index `i` of [`Rng::vec`] is the first value of a generator that skipped
    /// `i * draws_per_value` draws: long inputs can be drawn in parallel pieces.
    pub fn skip(&mut self, draws: u64) {
        self.0 = self
            .0
            .wrapping_add(draws.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }

    /// How many draws [`Element::random`] takes for one value of `kind`: 1 for integers, 3 for
    /// floats ([`Rng::next_f64_mixed`]).
    pub fn draws_per_value(kind: ElemKind) -> u64 {
        match kind {
            ElemKind::F32 | ElemKind::F64 => 3,
            _ => 1,
        }
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

    /// `n` hard values ([`Element::random_hard`]).
    pub fn hard_vec<T: Element>(&mut self, n: usize, hard: HardValues) -> Vec<T> {
        (0..n).map(|_| T::random_hard(self, hard)).collect()
    }

    /// A hard `f32` ([`Element::random_hard`]): of 32 draws on average 10 are normals with an
    /// exponent anywhere from -126 to 127 (from -103 without subnormals, to 103 without huge
    /// values), 4 normals of
    /// magnitude 2^-20 .. 2^21 (sums that round), 4 subnormals of every scale down to 2^-149,
    /// 1 a boundary value (the smallest and largest subnormal, the smallest normal and its
    /// successor, and with huge values the largest normal), 1 a signed zero,
    /// 2 halves, 2 integers just below or above 2^24, 4 small integers, and 4 NaNs or
    /// infinities where `hard.specials` asks for them (normals otherwise). Without subnormals
    /// the subnormal and boundary draws give the smallest normals allowed instead.
    pub fn hard_f32(&mut self, hard: HardValues) -> f32 {
        f32::from_bits(self.hard_float_bits(23, 8, hard) as u32)
    }

    /// A hard `f64`: [`Rng::hard_f32`]'s mix for the `f64` format (exponents -1022 to 1023,
    /// or from -970 without subnormals, to 999 without huge values; subnormals down to
    /// 2^-1074; integers around 2^53).
    pub fn hard_f64(&mut self, hard: HardValues) -> f64 {
        f64::from_bits(self.hard_float_bits(52, 11, hard))
    }

    /// The bits of a hard value of the binary float format with `frac` fraction bits and
    /// `exp` exponent bits ([`Rng::hard_f32`]).
    fn hard_float_bits(&mut self, frac: u32, exp: u32, hard: HardValues) -> u64 {
        let sign = (self.next_u64() & 1) << (frac + exp);
        let frac_mask = (1u64 << frac) - 1;
        let exp_max = (1u64 << exp) - 1;
        let bias = exp_max / 2;
        // Smallest biased exponent of a normal: 1, or 1 + frac without subnormals, so that
        // every value is a multiple of the smallest normal (see `HardValues::subnormals`).
        let exp_min = if hard.subnormals { 1 } else { 1 + frac as u64 };
        // Largest biased exponent: the largest finite, or 24 binades below without huge
        // values (see `HardValues::huge`).
        let exp_top = if hard.huge { exp_max - 1 } else { exp_max - 25 };
        let normal = |rng: &mut Rng, lo: u64, hi: u64| {
            let e = lo + rng.below(hi - lo + 1);
            e << frac | (rng.next_u64() & frac_mask)
        };
        // Values that are exact in both formats, built as f64 and narrowed.
        let narrow = |v: f64| {
            if frac == 23 {
                (v as f32).to_bits() as u64
            } else {
                v.to_bits()
            }
        };
        let magnitude = match self.below(32) {
            0..=9 => normal(self, exp_min, exp_top),
            10..=13 => normal(self, bias - 20, bias + 20),
            14..=17 if hard.subnormals => {
                // Every scale: the significand shifted right by 0 to frac - 1 places.
                let shift = self.below(frac as u64);
                ((self.next_u64() & frac_mask) >> shift).max(1)
            }
            14..=18 if !hard.subnormals => normal(self, exp_min, exp_min + 2),
            18 => match self.below(5) {
                0 => 1,
                1 => frac_mask,
                2 => 1 << frac,
                3 => 1 << frac | 1,
                _ => exp_top << frac | frac_mask,
            },
            19 => 0,
            20..=21 => {
                let scale = self.below(frac as u64);
                let k = self.below(1 << scale);
                narrow(k as f64 + 0.5)
            }
            22..=23 => {
                // 2^(frac+1) - 1 - j (odd and even, exact) or 2^(frac+1) + 2j (the spacing
                // there is 2).
                let top = (1u64 << (frac + 1)) as f64;
                let j = self.below(8) as f64;
                narrow(if self.next_u64() & 1 == 0 {
                    top - 1.0 - j
                } else {
                    top + 2.0 * j
                })
            }
            24..=27 => narrow(self.below(65) as f64),
            28..=29 if hard.specials => {
                // Any payload: quiet or signalling, never zero (that would be an infinity).
                exp_max << frac | (self.next_u64() & frac_mask).max(1)
            }
            30..=31 if hard.specials => exp_max << frac,
            _ => normal(self, exp_min, exp_top),
        };
        sign | magnitude
    }

    /// The bits of a hard integer of `bits` bits (32 or 64), zero-extended: one draw in four
    /// an edge value (0, 1, 2, all ones, the top bit alone, the largest signed value, and the
    /// neighbours of the top bit), one in eight a small integer, the rest random bits.
    fn hard_int_bits(&mut self, bits: u32) -> u64 {
        let mask = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
        let top = 1u64 << (bits - 1);
        let v = match self.below(8) {
            0 | 1 => [0, 1, 2, !0, top, top - 1, top + 1, top - 2][self.below(8) as usize],
            2 => self.below(65),
            _ => self.next_u64(),
        };
        v & mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped_values_equal_the_sequence<T: Element>() {
        let whole: Vec<T> = Rng::new(99).vec(1000);
        for start in [0usize, 1, 2, 517, 999] {
            let mut rng = Rng::new(99);
            rng.skip(start as u64 * Rng::draws_per_value(T::KIND));
            let piece: Vec<T> = rng.vec(1000 - start);
            assert!(
                piece
                    .iter()
                    .zip(&whole[start..])
                    .all(|(a, b)| a.to_bits64() == b.to_bits64()),
                "{} from {start}",
                T::KIND
            );
        }
    }

    #[test]
    fn a_skipped_generator_continues_the_sequence() {
        skipped_values_equal_the_sequence::<i32>();
        skipped_values_equal_the_sequence::<u32>();
        skipped_values_equal_the_sequence::<f32>();
        skipped_values_equal_the_sequence::<i64>();
        skipped_values_equal_the_sequence::<u64>();
        skipped_values_equal_the_sequence::<f64>();
    }

    /// Counts of what `f` draws from 100,000 hard values of each float format.
    fn census<T: Element>(hard: HardValues, f: impl Fn(u64) -> [bool; 6]) -> [usize; 6] {
        let mut rng = Rng::new(17);
        let mut counts = [0; 6];
        for _ in 0..100_000 {
            for (c, hit) in counts
                .iter_mut()
                .zip(f(T::random_hard(&mut rng, hard).to_bits64()))
            {
                *c += usize::from(hit);
            }
        }
        counts
    }

    /// [NaN, ±∞, subnormal, zero, exponent within 2 of the top, magnitude below 2^(emin + F)].
    fn classes(frac: u32, exp: u32, bits: u64) -> [bool; 6] {
        let mag = bits & ((1u64 << (frac + exp)) - 1);
        let e = mag >> frac;
        let top = (1u64 << exp) - 1;
        [
            e == top && mag & ((1u64 << frac) - 1) != 0,
            mag == top << frac,
            e == 0 && mag != 0,
            mag == 0,
            e != top && e + 2 >= top,
            mag != 0 && e < 1 + frac as u64,
        ]
    }

    #[test]
    fn hard_floats_cover_every_class_and_only_what_is_asked() {
        let f32c = |b| classes(23, 8, b);
        let f64c = |b| classes(52, 11, b);
        for counts in [
            census::<f32>(HardValues::ALL, f32c),
            census::<f64>(HardValues::ALL, f64c),
        ] {
            assert!(counts.iter().all(|&c| c > 500), "{counts:?}");
        }
        for counts in [
            census::<f32>(HardValues::FINITE, f32c),
            census::<f64>(HardValues::FINITE, f64c),
        ] {
            assert_eq!(counts[..2], [0, 0], "{counts:?}");
            assert!(counts[2..].iter().all(|&c| c > 500), "{counts:?}");
        }
        let none = HardValues::FINITE.without_subnormals();
        for counts in [census::<f32>(none, f32c), census::<f64>(none, f64c)] {
            // No subnormal, and no normal small enough for a sum to be subnormal.
            assert_eq!((counts[2], counts[5]), (0, 0), "{counts:?}");
            assert!(counts[4] > 20, "{counts:?}");
        }
        let small = HardValues::FINITE.without_huge();
        for counts in [census::<f32>(small, f32c), census::<f64>(small, f64c)] {
            assert_eq!(counts[4], 0, "{counts:?}");
            assert!(counts[2] > 500, "{counts:?}");
        }
        let mut rng = Rng::new(8);
        let v: Vec<f32> = rng.hard_vec(100_000, small);
        assert!(v.iter().all(|x| x.abs() < 2f32.powi(104)));
        assert!(v.iter().any(|x| x.abs() >= 2f32.powi(103)));
        let w: Vec<f64> = rng.hard_vec(100_000, small);
        assert!(w.iter().all(|x| x.abs() < 2f64.powi(1000)));
    }

    #[test]
    fn hard_floats_hold_halves_and_integers_near_the_end_of_exactness() {
        let mut rng = Rng::new(5);
        let v: Vec<f32> = rng.hard_vec(100_000, HardValues::FINITE);
        assert!(v.contains(&16_777_218.0) || v.contains(&-16_777_218.0));
        assert!(v.contains(&16_777_215.0) || v.contains(&-16_777_215.0));
        assert!(v.iter().any(|x| x.fract().abs() == 0.5 && x.abs() > 1e5));
        assert!(v.contains(&f32::from_bits(1)) || v.contains(&-f32::from_bits(1)));
        let w: Vec<f64> = rng.hard_vec(100_000, HardValues::FINITE);
        assert!(w
            .iter()
            .any(|x| x.abs() > 9_007_199_254_740_992.0 && x.abs() < 9.1e15));
        assert!(w.contains(&f64::from_bits(1)) || w.contains(&-f64::from_bits(1)));
    }

    #[test]
    fn hard_values_depend_only_on_the_seed() {
        let a: Vec<f64> = Rng::new(9).hard_vec(1000, HardValues::ALL);
        let b: Vec<f64> = Rng::new(9).hard_vec(1000, HardValues::ALL);
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        let i: Vec<i32> = Rng::new(9).hard_vec(10_000, HardValues::ALL);
        for edge in [0, 1, -1, i32::MIN, i32::MAX] {
            assert!(i.contains(&edge), "{edge}");
        }
        let u: Vec<u64> = Rng::new(9).hard_vec(10_000, HardValues::ALL);
        assert!(u.contains(&u64::MAX) && u.contains(&0) && u.contains(&(1 << 63)));
    }
}
