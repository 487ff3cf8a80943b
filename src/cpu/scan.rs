//! CPU twin of `shaders/scan.comp`, `shaders/scan_device.comp` and their CUDA twins: the same
//! canonical order (see `shaders/scan_common.glsl`), so float scans agree bit for bit.

use crate::cpu::par::par_each;
use crate::spec::reduce::{Reduce, ReduceOp};
use crate::spec::scan::{ScanKind, BLOCK, ITEMS, TILE};

const WARP: usize = 32;

/// Kogge-Stone inclusive scan of one 32-lane warp (missing lanes hold the identity).
fn warp_inclusive<T: Reduce>(op: ReduceOp, lanes: &[T; WARP]) -> [T; WARP] {
    let mut v = *lanes;
    let mut d = 1;
    while d < WARP {
        v = std::array::from_fn(|l| {
            if l >= d {
                T::combine(op, v[l - d], v[l])
            } else {
                v[l]
            }
        });
        d *= 2;
    }
    v
}

fn padded<T: Reduce>(op: ReduceOp, data: &[T], base: usize) -> [T; WARP] {
    std::array::from_fn(|l| {
        data.get(base + l)
            .copied()
            .unwrap_or_else(|| T::identity(op))
    })
}

/// Warp scan: each 32-element warp scanned on its own.
pub fn warp_scan<T: Reduce>(op: ReduceOp, kind: ScanKind, data: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    for (w, warp) in data.chunks(WARP).enumerate() {
        let incl = warp_inclusive(op, &padded(op, data, w * WARP));
        for l in 0..warp.len() {
            out.push(match kind {
                ScanKind::Inclusive => incl[l],
                ScanKind::Exclusive if l == 0 => T::identity(op),
                ScanKind::Exclusive => incl[l - 1],
            });
        }
    }
    out
}

/// Each thread's exclusive prefix within a block (TP) and the block's total (A), from the
/// threads' totals.
fn block_prefix<T: Reduce>(op: ReduceOp, totals: &[T]) -> (Vec<T>, T) {
    let warps: Vec<[T; WARP]> = totals
        .chunks(WARP)
        .map(|w| warp_inclusive(op, &padded(op, w, 0)))
        .collect();
    let mut prefix = Vec::with_capacity(totals.len());
    let mut all = T::identity(op);
    for incl in &warps {
        for l in 0..WARP {
            let excl = if l == 0 { T::identity(op) } else { incl[l - 1] };
            prefix.push(T::combine(op, all, excl));
        }
        all = T::combine(op, all, incl[WARP - 1]);
    }
    (prefix, all)
}

/// Block scan: each block of [`BLOCK`] elements scanned on its own.
pub fn block_scan<T: Reduce>(op: ReduceOp, kind: ScanKind, data: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(data.len());
    for block in data.chunks(BLOCK as usize) {
        let mut lanes = block.to_vec();
        lanes.resize(BLOCK as usize, T::identity(op));
        let (prefix, _) = block_prefix(op, &lanes);
        for (t, &x) in block.iter().enumerate() {
            out.push(match kind {
                ScanKind::Inclusive => T::combine(op, prefix[t], x),
                ScanKind::Exclusive => prefix[t],
            });
        }
    }
    out
}

/// A device-scan tile: per thread the running values `s` of its [`ITEMS`] elements, the
/// threads' exclusive prefixes, and the tile's total.
struct Tile<T> {
    running: Vec<T>,
    prefix: Vec<T>,
    total: T,
}

fn tile<T: Reduce>(op: ReduceOp, data: &[T]) -> Tile<T> {
    let items = ITEMS as usize;
    let mut running = Vec::with_capacity(BLOCK as usize * items);
    let mut totals = Vec::with_capacity(BLOCK as usize);
    for t in 0..BLOCK as usize {
        let mut acc = T::identity(op);
        for j in 0..items {
            let x = data
                .get(t * items + j)
                .copied()
                .unwrap_or_else(|| T::identity(op));
            acc = T::combine(op, acc, x);
            running.push(acc);
        }
        totals.push(acc);
    }
    let (prefix, total) = block_prefix(op, &totals);
    Tile {
        running,
        prefix,
        total,
    }
}

/// Device scan: tiles of [`TILE`] elements; each tile's exclusive prefix is the left fold of
/// the totals of the tiles before it.
pub fn device_scan<T: Reduce>(op: ReduceOp, kind: ScanKind, data: &[T]) -> Vec<T> {
    // Tiles are independent but for their prefix: their totals first (on all cores), the left
    // fold of the totals, then each tile's outputs (on all cores).
    let tiles: Vec<&[T]> = data.chunks(TILE).collect();
    let mut totals = vec![T::identity(op); tiles.len()];
    let jobs: Vec<(&[T], &mut T)> = tiles.iter().copied().zip(totals.iter_mut()).collect();
    par_each(jobs, |(chunk, total)| *total = tile(op, chunk).total);
    let mut prefixes = Vec::with_capacity(tiles.len());
    let mut e = T::identity(op);
    for &total in &totals {
        prefixes.push(e);
        e = T::combine(op, e, total);
    }
    let mut out = vec![T::identity(op); data.len()];
    let jobs: Vec<_> = tiles
        .iter()
        .copied()
        .zip(prefixes)
        .zip(out.chunks_mut(TILE))
        .collect();
    par_each(jobs, |((chunk, e), dst): ((&[T], T), &mut [T])| {
        scan_tile(op, kind, e, chunk, dst)
    });
    out
}

/// Writes one tile's outputs, given the tile's exclusive prefix `e`.
fn scan_tile<T: Reduce>(op: ReduceOp, kind: ScanKind, e: T, chunk: &[T], dst: &mut [T]) {
    let items = ITEMS as usize;
    let tile = tile(op, chunk);
    for (i, y) in dst.iter_mut().enumerate() {
        let (t, j) = (i / items, i % items);
        let pre = T::combine(op, e, tile.prefix[t]);
        *y = match kind {
            ScanKind::Inclusive => T::combine(op, pre, tile.running[i]),
            ScanKind::Exclusive if j == 0 => pre,
            ScanKind::Exclusive => T::combine(op, pre, tile.running[i - 1]),
        };
    }
}
