//! `xwarp bench`: times xwarp's algorithms beside NVIDIA CUB and the memory roofline.

pub mod cub;
