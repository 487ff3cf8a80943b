//! The float orders of README's "Deterministic floats" (and the module docs of `reduce`, `scan`,
//! `stencil` and `reduce_by_key`), each paragraph transcribed into plain loops from the text alone and compared
//! bit for bit with the CPU reference: if the text leaves out or misstates a step, a
//! transcription of it gives other bits somewhere.

mod common;

use common::{float_edges, float_edges_f32, seed};
use std::fmt::Display;
use std::ops::{Add, Mul};
use xwarp::cpu::reduce::Reduce;
use xwarp::cpu::{reduce as ref_reduce, scan as ref_scan, stencil as ref_stencil};
use xwarp::reduce::ReduceOp;
use xwarp::scan::ScanKind;
use xwarp::stencil::StencilElement;
use xwarp::Rng;

const WARP: usize = 32;
const BLOCK: usize = 256;
const ITEMS: usize = 16;
const TILE: usize = 4096;

const SIZES: [usize; 12] = [
    1,
    2,
    31,
    32,
    33,
    255,
    256,
    257,
    4095,
    4096,
    4097,
    (1 << 20) + 1,
];
/// More than 4096 · 4096 elements: the device reduce's third level.
const THREE_LEVELS: usize = 4096 * 4096 + 1;

const FLOAT_OPS: [ReduceOp; 4] = [
    ReduceOp::Sum,
    ReduceOp::Product,
    ReduceOp::Min,
    ReduceOp::Max,
];
const SCAN_OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];
const KINDS: [ScanKind; 2] = [ScanKind::Inclusive, ScanKind::Exclusive];

/// What the transcriptions need of f32 and f64, written out per type so that nothing comes
/// from the reference.
trait Float:
    Reduce + StencilElement + PartialOrd + Add<Output = Self> + Mul<Output = Self> + Display
{
    const NAME: &'static str;
    /// The min/max identity's bits, as the text gives them.
    const QUIET_NAN: u64;
    const SIGN: u64;
    const EXP_MASK: u64;
    const MANT_MASK: u64;
    const EXP_BIAS: i32;
    const MANT_BITS: u32;
    fn from_bits64(b: u64) -> Self;
    fn from_f64(x: f64) -> Self;
    fn nan(self) -> bool;
    fn negative(self) -> bool;
    fn edges() -> Vec<Self>;
}

impl Float for f32 {
    const NAME: &'static str = "f32";
    const QUIET_NAN: u64 = 0x7fc0_0000;
    const SIGN: u64 = 0x8000_0000;
    const EXP_MASK: u64 = 0x7f80_0000;
    const MANT_MASK: u64 = 0x007f_ffff;
    const EXP_BIAS: i32 = 127;
    const MANT_BITS: u32 = 23;
    fn from_bits64(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
    fn negative(self) -> bool {
        self.is_sign_negative()
    }
    fn edges() -> Vec<Self> {
        float_edges_f32()
    }
}

impl Float for f64 {
    const NAME: &'static str = "f64";
    const QUIET_NAN: u64 = 0x7ff8_0000_0000_0000;
    const SIGN: u64 = 0x8000_0000_0000_0000;
    const EXP_MASK: u64 = 0x7ff0_0000_0000_0000;
    const MANT_MASK: u64 = 0x000f_ffff_ffff_ffff;
    const EXP_BIAS: i32 = 1023;
    const MANT_BITS: u32 = 52;
    fn from_bits64(b: u64) -> Self {
        f64::from_bits(b)
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
    fn negative(self) -> bool {
        self.is_sign_negative()
    }
    fn edges() -> Vec<Self> {
        float_edges()
    }
}

// ---- "Operators" ------------------------------------------------------------------------

/// `a` below `b` with -0.0 < +0.0 (neither is NaN).
fn below<T: Float>(a: T, b: T) -> bool {
    a < b || (a == b && a.negative() && !b.negative())
}

/// `op(a, b)`, `a` the earlier operand.
fn op<T: Float>(o: ReduceOp, a: T, b: T) -> T {
    match o {
        ReduceOp::Sum => a + b,
        ReduceOp::Product => a * b,
        // minNum/maxNum: a NaN operand is ignored; both NaN gives `b`.
        ReduceOp::Min | ReduceOp::Max if a.nan() => b,
        ReduceOp::Min | ReduceOp::Max if b.nan() => a,
        ReduceOp::Min if below(b, a) => b,
        ReduceOp::Min => a,
        ReduceOp::Max if below(a, b) => b,
        ReduceOp::Max => a,
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => unreachable!("integers only"),
    }
}

fn id<T: Float>(o: ReduceOp) -> T {
    match o {
        ReduceOp::Sum => T::from_f64(-0.0),
        ReduceOp::Product => T::from_f64(1.0),
        _ => T::from_bits64(T::QUIET_NAN),
    }
}

// ---- "Warp reduce" ----------------------------------------------------------------------

/// One warp's 32 lanes: `x[base..]`, `id` past the end.
fn lanes<T: Float>(o: ReduceOp, x: &[T], base: usize, count: usize) -> Vec<T> {
    (0..count)
        .map(|l| {
            if base + l < x.len() {
                x[base + l]
            } else {
                id(o)
            }
        })
        .collect()
}

/// The xor butterfly over `v.len()` lanes (32, or 256 in the device reduce's tile).
fn butterfly<T: Float>(o: ReduceOp, mut v: Vec<T>) -> Vec<T> {
    let mut s = 1;
    while s < v.len() {
        let before = v.clone();
        for (l, out) in v.iter_mut().enumerate() {
            let (lo, hi) = (l.min(l ^ s), l.max(l ^ s));
            *out = op(o, before[lo], before[hi]);
        }
        s *= 2;
    }
    v
}

/// Lane 0 after the shift-down form over 32 lanes.
fn shift_down<T: Float>(o: ReduceOp, mut v: Vec<T>) -> T {
    for s in [16, 8, 4, 2, 1] {
        let before = v.clone();
        for (l, out) in v.iter_mut().enumerate() {
            let source = if l + s < WARP {
                before[l + s]
            } else {
                before[l]
            };
            *out = op(o, before[l], source);
        }
    }
    v[0]
}

fn text_warp_butterfly<T: Float>(o: ReduceOp, x: &[T]) -> Vec<T> {
    let mut y = Vec::new();
    for base in (0..x.len()).step_by(WARP) {
        let v = butterfly(o, lanes(o, x, base, WARP));
        y.extend(&v[..WARP.min(x.len() - base)]);
    }
    y
}

fn text_warp_down<T: Float>(o: ReduceOp, x: &[T]) -> Vec<T> {
    (0..x.len())
        .step_by(WARP)
        .map(|base| shift_down(o, lanes(o, x, base, WARP)))
        .collect()
}

// ---- "Block reduce" ---------------------------------------------------------------------

fn text_block_reduce<T: Float>(o: ReduceOp, x: &[T]) -> Vec<T> {
    let mut y = Vec::new();
    for base in (0..x.len()).step_by(BLOCK) {
        let block = lanes(o, x, base, BLOCK);
        let w: Vec<T> = (0..BLOCK / WARP)
            .map(|w| shift_down(o, block[w * WARP..(w + 1) * WARP].to_vec()))
            .collect();
        y.push(shift_down(o, lanes(o, &w, 0, WARP)));
    }
    y
}

// ---- "Device reduce" --------------------------------------------------------------------

fn reduce_tile<T: Float>(o: ReduceOp, x: &[T]) -> T {
    let m = x.len();
    let threads: Vec<T> = (0..BLOCK)
        .map(|t| {
            let mut acc = id(o);
            for k in 0..ITEMS {
                if k * BLOCK + t < m {
                    acc = op(o, acc, x[k * BLOCK + t]);
                }
            }
            acc
        })
        .collect();
    butterfly(o, threads)[0]
}

/// The device reduce and the number of levels it took.
fn text_device_reduce<T: Float>(o: ReduceOp, x: &[T]) -> (T, usize) {
    let mut input = x.to_vec();
    let mut levels = 1;
    while input.len() > TILE {
        input = input.chunks(TILE).map(|t| reduce_tile(o, t)).collect();
        levels += 1;
    }
    (reduce_tile(o, &input), levels)
}

// ---- "Warp scan" ------------------------------------------------------------------------

fn kogge_stone<T: Float>(o: ReduceOp, mut v: Vec<T>) -> Vec<T> {
    for d in [1, 2, 4, 8, 16] {
        let before = v.clone();
        for (l, out) in v.iter_mut().enumerate().skip(d) {
            *out = op(o, before[l - d], before[l]);
        }
    }
    v
}

fn text_warp_scan<T: Float>(o: ReduceOp, kind: ScanKind, x: &[T]) -> Vec<T> {
    let mut y = Vec::new();
    for base in (0..x.len()).step_by(WARP) {
        let v = kogge_stone(o, lanes(o, x, base, WARP));
        for l in 0..WARP.min(x.len() - base) {
            y.push(match kind {
                ScanKind::Inclusive => v[l],
                ScanKind::Exclusive if l == 0 => id(o),
                ScanKind::Exclusive => v[l - 1],
            });
        }
    }
    y
}

// ---- "Block scan" -----------------------------------------------------------------------

/// Steps 1 to 3 of the block scan over 256 values: every thread's `TP` and `WP[8]`.
fn block_steps<T: Float>(o: ReduceOp, x: &[T]) -> (Vec<T>, T) {
    let mut tp = Vec::with_capacity(BLOCK);
    let mut wp = id(o);
    for w in 0..BLOCK / WARP {
        let v = kogge_stone(o, x[w * WARP..(w + 1) * WARP].to_vec());
        for l in 0..WARP {
            let e = if l == 0 { id(o) } else { v[l - 1] };
            tp.push(op(o, wp, e));
        }
        wp = op(o, wp, v[WARP - 1]);
    }
    (tp, wp)
}

fn text_block_scan<T: Float>(o: ReduceOp, kind: ScanKind, x: &[T]) -> Vec<T> {
    let mut y = Vec::new();
    for base in (0..x.len()).step_by(BLOCK) {
        let block = lanes(o, x, base, BLOCK);
        let (tp, _) = block_steps(o, &block);
        for t in 0..BLOCK.min(x.len() - base) {
            y.push(match kind {
                ScanKind::Exclusive => tp[t],
                ScanKind::Inclusive => op(o, tp[t], block[t]),
            });
        }
    }
    y
}

// ---- "Device scan" ----------------------------------------------------------------------

struct ScanTile<T> {
    /// `s[t][j]`.
    s: Vec<Vec<T>>,
    tp: Vec<T>,
    total: T,
}

fn scan_tile<T: Float>(o: ReduceOp, x: &[T]) -> ScanTile<T> {
    let tile = lanes(o, x, 0, TILE);
    let s: Vec<Vec<T>> = (0..BLOCK)
        .map(|t| {
            let mut acc = id(o);
            (0..ITEMS)
                .map(|j| {
                    acc = op(o, acc, tile[ITEMS * t + j]);
                    acc
                })
                .collect()
        })
        .collect();
    let totals: Vec<T> = s.iter().map(|st| st[ITEMS - 1]).collect();
    let (tp, total) = block_steps(o, &totals);
    ScanTile { s, tp, total }
}

fn text_device_scan<T: Float>(o: ReduceOp, kind: ScanKind, x: &[T]) -> Vec<T> {
    let tiles: Vec<ScanTile<T>> = x.chunks(TILE).map(|c| scan_tile(o, c)).collect();
    let mut y = Vec::with_capacity(x.len());
    let mut e = id(o);
    for (k, tile) in tiles.iter().enumerate() {
        for i in 0..TILE.min(x.len() - k * TILE) {
            let (t, j) = (i / ITEMS, i % ITEMS);
            let p = op(o, e, tile.tp[t]);
            y.push(match kind {
                ScanKind::Inclusive => op(o, p, tile.s[t][j]),
                ScanKind::Exclusive if j == 0 => p,
                ScanKind::Exclusive => op(o, p, tile.s[t][j - 1]),
            });
        }
        e = op(o, e, tile.total);
    }
    y
}

// ---- "Stencil" --------------------------------------------------------------------------

fn text_stencil<T: Float>(w: [T; 5], x: &[T]) -> Vec<T> {
    let n = x.len();
    (0..n)
        .map(|i| {
            if i >= 2 && i + 2 < n {
                (((w[0] * x[i - 2] + w[1] * x[i - 1]) + w[2] * x[i]) + w[3] * x[i + 1])
                    + w[4] * x[i + 2]
            } else {
                T::from_f64(0.0)
            }
        })
        .collect()
}

// ---- Inputs -----------------------------------------------------------------------------

fn sign<T: Float>(rng: &mut Rng) -> u64 {
    if rng.next_u64() & 1 == 0 {
        0
    } else {
        T::SIGN
    }
}

fn nan_with_payload<T: Float>(rng: &mut Rng) -> T {
    let payload = (rng.next_u64() & T::MANT_MASK).max(1);
    T::from_bits64(sign::<T>(rng) | T::EXP_MASK | payload)
}

fn subnormal<T: Float>(rng: &mut Rng) -> T {
    T::from_bits64(sign::<T>(rng) | (rng.next_u64() & T::MANT_MASK))
}

/// A normal value with a random significand and an exponent in `lo..=hi`.
fn normal<T: Float>(rng: &mut Rng, lo: i32, hi: i32) -> T {
    let e = lo + rng.below((hi - lo + 1) as u64) as i32;
    let bits = ((e + T::EXP_BIAS) as u64) << T::MANT_BITS;
    T::from_bits64(sign::<T>(rng) | bits | (rng.next_u64() & T::MANT_MASK))
}

fn value<T: Float>(o: ReduceOp, rng: &mut Rng, specials: bool) -> T {
    let product = o == ReduceOp::Product;
    match rng.below(100) {
        0..=3 if specials => nan_with_payload(rng),
        4..=7 if specials => T::from_bits64(sign::<T>(rng) | T::EXP_MASK),
        // Zeros and subnormals end a product's information, so products get them as specials.
        8..=13 if specials || !product => T::from_bits64(sign::<T>(rng)),
        14..=23 if specials || !product => subnormal(rng),
        // Near 1 in magnitude (log2 within ±0.1), so that a product of 2^20 stays finite.
        _ if product => {
            let m = 1.0 + ((rng.next_u64() >> 11) as f64 / 2f64.powi(53) - 0.5) / 8.0;
            T::from_f64(if rng.next_u64() & 1 == 0 { m } else { -m })
        }
        // Every magnitude for min and max; sums would only overflow.
        24..=33 if o != ReduceOp::Sum => normal(rng, 1 - T::EXP_BIAS, T::EXP_BIAS),
        24..=33 => normal(rng, -40, 40),
        // Powers of two: exact cancellations and ties.
        34..=43 => {
            let e = (rng.below(61) as i32 - 30 + T::EXP_BIAS) as u64;
            T::from_bits64(sign::<T>(rng) | e << T::MANT_BITS)
        }
        _ => T::from_f64(rng.next_f64_mixed()),
    }
}

/// Inputs for `o` at `n`: (name, values). Sums and products get a finite input, and one with
/// NaN, infinities (and for products zeros) in its last eighth only, so that most outputs
/// still compare bit for bit. Min and max get them everywhere and a leading run of NaNs, and
/// an input of NaNs only, so that NaN bits pass through every place where the identity enters.
/// The three-level size gets one input, to keep the run short.
fn inputs<T: Float>(o: ReduceOp, n: usize, rng: &mut Rng) -> Vec<(&'static str, Vec<T>)> {
    let big = n >= THREE_LEVELS;
    let mut list = Vec::new();
    if matches!(o, ReduceOp::Min | ReduceOp::Max) {
        let mut mixed: Vec<T> = (0..n).map(|_| value(o, rng, true)).collect();
        let run = rng.below(n.min(5000) as u64 + 1) as usize;
        for v in &mut mixed[..run] {
            *v = nan_with_payload(rng);
        }
        list.push(("mixed", mixed));
        if !big {
            list.push(("NaNs only", (0..n).map(|_| nan_with_payload(rng)).collect()));
        }
    } else {
        list.push(("finite", (0..n).map(|_| value(o, rng, false)).collect()));
        if !big {
            let tail = n - n / 8;
            let x = (0..n).map(|i| value(o, rng, i >= tail)).collect();
            list.push(("NaN and infinities in the last eighth", x));
        }
    }
    list
}

// ---- Comparison -------------------------------------------------------------------------

/// Fails with the case and the first index where the transcription (`got`) differs from the
/// reference (`want`). Sums and products that are NaN compare as NaN only: their payloads are
/// device-dependent by the text.
fn compare<T: Float>(case: &str, o: ReduceOp, want: &[T], got: &[T]) {
    assert_eq!(want.len(), got.len(), "{case}: output lengths");
    if let Some(i) = (0..want.len()).find(|&i| !same(o, want[i], got[i])) {
        let wrong = (0..want.len())
            .filter(|&i| !same(o, want[i], got[i]))
            .count();
        panic!(
            "{case}: first wrong index {i} of {wrong} wrong: expected (CPU reference) {} = {:#x}, \
             actual (transcription of the text) {} = {:#x}",
            want[i],
            want[i].to_bits64(),
            got[i],
            got[i].to_bits64()
        );
    }
}

fn same<T: Float>(o: ReduceOp, a: T, b: T) -> bool {
    let loose = matches!(o, ReduceOp::Sum | ReduceOp::Product);
    a.to_bits64() == b.to_bits64() || (loose && a.nan() && b.nan())
}

fn label<T: Float>(scope: &str, o: ReduceOp, n: usize, kind: &str, input: &str) -> String {
    format!("{scope} {o} {} n={n} {kind} ({input} input)", T::NAME)
}

// ---- Tests ------------------------------------------------------------------------------

fn operators<T: Float>(rng: &mut Rng) {
    let edges = T::edges();
    let mut sample: Vec<T> = (0..400)
        .map(|_| edges[rng.below(edges.len() as u64) as usize])
        .collect();
    sample.extend((0..20).map(|_| nan_with_payload::<T>(rng)));
    sample.extend((0..20).map(|_| subnormal::<T>(rng)));
    sample.extend([0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY].map(T::from_f64));
    for o in FLOAT_OPS {
        let identity = id::<T>(o);
        assert_eq!(
            T::identity(o).to_bits64(),
            identity.to_bits64(),
            "{o} {}: identity",
            T::NAME
        );
        for &a in &sample {
            let left = T::combine(o, identity, a);
            assert!(same(o, a, left), "{o} {}: op(id, {a}) is {left}", T::NAME);
            // min and max give the identity's NaN for a NaN on the left.
            let right = T::combine(o, a, identity);
            let want = if a.nan() && !matches!(o, ReduceOp::Sum | ReduceOp::Product) {
                identity
            } else {
                a
            };
            assert!(
                same(o, want, right),
                "{o} {}: op({a}, id) is {right}",
                T::NAME
            );
            for &b in &sample {
                let (want, got) = (T::combine(o, a, b), op(o, a, b));
                assert!(
                    same(o, want, got),
                    "{o} {}: op({a} = {:#x}, {b} = {:#x}): expected (CPU reference) {want} = \
                     {:#x}, actual (transcription of the text) {got} = {:#x}",
                    T::NAME,
                    a.to_bits64(),
                    b.to_bits64(),
                    want.to_bits64(),
                    got.to_bits64()
                );
            }
        }
    }
}

#[test]
fn operators_and_identities_are_the_documented_ones() {
    let mut rng = Rng::new(seed());
    operators::<f32>(&mut rng);
    operators::<f64>(&mut rng);
}

fn warp_reduces<T: Float>(rng: &mut Rng) {
    for o in FLOAT_OPS {
        for n in SIZES {
            for (input, x) in inputs::<T>(o, n, rng) {
                compare(
                    &label::<T>("warp reduce", o, n, "butterfly", input),
                    o,
                    &ref_reduce::warp_reduce_butterfly(o, &x),
                    &text_warp_butterfly(o, &x),
                );
                compare(
                    &label::<T>("warp reduce", o, n, "shift-down", input),
                    o,
                    &ref_reduce::warp_reduce_down(o, &x),
                    &text_warp_down(o, &x),
                );
            }
        }
    }
}

#[test]
fn warp_reduce_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    warp_reduces::<f32>(&mut rng);
    warp_reduces::<f64>(&mut rng);
}

fn block_reduces<T: Float>(rng: &mut Rng) {
    for o in FLOAT_OPS {
        for n in SIZES {
            for (input, x) in inputs::<T>(o, n, rng) {
                compare(
                    &label::<T>("block reduce", o, n, "-", input),
                    o,
                    &ref_reduce::block_reduce(o, &x),
                    &text_block_reduce(o, &x),
                );
            }
        }
    }
}

#[test]
fn block_reduce_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    block_reduces::<f32>(&mut rng);
    block_reduces::<f64>(&mut rng);
}

fn device_reduces<T: Float>(rng: &mut Rng) {
    for o in FLOAT_OPS {
        let mut sizes = vec![0];
        sizes.extend(SIZES);
        if matches!(o, ReduceOp::Sum | ReduceOp::Min) {
            sizes.push(THREE_LEVELS);
        }
        for n in sizes {
            for (input, x) in inputs::<T>(o, n, rng) {
                let case = label::<T>("device reduce", o, n, "-", input);
                let (got, levels) = text_device_reduce(o, &x);
                let want_levels = match n {
                    0..=TILE => 1,
                    _ if n <= TILE * TILE => 2,
                    _ => 3,
                };
                assert_eq!(levels, want_levels, "{case}: levels");
                compare(&case, o, &[ref_reduce::device_reduce(o, &x)], &[got]);
            }
        }
    }
}

#[test]
fn device_reduce_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    device_reduces::<f32>(&mut rng);
    device_reduces::<f64>(&mut rng);
}

type Scan<T> = fn(ReduceOp, ScanKind, &[T]) -> Vec<T>;

fn scans<T: Float>(scope: &str, reference: Scan<T>, text: Scan<T>, rng: &mut Rng) {
    for o in SCAN_OPS {
        for n in SIZES {
            for (input, x) in inputs::<T>(o, n, rng) {
                for kind in KINDS {
                    let name = format!("{kind:?}").to_lowercase();
                    compare(
                        &label::<T>(scope, o, n, &name, input),
                        o,
                        &reference(o, kind, &x),
                        &text(o, kind, &x),
                    );
                }
            }
        }
    }
}

#[test]
fn warp_scan_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    scans::<f32>("warp scan", ref_scan::warp_scan, text_warp_scan, &mut rng);
    scans::<f64>("warp scan", ref_scan::warp_scan, text_warp_scan, &mut rng);
}

#[test]
fn block_scan_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    scans::<f32>(
        "block scan",
        ref_scan::block_scan,
        text_block_scan,
        &mut rng,
    );
    scans::<f64>(
        "block scan",
        ref_scan::block_scan,
        text_block_scan,
        &mut rng,
    );
}

#[test]
fn device_scan_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    scans::<f32>(
        "device scan",
        ref_scan::device_scan,
        text_device_scan,
        &mut rng,
    );
    scans::<f64>(
        "device scan",
        ref_scan::device_scan,
        text_device_scan,
        &mut rng,
    );
}

fn stencils<T: Float>(rng: &mut Rng) {
    let mut sizes = vec![0, 3, 4, 5];
    sizes.extend(SIZES);
    for n in sizes {
        // NaN and infinities in the last eighth only, so that most outputs compare bit for bit
        // (the stencil's NaN outputs, sums and products, compare as NaN only).
        let tail = n - n / 8;
        let x: Vec<T> = (0..n)
            .map(|i| value(ReduceOp::Sum, rng, i >= tail))
            .collect();
        let w: [T; 5] = std::array::from_fn(|_| value(ReduceOp::Sum, rng, false));
        compare(
            &format!("stencil {} n={n} weights {w:?}", T::NAME),
            ReduceOp::Sum,
            &ref_stencil::moving_average(w, &x),
            &text_stencil(w, &x),
        );
    }
}

#[test]
fn stencil_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    stencils::<f32>(&mut rng);
    stencils::<f64>(&mut rng);
}

/// Reduce-by-key, from the text: each run of equal keys is cut at indices that are multiples
/// of `items` (thread pieces) and of `tile` (tile pieces); a thread piece folds its values left
/// to right from its first, a tile piece its thread pieces, the run its tile pieces. No
/// identity enters.
fn text_reduce_by_key<T: Float>(
    o: ReduceOp,
    keys: &[u32],
    x: &[T],
    items: usize,
    tile: usize,
) -> Vec<T> {
    let fold = |acc: Option<T>, v: T| Some(acc.map_or(v, |a| op(o, a, v)));
    let mut out = Vec::new();
    let (mut run, mut tile_acc, mut piece) = (None, None, None);
    for i in 0..x.len() {
        piece = fold(piece, x[i]);
        let run_ends = i + 1 == x.len() || keys[i + 1] != keys[i];
        if (i + 1) % items == 0 || run_ends {
            tile_acc = fold(tile_acc, piece.take().expect("a piece"));
        }
        if (i + 1) % tile == 0 || run_ends {
            run = fold(run, tile_acc.take().expect("a tile piece"));
        }
        if run_ends {
            out.push(run.take().expect("a run"));
        }
    }
    out
}

/// Keys of `n` elements in runs of random lengths up to `longest`.
fn run_keys(n: usize, longest: u64, rng: &mut Rng) -> Vec<u32> {
    let mut keys = Vec::with_capacity(n);
    while keys.len() < n {
        let len = (1 + rng.below(longest) as usize).min(n - keys.len());
        keys.extend(std::iter::repeat_n(rng.next_u64() as u32, len));
    }
    keys
}

/// The thread piece and tile piece of reduce-by-key with `u32` keys and values of `T`.
fn rbk_pieces<T: Float>() -> (usize, usize) {
    let (k, v) = (4, std::mem::size_of::<T>());
    (
        xwarp::cpu::runs::items(k, v) as usize,
        xwarp::cpu::runs::tile(k, v),
    )
}

fn reduces_by_key<T: Float>(rng: &mut Rng) {
    let (items, tile) = rbk_pieces::<T>();
    for o in FLOAT_OPS {
        for n in SIZES {
            for (input, x) in inputs::<T>(o, n, rng) {
                for longest in [3, 100, 10_000, 1 << 21] {
                    let keys = run_keys(n, longest, rng);
                    compare(
                        &label::<T>(
                            "reduce-by-key",
                            o,
                            n,
                            &format!("runs up to {longest}"),
                            input,
                        ),
                        o,
                        &xwarp::cpu::runs::reduce_by_key(o, &keys, &x).1,
                        &text_reduce_by_key(o, &keys, &x, items, tile),
                    );
                }
            }
        }
    }
}

#[test]
fn reduce_by_key_is_the_documented_order() {
    let mut rng = Rng::new(seed());
    reduces_by_key::<f32>(&mut rng);
    reduces_by_key::<f64>(&mut rng);
}

/// A value every device combines the same way, whatever it does with subnormals and with the
/// payloads of NaNs that arithmetic makes: no subnormals, and NaNs (with payloads) and
/// infinities only for min and max, which select rather than compute.
fn portable_value<T: Float>(o: ReduceOp, rng: &mut Rng) -> T {
    match (o, rng.below(16)) {
        (ReduceOp::Product, _) => value(o, rng, false),
        (ReduceOp::Min | ReduceOp::Max, 0) => nan_with_payload(rng),
        (ReduceOp::Min | ReduceOp::Max, 1) => T::from_bits64(sign::<T>(rng) | T::EXP_MASK),
        (_, 2) => T::from_bits64(sign::<T>(rng)),
        _ => normal(rng, -40, 40),
    }
}

fn on_devices<T: Float>(rng: &mut Rng) {
    use common::check_on_every_device;
    use xwarp::reduce::{block_reduce_host, device_reduce_host, warp_reduce_host, WarpForm};
    use xwarp::scan::{block_scan, device_scan_host, warp_scan};
    use xwarp::stencil::{moving_average_host, StencilVariant};
    use xwarp::DeviceVec;

    for n in [1, 33, 257, 4097] {
        for o in FLOAT_OPS {
            let mut x: Vec<T> = (0..n).map(|_| portable_value(o, rng)).collect();
            if matches!(o, ReduceOp::Min | ReduceOp::Max) {
                let run = rng.below(n as u64 + 1) as usize;
                for v in &mut x[..run] {
                    *v = nan_with_payload(rng);
                }
            }
            let case = |what: &str| label::<T>(what, o, n, "-", "portable");
            check_on_every_device(
                &case("warp reduce butterfly"),
                &text_warp_butterfly(o, &x),
                |d| warp_reduce_host(d, o, WarpForm::Butterfly, &x),
            );
            check_on_every_device(
                &case("warp reduce shift-down"),
                &text_warp_down(o, &x),
                |d| warp_reduce_host(d, o, WarpForm::ShiftDown, &x),
            );
            check_on_every_device(&case("block reduce"), &text_block_reduce(o, &x), |d| {
                block_reduce_host(d, o, &x)
            });
            check_on_every_device(
                &case("device reduce"),
                &[text_device_reduce(o, &x).0],
                |d| device_reduce_host(d, o, &x).map(|v| vec![v]),
            );
            if o == ReduceOp::Product {
                continue;
            }
            for kind in KINDS {
                let case = |what: &str| label::<T>(what, o, n, &format!("{kind:?}"), "portable");
                check_on_every_device(&case("warp scan"), &text_warp_scan(o, kind, &x), |d| {
                    let src = DeviceVec::from_slice(d, &x)?;
                    let mut dst = DeviceVec::alloc(d, n)?;
                    warp_scan(d, o, kind, &src, &mut dst)?;
                    dst.to_vec(d)
                });
                check_on_every_device(&case("block scan"), &text_block_scan(o, kind, &x), |d| {
                    let src = DeviceVec::from_slice(d, &x)?;
                    let mut dst = DeviceVec::alloc(d, n)?;
                    block_scan(d, o, kind, &src, &mut dst)?;
                    dst.to_vec(d)
                });
                check_on_every_device(&case("device scan"), &text_device_scan(o, kind, &x), |d| {
                    device_scan_host(d, o, kind, &x)
                });
            }
        }
        let (items, tile) = rbk_pieces::<T>();
        for o in FLOAT_OPS {
            let x: Vec<T> = (0..n).map(|_| portable_value(o, rng)).collect();
            let keys = run_keys(n, 600, rng);
            check_on_every_device(
                &label::<T>("reduce-by-key", o, n, "runs up to 600", "portable"),
                &text_reduce_by_key(o, &keys, &x, items, tile),
                |d| xwarp::reduce_by_key::reduce_by_key_host(d, o, &keys, &x).map(|r| r.1),
            );
        }
        let x: Vec<T> = (0..n).map(|_| portable_value(ReduceOp::Sum, rng)).collect();
        let w: [T; 5] = std::array::from_fn(|_| portable_value(ReduceOp::Sum, rng));
        for variant in StencilVariant::ALL {
            check_on_every_device(
                &format!("stencil {variant} {} n={n} weights {w:?}", T::NAME),
                &text_stencil(w, &x),
                |d| moving_average_host(d, variant, w, &x),
            );
        }
    }
}

/// Min and max over NaNs alone give the last element's payload (every fold keeps the later NaN):
/// on whole tiles, where an invocation folds its elements' order keys (`reduce_tile.glsl`), and
/// over several tiles, whose totals are folded the same way.
fn nan_only_on_devices<T: Float>(rng: &mut Rng) {
    use common::check_on_every_device;
    use xwarp::reduce::device_reduce_host;
    for n in [4096, 3 * 4096 + 5, (1 << 20) + 1] {
        for o in [ReduceOp::Min, ReduceOp::Max] {
            let x: Vec<T> = (0..n).map(|_| nan_with_payload(rng)).collect();
            check_on_every_device(
                &label::<T>("device reduce", o, n, "-", "NaNs only"),
                &[text_device_reduce(o, &x).0],
                |d| device_reduce_host(d, o, &x).map(|v| vec![v]),
            );
        }
    }
}

#[test]
fn the_devices_follow_the_text() {
    let mut rng = Rng::new(seed());
    on_devices::<f32>(&mut rng);
    on_devices::<f64>(&mut rng);
    nan_only_on_devices::<f32>(&mut rng);
    nan_only_on_devices::<f64>(&mut rng);
}
