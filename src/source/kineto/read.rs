//! Streams one trace file into a [`Collector`]: the top-level object member by member,
//! `traceEvents` element by element, never the whole document in memory.
//!
//! With threads to spare the read is a two-stage pipeline: one thread reads the bytes and
//! finds where each event ends (the structural scan, about half of a plain trace's CPU),
//! the calling thread parses and collects the events in the order they were found. The
//! collector's state is sequential (names, correlation, per-file state), so it stays on
//! one thread; errors are reported in byte order either way (see [`read_pipelined`]).

use std::io::Read;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::exit::{Error, Result};

use super::build::Collector;
use super::event;
use super::header::Header;
use super::input;
use super::scan::{ScanError, Stream};

/// Read `path` into `col`; returns the number of GPU ops it contributed. Threads: a
/// gzipped file is inflated on its own thread from 2, and the scan runs beside the parse
/// from 2 for a plain file, from 3 for a gzipped one (on 2 cores the inflate and the
/// parse already keep both busy).
pub fn read_file(col: &mut Collector, path: &Path, threads: usize) -> Result<usize> {
    let opened = input::open(path, threads)?;
    col.begin_file(path);
    let mut header = Header::default();
    let mut stream = Stream::new(opened.reader);
    let pipelined = threads >= if opened.gzip { 3 } else { 2 };
    let read = if pipelined {
        read_pipelined(&mut stream, col, &mut header)
    } else {
        read_document(&mut stream, &mut Direct(col), &mut header)
    };
    read.map_err(|e| explain(e, path, opened.gzip))?;
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
        Fail::Stopped => format!("{p}: the trace reader stopped early"),
        Fail::EventsNotArray { offset, found } => format!(
            "{p}: \"traceEvents\" is {found}, not an array of events (byte {offset}): not a \
             PyTorch profiler trace, or one rewritten by another tool; pass the file \
             torch.profiler / Kineto wrote"
        ),
    })
}

/// Where the scanner hands each complete event (`raw` starts with `{`; `offset` is where
/// it starts in the plain input, for error messages).
trait Events {
    fn event(&mut self, raw: &[u8], offset: u64) -> std::result::Result<(), Fail>;
}

/// Parse and collect each event as it is scanned (one thread).
struct Direct<'c>(&'c mut Collector);

impl Events for Direct<'_> {
    fn event(&mut self, raw: &[u8], offset: u64) -> std::result::Result<(), Fail> {
        collect(self.0, raw, offset)
    }
}

fn collect(col: &mut Collector, raw: &[u8], offset: u64) -> std::result::Result<(), Fail> {
    match event::parse(raw, col.keep()) {
        Ok(Some(ev)) => col.event(&ev),
        Ok(None) => {}
        Err(()) => return Err(Fail::BadEvent { offset }),
    }
    Ok(())
}

/// Bytes of events per batch the scanning thread hands over: the channel then costs
/// nothing per event, and the parser starts after the first MiB.
const BATCH_BYTES: usize = 1 << 20;
/// Batches scanned ahead of the parser (bounds the memory to a few MiB).
const BATCHES_AHEAD: usize = 4;

/// Scanned events, copied back to back, with their offsets and extents.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// (offset in the input, start, end in `bytes`).
    events: Vec<(u64, usize, usize)>,
}

/// The scanning thread's side: events copied into batches and sent in order; the
/// parser sends the batches it is done with back, so their buffers are reused instead
/// of a fresh MiB (and its page faults) per batch.
struct Batches {
    tx: SyncSender<Batch>,
    spent: Receiver<Batch>,
    batch: Batch,
}

impl Batches {
    fn flush(&mut self) -> std::result::Result<(), Fail> {
        let mut next = self.spent.try_recv().unwrap_or_default();
        next.bytes.clear();
        next.events.clear();
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(full).map_err(|_| Fail::Stopped)
    }
}

impl Events for Batches {
    fn event(&mut self, raw: &[u8], offset: u64) -> std::result::Result<(), Fail> {
        let b = &mut self.batch;
        let start = b.bytes.len();
        b.bytes.extend_from_slice(raw);
        b.events.push((offset, start, b.bytes.len()));
        if b.bytes.len() >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }
}

/// [`read_document`] on a scanning thread, the events parsed and collected here in the
/// order it found them. The first error in byte order wins, as on one thread: a bad event
/// the parser finds comes before anything the scanner found later (the scanner's own
/// error arrives after every batch before it), and stops the scanner (its next send fails).
fn read_pipelined<R: Read + Send>(
    s: &mut Stream<R>,
    col: &mut Collector,
    header: &mut Header,
) -> std::result::Result<(), Fail> {
    let (tx, rx) = sync_channel(BATCHES_AHEAD);
    // Room for every batch in flight, so returning one never blocks the parser.
    let (give_back, spent) = sync_channel(BATCHES_AHEAD + 2);
    std::thread::scope(|scope| {
        let scanner = scope.spawn(move || {
            let mut batches = Batches {
                tx,
                spent,
                batch: Batch::default(),
            };
            // The events before a scan error are sent too: one of them may be a bad event,
            // which comes first.
            let read = read_document(s, &mut batches, header);
            batches.flush().and(read)
        });
        let mut failed = None;
        'batches: for batch in &rx {
            for &(offset, a, b) in &batch.events {
                if let Err(f) = collect(col, &batch.bytes[a..b], offset) {
                    failed = Some(f);
                    break 'batches;
                }
            }
            // Full (the scanner has not taken the spent ones yet) or gone: dropped.
            let _ = give_back.try_send(batch);
        }
        drop(rx);
        let scanned = scanner
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match failed {
            Some(f) => Err(f),
            None => scanned,
        }
    })
}

fn read_document<R: Read>(
    s: &mut Stream<R>,
    col: &mut impl Events,
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

fn read_events<R: Read>(s: &mut Stream<R>, col: &mut impl Events) -> std::result::Result<(), Fail> {
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
        col.event(raw, offset)?;
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
