//! Name interning: every name a source reads becomes a dense `u32` id.

use polars::prelude::PlHashMap;

/// Interns strings to dense `u32` ids. The index uses polars' foldhash map: SipHash
/// was a tenth of `analyze`'s CPU time when every NVTX row's text was interned.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<String>,
    index: PlHashMap<String, u32>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), id);
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
}
