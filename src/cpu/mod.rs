//! CPU references that model CUDA's semantics exactly, one module per algorithm family, named
//! like its shader (`shaders/NAME.comp`) and CUDA twin (`cuda/NAME.cu`). Tests and
//! `xwarp validate` compare every GPU result with these.

pub mod compact;
pub mod group;
pub mod histogram;
pub mod ladder;
pub mod par;
pub mod partition;
pub mod reduce;
pub mod roofline;
pub mod runs;
pub mod scan;
pub mod segmented_reduce;
pub mod shfl;
pub mod sort;
pub mod stencil;
pub mod throughput;
pub mod top_k;
pub mod vote;
