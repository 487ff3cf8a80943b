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
