//! The group reduce: tile totals per rank, gathered by every rank, reduced on every rank.

use super::{check_distinct, view, Group, GroupVec, Piece, TILE};
use crate::cpu::reduce::Reduce;
use crate::device::DeviceVec;
use crate::error::{Error, Result};
use crate::reduce::{self as single, ReduceOp};

/// Reduces all of `input` with `op`; every rank's one-element `output` shard gets the total (an
/// all-reduce). The order is in the module docs: with every shard boundary a multiple of
/// [`TILE`] ([`super::split_even`]) it is the one-device [`single::device_reduce`] of the whole
/// vector, bit for bit. An empty vector gives the identity.
///
/// Errors: [`Error::InvalidParameter`] for an operator the type does not take (bitwise ones
/// for floats) or an output sharing an input's buffer, [`Error::LengthMismatch`] for output
/// shards of another length than 1, [`Error::ForeignBuffer`] for a shard on another rank's
/// device, [`Error::MissingFeature`] where a device lacks what the kernels need; checked before
/// anything runs.
pub fn reduce<T: Reduce>(
    group: &Group<'_>,
    op: ReduceOp,
    input: &GroupVec<T>,
    output: &mut GroupVec<T>,
) -> Result<()> {
    input.check_on(group, "input")?;
    output.check_on(group, "output")?;
    for (r, &len) in output.lens().iter().enumerate() {
        if len != 1 {
            return Err(Error::invalid(
                "output",
                format!("shard {r} of {len} elements"),
                "one element per rank",
            ));
        }
    }
    check_distinct(("output", output), &[("input", input)])?;
    for r in 0..group.ranks() {
        single::require::<T>(group.device(r), op)?;
    }
    let ranks = group.ranks();
    if ranks == 1 {
        // One rank: the tile totals reduced by `device_reduce` are `device_reduce` itself.
        return single::device_reduce(group.device(0), op, input.shard(0), output.shard_mut(0), 0);
    }
    let tiles: Vec<usize> = input.lens().iter().map(|n| n.div_ceil(TILE)).collect();
    let starts: Vec<usize> = tiles
        .iter()
        .scan(0, |at, &t| {
            let start = *at;
            *at += t;
            Some(start)
        })
        .collect();
    let total_tiles: usize = tiles.iter().sum();
    let size = T::KIND.size() as u64;
    let output = &*output;
    group.run(|rank| {
        let (r, dev) = (rank.rank, rank.dev());
        // Every rank's tile totals, in rank order.
        let totals = DeviceVec::<T>::alloc(dev, total_tiles)?;
        single::tile_totals(dev, op, input.shard(r), &totals, starts[r])?;
        rank.step("tile totals")?;
        let piece = |peer: usize, of: usize| Piece {
            peer,
            buffer: totals.raw(),
            offset: starts[of] as u64 * size,
            bytes: tiles[of] as u64 * size,
        };
        let peers = || (0..ranks).filter(move |&p| p != r);
        let sends: Vec<Piece<'_>> = if tiles[r] > 0 {
            peers().map(|p| piece(p, r)).collect()
        } else {
            Vec::new()
        };
        let recvs: Vec<Piece<'_>> = peers()
            .filter(|&p| tiles[p] > 0)
            .map(|p| piece(p, p))
            .collect();
        rank.ex.exchange(r, &sends, &recvs)?;
        rank.step("exchange")?;
        let out = output.shard(r);
        if total_tiles == 1 {
            // A single tile's total is the result (`device_reduce` of it would differ for min
            // and max of a NaN: `op(NaN, id)` is `id`).
            dev.copy(totals.raw(), 0, out.raw(), 0, size)?;
        } else {
            single::device_reduce(dev, op, &totals, &mut view(out)?, 0)?;
        }
        rank.step("reduce of the totals")
    })?;
    Ok(())
}

/// [`reduce`] returning the total to the host.
pub fn reduce_host<T: Reduce>(group: &Group<'_>, op: ReduceOp, input: &GroupVec<T>) -> Result<T> {
    let mut out = GroupVec::alloc(group, &vec![1; group.ranks()])?;
    reduce(group, op, input, &mut out)?;
    Ok(out.shard(0).to_vec(group.device(0))?[0])
}
