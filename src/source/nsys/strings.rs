//! Name interning for the loader: the export's `StringIds` table read once, and per-worker
//! maps from nsys string ids (sparse: 126 strings up to id 3,436,172 in a real file) to the
//! trace's dense `u32` ids, so hot loops do an array or hash lookup, never a String
//! allocation per row.

use std::collections::HashMap;

use polars::prelude::PlHashMap;

use crate::trace::{bounded, Interner, MAX_NAME_BYTES};

/// Where an nsys string id lives in [`StringTable::values`].
#[derive(Debug)]
enum Index {
    /// Direct table when the id space is small enough (≤ 16M ids or ≤ 4× the row count).
    Dense(Vec<u32>),
    Hashed(HashMap<i64, u32>),
}

/// The export's `StringIds`, read once and shared read-only by every loader thread.
#[derive(Debug)]
pub(crate) struct StringTable {
    index: Index,
    values: Vec<Box<str>>,
}

const NONE: u32 = u32::MAX;

impl StringTable {
    /// Build from `(id, value)` rows; `count`/`max_id` size the index.
    pub fn new(count: usize, max_id: i64) -> StringTable {
        let dense = max_id >= 0 && (max_id < (1 << 24) || (max_id as usize) < count * 4 + 1024);
        StringTable {
            index: if dense {
                Index::Dense(vec![NONE; max_id as usize + 1])
            } else {
                Index::Hashed(HashMap::with_capacity(count))
            },
            values: Vec::with_capacity(count),
        }
    }

    /// Add a StringIds row; its value is kept [`bounded`] (a 20 MB kernel name is held
    /// as its first 4 KiB and a hash, never whole).
    pub fn insert(&mut self, id: i64, value: &str) {
        let pos = self.values.len() as u32;
        match &mut self.index {
            Index::Dense(v) => match usize::try_from(id).ok().and_then(|i| v.get_mut(i)) {
                Some(slot) => *slot = pos,
                None => return,
            },
            Index::Hashed(h) => {
                h.insert(id, pos);
            }
        }
        self.values.push(bounded(value).into());
    }

    /// Position of an nsys string id in this table.
    pub fn position(&self, id: i64) -> Option<u32> {
        let p = match &self.index {
            Index::Dense(v) => *usize::try_from(id).ok().and_then(|i| v.get(i))?,
            Index::Hashed(h) => *h.get(&id)?,
        };
        (p != NONE).then_some(p)
    }

    /// Position and value of an nsys string id, without interning it anywhere.
    pub fn value(&self, id: i64) -> Option<(u32, &str)> {
        self.position(id).map(|p| (p, &*self.values[p as usize]))
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }
}

/// One loader thread's names: a local interner plus a cache from StringIds positions to
/// local ids. [`merge`] later maps every thread's local ids into the trace's interner.
#[derive(Debug)]
pub(crate) struct LocalNames<'a> {
    table: &'a StringTable,
    cache: Vec<u32>,
    /// Literal texts by their raw bytes: NVTX rows carry their name inline, so this is
    /// looked up once per row and must not validate UTF-8 or build a String each time.
    texts: PlHashMap<Box<[u8]>, u32>,
    pub interner: Interner,
}

impl<'a> LocalNames<'a> {
    pub fn new(table: &'a StringTable) -> Self {
        LocalNames {
            table,
            cache: vec![NONE; table.len()],
            texts: PlHashMap::default(),
            interner: Interner::default(),
        }
    }

    /// Local id of the string an nsys id points at; an id missing from StringIds gets a
    /// visible placeholder name rather than failing the load.
    pub fn id(&mut self, nsys_id: i64) -> u32 {
        match self.table.position(nsys_id) {
            Some(p) => {
                let c = self.cache[p as usize];
                if c != NONE {
                    return c;
                }
                let id = self.interner.intern(&self.table.values[p as usize]);
                self.cache[p as usize] = id;
                id
            }
            None => self.interner.intern(&format!("[unknown string {nsys_id}]")),
        }
    }

    /// Local id of a literal string (NVTX `text`, synthesized op names).
    pub fn text(&mut self, s: &str) -> u32 {
        self.interner.intern(s)
    }

    /// Local id of a literal text given as raw bytes (an NVTX `text` cell): invalid
    /// UTF-8 is replaced (U+FFFD) once, when the bytes are first seen.
    pub(crate) fn text_bytes(&mut self, b: &[u8]) -> u32 {
        // A text too long to keep whole is not kept whole as a cache key either.
        if b.len() > MAX_NAME_BYTES {
            return self.interner.intern(&String::from_utf8_lossy(b));
        }
        if let Some(&id) = self.texts.get(b) {
            return id;
        }
        let id = self.interner.intern(&String::from_utf8_lossy(b));
        self.texts.insert(b.into(), id);
        id
    }

    /// The local string for a local id (the interner keeps insertion order).
    pub fn finish(self) -> Vec<String> {
        self.interner.into_strings()
    }
}
