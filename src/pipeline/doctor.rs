//! `doctor`'s run: a capture checked before it reaches a gate. Each check reads the loaded
//! trace (and the steps the gate would find) and says what it saw, with a severity; none
//! prints, the command renders the findings.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use crate::exit::Result;
use crate::pipeline::plan::StepsPlan;
use crate::trace::{OpKind, Trace};
use crate::wire::doctor::{Doctor, Finding, Severity, SCHEMA_VERSION};
use crate::wire::meta::{SourceInfo, Tool};
use crate::wire::steps::{FoundBy, StepsReport};

/// Share of launch calls without a GPU op above which the capture window is called cut.
const CUT_LAUNCH_SHARE: f64 = 0.01;

fn finding(check: &str, severity: Severity, message: String, action: Option<String>) -> Finding {
    Finding {
        check: check.to_owned(),
        severity,
        message,
        action,
    }
}

/// Load the report and run every check. A report no reader can load is an error of the
/// command (exit 2, its one line), not a finding: there is nothing to check.
pub fn run(path: &Path, plan: &StepsPlan, strict: bool) -> Result<Doctor> {
    let trace = crate::pipeline::steps::load(path, plan)?;
    let mut findings = vec![gpu_work(&trace)?];
    findings.extend(graph_mode(&trace)?);
    findings.push(ranges(&trace)?);
    findings.extend(window(&trace)?);
    findings.extend(launch_links(&trace)?);
    findings.push(ranks(&trace)?);
    // Steps last among the trace checks: finding them can fail on a capture the checks
    // above already explain (no GPU work), and that failure is a finding too.
    let report = crate::pipeline::steps::run(&trace, plan).map(|r| r.report);
    findings.push(steps(&trace, &report));
    findings.push(gpu(&trace, report.as_ref().ok()));
    let worst = findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Ok);
    let fails = if strict {
        Severity::Warning
    } else {
        Severity::Error
    };
    Ok(Doctor {
        schema_version: SCHEMA_VERSION,
        tool: Tool::current(),
        source: SourceInfo::from(&trace.meta),
        findings,
        worst,
        strict,
        passed: worst < fails,
    })
}

/// Kernels, copies and graph replays per device.
fn gpu_work(trace: &Trace) -> Result<Finding> {
    let o = trace.ops_view()?;
    let mut per: BTreeMap<i64, [u64; 4]> = BTreeMap::new();
    for i in 0..o.start_ns.len() {
        per.entry(i64::from(o.device[i])).or_default()[o.kind[i].min(3) as usize] += 1;
    }
    let kernels: u64 = per
        .values()
        .map(|c| c[OpKind::Kernel as usize] + c[OpKind::Graph as usize])
        .sum();
    let list = per
        .iter()
        .map(|(d, c)| {
            format!(
                "GPU {d}: {} kernels, {} copies, {} fills{}",
                c[0],
                c[1],
                c[2],
                if c[3] > 0 {
                    format!(", {} graph replays", c[3])
                } else {
                    String::new()
                }
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok(if kernels == 0 {
        finding(
            "gpu_work",
            Severity::Error,
            format!("no kernels, only copies and fills ({list})"),
            Some(
                "capture with CUDA tracing on (nsys -t cuda) around the engine's decode".to_owned(),
            ),
        )
    } else {
        finding("gpu_work", Severity::Ok, list, None)
    })
}

/// Graph-mode tracing: every replay one opaque interval, the kernels inside it unseen.
fn graph_mode(trace: &Trace) -> Result<Option<Finding>> {
    let o = trace.ops_view()?;
    let replays = o
        .kind
        .iter()
        .filter(|&&k| k == OpKind::Graph as u32)
        .count();
    let mode = trace.meta.cuda_graph_trace_mode.as_deref();
    if replays == 0 {
        // Graph mode without a single replay: the capture ran no graph, nothing is hidden.
        return Ok(mode.filter(|m| *m == "Graph").map(|_| {
            finding(
                "graph_mode",
                Severity::Ok,
                "CUDA graph tracing in graph mode, but no graph replays in the capture: no \
                 kernel is hidden"
                    .to_owned(),
                None,
            )
        }));
    }
    Ok(Some(finding(
        "graph_mode",
        Severity::Warning,
        format!(
            "CUDA graphs traced in graph mode ({replays} opaque replays{}): the kernels inside \
             each graph, their classes and floors are hidden, so a gate sees only the replay's \
             length",
            mode.map(|m| format!(", CUDA_GRAPH_TRACE_OPTIONS mode {m}"))
                .unwrap_or_default()
        ),
        Some("recapture with `nsys profile --cuda-graph-trace=node`".to_owned()),
    )))
}

/// The marker ranges: how many, in how many domains.
fn ranges(trace: &Trace) -> Result<Finding> {
    let r = trace.ranges_view()?;
    let caps = trace.meta.format.capabilities();
    let domains: BTreeSet<i64> = r.domain_id.iter().copied().collect();
    let names: HashSet<u32> = r.name_id.iter().copied().collect();
    let api = caps.marker_api.unwrap_or("annotation");
    Ok(if r.start_ns.is_empty() {
        finding(
            "ranges",
            Severity::Warning,
            format!("no {api} ranges: steps can only be guessed (idle gaps, syncs)"),
            Some(match caps.marker_api {
                Some("NVTX") => "capture with `-t cuda,nvtx` and an engine that writes step ranges (docs/engines.md)".to_owned(),
                Some(other) => format!("capture with {other} marker tracing on (rocprofv3 --marker-trace)"),
                None => "profile with record_function / the engine's step annotations on (docs/engines.md)".to_owned(),
            }),
        )
    } else {
        finding(
            "ranges",
            Severity::Ok,
            format!(
                "{} {api} ranges, {} distinct names, {} domain(s)",
                r.start_ns.len(),
                names.len(),
                domains.len()
            ),
            None,
        )
    })
}

/// Launches whose GPU op is not in the capture: the window cut them (it closed before their
/// kernels ran, or opened after) — edge steps are then incomplete.
fn window(trace: &Trace) -> Result<Option<Finding>> {
    let c = trace.calls_view()?;
    let o = trace.ops_view()?;
    let ops: HashSet<(i32, i32)> = (0..o.start_ns.len())
        .filter(|&i| o.correlation_id[i] >= 0)
        .map(|i| (o.pid[i], o.correlation_id[i]))
        .collect();
    let launches: Vec<usize> = (0..c.start_ns.len())
        .filter(|&i| c.is_launch(i) && c.correlation_id[i] >= 0)
        .collect();
    if launches.is_empty() {
        return Ok(None);
    }
    let orphans: Vec<usize> = launches
        .iter()
        .copied()
        .filter(|&i| !ops.contains(&(c.pid[i], c.correlation_id[i])))
        .collect();
    let share = orphans.len() as f64 / launches.len() as f64;
    let secs = |ns: i64| ns as f64 / 1e9;
    Ok(Some(if share > CUT_LAUNCH_SHARE {
        let from = orphans.iter().map(|&i| c.start_ns[i]).min().unwrap_or(0);
        let to = orphans.iter().map(|&i| c.end_ns[i]).max().unwrap_or(0);
        let last_op = o.end_ns.iter().copied().max().unwrap_or(0);
        finding(
            "window",
            Severity::Warning,
            format!(
                "{} of {} launch calls ({:.1}%) have no GPU op with their launch id, launched \
                 between {:.3} s and {:.3} s (the last GPU op ends at {:.3} s): the capture \
                 window cut them or the profiler dropped their records, so the steps that \
                 launched them are missing GPU work",
                orphans.len(),
                launches.len(),
                share * 100.0,
                secs(from),
                secs(to),
                secs(last_op)
            ),
            Some("capture a range the engine arms itself (`stepgate capture`, nsys -c cudaProfilerApi) with room after the last step, or gate only steps before the cut (--steps REGEX)".to_owned()),
        )
    } else {
        finding(
            "window",
            Severity::Ok,
            format!(
                "{} launch calls, {} without a GPU op in the capture",
                launches.len(),
                orphans.len()
            ),
            None,
        )
    }))
}

/// Ops with no launching call, in a format that links every op to one.
fn launch_links(trace: &Trace) -> Result<Option<Finding>> {
    let o = trace.ops_view()?;
    if trace.calls.height() == 0 {
        return Ok(Some(finding(
            "launch_links",
            Severity::Warning,
            "no host API calls in the capture: ops cannot be joined to the steps that launched \
             them, only to time windows"
                .to_owned(),
            Some(
                "capture the CUDA/HIP runtime too (nsys -t cuda; rocprofv3 --runtime-trace)"
                    .to_owned(),
            ),
        )));
    }
    let c = trace.calls_view()?;
    let calls: HashSet<(i32, i32)> = (0..c.start_ns.len())
        .filter(|&i| c.correlation_id[i] >= 0)
        .map(|i| (c.pid[i], c.correlation_id[i]))
        .collect();
    let no_id = o.correlation_id.iter().filter(|&&k| k < 0).count();
    let no_call = (0..o.start_ns.len())
        .filter(|&i| o.correlation_id[i] >= 0 && !calls.contains(&(o.pid[i], o.correlation_id[i])))
        .count();
    let missing = no_id + no_call;
    if missing == 0 {
        return Ok(None);
    }
    let share = missing as f64 / o.start_ns.len() as f64;
    // A format without complete launch links (Kineto) is expected to have some; in one
    // that links every op, many unlinked ops mean lost host records.
    let severity = if trace.meta.format.capabilities().launch_links && share > CUT_LAUNCH_SHARE {
        Severity::Warning
    } else {
        Severity::Info
    };
    Ok(Some(finding(
        "launch_links",
        severity,
        format!(
            "{missing} of {} GPU ops ({:.1}%) have no launching call in the capture ({no_id} \
             carry no launch id, {no_call} an id no host call has): {}",
            o.start_ns.len(),
            share * 100.0,
            if trace.meta.format.capabilities().launch_links {
                "no step can claim them (steps join ops to the calls that launched them)"
            } else {
                "steps claim them by time window only"
            }
        ),
        (severity == Severity::Warning).then(|| {
            "capture the host runtime of every process (nsys -t cuda without --cuda-trace-scope limits)".to_owned()
        }),
    )))
}

/// Processes with GPU work, and the distributed run the report states.
fn ranks(trace: &Trace) -> Result<Finding> {
    let o = trace.ops_view()?;
    let pids: BTreeSet<i64> = o.pid.iter().map(|&p| i64::from(p)).collect();
    let devices: BTreeSet<i64> = o.device.iter().map(|&d| i64::from(d)).collect();
    // Only what the report states: a rank without a world size is said as such.
    let stated = trace
        .meta
        .distributed
        .as_ref()
        .and_then(|d| match (d.rank, d.world_size) {
            (Some(r), Some(w)) => Some(format!("; the report states rank {r} of world size {w}")),
            (Some(r), None) => Some(format!("; the report states rank {r}, no world size")),
            (None, Some(w)) => Some(format!("; the report states world size {w}")),
            (None, None) => None,
        });
    Ok(finding(
        "ranks",
        Severity::Ok,
        format!(
            "{} process(es) with GPU work on {} GPU(s){}",
            pids.len(),
            devices.len(),
            stated.unwrap_or_default()
        ),
        None,
    ))
}

/// How the gate would find steps: markers are exact, the rest are guesses.
fn steps(trace: &Trace, report: &Result<StepsReport>) -> Finding {
    let r = match report {
        Ok(r) => r,
        Err(e) => {
            return finding(
                "steps",
                Severity::Error,
                format!("no steps: {}", e.message),
                Some("see `stepgate steps --help` for --steps METHOD|REGEX".to_owned()),
            )
        }
    };
    let n = r.steps.len();
    let engine = r
        .found_by_engine
        .as_deref()
        .map(|e| format!(" ({e})"))
        .unwrap_or_default();
    match r.found_by {
        FoundBy::Marker | FoundBy::Regex => finding(
            "steps",
            Severity::Ok,
            format!("{n} steps by {}{engine}", r.found_by.as_str()),
            None,
        ),
        FoundBy::Scheduler => finding(
            "steps",
            Severity::Info,
            format!("{n} steps by scheduler scopes{engine}: exact boundaries, no batch composition in their names"),
            r.exact_steps_hint.clone(),
        ),
        by => finding(
            "steps",
            Severity::Warning,
            format!(
                "{n} steps found by {} — a heuristic: step boundaries are guessed{}",
                by.as_str(),
                if trace.meta.format.capabilities().marker_api.is_some() { "" } else { " from the profiler's annotations" }
            ),
            r.exact_steps_hint.clone().or(Some("add engine step markers (docs/engines.md)".to_owned())),
        ),
    }
}

/// The GPU: named by the report and known to the roofline table, or not.
fn gpu(trace: &Trace, report: Option<&StepsReport>) -> Finding {
    let named: Vec<&str> = trace
        .devices
        .iter()
        .filter_map(|d| d.name.as_deref())
        .collect();
    let Some(first) = named.first() else {
        let inferred = report
            .and_then(|r| r.operating_point.as_ref())
            .and_then(|p| p.gpu.as_ref())
            .filter(|g| g.basis == crate::wire::attribution::Basis::Inferred);
        if let Some(g) = inferred {
            return finding(
                "gpu",
                Severity::Info,
                format!("{} → preset {} (inferred)", g.evidence, g.value),
                Some(format!("pass --gpu {} to make it certain", g.value)),
            );
        }
        return finding(
            "gpu",
            Severity::Warning,
            "the report names no GPU: floors need --gpu".to_owned(),
            Some("pass --gpu (stepgate presets gpus lists them)".to_owned()),
        );
    };
    let preset = report
        .and_then(|r| r.operating_point.as_ref())
        .and_then(|p| p.gpu.as_ref())
        .map(|g| g.value.clone());
    match preset.or_else(|| crate::roofline::gpu::from_report_name(first).map(|g| g.key.to_owned()))
    {
        Some(key) => finding(
            "gpu",
            Severity::Ok,
            format!("{first:?} → preset {key}"),
            None,
        ),
        None => finding(
            "gpu",
            Severity::Warning,
            format!("{first:?} is not in the GPU table: floors need --gpu and --hbm-tb-s"),
            Some("pass --gpu with the nearest preset and --hbm-tb-s with its bandwidth".to_owned()),
        ),
    }
}
