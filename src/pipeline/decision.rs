//! `accept` / `reject`: a decision record from a comparison file, written into the history
//! dataset (where `gate --history` reads it) or beside the comparison.
//!
//! Where: `--history DS`, else the history the comparison was read from (`gate --history
//! DS` records it), else the dataset it exported to (`--export DS`), else beside the
//! comparison. On what: the candidate report's content (its sha256, which the comparison
//! records), so every export of that report — before or after the decision, under any
//! labels — is the decided run (docs/gate.md, "Decisions on record").

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::exit::{Error, Result};
use crate::wire::decision::{Decision, Outcome, SCHEMA_VERSION};

/// The largest comparison file read (a real one is tens of KiB).
const MAX_COMPARISON_BYTES: u64 = 64 << 20;

/// What to decide and where to write it.
#[derive(Debug, Clone)]
pub struct DecisionPlan {
    pub comparison: PathBuf,
    pub outcome: Outcome,
    pub reason: String,
    pub by: Option<String>,
    pub commit: Option<String>,
    /// The history dataset to record it in; else `out`, else the history (or export
    /// dataset) the comparison names, else beside the comparison.
    pub history: Option<PathBuf>,
    pub out: Option<PathBuf>,
    /// `--metric`: the metrics the decision covers, checked against the comparison's rows;
    /// empty: its regressed rows.
    pub metrics: Vec<String>,
    /// How a remote history is reached.
    pub store: crate::store::StoreConfig,
}

/// Where a decision went.
#[derive(Debug, Clone)]
pub struct Decided {
    pub decision: Decision,
    pub written_to: String,
    /// Written into a history dataset (false: a file no gate reads).
    pub in_history: bool,
}

/// The dataset a decision goes into: `--history`, else the comparison's history, else its
/// export dataset; None when `--out` asks for a file, or the comparison names no dataset.
fn target(p: &DecisionPlan, v: &serde_json::Value) -> Option<PathBuf> {
    if p.history.is_some() {
        return p.history.clone();
    }
    if p.out.is_some() {
        return None;
    }
    let s = &v["source"];
    s["history"]
        .as_str()
        .or_else(|| s["export"].as_str())
        .map(PathBuf::from)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Build the record from the comparison and write it.
pub fn decide(p: &DecisionPlan) -> Result<Decided> {
    let reason = p.reason.trim();
    if reason.is_empty() {
        return Err(Error::usage(
            "--reason is empty: a decision needs a written reason (what the change buys, why it is intended)",
        ));
    }
    let shown = p.comparison.display();
    let meta = std::fs::metadata(&p.comparison).map_err(|e| {
        Error::input(format!(
            "{shown}: cannot read it ({e}); pass the file `gate --json FILE` wrote"
        ))
    })?;
    if !meta.is_file() || meta.len() > MAX_COMPARISON_BYTES {
        return Err(Error::input(format!(
            "{shown}: not a comparison file (a regular file of at most 64 MiB, as `gate --json FILE` writes)"
        )));
    }
    let bytes = std::fs::read(&p.comparison)
        .map_err(|e| Error::input(format!("{shown}: cannot read it ({e})")))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::input(format!(
            "{shown}: not JSON ({e}); pass the file `gate --json FILE` wrote"
        ))
    })?;
    let verdict = v["verdict"].as_str().ok_or_else(|| {
        Error::input(format!(
            "{shown}: no `verdict`: not a comparison (`gate --json FILE` writes one)"
        ))
    })?;
    let covers: Vec<String> = v["reasons"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let run_id = v["source"]["candidate"]["run_id"]
        .as_str()
        .map(str::to_owned);
    let report_sha256 = v["source"]["candidate"]["report_sha256"]
        .as_str()
        .map(str::to_owned);
    let history = target(p, &v);
    if let Some(ds) = history.as_ref().filter(|_| run_id.is_none()) {
        let cand = v["source"]["candidate"]["path"]
            .as_str()
            .unwrap_or("REPORT");
        let why = if v["source"]["candidate"]["kind"] == "baseline" {
            "its candidate was a baseline file, not a report, so it names no run"
        } else {
            "it was gated without --history or --export, so it names no run"
        };
        return Err(Error::usage(format!(
            "{shown}: {why} for {} to remember; run `stepgate gate {cand} --history {} \
             --json {shown}` and accept that comparison, or drop --history to write the \
             decision beside it",
            ds.display(),
            ds.display()
        )));
    }
    let metrics = covered_metrics(&v, &p.metrics, &shown.to_string())?;
    let at_ns = crate::dataset::write::now_ns();
    let decision = Decision {
        schema_version: SCHEMA_VERSION,
        outcome: p.outcome,
        by: p
            .by
            .clone()
            .or_else(|| env("GITHUB_ACTOR"))
            .or_else(|| env("USER"))
            .unwrap_or_else(|| "unknown".to_owned()),
        at: format!(
            "{}Z",
            crate::dataset::dates::fmt_time(at_ns).replace(' ', "T")
        ),
        at_ns,
        commit: p.commit.clone().or_else(|| env("GITHUB_SHA")),
        reason: reason.to_owned(),
        comparison_sha256: hex(&Sha256::digest(&bytes)),
        run_id,
        report_sha256,
        verdict: verdict.to_owned(),
        covers,
        metrics,
        tool: crate::wire::meta::Tool::current(),
    };
    let written_to = match (&history, &p.out) {
        (Some(ds), _) => {
            let store = crate::dataset::store::Store::open(ds, &p.store)?;
            crate::dataset::decisions::write(&store, &decision)?
        }
        (None, out) => {
            let path = out.clone().unwrap_or_else(|| beside(&p.comparison));
            crate::output::write_atomic(&path, crate::report::to_json(&decision).as_bytes())?;
            path.display().to_string()
        }
    };
    Ok(Decided {
        decision,
        written_to,
        in_history: history.is_some(),
    })
}

/// `cmp.json` → `cmp.decision.json`.
fn beside(comparison: &Path) -> PathBuf {
    let stem = comparison
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "comparison".to_owned());
    comparison.with_file_name(format!("{stem}.decision.json"))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The key a row of the comparison is covered by: the step metric's name, `kernel:NAME`,
/// `category:NAME` (the spelling [`Decision::metrics`] documents).
fn row_keys(v: &serde_json::Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    // The row's change is flattened into it (wire::gate::MetricRow).
    let regressed = |row: &serde_json::Value| {
        row["verdict"].as_str() == Some("regression") && row["gated"].as_bool() != Some(false)
    };
    for g in v["groups"].as_array().into_iter().flatten() {
        let rows = |key: &str, name: &str, prefix: &str, out: &mut Vec<(String, bool)>| {
            for r in g[key].as_array().into_iter().flatten() {
                if let Some(n) = r[name].as_str() {
                    out.push((format!("{prefix}{n}"), regressed(r)));
                }
            }
        };
        rows("metrics", "metric", "", &mut out);
        rows("kernels", "name", "kernel:", &mut out);
        rows("categories", "category", "category:", &mut out);
    }
    out
}

/// What the decision covers: `--metric`'s names, each one a row of the comparison, else
/// the comparison's regressed rows; None (every metric) when it has none.
fn covered_metrics(
    v: &serde_json::Value,
    asked: &[String],
    shown: &str,
) -> Result<Option<Vec<String>>> {
    let rows = row_keys(v);
    let mut out: Vec<String> = Vec::new();
    if asked.is_empty() {
        for (k, regressed) in rows {
            if regressed && !out.contains(&k) {
                out.push(k);
            }
        }
        return Ok((!out.is_empty()).then_some(out));
    }
    for m in asked {
        let m = m.trim();
        if !rows.iter().any(|(k, _)| k == m) {
            let mut steps: Vec<&str> = rows
                .iter()
                .map(|(k, _)| k.as_str())
                .filter(|k| !k.contains(':'))
                .collect();
            steps.sort_unstable();
            steps.dedup();
            return Err(Error::usage(format!(
                "--metric {m:?}: {shown} has no such row; give a step metric ({}), \
                 kernel:NAME or category:NAME as the comparison names them",
                if steps.is_empty() {
                    "it has none".to_owned()
                } else {
                    steps.join(", ")
                }
            )));
        }
        if !out.iter().any(|k| k == m) {
            out.push(m.to_owned());
        }
    }
    Ok(Some(out))
}
