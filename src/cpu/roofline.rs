//! CPU twin of `shaders/roofline.comp` and `cuda/roofline.cu`.

use crate::element::Element;
use crate::spec::roofline::TILE_WORDS;

/// What [`crate::roofline::copy`] writes: the input, unchanged.
pub fn copy<T: Element>(input: &[T]) -> Vec<T> {
    input.to_vec()
}

/// What [`crate::roofline::read`] writes: for each tile of [`TILE_WORDS`] 32-bit words of
/// `input` (in memory order, little-endian halves for 64-bit types), the XOR of its words.
pub fn read<T: Element>(input: &[T]) -> Vec<u32> {
    let words: &[u32] = bytemuck::cast_slice(input);
    words
        .chunks(TILE_WORDS)
        .map(|tile| tile.iter().fold(0, |acc, &w| acc ^ w))
        .collect()
}

/// MurmurHash3's finaliser: a bijection of 32 bits.
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// The two hashes [`digest`] adds for word `w` at word index `i`: for each `i` a bijection of
/// `w`, so a changed word always changes both.
pub fn digest_hash(i: u32, w: u32) -> [u32; 2] {
    [fmix32(w ^ fmix32(i)), fmix32(w ^ fmix32(i ^ 0x5bd1_e995))]
}

/// What [`crate::roofline::digest`] writes: over the 32-bit words of `input` (in memory order,
/// little-endian halves for 64-bit types), the two wrapping sums of [`digest_hash`] of each
/// word and its index. On every core for long inputs.
pub fn digest<T: Element>(input: &[T]) -> [u32; 2] {
    let words: &[u32] = bytemuck::cast_slice(input);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let piece = words.len().div_ceil(threads).max(1 << 16);
    let parts: Vec<[u32; 2]> = std::thread::scope(|s| {
        let handles: Vec<_> = words
            .chunks(piece)
            .enumerate()
            .map(|(p, chunk)| {
                s.spawn(move || {
                    let first = (p * piece) as u32;
                    chunk.iter().enumerate().fold([0u32; 2], |acc, (j, &w)| {
                        let h = digest_hash(first.wrapping_add(j as u32), w);
                        [acc[0].wrapping_add(h[0]), acc[1].wrapping_add(h[1])]
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a digest thread panicked"))
            .collect()
    });
    parts.into_iter().fold([0u32; 2], |a, b| {
        [a[0].wrapping_add(b[0]), a[1].wrapping_add(b[1])]
    })
}
