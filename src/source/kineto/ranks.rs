//! A directory of per-rank traces (docs/engines.md §1.4, §2.3): which files are ranks, in what
//! order, and which to leave out.
//!
//! vLLM: `{prefix_}dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{N}.{time_ns}.pt.trace.json.gz`, plus a
//! CPU-only front-end trace `{host}_{pid}.async_llm…` that is not a rank. SGLang:
//! `{prefix-}{id}-TP-{t}[-DP-{d}][-PP-{p}][-EP-{e}][-EXTEND|-DECODE].trace.json.gz`, and with
//! `merge_profiles` a `merged-{id}.trace.json.gz` holding every rank again.

use std::path::{Path, PathBuf};

use regex::Regex;

use crate::exit::{Error, Result};

/// A rank's position: SGLang's merger sorts (DP, EP, PP, TP); vLLM's global rank is last.
type RankKey = (i64, i64, i64, i64);

/// The traces to read, in rank order, and notes on what was left out.
#[derive(Debug)]
pub(crate) struct Ranks {
    pub files: Vec<PathBuf>,
    pub notes: Vec<String>,
}

fn is_trace_name(name: &str) -> bool {
    (name.ends_with(".json") || name.ends_with(".json.gz")) && !is_sidecar_name(name)
}

/// The capture sidecar's names (`operating_point::sidecar::path`): `capture.json` inside a
/// directory of ranks, `BASE.capture.json` beside a trace. It is read as the sidecar, never
/// as one more rank.
fn is_sidecar_name(name: &str) -> bool {
    name == "capture.json" || name.ends_with(".capture.json")
}

fn rank_key(name: &str) -> Option<RankKey> {
    let vllm = Regex::new(r"_rank(\d+)\.").expect("static regex");
    if let Some(c) = vllm.captures(name) {
        return Some((0, 0, 0, c[1].parse().ok()?));
    }
    let part = |tag: &str| -> Option<i64> {
        let re = Regex::new(&format!(r"(?:^|[-_]){tag}-(\d+)")).expect("static regex");
        re.captures(name).and_then(|c| c[1].parse().ok())
    };
    let tp = part("TP")?;
    Some((
        part("DP").unwrap_or(0),
        part("EP").unwrap_or(0),
        part("PP").unwrap_or(0),
        tp,
    ))
}

/// List the rank traces of `dir`.
pub(crate) fn discover(dir: &Path) -> Result<Ranks> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::input(format!("{}: cannot list directory: {e}", dir.display())))?;
    let mut names: Vec<String> = Vec::new();
    for e in entries {
        let e =
            e.map_err(|e| Error::input(format!("{}: cannot list directory: {e}", dir.display())))?;
        if e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            let n = e.file_name().to_string_lossy().into_owned();
            if is_trace_name(&n) {
                names.push(n);
            }
        }
    }
    names.sort();
    let mut notes = Vec::new();
    let (frontend, names): (Vec<String>, Vec<String>) =
        names.into_iter().partition(|n| n.contains(".async_llm"));
    for n in frontend {
        notes.push(format!(
            "skipped {n}: vLLM's CPU-only front-end trace, not a rank"
        ));
    }
    let (merged, rest): (Vec<String>, Vec<String>) =
        names.into_iter().partition(|n| n.starts_with("merged-"));
    let mut keyed: Vec<(Option<RankKey>, String)> =
        rest.into_iter().map(|n| (rank_key(&n), n)).collect();
    let names: Vec<(Option<RankKey>, String)> = if keyed.is_empty() {
        merged.into_iter().map(|n| (None, n)).collect()
    } else {
        for n in merged {
            notes.push(format!(
                "skipped {n}: SGLang's merged copy of the per-rank traces read here"
            ));
        }
        // Known ranks first, in rank order; then unnamed traces by file name.
        keyed.sort_by(|a, b| match (a.0, b.0) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.1.cmp(&b.1),
        });
        for w in keyed.windows(2) {
            if w[0].0.is_some() && w[0].0 == w[1].0 {
                return Err(Error::input(format!(
                    "{}: two traces for the same rank ({} and {}): keep one capture per directory",
                    dir.display(),
                    w[0].1,
                    w[1].1
                )));
            }
        }
        keyed
    };
    if names.is_empty() {
        return Err(Error::input(format!(
            "{}: no PyTorch profiler traces (*.json, *.json.gz) in this directory",
            dir.display()
        )));
    }
    Ok(Ranks {
        files: names.into_iter().map(|(_, n)| dir.join(n)).collect(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_capture_sidecar_is_not_a_rank() {
        let dir = tempfile::tempdir().unwrap();
        for n in [
            "capture.json",
            "rank0.capture.json",
            "a-TP-0.trace.json.gz",
            "a-TP-1.trace.json.gz",
        ] {
            std::fs::write(dir.path().join(n), b"{}").unwrap();
        }
        let ranks = super::discover(dir.path()).unwrap();
        let names: Vec<_> = ranks
            .files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a-TP-0.trace.json.gz", "a-TP-1.trace.json.gz"]);
    }

    use super::*;

    #[test]
    fn rank_keys_from_engine_names() {
        assert_eq!(
            rank_key("dp0_pp0_tp1_dcp0_ep0_rank1.1767189312000000000.pt.trace.json.gz"),
            Some((0, 0, 0, 1))
        );
        assert_eq!(rank_key("1712.5-TP-3.trace.json.gz"), Some((0, 0, 0, 3)));
        assert_eq!(
            rank_key("p-1712.5-TP-1-DP-2-EP-1-DECODE.trace.json.gz"),
            Some((2, 1, 0, 1))
        );
        assert_eq!(rank_key("host_123.async_llm.1.pt.trace.json.gz"), None);
        assert_eq!(rank_key("trace.json"), None);
    }

    #[test]
    fn directory_order_and_skips() {
        let d = tempfile::tempdir().unwrap();
        for n in [
            "x_rank10.5.pt.trace.json.gz",
            "x_rank2.7.pt.trace.json.gz",
            "h_1.async_llm.9.pt.trace.json.gz",
            "notes.txt",
        ] {
            std::fs::write(d.path().join(n), b"{}").unwrap();
        }
        let r = discover(d.path()).unwrap();
        let names: Vec<_> = r
            .files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec!["x_rank2.7.pt.trace.json.gz", "x_rank10.5.pt.trace.json.gz"]
        );
        assert_eq!(r.notes.len(), 1);
        std::fs::write(d.path().join("x_rank2.8.pt.trace.json.gz"), b"{}").unwrap();
        let e = discover(d.path()).unwrap_err();
        assert!(
            e.message.contains("two traces for the same rank"),
            "{}",
            e.message
        );
    }
}
