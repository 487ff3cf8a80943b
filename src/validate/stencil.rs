//! Placeholder: being written.

use super::{CaseReport, Tally};
use crate::device::Device;
use crate::element::Rng;

/// Runs every stencil case.
pub fn run(
    _devices: &[(String, &dyn Device)],
    _quick: bool,
    _large: bool,
    _rng: &mut Rng,
    _tally: &mut Tally,
    _report: &mut dyn FnMut(&CaseReport),
) {
}
