//! The one integration-test binary: each module tests one capability end to end.

mod analyze;
mod capture;
mod common;
mod dataset;
mod floor_capacity;
mod gate;
mod golden;
mod kineto;
mod launch_probe;
mod nsys_ingest;
mod steps;
