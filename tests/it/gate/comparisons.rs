//! Comparing a run against a baseline: bad files, policy overrides, new and vanished kernels, context shifts, one-sided groups, hand-computed shifts, intervals and snapshots.

use super::*;

#[test]
fn bad_baseline_files_get_a_clear_error() {
    let c = Case::new();
    let cand = c.write("cand.json", &Spec::default());
    let good = std::fs::read(c.path("base.json")).unwrap();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("half.json", good[..good.len() / 2].to_vec(), "is truncated"),
        (
            "corrupt.json",
            b"\x00\x01garbage".to_vec(),
            "is not valid JSON",
        ),
        (
            "foreign.json",
            br#"{"traceEvents": [], "schemaVersion": 1}"#.to_vec(),
            "is not a stepgate baseline",
        ),
        (
            "newer.json",
            String::from_utf8(good.clone())
                .unwrap()
                .replacen("\"schema_version\":1", "\"schema_version\":2", 1)
                .into_bytes(),
            "newer than this stepgate reads",
        ),
    ];
    for (name, bytes, want) in cases {
        let p = c.path(name);
        std::fs::write(&p, bytes).unwrap();
        let (code, out, err) = common::run(&[
            "gate",
            cand.to_str().unwrap(),
            "--baseline",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
    }
    let (code, _, err) = c.gate(&c.path("missing.json"), &[]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn policy_overrides_change_the_verdict() {
    let c = Case::new();
    let slow = c.write(
        "slow.json",
        &Spec {
            seed: 2,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let run_with = |name: &str, text: &str, cand: &Path| {
        let p = c.path(name);
        std::fs::write(&p, text).unwrap();
        c.gate(cand, &["--policy", p.to_str().unwrap()]).0
    };
    // The slower kernel also moves its category (elementwise: 68 → 80 µs, +17.6%), which
    // the category check catches on its own.
    let loose_cat = "[[category]]\nname = \"elementwise\"\nrel = 0.2\n";
    assert_eq!(
        run_with(
            "p0.toml",
            "[[kernel]]\nname = \"act_and_mul_kernel\"\ngate = false\n",
            &slow
        ),
        1
    );
    // Exact name, report only (and the category loosened).
    let p1 = format!("[[kernel]]\nname = \"act_and_mul_kernel\"\ngate = false\n{loose_cat}");
    assert_eq!(run_with("p1.toml", &p1, &slow), 0);
    // Regex over the full name with a looser relative threshold (25% > the 20% change).
    let p2 = format!("[[kernel]]\nregex = \"vllm::act_and_mul\"\nrel = 0.25\n{loose_cat}");
    assert_eq!(run_with("p2.toml", &p2, &slow), 0);
    // A per-category override reaches the kernels of that category.
    assert_eq!(
        run_with(
            "p3.json",
            r#"{"category": [{"name": "elementwise", "rel": 0.5}]}"#,
            &slow
        ),
        0
    );
    // A rule for another kernel leaves this one at the default: still a regression.
    assert_eq!(
        run_with(
            "p4.toml",
            "[[kernel]]\nname = \"rms_norm_kernel\"\ngate = false\n",
            &slow
        ),
        1
    );
    // Tightening the step threshold turns a real +1% into a regression.
    let one = c.write(
        "one.json",
        &Spec {
            seed: 3,
            scale: 1.01,
            ..Spec::default()
        },
    );
    assert_eq!(
        run_with(
            "p5.toml",
            "[metrics.wall_ns]\nrel = 0.002\nabs = 1000\n",
            &one
        ),
        1
    );
    // A typo is an input error, not a silently looser gate.
    assert_eq!(run_with("p6.toml", "[kernel]\nrel = 0.5\n", &slow), 2);
}

#[test]
fn new_and_vanished_kernels_are_reported() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            seed: 4,
            extra_kernel: Some(("new_dequant_kernel", 50_000.0)),
            drop_kernel: Some("rms_norm_kernel"),
            ..Spec::default()
        },
    );
    let (code, v) = c.gate_json(&cand, &[]);
    assert_eq!(code, 1, "{v}");
    let g = &v["groups"][0];
    assert_eq!(g["new_kernels"][0]["short_name"], "new_dequant_kernel");
    assert_eq!(g["new_kernels"][0]["gated"], true);
    // 50 µs of a busy time of about 1,758 − 40 + 50 = 1,768 µs per step: 2.8%.
    let share = g["new_kernels"][0]["share_of_busy"].as_f64().unwrap();
    assert!((share - 50.0 / 1768.0).abs() < 0.002, "{share}");
    assert_eq!(g["vanished_kernels"][0]["short_name"], "rms_norm_kernel");
    // Small kernels below 1% of busy time are not listed: drop the 8 µs triton kernel.
    let cand = c.write(
        "small.json",
        &Spec {
            drop_kernel: Some("triton_poi_fused_add_0"),
            ..Spec::default()
        },
    );
    let (code, v) = c.gate_json(&cand, &[]);
    assert_eq!(code, 0);
    assert!(v["groups"][0]["vanished_kernels"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn context_shift_hands_the_verdict_to_mbu() {
    let c = Case::new();
    let base_mbu = c.write(
        "bm.json",
        &Spec {
            mbu: true,
            context: Some(1000.0),
            ..Spec::default()
        },
    );
    // Longer contexts, 10% slower everything: raw times regress, MBU (same floor here)
    // drops 9% too, so MBU still judges a regression.
    let cand = c.write(
        "cm.json",
        &Spec {
            seed: 5,
            mbu: true,
            context: Some(1300.0),
            scale: 1.10,
            ..Spec::default()
        },
    );
    let args = |cand: &Path, base: &Path| {
        let (code, out, _) = common::run(&[
            "gate",
            cand.to_str().unwrap(),
            "--baseline",
            base.to_str().unwrap(),
            "--format",
            "json",
        ]);
        (
            code,
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        )
    };
    let (code, v) = args(&cand, &base_mbu);
    assert_eq!(code, 1);
    assert_eq!(
        v["reasons"][0].as_str().unwrap().split(' ').nth(2),
        Some("MBU"),
        "{v}"
    );
    assert_eq!(metric_row(&v, metric::WALL_NS)["gated"], false);
    assert!(v["groups"][0]["notes"][0]
        .as_str()
        .unwrap()
        .contains("+30.0%"));
    // Without MBU on either side the group cannot be judged: inconclusive.
    let base = c.write(
        "b2.json",
        &Spec {
            context: Some(1000.0),
            ..Spec::default()
        },
    );
    let cand = c.write(
        "c2.json",
        &Spec {
            seed: 5,
            context: Some(1300.0),
            scale: 1.10,
            ..Spec::default()
        },
    );
    let (code, v) = args(&cand, &base);
    assert_eq!(code, 3, "{v}");
    // A model mismatch is incomparable (exit 6).
    let mut other = generate(&Spec {
        mbu: true,
        ..Spec::default()
    });
    other.meta.model = Some("qwen3-8b".into());
    let p = c.path("other_model.json");
    write_baseline(&p, &stepgate::store::StoreConfig::default(), &other).unwrap();
    let (code, out, _) = common::run(&[
        "gate",
        p.to_str().unwrap(),
        "--baseline",
        base_mbu.to_str().unwrap(),
    ]);
    assert_eq!(code, 6);
    assert!(out.contains("model mismatch"), "{out}");
}

#[test]
fn one_sided_groups_are_reported_not_compared() {
    let mut base = generate(&Spec::default());
    let mut prefill = base.samples.groups[0].clone();
    prefill.step_kind = "prefill".into();
    prefill.batch_size = Some(1);
    base.samples.groups.push(prefill);
    let cand = generate(&Spec {
        seed: 2,
        ..Spec::default()
    });
    let cmp = compare(&base, &cand, &Policy::default()).unwrap();
    assert_eq!(cmp.groups.len(), 1);
    assert_eq!(cmp.one_sided.len(), 1);
    assert_eq!(cmp.one_sided[0].label, "prefill bs=1");
    assert_eq!(cmp.exit_code, 0);
    // Nothing in common at all: inconclusive.
    let mut lone = cand.clone();
    lone.samples.groups[0].batch_size = Some(64);
    let cmp = compare(&base, &lone, &Policy::default()).unwrap();
    assert_eq!(cmp.exit_code, 3);
}

/// Hand-computed medians on small fixed data: baseline 10..=19 µs (median 14.5 µs),
/// candidate the same + 3 µs except one outlier (median of {13..21, 95} = 17.5 µs).
#[test]
fn median_shift_matches_a_hand_computation() {
    let base_v: Vec<f64> = (10..20).map(|i| f64::from(i) * 1000.0).collect();
    let mut cand_v: Vec<f64> = base_v.iter().map(|v| v + 3000.0).collect();
    cand_v[9] = 95_000.0;
    let mk = |v: &Vec<f64>| {
        let mut g = Group::new("decode", Some(1));
        g.metrics.insert(metric::WALL_NS.into(), v.clone());
        Baseline::new(BaselineMeta::default(), SampleSet { groups: vec![g] })
    };
    let mut p = Policy::default();
    p.metrics.get_mut(metric::WALL_NS).unwrap().abs = 1000.0;
    let cmp = compare(&mk(&base_v), &mk(&cand_v), &p).unwrap();
    let ch = &cmp.groups[0].metrics[0].change;
    assert_eq!(ch.baseline_median, Some(14_500.0));
    assert_eq!(ch.candidate_median, Some(17_500.0));
    assert_eq!(ch.change, Some(3_000.0));
    assert_eq!(ch.change_rel, Some(17_500.0 / 14_500.0 - 1.0));
    // Every resample median of 10 values lies in [10, 19] µs (baseline) and [13, 95] µs
    // (candidate), so the interval of the shift lies within [13−19, 95−10] µs, and it
    // must contain the observed 3 µs.
    let [lo, hi] = ch.interval.unwrap();
    assert!(
        (-6_000.0..=3_000.0).contains(&lo) && (3_000.0..=85_000.0).contains(&hi),
        "{lo} {hi}"
    );
}

/// Coverage: over 60 independent pairs with a known true shift of +5% in the median, the
/// 95% interval must contain it in most of them (binomial: ≥ 52 of 60 unless the method is
/// badly miscalibrated).
#[test]
fn intervals_cover_a_known_shift() {
    let mut covered = 0;
    let p = Policy {
        resamples: 2000,
        ..Policy::default()
    };
    for seed in 0..60u64 {
        let mut rng = SmallRng::seed_from_u64(1000 + seed);
        // Uniform(900, 1100): true median 1000; candidate 1050.
        let mut draw = |shift: f64| -> Vec<f64> {
            (0..60)
                .map(|_| 900.0 + 200.0 * rng.random::<f64>() + shift)
                .collect()
        };
        let (b, c) = (draw(0.0), draw(50.0));
        let mk = |v: Vec<f64>| {
            let mut g = Group::new("decode", None);
            g.metrics.insert(metric::WALL_NS.into(), v);
            Baseline::new(BaselineMeta::default(), SampleSet { groups: vec![g] })
        };
        let cmp = compare(&mk(b), &mk(c), &p).unwrap();
        let [lo, hi] = cmp.groups[0].metrics[0].change.interval_rel.unwrap();
        if lo <= 0.05 && 0.05 <= hi {
            covered += 1;
        }
    }
    println!("covered {covered} of 60");
    assert!(covered >= 52, "covered {covered} of 60");
}

#[test]
fn same_inputs_give_the_same_report() {
    let c = Case::new();
    let cand = c.write(
        "cand.json",
        &Spec {
            seed: 9,
            slow: Some((ACT, 1.2)),
            ..Spec::default()
        },
    );
    let a = c.gate(&cand, &["--format", "json"]).1;
    let b = c.gate(&cand, &["--format", "json"]).1;
    assert_eq!(a, b);
}

/// Six significant digits: the snapshot pins the layout, not the last bits of a libm `ln`
/// inside the bootstrap, which may differ between platforms.
fn round_floats(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap();
            let r: f64 = format!("{x:.5e}").parse().unwrap();
            *v = serde_json::json!(r);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(round_floats),
        serde_json::Value::Object(o) => o.values_mut().for_each(round_floats),
        _ => {}
    }
}

/// Snapshots pin the formatting of the markdown and JSON reports (a small run so the
/// JSON stays readable).
#[test]
fn report_snapshots() {
    let c = tempfile::tempdir().unwrap();
    let base = c.path().join("base.json");
    let cand = c.path().join("cand.json");
    let small = Spec {
        steps: 40,
        ..Spec::default()
    };
    write_baseline(
        &base,
        &stepgate::store::StoreConfig::default(),
        &generate(&Spec {
            mbu: true,
            context: Some(1000.0),
            ..small.clone()
        }),
    )
    .unwrap();
    write_baseline(
        &cand,
        &stepgate::store::StoreConfig::default(),
        &generate(&Spec {
            seed: 2,
            mbu: true,
            context: Some(1010.0),
            slow: Some((ACT, 1.2)),
            extra_kernel: Some(("new_dequant_kernel", 50_000.0)),
            drop_kernel: Some("rms_norm_kernel"),
            ..small
        }),
    )
    .unwrap();
    let md_path = c.path().join("report.md");
    let (code, json, err) = common::run(&[
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "--format",
        "json",
        "--markdown",
        md_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{err}");
    let dir = c.path().display().to_string();
    let md = std::fs::read_to_string(&md_path)
        .unwrap()
        .replace(&dir, "[TMP]");
    insta::assert_snapshot!("gate_markdown", md);
    let mut v: serde_json::Value = serde_json::from_str(&json.replace(&dir, "[TMP]")).unwrap();
    round_floats(&mut v);
    insta::assert_json_snapshot!("gate_json", v);
    let (_, text, _) = common::run(&[
        "gate",
        cand.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
    ]);
    insta::assert_snapshot!("gate_table", text.replace(&dir, "[TMP]"));
}

/// The documented example policy parses, and says what its comments say.
#[test]
fn example_policy_parses() {
    let p = Policy::from_file(&common::root().join("examples/policy.toml")).unwrap();
    assert_eq!(p.seed, 0x5EED);
    assert_eq!(p.kernel.rel, 0.10);
    let nccl = p.kernel_threshold(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "x",
        "communication",
    );
    assert_eq!((nccl.rel, nccl.abs), (0.20, 20_000.0));
    assert!(
        !p.kernel_threshold(
            "triton_poi_fused_add_0",
            "triton_poi_fused_add_0",
            "elementwise"
        )
        .gate
    );
    assert_eq!(p.category_threshold("communication").rel, 0.15);
    assert_eq!(p.metrics[metric::GAP_FRACTION].abs, 0.01);
}
