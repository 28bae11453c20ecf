//! baseline (placeholder).
