//! Time accounting on the GPU: per-device busy unions and exclusive time (`overlap`), the
//! labels reports show for kernel names (`labels`), step-marker names (`stepname`), and
//! engine steps projected from host ranges onto the GPU (`steps`).

pub mod labels;
pub mod overlap;
pub mod stepname;
pub mod steps;
