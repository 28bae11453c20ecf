//! categories (placeholder).
