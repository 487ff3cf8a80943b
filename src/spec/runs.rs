//! The tile of the kernels over runs of equal consecutive keys (unique, run-length encoding,
//! reduce-by-key): threads per workgroup and elements per thread, which cut a run into the
//! thread and tile pieces of reduce-by-key's canonical order.

/// Threads per workgroup.
pub const BLOCK: u32 = 256;

/// Elements per thread (one *thread piece*): 16 where keys and values are 4 bytes (or there
/// are no values), 8 where either is 8 bytes.
pub const fn items(key_bytes: usize, value_bytes: usize) -> u32 {
    if key_bytes > 4 || value_bytes > 4 {
        8
    } else {
        16
    }
}

/// Elements per tile (one *tile piece*): [`BLOCK`] × [`items`].
pub const fn tile(key_bytes: usize, value_bytes: usize) -> usize {
    BLOCK as usize * items(key_bytes, value_bytes) as usize
}
