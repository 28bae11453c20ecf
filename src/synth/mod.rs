//! Synthetic Nsight Systems exports for tests and benchmarks: [`writer::NsysWriter`] writes
//! the real DDL of three nsys generations, [`workload`] builds engine-step scenarios and
//! returns the per-step values they must produce, [`replicate`] scales a real fixture in time.

pub mod replicate;
pub mod workload;
pub mod writer;

pub use writer::{Layout, NsysWriter};
