//! Tests for analyze (filled in by its issue).
