//! Tests for capture (filled in by its issue).
