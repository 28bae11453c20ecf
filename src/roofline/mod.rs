//! roofline (placeholder).
