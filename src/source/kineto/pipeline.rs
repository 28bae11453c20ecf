//! One Kineto file read on two threads: a scanning thread reads the bytes, finds where
//! each event ends (the structural scan) and copies the events into 1 MiB batches; the
//! calling thread parses and collects them, batch by batch in scan order. The collector's
//! state (names, correlation, per-file and per-rank numbering) is sequential, so it stays
//! on one thread, and the rows, names and warnings are the one-thread read's. Errors too:
//! the first in byte order wins (see [`read`]).

use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};

use super::build::Collector;
use super::sink::{collect, Events, Fail};

/// Bytes of events per batch: the channel then costs nothing per event, and the collector
/// starts after the first MiB.
pub(super) const BATCH_BYTES: usize = 1 << 20;
/// Batches the scanner may be ahead of the collector (with the one each side holds, the
/// buffers in flight: a few MiB).
const BATCHES_AHEAD: usize = 4;

/// Scanned events, copied back to back, with their offsets and extents.
#[derive(Default)]
pub(super) struct Batch {
    pub bytes: Vec<u8>,
    /// (offset in the input, start, end in `bytes`).
    pub events: Vec<(u64, usize, usize)>,
}

impl Batch {
    /// Copy in one event.
    pub fn push(&mut self, raw: &[u8], offset: u64) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(raw);
        self.events.push((offset, start, self.bytes.len()));
    }

    /// Collect its events, in order. Each is parsed here, and a range thread of a plain
    /// file (`chunked`) has parsed its kept events once already to decide to send them:
    /// their rows borrow the batch's bytes, so the parse is not carried across threads
    /// (about 9% of a vLLM trace's events are kept).
    pub fn collect(&self, col: &mut Collector) -> Result<(), Fail> {
        for &(offset, start, end) in &self.events {
            collect(col, &self.bytes[start..end], offset)?;
        }
        Ok(())
    }
}

/// The scanning thread's side: events copied into batches and sent in order. The
/// collector sends each batch back when it is done with it, so the buffers are reused
/// instead of a fresh MiB (and its page faults) per batch.
pub(super) struct Batches {
    tx: SyncSender<Batch>,
    spent: Receiver<Batch>,
    batch: Batch,
}

impl Batches {
    fn send(&mut self) -> Result<(), Fail> {
        let mut next = self.spent.try_recv().unwrap_or_default();
        next.bytes.clear();
        next.events.clear();
        let full = std::mem::replace(&mut self.batch, next);
        self.tx.send(full).map_err(|_| Fail::Stopped)
    }
}

impl Events for Batches {
    fn event(&mut self, raw: &[u8], offset: u64) -> Result<(), Fail> {
        self.batch.push(raw, offset);
        if self.batch.bytes.len() >= BATCH_BYTES {
            self.send()?;
        }
        Ok(())
    }
}

/// Run `scan` (the document read, handing its events to [`Batches`]) on its own thread and
/// parse and collect its events here, in the order it found them.
///
/// The first error in byte order wins, as on one thread: a bad event found here comes
/// before anything the scanner found later (the scanner sends the events before its own
/// error, and its error is only looked at once every batch is collected), and stops the
/// scanner (its next send fails).
pub(super) fn read<S>(scan: S, col: &mut Collector) -> Result<(), Fail>
where
    S: FnOnce(&mut Batches) -> Result<(), Fail> + Send,
{
    let (tx, scanned) = sync_channel(BATCHES_AHEAD);
    // Unbounded, but only the batches in flight are ever in it.
    let (give_back, spent) = channel();
    std::thread::scope(|scope| {
        let scanner = scope.spawn(move || {
            let mut batches = Batches {
                tx,
                spent,
                batch: Batch::default(),
            };
            // The events before a scan error are sent too: one of them may be a bad event,
            // which comes first.
            let read = scan(&mut batches);
            batches.send().and(read)
        });
        let mut failed = None;
        for b in &scanned {
            if let Err(f) = b.collect(col) {
                failed = Some(f);
                break;
            }
            let _ = give_back.send(b);
        }
        // Hang up: the scanner's next send fails.
        drop(scanned);
        let scanned = scanner
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        match failed {
            Some(f) => Err(f),
            None => scanned,
        }
    })
}
