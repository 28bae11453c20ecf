//! Decisions in a history dataset: `decisions/<at_ns>-<comparison hash>.json`, one object
//! per `stepgate accept`/`reject`, written create-only (two decisions never overwrite
//! each other) and read by `gate --history` to move its reference (docs/gate.md).

use crate::exit::{Error, Result};
use crate::store::{Put, Store};
use crate::wire::decision::Decision;

/// The prefix decisions live under, beside the tables.
pub(crate) const PREFIX: &str = "decisions";

/// Store one decision; its name cannot collide with another's (time and content hash).
pub fn write(store: &Store, d: &Decision) -> Result<String> {
    let rel = format!(
        "{PREFIX}/{:020}-{}.json",
        d.at_ns,
        &d.comparison_sha256[..16.min(d.comparison_sha256.len())]
    );
    let bytes = crate::text::to_json(d).into_bytes();
    match store.put(&rel, bytes, true)? {
        Put::Written => Ok(store.name_of(&rel)),
        Put::AlreadyExists => Err(Error::usage(format!(
            "{} already holds this decision (same comparison, same instant): nothing written",
            store.name_of(&rel)
        ))),
    }
}

/// Every decision of the dataset, oldest first; one that cannot be read is named in a
/// warning and skipped (a damaged record must not stop a gate).
pub fn read(store: &Store, warnings: &mut Vec<String>) -> Result<Vec<Decision>> {
    let objs = store.list(PREFIX)?;
    let keys: Vec<String> = objs
        .iter()
        .filter(|o| o.key.ends_with(".json"))
        .map(|o| o.key.clone())
        .collect();
    let mut out = Vec::new();
    for (key, bytes) in keys.iter().zip(store.get_many(&keys)?) {
        let Some(bytes) = bytes else { continue };
        match serde_json::from_slice::<Decision>(&bytes) {
            Ok(d) => out.push(d),
            Err(e) => warnings.push(format!(
                "{}: not a decision record ({e}): left out",
                store.name_of(key)
            )),
        }
    }
    out.sort_by_key(|d| d.at_ns);
    Ok(out)
}
