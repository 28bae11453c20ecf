//! A minimal JSON pull scanner for multi-GB traces: a window of the input in one growable
//! buffer, complete values handed out as borrowed slices, and a cursor over such a slice.
//!
//! Why not serde_json: without its `arbitrary_precision`/`raw_value` features (not enabled
//! in this crate, and `arbitrary_precision` would change `serde_json::Value` for every
//! other module) it hands numbers out only as f64, which loses the nanoseconds of absolute
//! epoch timestamps (docs/kineto-format.md §8); and `from_reader` copies every string it skips. Here a
//! skipped `python_function`/`cpu_op` event costs one structural byte scan and nothing else.

use std::io::{self, Read};

use super::bytes::read_full;
use super::skip::{nested_end, End};
use super::tape::Rest;

/// Start with 1 MiB; the window doubles only if one value (one event) is larger.
const INITIAL_WINDOW: usize = 1 << 20;

/// Why a value could not be taken from the stream.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// The reader failed (for gzip input: a truncated or corrupt stream).
    Io(io::Error),
    /// The input ended inside a value.
    Truncated { offset: u64 },
    /// Not JSON at this point.
    Malformed { offset: u64 },
}

impl From<io::Error> for ScanError {
    fn from(e: io::Error) -> Self {
        ScanError::Io(e)
    }
}

/// The input stream with its buffered window `buf[pos..end]`.
pub(crate) struct Stream<R: Read> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    /// Bytes dropped from the front of the window so far (for error offsets).
    dropped: u64,
    /// A read error that came after some bytes of the same fill: reported once those
    /// bytes are used up, so the error surfaces where the readable bytes end whatever the
    /// reads' sizes (a gzipped trace read whole or in ranges fails at the same place).
    failed: Option<io::Error>,
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

impl<R: Read> Stream<R> {
    pub fn new(r: R) -> Self {
        Stream {
            r,
            buf: vec![0; INITIAL_WINDOW],
            pos: 0,
            end: 0,
            eof: false,
            dropped: 0,
            failed: None,
        }
    }

    /// A stream over `r`, whose first byte is byte `offset` of the input (a reader opened
    /// part way into a file): offsets in errors stay the file's.
    pub(crate) fn starting_at(r: R, offset: u64) -> Self {
        let mut s = Stream::new(r);
        s.dropped = offset;
        s
    }

    /// Take the stream apart: its reader, the bytes read from it but not consumed, and
    /// the offset of the first of them (a gzipped trace's ranges go on from there).
    pub(crate) fn into_rest(self) -> (Rest<R>, Vec<u8>, u64) {
        let offset = self.offset();
        let unread = self.buf[self.pos..self.end].to_vec();
        let rest = Rest {
            r: self.r,
            failed: self.failed,
            eof: self.eof,
        };
        (rest, unread, offset)
    }

    /// Byte offset of the next unread byte in the (decompressed) input.
    pub fn offset(&self) -> u64 {
        self.dropped + self.pos as u64
    }

    /// Keep `buf[pos..end]`, read until the window is full or the input ends.
    /// Returns false when nothing more could be read.
    fn fill(&mut self) -> io::Result<bool> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.dropped += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        let room = self.buf.len() - self.end;
        let (n, failed) = read_full(&mut self.r, &mut self.buf[self.end..]);
        self.end += n;
        match failed {
            Some(e) if n == 0 => return Err(e),
            Some(e) => self.failed = Some(e),
            None if n < room => self.eof = true,
            None => {}
        }
        Ok(n > 0)
    }

    /// Read the input to its end, dropping what is left: a gzip member's CRC32 and length
    /// are checked only when its data ends, after the document's closing `}`.
    pub fn drain(&mut self) -> io::Result<()> {
        self.pos = self.end;
        while self.fill()? {
            self.pos = self.end;
        }
        Ok(())
    }

    /// The next non-whitespace byte, not consumed; `None` at the end of the input.
    pub(crate) fn peek(&mut self) -> io::Result<Option<u8>> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if is_ws(b) {
                    self.pos += 1;
                } else {
                    return Ok(Some(b));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consume one byte (after [`Stream::peek`] returned it).
    pub(crate) fn bump(&mut self) {
        self.pos += 1;
    }

    /// Consume the next non-whitespace byte, which must be `want`.
    pub fn expect(&mut self, want: u8) -> Result<(), ScanError> {
        match self.peek()? {
            Some(b) if b == want => {
                self.bump();
                Ok(())
            }
            Some(_) => Err(ScanError::Malformed {
                offset: self.offset(),
            }),
            None => Err(ScanError::Truncated {
                offset: self.offset(),
            }),
        }
    }

    /// The next complete JSON value as a borrowed slice (consumed).
    pub fn value(&mut self) -> Result<&[u8], ScanError> {
        if self.peek()?.is_none() {
            return Err(ScanError::Truncated {
                offset: self.offset(),
            });
        }
        loop {
            match value_end(&self.buf[self.pos..self.end], self.eof) {
                End::Complete(n) => {
                    let s = self.pos;
                    self.pos += n;
                    return Ok(&self.buf[s..s + n]);
                }
                End::Malformed => {
                    return Err(ScanError::Malformed {
                        offset: self.offset(),
                    })
                }
                End::Incomplete => {
                    if !self.fill()? {
                        return Err(ScanError::Truncated {
                            offset: self.offset(),
                        });
                    }
                }
            }
        }
    }
}

/// Length of the value starting at `s[0]` (not whitespace), by structure only.
fn value_end(s: &[u8], eof: bool) -> End {
    match s.first() {
        None => End::Incomplete,
        Some(b'"') => match string_end(s, 1) {
            Some(e) => End::Complete(e),
            None => End::Incomplete,
        },
        Some(b'{' | b'[') => nested_end(s),
        Some(b'}' | b']' | b',' | b':') => End::Malformed,
        Some(_) => {
            let n = s
                .iter()
                .position(|&b| matches!(b, b',' | b'}' | b']' | b':') || is_ws(b))
                .unwrap_or(s.len());
            if n == s.len() && !eof {
                End::Incomplete
            } else {
                End::Complete(n)
            }
        }
    }
}

/// Index just past the closing quote of a string whose content starts at `i`.
///
/// Strings are most of a trace's bytes (names, file paths, arg values), so this skips
/// eight bytes at a time while none of them is a quote or a backslash (a SWAR test:
/// cheaper than a SIMD search on strings this short).
#[inline]
fn string_end(s: &[u8], mut i: usize) -> Option<usize> {
    loop {
        while let Some(w) = s.get(i..i + 8) {
            let x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            let m = has_byte(x, b'"') | has_byte(x, b'\\');
            if m != 0 {
                // The lowest flagged byte is exact (false flags only appear above it).
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match s.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// High bit set in each byte of `x` equal to `b` (and possibly in bytes above the
/// first such byte): the classic "has zero byte" test on `x ^ b…b`.
#[inline]
fn has_byte(x: u64, b: u8) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let v = x ^ (LO * u64::from(b));
    v.wrapping_sub(LO) & !v & HI
}

/// A JSON string as it appears in the input: raw bytes between the quotes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JStr<'a> {
    pub raw: &'a [u8],
    pub escaped: bool,
}

impl<'a> JStr<'a> {
    /// The string's text: borrowed when it has no escapes, else decoded into `scratch`.
    /// Invalid UTF-8 or escapes degrade to U+FFFD rather than failing the whole trace.
    pub fn text<'s>(&self, scratch: &'s mut String) -> std::borrow::Cow<'s, str>
    where
        'a: 's,
    {
        if !self.escaped {
            return String::from_utf8_lossy(self.raw);
        }
        scratch.clear();
        unescape(self.raw, scratch);
        std::borrow::Cow::Borrowed(scratch.as_str())
    }
}

fn unescape(raw: &[u8], out: &mut String) {
    let mut bytes: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' || i + 1 >= raw.len() {
            bytes.push(b);
            i += 1;
            continue;
        }
        let e = raw[i + 1];
        i += 2;
        match e {
            b'n' => bytes.push(b'\n'),
            b't' => bytes.push(b'\t'),
            b'r' => bytes.push(b'\r'),
            b'b' => bytes.push(8),
            b'f' => bytes.push(12),
            b'u' => {
                let mut cp = hex4(raw, i);
                i += 4;
                if let Some(hi) = cp.filter(|c| (0xD800..0xDC00).contains(c)) {
                    if raw.get(i) == Some(&b'\\') && raw.get(i + 1) == Some(&b'u') {
                        if let Some(lo) = hex4(raw, i + 2).filter(|c| (0xDC00..0xE000).contains(c))
                        {
                            cp = Some(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
                            i += 6;
                        }
                    }
                }
                let c = cp.and_then(char::from_u32).unwrap_or('\u{FFFD}');
                let mut tmp = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
            }
            other => bytes.push(other),
        }
    }
    out.push_str(&String::from_utf8_lossy(&bytes));
}

fn hex4(raw: &[u8], i: usize) -> Option<u32> {
    let h = raw.get(i..i + 4)?;
    u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
}

/// One member value, by shape.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Val<'a> {
    Str(JStr<'a>),
    /// A number or literal (`true`, `null`), as raw text.
    Scalar(&'a [u8]),
    /// An object or array, as raw text.
    Nested(&'a [u8]),
}

/// A cursor over one complete value (from [`Stream::value`]); `None` = malformed.
pub(crate) struct Cur<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    pub fn new(s: &'a [u8]) -> Self {
        Cur { s, i: 0 }
    }

    #[inline]
    fn ws(&mut self) {
        while self.i < self.s.len() && is_ws(self.s[self.i]) {
            self.i += 1;
        }
    }

    /// Consume `b` (after whitespace) if it is next.
    #[inline]
    pub(crate) fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, b: u8) -> Option<()> {
        self.eat(b).then_some(())
    }

    pub fn string(&mut self) -> Option<JStr<'a>> {
        self.ws();
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        let mut escaped = false;
        while i < self.s.len() {
            match self.s[i] {
                b'"' => {
                    self.i = i + 1;
                    return Some(JStr {
                        raw: &self.s[start..i],
                        escaped,
                    });
                }
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Any value, classified by its first byte.
    pub fn value(&mut self) -> Option<Val<'a>> {
        self.ws();
        match *self.s.get(self.i)? {
            b'"' => self.string().map(Val::Str),
            b'{' | b'[' => match nested_end(&self.s[self.i..]) {
                End::Complete(n) => {
                    let v = &self.s[self.i..self.i + n];
                    self.i += n;
                    Some(Val::Nested(v))
                }
                _ => None,
            },
            _ => {
                let rest = &self.s[self.i..];
                let n = rest
                    .iter()
                    .position(|&b| matches!(b, b',' | b'}' | b']' | b':') || is_ws(b))
                    .unwrap_or(rest.len());
                if n == 0 {
                    return None;
                }
                self.i += n;
                Some(Val::Scalar(&rest[..n]))
            }
        }
    }

    /// Whether the next value is a number or literal (not a string, object or array).
    pub(crate) fn at_scalar(&mut self) -> bool {
        self.ws();
        !matches!(self.s.get(self.i), Some(b'"' | b'{' | b'[') | None)
    }

    /// A number or literal's raw text; `None` for strings and nested values.
    pub fn scalar(&mut self) -> Option<&'a [u8]> {
        match self.value()? {
            Val::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// Call `f` on every element of an array (the cursor is at `[`); `f` returns
    /// `Some(false)` to stop early, `None` on malformed input.
    pub fn elements(&mut self, mut f: impl FnMut(&mut Cur<'a>) -> Option<bool>) -> Option<()> {
        self.expect(b'[')?;
        if self.eat(b']') {
            return Some(());
        }
        loop {
            if !f(self)? {
                return Some(());
            }
            if self.eat(b',') {
                continue;
            }
            return self.expect(b']');
        }
    }

    /// Walk an object's members: `f(key, cursor)` must consume the value and return false
    /// to stop early (the rest of the object is then left unread).
    pub fn members(
        &mut self,
        mut f: impl FnMut(&'a [u8], &mut Cur<'a>) -> Option<bool>,
    ) -> Option<()> {
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            if !f(key.raw, self)? {
                return Some(());
            }
            if self.eat(b',') {
                continue;
            }
            return self.expect(b'}');
        }
    }
}

#[cfg(test)]
mod tests;
