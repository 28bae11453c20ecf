//! A pull request's author names the kernels: what the gate writes for a PR comment, the
//! job summary and the HTML page must show those names as text and never as markup — no
//! raw HTML (an `<img>`, a `<!--` that hides the rest, a `</details>` that closes a fold),
//! no `@team` mention, no `#123` link, no code span broken by backticks. Judged by
//! rendering the markdown with pulldown-cmark, as GitHub's CommonMark parser would.

use std::path::Path;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::common;

const HOSTILE: &str = "void e<1>(<img src=x onerror=alert(1)> @org/team #4242 </details> <!--)";
const TICKS: &str = "void tick``s<2>(int)";
const H100: &str = "NVIDIA H100 80GB HBM3";

/// A vLLM CUDA-graph decode report (24 kernels × 60 steps, ±0.5% jitter) whose kernels
/// 0 and 1 are renamed to the hostile names and scaled by `slow`.
fn report(path: &Path, seed: u64, slow: f64) {
    report_named(path, seed, slow, [HOSTILE, TICKS]);
}

/// The same report with kernels 0 and 1 named `names`.
pub(crate) fn report_named(path: &Path, seed: u64, slow: f64, names: [&str; 2]) {
    report_on(path, seed, slow, names, H100);
}

/// The same report on a GPU named `gpu` (the capture's `TARGET_INFO_GPU` name).
fn report_on(path: &Path, seed: u64, slow: f64, names: [&str; 2], gpu: &str) {
    use rand::{Rng, SeedableRng};
    use stepgate::synth::workload::*;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let name = vllm_execute_detailed(32, [0; 5], [32, 32, 32 * 2048, 32, 32 * 2048]);
    let base = decode_kernels(24);
    let specs = (0..60)
        .map(|_| {
            let ks = base
                .iter()
                .enumerate()
                .map(|(k, spec)| {
                    let jitter = 1.0 + rng.random_range(-0.005..0.005);
                    let (n, scale) = match k {
                        0 => (names[0], slow),
                        1 => (names[1], slow),
                        _ => (spec.name.as_str(), 1.0),
                    };
                    KernelSpec::new(n, (spec.duration_ns as f64 * scale * jitter) as i64)
                })
                .collect();
            let mut s = StepSpec::new(Some(&name), LaunchMode::GraphNode, ks);
            s.host_gap_before_ns = 50_000;
            s
        })
        .collect();
    let mut scn = Scenario::new(stepgate::synth::Layout::Nsys2026_2, 1, specs);
    scn.gpu_name = gpu.to_owned();
    build(&scn, path).expect("generated report");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// What a renderer makes of the markdown: the raw HTML it would pass on, the text outside
/// code (where GitHub links mentions and references), the code spans, and each block's
/// visible text (text and code, the zero-width spaces that break mentions removed).
struct Rendered {
    html: Vec<String>,
    text: String,
    code: Vec<String>,
    blocks: Vec<String>,
}

fn render(md: &str) -> Rendered {
    let mut r = Rendered {
        html: Vec::new(),
        text: String::new(),
        code: Vec::new(),
        blocks: Vec::new(),
    };
    let mut block = String::new();
    for ev in Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match ev {
            Event::Html(h) | Event::InlineHtml(h) => r.html.push(h.to_string()),
            Event::Text(t) => {
                r.text.push_str(&t);
                block.push_str(&t);
            }
            Event::Code(c) => {
                r.code.push(c.to_string());
                block.push_str(&c);
            }
            Event::Start(Tag::Paragraph | Tag::Heading { .. } | Tag::Item | Tag::TableCell) => {
                block.clear();
            }
            Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::TableCell,
            ) => {
                r.blocks.push(block.replace('\u{200b}', ""));
                block.clear();
            }
            _ => {}
        }
    }
    r
}

fn assert_inert(md: &str) {
    let r = render(md);
    // The only raw HTML is the document's own folds and footnote, balanced.
    for h in &r.html {
        let h = h.trim();
        assert!(
            !h.contains("img") && !h.contains("<!--") && !h.contains("onerror"),
            "raw HTML from a name: {h:?}\n{md}"
        );
        let allowed = h
            .replace("<details>", "")
            .replace("</details>", "")
            .replace("<summary>", "")
            .replace("</summary>", "")
            .replace("<sub>", "")
            .replace("</sub>", "");
        assert!(!allowed.contains('<'), "unexpected HTML {h:?} in\n{md}");
    }
    let opened: usize = r.html.iter().map(|h| h.matches("<details>").count()).sum();
    let closed: usize = r.html.iter().map(|h| h.matches("</details>").count()).sum();
    assert_eq!(opened, closed, "{md}");
    // GitHub links mentions and references in text outside code.
    for at in ["@org", "@octo"] {
        assert!(!r.text.contains(at), "a mention: {}", r.text);
    }
    for issue in ["#4242", "#4243"] {
        assert!(!r.text.contains(issue), "an issue link: {}", r.text);
    }
    // The comment-hiding sequence is nowhere outside code spans in the source either.
    let outside_code: String = md.split('`').step_by(2).collect::<Vec<_>>().join("");
    assert!(!outside_code.contains("<!--"), "{md}");
    assert!(!outside_code.contains("<img"), "{md}");
}

#[test]
fn hostile_kernel_names_render_as_text_in_the_gate_markdown_and_html() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base.sqlite");
    report(&base, 1, 1.0);
    let json = d.path().join("base.json");
    let (code, _, err) = common::run(&["baseline", "record", s(&base), "-o", s(&json)]);
    assert_eq!(code, 0, "{err}");
    // The candidate's file name is the author's too.
    let cand = d.path().join("pr @octo-team #4243 <!-- x.sqlite");
    // Four times slower: the hostile kernel's change (+6.3 µs) is beyond 5 µs and 10%.
    report(&cand, 2, 4.0);
    let md = d.path().join("gate.md");
    let html = d.path().join("gate.html");
    let (code, out, err) = common::run(&[
        "gate",
        s(&cand),
        "--baseline",
        s(&json),
        "--markdown",
        s(&md),
        "--html",
        s(&html),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let text = std::fs::read_to_string(&md).unwrap();
    assert_inert(&text);
    let r = render(&text);
    // Both names are shown whole, each as one code span (the full-names list) ...
    assert!(r.code.iter().any(|c| c == HOSTILE), "{:?}\n{text}", r.code);
    assert!(r.code.iter().any(|c| c == TICKS), "{:?}\n{text}", r.code);
    // ... and the reasons under the headline quote them as text, whole.
    let heading = r.blocks.first().unwrap();
    assert!(heading.starts_with("❌ Regression"), "{heading}");
    for name in [HOSTILE, TICKS] {
        let reason = format!("decode bs=32: kernel {name} +");
        assert!(
            r.blocks.iter().any(|b| b.starts_with(&reason)),
            "{reason}\n{text}"
        );
    }
    // The page escapes the names as HTML text.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains("<img src=x"), "raw <img> on the page");
    assert!(!page.contains("@org/team #4242 </details> <!--)"));
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
}

#[test]
fn markdown_escapes_round_trip_through_a_commonmark_renderer() {
    use stepgate::report::escape::{md_code, md_inline, md_text};
    for name in [
        HOSTILE,
        TICKS,
        "``",
        "`a`",
        " x ",
        "*a* _b_ [c](d) ~~e~~ \\f | g & h",
        "# heading",
        "- item",
        "1. item",
        "> quote",
        "a <b>c</b>",
        "a &amp; b & c &#64;",
        "- x",
        "---",
        "===",
        "+ y",
    ] {
        let t = render(&md_text(name));
        assert_eq!(t.blocks.concat(), name.trim(), "md_text {name:?}");
        assert!(t.html.is_empty(), "{name:?}");
        let c = render(&format!("x {}", md_code(name)));
        assert_eq!(c.code, vec![name.to_owned()], "md_code {name:?}");
        let i = render(&md_inline(&format!(
            "kernel {} is slow: {name}",
            md_code(name)
        )));
        assert!(i.html.is_empty(), "{name:?}");
        // Backticks in the text part may pair up into a code span: shown, never markup.
        if !name.contains('`') {
            assert_eq!(
                i.blocks.concat(),
                format!("kernel {name} is slow: {name}").trim_end(),
                "md_inline {name:?}"
            );
        }
    }
}

/// Every markdown a command writes, fed the author's strings wherever the command takes them
/// (kernel names, the report's file name, dataset labels, policy selectors), renders inert.
/// A new markdown writer that bypasses `report::escape` for any of these fails here, whatever
/// the command: the check is on the output, not on how it was built.
#[test]
fn every_markdown_output_renders_the_authors_strings_as_text() {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().join("base @octo-team #4243 <!-- b.sqlite");
    report(&base, 1, 1.0);
    let cand = d.path().join("pr @octo-team #4243 <!-- x.sqlite");
    report(&cand, 2, 4.0);
    let policy = d.path().join("policy @octo-team #4243.toml");
    std::fs::write(
        &policy,
        format!(
            "[[kernel]]\nname = {:?}\nrel = 0.2\n\n[[kernel]]\nname = \"<!-- @org/team #4242\"\noptional = true\n",
            HOSTILE
        ),
    )
    .unwrap();
    let ds = d.path().join("history");
    for (r, sha) in [(&base, "a1"), (&cand, "b2")] {
        let (code, _, err) = common::run(&[
            "export",
            s(r),
            "-o",
            s(&ds),
            "--label",
            &format!("git_sha={sha}"),
            "--label",
            "note=<!-- @org/team #4242 </details> <img src=x>",
        ]);
        assert_eq!(code, 0, "{err}");
    }
    // The GPU name is the capture's too (doctor names it, with no preset to match).
    let odd_gpu = d.path().join("gpu.sqlite");
    report_on(
        &odd_gpu,
        3,
        1.0,
        [HOSTILE, TICKS],
        "H100 @org/team #4242 <!--",
    );
    // A model config whose directory and `_name_or_path` are the author's (floor and
    // capacity name the model from them).
    let cfg_dir = d.path().join("cfg @org/team #4242 <!--");
    std::fs::create_dir_all(&cfg_dir).unwrap();
    let cfg = cfg_dir.join("config.json");
    std::fs::write(
        &cfg,
        r#"{"_name_or_path": "m @org/team #4242 <!-- <img src=x>", "model_type": "llama",
            "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
            "torch_dtype": "bfloat16", "head_dim": 128}"#,
    )
    .unwrap();
    let diff_md = d.path().join("diff.md");
    let runs: Vec<(&str, Vec<&str>)> = vec![
        (
            "floor",
            vec![
                "floor",
                "--model-config",
                s(&cfg),
                "--gpu",
                "h100",
                "--batch",
                "8",
                "--context",
                "1024",
                "--format",
                "markdown",
            ],
        ),
        (
            "capacity",
            vec![
                "capacity",
                "--model-config",
                s(&cfg),
                "--gpu",
                "h100",
                "--format",
                "markdown",
            ],
        ),
        ("analyze", vec!["analyze", s(&cand), "--format", "markdown"]),
        ("steps", vec!["steps", s(&cand), "--format", "markdown"]),
        (
            "doctor",
            vec!["doctor", s(&odd_gpu), "--format", "markdown"],
        ),
        (
            "policy check",
            vec![
                "policy",
                "check",
                s(&policy),
                s(&cand),
                "--format",
                "markdown",
            ],
        ),
        (
            "trend",
            vec![
                "trend",
                s(&ds),
                "--by",
                "label.note",
                "--format",
                "markdown",
            ],
        ),
        (
            "diff",
            vec!["diff", s(&base), s(&cand), "--markdown", s(&diff_md)],
        ),
    ];
    for (what, args) in runs {
        let (code, out, err) = common::run(&args);
        assert!(matches!(code, 0 | 1), "{what}: exit {code}\n{err}");
        let md = if what == "diff" {
            std::fs::read_to_string(&diff_md).unwrap()
        } else {
            out
        };
        assert!(!md.trim().is_empty(), "{what} wrote no markdown");
        assert_inert(&md);
        // The strings did reach the output (else the check above proves nothing).
        let shown: String = render(&md).blocks.concat();
        assert!(
            shown.contains("@octo-team #4243 <!--")
                || shown.contains("@org/team #4242")
                || shown.contains("team #4242 <!--"),
            "{what}: no hostile string in\n{md}"
        );
    }
    // The HTML pages of the same commands: the author's markup arrives as text.
    let page = d.path().join("page.html");
    let pages: Vec<(&str, Vec<&str>)> = vec![
        ("analyze", vec!["analyze", s(&cand), "--html", s(&page)]),
        ("steps", vec!["steps", s(&cand), "--html", s(&page)]),
        ("diff", vec!["diff", s(&base), s(&cand), "--html", s(&page)]),
        (
            "trend",
            vec!["trend", s(&ds), "--by", "label.note", "--html", s(&page)],
        ),
    ];
    for (what, args) in pages {
        let (code, _, err) = common::run(&args);
        assert!(matches!(code, 0 | 1), "{what}: exit {code}\n{err}");
        let html = std::fs::read_to_string(&page).unwrap();
        for raw in [
            "<img src=x",
            "<!-- @org",
            "<!-- b.sqlite",
            "<!-- x.sqlite",
            "</details> <",
        ] {
            assert!(!html.contains(raw), "{what}: raw {raw:?} in its page");
        }
        assert!(
            html.contains("&lt;img src=x") || html.contains("&lt;!--"),
            "{what}: no hostile string reached the page"
        );
        std::fs::remove_file(&page).unwrap();
    }
}

/// The commands whose markdown the two tests above check on the author's strings
/// (`gate` in `hostile_kernel_names_render_as_text_in_the_gate_markdown_and_html`).
const SWEPT: &[&str] = &[
    "analyze",
    "steps",
    "floor",
    "capacity",
    "gate",
    "diff",
    "doctor",
    "policy check",
    "trend",
];

/// Commands that write markdown from nothing an author controls, and why.
const NO_AUTHOR_STRINGS: &[(&str, &str)] = &[
    ("presets", "the built-in GPU and model tables only"),
    (
        "launch-probe",
        "this machine's own timings and driver version",
    ),
    (
        "capture",
        "the operator's own flags and the engine it was pointed at, not a pull request's files",
    ),
];

/// The subcommands `stepgate CMD --help` lists (one level: `policy check`, `dataset vacuum`).
fn subcommands(prefix: &[&str]) -> Vec<String> {
    let mut a = prefix.to_vec();
    a.push("--help");
    let (_, out, _) = common::run(&a);
    let mut names = Vec::new();
    let mut inside = false;
    for l in out.lines() {
        if l.starts_with("Commands:") {
            inside = true;
            continue;
        }
        if inside && !l.starts_with("  ") {
            break;
        }
        // "  name   text"; continuation lines are indented further.
        if inside && !l.starts_with("   ") {
            if let Some(n) = l.split_whitespace().next() {
                if n != "help" {
                    names.push(n.to_owned());
                }
            }
        }
    }
    names
}

/// A new command or flag that writes markdown must join the sweep (or say why no author
/// string can reach it): the escape check cannot be skipped by adding a writer.
#[test]
fn every_command_that_writes_markdown_is_in_the_hostile_sweep() {
    let mut writers = Vec::new();
    for top in subcommands(&[]) {
        let subs = subcommands(&[&top]);
        let cmds: Vec<String> = if subs.is_empty() {
            vec![top.clone()]
        } else {
            subs.iter().map(|x| format!("{top} {x}")).collect()
        };
        for c in cmds {
            let mut a: Vec<&str> = c.split(' ').collect();
            a.push("--help");
            let (_, out, _) = common::run(&a);
            if out.to_lowercase().contains("markdown") {
                writers.push(c);
            }
        }
    }
    assert!(writers.len() >= SWEPT.len(), "{writers:?}");
    for w in &writers {
        assert!(
            SWEPT.contains(&w.as_str()) || NO_AUTHOR_STRINGS.iter().any(|(n, _)| n == w),
            "`{w}` writes markdown but no hostile test feeds it the author's strings: add it to the sweep"
        );
    }
    for c in SWEPT {
        assert!(
            writers.iter().any(|w| w == c),
            "{c} no longer writes markdown?"
        );
    }
}
