//! A gzipped trace's inflated bytes, kept in memory from where the `traceEvents` array
//! starts for as long as a range thread may still read them: the plain-file range split
//! ([`super::chunked`]) needs to open the stream at any offset, and a gzip stream can only
//! be inflated front to back (deflate has no index to seek by), so one thread inflates
//! into fixed-size blocks here and every range reads the blocks it needs, waiting for
//! those not inflated yet.
//!
//! Memory: the inflating thread stops once `cap` bytes are held past the collector's
//! floor, unless a reader is waiting for bytes beyond what is inflated (an event or a
//! boundary search longer than the cap: refusing would deadlock the read, and one thread
//! reading alone would hold that event too). Blocks behind the floor are freed.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::bytes::{read_full, Boundary};

/// Freed blocks kept for reuse.
const SPARE_BLOCKS: usize = 8;

/// The inflated stream from offset `origin` on, in blocks of `block` bytes (the last may
/// be shorter).
pub(super) struct Tape {
    origin: u64,
    block: usize,
    cap: u64,
    state: Mutex<State>,
    /// A block arrived, or the stream ended.
    grew: Condvar,
    /// Room was made, a reader started waiting, or the tape was closed.
    room: Condvar,
    /// Where the ranges start (see [`Tape::cut`]), by range number.
    cuts: Mutex<Cuts>,
}

struct State {
    /// Blocks `first..first + blocks.len()`; those before `first` are freed.
    first: u64,
    blocks: VecDeque<Arc<Vec<u8>>>,
    /// Freed blocks no reader held, reused by the inflater (no fresh MiB and its page
    /// faults per block).
    spare: Vec<Vec<u8>>,
    /// Bytes inflated so far, from `origin`.
    len: u64,
    /// Bytes before `origin + floor` are no longer read.
    floor: u64,
    /// Readers waiting for bytes not inflated yet.
    waiting: usize,
    /// The stream ended: `Ok` at its end, or the inflater's error (given to every reader
    /// that reaches it, so it is worded as on one thread).
    end: Option<Result<(), (io::ErrorKind, String)>>,
    /// Nobody reads any more: the inflating thread stops.
    closed: bool,
}

/// Memo of [`Tape::cut`].
#[derive(Default)]
struct Cuts {
    /// `found[k]`: range k's cut, once searched.
    found: Vec<Option<u64>>,
    /// Ranges from this one on have no cut (the search reached the stream's end).
    none_from: Option<usize>,
}

impl Tape {
    /// A tape whose first byte is stream offset `origin`, holding about `cap` bytes ahead
    /// of the collector.
    pub fn new(origin: u64, block: usize, cap: u64) -> Tape {
        Tape {
            origin,
            block: block.max(1),
            cap,
            state: Mutex::new(State {
                first: 0,
                blocks: VecDeque::new(),
                spare: Vec::new(),
                len: 0,
                floor: 0,
                waiting: 0,
                end: None,
                closed: false,
            }),
            grew: Condvar::new(),
            room: Condvar::new(),
            cuts: Mutex::new(Cuts::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking reader poisons nothing we rely on: the state stays consistent
        // between statements, and the panic itself is re-raised by the scope.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The inflating side: `prefix` (bytes already read from `r`), then `r` to its end,
    /// in blocks. Returns when the stream ends or the tape is closed.
    pub fn fill(&self, prefix: Vec<u8>, mut r: impl Read) {
        let mut prefix = &prefix[..];
        loop {
            // Wait for room before inflating the next block, so the inflater runs no
            // further ahead than the cap.
            let mut buf = {
                let mut st = self.lock();
                while !st.closed && st.waiting == 0 && st.len.saturating_sub(st.floor) >= self.cap {
                    st = self.room.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.closed {
                    return;
                }
                st.spare.pop().unwrap_or_default()
            };
            buf.resize(self.block, 0);
            let from_prefix = prefix.len().min(self.block);
            buf[..from_prefix].copy_from_slice(&prefix[..from_prefix]);
            prefix = &prefix[from_prefix..];
            let (read, failed) = read_full(&mut r, &mut buf[from_prefix..]);
            let n = from_prefix + read;
            buf.truncate(n);
            let last = n < self.block;
            let mut st = self.lock();
            if n > 0 {
                st.blocks.push_back(Arc::new(buf));
                st.len += n as u64;
            }
            if last {
                st.end = Some(failed.map_or(Ok(()), |e| Err((e.kind(), e.to_string()))));
            }
            drop(st);
            self.grew.notify_all();
            if last {
                return;
            }
        }
    }

    /// The inflating side stopped without saying why (it panicked): every reader waiting
    /// or still to come gets an error rather than waiting for bytes that never come.
    pub(crate) fn abandon(&self) {
        let mut st = self.lock();
        if st.end.is_none() {
            let msg = "the gzip inflating thread stopped".to_owned();
            st.end = Some(Err((io::ErrorKind::Other, msg)));
        }
        drop(st);
        self.grew.notify_all();
    }

    /// Bytes before stream offset `at` will not be read again: their blocks are freed.
    pub fn release(&self, at: u64) {
        let mut st = self.lock();
        st.floor = st.floor.max(at.saturating_sub(self.origin));
        while st.first < st.floor / self.block as u64 {
            let Some(b) = st.blocks.pop_front() else {
                break;
            };
            st.first += 1;
            if let Ok(b) = Arc::try_unwrap(b) {
                if st.spare.len() < SPARE_BLOCKS {
                    st.spare.push(b);
                }
            }
        }
        drop(st);
        self.room.notify_all();
    }

    /// Nobody reads any more: the inflating thread stops at its next block.
    pub fn close(&self) {
        self.lock().closed = true;
        self.room.notify_all();
    }

    /// The block holding stream offset `at` and that block's first offset, waiting for it
    /// to be inflated; `None` at the end of the stream.
    fn block_at(&self, at: u64) -> io::Result<Option<(u64, Arc<Vec<u8>>)>> {
        let rel = at.checked_sub(self.origin).ok_or_else(|| freed(at))?;
        let i = rel / self.block as u64;
        let mut st = self.lock();
        loop {
            if i < st.first {
                return Err(freed(at));
            }
            if rel < st.len {
                let b = st.blocks[(i - st.first) as usize].clone();
                return Ok(Some((self.origin + i * self.block as u64, b)));
            }
            match &st.end {
                Some(Ok(())) => return Ok(None),
                Some(Err((kind, msg))) => return Err(io::Error::new(*kind, msg.clone())),
                None => {}
            }
            st.waiting += 1;
            self.room.notify_all();
            st = self.grew.wait(st).unwrap_or_else(|p| p.into_inner());
            st.waiting -= 1;
        }
    }

    /// Where range `j`'s cut search starts (see [`Tape::cut`]).
    pub(crate) fn range_start(&self, j: usize, range: u64) -> u64 {
        self.origin
            .saturating_add(1)
            .saturating_add((j as u64).saturating_mul(range))
    }

    /// Whether range `k` may have a cut: not known to lie past the last boundary.
    /// Never waits: while a search holds the memo, the answer is yes (a range thread
    /// started for a range that turns out not to exist ends at once).
    pub(crate) fn may_have(&self, k: usize) -> bool {
        match self.cuts.try_lock() {
            Ok(memo) => memo.none_from.is_none_or(|n| k < n),
            Err(_) => true,
        }
    }

    /// A reader of the stream from offset `at`.
    pub fn reader(self: &Arc<Self>, at: u64) -> TapeReader {
        TapeReader {
            tape: self.clone(),
            at,
            block: None,
            tail: false,
        }
    }

    /// A reader for the rest of the document after the array: it frees what it has read
    /// and closes the tape when dropped.
    pub fn tail(self: &Arc<Self>, at: u64) -> TapeReader {
        let mut r = self.reader(at);
        r.tail = true;
        r
    }

    /// Where range `k` (from 1) of the array that starts at `origin` (its `[`) starts: the
    /// first event boundary (`}` `,` `{`, whitespace between; the offset just after the
    /// comma) whose `}` lies at or after `origin + 1 + k * range`. `None`: there is none
    /// before the stream ends or fails. A cut may lie inside an event (the same bytes in a nested
    /// list); the range split checks every cut against the scan before trusting it.
    ///
    /// Searched once per cut, under a lock: a boundary found far ahead (a long event) is
    /// also the cut of every range it passes, which are filled in rather than searched
    /// again.
    pub fn cut(self: &Arc<Self>, k: usize, range: u64) -> Option<u64> {
        let mut memo = self.cuts.lock().unwrap_or_else(|p| p.into_inner());
        if memo.none_from.is_some_and(|n| k >= n) {
            return None;
        }
        if let Some(&c) = memo.found.get(k).filter(|c| c.is_some()) {
            return c;
        }
        let start = |j: usize| self.range_start(j, range);
        // A search that runs into the stream's end or its read error finds no cut: the
        // range before then reads on to the end, and meets what is there (a bad event
        // before the error, or the error itself) in byte order, as one thread does.
        let Ok(Some((close, cut))) = boundary_from(&mut self.reader(start(k))) else {
            memo.none_from = Some(k);
            return None;
        };
        // Every later range whose search starts at or before the `}` finds the same
        // boundary (none lies between its start and this one).
        let mut j = k;
        while j == k || start(j) <= close {
            if memo.found.len() <= j {
                memo.found.resize(j + 1, None);
            }
            memo.found[j] = Some(cut);
            j += 1;
        }
        Some(cut)
    }
}

fn freed(at: u64) -> io::Error {
    io::Error::other(format!(
        "internal: inflated bytes at {at} were freed before a reader reached them"
    ))
}

/// The first event boundary ([`Boundary`]) in `r`: the offsets of its `}` and just after
/// its comma.
fn boundary_from(r: &mut TapeReader) -> io::Result<Option<(u64, u64)>> {
    let mut seen = Boundary::default();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let at = r.at;
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(found) = seen.feed(&buf[..n], at) {
            return Ok(Some(found));
        }
    }
}

/// A stream's reader after [`Stream::into_rest`]: the read error the stream had not
/// reported yet comes first, and a reader that had ended stays ended.
pub(super) struct Rest<R> {
    pub r: R,
    pub failed: Option<io::Error>,
    pub eof: bool,
}

impl<R: Read> Read for Rest<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.eof {
            return Ok(0);
        }
        self.r.read(buf)
    }
}

/// A reader of the tape from some offset on.
pub(super) struct TapeReader {
    tape: Arc<Tape>,
    at: u64,
    /// The block being read and its first offset.
    block: Option<(u64, Arc<Vec<u8>>)>,
    /// The document's tail reader: frees behind itself, closes the tape when dropped.
    tail: bool,
}

impl Read for TapeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let within = |b: &(u64, Arc<Vec<u8>>), at: u64| at >= b.0 && at < b.0 + b.1.len() as u64;
        if !self.block.as_ref().is_some_and(|b| within(b, self.at)) {
            self.block = None;
            if self.tail {
                self.tape.release(self.at);
            }
            match self.tape.block_at(self.at)? {
                Some(b) => self.block = Some(b),
                None => return Ok(0),
            }
        }
        let Some((start, bytes)) = &self.block else {
            return Ok(0);
        };
        let from = (self.at - start) as usize;
        let n = buf.len().min(bytes.len() - from);
        buf[..n].copy_from_slice(&bytes[from..from + n]);
        self.at += n as u64;
        Ok(n)
    }
}

impl Drop for TapeReader {
    fn drop(&mut self) {
        if self.tail {
            self.tape.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(bytes: &[u8], origin: u64, block: usize) -> Arc<Tape> {
        let tape = Arc::new(Tape::new(origin, block, u64::MAX));
        tape.fill(
            bytes[..3.min(bytes.len())].to_vec(),
            &bytes[3.min(bytes.len())..],
        );
        tape
    }

    fn read_all(mut r: TapeReader) -> Vec<u8> {
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        v
    }

    #[test]
    fn reads_the_stream_from_any_offset() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let tape = filled(&bytes, 100, 64);
        for at in [100, 101, 163, 164, 165, 700, 1099, 1100] {
            assert_eq!(read_all(tape.reader(at)), bytes[(at - 100) as usize..]);
        }
    }

    #[test]
    fn boundaries_are_found_across_blocks_and_memoised() {
        let doc = b"[{\"a\": [{}, {}]},\n  {\"b\": 1} , {\"c\": 2}]";
        let tape = filled(doc, 0, 4);
        // From byte 1 on: the `}` of `{}` at 9 starts the first look-alike (inside "a").
        assert_eq!(tape.cut(0, 1), Some(11));
        // From the `}` at 14 on: the real boundary after "a"'s event.
        let k = 14;
        assert_eq!(tape.cut(k, 1), Some(17));
        assert_eq!(tape.cut(15, 1), Some(30));
        // Filled in by the search before: range 20's search starts before that `}` (27).
        assert_eq!(tape.cuts.lock().unwrap().found[20], Some(30));
        assert_eq!(tape.cut(20, 1), Some(30));
        // Past the last boundary.
        assert_eq!(tape.cut(33, 1), None);
        assert_eq!(tape.cut(33, 1), None);
    }

    #[test]
    fn freed_blocks_are_an_error_not_wrong_bytes() {
        let tape = filled(&[b'x'; 256], 0, 16);
        tape.release(100);
        assert!(tape.reader(10).read(&mut [0u8; 4]).is_err());
        assert_eq!(read_all(tape.reader(96)).len(), 160);
    }

    /// The tail reader frees what it has read, the inflater waits for room and reuses
    /// the freed blocks, and the bytes come out as they went in.
    #[test]
    fn a_capped_tape_streams_through_reused_blocks() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let tape = Arc::new(Tape::new(7, 64, 256));
        let (t, src) = (tape.clone(), bytes.clone());
        let filler = std::thread::spawn(move || t.fill(src[..100].to_vec(), &src[100..]));
        assert_eq!(read_all(tape.tail(7)), bytes);
        filler.join().unwrap();
        let st = tape.lock();
        assert!(st.blocks.len() <= 8, "{} blocks held", st.blocks.len());
        assert!(st.closed, "the tail closes the tape");
    }

    #[test]
    fn an_abandoned_tape_fails_its_waiting_readers() {
        let tape = Arc::new(Tape::new(0, 8, u64::MAX));
        let t = tape.clone();
        let waiting =
            std::thread::spawn(move || t.reader(0).read(&mut [0u8; 4]).map_err(|e| e.to_string()));
        tape.abandon();
        let want = Err("the gzip inflating thread stopped".to_owned());
        assert_eq!(waiting.join().unwrap(), want);
    }

    #[test]
    fn the_inflaters_error_reaches_every_reader() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "corrupt deflate stream",
                ))
            }
        }
        let tape = Arc::new(Tape::new(0, 8, u64::MAX));
        tape.fill(b"0123456789".to_vec(), Broken);
        for _ in 0..2 {
            let mut v = Vec::new();
            let e = tape.reader(0).read_to_end(&mut v).unwrap_err();
            assert_eq!(e.to_string(), "corrupt deflate stream");
            assert_eq!(v, b"0123456789");
        }
    }
}
