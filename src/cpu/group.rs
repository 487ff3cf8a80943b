//! CPU reference of `xwarp::group`'s orders: what a group of ranks computes from shards, in the
//! order the group's documentation gives, so float results agree bit for bit. (The group sort
//! has one result, the stable sort of the whole vector: [`crate::cpu::sort`].)

use crate::cpu::reduce::{self, Reduce};
use crate::cpu::scan;
use crate::spec::reduce::{ReduceOp, TILE};
use crate::spec::scan::ScanKind;

/// The group reduce of `shards` (in rank order): the totals of every shard's tiles of
/// [`TILE`] elements (tiles counted from each shard's start), in order, reduced as the
/// device reduce reduces an input; a single tile total is the result itself, none the
/// identity. With every boundary a multiple of [`TILE`], [`reduce::device_reduce`] of the
/// whole vector.
pub fn reduce<T: Reduce>(op: ReduceOp, shards: &[&[T]]) -> T {
    let totals: Vec<T> = shards
        .iter()
        .flat_map(|s| s.chunks(TILE).map(|tile| reduce::tile(op, tile)))
        .collect();
    match totals[..] {
        [single] => single,
        _ => reduce::device_reduce(op, &totals),
    }
}

/// The group scan of `shards` (in rank order), shard after shard: rank `r`'s carry `E[r]` is
/// element `r` of the exclusive device scan of the shards' device reduces; its shard is
/// scanned as the device scan scans a leading tile of `TILE - 1` identities and `E[r]`
/// followed by the shard.
pub fn scan<T: Reduce>(op: ReduceOp, kind: ScanKind, shards: &[&[T]]) -> Vec<T> {
    let totals: Vec<T> = shards
        .iter()
        .map(|s| reduce::device_reduce(op, s))
        .collect();
    let carries = scan::device_scan(op, ScanKind::Exclusive, &totals);
    let mut out = Vec::with_capacity(shards.iter().map(|s| s.len()).sum());
    for (shard, carry) in shards.iter().zip(carries) {
        let mut lead = vec![T::identity(op); TILE];
        lead[TILE - 1] = carry;
        lead.extend_from_slice(shard);
        out.extend_from_slice(&scan::device_scan(op, kind, &lead)[TILE..]);
    }
    out
}
