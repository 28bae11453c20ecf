//! Synthetic nsys exports for tests and benchmarks (being built).
