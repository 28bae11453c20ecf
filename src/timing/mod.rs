//! Time accounting on the GPU: per-device busy unions and exclusive time (`overlap`), the
//! labels reports show for kernel names (`labels`), step-marker names (`stepname`), and
//! engine steps projected from host ranges onto the GPU (`steps`), and the chunked
//! threads those stages run on (`par`).

pub mod labels;
pub mod overlap;
pub mod par;
pub mod stepname;
pub mod steps;
