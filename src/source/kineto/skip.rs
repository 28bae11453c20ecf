//! Where a JSON object or array ends, by structure only: the scan every Kineto event goes
//! through once before it is parsed or dropped, so most of a trace's bytes pass here.
//!
//! 64 bytes at a time: bit masks of the block's quotes, brackets and backslashes (SSE2 on
//! x86_64, where it is part of the baseline; a plain loop elsewhere), the bytes inside
//! strings from the quotes' running parity, and only the brackets outside strings counted
//! — the first stage of simdjson (Langdale & Lemire, "Parsing gigabytes of JSON per
//! second", VLDB Journal 28, 2019). A block holding a backslash, or one that starts right
//! after an escaping backslash, is scanned byte by byte instead: escapes are rare in
//! traces, and the byte walk is the definition the block walk must agree with.

/// Where a value ends: its length, not yet (the input ends first), or never (it closes
/// more than it opened).
pub(super) enum End {
    Complete(usize),
    Incomplete,
    Malformed,
}

/// The scan's state between blocks.
#[derive(Default)]
struct State {
    depth: usize,
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escaped: bool,
}

/// Bit `j` set where byte `j` of a 64-byte block is the character named.
#[derive(Debug, Default, PartialEq, Eq)]
struct Masks {
    quote: u64,
    backslash: u64,
    /// `{` or `[`.
    open: u64,
    /// `}` or `]`.
    close: u64,
}

/// Length of the object or array that starts at `s[0]`; `Incomplete` when `s` ends first.
pub(super) fn nested_end(s: &[u8]) -> End {
    let mut st = State::default();
    let mut blocks = s.chunks_exact(64);
    let mut base = 0;
    for b in &mut blocks {
        let b: &[u8; 64] = b.try_into().expect("chunks_exact gives 64 bytes");
        if let Some(end) = st.block(b, base) {
            return end;
        }
        base += 64;
    }
    // The tail, zero-padded: a zero byte is neither a quote, a bracket nor a backslash.
    let tail = blocks.remainder();
    let mut padded = [0u8; 64];
    padded[..tail.len()].copy_from_slice(tail);
    st.block(&padded, base).unwrap_or(End::Incomplete)
}

impl State {
    /// Scan one block that starts at `base` in the value; Some when the value ends in it.
    #[inline]
    fn block(&mut self, b: &[u8; 64], base: usize) -> Option<End> {
        let m = masks(b);
        if m.backslash != 0 || self.escaped {
            return self.bytes(b, base);
        }
        let inside = prefix_xor(m.quote) ^ if self.in_string { !0 } else { 0 };
        self.in_string ^= m.quote.count_ones() % 2 == 1;
        let open = m.open & !inside;
        let close = m.close & !inside;
        if close == 0 {
            self.depth += open.count_ones() as usize;
            return None;
        }
        let mut brackets = open | close;
        while brackets != 0 {
            let j = brackets.trailing_zeros() as usize;
            if open >> j & 1 == 1 {
                self.depth += 1;
            } else if let Some(end) = self.close(base + j) {
                return Some(end);
            }
            brackets &= brackets - 1;
        }
        None
    }

    /// A closing bracket outside strings at `at`: Some when it closes the value.
    #[inline]
    fn close(&mut self, at: usize) -> Option<End> {
        if self.depth == 0 {
            return Some(End::Malformed);
        }
        self.depth -= 1;
        (self.depth == 0).then_some(End::Complete(at + 1))
    }

    /// The byte walk over one block (escapes included).
    fn bytes(&mut self, b: &[u8], base: usize) -> Option<End> {
        for (j, &c) in b.iter().enumerate() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match c {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    if let Some(end) = self.close(base + j) {
                        return Some(end);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Bit `j` set where an odd number of bits at `0..=j` are: the bytes from an opening
/// quote up to (not including) its closing one, when the block starts outside a string.
#[inline]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn masks(b: &[u8; 64]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    let mut m = Masks::default();
    // `[` and `]` are `{` and `}` with bit 5 clear: ORing 0x20 into every byte finds all
    // four brackets with two compares (only these bytes map to `{` and `}`).
    // SAFETY: SSE2 is part of the x86_64 baseline, so every x86_64 CPU runs these
    // intrinsics; each load reads 16 of `b`'s 64 bytes (16k..16k+16), at any alignment.
    unsafe {
        let fold = _mm_set1_epi8(0x20);
        let eq = |v: __m128i, c: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)));
        for k in 0..4 {
            let v = _mm_loadu_si128(b.as_ptr().add(16 * k).cast::<__m128i>());
            let f = _mm_or_si128(v, fold);
            // movemask sets the low 16 bits only; the casts keep them as they are.
            let at = |bits: i32| u64::from(bits as u16) << (16 * k);
            m.quote |= at(eq(v, b'"'));
            m.backslash |= at(eq(v, b'\\'));
            m.open |= at(eq(f, b'{'));
            m.close |= at(eq(f, b'}'));
        }
    }
    m
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn masks(b: &[u8; 64]) -> Masks {
    masks_portable(b)
}

/// The masks byte by byte: the other architectures' path, and what the SSE2 one is
/// tested against.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
fn masks_portable(b: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (j, &c) in b.iter().enumerate() {
        let bit = 1u64 << j;
        match c {
            b'"' => m.quote |= bit,
            b'\\' => m.backslash |= bit,
            b'{' | b'[' => m.open |= bit,
            b'}' | b']' => m.close |= bit,
            _ => {}
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time definition: depth outside strings, `\` skipping the next byte
    /// inside them. None when the value ends early or closes more than it opened.
    fn nested_end_naive(s: &[u8]) -> Option<usize> {
        let mut depth = 0usize;
        let mut i = 0;
        while i < s.len() {
            match s[i] {
                b'"' => {
                    i += 1;
                    loop {
                        match s.get(i)? {
                            b'"' => break,
                            b'\\' => i += 2,
                            _ => i += 1,
                        }
                    }
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// A small deterministic generator (xorshift64).
    struct Rng(u64);
    impl Rng {
        fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            &from[(self.0 % from.len() as u64) as usize]
        }
    }

    #[test]
    fn the_block_scan_agrees_with_the_byte_walk() {
        // Brackets, quotes and backslashes, bytes one bit away from a bracket (`;` `=`
        // `\xdb` `\xfd`), and filler, at every place around the 64-byte block edges:
        // lengths up to three blocks, and two mixes (dense structure, mostly filler).
        let dense = [
            b'{', b'[', b'}', b']', b'"', b'\\', b'a', b' ', b';', b'=', b'\xdb', b'\xfd',
        ];
        let sparse = [
            b'{', b'}', b'"', b'"', b'\\', b'a', b'a', b'a', b'a', b'a', b'a', b'a', b'a', b'0',
        ];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for alphabet in [&dense[..], &sparse[..]] {
            for len in 1..200 {
                for _ in 0..300 {
                    let mut s: Vec<u8> = (0..len).map(|_| *rng.pick(alphabet)).collect();
                    s[0] = *rng.pick(b"{[");
                    let want = nested_end_naive(&s);
                    match nested_end(&s) {
                        End::Complete(n) => assert_eq!(Some(n), want, "{s:?}"),
                        // The naive walk says None both for "ends early" and "closes too
                        // often"; the block scan tells them apart.
                        End::Incomplete | End::Malformed => assert_eq!(want, None, "{s:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn an_event_ends_where_its_object_closes() {
        let ev = br#"{"ph": "X", "name": "void at::native::k<{1}>(\"]\\\"", "args": {"s": [1, [2]]}}, {"ph""#;
        let want = ev.windows(3).position(|w| w == b"}},").unwrap() + 2;
        assert!(matches!(nested_end(ev), End::Complete(e) if e == want));
        // Cut before its end: incomplete, at every cut.
        for cut in 1..want {
            assert!(matches!(nested_end(&ev[..cut]), End::Incomplete), "{cut}");
        }
        // A long event (string, then brackets) spanning several blocks.
        let mut long = b"{\"name\": \"".to_vec();
        long.extend(std::iter::repeat_n(b'x', 150));
        long.extend_from_slice(b"{}\", \"args\": {\"a\": [");
        long.extend(std::iter::repeat_n(b'1', 100));
        long.extend_from_slice(b"]}} trailing");
        let end = long.len() - " trailing".len();
        assert!(matches!(nested_end(&long), End::Complete(e) if e == end));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_masks_equal_the_portable_ones() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let b: [u8; 64] = std::array::from_fn(|_| {
                *rng.pick(&[
                    b'{',
                    b'[',
                    b'}',
                    b']',
                    b'"',
                    b'\\',
                    0x7b ^ 0x20,
                    0xfb,
                    0,
                    0xff,
                    b'a',
                ])
            });
            assert_eq!(masks(&b), masks_portable(&b), "{b:?}");
        }
    }
}
