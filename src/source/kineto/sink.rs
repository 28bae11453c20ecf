//! Where a Kineto read hands its events, and what it can fail with: shared by the
//! one-thread read (`read`) and the pipeline (`pipeline`).

use super::build::Collector;
use super::event;
use super::scan::ScanError;

/// A failure while reading, before it is worded for the user.
pub(super) enum Fail {
    Scan(ScanError),
    NotJson {
        offset: u64,
    },
    BadEvent {
        offset: u64,
    },
    /// A top-level key given twice (JSON leaves the meaning open; readers disagree).
    DuplicateKey {
        offset: u64,
        key: &'static str,
    },
    /// `traceEvents` holds something other than an array (what it holds is named).
    EventsNotArray {
        offset: u64,
        found: &'static str,
    },
    /// The scanning thread's events were no longer wanted (the parser failed first and
    /// reports its own error; this one is never shown).
    Stopped,
}

impl From<ScanError> for Fail {
    fn from(e: ScanError) -> Self {
        Fail::Scan(e)
    }
}

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Self {
        Fail::Scan(ScanError::Io(e))
    }
}

/// Where the scanner hands each complete event (`raw` starts with `{`; `offset` is where
/// it starts in the plain input, for error messages).
pub(super) trait Events {
    fn event(&mut self, raw: &[u8], offset: u64) -> Result<(), Fail>;
}

/// Parse and collect each event as it is scanned (one thread).
pub(super) struct Direct<'c>(pub &'c mut Collector);

impl Events for Direct<'_> {
    fn event(&mut self, raw: &[u8], offset: u64) -> Result<(), Fail> {
        collect(self.0, raw, offset)
    }
}

/// Parse one event and hand it to the collector when the load keeps it.
pub(super) fn collect(col: &mut Collector, raw: &[u8], offset: u64) -> Result<(), Fail> {
    match event::parse(raw, col.keep()) {
        Ok(Some(ev)) => col.event(&ev),
        Ok(None) => {}
        Err(()) => return Err(Fail::BadEvent { offset }),
    }
    Ok(())
}
