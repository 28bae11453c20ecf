//! `--where key=value,…`: which runs (and, with `kind=`, which steps) `trend` and
//! `gate --history` read. Clauses are separated by commas or by repeating the flag; a
//! comma or backslash inside a value is written `\,` or `\\`.

use crate::exit::{Error, Result};
use crate::wire::dataset::RunRow;

/// The run-level keys `--where` and `--by` accept (plus `kind`, a step-level key).
pub const RUN_KEYS: &[&str] = &["gpu", "model", "engine", "source_format", "run_id"];

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
    /// Parse `--where` values (each may hold several comma-separated clauses).
    pub fn parse(items: &[String]) -> Result<Filter> {
        let mut f = Filter::default();
        for item in items {
            for clause in clauses(item) {
                let clause = clause.trim();
                if clause.is_empty() {
                    continue;
                }
                let Some((k, v)) = clause.split_once('=') else {
                    return Err(Error::input(format!(
                        "--where {clause:?} is not key=value (e.g. --where gpu=h100,label.branch=main)"
                    )));
                };
                let (k, v) = (k.trim(), v.trim());
                check_key(k, "--where")?;
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
pub fn check_key(k: &str, flag: &str) -> Result<()> {
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
    fn an_empty_value_is_an_error_not_a_match_all() {
        for bad in ["label.branch=", "gpu= ", "kind=", r"label.a=1,label.b="] {
            let e = Filter::parse(&[bad.into()]).unwrap_err();
            assert!(e.message.contains("has no value"), "{bad}: {}", e.message);
        }
    }
}
