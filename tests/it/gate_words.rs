//! What the gate says: one document for text, markdown and HTML; one name per metric in
//! headlines, reasons and tables; the likely cause of a launch-count jump; why a kernel
//! fails where its category passes; nothing claimed missing from a baseline that is not
//! there; kernels picked by part of their name; full names on request.

use stepgate::baseline::compare::{compare_side, BaselineSide};
use stepgate::baseline::{compare, read_baseline, write_baseline, Policy};
use stepgate::report::gate::{markdown, text, RenderOptions};
use stepgate::wire::baseline::{metric, Baseline};
use stepgate::wire::gate::{Comparison, Verdict};

use crate::common;
use crate::gate::{generate, Spec, ACT, KERNELS};

const ACT_FULL: &str = KERNELS[3].0;

/// A baseline whose one group is copied under another (kind, batch size) too.
fn with_group(mut b: Baseline, kind: &str, batch: u32) -> Baseline {
    let mut g = b.samples.groups[0].clone();
    g.step_kind = kind.to_owned();
    g.batch_size = Some(batch);
    b.samples.groups.push(g);
    b
}

/// The page's text as a reader sees it: no markup, charts, style or script, entities
/// decoded, marks dropped, whitespace collapsed.
fn page_text(html: &str) -> String {
    let mut s = html.to_owned();
    for (open, close) in [
        ("<style", "</style>"),
        ("<script", "</script>"),
        ("<svg", "</svg>"),
    ] {
        while let Some(i) = s.find(open) {
            let j = i + s[i..].find(close).unwrap() + close.len();
            s.replace_range(i..j, " ");
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut tag = false;
    for c in s.chars() {
        match c {
            '<' => tag = true,
            '>' if tag => tag = false,
            c if !tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    plain(&out)
}

/// Marks (the emoji and the page's symbols for them) dropped, whitespace collapsed.
fn plain(s: &str) -> String {
    let mut t = s.to_owned();
    for m in ["❌", "✅", "⚠️", "✗", "✓", "⚠\u{FE0E}", "⚠"] {
        t = t.replace(m, " ");
    }
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every piece of content of a markdown document: each line without its markdown syntax,
/// each table cell on its own (a page lays cells out apart).
fn markdown_content(md: &str) -> Vec<String> {
    let clean = |s: &str| {
        let mut s = s.trim();
        for p in ["#### ", "### ", "> ", "- "] {
            s = s.strip_prefix(p).unwrap_or(s);
        }
        let mut s = s.to_owned();
        for m in [
            "**",
            "<details><summary>",
            "</summary>",
            "<sub>",
            "</sub>",
            "`` ",
            " ``",
            "`",
        ] {
            s = s.replace(m, "");
        }
        // The markdown escapes what could be markup; the page shows the characters.
        plain(&s.replace("\\|", "|").replace("\\[", "["))
    };
    let mut out = Vec::new();
    for line in md.lines().map(str::trim) {
        if line.is_empty() || line == "</details>" {
            continue;
        }
        if line.starts_with('|') {
            if line.chars().all(|c| "|-: ".contains(c)) {
                continue;
            }
            let cells = line.replace("\\|", "\u{1}");
            for cell in cells.trim_matches('|').split('|') {
                let c = clean(&cell.replace('\u{1}', "\\|"));
                if !c.is_empty() {
                    out.push(c);
                }
            }
        } else {
            let c = clean(line);
            if !c.is_empty() {
                out.push(c);
            }
        }
    }
    out
}

/// A comparison with everything a document can hold: a regressed kernel, a new and a
/// vanished one, MBU on both sides, a group on each side only, a warning and a policy rule.
fn everything() -> (Comparison, Baseline, Baseline) {
    let base = with_group(
        generate(&Spec {
            mbu: true,
            gpu: None,
            ..Spec::default()
        }),
        "prefill",
        4,
    );
    let cand = with_group(
        generate(&Spec {
            seed: 2,
            mbu: true,
            slow: Some((ACT, 1.2)),
            extra_kernel: Some(("new_dequant_kernel", 50_000.0)),
            drop_kernel: Some("rms_norm_kernel"),
            ..Spec::default()
        }),
        "decode",
        8,
    );
    let policy =
        Policy::from_str("[[kernel]]\nname = \"act_and_mul\"\nrel = 0.1\n", false).unwrap();
    let c = compare(&base, &cand, &policy).unwrap();
    (c, base, cand)
}

#[test]
fn the_page_says_everything_the_markdown_says() {
    let (c, base, cand) = everything();
    let o = RenderOptions::default();
    let md = markdown(&c, &o);
    let html = stepgate::report::html::gate::render(
        &c,
        &o,
        stepgate::baseline::compare::compared_pairs(&base, &cand),
    );
    // The parts the old page left out are in the markdown, so the check below covers them.
    assert!(md.contains("**Not compared** (present on one side only): prefill bs=4 (baseline only, 200 steps); decode bs=8 (candidate only, 200 steps)"), "{md}");
    assert!(
        md.contains("**Floor / MBU** (derived: floor ÷ wall, median)"),
        "{md}"
    );
    assert!(
        md.contains("<sub>Each side reads median · mean of its per-step samples (derived)"),
        "{md}"
    );
    assert!(md.contains("the baseline names no GPU"), "{md}");
    assert!(md.contains("`act_and_mul` selects 1 kernel."), "{md}");
    let page = page_text(&html);
    let content = markdown_content(&md);
    assert!(content.len() > 100, "{}", content.len());
    let missing: Vec<&String> = content
        .iter()
        .filter(|c| !page.contains(c.as_str()))
        .collect();
    assert!(missing.is_empty(), "not on the page: {missing:#?}");
    // Each mark the markdown shows is on the page too, as its symbol (❌ → ✗ …).
    for (emoji, _, class) in stepgate::report::html::MARKS {
        let want = md.matches(emoji).count();
        let got = html.matches(&format!("class=\"mark {class}\"")).count();
        assert_eq!(
            got, want,
            "{emoji} in the markdown {want} times, on the page {got}"
        );
    }
    assert!(md.matches('❌').count() >= 4, "{md}");
}

#[test]
fn text_and_markdown_of_one_walk_say_the_same_things() {
    // The terminal is terse (no remarks, footnote or full-names list) but leaves out no
    // table and no line the verdict rests on.
    let (c, _, _) = everything();
    let o = RenderOptions::default();
    let t = text(&c, &o);
    for want in [
        "not compared: prefill bs=4 is in the baseline only (200 steps)",
        "not compared: decode bs=8 is in the candidate only (200 steps)",
        "Floor / MBU (derived: floor ÷ wall, median)",
        "warning: the baseline names no GPU",
        "Policy [[kernel]] rules: \"act_and_mul\" selects 1 kernel.",
        "\nkernel regressions (exclusive time per step; change of the median)\n",
        "\nnew kernels (candidate only)\n",
        "\nvanished kernels (baseline only)\n",
    ] {
        assert!(t.contains(want), "{want:?} not in:\n{t}");
    }
}

#[test]
fn headlines_reasons_and_tables_name_a_metric_alike() {
    let b = generate(&Spec::default());
    let slow = generate(&Spec {
        seed: 2,
        scale: 1.2,
        ..Spec::default()
    });
    let c = compare(&b, &slow, &Policy::default()).unwrap();
    let md = markdown(&c, &RenderOptions::default());
    // The table's first column, read from the markdown: the words a reason must use.
    let names: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| step metric |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").next().unwrap().trim())
        .collect();
    assert_eq!(
        names,
        ["wall", "period", "busy", "gap", "gap fraction", "launches"]
    );
    let metric_reasons: Vec<&String> = c.groups[0]
        .reasons
        .iter()
        .filter(|r| !r.starts_with("kernel ") && !r.starts_with("category "))
        .collect();
    assert!(!metric_reasons.is_empty(), "{:?}", c.groups[0].reasons);
    for r in &metric_reasons {
        let name = r.rsplit_once(' ').unwrap().0;
        assert!(
            names.contains(&name),
            "reason {r:?} names {name:?}, the table {names:?}"
        );
    }
    // 20% slower: +20.0%, with the table's sign and grouping.
    assert!(
        metric_reasons.iter().any(|r| r.starts_with("wall +")),
        "{metric_reasons:?}"
    );
    let head = md.lines().next().unwrap();
    assert!(
        head.starts_with("### ❌ Regression — decode bs=32: wall +"),
        "{head}"
    );
    assert!(!md.contains("wall_ns") && !md.contains("period_ns"), "{md}");
}

/// The launches of every step of a baseline set to `n`.
fn launches(mut b: Baseline, n: f64) -> Baseline {
    for v in b.samples.groups[0]
        .metrics
        .get_mut(metric::LAUNCHES)
        .unwrap()
    {
        *v = n;
    }
    b
}

#[test]
fn a_launch_jump_names_cuda_graphs_as_the_likely_cause() {
    let graphs = launches(generate(&Spec::default()), 1.0);
    let eager = launches(
        generate(&Spec {
            seed: 2,
            ..Spec::default()
        }),
        48.0,
    );
    let c = compare(&graphs, &eager, &Policy::default()).unwrap();
    let note = "launches per step 1 → 48: the candidate likely runs eager where the baseline \
                replays CUDA graphs (CUDA graphs off: vLLM --enforce-eager, SGLang \
                --disable-cuda-graph) (heuristic)";
    assert!(
        c.groups[0].notes.iter().any(|n| n == note),
        "{:?}",
        c.groups[0].notes
    );
    assert!(markdown(&c, &RenderOptions::default()).contains(&format!("> ⚠️ {note}")));
    // The reverse, and a move of less than tenfold (6 → 48 is eightfold) says nothing.
    let back = compare(&eager, &graphs, &Policy::default()).unwrap();
    assert!(
        back.groups[0].notes.iter().any(|n| n.starts_with(
            "launches per step 48 → 1: the candidate likely replays CUDA graphs where the baseline ran eager"
        )),
        "{:?}",
        back.groups[0].notes
    );
    let six = launches(generate(&Spec::default()), 6.0);
    let c = compare(&six, &eager, &Policy::default()).unwrap();
    assert!(
        !c.groups[0].notes.iter().any(|n| n.contains("likely")),
        "{:?}",
        c.groups[0].notes
    );
}

#[test]
fn a_kernel_that_fails_in_a_passing_category_says_which_thresholds_applied() {
    // rms_norm_kernel, alone in `norm`, 17.5% slower: +7 µs per step is beyond the kernel
    // threshold (10% & 5 µs) and within the category's (5% & 10 µs).
    let b = generate(&Spec::default());
    let slow = generate(&Spec {
        seed: 2,
        slow: Some(("rms_norm_kernel", 1.175)),
        ..Spec::default()
    });
    let c = compare(&b, &slow, &Policy::default()).unwrap();
    let g = &c.groups[0];
    let k = g
        .kernels
        .iter()
        .find(|k| k.short_name == "rms_norm_kernel")
        .unwrap();
    let cat = g.categories.iter().find(|c| c.category == "norm").unwrap();
    assert_eq!(
        k.change.verdict,
        stepgate::wire::gate::RowVerdict::Regression
    );
    assert_eq!(cat.change.verdict, stepgate::wire::gate::RowVerdict::Ok);
    let md = markdown(&c, &RenderOptions::default());
    let line = md
        .lines()
        .find(|l| l.contains("category norm is ok while kernel `rms_norm_kernel` regressed"))
        .unwrap_or_else(|| panic!("no threshold line in:\n{md}"));
    assert!(
        line.ends_with(
            "a kernel is judged against the kernel threshold 10% & 5.0 µs, its category \
             against the category threshold 5% & 10.0 µs"
        ),
        "{line}"
    );
    let t = text(&c, &RenderOptions::default());
    assert!(
        t.contains("note: category norm is ok while kernel rms_norm_kernel regressed"),
        "{t}"
    );
    // Categories that moved with their kernels get no such line.
    assert_eq!(md.matches("is ok while").count(), 1, "{md}");
}

#[test]
fn an_unavailable_baseline_claims_no_missing_group() {
    // Two runs in a dataset, three needed: the history side cannot be built.
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    for (i, seed) in [(1, 1), (2, 2)] {
        let rep = dir.path().join(format!("run{i}.sqlite"));
        common::jittered_decode_report(&rep, 6, 12, seed, "NVIDIA H100 80GB HBM3", &|_| 1.0);
        let (code, _, err) = common::run(&["export", rep.to_str().unwrap(), "-o", &p("ds")]);
        assert_eq!(code, 0, "{err}");
    }
    let (code, _, err) = common::run(&[
        "baseline",
        "record",
        &p("run2.sqlite"),
        "-o",
        &p("cand.json"),
    ]);
    assert_eq!(code, 0, "{err}");
    let cand = read_baseline(&dir.path().join("cand.json")).unwrap();
    let h = stepgate::dataset::history_baseline(
        &dir.path().join("ds"),
        &stepgate::dataset::HistoryQuery {
            filter: stepgate::dataset::Filter::parse(&[]).unwrap(),
            last: 2,
            mode: stepgate::dataset::HistoryMode::Steps,
            min_runs: 3,
            gpu: cand.meta.gpu_name.clone(),
            model: None,
            candidate: None,
            classes: false,
            metrics: stepgate::baseline::metrics::Metrics::default(),
        },
    )
    .unwrap();
    assert!(h.too_few, "{}", h.note);
    // Compared as an empty baseline (what a gate did), the report says the candidate's
    // group is missing from the baseline: false, the baseline was never built.
    let policy = Policy::default();
    let empty = compare(&h.baseline, &cand, &policy).unwrap();
    let o = RenderOptions::default();
    assert!(markdown(&empty, &o).contains("present on both sides"));
    // As an unavailable side: inconclusive for the reason given, and nothing else claimed.
    let c = compare_side(BaselineSide::Unavailable(&h.note), &cand, &policy).unwrap();
    assert_eq!(c.verdict, Verdict::Inconclusive);
    assert_eq!(c.exit_code, 3);
    assert!(c.one_sided.is_empty() && c.groups.is_empty());
    for m in [markdown(&c, &o), text(&c, &o)] {
        assert!(
            m.lines().next().unwrap().contains(&format!(
                "⚠️ Inconclusive — baseline unavailable: {}",
                h.note
            )),
            "{m}"
        );
        for claim in [
            "present on both sides",
            "not compared",
            "Not compared",
            "candidate only",
        ] {
            assert!(!m.contains(claim), "{claim:?} in:\n{m}");
        }
    }
    let json = stepgate::report::to_json(&c);
    assert!(json.contains("\"baseline_unavailable\""), "{json}");
    // The command says the same: `gate --history … --last 2` with the default three runs
    // needed.
    let (code, out, err) = common::run(&[
        "gate",
        &p("run2.sqlite"),
        "--history",
        &p("ds"),
        "--last",
        "2",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    // run2 is itself one of the dataset's two runs: it is left out of its own history,
    // with a warning, so one run matches.
    assert!(
        out.starts_with("⚠️ Inconclusive — baseline unavailable: history: 1 matching run(s)"),
        "{out}"
    );
    assert!(
        out.contains(
            "it is an export of this very report, and a run is never part of its own history"
        ),
        "{out}"
    );
    for claim in ["present on both sides", "not compared", "candidate only"] {
        assert!(!out.contains(claim), "{claim:?} in:\n{out}");
    }
}

/// A gate of `cand` against the default baseline with a policy file holding `policy`.
fn gate_with_policy(policy: &str, slow: Option<(&'static str, f64)>) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    write_baseline(&dir.path().join("base.json"), &generate(&Spec::default())).unwrap();
    let cand = generate(&Spec {
        seed: 2,
        slow,
        ..Spec::default()
    });
    write_baseline(&dir.path().join("cand.json"), &cand).unwrap();
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    common::run(&[
        "gate",
        &p("cand.json"),
        "--baseline",
        &p("base.json"),
        "--policy",
        &p("policy.toml"),
        "--format",
        "markdown",
    ])
}

#[test]
fn policy_rules_pick_kernels_by_part_of_the_name_and_say_how_many() {
    // `act_and_mul` names a 130-character template; report-only, so its 20% does not fail.
    let (code, md, err) = gate_with_policy(
        "[[kernel]]\nname = \"act_and_mul\"\ngate = false\n\n[[kernel]]\nname = \"re:^ncclDevKernel_\"\nrel = 0.2\n",
        Some((ACT, 1.2)),
    );
    assert!(ACT_FULL.len() > 100);
    assert!(md.contains("Policy \\[\\[kernel]] rules: `act_and_mul` selects 1 kernel; `re:^ncclDevKernel_` selects 1 kernel."), "{md}");
    assert!(md.contains("regression (not gated)"), "{md}");
    assert_eq!(
        code, 1,
        "the act category (elementwise) still regresses: {md}{err}"
    );
    assert!(
        !md.lines().next().unwrap().contains("kernel act_and_mul"),
        "{md}"
    );
    // A rule that selects nothing is an input error, on one line.
    let (code, out, err) = gate_with_policy("[[kernel]]\nname = \"fused_moe\"\n", None);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "policy [[kernel]] rule 1: kernel \"fused_moe\" matches none of the 6 kernel name(s)"
        ),
        "{err}"
    );
    // Unless the rule may select none (a policy shared with runs that have the kernel).
    let (code, md, err) =
        gate_with_policy("[[kernel]]\nname = \"fused_moe\"\noptional = true\n", None);
    assert_eq!(code, 0, "{md}{err}");
    assert!(
        md.contains("`fused_moe` selects 0 kernels (optional)."),
        "{md}"
    );
}

#[test]
fn wide_tables_show_full_names() {
    let b = generate(&Spec::default());
    let slow = generate(&Spec {
        seed: 2,
        slow: Some((ACT, 1.2)),
        ..Spec::default()
    });
    let c = compare(&b, &slow, &Policy::default()).unwrap();
    let narrow = RenderOptions::default();
    let wide = RenderOptions {
        wide: true,
        ..RenderOptions::default()
    };
    let row = |s: &str, start: &str| {
        s.lines()
            .find(|l| l.starts_with(start) && l.contains("regression"))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no {start} row in:\n{s}"))
    };
    assert!(row(&markdown(&c, &narrow), "| `act_and_mul_kernel` |").len() < 200);
    let md = markdown(&c, &wide);
    row(&md, &format!("| `{ACT_FULL}` |"));
    assert!(
        !md.contains("Full kernel names"),
        "the tables have them: {md}"
    );
    // The terminal shows labels (cut to 60 characters), or the full names when wide.
    let gemm = KERNELS[0].0;
    assert!(!text(&c, &narrow).contains(gemm));
    assert!(text(&c, &wide).contains(gemm));
}
