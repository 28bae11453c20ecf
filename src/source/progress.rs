//! How a load reports the rows it has read to whoever shows them: the command line draws
//! a spinner from it (`commands::spinner`); the library itself draws nothing.

use std::sync::Arc;

/// Receives a load's progress, from any of its reader threads.
pub trait RowSink: Send + Sync {
    /// A load of `what` ("reading nsys export") started.
    fn start(&self, what: &'static str);
    /// `n` more rows were read.
    fn rows(&self, n: u64);
    /// The load ended, read or failed.
    fn finish(&self);
}

/// Where a load's progress goes: nowhere by default.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn RowSink>>);

impl Progress {
    /// Progress reported to `sink`.
    pub fn to(sink: Arc<dyn RowSink>) -> Self {
        Progress(Some(sink))
    }

    pub(crate) fn start(&self, what: &'static str) {
        if let Some(s) = &self.0 {
            s.start(what);
        }
    }

    pub(crate) fn inc(&self, n: u64) {
        if let Some(s) = &self.0 {
            s.rows(n);
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(s) = &self.0 {
            s.finish();
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(reported)"
        } else {
            "Progress(none)"
        })
    }
}
