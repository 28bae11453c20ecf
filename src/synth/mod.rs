//! synth (placeholder).
