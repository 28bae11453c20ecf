//! A gzip file inflated member by member (RFC 1952 §2.2: a file is one or more members,
//! each with its own trailer), so that a member whose CRC32 or ISIZE does not match its
//! data is named by the byte offset where it starts. flate2's single-member decoder checks
//! the trailer; this wrapper only knows where each member starts and what its trailer
//! said, for the error line. The check happens when a member's deflate data ends, so the
//! trace readers read every stream to its end ([`super::read`]) rather than stopping at
//! the document's closing `}`.

use std::io::{self, BufRead, Read};

use flate2::bufread::GzDecoder;

/// How every trailer-check failure starts: [`super::read`] words it as damage, not as a
/// file still being written.
pub(super) const CORRUPT: &str = "corrupt gzip";

/// Counts the bytes consumed from `r` and keeps the last eight (a member's trailer, once
/// the decoder has read it).
pub(super) struct Counted<R> {
    r: R,
    consumed: u64,
    last: [u8; 8],
}

impl<R: BufRead> Counted<R> {
    fn note(&mut self, amt: usize) {
        // `fill_buf` after a `fill_buf` without a consume returns the same bytes, with no
        // read: the bytes about to be consumed.
        if let Ok(buf) = self.r.fill_buf() {
            let taken = &buf[..amt.min(buf.len())];
            let keep = taken.len().min(8);
            self.last.copy_within(keep.., 0);
            self.last[8 - keep..].copy_from_slice(&taken[taken.len() - keep..]);
        }
        self.consumed += amt as u64;
    }
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.r.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        self.note(amt);
        self.r.consume(amt);
    }
}

/// The plain bytes of every member of a gzip file, in order; a member whose trailer does
/// not match fails with "corrupt gzip: the member at byte N …".
pub(super) struct Members<R: BufRead> {
    dec: Option<GzDecoder<Counted<R>>>,
    /// Where the current member starts in the file.
    start: u64,
    /// Bytes the current member has inflated to so far.
    out: u64,
}

impl<R: BufRead> Members<R> {
    pub fn new(r: R) -> Self {
        let counted = Counted {
            r,
            consumed: 0,
            last: [0; 8],
        };
        Members {
            dec: Some(GzDecoder::new(counted)),
            start: 0,
            out: 0,
        }
    }

    /// The decoder's error, with the member's offset; a trailer mismatch says which
    /// field (as `gzip -t` does: "crc error" or "length error").
    fn explain(&self, e: io::Error) -> io::Error {
        let Some(dec) = &self.dec else { return e };
        let counted = dec.get_ref();
        let start = self.start;
        // flate2's own wording for a trailer mismatch (`gz::corrupt`), checked by kind
        // too: a deflate error is also InvalidInput, but never says "checksum".
        let trailer = e.kind() == io::ErrorKind::InvalidInput && e.to_string().contains("checksum");
        if !trailer {
            return e;
        }
        let t = counted.last;
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let isize = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        // ISIZE is the length modulo 2^32 (RFC 1952 §2.3.1).
        let got = self.out as u32;
        let what = if isize != got {
            format!(
                "its length does not match its trailer (ISIZE {isize}, inflated {} bytes)",
                self.out
            )
        } else {
            format!("its CRC32 does not match its data (trailer {crc:08x})")
        };
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{CORRUPT}: the member at byte {start}: {what}"),
        )
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(dec) = self.dec.as_mut() else {
                return Ok(0);
            };
            match dec.read(buf) {
                Ok(0) => {
                    // This member's trailer matched. Another member follows unless the
                    // file ends here (as gzip and flate2's MultiGzDecoder read it).
                    let Some(mut counted) = self.dec.take().map(GzDecoder::into_inner) else {
                        return Ok(0);
                    };
                    if counted.fill_buf()?.is_empty() {
                        return Ok(0);
                    }
                    self.start = counted.consumed;
                    self.out = 0;
                    self.dec = Some(GzDecoder::new(counted));
                }
                Ok(n) => {
                    self.out += n as u64;
                    return Ok(n);
                }
                Err(e) => {
                    // Nothing after a failed member is read: a later read ends the stream.
                    let e = self.explain(e);
                    self.dec = None;
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write;

    fn member(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn inflate(gz: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        // A small buffer, so members end across many reads.
        let mut r = Members::new(io::BufReader::with_capacity(7, gz));
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn members_are_read_in_order_and_checked() {
        let a = member(b"hello ");
        let b = member(b"world");
        let both = [a.clone(), b.clone()].concat();
        assert_eq!(inflate(&both).unwrap(), b"hello world");

        // The second member's CRC32 (first trailer byte) flipped.
        let mut bad = both.clone();
        bad[a.len() + b.len() - 8] ^= 1;
        let e = inflate(&bad).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "corrupt gzip: the member at byte {}: its CRC32 does not match its data (trailer {:08x})",
                a.len(),
                u32::from_le_bytes(bad[bad.len() - 8..bad.len() - 4].try_into().unwrap())
            )
        );
        // The first member's ISIZE (last trailer byte) changed: 6 + 2^24.
        let mut bad = both;
        bad[a.len() - 1] ^= 1;
        let e = inflate(&bad).unwrap_err().to_string();
        assert_eq!(
            e,
            "corrupt gzip: the member at byte 0: its length does not match its trailer \
             (ISIZE 16777222, inflated 6 bytes)"
        );
    }
}
