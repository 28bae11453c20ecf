//! Find the engine's steps and project each host range onto the GPU.
//!
//! nsys semantics: a step's GPU work is every op whose launching runtime/driver call
//! (joined on correlation id AND process, since ids repeat across processes) starts
//! inside the step's host range on the same thread. Under node-mode CUDA-graph tracing
//! all kernels of a replay share the `cudaGraphLaunch` correlation id, so the join keeps
//! every op per id, never one. Graph-mode replays are opaque `[cuda graph N]` ops and
//! count as busy time like any other op.

use std::collections::HashMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::categories::Categorizer;
use crate::exit::{Error, Result};
use crate::timing::overlap::{category_totals, display_name, exclusive_in_order, name_ranks};
use crate::timing::stepname::{self, BatchComposition, StepKind};
use crate::trace::{is_graph_launch_call, OpKind, RangeKind, SourceFormat, Trace};

/// How steps are found (`--steps`).
#[derive(Debug, Clone)]
pub enum StepSource {
    /// Engine step ranges, else CUDA-graph launches, else idle gaps.
    Auto,
    /// Any host range whose name matches.
    Regex(Regex),
    /// Each CUDA-graph launch is one step.
    Graphs,
    /// Split each device's ops at idle gaps longer than the threshold.
    Gaps,
}

/// Step finding options.
#[derive(Debug, Clone)]
pub struct StepOptions {
    pub source: StepSource,
    /// Idle gap that separates two steps in `gaps` mode.
    pub gap_threshold_ns: i64,
    /// Kernel rows kept per step in the output (all are kept in memory for baselines).
    pub top_kernels: usize,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            source: StepSource::Auto,
            gap_threshold_ns: 100_000,
            top_kernels: 5,
        }
    }
}

/// One op name inside one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepKernel {
    pub name: String,
    pub short_name: String,
    pub category: String,
    pub instances: u64,
    pub total_ns: i64,
    pub exclusive_ns: i64,
}

/// A host call, for naming what the host did during a gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCall {
    pub name: String,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// One engine step on one rank, with every time in integer ns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// Position in its series (rank), in GPU-start order.
    pub index: usize,
    /// Index into [`StepsReport::series`].
    pub series: usize,
    pub pid: i64,
    pub tid: Option<i64>,
    pub device: Option<i64>,
    pub name: String,
    pub kind: StepKind,
    pub composition: Option<BatchComposition>,
    pub cpu_start_ns: Option<i64>,
    pub cpu_end_ns: Option<i64>,
    /// Host range length.
    pub cpu_ns: Option<i64>,
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
    /// GPU-projected span: last op end − first op start.
    pub wall_ns: Option<i64>,
    /// To the next step's GPU start on this series; null for the last.
    pub period_ns: Option<i64>,
    /// From the previous step's GPU end on this series; null for the first.
    pub idle_before_ns: Option<i64>,
    /// Union of the step's op intervals.
    pub busy_ns: i64,
    /// wall − busy.
    pub gap_ns: Option<i64>,
    /// Kernel rows (memcpy/memset/opaque graph replays not included).
    pub kernels: u64,
    /// All ops: kernels, memcpy, memset, opaque graph replays.
    pub ops: u64,
    /// Opaque graph replays (graph-mode tracing) among the ops.
    pub graph_replays: u64,
    /// Kernel and graph launch calls inside the host range.
    pub launches: u64,
    /// Summed host time of those launch calls.
    pub launch_host_ns: i64,
    /// The longest non-launch host call inside the host range (a sync, a blocking copy).
    pub longest_host_call: Option<HostCall>,
    /// Kineto `gpu_user_annotation` span of the same name, where the trace has one.
    pub annotation_gpu_start_ns: Option<i64>,
    pub annotation_gpu_end_ns: Option<i64>,
    pub top_kernels: Vec<StepKernel>,
    pub categories: Vec<crate::analysis::CategoryStat>,
    /// Floor, launch attribution and shape (filled by `attribution`).
    pub attribution: Option<crate::attribution::StepAttribution>,
    /// Every op name in the step (for baselines); not serialized.
    #[serde(skip)]
    pub all_kernels: Vec<StepKernel>,
}

/// The steps of one rank: one process on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub pid: i64,
    pub device: Option<i64>,
    pub steps: usize,
}

/// Median and spread of one metric over a step kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
}

/// Per-kind summary of the steps with GPU work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindSummary {
    pub kind: StepKind,
    pub count: usize,
    pub wall_ns: Option<Spread>,
    pub period_ns: Option<Spread>,
    pub busy_ns: Option<Spread>,
    pub gap_ns: Option<Spread>,
    pub launches: Option<Spread>,
}

/// Tensor-parallel ranks aligned by step order: which rank was slowest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignedStep {
    pub index: usize,
    pub slowest_series: usize,
    pub slowest_pid: i64,
    pub slowest_device: Option<i64>,
    pub max_wall_ns: i64,
    pub min_wall_ns: i64,
}

/// How many steps had one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeCount {
    pub shape: crate::attribution::Shape,
    pub steps: usize,
}

/// Everything step finding produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepsReport {
    /// `engine`, `regex`, `graphs` or `gaps`.
    pub method: String,
    /// The per-launch cost the attribution used.
    pub launch_cost: Option<crate::attribution::LaunchCost>,
    /// Step count per shape over steps with GPU work, most frequent first.
    pub shapes: Vec<ShapeCount>,
    pub notes: Vec<String>,
    pub series: Vec<Series>,
    pub steps_without_gpu_work: usize,
    pub summary: Vec<KindSummary>,
    pub ranks: Vec<AlignedStep>,
    pub steps: Vec<Step>,
}

/// A host range chosen as a step, before projection.
struct Candidate {
    pid: i64,
    tid: i64,
    start: i64,
    end: i64,
    name_id: u32,
    parsed: Option<stepname::ParsedStep>,
}

/// Indexes built once per trace so each step's projection is a few binary searches.
struct Index<'a> {
    trace: &'a Trace,
    ops: crate::trace::OpsView<'a>,
    calls: crate::trace::CallsView<'a>,
    /// Op indices sorted by (pid, correlation id); ops without an id are left out.
    ops_by_corr: Vec<u32>,
    /// Call indices sorted by (pid, tid, start).
    calls_by_thread: Vec<u32>,
    name_rank: Vec<u32>,
}

impl<'a> Index<'a> {
    fn new(trace: &'a Trace) -> Result<Self> {
        let ops = trace.ops_view()?;
        let calls = trace.calls_view()?;
        let mut ops_by_corr: Vec<u32> = (0..ops.start_ns.len() as u32)
            .filter(|&i| ops.correlation_id[i as usize] >= 0)
            .collect();
        ops_by_corr
            .sort_unstable_by_key(|&i| (ops.pid[i as usize], ops.correlation_id[i as usize]));
        let mut calls_by_thread: Vec<u32> = (0..calls.start_ns.len() as u32).collect();
        calls_by_thread.sort_unstable_by_key(|&i| {
            let i = i as usize;
            (calls.pid[i], calls.tid[i], calls.start_ns[i])
        });
        Ok(Index {
            trace,
            ops,
            calls,
            ops_by_corr,
            calls_by_thread,
            name_rank: name_ranks(&trace.strings),
        })
    }

    /// Ops launched by the call with this (pid, correlation id).
    fn ops_of(&self, pid: i64, corr: i64) -> &[u32] {
        let key = (pid, corr);
        let o = &self.ops;
        let lo = self
            .ops_by_corr
            .partition_point(|&i| (o.pid[i as usize], o.correlation_id[i as usize]) < key);
        let hi = lo
            + self.ops_by_corr[lo..]
                .partition_point(|&i| (o.pid[i as usize], o.correlation_id[i as usize]) <= key);
        &self.ops_by_corr[lo..hi]
    }

    /// Calls on one thread that start inside [start, end].
    fn calls_in(&self, pid: i64, tid: i64, start: i64, end: i64) -> &[u32] {
        let c = &self.calls;
        let key = |i: u32| {
            let i = i as usize;
            (c.pid[i], c.tid[i], c.start_ns[i])
        };
        let lo = self
            .calls_by_thread
            .partition_point(|&i| key(i) < (pid, tid, start));
        let hi = lo + self.calls_by_thread[lo..].partition_point(|&i| key(i) <= (pid, tid, end));
        &self.calls_by_thread[lo..hi]
    }
}

/// GPU-side measurements of one set of ops.
struct Measured {
    device: Option<i64>,
    gpu_start: Option<i64>,
    gpu_end: Option<i64>,
    busy: i64,
    kernels: u64,
    graph_replays: u64,
    all_kernels: Vec<StepKernel>,
}

fn measure(
    ix: &Index<'_>,
    ops: &mut [u32],
    cats: &Categorizer,
    cat_cache: &mut HashMap<u32, String>,
) -> Measured {
    let o = &ix.ops;
    if ops.is_empty() {
        return Measured {
            device: None,
            gpu_start: None,
            gpu_end: None,
            busy: 0,
            kernels: 0,
            graph_replays: 0,
            all_kernels: Vec::new(),
        };
    }
    // Same order as the device sweep in `overlap`: (start, end, name).
    ops.sort_unstable_by_key(|&i| {
        let i = i as usize;
        (
            o.start_ns[i],
            o.end_ns[i],
            ix.name_rank[o.name_id[i] as usize],
        )
    });
    let starts: Vec<i64> = ops.iter().map(|&i| o.start_ns[i as usize]).collect();
    let ends: Vec<i64> = ops.iter().map(|&i| o.end_ns[i as usize]).collect();
    let excl = exclusive_in_order(&starts, &ends);
    let busy = excl.iter().sum();
    let mut per_name: Vec<(u32, u32, i64, i64)> = ops
        .iter()
        .zip(&excl)
        .map(|(&i, &x)| {
            let i = i as usize;
            (o.name_id[i], o.short_id[i], o.end_ns[i] - o.start_ns[i], x)
        })
        .collect();
    per_name.sort_unstable_by_key(|r| r.0);
    let mut all_kernels: Vec<StepKernel> = Vec::new();
    let mut k = 0;
    while k < per_name.len() {
        let id = per_name[k].0;
        let (mut n, mut total, mut ex) = (0u64, 0i64, 0i64);
        let short = per_name[k].1;
        while k < per_name.len() && per_name[k].0 == id {
            n += 1;
            total += per_name[k].2;
            ex += per_name[k].3;
            k += 1;
        }
        let name = ix.trace.name(id);
        let category = cat_cache
            .entry(id)
            .or_insert_with(|| cats.categorize(name).to_owned())
            .clone();
        all_kernels.push(StepKernel {
            name: name.to_owned(),
            short_name: display_name(ix.trace.name(short), name),
            category,
            instances: n,
            total_ns: total,
            exclusive_ns: ex,
        });
    }
    all_kernels.sort_by(|a, b| {
        b.exclusive_ns
            .cmp(&a.exclusive_ns)
            .then_with(|| a.name.cmp(&b.name))
    });
    let kernels = ops
        .iter()
        .filter(|&&i| o.kind[i as usize] == OpKind::Kernel as u32)
        .count() as u64;
    let graph_replays = ops
        .iter()
        .filter(|&&i| o.kind[i as usize] == OpKind::Graph as u32)
        .count() as u64;
    Measured {
        device: Some(o.device[ops[0] as usize]),
        gpu_start: starts.iter().min().copied(),
        gpu_end: ends.iter().max().copied(),
        busy,
        kernels,
        graph_replays,
        all_kernels,
    }
}

/// Host ranges that are steps: the outermost match per thread; an enclosed parsable
/// span lends its name and composition to the outer one.
fn outermost(mut cands: Vec<Candidate>) -> Vec<Candidate> {
    cands.sort_by_key(|c| (c.pid, c.tid, c.start, std::cmp::Reverse(c.end)));
    let mut kept: Vec<Candidate> = Vec::new();
    let mut inner_named: Vec<bool> = Vec::new();
    for c in cands {
        let idx = kept.len().wrapping_sub(1);
        if let Some(last) = kept.last_mut() {
            if last.pid == c.pid && last.tid == c.tid && c.start >= last.start && c.end <= last.end
            {
                if !inner_named[idx] {
                    if let Some(inner) = c.parsed {
                        let merged = match &last.parsed {
                            Some(outer) => stepname::ParsedStep {
                                kind: inner.kind,
                                composition: stepname::merge_inner(
                                    &outer.composition,
                                    &inner.composition,
                                ),
                            },
                            None => inner,
                        };
                        last.parsed = Some(merged);
                        last.name_id = c.name_id;
                        inner_named[idx] = true;
                    }
                }
                continue;
            }
        }
        kept.push(c);
        inner_named.push(false);
    }
    kept
}

fn host_ranges(trace: &Trace, keep: impl Fn(&str) -> bool) -> Result<Vec<Candidate>> {
    let r = trace.ranges_view()?;
    let mut out = Vec::new();
    for i in 0..r.start_ns.len() {
        if r.kind[i] == RangeKind::GpuAnnotation as u32 {
            continue;
        }
        let name = trace.name(r.name_id[i]);
        if keep(name) {
            out.push(Candidate {
                pid: r.pid[i],
                tid: r.tid[i],
                start: r.start_ns[i],
                end: r.end_ns[i],
                name_id: r.name_id[i],
                parsed: stepname::parse(name),
            });
        }
    }
    Ok(out)
}

/// Raw per-step record before series bookkeeping.
struct Raw {
    pid: i64,
    tid: Option<i64>,
    name: String,
    name_id: Option<u32>,
    kind: StepKind,
    composition: Option<BatchComposition>,
    cpu: Option<(i64, i64)>,
    launches: u64,
    launch_host_ns: i64,
    longest: Option<HostCall>,
    m: Measured,
}

fn project_range(
    ix: &Index<'_>,
    c: &Candidate,
    cats: &Categorizer,
    cache: &mut HashMap<u32, String>,
) -> Raw {
    let calls = &ix.calls;
    let mut ops: Vec<u32> = Vec::new();
    let (mut launches, mut launch_host_ns) = (0u64, 0i64);
    let mut longest: Option<(usize, i64)> = None;
    for &ci in ix.calls_in(c.pid, c.tid, c.start, c.end) {
        let ci = ci as usize;
        let dur = calls.end_ns[ci] - calls.start_ns[ci];
        if calls.is_launch[ci] != 0 {
            launches += 1;
            launch_host_ns += dur;
        } else if longest.is_none_or(|(_, d)| dur > d) {
            longest = Some((ci, dur));
        }
        if calls.correlation_id[ci] >= 0 {
            ops.extend_from_slice(ix.ops_of(c.pid, calls.correlation_id[ci]));
        }
    }
    let m = measure(ix, &mut ops, cats, cache);
    let (kind, composition) = match &c.parsed {
        Some(p) => (p.kind, Some(p.composition.clone())),
        None => (StepKind::Unknown, None),
    };
    Raw {
        pid: c.pid,
        tid: Some(c.tid),
        name: ix.trace.name(c.name_id).to_owned(),
        name_id: Some(c.name_id),
        kind,
        composition,
        cpu: Some((c.start, c.end)),
        launches,
        launch_host_ns,
        longest: longest.map(|(ci, d)| HostCall {
            name: ix.trace.name(calls.name_id[ci]).to_owned(),
            start_ns: calls.start_ns[ci],
            dur_ns: d,
        }),
        m,
    }
}

fn graph_steps(ix: &Index<'_>, cats: &Categorizer, cache: &mut HashMap<u32, String>) -> Vec<Raw> {
    let calls = &ix.calls;
    let mut out = Vec::new();
    for &ci in &ix.calls_by_thread {
        let ci = ci as usize;
        if !is_graph_launch_call(ix.trace.name(calls.name_id[ci])) {
            continue;
        }
        let mut ops: Vec<u32> = if calls.correlation_id[ci] >= 0 {
            ix.ops_of(calls.pid[ci], calls.correlation_id[ci]).to_vec()
        } else {
            Vec::new()
        };
        let m = measure(ix, &mut ops, cats, cache);
        let dur = calls.end_ns[ci] - calls.start_ns[ci];
        out.push(Raw {
            pid: calls.pid[ci],
            tid: Some(calls.tid[ci]),
            name: ix.trace.name(calls.name_id[ci]).to_owned(),
            name_id: None,
            kind: StepKind::Decode,
            composition: None,
            cpu: Some((calls.start_ns[ci], calls.end_ns[ci])),
            launches: 1,
            launch_host_ns: dur,
            longest: None,
            m,
        });
    }
    out
}

fn gap_steps(
    ix: &Index<'_>,
    threshold: i64,
    cats: &Categorizer,
    cache: &mut HashMap<u32, String>,
) -> Vec<Raw> {
    let o = &ix.ops;
    let mut order: Vec<u32> = (0..o.start_ns.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (o.device[i as usize], o.start_ns[i as usize]));
    // Launch calls by (pid, correlation id), to count the launches behind each group.
    let c = &ix.calls;
    let mut launch_by_corr: Vec<u32> = (0..c.start_ns.len() as u32)
        .filter(|&i| c.is_launch[i as usize] != 0 && c.correlation_id[i as usize] >= 0)
        .collect();
    launch_by_corr.sort_unstable_by_key(|&i| (c.pid[i as usize], c.correlation_id[i as usize]));
    let mut out = Vec::new();
    let mut lo = 0;
    while lo < order.len() {
        let dev = o.device[order[lo] as usize];
        let mut running = o.end_ns[order[lo] as usize];
        let mut hi = lo + 1;
        while hi < order.len() {
            let i = order[hi] as usize;
            if o.device[i] != dev || o.start_ns[i] > running + threshold {
                break;
            }
            running = running.max(o.end_ns[i]);
            hi += 1;
        }
        let mut ops: Vec<u32> = order[lo..hi].to_vec();
        let mut keys: Vec<(i64, i64)> = ops
            .iter()
            .map(|&i| (o.pid[i as usize], o.correlation_id[i as usize]))
            .filter(|k| k.1 >= 0)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let (mut launches, mut host) = (0u64, 0i64);
        for k in keys {
            let p = launch_by_corr
                .partition_point(|&i| (c.pid[i as usize], c.correlation_id[i as usize]) < k);
            if let Some(&ci) = launch_by_corr.get(p) {
                let ci = ci as usize;
                if (c.pid[ci], c.correlation_id[ci]) == k {
                    launches += 1;
                    host += c.end_ns[ci] - c.start_ns[ci];
                }
            }
        }
        let pid = o.pid[ops[0] as usize];
        let m = measure(ix, &mut ops, cats, cache);
        out.push(Raw {
            pid,
            tid: None,
            name: format!("[gap-split device {dev}]"),
            name_id: None,
            kind: StepKind::Unknown,
            composition: None,
            cpu: None,
            launches,
            launch_host_ns: host,
            longest: None,
            m,
        });
        lo = hi;
    }
    out
}

/// Linear-interpolated percentile (numpy's default) of sorted values.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn spread(mut v: Vec<f64>) -> Option<Spread> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(Spread {
        median: percentile(&v, 0.5),
        p10: percentile(&v, 0.1),
        p90: percentile(&v, 0.9),
    })
}

/// Per-kind summaries over the steps that have GPU work.
pub fn summarize(steps: &[Step]) -> Vec<KindSummary> {
    let mut kinds: Vec<StepKind> = steps
        .iter()
        .filter(|s| s.wall_ns.is_some())
        .map(|s| s.kind)
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|k| {
            let sel: Vec<&Step> = steps
                .iter()
                .filter(|s| s.kind == k && s.wall_ns.is_some())
                .collect();
            let col = |f: &dyn Fn(&Step) -> Option<f64>| {
                spread(sel.iter().filter_map(|s| f(s)).collect())
            };
            KindSummary {
                kind: k,
                count: sel.len(),
                wall_ns: col(&|s| s.wall_ns.map(|v| v as f64)),
                period_ns: col(&|s| s.period_ns.map(|v| v as f64)),
                busy_ns: col(&|s| Some(s.busy_ns as f64)),
                gap_ns: col(&|s| s.gap_ns.map(|v| v as f64)),
                launches: col(&|s| Some(s.launches as f64)),
            }
        })
        .collect()
}

/// Find and project every step in the trace.
pub fn find_steps(trace: &Trace, opts: &StepOptions, cats: &Categorizer) -> Result<StepsReport> {
    let ix = Index::new(trace)?;
    let mut cache = HashMap::new();
    let mut notes = Vec::new();
    let sglang_note = "SGLang's step span is a torch annotation, never NVTX: under nsys its steps come from \
        SGLANG_ENABLE_NVTX_SCHEDULER=1 ranges (--steps 'scheduler.run_batch') or from --steps graphs";
    let (method, raws) = match &opts.source {
        StepSource::Regex(re) => {
            let c = outermost(host_ranges(trace, |n| re.is_match(n))?);
            if c.is_empty() {
                return Err(Error::input(format!(
                    "no host range matches --steps {:?}; list range names with `stepgate analyze --format json` or try --steps graphs",
                    re.as_str()
                )));
            }
            (
                "regex",
                c.iter()
                    .map(|c| project_range(&ix, c, cats, &mut cache))
                    .collect(),
            )
        }
        StepSource::Graphs => {
            let r = graph_steps(&ix, cats, &mut cache);
            if r.is_empty() {
                return Err(Error::input(
                    "no CUDA-graph launches in this report: use --steps auto, a regex, or gaps",
                ));
            }
            notes.push("each CUDA-graph launch counted as one decode step (full-graph decode under vLLM/SGLang)".to_owned());
            ("graphs", r)
        }
        StepSource::Gaps => (
            "gaps",
            gap_steps(&ix, opts.gap_threshold_ns, cats, &mut cache),
        ),
        StepSource::Auto => {
            let c = outermost(host_ranges(trace, |n| {
                stepname::is_engine_step_name(n) && stepname::parse(n).is_some()
            })?);
            if !c.is_empty() {
                (
                    "engine",
                    c.iter()
                        .map(|c| project_range(&ix, c, cats, &mut cache))
                        .collect(),
                )
            } else {
                if trace.meta.format == SourceFormat::Nsys {
                    notes.push(format!("no vLLM `execute_…` or SGLang `step[…]` ranges in this report. {sglang_note}"));
                } else {
                    notes.push(
                        "no vLLM `execute_…` or SGLang `step[…]` annotations in this trace"
                            .to_owned(),
                    );
                }
                let g = graph_steps(&ix, cats, &mut cache);
                if !g.is_empty() {
                    notes.push("steps found from CUDA-graph launches: each replay counted as one decode step".to_owned());
                    ("graphs", g)
                } else {
                    notes.push(format!(
                        "steps found by splitting GPU activity at idle gaps over {} µs",
                        opts.gap_threshold_ns as f64 / 1e3
                    ));
                    (
                        "gaps",
                        gap_steps(&ix, opts.gap_threshold_ns, cats, &mut cache),
                    )
                }
            }
        }
    };
    if raws.iter().any(|r: &Raw| r.m.graph_replays > 0) {
        notes.push(
            "CUDA graphs were traced as opaque replays ([cuda graph N]): recapture with \
             nsys --cuda-graph-trace=node for per-kernel detail"
                .to_owned(),
        );
    }
    Ok(assemble(trace, method, notes, raws, opts))
}

fn assemble(
    trace: &Trace,
    method: &str,
    notes: Vec<String>,
    raws: Vec<Raw>,
    opts: &StepOptions,
) -> StepsReport {
    // Series: one per (pid, device), in host order (GPU order when there is no host
    // range). A step that launched nothing joins its process's device series.
    let mut pid_device: HashMap<i64, i64> = HashMap::new();
    for r in &raws {
        if let Some(d) = r.m.device {
            pid_device.entry(r.pid).or_insert(d);
        }
    }
    let dev_of = |r: &Raw| r.m.device.or_else(|| pid_device.get(&r.pid).copied());
    let mut keys: Vec<(i64, Option<i64>)> = raws.iter().map(|r| (r.pid, dev_of(r))).collect();
    keys.sort();
    keys.dedup();
    let gpu_ann = gpu_annotations(trace);
    let mut steps: Vec<Step> = raws
        .into_iter()
        .map(|r| {
            let device = dev_of(&r);
            let series = keys.binary_search(&(r.pid, device)).unwrap_or(0);
            let wall = match (r.m.gpu_start, r.m.gpu_end) {
                (Some(s), Some(e)) => Some(e - s),
                _ => None,
            };
            let (ann_s, ann_e) = match (r.name_id, r.m.device, r.m.gpu_start, r.m.gpu_end) {
                (Some(id), Some(d), Some(s), Some(e)) => gpu_ann
                    .get(&(d, id))
                    .and_then(|v| v.iter().find(|(a, b)| *a < e && *b > s).copied())
                    .map_or((None, None), |(a, b)| (Some(a), Some(b))),
                _ => (None, None),
            };
            Step {
                index: 0,
                series,
                pid: r.pid,
                tid: r.tid,
                device,
                name: r.name,
                kind: r.kind,
                composition: r.composition,
                cpu_start_ns: r.cpu.map(|c| c.0),
                cpu_end_ns: r.cpu.map(|c| c.1),
                cpu_ns: r.cpu.map(|c| c.1 - c.0),
                gpu_start_ns: r.m.gpu_start,
                gpu_end_ns: r.m.gpu_end,
                wall_ns: wall,
                period_ns: None,
                idle_before_ns: None,
                busy_ns: r.m.busy,
                gap_ns: wall.map(|w| w - r.m.busy),
                kernels: r.m.kernels,
                ops: r.m.all_kernels.iter().map(|k| k.instances).sum(),
                graph_replays: r.m.graph_replays,
                launches: r.launches,
                launch_host_ns: r.launch_host_ns,
                longest_host_call: r.longest,
                annotation_gpu_start_ns: ann_s,
                annotation_gpu_end_ns: ann_e,
                top_kernels: r
                    .m
                    .all_kernels
                    .iter()
                    .take(opts.top_kernels)
                    .cloned()
                    .collect(),
                categories: category_totals(
                    r.m.all_kernels
                        .iter()
                        .map(|k| (k.category.as_str(), k.instances, k.total_ns, k.exclusive_ns)),
                ),
                attribution: None,
                all_kernels: r.m.all_kernels,
            }
        })
        .collect();
    steps.sort_by_key(|s| {
        (
            s.series,
            s.gpu_start_ns.is_none(),
            s.gpu_start_ns.or(s.cpu_start_ns),
        )
    });
    // Period and idle-before within each series, over steps with GPU work.
    let mut series: Vec<Series> = keys
        .iter()
        .map(|&(pid, device)| Series {
            pid,
            device,
            steps: 0,
        })
        .collect();
    let mut i = 0;
    while i < steps.len() {
        let s = steps[i].series;
        let mut j = i;
        while j < steps.len() && steps[j].series == s {
            j += 1;
        }
        series[s].steps = j - i;
        for (n, k) in (i..j).enumerate() {
            steps[k].index = n;
        }
        let gpu: Vec<usize> = (i..j)
            .filter(|&k| steps[k].gpu_start_ns.is_some())
            .collect();
        for w in gpu.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (next_start, prev_end) = (
                steps[b].gpu_start_ns.unwrap_or(0),
                steps[a].gpu_end_ns.unwrap_or(0),
            );
            steps[a].period_ns = Some(next_start - steps[a].gpu_start_ns.unwrap_or(0));
            steps[b].idle_before_ns = Some(next_start - prev_end);
        }
        i = j;
    }
    let without = steps.iter().filter(|s| s.wall_ns.is_none()).count();
    let ranks = align_ranks(&steps, &series);
    StepsReport {
        method: method.to_owned(),
        launch_cost: None,
        shapes: Vec::new(),
        notes,
        summary: summarize(&steps),
        series,
        steps_without_gpu_work: without,
        ranks,
        steps,
    }
}

/// Kineto `gpu_user_annotation` spans by (device, name id).
fn gpu_annotations(trace: &Trace) -> HashMap<(i64, u32), Vec<(i64, i64)>> {
    let mut m: HashMap<(i64, u32), Vec<(i64, i64)>> = HashMap::new();
    if let Ok(r) = trace.ranges_view() {
        for i in 0..r.start_ns.len() {
            if r.kind[i] == RangeKind::GpuAnnotation as u32 {
                m.entry((r.pid[i], r.name_id[i]))
                    .or_default()
                    .push((r.start_ns[i], r.end_ns[i]));
            }
        }
    }
    m
}

/// With several ranks, align their GPU steps by order and name the slowest per step.
fn align_ranks(steps: &[Step], series: &[Series]) -> Vec<AlignedStep> {
    let with_gpu: Vec<usize> = (0..series.len())
        .filter(|&s| series[s].device.is_some())
        .collect();
    if with_gpu.len() < 2 {
        return Vec::new();
    }
    let per: Vec<Vec<&Step>> = with_gpu
        .iter()
        .map(|&s| {
            steps
                .iter()
                .filter(|x| x.series == s && x.wall_ns.is_some())
                .collect()
        })
        .collect();
    let n = per.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|i| {
            let (mut best, mut max_w, mut min_w) = (0, i64::MIN, i64::MAX);
            for (r, v) in per.iter().enumerate() {
                let w = v[i].wall_ns.unwrap_or(0);
                if w > max_w {
                    max_w = w;
                    best = r;
                }
                min_w = min_w.min(w);
            }
            let s = with_gpu[best];
            AlignedStep {
                index: i,
                slowest_series: s,
                slowest_pid: series[s].pid,
                slowest_device: series[s].device,
                max_wall_ns: max_w,
                min_wall_ns: min_w,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        assert!((percentile(&v, 0.1) - 1.3).abs() < 1e-12);
        assert!((percentile(&v, 0.9) - 3.7).abs() < 1e-12);
    }
}
