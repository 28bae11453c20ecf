//! Tests for kineto (filled in by its issue).
