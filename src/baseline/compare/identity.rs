//! Who each side is, and whether the two may be compared: their operating points field
//! by field. A difference that changes what a step means (GPU, model, TP, no step kind
//! in common) makes a gate `incomparable`; smaller ones (engine and its version, capture mode, how the
//! steps were found, source format, profiler version, batch mix) lower the comparability
//! score and are listed. Fields a side does not state are not compared and not counted.

use std::collections::BTreeSet;

use crate::wire::baseline::{Baseline, Group};
use crate::wire::gate::{Comparability, FieldDifference, SideInfo};

pub(super) fn side_info(b: &Baseline) -> SideInfo {
    let m = &b.meta;
    SideInfo {
        gpu_name: m.gpu_name.clone(),
        model: m.model.clone(),
        engine: m.engine.clone(),
        nsys_version: m.nsys_version.clone(),
        source_format: m.source_format.clone(),
        created_by: m.created_by.clone(),
        groups: b.samples.groups.len(),
        steps: b.samples.groups.iter().map(Group::steps).sum(),
    }
}

/// What the operating points say.
pub(super) struct Identity {
    /// Lines for the report whatever the verdict (a side that names no GPU, …).
    pub warnings: Vec<String>,
    pub comparability: Comparability,
    /// One line per difference that changes meaning (empty: comparable).
    pub incomparable: Vec<String>,
}

/// One field of both sides: its name, each side's value when stated, whether a
/// difference changes meaning, and the line that says so.
struct Field {
    name: &'static str,
    base: Option<String>,
    cand: Option<String>,
    meaning: bool,
}

fn set(xs: impl IntoIterator<Item = String>) -> Option<String> {
    let s: BTreeSet<String> = xs.into_iter().collect();
    (!s.is_empty()).then(|| s.into_iter().collect::<Vec<_>>().join(", "))
}

fn fields(b: &Baseline, c: &Baseline) -> Vec<Field> {
    let capture = |x: &Baseline| {
        x.source
            .as_ref()
            .and_then(|s| s.cuda_graph_trace_mode.clone())
    };
    let kinds = |x: &Baseline| set(x.samples.groups.iter().map(|g| g.step_kind.clone()));
    let mix = |x: &Baseline| set(x.samples.groups.iter().map(Group::label));
    let (bm, cm) = (&b.meta, &c.meta);
    let f = |name, base, cand, meaning| Field {
        name,
        base,
        cand,
        meaning,
    };
    vec![
        f("GPU", bm.gpu_name.clone(), cm.gpu_name.clone(), true),
        f("model", bm.model.clone(), cm.model.clone(), true),
        f(
            "TP",
            bm.tp.map(|t| t.to_string()),
            cm.tp.map(|t| t.to_string()),
            true,
        ),
        // Meaning changes only when no kind is on both sides (checked below).
        f("step kinds", kinds(b), kinds(c), false),
        f("engine", bm.engine.clone(), cm.engine.clone(), false),
        // An engine upgrade moves step times with no kernel of the change touched: listed,
        // and it lowers the score, but the steps still mean the same.
        f(
            "engine version",
            bm.engine_version.clone(),
            cm.engine_version.clone(),
            false,
        ),
        f("capture mode", capture(b), capture(c), false),
        f(
            "step discovery",
            bm.found_by.clone(),
            cm.found_by.clone(),
            false,
        ),
        f(
            "source format",
            Some(bm.source_format.clone()).filter(|s| !s.is_empty()),
            Some(cm.source_format.clone()).filter(|s| !s.is_empty()),
            false,
        ),
        f(
            "profiler version",
            bm.nsys_version.clone(),
            cm.nsys_version.clone(),
            false,
        ),
        f("batch mix", mix(b), mix(c), false),
    ]
}

/// No step kind on both sides: nothing is like for like.
fn kinds_disjoint(b: &Baseline, c: &Baseline) -> bool {
    let kb: BTreeSet<&str> = b
        .samples
        .groups
        .iter()
        .map(|g| g.step_kind.as_str())
        .collect();
    c.samples
        .groups
        .iter()
        .all(|g| !kb.contains(g.step_kind.as_str()))
        && !kb.is_empty()
        && !c.samples.groups.is_empty()
}

/// The line a meaning-changing difference reads as (the GPU and model lines keep the
/// words the gate has always used).
fn meaning_line(d: &FieldDifference) -> String {
    match d.field.as_str() {
        "GPU" => format!(
            "GPU mismatch: baseline ran on {:?}, candidate on {:?}",
            d.baseline, d.candidate
        ),
        "model" => format!(
            "model mismatch: baseline priced for {:?}, candidate for {:?}",
            d.baseline, d.candidate
        ),
        "step kinds" => format!(
            "no step kind on both sides: baseline has {}, candidate {}",
            d.baseline, d.candidate
        ),
        f => format!(
            "{f} mismatch: baseline {}, candidate {}",
            d.baseline, d.candidate
        ),
    }
}

/// Compare the operating points of the two sides.
pub(super) fn check_identity(b: &Baseline, c: &Baseline) -> Identity {
    let mut comparability = Comparability::default();
    let disjoint = kinds_disjoint(b, c);
    for f in fields(b, c) {
        let (Some(x), Some(y)) = (f.base, f.cand) else {
            comparability.unknown.push(f.name.to_owned());
            continue;
        };
        comparability.checked.push(f.name.to_owned());
        if x != y {
            comparability.differences.push(FieldDifference {
                field: f.name.to_owned(),
                baseline: x,
                candidate: y,
                changes_meaning: f.meaning || (f.name == "step kinds" && disjoint),
            });
        }
    }
    let n = comparability.checked.len();
    comparability.score = (n > 0).then(|| (n - comparability.differences.len()) as f64 / n as f64);
    let incomparable = comparability
        .differences
        .iter()
        .filter(|d| d.changes_meaning)
        .map(meaning_line)
        .collect();
    let mut warnings = Vec::new();
    match (&b.meta.gpu_name, &c.meta.gpu_name) {
        (Some(_), Some(_)) => {}
        (x, _) => {
            let which = match (x, &c.meta.gpu_name) {
                (None, None) => "neither side names its GPU",
                (None, _) => "the baseline names no GPU",
                _ => "the candidate names no GPU",
            };
            warnings.push(format!(
                "{which}: cannot check that both ran on the same GPU (pass --gpu when recording)"
            ));
        }
    }
    if b.meta.model.is_some() != c.meta.model.is_some() {
        warnings.push(
            "a model was given on one side only: MBU is not compared (give --model to both)"
                .to_owned(),
        );
    }
    Identity {
        warnings,
        comparability,
        incomparable,
    }
}
