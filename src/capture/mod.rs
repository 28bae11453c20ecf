//! capture (placeholder).
