//! The JSON Schemas in docs/schema/: the committed files are what the wire types generate
//! (the test that writes them is the one generator), every kind of JSON document the
//! binary writes on the bundled inputs validates against its schema and says which
//! stepgate wrote it and from what, and a document with a wrong field fails.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

/// Set to write the schemas instead of checking them.
const UPDATE: &str = "STEPGATE_UPDATE_SCHEMAS";
const REGENERATE: &str =
    "STEPGATE_UPDATE_SCHEMAS=1 cargo test --locked --test it schema::committed";

fn schema_dir() -> PathBuf {
    common::root().join("docs").join("schema")
}

fn schema_path(name: &str) -> PathBuf {
    schema_dir().join(format!("{name}.schema.json"))
}

#[test]
fn committed_schemas_are_the_generated_ones() {
    let docs = stepgate::schema::documents();
    let update = std::env::var_os(UPDATE).is_some();
    let mut stale = Vec::new();
    for d in &docs {
        let path = schema_path(d.name);
        let want = stepgate::schema::file_text(d);
        if update {
            std::fs::create_dir_all(schema_dir()).unwrap();
            std::fs::write(&path, &want).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from what the wire types generate (a field added, renamed or retyped?); \
         regenerate with `{REGENERATE}`, review the diff and commit it",
        stale.join(", ")
    );
    // No schema left behind for a document that no longer exists.
    let names: Vec<String> = docs
        .iter()
        .map(|d| format!("{}.schema.json", d.name))
        .collect();
    for e in std::fs::read_dir(schema_dir()).unwrap() {
        let f = e.unwrap().file_name().to_string_lossy().into_owned();
        if f.ends_with(".schema.json") {
            assert!(
                names.contains(&f),
                "docs/schema/{f} is no document's schema: remove it"
            );
        }
    }
}

/// The errors of `doc` against the committed schema of `name`, one line each.
fn errors(name: &str, doc: &Value) -> Vec<String> {
    let text = std::fs::read_to_string(schema_path(name))
        .unwrap_or_else(|e| panic!("{}: {e}; run `{REGENERATE}`", schema_path(name).display()));
    let schema: Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// `doc` validates against the committed schema of document `name`.
pub(crate) fn assert_valid(name: &str, doc: &Value) {
    let e = errors(name, doc);
    assert!(
        e.is_empty(),
        "{name} document fails its schema:\n{}",
        e.join("\n")
    );
}

/// Valid, and says which stepgate wrote it (this one) under the version this build writes.
pub(crate) fn assert_stamped(name: &str, doc: &Value, schema_version: u32) {
    assert_valid(name, doc);
    assert_eq!(doc["schema_version"], schema_version, "{name}");
    assert_eq!(
        doc["tool"],
        serde_json::json!({"name": "stepgate", "version": env!("CARGO_PKG_VERSION")}),
        "{name}"
    );
}

/// Run the binary, expect exit `code`, return stdout as JSON.
fn json_out(args: &[&str], code: i32) -> Value {
    let (c, out, err) = common::run(args);
    assert_eq!(c, code, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SYNTH_REPORT: &str = "examples/vllm_decode_synthetic_h100.sqlite";
const OLD_BASELINE: &str = "baselines/example-h100-vllm-decode.json";

#[test]
fn analyze_documents_validate_and_name_their_report() {
    let saxpy = common::fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let sglang = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    for p in [&saxpy, &sglang] {
        let v = json_out(&["analyze", s(p), "--format", "json"], 0);
        assert_stamped("analyze", &v, stepgate::wire::analysis::SCHEMA_VERSION);
        assert_eq!(v["source"]["path"], s(p));
        // The nested steps report leaves tool and source to the analysis around it.
        if let Some(steps) = v.get("steps") {
            assert!(steps.get("tool").is_none() && steps.get("source").is_none());
            assert_valid("steps", steps);
        }
    }
}

#[test]
fn steps_documents_validate_and_name_their_report() {
    let sglang = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let synth = common::root().join(SYNTH_REPORT);
    for (p, model) in [(&sglang, "qwen3-8b"), (&synth, "llama-3-8b")] {
        let v = json_out(&["steps", s(p), "--format", "json", "--model", model], 0);
        assert_stamped("steps", &v, stepgate::wire::steps::SCHEMA_VERSION);
        assert_eq!(v["source"]["path"], s(p));
        assert!(!v["steps"].as_array().unwrap().is_empty());
    }
}

#[test]
fn baselines_old_and_new_validate_and_gate_and_diff_documents_name_both_sides() {
    let t = tempfile::tempdir().unwrap();
    let report = common::root().join(SYNTH_REPORT);
    let old = common::root().join(OLD_BASELINE);
    // A file written before tool and source were recorded still loads and validates.
    let v = read_json(&old);
    assert!(v.get("tool").is_none() && v.get("source").is_none());
    assert_valid("baseline", &v);
    let b = t.path().join("b.json");
    let (code, _, err) = common::run(&["baseline", "record", s(&report), "-o", s(&b)]);
    assert_eq!(code, 0, "{err}");
    let v = read_json(&b);
    assert_stamped("baseline", &v, stepgate::wire::baseline::SCHEMA_VERSION);
    assert_eq!(v["source"]["path"], s(&report));
    assert_eq!(v["source"]["format"], "nsys");

    // gate: stdout and --json FILE are the same document; the old baseline is the side.
    let file = t.path().join("gate.json");
    let args = [
        "gate",
        s(&report),
        "--baseline",
        s(&old),
        "--format",
        "json",
        "--json",
        s(&file),
    ];
    let (code, out, err) = common::run(&args);
    assert!(code == 0 || code == 1 || code == 3, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v, read_json(&file));
    assert_stamped("comparison", &v, stepgate::wire::baseline::SCHEMA_VERSION);
    assert_eq!(
        v["source"],
        serde_json::json!({
            "baseline": {"kind": "baseline", "path": s(&old)},
            "candidate": {"kind": "report", "path": s(&report)},
        })
    );

    // diff: a new baseline file against the report it was recorded from.
    let v = json_out(&["diff", s(&b), s(&report), "--format", "json"], 0);
    assert_stamped("comparison", &v, stepgate::wire::baseline::SCHEMA_VERSION);
    assert_eq!(v["source"]["baseline"]["kind"], "baseline");
    assert_eq!(v["source"]["candidate"]["kind"], "report");
}

#[test]
fn floor_capacity_and_presets_documents_validate() {
    let v = json_out(&["floor", "--format", "json"], 0);
    assert_stamped("floor", &v, stepgate::report::floor::SCHEMA_VERSION);
    // The defaults: the llama-3-8b preset on an H100 SXM (docs/floor_capacity.md).
    assert_eq!(
        v["source"],
        serde_json::json!({"model": "llama-3-8b", "gpu": "h100-sxm"})
    );
    let v = json_out(
        &[
            "floor",
            "--model",
            "deepseek-v3",
            "--gpu",
            "mi300x",
            "--format",
            "json",
        ],
        0,
    );
    assert_stamped("floor", &v, stepgate::report::floor::SCHEMA_VERSION);
    assert_eq!(
        v["source"],
        serde_json::json!({"model": "deepseek-v3", "gpu": "mi300x"})
    );
    let v = json_out(&["capacity", "--format", "json"], 0);
    assert_stamped("capacity", &v, stepgate::report::capacity::SCHEMA_VERSION);
    assert_eq!(v["source"]["gpu"], "h100-sxm");
    for args in [
        &["presets", "--format", "json"][..],
        &["presets", "gpus", "--format", "json"],
        &["presets", "models", "--format", "json"],
    ] {
        let v = json_out(args, 0);
        assert_stamped("presets", &v, stepgate::report::presets::SCHEMA_VERSION);
    }
}

#[test]
fn a_document_with_a_wrong_field_fails_its_schema() {
    let saxpy = common::fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let good = json_out(&["analyze", s(&saxpy), "--format", "json"], 0);
    assert_valid("analyze", &good);
    // A number as text, a missing required field, the old string form of `tool`.
    let mut bad = good.clone();
    bad["devices"][0]["busy_ns"] = "373 ms".into();
    assert!(errors("analyze", &bad)
        .iter()
        .any(|e| e.contains("/devices/0/busy_ns")));
    let mut bad = good.clone();
    bad.as_object_mut().unwrap().remove("tool");
    assert!(!errors("analyze", &bad).is_empty());
    let mut bad = good;
    bad["tool"] = "stepgate 0.1.0".into();
    assert!(errors("analyze", &bad).iter().any(|e| e.contains("/tool")));
    // An enum value the comparison never writes; a sample that is no number.
    let old = read_json(&common::root().join(OLD_BASELINE));
    let old_path = common::root().join(OLD_BASELINE);
    let mut cmp = json_out(&["diff", s(&old_path), s(&old_path), "--format", "json"], 0);
    assert_valid("comparison", &cmp);
    cmp["verdict"] = "maybe".into();
    assert!(errors("comparison", &cmp)
        .iter()
        .any(|e| e.contains("/verdict")));
    let mut b = old.clone();
    b["samples"]["groups"][0]["metrics"]["wall_ns"][0] = Value::Null;
    assert!(errors("baseline", &b)
        .iter()
        .any(|e| e.contains("/wall_ns/0")));
    // Unknown fields are allowed: readers must ignore them (docs/schema/README.md).
    let mut extra = old;
    extra["written_by_a_later_stepgate"] = true.into();
    assert_valid("baseline", &extra);
}
