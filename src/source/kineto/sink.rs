//! The `traceEvents` loop, where it hands each event, and what a read can fail with:
//! shared by the one-thread read (`read`) and the split read in byte ranges (`chunked`).

use std::io::Read;

use super::build::Collector;
use super::event;
use super::scan::{ScanError, Stream};

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
    /// A reading thread's events were no longer wanted: the read failed elsewhere first
    /// and that error is the one reported. Also what a range read that ends short of the
    /// array's end would give (it cannot: the last range has no stop), rather than a
    /// silently short trace.
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

/// How an events loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// At the array's `]`; the offset just past it.
    Array(u64),
    /// Where the next element would start, at or past the stop it was given.
    At(u64),
}

/// The `traceEvents` array, from its `[`.
pub(super) fn read_events<R: Read>(s: &mut Stream<R>, sink: &mut impl Events) -> Result<(), Fail> {
    s.expect(b'[')?;
    if s.peek()? == Some(b']') {
        s.bump();
        return Ok(());
    }
    events_from(s, sink, u64::MAX).map(|_| ())
}

/// The array's elements from the top of the loop — its first element, or just after a
/// comma — until the array ends, or until an element would start at `stop` or later. An
/// element's offset (in errors and for `stop`) is where the loop stands before it: just
/// after the comma, before any whitespace.
pub(super) fn events_from<R: Read>(
    s: &mut Stream<R>,
    sink: &mut impl Events,
    stop: u64,
) -> Result<Ended, Fail> {
    loop {
        let offset = s.offset();
        if offset >= stop {
            return Ok(Ended::At(offset));
        }
        let raw = s.value()?;
        if raw.first() != Some(&b'{') {
            return Err(Fail::BadEvent { offset });
        }
        sink.event(raw, offset)?;
        match s.peek()? {
            Some(b',') => s.bump(),
            Some(b']') => {
                s.bump();
                return Ok(Ended::Array(s.offset()));
            }
            Some(_) => return Err(Fail::BadEvent { offset: s.offset() }),
            None => return Err(ScanError::Truncated { offset: s.offset() }.into()),
        }
    }
}
