//! Tests for golden (filled in by its issue).
