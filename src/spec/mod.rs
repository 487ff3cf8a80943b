//! What each algorithm family computes, shared by the kernels' host side (the algorithm
//! modules such as [`crate::reduce`]) and the CPU reference ([`crate::cpu`]): operators and
//! their identities, predicates, shuffle and chain operations, and the tile sizes that are part
//! of the canonical float orders. Nothing here launches work or depends on a device; the CPU
//! reference depends on nothing above this layer.

pub mod compact;
pub mod histogram;
pub mod ladder;
pub mod reduce;
pub mod roofline;
pub mod runs;
pub mod scan;
pub mod shfl;
pub mod throughput;
pub mod vote;
