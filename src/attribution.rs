//! attribution (placeholder).
