//! The commands Python calls: the CLI's own flag parsing (`Cli::try_parse_from`, so every
//! flag, default and refusal is the command line's), then the same library calls the
//! command's `run` makes, rendered as `--format json` into a string instead of stdout.
//!
//! Each function mirrors `stepgate::commands::<name>::run` with the format fixed to JSON;
//! the file outputs (`--html`, `--markdown`, `--perfetto`, `--json`) are written the same
//! way, all or none.

use std::path::Path;

use stepgate::baseline::Policy;
use stepgate::cli::Command;
use stepgate::commands;
use stepgate::exit::{Error, Result, DOCTOR_FAILED, OK};
use stepgate::output::{self, Input};
use stepgate::pipeline::plan::TOP_KERNELS;
use stepgate::report::{self, Format};

use crate::table::Spec;

/// What one command returns to Python.
pub struct Outcome {
    /// The command's `--format json` output.
    pub json: String,
    /// The exit code the command line would return.
    pub exit_code: u8,
    /// The gate/diff markdown report (the PR comment).
    pub markdown: Option<String>,
    /// Lines the command line prints on stderr besides warnings (export's summary).
    pub notes: Vec<String>,
    /// Where the report's tables are.
    pub tables: &'static [Spec],
}

const STEPS_TABLES: &[Spec] = &[
    Spec {
        name: "steps",
        parent: "/steps",
        child: None,
        keep: &[],
    },
    Spec {
        name: "kernels",
        parent: "/steps",
        child: Some("top_kernels"),
        keep: &[("index", "step"), ("series", "series"), ("kind", "kind")],
    },
    Spec {
        name: "classes",
        parent: "/groups",
        child: Some("classes"),
        keep: &[("group", "group")],
    },
];

const ANALYZE_TABLES: &[Spec] = &[
    Spec {
        name: "devices",
        parent: "/devices",
        child: None,
        keep: &[],
    },
    Spec {
        name: "kernels",
        parent: "/devices",
        child: Some("kernels_by_name"),
        keep: &[("device", "device")],
    },
];

const GATE_TABLES: &[Spec] = &[
    Spec {
        name: "rows",
        parent: "/groups",
        child: Some("metrics"),
        keep: &[("label", "group")],
    },
    Spec {
        name: "kernels",
        parent: "/groups",
        child: Some("kernels"),
        keep: &[("label", "group")],
    },
    Spec {
        name: "waterfall",
        parent: "/groups",
        child: Some("waterfall"),
        keep: &[("label", "group")],
    },
];

const DOCTOR_TABLES: &[Spec] = &[Spec {
    name: "findings",
    parent: "/findings",
    child: None,
    keep: &[],
}];

fn outcome(json: String, exit_code: u8, tables: &'static [Spec]) -> Outcome {
    Outcome {
        json,
        exit_code,
        markdown: None,
        notes: Vec::new(),
        tables,
    }
}

/// Run one parsed command the Python module offers.
pub fn run(cmd: Command) -> Result<Outcome> {
    match cmd {
        Command::Steps(a) => steps(&a),
        Command::Analyze(a) => analyze(&a),
        Command::Floor(a) => floor(&a),
        Command::Capacity(a) => capacity(&a),
        Command::Gate(a) => gate(&a),
        Command::Diff(a) => diff(&a),
        Command::Doctor(a) => doctor(&a),
        Command::Export(a) => export(&a),
        _ => Err(Error::usage(
            "this command is not offered by the Python module: run the `stepgate` command",
        )),
    }
}

fn steps(args: &commands::steps::Args) -> Result<Outcome> {
    let window = args
        .perfetto_steps
        .as_deref()
        .map(stepgate::export::perfetto::StepWindow::parse)
        .transpose()?;
    let mut plan = output::Plan::new();
    plan.add("--perfetto", args.perfetto.as_deref())
        .add("--html", args.html.as_deref());
    let mut inputs = vec![Input::report(&args.report)];
    inputs.extend(args.step.inputs());
    plan.check(&inputs)?;
    let steps_plan = args.step.plan(args.top)?;
    let trace = stepgate::pipeline::steps::load(&args.report, &steps_plan)?;
    let run = stepgate::pipeline::steps::run(&trace, &steps_plan)?;
    let r = &run.report;
    let mut files: Vec<(&Path, Vec<u8>)> = Vec::new();
    if let Some(p) = &args.perfetto {
        files.push((
            p,
            stepgate::export::perfetto::render(&trace, r, window)?.into_bytes(),
        ));
    }
    if let Some(p) = &args.html {
        let path = args.report.display().to_string();
        let roofs = run.pricing.as_ref().map(|p| report::html::steps::Roofs {
            gpu_name: p.gpu.name,
            bandwidth_bytes_per_s: p.gpu.hbm_bytes_per_s,
            peak_flops_per_s: p.gpu.bf16_flops_per_s,
        });
        files.push((
            p,
            report::html::steps::render(&path, r, roofs.as_ref()).into_bytes(),
        ));
    }
    write_files(&files)?;
    let opts = report::steps::Options {
        each: args.each,
        wide: args.wide,
        detail: args.detail,
        fit: report::fit::Fit::wide(),
    };
    let path = args.report.display().to_string();
    let json = report::steps::render(&path, r, Format::Json, &opts);
    Ok(outcome(json, OK, STEPS_TABLES))
}

fn analyze(args: &commands::analyze::Args) -> Result<Outcome> {
    let mut inputs = vec![Input::report(&args.report)];
    inputs.extend(args.step.inputs());
    output::Plan::new()
        .add("--html", args.html.as_deref())
        .check(&inputs)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let analysis =
        stepgate::pipeline::analyze::run(&args.report, &plan, !args.no_steps, args.device)?;
    if let Some(p) = &args.html {
        let path = args.report.display().to_string();
        let page = report::html::analyze::render(&path, &analysis, args.top);
        output::write_atomic(p, page.as_bytes())?;
    }
    let view = report::analyze::Options {
        top: args.top,
        wide: args.wide,
        fit: report::fit::Fit::wide(),
    };
    let json = report::analyze::render(&analysis, Format::Json, &view);
    Ok(outcome(json, OK, ANALYZE_TABLES))
}

fn floor(args: &commands::floor::Args) -> Result<Outcome> {
    use commands::numbers;
    let mg = args.mg.into_parts()?;
    let launch_cost_ns = args
        .launch_cost_us
        .map(|us| numbers::real("--launch-cost-us", "µs", us, numbers::MAX_LAUNCH_COST_US))
        .transpose()?
        .map(|us| us * 1e3);
    let req = stepgate::pipeline::floor::FloorRequest {
        batch: args.batch,
        context: args.context,
        launches: args.launches,
        launch_cost_ns,
        disable_sliding_window: args.disable_sliding_window,
    };
    let (r, geometry) = stepgate::pipeline::floor::decode(&mg, &req)?;
    let json = report::floor::render(
        &r,
        &geometry,
        &mg.source(),
        Format::Json,
        report::fit::Fit::wide(),
    );
    Ok(outcome(json, OK, &[]))
}

fn capacity(args: &commands::capacity::Args) -> Result<Outcome> {
    commands::capacity::validate(args)?;
    let mg = args.mg.into_parts()?;
    let req = stepgate::pipeline::capacity::CapacityRequest {
        input_tokens: args.input_tokens,
        output_tokens: args.output_tokens,
        kv_pool_tokens: args.kv_pool_tokens,
        kv_pool_gib: args.kv_pool_gib,
        gpu_mem_util: args.gpu_mem_util,
        batch: args.batch,
        prefill_mfu: args.prefill_mfu,
        ttft_ms: args.ttft_ms,
        itl_ms: args.itl_ms,
        fleet_rps: args.fleet_rps,
        usd_per_gpu_hour: args.usd_per_gpu_hour,
    };
    let (ctx, p) = stepgate::pipeline::capacity::run(&mg, &req)?;
    // As the command line: a step no load solves is exit 2, with its one-line reason.
    if let Some(u) = &p.unsolved {
        return Err(stepgate::exit::Error::input(format!(
            "capacity step {} ({}) has no solution: {}; the plan above marks it",
            u.step, u.name, u.reason
        )));
    }
    let json = report::capacity::render(&ctx, &p, &mg.source(), Format::Json);
    Ok(outcome(json, OK, &[]))
}

fn gate(args: &commands::gate::Args) -> Result<Outcome> {
    use stepgate::pipeline::gate::{gate, Against, Candidate};
    let mut plan = output::Plan::new();
    plan.add("--markdown", args.markdown.as_deref())
        .add("--json", args.json.as_deref())
        .add("--html", args.html.as_deref());
    let mut inputs = vec![Input::report(&args.report)];
    inputs.extend(args.baseline.as_deref().map(Input::file));
    inputs.extend(args.history.history.as_deref().map(Input::dataset));
    inputs.extend(args.export.export.as_deref().map(Input::dataset));
    inputs.extend(args.policy.as_deref().map(Input::file));
    inputs.extend(args.report_args.inputs());
    plan.check(&inputs)?;
    let steps_plan = args.report_args.plan(TOP_KERNELS)?;
    let export = args.export.plan()?;
    let history = args.history.plan()?;
    let mut policy = Policy::load(args.policy.as_deref())?;
    policy.inconclusive_fails |= args.inconclusive_fails;
    policy.allow_incomparable |= args.allow_incomparable;
    let cand = Candidate::load(
        &args.report,
        &steps_plan,
        export.as_ref(),
        history.is_some(),
    )?;
    let (against, base_name) = match (&history, &args.baseline) {
        (Some(h), _) => (Against::History(h), report::gate::input_label(&h.dataset)),
        (None, Some(b)) => (Against::Baseline(b), report::gate::input_label(b)),
        (None, None) => return Err(Error::usage("give --baseline FILE or --history DATASET")),
    };
    let run = gate(cand, against, &policy)?;
    let cmp = &run.comparison;
    let opts = report::gate::RenderOptions {
        show_verdict: true,
        baseline_name: base_name,
        candidate_name: report::gate::input_label(&args.report),
        top: args.top,
        waterfall_top: args.waterfall_top,
        command: "gate",
        wide: args.wide,
        fit: report::fit::Fit::wide(),
    };
    let md = report::gate::markdown(cmp, &opts);
    let json = report::to_json(cmp);
    let mut files: Vec<(&Path, Vec<u8>)> = Vec::new();
    if let Some(p) = &args.markdown {
        files.push((p, md.clone().into_bytes()));
    }
    if let Some(p) = &args.json {
        files.push((p, json.clone().into_bytes()));
    }
    if let Some(p) = &args.html {
        let page = report::html::gate::render(cmp, &opts, run.pairs());
        files.push((p, page.into_bytes()));
    }
    write_files(&files)?;
    let mut notes = Vec::new();
    if let Some(pending) = &run.export {
        notes.push(pending.append()?.to_string());
    }
    Ok(Outcome {
        json,
        exit_code: cmp.exit_code,
        markdown: Some(md),
        notes,
        tables: GATE_TABLES,
    })
}

fn diff(args: &commands::diff::Args) -> Result<Outcome> {
    let mut plan = output::Plan::new();
    plan.add("--markdown", args.markdown.as_deref())
        .add("--html", args.html.as_deref());
    let mut inputs = vec![Input::report(&args.a), Input::report(&args.b)];
    inputs.extend(args.policy.as_deref().map(Input::file));
    inputs.extend(args.report_args.inputs());
    plan.check(&inputs)?;
    let steps_plan = args.report_args.plan(TOP_KERNELS)?;
    let policy = Policy::load(args.policy.as_deref())?;
    let run = stepgate::pipeline::gate::diff(&args.a, &args.b, &steps_plan, &policy, args.verdict)?;
    let cmp = &run.comparison;
    let ro = report::gate::RenderOptions {
        show_verdict: args.verdict,
        baseline_name: report::gate::input_label(&args.a),
        candidate_name: report::gate::input_label(&args.b),
        top: args.top,
        waterfall_top: args.waterfall_top,
        command: "diff",
        wide: args.wide,
        fit: report::fit::Fit::wide(),
    };
    let md = report::gate::markdown(cmp, &ro);
    let mut files: Vec<(&Path, Vec<u8>)> = Vec::new();
    if let Some(p) = &args.markdown {
        files.push((p, md.clone().into_bytes()));
    }
    if let Some(p) = &args.html {
        let page = report::html::gate::render(cmp, &ro, run.pairs());
        files.push((p, page.into_bytes()));
    }
    write_files(&files)?;
    Ok(Outcome {
        json: report::to_json(cmp),
        exit_code: if args.verdict { cmp.exit_code } else { OK },
        markdown: Some(md),
        notes: Vec::new(),
        tables: GATE_TABLES,
    })
}

fn doctor(args: &commands::doctor::Args) -> Result<Outcome> {
    let mut inputs = vec![Input::report(&args.report)];
    inputs.extend(args.step.inputs());
    output::Plan::new().check(&inputs)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let d = stepgate::pipeline::doctor::run(&args.report, &plan, args.strict)?;
    let code = if d.passed { OK } else { DOCTOR_FAILED };
    Ok(outcome(
        report::doctor::render(&d, Format::Json, report::fit::Fit::wide()),
        code,
        DOCTOR_TABLES,
    ))
}

fn export(args: &commands::export::Args) -> Result<Outcome> {
    args.storage.install()?;
    let to = stepgate::pipeline::plan::ExportPlan {
        dataset: args.dataset.clone(),
        labels: stepgate::dataset::write::parse_labels(&args.labels)?,
    };
    stepgate::dataset::write::check_not_in_report(&args.dataset, &args.report)?;
    stepgate::dataset::write::check_target(&args.dataset)?;
    let plan = args.step.plan(TOP_KERNELS)?;
    let options = stepgate::dataset::write::ExportOptions {
        replace: args.replace,
    };
    let o = stepgate::pipeline::history::export(&args.report, &plan, &to, &options)?;
    // `export` prints no JSON: its result as a small document of the same facts it prints.
    let rows: serde_json::Map<String, serde_json::Value> = o
        .rows
        .iter()
        .map(|(t, n)| ((*t).to_string(), serde_json::Value::from(*n)))
        .collect();
    let doc = serde_json::json!({
        "run_id": o.run_id,
        "replaced": o.replaced,
        "dataset": args.dataset.display().to_string(),
        "rows": rows,
    });
    let mut out = outcome(doc.to_string(), OK, &[]);
    out.notes = o.notes.iter().map(ToString::to_string).collect();
    Ok(out)
}

/// A command's file outputs, all or none (`commands::write_files`).
fn write_files(files: &[(&Path, Vec<u8>)]) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let refs: Vec<(&Path, &[u8])> = files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    output::write_all(&refs)
}
