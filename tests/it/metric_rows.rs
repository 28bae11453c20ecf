//! A step metric is one row of `baseline::metrics`: a row added here, through the library
//! API, reaches the baseline's JSON, the history's steps table (export, then read back),
//! the gate's comparison rows and every rendering (text, markdown, HTML). The values come
//! from the generator's own schedule (its truth), not from the code under test.

use serde_json::Value;
use stepgate::baseline::from_report::samples_from_steps_with;
use stepgate::baseline::metrics::{Better, MetricDef, Metrics, Origin, Read};
use stepgate::baseline::{compare_unchecked, Policy};
use stepgate::categories::Categorizer;
use stepgate::report::gate::RenderOptions;
use stepgate::report::Format;
use stepgate::source;
use stepgate::synth::steps::{build, Scenario};
use stepgate::timing::steps::{find_steps, StepOptions};
use stepgate::wire::baseline::{BaselineMeta, MetricUnit};
use stepgate::wire::gate::Threshold;
use stepgate::wire::synth::Format as SynthFormat;

use crate::common::run;

/// The added metric: ops (kernels, copies, graph replays) per step, read from the step's
/// `ops` field, stored in the history's `ops` column.
const NAME: &str = "ops_per_step";
const LABEL: &str = "ops in the step";

fn ops_row() -> MetricDef {
    MetricDef {
        name: NAME,
        label: LABEL,
        unit: MetricUnit::Count,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| Some(s.ops as f64),
            column: "ops",
            float: false,
        },
        required: true,
        partial: false,
        valid_on: |_| true,
        threshold: Some(Threshold {
            rel: 0.03,
            abs: 1.0,
            gate: true,
        }),
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn a_metric_added_as_one_row_reaches_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.pt.trace.json.gz");
    let truth = build(Scenario::ProfilerStep, SynthFormat::Kineto, &path).unwrap();
    // The generator's ops per step with GPU work, in step order: what the row must read.
    let want: Vec<f64> = truth.series[0]
        .steps
        .iter()
        .filter(|t| t.gpu_start_ns.is_some())
        .map(|t| t.ops as f64)
        .collect();
    assert!(want.len() >= 3, "{want:?}");

    let mut table = Metrics::builtin();
    table.push(ops_row());

    // The baseline: one sample per step under the row's name, in the JSON it writes.
    let trace = source::load(&path).unwrap();
    let report = find_steps(&trace, &StepOptions::default(), &Categorizer::default()).unwrap();
    let (base, _) = samples_from_steps_with(&report, BaselineMeta::default(), &table);
    assert_eq!(base.samples.groups.len(), 1);
    let json = serde_json::to_value(&base).unwrap();
    let got: Vec<f64> = json["samples"]["groups"][0]["metrics"][NAME]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(got, want);
    // Without the row there is no such sample: the row, not a default, put it there.
    let (plain, _) = stepgate::baseline::samples_from_steps(&report, BaselineMeta::default());
    assert!(!plain.samples.groups[0].metrics.contains_key(NAME));

    // A candidate with two more ops in every step.
    let mut slower = report.clone();
    for s in &mut slower.steps {
        s.ops += 2;
    }
    let (cand, _) = samples_from_steps_with(&slower, BaselineMeta::default(), &table);
    let policy = Policy::with_table(table.clone());
    assert_eq!(policy.metric_threshold(NAME), ops_row().threshold.unwrap());
    let cmp = compare_unchecked(&base, &cand, &policy).unwrap();
    let row = cmp.groups[0]
        .metrics
        .iter()
        .find(|m| m.metric == NAME)
        .expect("the gate compares the added metric");
    let m = median(&want);
    assert_eq!(row.change.baseline_median, Some(m));
    assert_eq!(row.change.candidate_median, Some(m + 2.0));
    assert_eq!(row.change.change, Some(2.0));
    assert!(row.change.higher_is_worse);
    assert_eq!(row.label, LABEL);
    // After the built-in metrics, in the table's order.
    assert_eq!(
        cmp.groups[0].metrics.last().map(|m| m.metric.as_str()),
        Some(NAME)
    );
    let cj = serde_json::to_value(&cmp).unwrap();
    let jrow = cj["groups"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == NAME)
        .unwrap();
    assert_eq!(jrow["change"].as_f64(), Some(2.0));
    assert_eq!(jrow["threshold"]["abs"].as_f64(), Some(1.0));

    // Every rendering shows the row by its label, its values as counts (one decimal).
    let o = RenderOptions::default();
    let cell = |v: f64| format!("{v:.1}");
    for f in [Format::Table, Format::Markdown] {
        let out = stepgate::report::gate::render(&cmp, f, &o);
        // The table row: label, the baseline's and the candidate's median, the change.
        assert!(
            out.lines().any(|l| l.contains(LABEL)
                && l.contains(&cell(m))
                && l.contains(&cell(m + 2.0))
                && l.contains("+2.0")),
            "{f:?}: no row {LABEL} with {} → {}\n{out}",
            cell(m),
            cell(m + 2.0)
        );
    }
    let pairs = base
        .samples
        .groups
        .iter()
        .zip(&cand.samples.groups)
        .collect();
    let html = stepgate::report::html::gate::render(&cmp, &o, pairs);
    assert!(html.contains(LABEL), "html has no row {LABEL}");
    assert!(html.contains(&cell(m + 2.0)));

    // The history: export the capture, read it back through the table. The schema of the
    // history's steps table holds the row's column (the read asks for it by name and type).
    let ds = dir.path().join("ds");
    let (code, _, err) = run(&["export", path.to_str().unwrap(), "-o", ds.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let h = stepgate::dataset::history_baseline(
        &ds,
        &stepgate::dataset::HistoryQuery {
            filter: stepgate::dataset::Filter::parse(&[]).unwrap(),
            last: 5,
            mode: stepgate::dataset::HistoryMode::Steps,
            min_runs: 1,
            gpu: None,
            model: None,
            candidate: None,
            classes: false,
            metrics: table.clone(),
            store: stepgate::store::StoreConfig::default(),
        },
    )
    .unwrap();
    assert!(!h.too_few, "{}", h.note);
    let hj: Value = serde_json::to_value(&h.baseline).unwrap();
    let back: Vec<f64> = hj["samples"]["groups"][0]["metrics"][NAME]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(back, want);
}
