//! timing (placeholder).
