//! Tests for gate (filled in by its issue).
