//! A Kineto file's `traceEvents` read by several threads at once: the array is cut into
//! byte ranges at places that look like the boundary between two events (`}` `,` `{` with
//! whitespace between), each range is scanned and parsed on its own thread, and only the
//! events the load keeps are handed to the calling thread, which collects them range by
//! range in file order (the collector's state — names, correlation, per-file numbering —
//! is sequential). A plain file's ranges read from their own file handles; a gzipped
//! file's read the inflated bytes kept by [`super::tape`], a window of ranges at a time.
//!
//! A cut that only looks like a boundary (the same bytes inside a nested array of objects
//! in `args`) is caught, never trusted: the range before it scans on past its end to the
//! first event that starts at or after the cut, and only when that event starts exactly
//! at the cut is the next range's thread result used. Otherwise that next range is read
//! on the calling thread from where the checked scan stopped, and the cut after it is
//! checked the same way. So every event, row, warning and error is the one-thread read's;
//! errors come in byte order because ranges are collected in order and a range's thread
//! stops at its first error.
//! A plain file is opened once per range, so a file still being written can read
//! differently from one open to the next (as it can between two runs).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;

use super::build::Collector;
use super::bytes::{read_full, Boundary};
use super::event::{self, Keep};
use super::scan::Stream;
use super::sink::{collect, events_from, read_events, Direct, Ended, Events, Fail};
use super::tape::{Tape, TapeReader};

/// A reader of the plain file from some offset on.
pub(super) type Input = Box<dyn Read + Send>;

/// Bytes per range below which the array is not split: a thread and a file handle cost
/// more than they save. Also a gzipped file's range length.
const MIN_RANGE_BYTES: u64 = 4 << 20;
/// How far past a cut to look for an event boundary before giving that cut up.
const PROBE_BYTES: usize = 1 << 20;
/// Kept events waiting for the collector, all ranges together: a range whose batches are
/// not collected yet (the ranges before it are) waits once its share is full, so a load
/// that keeps most events (`cpu_op` shapes) never holds the file in memory.
const KEPT_IN_FLIGHT: usize = 256 << 20;
/// Bytes of kept events per batch: the channel then costs nothing per event.
const BATCH_BYTES: usize = 1 << 20;
/// The inflated bytes of a gzipped file are kept in blocks of this size (or of the range
/// length, when the test hook makes it smaller).
const TAPE_BLOCK: u64 = 1 << 20;

/// Test hook (documented in docs/hostile-inputs.md): bytes per range, replacing
/// [`MIN_RANGE_BYTES`], so the tests split small fixtures through the binary. Not a user
/// option.
pub const MIN_RANGE_VAR: &str = "STEPGATE_TEST_MIN_RANGE_BYTES";

fn range_bytes() -> u64 {
    std::env::var(MIN_RANGE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(MIN_RANGE_BYTES)
}

/// Kept events, copied back to back, with their offsets and extents.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// (offset in the input, start, end in `bytes`).
    events: Vec<(u64, usize, usize)>,
}

impl Batch {
    fn push(&mut self, raw: &[u8], offset: u64) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(raw);
        self.events.push((offset, start, self.bytes.len()));
    }

    /// Collect its events, in order. Each is parsed here again: a range thread parsed it
    /// once to decide to send it, but the rows borrow the batch's bytes, so the parse is
    /// not carried across threads (about 9% of a vLLM trace's events are kept).
    fn collect(&self, col: &mut Collector) -> Result<(), Fail> {
        for &(offset, start, end) in &self.events {
            collect(col, &self.bytes[start..end], offset)?;
        }
        Ok(())
    }
}

/// Where a split read's ranges come from.
trait Source: Sync {
    type R: Read;
    /// The stream from offset `at`.
    fn open_at(&self, at: u64) -> io::Result<Stream<Self::R>>;
    /// Where range `k` (from 1) starts; `None`: there is no range `k`.
    fn cut(&self, k: usize) -> Option<u64>;
    /// Whether range `k` may exist (no waiting).
    fn may_have(&self, k: usize) -> bool;
    /// Range `k` is collected and the next one starts at `at`.
    fn done(&self, _k: usize, _at: u64) {}
}

/// The plain file, reopened per range.
pub(super) struct Plain {
    path: PathBuf,
    /// Bytes before the JSON (a byte-order mark): stream offset 0 is file offset `skipped`.
    skipped: u64,
    /// Stream bytes in the file.
    len: u64,
}

impl Plain {
    pub fn new(path: &Path, skipped: u64) -> io::Result<Plain> {
        let len = std::fs::metadata(path)?.len().saturating_sub(skipped);
        Ok(Plain {
            path: path.to_path_buf(),
            skipped,
            len,
        })
    }

    /// The stream from stream offset `at` on.
    fn open_at(&self, at: u64) -> io::Result<Stream<Input>> {
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(self.skipped + at))?;
        Ok(Stream::starting_at(Box::new(f), at))
    }

    /// Loop-top offsets (just after a comma) where ranges start, increasing, for
    /// `threads` ranges of the array that starts at `array` (its `[`).
    fn cuts(&self, array: u64, threads: usize) -> io::Result<Vec<u64>> {
        let total = self.len.saturating_sub(array);
        let n = (total / range_bytes()).clamp(1, threads.max(1) as u64);
        let mut cuts: Vec<u64> = Vec::new();
        let mut f = File::open(&self.path)?;
        let mut probe = vec![0u8; PROBE_BYTES];
        for k in 1..n {
            let at = array + 1 + (total - 1) * k / n;
            f.seek(SeekFrom::Start(self.skipped + at))?;
            let (got, failed) = read_full(&mut f, &mut probe);
            if let Some(e) = failed {
                return Err(e);
            }
            if let Some(i) = boundary(&probe[..got]) {
                let cut = at + i as u64;
                if cuts.last().is_none_or(|&c| cut > c) {
                    cuts.push(cut);
                }
            }
        }
        Ok(cuts)
    }
}

/// A plain file's ranges: all cut before any is read.
struct PlainCuts<'a> {
    plain: &'a Plain,
    cuts: Vec<u64>,
}

impl Source for PlainCuts<'_> {
    type R = Input;
    fn open_at(&self, at: u64) -> io::Result<Stream<Input>> {
        self.plain.open_at(at)
    }
    fn cut(&self, k: usize) -> Option<u64> {
        k.checked_sub(1).and_then(|i| self.cuts.get(i)).copied()
    }
    fn may_have(&self, k: usize) -> bool {
        k <= self.cuts.len()
    }
}

/// A gzipped file's ranges: one every `range` inflated bytes, cut as the bytes arrive.
struct TapeCuts {
    tape: Arc<Tape>,
    range: u64,
}

impl Source for TapeCuts {
    type R = TapeReader;
    fn open_at(&self, at: u64) -> io::Result<Stream<TapeReader>> {
        Ok(Stream::starting_at(self.tape.reader(at), at))
    }
    fn cut(&self, k: usize) -> Option<u64> {
        self.tape.cut(k, self.range)
    }
    fn may_have(&self, k: usize) -> bool {
        self.tape.may_have(k)
    }
    fn done(&self, k: usize, at: u64) {
        // What is still read: the next range from `at`, and the cut searches of the
        // ranges after it, which start at `origin + 1 + j * range` for j ≥ k + 2 (range
        // k + 1's cut is known: it was this range's stop).
        self.tape
            .release(at.min(self.tape.range_start(k + 2, self.range)));
    }
}

/// The index just after the first boundary's comma in `b` ([`Boundary`]).
fn boundary(b: &[u8]) -> Option<usize> {
    Boundary::default().feed(b, 0).map(|(_, cut)| cut as usize)
}

/// A range's thread: kept events copied into batches and sent; dropped ones cost their
/// parse only. Stops when the read has failed elsewhere.
struct Kept<'a> {
    keep: Keep,
    tx: SyncSender<Batch>,
    batch: Batch,
    cancel: &'a AtomicBool,
}

impl Kept<'_> {
    fn send(&mut self) -> Result<(), Fail> {
        let full = std::mem::take(&mut self.batch);
        self.tx.send(full).map_err(|_| Fail::Stopped)
    }
}

impl Events for Kept<'_> {
    fn event(&mut self, raw: &[u8], offset: u64) -> Result<(), Fail> {
        if self.cancel.load(Ordering::Relaxed) {
            return Err(Fail::Stopped);
        }
        match event::parse(raw, self.keep) {
            Ok(Some(_)) => {
                self.batch.push(raw, offset);
                if self.batch.bytes.len() >= BATCH_BYTES {
                    self.send()?;
                }
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(()) => Err(Fail::BadEvent { offset }),
        }
    }
}

/// One range read from `s`: from the array's `[` (the first) or a cut, until an event
/// would start at `stop` or the array ends.
fn range<R: Read>(
    mut s: Stream<R>,
    first: bool,
    stop: u64,
    sink: &mut Kept<'_>,
) -> Result<Ended, Fail> {
    let ended = if first {
        s.expect(b'[')?;
        if s.peek()? == Some(b']') {
            s.bump();
            Ok(Ended::Array(s.offset()))
        } else {
            events_from(&mut s, sink, stop)
        }
    } else {
        events_from(&mut s, sink, stop)
    };
    // The kept events before an error are sent too: they are collected before it.
    sink.send().and(ended)
}

/// Read the `traceEvents` array of a plain file at `s` (its `[` next) into `col` on up to
/// `threads` threads; `s` is left just past the array's `]`, as the one-thread read
/// leaves it.
pub(super) fn events(
    s: &mut Stream<Input>,
    plain: &Plain,
    col: &mut Collector,
    threads: usize,
) -> Result<(), Fail> {
    let array = s.offset();
    let cuts = plain.cuts(array, threads)?;
    if cuts.is_empty() {
        return read_events(s, &mut Direct(col));
    }
    let ranges = cuts.len() + 1;
    let end = split(&PlainCuts { plain, cuts }, array, col, ranges)?;
    *s = plain.open_at(end)?;
    Ok(())
}

/// As [`events`], for a gzipped file: `s` reads the inflated stream, and is replaced by a
/// reader of what follows the array. One thread inflates the rest of the stream (taking
/// over `s`'s decoder) into a [`Tape`], ranges are read `threads - 2` at a time.
pub(super) fn gzip_events(
    s: &mut Stream<Input>,
    col: &mut Collector,
    threads: usize,
) -> Result<(), Fail> {
    let range = range_bytes();
    let window = threads.saturating_sub(2).max(1);
    let taken = std::mem::replace(s, Stream::new(Box::new(io::empty())));
    let (reader, prefix, array) = taken.into_rest();
    // Held ahead of the collector: the window's ranges, the next one's cut search, and
    // a range's worth of slack.
    let cap = (window as u64 + 2) * range;
    let tape = Arc::new(Tape::new(array, TAPE_BLOCK.min(range) as usize, cap));
    let filler = tape.clone();
    // Detached: it stops at the stream's end, on an error, or when the tape is closed.
    std::thread::spawn(move || {
        let filled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| filler.fill(prefix, reader)));
        if filled.is_err() {
            filler.abandon();
        }
    });
    let src = TapeCuts {
        tape: tape.clone(),
        range,
    };
    match split(&src, array, col, window) {
        Ok(end) => {
            *s = Stream::starting_at(Box::new(tape.tail(end)), end);
            Ok(())
        }
        Err(f) => {
            tape.close();
            Err(f)
        }
    }
}

/// Read the array that starts at `array` in `src`'s ranges, up to `window` of them at
/// once on their own threads, collected here in order; returns the offset just past the
/// array's `]`.
fn split<S: Source>(src: &S, array: u64, col: &mut Collector, window: usize) -> Result<u64, Fail> {
    let keep = col.keep();
    let cancel = AtomicBool::new(false);
    let window = window.max(1);
    let ahead = (KEPT_IN_FLIGHT / BATCH_BYTES / window).max(4);
    std::thread::scope(|scope| {
        let cancel = &cancel;
        let spawn = |k: usize| {
            let (tx, rx) = sync_channel(ahead);
            let worker = scope.spawn(move || -> Result<Option<Ended>, Fail> {
                let from = match k {
                    0 => array,
                    _ => match src.cut(k) {
                        Some(c) => c,
                        None => return Ok(None),
                    },
                };
                let stop = src.cut(k + 1).unwrap_or(u64::MAX);
                let mut sink = Kept {
                    keep,
                    tx,
                    batch: Batch::default(),
                    cancel,
                };
                range(src.open_at(from)?, k == 0, stop, &mut sink).map(Some)
            });
            (rx, worker)
        };
        let mut pending: VecDeque<_> = (0..window)
            .filter(|&k| k == 0 || src.may_have(k))
            .map(spawn)
            .collect();
        // On any way out, the ranges still running stop at their next event.
        let _stop_all = StopAll(cancel);
        // Where a range's events really start when the cut before it was not an event
        // boundary (its thread's events are then not a single scan's).
        let mut resume: Option<u64> = None;
        let mut k = 0;
        loop {
            let stop = src.cut(k + 1).unwrap_or(u64::MAX);
            let ended = match (resume, pending.pop_front()) {
                (None, Some((rx, worker))) => {
                    for b in &rx {
                        b.collect(col)?;
                    }
                    let ended = worker
                        .join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
                    // A range exists when the one before it stopped at its cut.
                    ended.ok_or(Fail::Stopped)?
                }
                // Read here, from where the checked scan stopped (or the cut, when no
                // thread was started for it); that range's thread stops at its next send.
                (at, mine) => {
                    drop(mine);
                    let at = match at {
                        Some(at) => at,
                        None => src.cut(k).ok_or(Fail::Stopped)?,
                    };
                    events_from(&mut src.open_at(at)?, &mut Direct(col), stop)?
                }
            };
            match ended {
                Ended::Array(end) => return Ok(end),
                // Arrived exactly at the next cut: the next range's thread started where a
                // single scan stands, so its events are that scan's. Elsewhere: a cut
                // inside an event, and the next range is read here.
                Ended::At(at) => {
                    resume = (at != stop).then_some(at);
                    src.done(k, at);
                }
            }
            // Keep `window` ranges ahead: the one after the last started.
            if src.may_have(k + window) {
                pending.push_back(spawn(k + window));
            }
            k += 1;
        }
    })
}

/// Sets the flag when dropped: every range thread then stops at its next event.
struct StopAll<'a>(&'a AtomicBool);

impl Drop for StopAll<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boundary_is_a_comma_between_a_close_and_an_open() {
        assert_eq!(boundary(b"x\": 1\n  },\n  {\n \"ph\""), Some(10));
        assert_eq!(boundary(b"},{"), Some(2));
        // Not between two objects: a list of numbers, an array's end, a key.
        assert_eq!(boundary(b"[1, 2], \"a\": {"), None);
        assert_eq!(boundary(b"}, \"k\": {"), None);
        assert_eq!(boundary(b"}, ]"), None);
        assert_eq!(boundary(b""), None);
    }
}
