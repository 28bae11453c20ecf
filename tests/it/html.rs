//! `--html` pages: self-contained (no network, no external file), with the charts the
//! issue lists and the charted numbers in tables; and kernel names that share a short
//! name told apart in `analyze`.

use std::path::Path;

use serde_json::Value;
use stepgate::synth::workload::*;
use stepgate::synth::Layout;

use crate::common;

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Self-contained: inline CSS/SVG only, no fetch of any kind.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    for bad in [
        "<link",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(",
        "<img",
        "<iframe",
    ] {
        assert!(!html.contains(bad), "page contains {bad}");
    }
    assert!(html.contains("prefers-color-scheme: dark"));
    assert!(html.contains("@media print"));
}

fn svg_count(html: &str) -> usize {
    html.matches("<svg").count()
}

/// Ten decode steps of three kernels, the last one slower in the candidate.
fn report(dir: &Path, name: &str, slow: i64) -> std::path::PathBuf {
    let step = vllm_execute_detailed(8, [0; 5], [8, 8, 8 * 1024, 8, 8 * 1024]);
    let steps = (0..12)
        .map(|_| {
            StepSpec::new(
                Some(&step),
                LaunchMode::Eager,
                vec![
                    KernelSpec::new("gemm_kernel_a", 40_000),
                    KernelSpec::new("attention_kernel_b", 20_000),
                    KernelSpec::new("norm_kernel_c", slow),
                ],
            )
        })
        .collect();
    let p = dir.join(name);
    build(&Scenario::new(Layout::Nsys2026_2, 1, steps), &p).unwrap();
    p
}

#[test]
fn steps_page_has_the_panel_and_the_median_step_with_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let rep = report(dir.path(), "a.sqlite", 5_000);
    let out = dir.path().join("steps.html");
    let (code, _, err) = common::run(&[
        "steps",
        rep.to_str().unwrap(),
        "--model",
        "llama-3-8b",
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = read(&out);
    assert_self_contained(&html);
    // The median-step bar, the class bars, the roofline (a model is given) and one panel
    // for the series.
    assert_eq!(svg_count(&html), 4);
    assert!(html.contains("Steps under the NVIDIA H100"));
    assert!(html.contains("arithmetic intensity (FLOP per byte"));
    assert!(html.contains("time per step (µs)") && html.contains("step index"));
    assert!(html.contains("floor (derived)"));
    // Every step is identical: busy = 40 + 20 + 5 µs, and the table says so.
    assert!(
        html.contains("<td class=\"num\">65.0</td>"),
        "busy 65.0 µs in the table"
    );
    let (_, json, _) = common::run(&["steps", rep.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let wall = v["steps"][0]["wall_ns"].as_i64().unwrap() as f64;
    assert!(
        html.contains(&format!("{:.1} µs wall", wall / 1e3)),
        "wall note"
    );
}

#[test]
fn diff_and_gate_pages_draw_the_waterfall_with_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let a = report(dir.path(), "a.sqlite", 5_000);
    let b = report(dir.path(), "b.sqlite", 35_000);
    let out = dir.path().join("diff.html");
    let (code, _, err) = common::run(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = read(&out);
    assert_self_contained(&html);
    // Distribution and waterfall for the one group.
    assert_eq!(svg_count(&html), 2);
    assert!(html.contains("waterfall of the mean step wall"));
    assert!(html.contains("step wall per side"));
    // The norm kernel is 30 µs slower per step: in the chart note and the table.
    assert!(html.contains("+30.0 µs"), "{html}");
    assert!(html.contains(">norm_<wbr>kernel_<wbr>c</td>"), "{html}");
    assert!(html.contains("exact)"), "the sum check row");

    let base = dir.path().join("base.json");
    let (code, _, err) = common::run(&[
        "baseline",
        "record",
        a.to_str().unwrap(),
        "-o",
        base.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let gate = dir.path().join("gate.html");
    let (code, _, _) = common::run(&[
        "gate",
        b.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "--html",
        gate.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "a 30 µs slower kernel is a regression");
    let html = read(&gate);
    assert_self_contained(&html);
    assert!(html.contains("class=\"verdict fail\""));
    assert!(html.contains("— regression: step wall per side"));
}

#[test]
fn analyze_page_shows_busy_idle_and_categories_per_device() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("analyze.html");
    let rep = common::fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let (code, _, err) = common::run(&[
        "analyze",
        rep.to_str().unwrap(),
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = read(&out);
    assert_self_contained(&html);
    // One busy/idle chart, one category chart per device (2 GPUs).
    assert_eq!(svg_count(&html), 3);
    let (_, json, _) = common::run(&["analyze", rep.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    for d in v["devices"].as_array().unwrap() {
        let busy = d["busy_ns"].as_i64().unwrap() as f64;
        let cell = stepgate::report::fmt_us(busy);
        assert!(
            html.contains(&format!("<td class=\"num\">{cell}</td>")),
            "busy {cell}"
        );
        assert!(html.contains(&format!(
            "GPU {}: exclusive time per kernel category",
            d["device"]
        )));
    }
}

#[test]
fn html_to_an_input_path_is_refused() {
    let rep = common::fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let (code, _, err) = common::run(&[
        "analyze",
        rep.to_str().unwrap(),
        "--html",
        rep.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--html"), "{err}");
}

#[test]
fn analyze_tells_apart_kernels_sharing_a_short_name() {
    let rep = common::fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let (code, json, err) = common::run(&["analyze", rep.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    for d in v["devices"].as_array().unwrap() {
        let ks = d["kernels_by_name"].as_array().unwrap();
        let mut names: Vec<&str> = ks.iter().map(|k| k["name"].as_str().unwrap()).collect();
        let mut shorts: Vec<&str> = ks
            .iter()
            .map(|k| k["short_name"].as_str().unwrap())
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "distinct names are never merged");
        shorts.sort_unstable();
        shorts.dedup();
        assert_eq!(shorts.len(), n, "every row has its own display name");
        // The plain name is at most one of the vectorized_elementwise_kernel family.
        let plain = ks
            .iter()
            .filter(|k| k["short_name"] == "vectorized_elementwise_kernel")
            .count();
        assert!(plain <= 1);
        let family = ks
            .iter()
            .filter(|k| {
                k["short_name"]
                    .as_str()
                    .unwrap()
                    .starts_with("vectorized_elementwise_kernel")
            })
            .count();
        assert!(family >= 4, "the fixture has several of them ({family})");
    }
    // The table shows the labels, one row each.
    let (_, table, _) = common::run(&["analyze", rep.to_str().unwrap(), "--top", "60"]);
    assert!(table.contains("vectorized_elementwise_kernel<FillFunctor<long>>"));
    assert!(table.contains("vectorized_elementwise_kernel<CUDAFunctor_add<float>>"));
}

/// The `<p>` text of a page line: HTML-escaped as the page writes it.
fn escaped(s: &str) -> String {
    stepgate::report::html::esc(s)
}

#[test]
fn steps_page_carries_the_terminal_notes_and_calls_measured_numbers_measured() {
    // saxpy has no engine markers: its steps are idle-gap splits, a heuristic.
    let rep = common::fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("steps.html");
    // --wide: whole lines, so each note is one line to find on the page.
    let (code, text, err) = common::run(&[
        "steps",
        rep.to_str().unwrap(),
        "--wide",
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = read(&out);
    let head = text.lines().next().unwrap();
    let head = head.strip_prefix("stepgate steps: ").unwrap();
    assert!(head.contains("(heuristic)"), "{head}");
    assert!(html.contains(&escaped(head)), "headline {head:?}");
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("note: ") || l.starts_with("warning: "))
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("note: steps are a heuristic here")),
        "{text}"
    );
    for n in notes {
        let n = n.strip_prefix("note: ").unwrap_or(n);
        assert!(html.contains(&escaped(n)), "{n:?} not on the page");
    }
    // The summary's numbers are medians of measured times.
    assert!(html.contains("measured, µs: median · p10 · p90 per step"));
    assert!(!html.contains("p90 per step (derived)"));
}

#[test]
fn analyze_says_what_dominates_a_device() {
    let rep = common::fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("analyze.html");
    let (code, text, err) = common::run(&[
        "analyze",
        rep.to_str().unwrap(),
        "--html",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = read(&out);
    let (_, json, _) = common::run(&["analyze", rep.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    for d in v["devices"].as_array().unwrap() {
        // The name with the most exclusive time, and its share of busy, from the JSON.
        let top = d["kernels_by_name"]
            .as_array()
            .unwrap()
            .iter()
            .max_by_key(|k| k["exclusive_ns"].as_i64().unwrap())
            .unwrap();
        let share = top["exclusive_ns"].as_f64().unwrap() / d["busy_ns"].as_f64().unwrap();
        assert!(share > 0.9, "one host-to-device copy dominates ({share})");
        let line = format!(
            "dominated by {}: {:.1}% of busy time",
            top["short_name"].as_str().unwrap(),
            share * 100.0
        );
        assert!(
            line.starts_with("dominated by [memcpy HtoD]: 95."),
            "{line}"
        );
        assert!(text.contains(&line), "{line:?} not in:\n{text}");
        assert!(html.contains(&escaped(&line)), "{line:?} not on the page");
        // The finding is the document's; the renderers only print it.
        assert_eq!(d["dominant"]["short_name"], top["short_name"]);
        assert!((d["dominant"]["share_of_busy"].as_f64().unwrap() - share).abs() < 1e-12);
        let window = d["window_end_ns"].as_i64().unwrap() - d["window_start_ns"].as_i64().unwrap();
        assert_eq!(d["window_ns"].as_i64().unwrap(), window);
    }
    // Under half of busy time is no domination: saxpy's largest is 49.8%.
    let saxpy = common::fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let (_, text, _) = common::run(&["analyze", saxpy.to_str().unwrap()]);
    assert!(!text.contains("dominated by"), "{text}");
    let (_, json, _) = common::run(&["analyze", saxpy.to_str().unwrap(), "--format", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .all(|d| d.get("dominant").is_none()));
}

#[test]
fn steps_page_opens_with_the_verdict_and_its_next_action() {
    // The README's first capture: a host stall. The page says the verdict and its next
    // action before any caveat note or table, and the same words as the terminal.
    let rep = common::fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("steps.html");
    let args = [
        "steps",
        rep.to_str().unwrap(),
        "--model",
        "qwen3-8b",
        "--gpu",
        "mi300x",
        "--wide",
    ];
    let (code, text, err) = common::run(&[&args[..], &["--html", out.to_str().unwrap()]].concat());
    assert_eq!(code, 0, "{err}");
    let html = read(&out);
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not on the page"))
    };
    let verdict = at("<strong>verdict:</strong>");
    let next = at("<strong>next:</strong>");
    assert!(verdict < next);
    assert!(next < at("class=\"note\""), "the answer before the notes");
    assert!(next < at("<table"), "the answer before the first table");
    for label in ["verdict: ", "next: "] {
        let line = text.lines().find(|l| l.starts_with(label)).unwrap();
        let words = line.strip_prefix(label).unwrap();
        assert!(html.contains(&escaped(words)), "{words:?} not on the page");
    }
}
