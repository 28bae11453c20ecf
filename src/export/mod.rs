//! Exporters: files that carry the capture itself in another tool's format, written from
//! the trace and its found steps. Not renderers: a renderer formats the document the
//! pipeline built (`report`); an exporter writes the trace's own ops, which no document
//! holds, so it reads the trace and runs the overlap sweep it needs.

pub mod perfetto;
