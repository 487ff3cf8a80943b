//! CPU twin of `shaders/stencil.comp` and `cuda/stencil.cu`: the 5-point weighted moving
//! average, in the documented evaluation order (see [`crate::stencil`]).
//!
//! [`moving_average`] is the definition; [`moving_average_warp`] replays the shuffle version
//! lane by lane (CUDA's `__shfl_up_sync`/`__shfl_down_sync` rules and the lane 0/1 and 30/31
//! fix-ups) and must give the same bits.

use crate::element::Element;
use std::ops::{Add, Mul};

/// Points of the stencil.
pub const POINTS: usize = 5;
/// Neighbours on each side of the centre.
pub const HALO: usize = 2;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types the moving average is built for: `f32` and `f64`. Rust never contracts
/// `a * b + c` into an FMA, so the reference rounds every product and sum on its own, as the
/// kernels do.
pub trait StencilElement:
    Element + Add<Output = Self> + Mul<Output = Self> + sealed::Sealed
{
}
impl StencilElement for f32 {}
impl StencilElement for f64 {}

/// `((((w0*a + w1*b) + w2*c) + w3*d) + w4*e)`, every operation rounded on its own.
pub fn weighted<T: StencilElement>(w: [T; POINTS], x: [T; POINTS]) -> T {
    (((w[0] * x[0] + w[1] * x[1]) + w[2] * x[2]) + w[3] * x[3]) + w[4] * x[4]
}

/// The moving average of `input`: `y[i]` = [`weighted`]`(w, x[i-2..=i+2])` for
/// `2 <= i < n-2`, +0.0 for the two outputs at each end (every output when `n <= 4`).
pub fn moving_average<T: StencilElement>(weights: [T; POINTS], input: &[T]) -> Vec<T> {
    let n = input.len();
    (0..n)
        .map(|i| {
            if i >= HALO && i + HALO < n {
                let x: [T; POINTS] = std::array::from_fn(|k| input[i - HALO + k]);
                weighted(weights, x)
            } else {
                T::zeroed()
            }
        })
        .collect()
}

/// The shuffle version, lane by lane: each 32-lane warp holds its centre values and, in lanes
/// 0 and 1, `x[i-2]`, in lanes 30 and 31, `x[i+2]` (zero past the signal's ends); neighbours
/// arrive by shift up/down with CUDA's rule (a lane without a source keeps its own value),
/// and the lanes at the warp's edges take theirs from the halo registers.
pub fn moving_average_warp<T: StencilElement>(weights: [T; POINTS], input: &[T]) -> Vec<T> {
    const WARP: usize = 32;
    let n = input.len();
    let at = |i: isize| {
        if i >= 0 && (i as usize) < n {
            input[i as usize]
        } else {
            T::zeroed()
        }
    };
    let mut out = Vec::with_capacity(n);
    for base in (0..n).step_by(WARP) {
        let c: Vec<T> = (0..WARP).map(|l| at((base + l) as isize)).collect();
        let h: Vec<T> = (0..WARP)
            .map(|l| match l {
                0 | 1 => at(base as isize + l as isize - 2),
                30 | 31 => at((base + l + 2) as isize),
                _ => T::zeroed(),
            })
            .collect();
        let up = |v: &[T], l: usize, d: usize| if l >= d { v[l - d] } else { v[l] };
        let down = |v: &[T], l: usize, d: usize| if l + d < WARP { v[l + d] } else { v[l] };
        for l in 0..WARP.min(n - base) {
            let i = base + l;
            let m2 = if l >= 2 { up(&c, l, 2) } else { h[l] };
            let m1 = if l >= 1 { up(&c, l, 1) } else { down(&h, l, 1) };
            let p1 = if l + 1 < WARP {
                down(&c, l, 1)
            } else {
                up(&h, l, 1)
            };
            let p2 = if l + 2 < WARP { down(&c, l, 2) } else { h[l] };
            out.push(if i >= HALO && i + HALO < n {
                weighted(weights, [m2, m1, c[l], p1, p2])
            } else {
                T::zeroed()
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::Rng;

    #[test]
    fn the_warp_replay_is_the_definition() {
        let mut rng = Rng::new(7);
        for n in [
            0, 1, 2, 3, 4, 5, 6, 31, 32, 33, 34, 35, 63, 64, 65, 66, 1000,
        ] {
            let x: Vec<f64> = rng.vec(n);
            let w: [f64; 5] = std::array::from_fn(|_| rng.next_f64_mixed());
            let a = moving_average(w, &x);
            let b = moving_average_warp(w, &x);
            assert_eq!(a.len(), n);
            assert!(
                a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
                "n={n}"
            );
        }
    }

    #[test]
    fn edges_are_zero_and_the_middle_is_the_formula() {
        let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let y = moving_average([1.0, 10.0, 100.0, 1000.0, 10000.0], &x);
        assert_eq!(y, [0.0, 0.0, 54321.0, 65432.0, 0.0, 0.0]);
        assert_eq!(moving_average([1.0f32; 5], &[1.0; 4]), [0.0; 4]);
    }
}
