//! `--where key=value,…`: which runs (and, with `kind=`, which steps) `trend` and
//! `gate --history` read. Clauses are separated by commas or by repeating the flag; a
//! comma or backslash inside a value is written `\,` or `\\`, and a comma followed by a
//! piece without `=` is kept in the value as it is.

use crate::exit::{Error, Result};
use crate::wire::dataset::RunRow;

/// The run-level keys `--where` and `--by` accept (plus `kind`, a step-level key).
pub(crate) const RUN_KEYS: &[&str] = &["gpu", "model", "engine", "source_format", "run_id"];

/// `--where key=value,…`: every clause must hold. `gpu` and `model` match a
/// case-insensitive substring (`gpu=h100` matches `NVIDIA H100 80GB HBM3`); other keys
/// match exactly. `kind=…` filters steps, not runs.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub clauses: Vec<(String, String)>,
    pub kind: Option<String>,
}

/// Split one `--where` value on the commas that are not escaped, unescaping `\,` and
/// `\\` (any other backslash is kept as written).
fn clauses(item: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut it = item.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\\' if matches!(it.peek(), Some(',' | '\\')) => {
                if let (Some(last), Some(n)) = (out.last_mut(), it.next()) {
                    last.push(n);
                }
            }
            ',' => out.push(String::new()),
            c => {
                if let Some(last) = out.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    out
}

impl Filter {
    /// Parse `--where` values (each may hold several comma-separated clauses). A piece
    /// without `=` after a clause is part of that clause's value (`label.k=a,b` selects the
    /// value `a,b` that `--label k=a,b` stored): only a piece that looks like a clause
    /// starts one, so a comma needs its escape `\,` only before something holding `=`.
    pub fn parse(items: &[String]) -> Result<Filter> {
        let mut f = Filter::default();
        for item in items {
            let mut joined: Vec<String> = Vec::new();
            for piece in clauses(item) {
                match joined.last_mut() {
                    Some(last) if !piece.contains('=') && !piece.trim().is_empty() => {
                        last.push(',');
                        last.push_str(&piece);
                    }
                    _ => joined.push(piece),
                }
            }
            let after_first = joined.len() > 1;
            for clause in joined {
                let clause = clause.trim();
                if clause.is_empty() {
                    continue;
                }
                let Some((k, v)) = clause.split_once('=') else {
                    return Err(Error::input(format!(
                        "--where {clause:?} is not key=value (e.g. --where \
                         gpu=h100,label.branch=main; a comma inside a value is written \\,)"
                    )));
                };
                let (k, v) = (k.trim(), v.trim());
                check_key(k, "--where").map_err(|mut e| {
                    if after_first {
                        e.message.push_str(&format!(
                            " (if {clause:?} is part of the value before it, write that \
                             comma as \\,: --where 'label.K=A\\,{clause}')"
                        ));
                    }
                    e
                })?;
                if v.is_empty() {
                    return Err(Error::input(format!(
                        "--where {k}= has no value, which would match nothing or everything: \
                         give one (--where {k}=VALUE; a comma in a value is written \\,)"
                    )));
                }
                if k == "kind" {
                    f.kind = Some(v.to_owned());
                } else {
                    f.clauses.push((k.to_owned(), v.to_owned()));
                }
            }
        }
        Ok(f)
    }

    /// Whether a run passes every run-level clause.
    pub fn matches(&self, r: &RunRow) -> bool {
        self.clauses.iter().all(|(k, v)| match r.key(k) {
            None => false,
            Some(x) if k == "gpu" || k == "model" => x.to_lowercase().contains(&v.to_lowercase()),
            Some(x) => x == *v,
        })
    }
}

/// Refuse a key that names nothing, saying which keys exist.
pub(crate) fn check_key(k: &str, flag: &str) -> Result<()> {
    let label = k.strip_prefix("label.").is_some_and(|l| !l.is_empty());
    if label || k == "kind" || RUN_KEYS.contains(&k) {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{flag}: unknown key {k:?}: use gpu, model, engine, source_format, run_id, kind or label.NAME"
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;

    fn run(labels: &[(&str, &str)]) -> RunRow {
        RunRow {
            run_id: "x".into(),
            exported_at_ns: 0,
            gpu_name: Some("NVIDIA H100 80GB HBM3".into()),
            model: None,
            engine: None,
            source_format: None,
            report_sha256: None,
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
            runs_file: PathBuf::from("runs/gpu=a/model=b/run-x.parquet"),
            export_id: None,
        }
    }

    #[test]
    fn where_clauses() {
        let f =
            Filter::parse(&["gpu=h100, label.branch=main".into(), "kind=decode".into()]).unwrap();
        assert_eq!(f.kind.as_deref(), Some("decode"));
        assert!(!f.matches(&run(&[])), "no branch label");
        assert!(f.matches(&run(&[("branch", "main")])));
        assert!(
            !f.matches(&run(&[("branch", "mainline")])),
            "labels match exactly"
        );
        assert!(Filter::parse(&["colour=red".into()]).is_err());
    }

    #[test]
    fn escaped_commas_and_backslashes_are_part_of_the_value() {
        let f = Filter::parse(&[r"label.workload=sharegpt\,c32,gpu=h100".into()]).unwrap();
        assert_eq!(
            f.clauses,
            vec![
                ("label.workload".to_owned(), "sharegpt,c32".to_owned()),
                ("gpu".to_owned(), "h100".to_owned())
            ]
        );
        assert!(f.matches(&run(&[("workload", "sharegpt,c32")])));
        assert!(!f.matches(&run(&[("workload", "sharegpt")])));
        let f = Filter::parse(&[r"label.path=a\\b\,c\d".into()]).unwrap();
        assert_eq!(f.clauses[0].1, r"a\b,c\d");
    }

    #[test]
    fn a_comma_before_a_piece_without_equals_is_part_of_the_value() {
        // `--label workload=sharegpt,c32` stored "sharegpt,c32".
        let f = Filter::parse(&["label.workload=sharegpt,c32,gpu=h100".into()]).unwrap();
        assert_eq!(
            f.clauses,
            vec![
                ("label.workload".to_owned(), "sharegpt,c32".to_owned()),
                ("gpu".to_owned(), "h100".to_owned())
            ]
        );
        assert!(f.matches(&run(&[("workload", "sharegpt,c32")])));
        let f = Filter::parse(&["label.k=a, b,c".into()]).unwrap();
        assert_eq!(f.clauses[0].1, "a, b,c");
        // A piece that holds `=` starts a clause: its error shows the escape.
        let e = Filter::parse(&["label.k=a,b=c".into()]).unwrap_err();
        assert!(e.message.contains(r"label.K=A\,b=c"), "{}", e.message);
        // Nothing to join to: the error shows the escape too.
        let e = Filter::parse(&["b".into()]).unwrap_err();
        assert!(e.message.contains(r"written \,"), "{}", e.message);
    }

    #[test]
    fn an_empty_value_is_an_error_not_a_match_all() {
        for bad in ["label.branch=", "gpu= ", "kind=", r"label.a=1,label.b="] {
            let e = Filter::parse(&[bad.into()]).unwrap_err();
            assert!(e.message.contains("has no value"), "{bad}: {}", e.message);
        }
    }
}
