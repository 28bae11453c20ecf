//! Byte-level pieces the trace readers share: filling a buffer from a reader, and
//! finding where two events meet in raw bytes (the range cuts of a split read).

use std::io::{self, Read};

/// Read into `buf` until it is full, the input ends (fewer bytes) or a read fails (the
/// error, after the bytes read before it): the one fill loop of the stream, the inflating
/// threads and the range cuts.
pub(super) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

/// Finds where an events loop stands between two events: a comma with `}` before it and
/// `{` after it (whitespace between), in bytes fed piece by piece (a plain file's probe,
/// a gzipped file's inflated blocks). Only bytes fed count: a `}` before the first is not
/// seen.
#[derive(Default)]
pub(super) struct Boundary {
    /// The last `}` seen with only whitespace after it, and the comma after that.
    close: Option<u64>,
    comma: Option<u64>,
}

impl Boundary {
    /// Feed `b`, whose first byte is at offset `at`: the offsets of the first boundary's
    /// `}` and of the byte just after its comma, once one is complete.
    pub(crate) fn feed(&mut self, b: &[u8], at: u64) -> Option<(u64, u64)> {
        for (i, &c) in b.iter().enumerate() {
            let here = at + i as u64;
            match (c, self.close, self.comma) {
                (b' ' | b'\n' | b'\r' | b'\t', _, _) => {}
                (b'{', Some(close), Some(comma)) => return Some((close, comma + 1)),
                (b',', Some(_), None) => self.comma = Some(here),
                (b'}', _, _) => {
                    self.close = Some(here);
                    self.comma = None;
                }
                _ => {
                    self.close = None;
                    self.comma = None;
                }
            }
        }
        None
    }
}
