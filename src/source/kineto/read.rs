//! Streams one trace file into a [`Collector`]: the top-level object member by member,
//! `traceEvents` element by element, never the whole document in memory; with threads to
//! spare, the events in byte ranges at once ([`super::chunked`]).

use std::io::Read;
use std::path::Path;

use crate::exit::{Error, Result};

use super::build::Collector;
use super::chunked;
use super::gzip::CORRUPT;
use super::header::Header;
use super::input;
use super::scan::{ScanError, Stream};
use super::sink::{read_events, Direct, Fail};

/// Read `path` into `col`; returns the number of GPU ops it contributed. Threads: a plain
/// file's events are read in byte ranges on `threads` threads from 2 ([`chunked`]). A
/// gzipped file at 2 is inflated on one thread and parsed on the other (inflating and
/// parsing each take about half of its read; on 2 cores that keeps both busy); from 3
/// its header is inflated here and the rest on a thread of its own, straight into the
/// blocks its byte ranges are read from on `threads - 2` more
/// ([`chunked::gzip_events`]).
pub(crate) fn read_file(col: &mut Collector, path: &Path, threads: usize) -> Result<usize> {
    let opened = input::open(path, threads == 2)?;
    col.begin_file(path);
    let mut header = Header::default();
    let mut stream = Stream::new(opened.reader);
    let read = if opened.gzip && threads >= 3 {
        let mut events = |s: &mut Stream<_>| chunked::gzip_events(s, col, threads);
        read_document(&mut stream, &mut events, &mut header)
    } else if !opened.gzip && threads >= 2 {
        let plain = chunked::Plain::new(path, opened.skipped)
            .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
        let mut events = |s: &mut Stream<_>| chunked::events(s, &plain, col, threads);
        read_document(&mut stream, &mut events, &mut header)
    } else {
        let mut events = |s: &mut Stream<_>| read_events(s, &mut Direct(col));
        read_document(&mut stream, &mut events, &mut header)
    };
    // Read to the end: the last gzip member's trailer is checked there (a trace that
    // parses whole but whose CRC32 or length is wrong was damaged after it was written).
    read.and_then(|()| stream.drain().map_err(|e| ScanError::Io(e).into()))
        .map_err(|e| explain(e, path, opened.gzip))?;
    if !header.saw_trace_events {
        return Err(Error::input(format!(
            "{}: JSON but not a PyTorch profiler trace (no \"traceEvents\" array): pass the file torch.profiler / Kineto wrote",
            path.display()
        )));
    }
    Ok(col.end_file(header))
}

fn explain(f: Fail, path: &Path, gzip: bool) -> Error {
    let p = path.display();
    Error::input(match f {
        Fail::Scan(ScanError::Io(e)) if gzip && e.to_string().starts_with(CORRUPT) => format!(
            "{p}: {e}: the file was damaged after it was written (a bit flip, a bad copy or \
             upload); copy it again from where the profiler wrote it"
        ),
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
        Fail::Stopped => format!("{p}: the trace reader stopped early"),
        Fail::EventsNotArray { offset, found } => format!(
            "{p}: \"traceEvents\" is {found}, not an array of events (byte {offset}): not a \
             PyTorch profiler trace, or one rewritten by another tool; pass the file \
             torch.profiler / Kineto wrote"
        ),
    })
}

/// The document: its header members, and the `traceEvents` array read by `events` (which
/// leaves the stream just past the array's `]`).
fn read_document<R: Read>(
    s: &mut Stream<R>,
    events: &mut dyn FnMut(&mut Stream<R>) -> std::result::Result<(), Fail>,
    header: &mut Header,
) -> std::result::Result<(), Fail> {
    match s.peek()? {
        Some(b'{') => s.bump(),
        // The Chrome format also allows a bare array of events (not seen from Kineto).
        Some(b'[') => {
            header.saw_trace_events = true;
            return events(s);
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
            events(s)?;
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
