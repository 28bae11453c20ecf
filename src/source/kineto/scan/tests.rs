//! Unit tests of the Kineto JSON scanner: values split across tiny reads, truncation, escapes and where a read error lands.

use super::*;

/// Bytes in one read, then a read error (a gzip stream that breaks after them).
struct ThenBroken(Option<Vec<u8>>);

impl Read for ThenBroken {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(b) => {
                buf[..b.len()].copy_from_slice(&b);
                Ok(b.len())
            }
            None => Err(io::Error::other("corrupt deflate stream")),
        }
    }
}

#[test]
fn a_read_error_comes_where_the_readable_bytes_end() {
    let mut s = Stream::new(ThenBroken(Some(b"[{\"a\": 1}, {\"b\"".to_vec())));
    s.expect(b'[').unwrap();
    // The event read whole before the error is still handed out.
    assert_eq!(s.value().unwrap(), b"{\"a\": 1}");
    s.expect(b',').unwrap();
    assert!(matches!(s.value(), Err(ScanError::Io(_))));
    // Taken apart before the error was reported: the rest reports it first.
    let mut s = Stream::new(ThenBroken(Some(b"[1, 2".to_vec())));
    s.expect(b'[').unwrap();
    let (mut rest, unread, offset) = s.into_rest();
    assert_eq!((unread.as_slice(), offset), (&b"1, 2"[..], 1));
    assert!(rest.read(&mut [0u8; 8]).is_err());
}

/// The byte-at-a-time definition the word-at-a-time `string_end` must agree with.
fn string_end_naive(s: &[u8], mut i: usize) -> Option<usize> {
    while i < s.len() {
        match s[i] {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    None
}

#[test]
fn string_end_agrees_with_the_bytewise_scan() {
    // Every placement of quotes and backslashes around the 8-byte word boundaries,
    // from a small deterministic generator, and every start offset.
    let alphabet = [b'a', b'"', b'\\', b'\xe9', b' '];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..40 {
        for _ in 0..200 {
            let s: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % 5) as usize]
                })
                .collect();
            for start in 0..=s.len() {
                assert_eq!(
                    string_end(&s, start),
                    string_end_naive(&s, start),
                    "{s:?} from {start}"
                );
            }
        }
    }
}

#[test]
fn values_across_tiny_reads() {
    // A reader that returns one byte at a time forces every refill path.
    struct OneByte<'a>(&'a [u8]);
    impl Read for OneByte<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() || out.is_empty() {
                return Ok(0);
            }
            out[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }
    let text = br#" [ {"a": "x\"}", "b": [1, {"c": 2}]}, 12.5 , "s"] "#;
    let mut s = Stream::new(OneByte(text));
    s.expect(b'[').unwrap();
    assert_eq!(s.value().unwrap(), br#"{"a": "x\"}", "b": [1, {"c": 2}]}"#);
    s.expect(b',').unwrap();
    assert_eq!(s.value().unwrap(), b"12.5");
    s.expect(b',').unwrap();
    assert_eq!(s.value().unwrap(), b"\"s\"");
    s.expect(b']').unwrap();
    assert!(s.peek().unwrap().is_none());
}

#[test]
fn truncated_value_is_reported() {
    let mut s = Stream::new(&br#"{"a": [1, 2"#[..]);
    assert!(matches!(s.value(), Err(ScanError::Truncated { .. })));
}

#[test]
fn cursor_members_and_unescape() {
    let mut c = Cur::new(br#"{"name": "a\"b\u00e9\ud83d\ude00", "n": 3, "o": {"x": []}}"#);
    let mut seen = Vec::new();
    let mut scratch = String::new();
    c.members(|k, c| {
        match c.value()? {
            Val::Str(s) => seen.push(format!(
                "{}={}",
                String::from_utf8_lossy(k),
                s.text(&mut scratch)
            )),
            Val::Scalar(n) => seen.push(format!(
                "{}#{}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(n)
            )),
            Val::Nested(n) => seen.push(format!(
                "{}@{}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(n)
            )),
        }
        Some(true)
    })
    .unwrap();
    assert_eq!(seen, vec!["name=a\"bé😀", "n#3", r#"o@{"x": []}"#]);
}
