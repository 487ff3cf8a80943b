//! CPU twin of `shaders/shfl.comp` and `cuda/shfl.cu`: a 32-lane CUDA warp, lane by lane.

use crate::spec::shfl::ShflOp;
use bytemuck::Zeroable;

const WARP: usize = 32;

/// The lane of a 32-lane warp that `lane` reads under `op` with segments of `width`, after
/// PTX's definition of `shfl.sync`.
pub fn source_lane(op: ShflOp, width: u32, lane: u32) -> u32 {
    let seg = lane & !(width - 1);
    let last = seg + width - 1;
    let a = op.arg() as u32;
    match op {
        ShflOp::Broadcast { .. } => seg | (a & (width - 1)),
        ShflOp::Wrap { .. } => seg | (lane.wrapping_add(a) & (width - 1)),
        ShflOp::Up { .. } => {
            if lane >= seg + a {
                lane - a
            } else {
                lane
            }
        }
        ShflOp::Down { .. } => {
            if lane + a <= last {
                lane + a
            } else {
                lane
            }
        }
        ShflOp::Xor { .. } => {
            let j = lane ^ a;
            if j <= last {
                j
            } else {
                lane
            }
        }
    }
}

/// Applies `op` to every warp of `input`, each lane holding `segm` consecutive values; lanes
/// past the end hold zeros and produce nothing.
pub fn shfl<T: Copy + Zeroable>(op: ShflOp, width: u32, segm: usize, input: &[T]) -> Vec<T> {
    let per_warp = WARP * segm;
    let mut out = Vec::with_capacity(input.len());
    for warp in input.chunks(per_warp) {
        let value = |lane: u32, k: usize| {
            warp.get(lane as usize * segm + k)
                .copied()
                .unwrap_or_else(T::zeroed)
        };
        for i in 0..warp.len() {
            let (lane, k) = ((i / segm) as u32, i % segm);
            out.push(value(source_lane(op, width, lane), k));
        }
    }
    out
}
