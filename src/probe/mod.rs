//! probe (placeholder).
