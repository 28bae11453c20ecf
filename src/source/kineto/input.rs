//! Opening a trace file: gzip is detected by its magic bytes `1f 8b` (docs/kineto-format.md §1), not
//! by the extension, and either way the caller gets one plain byte stream.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::exit::{Error, Result};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// A UTF-8 byte-order mark some editors and Windows tools put before JSON (RFC 8259 §8.1
/// lets a parser ignore it).
const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniff {
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
pub struct Opened {
    pub reader: Box<dyn Read>,
    pub gzip: bool,
}

/// Open `path` for streaming; gzip (one or more members) is decompressed on the fly.
pub fn open(path: &Path) -> Result<Opened> {
    let file = File::open(path)
        .map_err(|e| Error::input(format!("{}: cannot open: {e}", path.display())))?;
    let mut buffered = BufReader::with_capacity(1 << 20, file);
    let head = buffered
        .fill_buf()
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    if head.starts_with(&GZIP_MAGIC) {
        let mut inner = BufReader::with_capacity(1 << 16, MultiGzDecoder::new(buffered));
        // A corrupt gzip header surfaces later, worded by the reader; only skip a BOM here.
        if inner.fill_buf().is_ok_and(|h| h.starts_with(&BOM)) {
            inner.consume(BOM.len());
        }
        Ok(Opened {
            reader: Box::new(inner),
            gzip: true,
        })
    } else {
        if head.starts_with(&BOM) {
            buffered.consume(BOM.len());
        }
        Ok(Opened {
            reader: Box::new(buffered),
            gzip: false,
        })
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
