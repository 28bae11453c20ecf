//! Time accounting on the GPU: per-device busy unions and exclusive time (`overlap`), and
//! engine steps projected from host ranges onto the GPU (`steps`).

pub mod overlap;
pub mod stepname;
pub mod steps;
