//! What the gate says about policies: no missing group claimed for an unavailable baseline, kernels picked by part of their name.

use super::*;

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
    let cand = read_baseline(
        &dir.path().join("cand.json"),
        &stepgate::store::StoreConfig::default(),
    )
    .unwrap();
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
            store: stepgate::store::StoreConfig::default(),
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
    write_baseline(
        &dir.path().join("base.json"),
        &stepgate::store::StoreConfig::default(),
        &generate(&Spec::default()),
    )
    .unwrap();
    let cand = generate(&Spec {
        seed: 2,
        slow,
        ..Spec::default()
    });
    write_baseline(
        &dir.path().join("cand.json"),
        &stepgate::store::StoreConfig::default(),
        &cand,
    )
    .unwrap();
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
