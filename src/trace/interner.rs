//! Name interning: every name a source reads becomes a dense `u32` id, bounded in length
//! so one absurd name cannot cost the report its memory.

use std::borrow::Cow;

use polars::prelude::PlHashMap;

/// Longest name kept whole, in bytes. Real kernel names (templated signatures, lambdas)
/// stay far below it, and reports show names shortened anyway; a longer name (a 20 MB
/// template expansion cost 1.3 GiB of peak memory, copied by every stage) keeps its
/// first bytes and a hash of the whole (docs/ingest.md, "Name memory").
pub const MAX_NAME_BYTES: usize = 4096;

/// `name` if it fits [`MAX_NAME_BYTES`], else its first bytes (cut at a character
/// boundary) and `…[N bytes, fnv1a H]`, N its length and H the 64-bit FNV-1a hash of all
/// of it: names that differ only past the cut stay distinct, and a name is bounded to
/// the same text in every run and format (baselines compare names across runs).
pub fn bounded(name: &str) -> Cow<'_, str> {
    if name.len() <= MAX_NAME_BYTES {
        return Cow::Borrowed(name);
    }
    let suffix = format!(
        "…[{} bytes, fnv1a {:016x}]",
        name.len(),
        fnv1a(name.as_bytes())
    );
    let mut cut = MAX_NAME_BYTES - suffix.len();
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!("{}{suffix}", &name[..cut]))
}

/// 64-bit FNV-1a (a fixed, documented hash: the bounded text must not change between
/// builds, which `std`'s hashers do not promise).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Interns strings to dense `u32` ids. The index uses polars' foldhash map: SipHash
/// was a tenth of `analyze`'s CPU time when every NVTX row's text was interned.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<String>,
    index: PlHashMap<String, u32>,
}

impl Interner {
    /// The id of `s`, [`bounded`] first.
    pub fn intern(&mut self, s: &str) -> u32 {
        let s = bounded(s);
        if let Some(&id) = self.index.get(s.as_ref()) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.index.insert(s.into_owned(), id);
        id
    }

    /// The string of an id this interner returned.
    pub fn get(&self, id: u32) -> &str {
        self.strings
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("")
    }

    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }

    /// Intern `local` (another interner's strings, in id order) here; returns the local →
    /// this id map. Names a reader thread interned apart get the ids one sequential read
    /// would have given them, when the parts are merged in the sequential order.
    pub fn merge(&mut self, local: &[String]) -> Vec<u32> {
        local.iter().map(|s| self.intern(s)).collect()
    }
}

/// Rewrite ids through a map from [`Interner::merge`] (identity maps are skipped).
pub fn remap(ids: &mut [u32], map: &[u32]) {
    if map.iter().enumerate().all(|(i, &m)| i as u32 == m) {
        return;
    }
    for id in ids {
        *id = map[*id as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_bounded_and_stay_distinct() {
        let base = "void k<".to_owned() + &"float, ".repeat(3000);
        let (a, b) = (format!("{base}A>"), format!("{base}B>"));
        let (ba, bb) = (bounded(&a), bounded(&b));
        assert_eq!(ba.len(), MAX_NAME_BYTES);
        assert_eq!(bb.len(), MAX_NAME_BYTES);
        assert_ne!(ba, bb);
        assert!(ba.starts_with("void k<float, float, "));
        assert!(ba.ends_with(&format!(
            "…[{} bytes, fnv1a {:016x}]",
            a.len(),
            fnv1a(a.as_bytes())
        )));
        // Short names are kept as they are, without a copy.
        assert!(matches!(bounded("gemm"), Cow::Borrowed("gemm")));
        let edge = "x".repeat(MAX_NAME_BYTES);
        assert!(matches!(bounded(&edge), Cow::Borrowed(_)));
        // A multi-byte character at the cut is not split.
        let wide = "é".repeat(MAX_NAME_BYTES);
        assert!(bounded(&wide).len() <= MAX_NAME_BYTES);
        // One interned id per distinct long name, the same for the same name.
        let mut i = Interner::default();
        let (ia, ib) = (i.intern(&a), i.intern(&b));
        assert_ne!(ia, ib);
        assert_eq!(i.intern(&a), ia);
        assert_eq!(i.get(ia), ba);
    }

    #[test]
    fn fnv1a_reference_values() {
        // The published FNV-1a 64 test vectors (offset basis for "", and "a").
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
