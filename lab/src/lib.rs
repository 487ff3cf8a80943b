//! The lab around the `xwarp` library: what `xwarp validate` runs (every kernel on every
//! device against the CPU reference and each other), the benchmark `xwarp bench` (GPU timers,
//! the memory roofline, CUB's figures, reports), and the helpers the integration tests share.
//! None of it is part of the library a user adds to a project.

pub mod bench;
pub mod validate;
