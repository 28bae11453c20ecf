//! The glossary against the outputs: every word of jargon a text table uses as a column
//! heading (MBU, of roof, exclusive, β, …) has an entry `stepgate explain` prints, and
//! every entry is reachable by its own spelling.

use crate::common;

/// Headings of plain words a reader needs no entry for.
const PLAIN: &[&str] = &[
    "kind",
    "steps",
    "step",
    "class",
    "kernels",
    "kernel",
    "name",
    "series",
    "index",
    "device",
    "found by",
    "category",
    "instances",
    "total",
    "min",
    "max",
    "mean",
    "median",
    "share of",
    "layer GEMM",
    "bytes",
    "time",
    "tail",
    "quantity",
    "value",
    "basis",
    "#",
    "n",
    "count",
    "what",
    "source",
    "model",
    "gpu",
    "per step",
    "per layer",
    "× per step",
    "ops",
    "memory",
    "params",
    "layers",
    "heads",
    "head dim",
    "kv heads",
    "weights",
    "attention",
    "part",
    "×",
];

/// A heading cell without its units, statistics and basis label: `floor µs (derived)` →
/// `floor`, `wall p50` → `wall`, `% of busy` → `busy`.
fn core(cell: &str) -> String {
    let mut s = cell.to_owned();
    while let (Some(a), Some(b)) = (s.find('('), s.find(')')) {
        if a >= b {
            break;
        }
        s.replace_range(a..=b, "");
    }
    for phrase in ["per step", "per layer"] {
        s = s.replace(phrase, "");
    }
    let drop = [
        "µs", "ms", "GB", "MB", "TB/s", "%", "p50", "p10", "p90", "q1", "q3", "of", "total",
        "median", "mean", "min", "max", "most", "least", "share",
    ];
    let words: Vec<&str> = s.split_whitespace().filter(|w| !drop.contains(w)).collect();
    words.join(" ")
}

/// Heading cells of every text table in `text`: the line above a rule of dashes.
fn headings(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for w in lines.windows(2) {
        let rule = w[1].trim();
        if !rule.is_empty() && rule.chars().all(|c| c == '-' || c == ' ') && rule.contains("--") {
            out.extend(
                w[0].split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    out
}

fn ok(args: &[&str]) -> String {
    let (code, out, err) = common::run(args);
    assert_eq!(code, 0, "stepgate {args:?}: {err}");
    out
}

#[test]
fn every_jargon_heading_of_the_outputs_has_an_entry() {
    let sglang = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let nsys = common::fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let (s, n) = (sglang.to_str().unwrap(), nsys.to_str().unwrap());
    let outputs = [
        ok(&[
            "steps", s, "--model", "qwen3-8b", "--gpu", "mi300x", "--each", "--detail",
        ]),
        ok(&["analyze", n]),
        ok(&["floor"]),
        ok(&["capacity"]),
    ];
    let mut cells: Vec<String> = outputs.iter().flat_map(|o| headings(o)).collect();
    cells.sort();
    cells.dedup();
    // The outputs hold tables: a renderer that stops drawing them fails here, not silently.
    assert!(cells.len() >= 20, "{cells:?}");
    let mut missing = Vec::new();
    for cell in &cells {
        let c = core(cell);
        if c.is_empty() || PLAIN.iter().any(|p| p.eq_ignore_ascii_case(&c)) {
            continue;
        }
        if stepgate::glossary::entry(&c).is_none() {
            missing.push(format!("{cell:?} (as {c:?})"));
        }
    }
    assert!(
        missing.is_empty(),
        "headings without a glossary entry: {missing:?}"
    );
    // The words the issue names, wherever they appear in the text, are explained too.
    let all = outputs.join("\n");
    for term in [
        "MBU",
        "of roof",
        "β",
        "shape",
        "floor",
        "busy",
        "gap",
        "exclusive",
        "excess",
    ] {
        assert!(all.contains(term), "{term} no longer in the outputs");
        assert!(stepgate::glossary::entry(term).is_some(), "{term}");
    }
}

#[test]
fn explain_prints_one_entry_or_every_term() {
    let one = ok(&["explain", "of", "roof"]);
    let e = stepgate::glossary::entry("of roof").unwrap();
    assert!(one.starts_with("of roof: "), "{one}");
    // The same words as the table, wrapped: compare with whitespace folded.
    let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(fold(&one).contains(&fold(e.meaning)), "{one}");
    assert!(ok(&["explain", "beta"]).starts_with("β: "));
    let list = ok(&["explain"]);
    for e in stepgate::glossary::GLOSSARY {
        assert!(
            list.contains(&format!("  {} ", e.term)),
            "{} not listed",
            e.term
        );
    }
    assert!(list.lines().all(|l| l.chars().count() <= 80), "{list}");
    let (code, out, err) = common::run(&["explain", "flux capacitor"]);
    assert_eq!(code, 2);
    assert!(out.is_empty() && err.contains("stepgate explain"), "{err}");
}

/// A verdict's rule id, as the JSON's `verdict.rule` names it, is explained by the
/// condition docs/verdict-rules.md states for it ("idle > 20 % of wall and one gap holds
/// ≥ 50 % of it").
#[test]
fn explain_takes_a_verdict_rule_id() {
    let one = ok(&["explain", "one-long-stall"]);
    let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        fold(&one).starts_with("one-long-stall (a verdict rule): fires when idle > 20% of wall and one gap holds ≥ 50% of it"),
        "{one}"
    );
    assert!(one.contains("docs/verdict-rules.md"), "{one}");
    assert!(one.lines().all(|l| l.chars().count() <= 80), "{one}");
}
