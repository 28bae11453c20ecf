//! Tests for launch_probe (filled in by its issue).
