//! Streams one trace file into a [`Collector`]: the top-level object member by member,
//! `traceEvents` element by element, never the whole document in memory.

use std::io::Read;
use std::path::Path;

use crate::exit::{Error, Result};

use super::build::Collector;
use super::event;
use super::header::Header;
use super::input;
use super::scan::{ScanError, Stream};

/// Read `path` into `col` (a gzipped file inflated on a second thread when `threads` ≥ 2);
/// returns the number of GPU ops it contributed.
pub fn read_file(col: &mut Collector, path: &Path, threads: usize) -> Result<usize> {
    let opened = input::open(path, threads)?;
    col.begin_file(path);
    let mut header = Header::default();
    let mut stream = Stream::new(opened.reader);
    read_document(&mut stream, col, &mut header).map_err(|e| explain(e, path, opened.gzip))?;
    if !header.saw_trace_events {
        return Err(Error::input(format!(
            "{}: JSON but not a PyTorch profiler trace (no \"traceEvents\" array): pass the file torch.profiler / Kineto wrote",
            path.display()
        )));
    }
    Ok(col.end_file(header))
}

/// A failure while reading, before it is worded for the user.
enum Fail {
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

fn explain(f: Fail, path: &Path, gzip: bool) -> Error {
    let p = path.display();
    Error::input(match f {
        Fail::Scan(ScanError::Io(e)) if gzip => format!(
            "{p}: truncated or corrupt gzip data ({e}): the profiler may still have been writing it; copy the finished file again"
        ),
        Fail::Scan(ScanError::Io(e)) => format!("{p}: cannot read: {e}"),
        Fail::Scan(ScanError::Truncated { offset }) => format!(
            "{p}: the JSON ends early (at byte {offset}): the trace is truncated; copy the finished file again"
        ),
        Fail::Scan(ScanError::Malformed { offset }) => {
            format!("{p}: malformed JSON at byte {offset}: not a readable trace")
        }
        Fail::NotJson { offset } => format!(
            "{p}: not a JSON trace (byte {offset}): expected a PyTorch profiler .json or .json.gz"
        ),
        Fail::BadEvent { offset } => {
            format!("{p}: malformed trace event at byte {offset}: not a readable trace")
        }
        Fail::DuplicateKey { offset, key } => format!(
            "{p}: the top-level key \"{key}\" appears twice (the second at byte {offset}): \
             readers disagree on which one counts, so the trace is refused; pass the file \
             torch.profiler / Kineto wrote"
        ),
        Fail::EventsNotArray { offset, found } => format!(
            "{p}: \"traceEvents\" is {found}, not an array of events (byte {offset}): not a \
             PyTorch profiler trace, or one rewritten by another tool; pass the file \
             torch.profiler / Kineto wrote"
        ),
    })
}

fn read_document<R: Read>(
    s: &mut Stream<R>,
    col: &mut Collector,
    header: &mut Header,
) -> std::result::Result<(), Fail> {
    match s.peek()? {
        Some(b'{') => s.bump(),
        // The Chrome format also allows a bare array of events (not seen from Kineto).
        Some(b'[') => {
            header.saw_trace_events = true;
            return read_events(s, col);
        }
        _ => return Err(Fail::NotJson { offset: s.offset() }),
    }
    if s.peek()? == Some(b'}') {
        s.bump();
        return Ok(());
    }
    loop {
        let key = match s.value()? {
            k if k.first() == Some(&b'"') => k[1..k.len() - 1].to_vec(),
            _ => return Err(Fail::NotJson { offset: s.offset() }),
        };
        s.expect(b':')?;
        if key == b"traceEvents" {
            if header.saw_trace_events {
                return Err(Fail::DuplicateKey {
                    offset: s.offset(),
                    key: "traceEvents",
                });
            }
            header.saw_trace_events = true;
            let found = match s.peek()? {
                Some(b'[') | None => None,
                Some(b'{') => Some("an object"),
                Some(b'"') => Some("a string"),
                Some(b'n') => Some("null"),
                Some(b't' | b'f') => Some("a boolean"),
                Some(b'-' | b'0'..=b'9') => Some("a number"),
                Some(_) => None,
            };
            if let Some(found) = found {
                return Err(Fail::EventsNotArray {
                    offset: s.offset(),
                    found,
                });
            }
            read_events(s, col)?;
        } else {
            let raw = s.value()?;
            header.take(&key, raw);
        }
        match s.peek()? {
            Some(b',') => s.bump(),
            Some(b'}') => {
                s.bump();
                return Ok(());
            }
            Some(_) => return Err(Fail::NotJson { offset: s.offset() }),
            None => return Err(ScanError::Truncated { offset: s.offset() }.into()),
        }
    }
}

fn read_events<R: Read>(s: &mut Stream<R>, col: &mut Collector) -> std::result::Result<(), Fail> {
    s.expect(b'[')?;
    if s.peek()? == Some(b']') {
        s.bump();
        return Ok(());
    }
    loop {
        let offset = s.offset();
        let raw = s.value()?;
        if raw.first() != Some(&b'{') {
            return Err(Fail::BadEvent { offset });
        }
        match event::parse(raw, col.keep()) {
            Ok(Some(ev)) => col.event(&ev),
            Ok(None) => {}
            Err(()) => return Err(Fail::BadEvent { offset }),
        }
        match s.peek()? {
            Some(b',') => s.bump(),
            Some(b']') => {
                s.bump();
                return Ok(());
            }
            Some(_) => return Err(Fail::BadEvent { offset: s.offset() }),
            None => return Err(ScanError::Truncated { offset: s.offset() }.into()),
        }
    }
}
