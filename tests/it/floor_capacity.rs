//! Tests for floor_capacity (filled in by its issue).
