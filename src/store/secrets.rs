//! Every secret value a storage configuration or an AWS profile has held in this process:
//! not configuration (that travels in each command's plan) but a safety net, so that a
//! message is scrubbed of all of them wherever it is written, whichever store it came from.

use std::sync::RwLock;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Add secret values to those [`crate::store::scrub`] replaces.
pub(crate) fn remember(values: impl IntoIterator<Item = String>) {
    if let Ok(mut s) = SECRETS.write() {
        for v in values {
            if !s.contains(&v) {
                s.push(v);
            }
        }
    }
}

/// The secret values remembered so far.
pub(crate) fn all() -> Vec<String> {
    SECRETS.read().map(|s| s.clone()).unwrap_or_default()
}
