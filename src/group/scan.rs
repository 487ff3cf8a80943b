//! The group scan: reduce, then scan with each rank's carry in a leading tile.

use super::{check_distinct, view, Group, GroupVec, Piece};
use crate::cpu::reduce::Reduce;
use crate::device::DeviceVec;
use crate::error::{Error, Result};
use crate::reduce::{self as reduce_one, ReduceOp};
use crate::scan::{self as single, ScanKind, Tuning};

/// Scans all of `input` with `op` (sum, min or max), inclusive or exclusive, into `output`,
/// which has `input`'s layout. The order is in the module docs: integers give the one-device
/// scan; float sums follow the group's own order ([`crate::cpu::group::scan`]).
///
/// Errors: [`Error::InvalidParameter`] for another operator or an output sharing an input's
/// buffer, [`Error::LengthMismatch`] for output shards of other lengths,
/// [`Error::ForeignBuffer`] for a shard on another rank's device, [`Error::MissingFeature`]
/// where a device lacks what the kernels need; checked before anything runs.
pub fn scan<T: Reduce>(
    group: &Group<'_>,
    op: ReduceOp,
    kind: ScanKind,
    input: &GroupVec<T>,
    output: &mut GroupVec<T>,
) -> Result<()> {
    input.check_on(group, "input")?;
    output.check_on(group, "output")?;
    for (r, (a, b)) in input.lens().into_iter().zip(output.lens()).enumerate() {
        if a != b {
            return Err(Error::invalid(
                "output",
                format!("shard {r} of {b} elements"),
                format!("the input's layout ({a} elements in shard {r})"),
            ));
        }
    }
    check_distinct(("output", output), &[("input", input)])?;
    for r in 0..group.ranks() {
        let dev = group.device(r);
        single::require::<T>(dev, op)?;
        reduce_one::require::<T>(dev, op)?;
    }
    let ranks = group.ranks();
    if ranks == 1 {
        return single::device_scan(
            group.device(0),
            op,
            kind,
            input.shard(0),
            output.shard_mut(0),
        );
    }
    let size = T::KIND.size() as u64;
    let output = &*output;
    group.run(|rank| {
        let (r, dev) = (rank.rank, rank.dev());
        let x = input.shard(r);
        let mut y = view(output.shard(r))?;
        // T[0 .. r] from the ranks before, this rank's own total at r (the last rank's total
        // is needed by nobody: it stays the identity, which E[r] does not read).
        let mut totals = DeviceVec::<T>::alloc(dev, r + 1)?;
        if r + 1 < ranks {
            reduce_one::device_reduce(dev, op, x, &mut totals, r)?;
        } else {
            totals.fill(dev, T::identity(op))?;
        }
        rank.step("reduce")?;
        let piece = |peer: usize, at: usize| Piece {
            peer,
            buffer: totals.raw(),
            offset: at as u64 * size,
            bytes: size,
        };
        let sends: Vec<Piece<'_>> = (r + 1..ranks).map(|p| piece(p, r)).collect();
        let recvs: Vec<Piece<'_>> = (0..r).map(|p| piece(p, p)).collect();
        rank.ex.exchange(r, &sends, &recvs)?;
        rank.step("exchange")?;
        if x.is_empty() {
            return Ok(());
        }
        if r == 0 {
            // E[0] is the identity: a leading tile of identities would change no bit.
            single::device_scan(dev, op, kind, x, &mut y)?;
            return rank.step("scan");
        }
        // E[r]: element r of the exclusive scan of the totals.
        let mut carries = DeviceVec::<T>::alloc(dev, r + 1)?;
        single::device_scan(dev, op, ScanKind::Exclusive, &totals, &mut carries)?;
        // The leading tile: identities, then E[r]. Its thread totals are the identity but for
        // the last thread's, E[r]; so the tile's total is E[r] bit for bit, NaNs too. The tile
        // is the one a scan of the shard alone takes: `TILE` for floats (their order), the
        // device's choice for integers (any tile gives their bits).
        let items = single::tile_items::<T>(dev, &Tuning::default(), x.len())?;
        let tuning = Tuning {
            items: Some(items),
            ..Tuning::default()
        };
        let tile = (single::BLOCK * items) as usize;
        let mut lead = DeviceVec::<T>::alloc(dev, tile)?;
        lead.fill(dev, T::identity(op))?;
        dev.copy(
            carries.raw(),
            r as u64 * size,
            lead.raw(),
            (tile - 1) as u64 * size,
            size,
        )?;
        let lead_out = DeviceVec::<T>::alloc(dev, tile)?;
        rank.step("carry")?;
        single::scan_segments(dev, op, kind, &[(&lead, &lead_out), (x, &y)], tuning)?;
        rank.step("scan")
    })?;
    Ok(())
}
