//! How many objects each dataset store read per table, for `STEPGATE_DEBUG_READS`: how
//! tests and benchmarks see what a listing let a read skip. The stores record; the command
//! layer prints ([`take_read_counts`]); the library never does.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The environment variable under which every store, when closed, records its counts.
pub(crate) const DEBUG_READS_VAR: &str = "STEPGATE_DEBUG_READS";

/// The counts of the stores closed so far, one line each.
static READ_COUNTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Whether [`DEBUG_READS_VAR`] asks for the counts.
pub(crate) fn debug_reads() -> bool {
    std::env::var_os(DEBUG_READS_VAR).is_some_and(|v| !v.is_empty())
}

/// Record the counts of the store named `store` (`objects read from NAME: TABLE=N …`).
pub fn record(store: &str, per_table: &BTreeMap<String, u64>) {
    let per: Vec<String> = per_table.iter().map(|(t, n)| format!("{t}={n}")).collect();
    if let Ok(mut all) = READ_COUNTS.lock() {
        all.push(format!("objects read from {store}: {}", per.join(" ")));
    }
}

/// The lines recorded so far, emptied.
pub(crate) fn take_read_counts() -> Vec<String> {
    READ_COUNTS
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_one_line_per_store_and_taken_once() {
        let mut m = BTreeMap::new();
        m.insert("runs".to_owned(), 2);
        m.insert("steps".to_owned(), 5);
        record("s3://b/p", &m);
        let got = take_read_counts();
        assert!(got.contains(&"objects read from s3://b/p: runs=2 steps=5".to_owned()));
        assert!(!take_read_counts().contains(&got[0]));
    }
}
