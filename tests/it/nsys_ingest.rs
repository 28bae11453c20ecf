//! Tests for nsys_ingest (filled in by its issue).
