//! CPU twin of `shaders/vote.comp` and `cuda/vote.cu`: a 32-lane CUDA warp, lane by lane.
//!
//! Lanes past the end of the input are inactive: they are absent from the active mask, never
//! pass, and do not count for `__all_sync`.

use crate::spec::vote::{Predicate, PredicateElement, VoteOutput, WarpVote, WARP};

/// `__ballot_sync(active, pass)` and the votes derived from it, for one warp of at most 32
/// values.
pub fn warp_vote<T: PredicateElement>(pred: Predicate<T>, warp: &[T]) -> WarpVote {
    debug_assert!(!warp.is_empty() && warp.len() <= WARP);
    // The tail lanes have returned: the active mask is what __ballot_sync(0xffffffff, i < n)
    // gave before they did.
    let active: u32 = if warp.len() == WARP {
        u32::MAX
    } else {
        (1u32 << warp.len()) - 1
    };
    let ballot = warp
        .iter()
        .enumerate()
        .filter(|&(_, &v)| pred.eval(v))
        .fold(0u32, |b, (lane, _)| b | 1 << lane);
    WarpVote {
        ballot,
        any: (ballot != 0) as u32,
        all: (ballot == active) as u32,
        active_mask: active,
        popc: ballot.count_ones(),
        ffs: ffs(ballot),
        leader: ffs(active) - 1,
        active_lanes: active.count_ones(),
    }
}

/// CUDA's `__ffs`: the lowest set bit's position plus one, 0 for 0.
pub fn ffs(x: u32) -> u32 {
    if x == 0 {
        0
    } else {
        x.trailing_zeros() + 1
    }
}

/// `__popc(ballot & lanes_below)`: passing lanes below `lane`.
pub fn exclusive_rank(ballot: u32, lane: usize) -> u32 {
    let lanes_below = (1u32 << lane) - 1;
    (ballot & lanes_below).count_ones()
}

/// Votes on every warp of `input`: a record per warp and a rank per element.
pub fn vote<T: PredicateElement>(pred: Predicate<T>, input: &[T]) -> VoteOutput {
    let mut out = VoteOutput::default();
    for warp in input.chunks(WARP) {
        let w = warp_vote(pred, warp);
        out.ranks
            .extend((0..warp.len()).map(|lane| exclusive_rank(w.ballot, lane)));
        out.warps.push(w);
    }
    out
}
