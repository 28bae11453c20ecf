//! The gate through the binary: diff without a verdict, end to end over real files, and the category table in text and markdown.

use super::*;

#[test]
fn diff_reports_without_a_verdict_unless_asked() {
    let c = Case::new();
    let slow = c.write(
        "slow.json",
        &Spec {
            seed: 2,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let base = c.path("base.json");
    let (b, s) = (base.to_str().unwrap(), slow.to_str().unwrap());
    let (code, out, _) = common::run(&["diff", b, s, "--format", "markdown"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("### stepgate diff: 1 step group compared"),
        "{out}"
    );
    assert!(
        out.contains("**Slower kernels**") && out.contains("| worse |"),
        "{out}"
    );
    assert!(!out.contains("❌") && !out.contains("Regression"), "{out}");
    let (code, out, _) = common::run(&["diff", b, s, "--verdict"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("❌ Regression"), "{out}");
}

mod end_to_end {
    //! The end-to-end cases through the real binary: record a baseline from a
    //! generated nsys export, then gate generated candidates against it.

    use stepgate::synth::workload::*;

    const KERNELS: usize = 24;

    /// The shared jittered decode report with this module's kernel mix.
    fn report(
        path: &std::path::Path,
        steps: usize,
        seed: u64,
        gpu: &str,
        scale: &dyn Fn(usize) -> f64,
    ) {
        crate::common::jittered_decode_report(path, KERNELS, steps, seed, gpu, scale);
    }

    fn stepgate(args: &[&str]) -> (i32, String, String) {
        crate::common::run(args)
    }

    #[test]
    fn record_then_gate_generated_runs() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
        let h100 = "NVIDIA H100 80GB HBM3";
        report(
            dir.path().join("base.sqlite").as_path(),
            60,
            1,
            h100,
            &|_| 1.0,
        );
        let (code, out, err) = stepgate(&[
            "baseline",
            "record",
            &p("base.sqlite"),
            "-o",
            &p("base.json"),
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("recorded 1 group(s), 60 steps"), "{out}");
        let b: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p("base.json")).unwrap()).unwrap();
        assert_eq!(b["meta"]["gpu_name"], h100);
        assert_eq!(b["meta"]["engine"], "vllm");
        assert_eq!(b["samples"]["groups"][0]["step_kind"], "decode");
        assert_eq!(b["samples"]["groups"][0]["batch_size"], 32);
        assert_eq!(b["samples"]["groups"][0]["mean_context"], 2048.0);

        // The same workload again (other jitter): pass.
        report(
            dir.path().join("same.sqlite").as_path(),
            60,
            2,
            h100,
            &|_| 1.0,
        );
        let (code, _, err) = stepgate(&["gate", &p("same.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 0, "{err}");

        // One kernel (the 15.2 µs GEMM, every 8th of the mix) 20% slower in every step:
        // a regression naming it.
        let slow = decode_kernels(KERNELS)[6].name.clone();
        report(
            dir.path().join("slow.sqlite").as_path(),
            60,
            3,
            h100,
            &|k| if k % 8 == 6 { 1.2 } else { 1.0 },
        );
        let (code, out, err) = stepgate(&[
            "gate",
            &p("slow.sqlite"),
            "--baseline",
            &p("base.json"),
            "--format",
            "json",
        ]);
        assert_eq!(code, 1, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(j["verdict"], "regression");
        // The JSON lists every kernel, so search the verdicts, not the text: exactly the
        // slowed kernel (by full name: the three GEMMs share a prefix) is a regression…
        let rows = j["groups"][0]["kernels"].as_array().unwrap();
        let regressed: Vec<&serde_json::Value> = rows
            .iter()
            .filter(|k| k["verdict"] == "regression")
            .collect();
        assert_eq!(regressed.len(), 1, "{rows:#?}");
        assert_eq!(regressed[0]["name"], slow.as_str());
        // …and the reasons name it and no other kernel.
        let short = regressed[0]["short_name"].as_str().unwrap();
        let reasons: Vec<&str> = j["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let kernel_reasons: Vec<&&str> =
            reasons.iter().filter(|r| r.contains(": kernel ")).collect();
        assert_eq!(kernel_reasons.len(), 1, "{reasons:?}");
        assert!(
            kernel_reasons[0].contains(&format!(": kernel {short} +")),
            "{reasons:?}"
        );
        // The step itself moved by 3 × 3.04 µs = 9.1 µs, below the 20 µs absolute floor.
        assert!(
            !reasons.iter().any(|r| r.contains(": wall ")),
            "{reasons:?}"
        );

        // 1% slower everywhere: below the 3% / 10% thresholds, pass.
        report(
            dir.path().join("noise.sqlite").as_path(),
            60,
            4,
            h100,
            &|_| 1.01,
        );
        let (code, _, err) = stepgate(&["gate", &p("noise.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 0, "{err}");

        // Three steps: inconclusive.
        report(
            dir.path().join("short.sqlite").as_path(),
            3,
            5,
            h100,
            &|_| 1.0,
        );
        let (code, _, err) = stepgate(&["gate", &p("short.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 3, "{err}");

        // Another GPU: incomparable (exit 6).
        report(
            dir.path().join("a100.sqlite").as_path(),
            60,
            6,
            "NVIDIA A100-SXM4-80GB",
            &|_| 1.0,
        );
        let (code, out, _) = stepgate(&["gate", &p("a100.sqlite"), "--baseline", &p("base.json")]);
        assert_eq!(code, 6, "{out}");
        assert!(out.contains("A100"), "{out}");

        // A markdown report for the PR comment, verdict first.
        let (code, _, _) = stepgate(&[
            "gate",
            &p("slow.sqlite"),
            "--baseline",
            &p("base.json"),
            "--markdown",
            &p("gate.md"),
        ]);
        assert_eq!(code, 1);
        let md = std::fs::read_to_string(p("gate.md")).unwrap();
        assert!(
            md.lines()
                .next()
                .unwrap()
                .to_lowercase()
                .contains("regression"),
            "{md}"
        );
    }
}

/// Markdown and text come from one document walker: with nothing moved, the markdown folds
/// the per-category table into `<details>` and the text shows it, one `ok` row per category
/// of the generated kernels.
#[test]
fn text_and_markdown_both_carry_the_category_table() {
    let b = generate(&Spec::default());
    let cmp = compare(&b, &b, &Policy::default()).unwrap();
    let o = stepgate::report::gate::RenderOptions::default();
    let text = stepgate::report::gate::text(&cmp, &o);
    let md = stepgate::report::gate::markdown(&cmp, &o);
    let want: std::collections::BTreeSet<&str> = KERNELS.iter().map(|k| k.2).collect();
    let (_, after) = text
        .split_once("\ntime per category\n")
        .unwrap_or_else(|| panic!("no category table in:\n{text}"));
    // Header and rule, then one row per category in name order.
    let rows: Vec<&str> = after
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), want.len(), "{after}");
    for (row, cat) in rows.iter().zip(&want) {
        assert!(row.starts_with(cat), "{row} should be {cat}");
        assert!(row.trim_end().ends_with(" ok"), "{row}");
    }
    assert!(
        md.contains("<details><summary>Time per category</summary>"),
        "{md}"
    );
    assert!(!md.contains("**Time per category**"), "{md}");
}
