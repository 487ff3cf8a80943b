//! The scan family's vocabulary: inclusive or exclusive, and the block and tile sizes that are
//! part of the canonical float order.

/// Threads per workgroup of every scan kernel (part of the canonical order).
pub const BLOCK: u32 = 256;
/// Consecutive elements per thread in a device-scan tile (part of the canonical order).
pub const ITEMS: u32 = 16;
/// Elements per device-scan tile.
pub const TILE: usize = (BLOCK * ITEMS) as usize;

/// Inclusive (`y[i]` includes `x[i]`) or exclusive (`y[0]` is the identity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanKind {
    /// `y[i] = x[0] op … op x[i]`.
    Inclusive,
    /// `y[i] = identity op x[0] op … op x[i-1]`.
    Exclusive,
}
