//! The steps report is built once, from the values its stages return: no stage writes
//! into a built report, so no order of writers can decide what the report says.

use std::path::Path;

use regex::Regex;
use stepgate::attribution::medians::run_medians;
use stepgate::attribution::spread::by_group;
use stepgate::attribution::verdict::{decide, Attributed};
use stepgate::categories::Categorizer;
use stepgate::pipeline::plan::{FloorPlan, StepsPlan};
use stepgate::roofline::options::ModelOptions;
use stepgate::timing::steps::StepOptions;
use stepgate::wire::attribution::LaunchCost;

/// Where a built `StepsReport` could be written into, in one file's code (its test module
/// and comment lines left out): a `&mut StepsReport`, a `mut` binding of one, a `let mut`
/// of a steps run's report, or a struct literal anywhere but the one assembly.
fn writes(path: &str, text: &str) -> Vec<String> {
    let tests = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s+\w+\s*\{").unwrap();
    let code = &text[..tests.find(text).map_or(text.len(), |m| m.start())];
    let mut_ref = Regex::new(r"&\s*mut\s+(crate::wire::steps::)?StepsReport\b").unwrap();
    let mut_binding =
        Regex::new(r"\bmut\s+\w+\s*:\s*(crate::wire::steps::)?StepsReport\b").unwrap();
    let mut_run =
        Regex::new(r"let\s+mut\s+\w+\s*=[^;]*(\.report\s*;|into_report\(|find_steps\()").unwrap();
    let literal = Regex::new(r"\bStepsReport\s*\{").unwrap();
    let definition = Regex::new(r"\bstruct\s+StepsReport\s*\{").unwrap();
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let l = line.trim_start();
        if l.starts_with("//") {
            continue;
        }
        let at = |what: &str| format!("{path}:{}: {what}: {}", i + 1, l);
        if mut_ref.is_match(l) || mut_binding.is_match(l) || mut_run.is_match(l) {
            out.push(at("writes into a built steps report"));
        }
        let literal_here = literal.is_match(l) && !definition.is_match(l);
        if literal_here && path != "src/timing/steps/found.rs" {
            out.push(at("builds a steps report outside Found::into_report"));
        }
    }
    out
}

#[test]
fn a_steps_report_is_built_in_one_place_and_never_written_after() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    crate::common::rust_files(&root.join("src"), &mut files);
    crate::common::rust_files(&root.join("python/src"), &mut files);
    assert!(files.iter().any(|f| f.0 == "src/timing/steps/found.rs"));
    let v: Vec<String> = files.iter().flat_map(|(p, t)| writes(p, t)).collect();
    assert!(v.is_empty(), "{}", v.join("\n"));
}

#[test]
fn a_write_into_a_built_report_is_reported() {
    // Each the way a stage used to fill the report after it was built.
    let planted = [
        "pub fn detail(trace: &Trace, report: &mut StepsReport) -> Result<()> {",
        "fn f(mut r: crate::wire::steps::StepsReport) {",
        "    let mut r = crate::pipeline::steps::run(&trace, &plan)?.report;",
        "    let r = StepsReport { verdict, ..r };",
    ];
    for p in planted {
        assert_eq!(writes("src/pipeline/x.rs", p).len(), 1, "{p}");
    }
    // A report path in a command's arguments is not a steps report.
    let inputs = "    let mut inputs = vec![Input::report(&args.report)];";
    assert!(writes("src/commands/x.rs", inputs).is_empty());
    // The one assembly, the type's definition, tests and comments are not writes.
    assert!(writes("src/timing/steps/found.rs", "        StepsReport {").is_empty());
    assert!(writes("src/wire/steps.rs", "pub struct StepsReport {").is_empty());
    let test_module = "#[cfg(test)]\nmod tests {\n    let mut r = StepsReport {";
    assert!(writes("src/a.rs", test_module).is_empty());
    // A test-only item or module file mid-file does not hide what follows it.
    for item in ["fn f() {}", "mod tests;"] {
        let after = format!("#[cfg(test)]\n{item}\nlet mut r = x.report;");
        assert_eq!(writes("src/a.rs", &after).len(), 1, "{item}");
    }
    assert!(writes("src/a.rs", "/// takes `&mut StepsReport` no more").is_empty());
}

/// Every value the report holds beside its steps is the one its stage returns for the
/// report's final steps: the class spread, the run medians, and the verdict, decided from
/// the final steps, shapes, detailed groups and spread (no stage changed the steps, the
/// groups or the spread after another stage read them).
#[test]
fn the_reports_stage_values_are_those_of_its_final_steps() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/vllm_decode_synthetic_h100.sqlite");
    let plan = StepsPlan {
        find: StepOptions::default(),
        kind: None,
        launch_cost: LaunchCost::default(),
        categories: Categorizer::default(),
        floor: FloorPlan {
            model: Some(ModelOptions {
                preset: Some("llama-3-8b".to_owned()),
                ..ModelOptions::default()
            }),
            gpu: Some("h100-sxm".to_owned()),
            ..FloorPlan::default()
        },
        device: None,
    };
    let trace = stepgate::pipeline::steps::load(&path, &plan).unwrap();
    let r = stepgate::pipeline::steps::run(&trace, &plan)
        .unwrap()
        .report;
    // The capture has a group of like steps large enough for a spread, a priced decode
    // group with a layer view, and a verdict: every later stage returned something.
    assert!(!r.class_spread.is_empty());
    assert!(r.groups.iter().any(|g| g.layers.is_some()));
    let verdict = r.verdict.clone().expect("a verdict");
    assert_eq!(r.class_spread, by_group(&r.steps));
    assert_eq!(r.medians, Some(run_medians(&r.steps)));
    let vendor = r.operating_point.as_ref().and_then(|p| p.vendor.as_deref());
    let again = decide(
        &trace,
        &Attributed {
            steps: &r.steps,
            shapes: &r.shapes,
            groups: &r.groups,
            spread: &r.class_spread,
            vendor,
        },
        &|_| Ok(None),
        2,
    )
    .unwrap();
    assert_eq!(again, Some(verdict));
    // Every step carries its attribution, joined to its own step (the launches agree).
    for s in &r.steps {
        let a = s.attribution.as_ref().expect("attributed");
        assert_eq!(a.launch.launches, s.launches, "step {}", s.index);
    }
}
