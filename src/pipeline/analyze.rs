//! `analyze`'s run: per-device busy and idle time and kernels ranked by exclusive time,
//! with the steps beside them unless they are left out.

use std::path::Path;

use crate::categories::Categorizer;
use crate::exit::{Error, Result};
use crate::pipeline::plan::StepsPlan;
use crate::timing::overlap;
use crate::trace::Trace;
use crate::wire::analysis::{Analysis, SCHEMA_VERSION};
use crate::wire::meta::SourceInfo;

/// The most ops for which `analyze` runs the sweep beside the steps (see [`run`]).
const TOGETHER_MAX_OPS: usize = 8_000_000;

/// Load a report and analyse it; `with_steps` false reads GPU ops only (faster on huge
/// reports when only kernels matter), `device` keeps one device (and its steps).
pub fn run(
    path: &Path,
    plan: &StepsPlan,
    with_steps: bool,
    device: Option<i64>,
) -> Result<Analysis> {
    let trace = if with_steps {
        crate::pipeline::steps::load(path, plan)?
    } else {
        crate::source::load_with(path, &plan.ops_only_options())?
    };
    if !with_steps {
        let analysis = analyze_trace(&trace, &plan.categories, device)?;
        crate::phases::mark("analyze: per-device sweep");
        return Ok(analysis);
    }
    // The device filter applies before the steps are summarised, grouped and priced.
    let steps_plan = StepsPlan {
        device,
        ..plan.clone()
    };
    let steps = || crate::pipeline::steps::run_nested(&trace, &steps_plan);
    // The per-device sweep and the steps read the trace and nothing of each other: with a
    // second thread allowed they run at once, except on reports so big that their working
    // sets (the sweep's 12 bytes an op beside the steps' index) would add up past the
    // memory budget (a 16M-kernel report: 2.76 GiB at once, 2.4 GiB one after the other).
    // Either way the sweep's error (an unknown --device) is the one reported first, as in
    // the serial order.
    let together = plan.find.workers > 1 && trace.ops.height() < TOGETHER_MAX_OPS;
    let (analysis, run) = if together {
        std::thread::scope(|s| {
            let st = s.spawn(steps);
            let analysis = analyze_trace(&trace, &plan.categories, device);
            crate::phases::mark("analyze: per-device sweep");
            let run = st
                .join()
                .unwrap_or_else(|_| Err(Error::internal("the steps thread panicked")));
            (analysis, run)
        })
    } else {
        let analysis = analyze_trace(&trace, &plan.categories, device)?;
        crate::phases::mark("analyze: per-device sweep");
        (Ok(analysis), steps())
    };
    let mut analysis = analysis?;
    // The analysis says which tool read which report, once, at its top: the nested steps
    // report says it nowhere.
    analysis.steps = Some(run?.report);
    crate::phases::mark("steps: attribution and assembly");
    Ok(analysis)
}

/// Analyse a loaded trace: per-device summaries, optionally one device.
pub fn analyze_trace(trace: &Trace, cats: &Categorizer, device: Option<i64>) -> Result<Analysis> {
    let mut devices = overlap::device_summaries(trace, cats)?;
    if let Some(d) = device {
        let known: Vec<String> = devices.iter().map(|x| x.device.to_string()).collect();
        devices.retain(|x| x.device == d);
        if devices.is_empty() {
            return Err(Error::usage(format!(
                "device {d} has no GPU activity in this report; devices with activity: {}",
                known.join(", ")
            )));
        }
    }
    Ok(Analysis {
        schema_version: SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        source: SourceInfo::from(&trace.meta),
        warnings: trace.meta.warnings.clone(),
        devices,
        steps: None,
    })
}
