//! The compaction family's tile: threads per workgroup and elements per thread.

/// Threads per workgroup of the compaction kernels.
pub const BLOCK: u32 = 256;

/// Elements each thread of a tile handles: 16 of 4 bytes or 8 of 8 bytes (64 bytes a thread).
pub const fn items_per_thread(elem_size: usize) -> u32 {
    if elem_size >= 8 {
        8
    } else {
        16
    }
}

/// Elements per tile: [`BLOCK`] × [`items_per_thread`] (16 KiB of input).
pub const fn tile_elems(elem_size: usize) -> usize {
    BLOCK as usize * items_per_thread(elem_size) as usize
}
