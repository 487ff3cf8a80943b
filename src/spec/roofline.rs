//! The roofline kernels' tile.

/// Threads per workgroup (block).
pub const BLOCK: u32 = 256;

/// 16-byte vectors each thread moves.
const VECS: usize = 4;

/// Words per tile: what one workgroup moves, and what one fold of `roofline::read` covers.
pub const TILE_WORDS: usize = BLOCK as usize * VECS * 4;
