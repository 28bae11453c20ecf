//! Opening a trace file: gzip is detected by its magic bytes `1f 8b` (docs/kineto-format.md §1), not
//! by the extension, and either way the caller gets one plain byte stream.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};

use super::bytes::read_full;
use super::gzip::Members;
use crate::exit::{Error, Result};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// A UTF-8 byte-order mark some editors and Windows tools put before JSON (RFC 8259 §8.1
/// lets a parser ignore it).
const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniff {
    Gzip,
    /// Starts (after whitespace) with `{` or `[`.
    Json,
    Other,
}

/// Look at the first bytes of a file (an unreadable file is `Other`).
pub fn sniff(path: &Path) -> Sniff {
    let mut head = [0u8; 64];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    classify(&head[..n])
}

fn classify(head: &[u8]) -> Sniff {
    if head.starts_with(&GZIP_MAGIC) {
        return Sniff::Gzip;
    }
    let head = head.strip_prefix(&BOM[..]).unwrap_or(head);
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{' | b'[') => Sniff::Json,
        _ => Sniff::Other,
    }
}

/// The opened trace: a decompressing or plain reader, and whether it was gzip.
pub(crate) struct Opened {
    pub reader: Box<dyn Read + Send>,
    pub gzip: bool,
    /// Bytes of a plain file before its JSON (a byte-order mark): stream offset 0 is file
    /// offset `skipped`.
    pub skipped: u64,
}

/// Open `path` for streaming; gzip (one or more members, each checked against its
/// trailer: [`super::gzip`]) is decompressed on the fly, on
/// a thread of its own when `inflate_apart` (the caller's choice, [`super::read`]),
/// else on the calling thread. Either way the caller reads the same bytes, so every
/// output is the same.
pub fn open(path: &Path, inflate_apart: bool) -> Result<Opened> {
    let file = File::open(path)
        .map_err(|e| Error::input(format!("{}: cannot open: {e}", path.display())))?;
    let mut buffered = BufReader::with_capacity(1 << 20, file);
    let head = buffered
        .fill_buf()
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    if head.starts_with(&GZIP_MAGIC) {
        let decoder = Members::new(buffered);
        let plain: Box<dyn Read + Send> = if inflate_apart {
            Box::new(Inflated::spawn(decoder))
        } else {
            Box::new(decoder)
        };
        let mut inner = BufReader::with_capacity(1 << 16, plain);
        // A corrupt gzip header surfaces later, worded by the reader; only skip a BOM here.
        if inner.fill_buf().is_ok_and(|h| h.starts_with(&BOM)) {
            inner.consume(BOM.len());
        }
        Ok(Opened {
            reader: Box::new(inner),
            gzip: true,
            skipped: 0,
        })
    } else {
        let skipped = if head.starts_with(&BOM) {
            buffered.consume(BOM.len());
            BOM.len() as u64
        } else {
            0
        };
        Ok(Opened {
            reader: Box::new(buffered),
            gzip: false,
            skipped,
        })
    }
}

/// Bytes per chunk the inflating thread hands over: large enough that the channel costs
/// nothing per byte, small enough that the parser starts at once.
const CHUNK: usize = 1 << 20;
/// Chunks inflated ahead of the parser (bounds the memory to a few MiB).
const AHEAD: usize = 4;

/// What the inflating thread sends: a chunk of plain bytes, the decoder's error (sent as
/// is, so it is worded as on one thread), or the end of the stream.
enum Piece {
    Bytes(Vec<u8>),
    Failed(std::io::Error),
    End,
}

/// The plain bytes of a gzip stream inflated on its own thread, read in order.
struct Inflated {
    rx: Receiver<Piece>,
    chunk: Vec<u8>,
    at: usize,
    done: bool,
}

impl Inflated {
    fn spawn<R: Read + Send + 'static>(mut decoder: R) -> Inflated {
        let (tx, rx) = sync_channel(AHEAD);
        // Detached: it stops at the end of the stream, on an error, or when the reader
        // is dropped (its next send fails).
        std::thread::spawn(move || loop {
            let mut chunk = vec![0; CHUNK];
            let (n, piece) = read_full(&mut decoder, &mut chunk);
            let last = n < CHUNK || piece.is_some();
            chunk.truncate(n);
            if n > 0 && tx.send(Piece::Bytes(chunk)).is_err() {
                return;
            }
            if let Some(e) = piece {
                let _ = tx.send(Piece::Failed(e));
                return;
            }
            if last {
                let _ = tx.send(Piece::End);
                return;
            }
        });
        Inflated {
            rx,
            chunk: Vec::new(),
            at: 0,
            done: false,
        }
    }
}

impl Read for Inflated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() && !self.done {
            match self.rx.recv() {
                Ok(Piece::Bytes(c)) => {
                    self.chunk = c;
                    self.at = 0;
                }
                Ok(Piece::Failed(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Ok(Piece::End) => self.done = true,
                // The thread ended without saying so (a panic): never a silent short
                // stream, which would read as a truncated trace.
                Err(_) => {
                    self.done = true;
                    return Err(std::io::Error::other("the gzip inflating thread stopped"));
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_content() {
        assert_eq!(classify(&[0x1f, 0x8b, 8, 0]), Sniff::Gzip);
        assert_eq!(classify(b"\n  {\"schemaVersion\": 1"), Sniff::Json);
        assert_eq!(classify(b"[{\"ph\":\"X\"}]"), Sniff::Json);
        assert_eq!(classify(b"SQLite format 3\0"), Sniff::Other);
        assert_eq!(classify(b""), Sniff::Other);
        assert_eq!(classify(b"\xef\xbb\xbf{\"traceEvents\": []}"), Sniff::Json);
    }
}
