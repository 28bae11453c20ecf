//! The one integration-test binary: each module tests one capability end to end.

mod common;
mod analyze;
mod nsys_ingest;
mod golden;
mod floor_capacity;
mod kineto;
mod steps;
mod gate;
mod capture;
mod launch_probe;
