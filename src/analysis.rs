//! analysis (placeholder).
