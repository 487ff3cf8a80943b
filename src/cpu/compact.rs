//! CPU twin of `shaders/compact.comp` and `cuda/compact.cu`: the warp-aggregated enqueue and
//! the stable tile-scan-scatter, warp by warp.

use crate::cpu::vote::{exclusive_rank, warp_vote};
use crate::plan::BLOCK;
use crate::vote::{Predicate, PredicateElement, WARP};

/// The unordered enqueue with the warps taking their turns in index order (one of the orders a
/// GPU may give): each warp's leader adds the warp's passing count to the counter, and each
/// passing lane writes at the base it got plus its rank.
pub fn unordered<T: PredicateElement>(pred: Predicate<T>, input: &[T]) -> Vec<T> {
    let mut out = vec![T::zeroed(); input.len()];
    let mut counter = 0usize;
    for warp in input.chunks(WARP) {
        let ballot = warp_vote(pred, warp).ballot;
        // atomicAdd(counter, __popc(ballot)) by the leader, then __shfl_sync of the base.
        let base = counter;
        counter += ballot.count_ones() as usize;
        for (lane, &v) in warp.iter().enumerate() {
            if ballot & (1 << lane) != 0 {
                out[base + exclusive_rank(ballot, lane) as usize] = v;
            }
        }
    }
    out.truncate(counter);
    out
}

/// The stable compaction: per-tile counts of passing elements, their exclusive scan, and a
/// scatter at tile offset + passing lanes of lower warps in the tile + rank in the warp.
pub fn stable<T: PredicateElement>(pred: Predicate<T>, input: &[T]) -> Vec<T> {
    let tile = BLOCK as usize;
    let counts: Vec<usize> = input
        .chunks(tile)
        .map(|t| {
            t.chunks(WARP)
                .map(|w| warp_vote(pred, w).popc as usize)
                .sum()
        })
        .collect();
    let mut offsets = Vec::with_capacity(counts.len());
    let mut total = 0;
    for c in &counts {
        offsets.push(total);
        total += c;
    }
    let mut out = vec![T::zeroed(); total];
    for (t, tile_values) in input.chunks(tile).enumerate() {
        let mut offset = offsets[t];
        for warp in tile_values.chunks(WARP) {
            let ballot = warp_vote(pred, warp).ballot;
            for (lane, &v) in warp.iter().enumerate() {
                if ballot & (1 << lane) != 0 {
                    out[offset + exclusive_rank(ballot, lane) as usize] = v;
                }
            }
            offset += ballot.count_ones() as usize;
        }
    }
    out
}
