//! A report's `method` in JSON: the [`FoundBy`] of its steps in the word `method` has
//! always had ([`FoundBy::method_str`]), under the schema name it has always had
//! (`StepMethod`).

use std::borrow::Cow;

use serde::{de::Error as _, ser::Error as _, Deserialize, Deserializer, Serializer};

use super::FoundBy;

/// Every method in the schema's order, with the schema's description of it.
pub(crate) const METHODS: [(FoundBy, &str); 8] = [
    (FoundBy::Marker, "Engine step markers."),
    (FoundBy::Scheduler, "Scheduler scopes."),
    (FoundBy::Python, "Python-stack step functions (heuristic)."),
    (
        FoundBy::Recurring,
        "Recurring annotation cycles (heuristic).",
    ),
    (FoundBy::Sync, "Host sync points (heuristic)."),
    (FoundBy::Regex, "A user-given regex over range names."),
    (FoundBy::Graphs, "CUDA-graph launch groups (heuristic)."),
    (FoundBy::Gaps, "Idle-gap splits (heuristic)."),
];

/// The words of [`METHODS`], for the error that names what was expected.
const WORDS: [&str; METHODS.len()] = {
    let mut w = [""; METHODS.len()];
    let mut i = 0;
    while i < w.len() {
        w[i] = METHODS[i].0.method_str();
        i += 1;
    }
    w
};

pub fn serialize<S: Serializer>(v: &FoundBy, s: S) -> Result<S::Ok, S::Error> {
    if !METHODS.iter().any(|m| m.0 == *v) {
        return Err(S::Error::custom(format!("no method word for {v:?}")));
    }
    s.serialize_str(v.method_str())
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FoundBy, D::Error> {
    let w = Cow::<str>::deserialize(d)?;
    METHODS
        .iter()
        .find(|m| m.0.method_str() == w)
        .map(|m| m.0)
        .ok_or_else(|| D::Error::unknown_variant(&w, &WORDS))
}

/// The schema of `method`: one string constant per row of [`METHODS`].
pub struct Schema;

impl schemars::JsonSchema for Schema {
    fn schema_name() -> Cow<'static, str> {
        "StepMethod".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one_of: Vec<serde_json::Value> = METHODS
            .iter()
            .map(|(m, d)| {
                serde_json::json!({"const": m.method_str(), "description": d, "type": "string"})
            })
            .collect();
        schemars::json_schema!({
            "description": "Which step finder produced a report (`method` in JSON, the word in \"steps (…)\").",
            "oneOf": one_of,
        })
    }
}
