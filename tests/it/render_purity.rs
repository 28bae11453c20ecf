//! Renderers format, they never compute (issue 49): no file under `src/report/` reaches a
//! module that computes — the pipeline, the models, attribution, timing, the roofline.
//! What they render comes from `wire`. None remains; a new one fails the test (a reach
//! that must stay would be listed in `KNOWN` with its reason, as a debt).

use std::path::Path;

/// Top-level modules that compute. `wire` (the document), `exit` and `report` itself are
/// what a renderer may use.
const COMPUTING: &[&str] = &[
    "pipeline",
    "attribution",
    "timing",
    "roofline",
    "baseline",
    "operating_point",
    "dataset",
    "source",
    "trace",
    "capture",
    "probe",
    "categories",
    "synth",
];

/// (file, module reached, why it is still there). Each is a debt, not a licence.
const KNOWN: &[(&str, &str, &str)] = &[];

/// The computing modules a file's code lines reach (`use crate::x` or `crate::x::`),
/// comments and the test module left out.
fn reaches(text: &str) -> Vec<String> {
    let code = match text.find("#[cfg(test)]") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = Vec::new();
    for line in code.lines() {
        let l = line.trim_start();
        if l.starts_with("//") {
            continue;
        }
        for m in COMPUTING {
            let path = format!("crate::{m}::");
            let tree = format!("crate::{m}::{{");
            let whole = format!("use crate::{m};");
            if (l.contains(&path) || l.contains(&tree) || l.contains(&whole))
                && !out.iter().any(|x| x == m)
            {
                out.push((*m).to_owned());
            }
        }
    }
    out
}

fn report_files(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            report_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn renderers_reach_no_computing_module() {
    let mut files = Vec::new();
    report_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report"),
        &mut files,
    );
    assert!(files.len() > 20, "src/report has its files");
    let mut new = Vec::new();
    for (path, text) in &files {
        for m in reaches(text) {
            if !KNOWN.iter().any(|(f, k, _)| f == path && *k == m) {
                new.push(format!("{path} reaches crate::{m}"));
            }
        }
    }
    assert!(
        new.is_empty(),
        "a renderer reaches a computing module: put the value in the document (wire) \
         instead:\n{}",
        new.join("\n")
    );
}

#[test]
fn the_check_sees_a_reach_and_ignores_comments_and_tests() {
    assert_eq!(
        reaches("use crate::pipeline::steps;\nfn f() {}"),
        ["pipeline"]
    );
    assert_eq!(
        reaches("let x = crate::roofline::floor::step_floor(a);"),
        ["roofline"]
    );
    assert!(reaches("// crate::timing::x\nuse crate::wire::steps::Step;").is_empty());
    assert!(reaches("fn f() {}\n#[cfg(test)]\nmod tests { use crate::timing::x; }").is_empty());
}
