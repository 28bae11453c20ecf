//! The JSON Schema of every JSON document stepgate writes, derived from the types that are
//! serialized (schemars, serialize contract, draft 2020-12). `docs/schema/` holds them as
//! committed files; the `schema` integration test writes them and fails when they drift.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;

/// One document: its name (the file is `docs/schema/<name>.schema.json`), what writes
/// it, and its schema.
pub struct Document {
    pub name: &'static str,
    pub written_by: &'static str,
    pub schema: serde_json::Value,
}

fn document<T: JsonSchema + ?Sized>(name: &'static str, written_by: &'static str) -> Document {
    let mut schema = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    // The type's name (`Wire`, `Summary`) says nothing outside the crate; the document's does.
    schema.insert("title".to_owned(), format!("stepgate {name}").into());
    Document {
        name,
        written_by,
        schema: schema.to_value(),
    }
}

/// Every document, in the order docs/schema/README.md lists them.
pub fn documents() -> Vec<Document> {
    vec![
        document::<crate::wire::analysis::Analysis>("analyze", "analyze --format json"),
        document::<crate::wire::steps::StepsReport>("steps", "steps --format json"),
        document::<crate::wire::baseline::Baseline>("baseline", "baseline record -o FILE"),
        document::<crate::wire::gate::Comparison>(
            "comparison",
            "gate/diff --format json, gate/diff --json FILE",
        ),
        document::<crate::wire::trend::Trend>("trend", "trend --format json"),
        document::<crate::wire::floor::FloorDocument<'static>>("floor", "floor --format json"),
        document::<crate::wire::capacity::CapacityDocument<'static>>(
            "capacity",
            "capacity --format json",
        ),
        document::<crate::wire::probe::ProbeReport>(
            "launch-probe",
            "launch-probe --format json (-o FILE)",
        ),
        document::<crate::wire::capture::Summary>("capture", "capture --format json"),
        document::<crate::wire::presets::Presets>("presets", "presets --format json"),
        document::<crate::wire::doctor::Doctor>("doctor", "doctor --format json"),
        document::<crate::wire::decision::Decision>(
            "decision",
            "accept/reject (DATASET/decisions/*.json, or NAME.decision.json)",
        ),
        document::<crate::wire::policy::PolicyCheck>("policy-check", "policy check --format json"),
    ]
}

/// A schema as its committed file holds it: pretty JSON and a final newline.
pub fn file_text(d: &Document) -> String {
    crate::report::to_json(&d.schema)
}
