//! CPU twin of `shaders/compact.comp` and `cuda/compact.cu`: tiles of [`BLOCK`] threads ×
//! [`items_per_thread`] elements, each 32-lane warp reading its run of the tile in steps of 32
//! consecutive elements, a ballot per step, warp counts combined per tile.

use crate::cpu::vote::{exclusive_rank, warp_vote};
use crate::spec::compact::{items_per_thread, BLOCK};
use crate::spec::vote::{Predicate, PredicateElement, WARP};

/// Each passing element of one tile at its place in the tile's compacted run: the warps' runs
/// in order, each step's ballot ranking its passing lanes after those of the earlier steps.
/// Returns the number kept.
fn compact_tile<T: PredicateElement>(pred: Predicate<T>, tile: &[T], out: &mut [T]) -> usize {
    let run = WARP * items_per_thread(T::KIND.size()) as usize;
    let mut offset = 0;
    for warp_run in tile.chunks(run) {
        for step in warp_run.chunks(WARP) {
            let ballot = warp_vote(pred, step).ballot;
            for (lane, &v) in step.iter().enumerate() {
                if ballot & (1 << lane) != 0 {
                    out[offset + exclusive_rank(ballot, lane) as usize] = v;
                }
            }
            offset += ballot.count_ones() as usize;
        }
    }
    offset
}

fn tile_len<T: PredicateElement>() -> usize {
    BLOCK as usize * items_per_thread(T::KIND.size()) as usize
}

/// The unordered enqueue with the tiles taking their turns in index order (one of the orders a
/// GPU may give): each tile's leader adds the tile's passing count to the counter, and each
/// passing element writes at the base it got + its warp's offset + its rank.
pub fn unordered<T: PredicateElement>(pred: Predicate<T>, input: &[T]) -> Vec<T> {
    let mut out = vec![T::zeroed(); input.len()];
    let mut counter = 0usize;
    for tile in input.chunks(tile_len::<T>()) {
        // atomicAdd(counter, tile count) by the leader, broadcast through shared memory.
        counter += compact_tile(pred, tile, &mut out[counter..]);
    }
    out.truncate(counter);
    out
}

/// The stable compaction: each tile's passing elements at the count of passing elements of
/// all tiles before it (what the look-back finds) + its warp's offset + its rank.
pub fn stable<T: PredicateElement>(pred: Predicate<T>, input: &[T]) -> Vec<T> {
    let mut out = vec![T::zeroed(); input.len()];
    let mut prefix = 0usize;
    for tile in input.chunks(tile_len::<T>()) {
        prefix += compact_tile(pred, tile, &mut out[prefix..]);
    }
    out.truncate(prefix);
    out
}
