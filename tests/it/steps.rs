//! Tests for steps (filled in by its issue).
