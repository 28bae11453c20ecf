//! Engine-step scenarios for every step-marker form stepgate is meant to read (vLLM V1
//! python stacks and annotations, SGLang, TensorRT-LLM, plain PyTorch, emit_nvtx, none at
//! all), written as Kineto traces or nsys exports from ONE host/GPU schedule, with the
//! steps they must yield computed from that schedule (plain arithmetic, no stepgate
//! analysis code): per step its GPU window, busy time, the tail launched after its span,
//! how it should be found and its kind.
//!
//! Schedule, per rank (one process, one host thread, one device, one stream): the host
//! clock advances through spans, launch calls (`LAUNCH_NS` each, `LAUNCH_GAP_NS` apart)
//! and blocking syncs (which return `SYNC_AFTER_NS` after the GPU drains). Each GPU op
//! starts at `max(previous op end + KERNEL_GAP_NS, its call's end + LATENCY_NS)`; the
//! kernels of one graph replay run back to back. One stream never overlaps itself, so a
//! step's busy time is the sum of its ops' durations.
//!
//! Every op is tagged, when it is launched, with the engine iteration it belongs to and
//! whether it was launched inside the step's span (`busy`) or after it (`tail`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::exit::{Error, Result};

use super::writer::event_class;

mod emit;
mod scenarios;

use emit::{write_kineto, write_nsys};
use scenarios::schedule;

const LAUNCH_NS: i64 = 4_000;
const LAUNCH_GAP_NS: i64 = 1_000;
const LATENCY_NS: i64 = 3_000;
const KERNEL_GAP_NS: i64 = 500;
const SYNC_AFTER_NS: i64 = 800;
const STREAM: i64 = 7;
/// Host time 0 of every rank (relative to the trace's own base).
const START_NS: i64 = 1_000_000;
/// `baseTimeNanoseconds` of Kineto files: 2025-12-31 13:55:12 UTC, a 3-month floor as
/// Kineto writes it.
const KINETO_BASE_NS: i64 = 1_767_189_312_000_000_000;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Kineto,
    Nsys,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Kineto => "kineto",
            Format::Nsys => "nsys",
        }
    }
}

/// Every scenario, one per row of the step-marker table (see `docs/steps.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// vLLM V1 0.8.x, torch profiler, TP=4, piecewise CUDA graphs (81 launches per decode
    /// with eager attention between), no annotation: python_function `execute_model` only;
    /// 1 prefill + 9 decodes + 1 step without GPU work; blocking `.tolist()` sync in-span.
    /// Its nsys form (same server, no python frames, no NVTX) has only the syncs.
    VllmV1Python,
    /// vLLM V1 ≥ 0.11.2 without annotation: `sample_tokens` after every `execute_model`
    /// launches the sampling kernels (the tail); TP=2.
    VllmV1PythonAsync,
    /// vLLM ≥ 0.14 `execute_context_N(T)_generation_M(U)` (and one detailed form), full-graph
    /// decodes, sampling after the span.
    VllmExecuteContext,
    /// vLLM 0.11.1–0.13 `execute_new_N_cached_M`.
    VllmExecuteNew,
    /// vLLM ≥ 0.11 custom scopes `gpu_model_runner: preprocess|forward|sample|bookkeep`.
    VllmCustomScopes,
    /// SGLang ≥ 0.5.15 torch trace: `step[EXTEND …]` / `step[DECODE …]` inside
    /// `scheduler.run_batch` and the python `run_batch` frame.
    SglangStep,
    /// SGLang before 0.5.15 (no `step[…]`), torch trace: python frames `scheduler.py(N):
    /// run_batch` with `tp_worker.py(N): forward_batch_generation` (sampling inside) only;
    /// the result copy and sync after `run_batch` are the tail.
    SglangPython,
    /// SGLang under nsys, no marker at all: decodes are one full `cudaGraphLaunch` each,
    /// extends are eager and end with a small DtoH copy + `cudaStreamSynchronize`.
    SglangNsysBare,
    /// SGLang under nsys with `SGLANG_ENABLE_NVTX_SCHEDULER=1`: `scheduler.*` NVTX stages.
    SglangScheduler,
    /// TensorRT-LLM PyExecutor, nsys: `[Executor] _forward_step {iter}: {n} ctx reqs,
    /// {t} ctx tokens, {m} gen reqs` in NVTX domain `TensorRT-LLM`; TP=2.
    Trtllm,
    /// TensorRT-LLM older forms: `[Executor] _forward_step {iter}: N ctx reqs, M gen reqs`
    /// and `_forward_step: …` without the executor prefix.
    TrtllmOld,
    /// Plain PyTorch `ProfilerStep#N`, back to back.
    ProfilerStep,
    /// `torch.autograd.profiler.emit_nvtx`: `execute_new_…, seq = N, op_id = M, sizes = […]`
    /// with aten-op NVTX ranges nested inside.
    EmitNvtx,
    /// No marker, no graph: eager steps, each ending with a DtoH copy and a blocking sync;
    /// TP=2.
    SyncOnly,
}

impl Scenario {
    pub const ALL: [Scenario; 14] = [
        Scenario::VllmV1Python,
        Scenario::VllmV1PythonAsync,
        Scenario::VllmExecuteContext,
        Scenario::VllmExecuteNew,
        Scenario::VllmCustomScopes,
        Scenario::SglangStep,
        Scenario::SglangPython,
        Scenario::SglangNsysBare,
        Scenario::SglangScheduler,
        Scenario::Trtllm,
        Scenario::TrtllmOld,
        Scenario::ProfilerStep,
        Scenario::EmitNvtx,
        Scenario::SyncOnly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::VllmV1Python => "vllm-v1-python",
            Scenario::VllmV1PythonAsync => "vllm-v1-python-async",
            Scenario::VllmExecuteContext => "vllm-execute-context",
            Scenario::VllmExecuteNew => "vllm-execute-new",
            Scenario::VllmCustomScopes => "vllm-custom-scopes",
            Scenario::SglangStep => "sglang-step",
            Scenario::SglangPython => "sglang-python",
            Scenario::SglangNsysBare => "sglang-nsys-bare",
            Scenario::SglangScheduler => "sglang-scheduler",
            Scenario::Trtllm => "trtllm",
            Scenario::TrtllmOld => "trtllm-old",
            Scenario::ProfilerStep => "pytorch-profilerstep",
            Scenario::EmitNvtx => "emit-nvtx",
            Scenario::SyncOnly => "sync-only",
        }
    }

    pub fn from_name(s: &str) -> Result<Scenario> {
        Scenario::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let all: Vec<&str> = Scenario::ALL.iter().map(|c| c.name()).collect();
                Error::input(format!(
                    "unknown scenario '{s}': use one of {}",
                    all.join(", ")
                ))
            })
    }

    /// The capture formats this engine/version can produce the marker in.
    pub fn formats(self) -> &'static [Format] {
        use Format::*;
        match self {
            Scenario::VllmV1PythonAsync
            | Scenario::SglangStep
            | Scenario::SglangPython
            | Scenario::ProfilerStep => &[Kineto],
            Scenario::SglangNsysBare
            | Scenario::SglangScheduler
            | Scenario::Trtllm
            | Scenario::TrtllmOld
            | Scenario::EmitNvtx => &[Nsys],
            Scenario::VllmV1Python
            | Scenario::VllmExecuteContext
            | Scenario::VllmExecuteNew
            | Scenario::VllmCustomScopes
            | Scenario::SyncOnly => &[Kineto, Nsys],
        }
    }

    fn ranks(self) -> u32 {
        match self {
            Scenario::VllmV1Python => 4,
            Scenario::VllmV1PythonAsync | Scenario::Trtllm | Scenario::SyncOnly => 2,
            _ => 1,
        }
    }
}

/// A parsed batch composition the marker carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompositionTruth {
    pub context_requests: u64,
    pub context_tokens: Option<u64>,
    pub generation_requests: u64,
}

/// What one step must measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTruth {
    pub index: usize,
    /// The step span's name (`None`: no span marks it).
    pub name: Option<String>,
    /// marker, scheduler, python, sync, graphs.
    pub found_by: String,
    /// decode/prefill/mixed… only when the marker says so, else unknown.
    pub kind: String,
    pub composition: Option<CompositionTruth>,
    /// First start / last end of the ops launched inside the span (`None`: no GPU work).
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
    /// Ops launched inside the span (for steps without a span: the whole iteration).
    pub busy_ns: i64,
    pub kernels: u64,
    pub ops: u64,
    /// Ops launched on the step's thread after its span and before the next step.
    pub tail_busy_ns: i64,
    pub tail_kernels: u64,
    pub tail_ops: u64,
    /// Graph launches inside the span.
    pub graph_launches: u64,
}

/// One rank's steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeriesTruth {
    pub rank: u32,
    pub pid: i64,
    pub tid: i64,
    pub device: i64,
    pub steps: Vec<StepTruth>,
    /// Ops launched before the first or after the last step.
    pub outside_busy_ns: i64,
    /// Every op of the device (= Σ busy + Σ tail + outside).
    pub device_busy_ns: i64,
    pub device_kernels: u64,
    pub device_ops: u64,
}

/// Ground truth of one generated capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    pub scenario: String,
    pub format: Format,
    /// The report-level `found_by` expected (`mixed` when steps differ).
    pub found_by: String,
    pub series: Vec<SeriesTruth>,
    /// Files written (one per rank for multi-rank Kineto, in a directory).
    pub files: Vec<PathBuf>,
}

// ---------------------------------------------------------------------------------------
// The schedule model.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SpanKind {
    /// `python_function` (Kineto only).
    Python,
    /// A record_function / NVTX range: Kineto `user_annotation`, nsys NVTX (with domain).
    Marker,
    /// `cpu_op` (Kineto only; noise).
    CpuOp,
    /// An NVTX range that exists only under nsys (emit_nvtx aten ops; noise).
    NvtxOnly,
}

#[derive(Debug, Clone)]
struct Span {
    kind: SpanKind,
    name: String,
    start: i64,
    end: i64,
    parent: Option<usize>,
    domain: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Launch,
    DriverLaunch,
    GraphLaunch,
    Memcpy,
    StreamSync,
    EventRecord,
    EventSync,
}

impl CallKind {
    fn kineto(self) -> (&'static str, &'static str, i64) {
        match self {
            CallKind::Launch => ("cuda_runtime", "cudaLaunchKernel", 211),
            CallKind::DriverLaunch => ("cuda_driver", "cuLaunchKernel", 307),
            CallKind::GraphLaunch => ("cuda_runtime", "cudaGraphLaunch", 311),
            CallKind::Memcpy => ("cuda_runtime", "cudaMemcpyAsync", 41),
            CallKind::StreamSync => ("cuda_runtime", "cudaStreamSynchronize", 131),
            CallKind::EventRecord => ("cuda_runtime", "cudaEventRecord", 135),
            CallKind::EventSync => ("cuda_runtime", "cudaEventSynchronize", 133),
        }
    }

    /// nsys names (runtime with its version suffix; driver without) and event class.
    fn nsys(self) -> (&'static str, i64) {
        match self {
            CallKind::Launch => ("cudaLaunchKernel_v7000", event_class::RUNTIME),
            CallKind::DriverLaunch => ("cuLaunchKernel", event_class::DRIVER),
            CallKind::GraphLaunch => ("cudaGraphLaunch_v10000", event_class::RUNTIME),
            CallKind::Memcpy => ("cudaMemcpyAsync_v3020", event_class::RUNTIME),
            CallKind::StreamSync => ("cudaStreamSynchronize_v3020", event_class::RUNTIME),
            CallKind::EventRecord => ("cudaEventRecord_v3020", event_class::RUNTIME),
            CallKind::EventSync => ("cudaEventSynchronize_v3020", event_class::RUNTIME),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Call {
    kind: CallKind,
    start: i64,
    end: i64,
    corr: i64,
    /// The span whose External id the call carries: its cpu_op (noise), else the innermost
    /// open record_function.
    owner: Option<usize>,
}

#[derive(Debug, Clone)]
struct Op {
    name: u32,
    start: i64,
    end: i64,
    corr: i64,
    /// (copyKind, bytes) for a memcpy; `None` for a kernel.
    memcpy: Option<(i64, i64)>,
    /// (graphId, graphNodeId) for a graph-replayed kernel.
    graph: Option<(i64, i64)>,
    /// (iteration, launched after the span).
    tag: Option<(usize, bool)>,
}

/// Per-step facts the scenario declares (the measured ones come from the ops).
#[derive(Debug, Clone)]
struct StepMeta {
    name: Option<String>,
    found_by: &'static str,
    kind: &'static str,
    composition: Option<CompositionTruth>,
    graph_launches: u64,
}

/// One rank's timeline, built by the scenario through its methods.
struct Host {
    rank: u32,
    pid: i64,
    device: i64,
    h: i64,
    gpu_free: i64,
    corr: i64,
    extra_ns: i64,
    noise: bool,
    names: Vec<String>,
    name_ids: HashMap<String, u32>,
    spans: Vec<Span>,
    stack: Vec<usize>,
    calls: Vec<Call>,
    ops: Vec<Op>,
    steps: Vec<StepMeta>,
    tag: Option<(usize, bool)>,
    /// Graph ids by the graph's key: a captured graph keeps its id across replays.
    graph_ids: HashMap<String, i64>,
}

/// Python frames wrapped around every launch when noise is on (the torch stack under a
/// model forward; `with_stack` makes them most of a real trace).
const NOISE_FRAMES: [&str; 10] = [
    "vllm/model_executor/models/llama.py(412): forward",
    "torch/nn/modules/module.py(1773): _wrapped_call_impl",
    "torch/nn/modules/module.py(1784): _call_impl",
    "vllm/model_executor/models/llama.py(318): forward",
    "torch/nn/modules/module.py(1773): _wrapped_call_impl",
    "torch/nn/modules/module.py(1784): _call_impl",
    "vllm/model_executor/layers/linear.py(565): forward",
    "vllm/model_executor/layers/quantization/utils/w8a8_utils.py(201): apply",
    "torch/_ops.py(1243): __call__",
    "torch/_ops.py(829): _op",
];

impl Host {
    fn new(rank: u32, noise: bool) -> Host {
        Host {
            rank,
            pid: 1000 + rank as i64,
            device: rank as i64,
            h: START_NS,
            gpu_free: START_NS,
            corr: 1,
            // Rank r's kernels run r × 50 ns longer: ranks differ, as real ones do.
            extra_ns: rank as i64 * 50,
            noise,
            names: Vec::new(),
            name_ids: HashMap::new(),
            spans: Vec::new(),
            stack: Vec::new(),
            calls: Vec::new(),
            ops: Vec::new(),
            steps: Vec::new(),
            tag: None,
            graph_ids: HashMap::new(),
        }
    }

    fn name_id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.name_ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_owned());
        self.name_ids.insert(s.to_owned(), i);
        i
    }

    fn open_in(&mut self, kind: SpanKind, name: &str, domain: Option<&'static str>) {
        self.spans.push(Span {
            kind,
            name: name.to_owned(),
            start: self.h,
            end: self.h,
            parent: self.stack.last().copied(),
            domain,
        });
        self.stack.push(self.spans.len() - 1);
        self.h += 500;
    }

    fn open(&mut self, kind: SpanKind, name: &str) {
        self.open_in(kind, name, None);
    }

    fn close(&mut self) {
        self.h += 400;
        if let Some(i) = self.stack.pop() {
            self.spans[i].end = self.h;
        }
        self.h += 200;
    }

    fn idle(&mut self, ns: i64) {
        self.h += ns;
    }

    /// Start iteration `i` (ops launched from now on are its busy part).
    fn begin(&mut self, meta: StepMeta) {
        self.steps.push(meta);
        self.tag = Some((self.steps.len() - 1, false));
    }

    /// Ops launched from now on are the current iteration's tail.
    fn tail(&mut self) {
        if let Some((i, _)) = self.tag {
            self.tag = Some((i, true));
        }
    }

    fn end(&mut self) {
        self.tag = None;
    }

    /// A call of `dur` host ns, with the noise frames around it.
    fn call(&mut self, kind: CallKind, dur: i64) -> Call {
        let owner = self
            .stack
            .iter()
            .rev()
            .copied()
            .find(|&i| self.spans[i].kind == SpanKind::Marker);
        let mut c = Call {
            kind,
            start: self.h,
            end: self.h + dur,
            corr: self.corr,
            owner,
        };
        self.corr += 1;
        if self.noise {
            let parent = self.stack.last().copied();
            let mut p = parent;
            for (d, f) in NOISE_FRAMES.iter().enumerate() {
                let inset = 300 - 20 * d as i64;
                self.spans.push(Span {
                    kind: SpanKind::Python,
                    name: (*f).to_owned(),
                    start: c.start - inset,
                    end: c.end + inset,
                    parent: p,
                    domain: None,
                });
                p = Some(self.spans.len() - 1);
            }
            let op = match kind {
                CallKind::GraphLaunch => "aten::_graph_replay",
                CallKind::Memcpy => "aten::copy_",
                CallKind::StreamSync | CallKind::EventSync => "aten::item",
                _ => "aten::mm",
            };
            self.spans.push(Span {
                kind: SpanKind::CpuOp,
                name: op.to_owned(),
                start: c.start - 100,
                end: c.end + 100,
                parent: p,
                domain: None,
            });
            c.owner = Some(self.spans.len() - 1);
        }
        self.calls.push(c);
        self.h = c.end + LAUNCH_GAP_NS;
        c
    }

    fn place(&mut self, call_end: i64, first: bool, dur: i64) -> (i64, i64) {
        let s = if first {
            (self.gpu_free + KERNEL_GAP_NS).max(call_end + LATENCY_NS)
        } else {
            self.gpu_free + KERNEL_GAP_NS
        };
        let e = s + dur;
        self.gpu_free = e;
        (s, e)
    }

    fn push_op(
        &mut self,
        name: &str,
        s: i64,
        e: i64,
        corr: i64,
        memcpy: Option<(i64, i64)>,
        graph: Option<(i64, i64)>,
    ) {
        let name = self.name_id(name);
        self.ops.push(Op {
            name,
            start: s,
            end: e,
            corr,
            memcpy,
            graph,
            tag: self.tag,
        });
    }

    fn kernel(&mut self, name: &str, dur: i64) {
        self.kernel_via(CallKind::Launch, name, dur);
    }

    fn kernel_via(&mut self, kind: CallKind, name: &str, dur: i64) {
        let c = self.call(kind, LAUNCH_NS);
        let (s, e) = self.place(c.end, true, dur + self.extra_ns);
        self.push_op(name, s, e, c.corr, None, None);
    }

    /// One `cudaGraphLaunch` replaying `kernels` (node-mode tracing: every kernel carries
    /// the launch's correlation id). The graph is keyed by its kernel count and names:
    /// an engine captures one graph per batch size and replays that same graph (same
    /// `graphId`) every step.
    fn graph(&mut self, kernels: &[(&str, i64)]) {
        let key = format!("{}:{}", kernels.len(), kernels.first().map_or("", |k| k.0));
        self.graph_keyed(&key, kernels);
    }

    /// A graph launch replaying the graph captured under `key` (vLLM's piecewise pieces
    /// hold the same kernels but are distinct graphs, one per piece).
    fn graph_keyed(&mut self, key: &str, kernels: &[(&str, i64)]) {
        let c = self.call(CallKind::GraphLaunch, LAUNCH_NS);
        let next = self.graph_ids.len() as i64 + 1;
        let g = *self.graph_ids.entry(key.to_owned()).or_insert(next);
        if let Some((i, false)) = self.tag {
            self.steps[i].graph_launches += 1;
        }
        for (n, (name, d)) in kernels.iter().enumerate() {
            let (s, e) = self.place(c.end, n == 0, d + self.extra_ns);
            self.push_op(
                name,
                s,
                e,
                c.corr,
                None,
                Some((g, g * 100_000 + n as i64 + 1)),
            );
        }
    }

    /// `cudaMemcpyAsync` (copyKind 1 HtoD, 2 DtoH) of `bytes`.
    fn memcpy(&mut self, kind: i64, bytes: i64) {
        let c = self.call(CallKind::Memcpy, LAUNCH_NS);
        let (s, e) = self.place(c.end, true, 1_000 + bytes / 20);
        let name = if kind == 2 {
            "Memcpy DtoH (Device -> Pinned)"
        } else {
            "Memcpy HtoD (Pinned -> Device)"
        };
        self.push_op(name, s, e, c.corr, Some((kind, bytes)), None);
    }

    /// A blocking sync: returns `SYNC_AFTER_NS` after the GPU has drained.
    fn sync(&mut self, kind: CallKind) {
        let dur = (self.gpu_free + SYNC_AFTER_NS - self.h).max(1_500);
        self.call(kind, dur);
    }

    /// The small DtoH copy of sampled token ids and the blocking wait on it (vLLM 0.8.x
    /// `.tolist()`, SGLang without overlap).
    fn copy_and_sync(&mut self) {
        self.memcpy(2, 256);
        self.sync(CallKind::StreamSync);
    }

    fn sampling(&mut self) {
        self.kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", 6_000);
        self.kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)", 4_000);
        self.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<long>, at::detail::Array<char*, 1>)", 1_500);
    }
}

/// The truth of one rank: plain sums over the tagged ops.
fn series_truth(h: &Host) -> SeriesTruth {
    let mut steps: Vec<StepTruth> = h
        .steps
        .iter()
        .enumerate()
        .map(|(i, m)| StepTruth {
            index: i,
            name: m.name.clone(),
            found_by: m.found_by.to_owned(),
            kind: m.kind.to_owned(),
            composition: m.composition.clone(),
            gpu_start_ns: None,
            gpu_end_ns: None,
            busy_ns: 0,
            kernels: 0,
            ops: 0,
            tail_busy_ns: 0,
            tail_kernels: 0,
            tail_ops: 0,
            graph_launches: m.graph_launches,
        })
        .collect();
    let mut s = SeriesTruth {
        rank: h.rank,
        pid: h.pid,
        tid: h.pid,
        device: h.device,
        steps: Vec::new(),
        outside_busy_ns: 0,
        device_busy_ns: 0,
        device_kernels: 0,
        device_ops: 0,
    };
    for op in &h.ops {
        let d = op.end - op.start;
        let is_kernel = op.memcpy.is_none() as u64;
        s.device_busy_ns += d;
        s.device_ops += 1;
        s.device_kernels += is_kernel;
        match op.tag {
            None => s.outside_busy_ns += d,
            Some((i, false)) => {
                let t = &mut steps[i];
                t.busy_ns += d;
                t.ops += 1;
                t.kernels += is_kernel;
                t.gpu_start_ns = Some(t.gpu_start_ns.map_or(op.start, |g| g.min(op.start)));
                t.gpu_end_ns = Some(t.gpu_end_ns.map_or(op.end, |g| g.max(op.end)));
            }
            Some((i, true)) => {
                let t = &mut steps[i];
                t.tail_busy_ns += d;
                t.tail_ops += 1;
                t.tail_kernels += is_kernel;
            }
        }
    }
    s.steps = steps;
    s
}

/// Write `scn` in `format` at `out` and return its truth. Multi-rank Kineto scenarios write
/// a directory `out` with one vLLM-named file per rank, as vLLM does.
pub fn build(scn: Scenario, format: Format, out: &Path) -> Result<Truth> {
    if !scn.formats().contains(&format) {
        let f: Vec<&str> = scn.formats().iter().map(|f| f.as_str()).collect();
        return Err(Error::input(format!(
            "scenario '{}' has no {} form (its marker exists in: {}); pick --format {}",
            scn.name(),
            format.as_str(),
            f.join(", "),
            f[0]
        )));
    }
    let world = scn.ranks();
    let hosts: Vec<Host> = (0..world).map(|r| schedule(scn, r, format)).collect();
    let mut files = Vec::new();
    match format {
        Format::Nsys => {
            write_nsys(&hosts, out)?;
            files.push(out.to_path_buf());
        }
        Format::Kineto if world == 1 => {
            write_kineto(&hosts[0], 1, out)?;
            files.push(out.to_path_buf());
        }
        Format::Kineto => {
            std::fs::create_dir_all(out)?;
            for h in &hosts {
                let p = out.join(format!(
                    "dp0_pp0_tp{r}_dcp0_ep0_rank{r}.{}.pt.trace.json.gz",
                    1_767_189_400_000_000_000i64 + h.rank as i64,
                    r = h.rank
                ));
                write_kineto(h, world, &p)?;
                files.push(p);
            }
        }
    }
    let series: Vec<SeriesTruth> = hosts.iter().map(series_truth).collect();
    let mut found: Vec<&str> = series
        .iter()
        .flat_map(|s| s.steps.iter().map(|t| t.found_by.as_str()))
        .collect();
    found.sort_unstable();
    found.dedup();
    let found_by = match found.as_slice() {
        [one] => (*one).to_owned(),
        _ => "mixed".to_owned(),
    };
    Ok(Truth {
        scenario: scn.name().to_owned(),
        format,
        found_by,
        series,
        files,
    })
}
