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

use super::kineto::{DeviceProps, JId, KinetoWriter};
use super::workload::decode_kernels;
use super::writer::{
    event_class, event_type, CallRec, GpuRec, KernelRec, Layout, MemcpyRec, NsysWriter, NvtxName,
    NvtxRec,
};

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
            Scenario::VllmV1Python
            | Scenario::VllmV1PythonAsync
            | Scenario::SglangStep
            | Scenario::SglangPython
            | Scenario::ProfilerStep => &[Kineto],
            Scenario::SglangNsysBare
            | Scenario::SglangScheduler
            | Scenario::Trtllm
            | Scenario::TrtllmOld
            | Scenario::EmitNvtx => &[Nsys],
            Scenario::VllmExecuteContext
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
    graph_id: i64,
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
            graph_id: 0,
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
    /// the launch's correlation id).
    fn graph(&mut self, kernels: &[(&str, i64)]) {
        let c = self.call(CallKind::GraphLaunch, LAUNCH_NS);
        self.graph_id += 1;
        let g = self.graph_id;
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

fn meta(name: Option<&str>, found_by: &'static str, kind: &'static str) -> StepMeta {
    StepMeta {
        name: name.map(str::to_owned),
        found_by,
        kind,
        composition: None,
        graph_launches: 0,
    }
}

fn comp_kind(ctx: u64, gen: u64) -> &'static str {
    match (ctx > 0, gen > 0) {
        (true, true) => "mixed",
        (true, false) => "prefill",
        (false, true) => "decode",
        (false, false) => "idle",
    }
}

/// `n` eager prefill kernels of `dur` each (the decode mix's names).
fn eager_kernels(h: &mut Host, n: usize, dur: i64) {
    for k in decode_kernels(n) {
        h.kernel(&k.name, dur);
    }
}

/// A vLLM piecewise decode: 81 graph pieces of 3 kernels (55 µs on average) with one eager
/// triton attention kernel (39 µs, `cuLaunchKernel`) between consecutive pieces.
fn piecewise_decode(h: &mut Host) {
    let mix = decode_kernels(3);
    for g in 0..81 {
        let d = 54_000 + (g % 3) as i64 * 1_000;
        let ks: Vec<(&str, i64)> = mix.iter().map(|k| (k.name.as_str(), d)).collect();
        h.graph(&ks);
        if g < 80 {
            h.kernel_via(
                CallKind::DriverLaunch,
                "kernel_unified_attention_2d",
                39_000,
            );
        }
    }
}

const VLLM_WORKER_LOOP: &str = "vllm/v1/executor/multiproc_executor.py(596): worker_busy_loop";

fn vllm_v1_python(h: &mut Host, asyncs: bool) {
    let (worker, runner) = if asyncs {
        (
            "vllm/v1/worker/gpu_worker.py(520): execute_model",
            "vllm/v1/worker/gpu_model_runner.py(2531): execute_model",
        )
    } else {
        (
            "vllm/v1/worker/gpu_worker.py(263): execute_model",
            "vllm/v1/worker/gpu_model_runner.py(1002): execute_model",
        )
    };
    h.open(SpanKind::Python, VLLM_WORKER_LOOP);
    // 1 prefill, 9 decodes, 1 step without GPU work.
    for i in 0..11 {
        h.idle(2_000_000);
        h.begin(meta(Some(worker), "python", "unknown"));
        h.open(SpanKind::Python, worker);
        h.open(SpanKind::Python, runner);
        if i < 10 {
            h.memcpy(1, 65_536);
            if i == 0 {
                eager_kernels(h, 400, 210_000);
            } else {
                piecewise_decode(h);
            }
            if !asyncs {
                h.sampling();
                h.copy_and_sync();
            }
        }
        h.close();
        h.close();
        if asyncs && i < 10 {
            h.tail();
            h.idle(30_000);
            h.open(
                SpanKind::Python,
                "vllm/v1/worker/gpu_worker.py(497): sample_tokens",
            );
            h.sampling();
            h.memcpy(2, 256);
            h.call(CallKind::EventRecord, 2_000);
            h.sync(CallKind::EventSync);
            h.close();
        }
        h.end();
    }
    h.close();
}

/// vLLM ≥ 0.14 / 0.11.1–0.13 annotations: prefill, 7 full-graph decodes, one mixed step;
/// sampling after the span (the tail). A `capture_32_FULL` range with no GPU work precedes.
fn vllm_annotated(h: &mut Host, new_form: bool) {
    h.open(SpanKind::Python, VLLM_WORKER_LOOP);
    h.open(SpanKind::Marker, "capture_32_FULL");
    h.close();
    let decode = decode_kernels(200);
    let graph: Vec<(&str, i64)> = decode
        .iter()
        .map(|k| (k.name.as_str(), k.duration_ns))
        .collect();
    for i in 0..9 {
        h.idle(300_000);
        let (ctx, toks, gen) = match i {
            0 => (2, 4096, 0),
            8 => (1, 2048, 5),
            _ => (0, 0, 2),
        };
        let name = if new_form {
            // New requests vs cached ones: a decode step schedules only cached requests.
            format!("execute_new_{ctx}_cached_{gen}")
        } else if i == 8 {
            super::workload::vllm_execute_detailed(
                toks + gen,
                [ctx, toks, toks, toks * toks, toks * toks],
                [gen, gen, 5_000, gen, 5_000],
            )
        } else {
            super::workload::vllm_execute(ctx, toks, gen, gen)
        };
        let mut m = meta(Some(&name), "marker", comp_kind(ctx, gen));
        m.composition = Some(CompositionTruth {
            context_requests: ctx,
            context_tokens: (!new_form).then_some(toks),
            generation_requests: gen,
        });
        h.begin(m);
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 16_384);
        if ctx > 0 {
            eager_kernels(h, 120, 40_000 + 2_000 * ctx as i64);
        } else {
            h.graph(&graph);
        }
        h.close();
        h.tail();
        h.sampling();
        h.memcpy(2, 64);
        h.sync(CallKind::StreamSync);
        h.end();
    }
    h.close();
}

fn vllm_custom_scopes(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(160)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    for _ in 0..8 {
        h.idle(250_000);
        h.open(SpanKind::Marker, "gpu_model_runner: preprocess");
        h.close();
        h.begin(meta(
            Some("gpu_model_runner: forward"),
            "scheduler",
            "unknown",
        ));
        h.open(SpanKind::Marker, "gpu_model_runner: forward");
        h.graph(&graph);
        h.close();
        h.tail();
        h.open(SpanKind::Marker, "gpu_model_runner: sample");
        h.sampling();
        h.close();
        h.open(SpanKind::Marker, "gpu_model_runner: bookkeep");
        h.copy_and_sync();
        h.close();
        h.end();
    }
}

fn sglang_step(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    h.open(
        SpanKind::Python,
        "sglang/srt/managers/scheduler.py(1012): event_loop_normal",
    );
    for i in 0..10 {
        h.idle(200_000);
        let extend = i == 0 || i == 5;
        let name = if extend {
            super::workload::sglang_step("EXTEND", 4, Some(4096))
        } else {
            super::workload::sglang_step("DECODE", 4, None)
        };
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/scheduler.py(2261): run_batch",
        );
        h.open(SpanKind::Marker, "scheduler.run_batch");
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/tp_worker.py(361): forward_batch_generation",
        );
        let kind = if extend { "prefill" } else { "decode" };
        h.begin(meta(Some(&name), "marker", kind));
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 8_192);
        if extend {
            eager_kernels(h, 150, 30_000);
        } else {
            h.graph(&graph);
        }
        h.close();
        h.tail();
        h.sampling();
        h.close();
        h.close();
        h.close();
        h.memcpy(2, 32);
        h.sync(CallKind::StreamSync);
        h.end();
    }
    h.close();
}

fn sglang_python(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let run_batch = "sglang/srt/managers/scheduler.py(1378): run_batch";
    h.open(
        SpanKind::Python,
        "sglang/srt/managers/scheduler.py(702): event_loop_normal",
    );
    for i in 0..10 {
        h.idle(180_000);
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/scheduler.py(1030): get_next_batch_to_run",
        );
        h.close();
        h.begin(meta(Some(run_batch), "python", "unknown"));
        h.open(SpanKind::Python, run_batch);
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/tp_worker.py(212): forward_batch_generation",
        );
        h.memcpy(1, 8_192);
        if i % 5 == 0 {
            eager_kernels(h, 150, 30_000);
        } else {
            h.graph(&graph);
        }
        h.sampling();
        h.close();
        h.close();
        h.tail();
        h.open(
            SpanKind::Python,
            "sglang/srt/managers/scheduler.py(1501): process_batch_result",
        );
        h.copy_and_sync();
        h.close();
        h.end();
    }
    h.close();
}

fn sglang_nsys_bare(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    // 4 extend steps at a stable period, then 12 decodes (one full graph each, no sync).
    for i in 0..16 {
        if i < 4 {
            h.idle(100_000);
            h.begin(meta(None, "sync", "unknown"));
            h.memcpy(1, 8_192);
            eager_kernels(h, 100, 30_000);
            h.copy_and_sync();
        } else {
            // Decodes block on no CUDA call: the host is paced by the scheduler (it polls
            // the previous step's copy), so each graph starts after the last one drained
            // and the GPU idles ~150 µs between them.
            h.idle(1_700_000);
            h.begin(meta(None, "graphs", "unknown"));
            h.graph(&graph);
        }
        h.end();
    }
}

fn sglang_scheduler(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(240)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    for i in 0..10 {
        h.idle(120_000);
        h.open(SpanKind::Marker, "scheduler.recv_requests");
        h.close();
        h.open(SpanKind::Marker, "scheduler.get_next_batch_to_run");
        h.close();
        h.begin(meta(Some("scheduler.run_batch"), "scheduler", "unknown"));
        h.open(SpanKind::Marker, "scheduler.run_batch");
        h.memcpy(1, 8_192);
        if i == 0 {
            eager_kernels(h, 100, 30_000);
        } else {
            h.graph(&graph);
        }
        h.sampling();
        h.close();
        h.tail();
        h.open(SpanKind::Marker, "scheduler.process_batch_result");
        h.copy_and_sync();
        h.close();
        h.end();
    }
}

fn trtllm(h: &mut Host, old: bool) {
    // Durations of an 8B model at batch 8 (a decode reads ~16 GB of weights: ≈ 6.6 ms
    // here, above its memory floor on an H100, as a real step is).
    let graph: Vec<(String, i64)> = decode_kernels(224)
        .into_iter()
        .map(|k| (k.name, k.duration_ns * 5))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    // iterations 100..=111: a context step, decodes, a mixed one.
    for i in 0..12u64 {
        let iter = 100 + i;
        h.idle(80_000);
        let (ctx, toks, gen) = match i {
            0 => (4, 2048, 0),
            6 => (1, 512, 7),
            _ => (0, 0, 8),
        };
        let name = if !old {
            format!("[Executor] _forward_step {iter}: {ctx} ctx reqs, {toks} ctx tokens, {gen} gen reqs")
        } else if i % 2 == 0 {
            format!("[Executor] _forward_step {iter}: {ctx} ctx reqs, {gen} gen reqs")
        } else {
            format!("_forward_step: {ctx} ctx reqs, {gen} gen reqs")
        };
        let mut m = meta(Some(&name), "marker", comp_kind(ctx, gen));
        m.composition = Some(CompositionTruth {
            context_requests: ctx,
            context_tokens: (!old).then_some(toks),
            generation_requests: gen,
        });
        h.begin(m);
        h.open_in(SpanKind::Marker, &name, Some("TensorRT-LLM"));
        h.memcpy(1, 4_096);
        if ctx > 0 {
            eager_kernels(h, 96, 400_000);
        } else {
            h.graph(&graph);
        }
        h.sampling();
        h.close();
        // _update_requests: the sampled tokens come back after the step's range.
        h.tail();
        h.memcpy(2, 64);
        h.sync(CallKind::EventSync);
        h.end();
    }
}

/// `ProfilerStep#N`, back to back: each one ends where the next begins (the host moves on
/// without a gap because `profiler.step()` closes one and opens the next).
fn profiler_step(h: &mut Host) {
    for n in 3..9 {
        let name = format!("ProfilerStep#{n}");
        h.begin(meta(Some(&name), "marker", "unknown"));
        h.open(SpanKind::Marker, &name);
        h.memcpy(1, 4_096);
        eager_kernels(h, 60, 12_000);
        h.copy_and_sync();
        h.idle(40_000);
        // close without the usual slack so the next one starts where this one ends.
        if let Some(i) = h.stack.pop() {
            h.spans[i].end = h.h;
        }
        h.end();
    }
}

fn emit_nvtx(h: &mut Host) {
    let graph: Vec<(String, i64)> = decode_kernels(120)
        .into_iter()
        .map(|k| (k.name, k.duration_ns))
        .collect();
    let graph: Vec<(&str, i64)> = graph.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let mut op_id = 40;
    for i in 0..6u64 {
        h.idle(200_000);
        let (new, cached) = if i == 0 { (3, 0) } else { (0, 3) };
        let base = format!("execute_new_{new}_cached_{cached}");
        let name = format!("{base}, op_id = {op_id}");
        op_id += 1;
        let mut m = meta(Some(&name), "marker", comp_kind(new, cached));
        m.composition = Some(CompositionTruth {
            context_requests: new,
            context_tokens: None,
            generation_requests: cached,
        });
        h.begin(m);
        h.open(SpanKind::Marker, &name);
        for k in 0..4 {
            let aten = format!(
                "aten::mm, seq = {}, op_id = {op_id}, sizes = [[3, 4096], [4096, 4096]]",
                100 + i * 4 + k
            );
            op_id += 1;
            h.open(SpanKind::NvtxOnly, &aten);
            h.kernel(graph[k as usize].0, 20_000);
            h.close();
        }
        if i > 0 {
            h.graph(&graph);
        } else {
            eager_kernels(h, 40, 30_000);
        }
        h.close();
        h.tail();
        h.copy_and_sync();
        h.end();
    }
}

fn sync_only(h: &mut Host) {
    for i in 0..10 {
        h.idle(90_000);
        h.begin(meta(None, "sync", "unknown"));
        h.memcpy(1, 2_048);
        eager_kernels(h, 50 + (i % 2) * 10, 20_000);
        h.copy_and_sync();
        h.end();
    }
}

fn schedule(scn: Scenario, rank: u32, format: Format) -> Host {
    // Python/cpu_op noise exists only in torch traces; the big vLLM one carries it.
    let noise = format == Format::Kineto
        && matches!(
            scn,
            Scenario::VllmV1Python
                | Scenario::VllmV1PythonAsync
                | Scenario::SglangStep
                | Scenario::SglangPython
        );
    let mut h = Host::new(rank, noise);
    match scn {
        Scenario::VllmV1Python => vllm_v1_python(&mut h, false),
        Scenario::VllmV1PythonAsync => vllm_v1_python(&mut h, true),
        Scenario::VllmExecuteContext => vllm_annotated(&mut h, false),
        Scenario::VllmExecuteNew => vllm_annotated(&mut h, true),
        Scenario::VllmCustomScopes => vllm_custom_scopes(&mut h),
        Scenario::SglangStep => sglang_step(&mut h),
        Scenario::SglangPython => sglang_python(&mut h),
        Scenario::SglangNsysBare => sglang_nsys_bare(&mut h),
        Scenario::SglangScheduler => sglang_scheduler(&mut h),
        Scenario::Trtllm => trtllm(&mut h, false),
        Scenario::TrtllmOld => trtllm(&mut h, true),
        Scenario::ProfilerStep => profiler_step(&mut h),
        Scenario::EmitNvtx => emit_nvtx(&mut h),
        Scenario::SyncOnly => sync_only(&mut h),
    }
    h
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

// ---------------------------------------------------------------------------------------
// Writers.

fn write_kineto(h: &Host, world: u32, path: &Path) -> Result<()> {
    let mut w = KinetoWriter::new(KINETO_BASE_NS);
    for d in 0..world {
        w.device(DeviceProps::h100(d as i64));
    }
    if world > 1 {
        w.distributed(h.rank as i64, world as i64);
    }
    let (pid, tid) = (h.pid, h.pid);
    w.metadata("process_name", pid, 0, "name", "VLLM::Worker");
    w.metadata("thread_name", pid, tid, "name", "python3");
    w.metadata("process_name", h.device, 0, "name", "python3");
    w.metadata(
        "process_labels",
        h.device,
        0,
        "labels",
        &format!("GPU {}", h.device),
    );
    w.metadata("thread_name", h.device, STREAM, "name", "stream 7 ");
    let (p, t) = (JId::Num(pid), JId::Num(tid));
    // External ids: annotations and cpu ops get one each; calls inherit the innermost.
    let mut ext_of_span = vec![0i64; h.spans.len()];
    let mut next_ext = 1i64;
    let mut python_id = vec![0i64; h.spans.len()];
    let mut next_py = 1i64;
    for (i, s) in h.spans.iter().enumerate() {
        match s.kind {
            SpanKind::Marker | SpanKind::CpuOp => {
                ext_of_span[i] = next_ext;
                next_ext += 1;
            }
            SpanKind::Python => {
                python_id[i] = next_py;
                next_py += 1;
            }
            SpanKind::NvtxOnly => {}
        }
    }
    let mut args = String::new();
    for (i, s) in h.spans.iter().enumerate() {
        args.clear();
        let cat = match s.kind {
            SpanKind::Python => {
                let mut parent = s.parent;
                while let Some(pi) = parent {
                    if h.spans[pi].kind == SpanKind::Python {
                        break;
                    }
                    parent = h.spans[pi].parent;
                }
                let pp = parent.map_or(0, |pi| python_id[pi]);
                args.push_str(&format!(
                    "\"Python parent id\": {pp}, \"Python id\": {}, \"Ev Idx\": {i}",
                    python_id[i]
                ));
                "python_function"
            }
            SpanKind::Marker => {
                args.push_str(&format!(
                    "\"External id\": {}, \"Record function id\": 0, \"Ev Idx\": {i}",
                    ext_of_span[i]
                ));
                "user_annotation"
            }
            SpanKind::CpuOp => {
                args.push_str(&format!(
                    "\"External id\": {}, \"Record function id\": 0, \"Ev Idx\": {i}",
                    ext_of_span[i]
                ));
                "cpu_op"
            }
            SpanKind::NvtxOnly => continue,
        };
        w.complete(cat, &s.name, p, t, s.start, s.end - s.start, &args);
    }
    // GPU spans of annotations: over the ops whose call lies inside the annotation, 1 ns
    // earlier and 2 ns longer, as Kineto writes them.
    let mut op_window: HashMap<i64, (i64, i64)> = HashMap::new();
    for op in &h.ops {
        let e = op_window.entry(op.corr).or_insert((op.start, op.end));
        e.0 = e.0.min(op.start);
        e.1 = e.1.max(op.end);
    }
    for (i, s) in h.spans.iter().enumerate() {
        if s.kind != SpanKind::Marker {
            continue;
        }
        let mut win: Option<(i64, i64)> = None;
        for c in h
            .calls
            .iter()
            .filter(|c| c.start >= s.start && c.end <= s.end)
        {
            if let Some(&(a, b)) = op_window.get(&c.corr) {
                win = Some(win.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
        }
        if let Some((a, b)) = win {
            w.complete(
                "gpu_user_annotation",
                &s.name,
                JId::Num(h.device),
                JId::Num(STREAM),
                a - 1,
                b - a + 2,
                &format!("\"External id\": {}", ext_of_span[i]),
            );
        }
    }
    let mut ext_of_corr: HashMap<i64, i64> = HashMap::new();
    for c in &h.calls {
        let (cat, name, cbid) = c.kind.kineto();
        let ext = c.owner.map_or(0, |i| ext_of_span[i]);
        ext_of_corr.insert(c.corr, ext);
        args.clear();
        args.push_str(&format!(
            "\"cbid\": {cbid}, \"correlation\": {}, \"External id\": {ext}",
            c.corr
        ));
        w.complete(cat, name, p, t, c.start, c.end - c.start, &args);
    }
    for op in &h.ops {
        let ext = ext_of_corr.get(&op.corr).copied().unwrap_or(0);
        args.clear();
        let (cat, extra) = match op.memcpy {
            Some((_, bytes)) => (
                "gpu_memcpy",
                format!(
                    ", \"bytes\": {bytes}, \"memory bandwidth (GB/s)\": {:.3}",
                    bytes as f64 / (op.end - op.start).max(1) as f64
                ),
            ),
            None => (
                "kernel",
                ", \"registers per thread\": 32, \"shared memory\": 0, \"blocks per SM\": 1.0, \
                 \"warps per SM\": 4.0, \"grid\": [132, 1, 1], \"block\": [128, 1, 1], \
                 \"est. achieved occupancy %\": 6"
                    .to_owned(),
            ),
        };
        args.push_str(&format!(
            "\"External id\": {ext}, \"queued\": 0, \"device\": {}, \"context\": 1, \"stream\": {STREAM}, \"correlation\": {}{extra}",
            h.device, op.corr
        ));
        w.complete(
            cat,
            &h.names[op.name as usize],
            JId::Num(h.device),
            JId::Num(STREAM),
            op.start,
            op.end - op.start,
            &args,
        );
    }
    let last = h.ops.iter().map(|o| o.end).max().unwrap_or(h.h).max(h.h);
    // The whole-capture span Kineto adds (string pid and tid).
    w.complete(
        "Trace",
        "PyTorch Profiler (0)",
        JId::Str("Spans"),
        JId::Str("PyTorch Profiler"),
        0,
        last + 1_000,
        "\"Op count\": 0",
    );
    w.record_window_end(last + 1_000);
    w.finish(path)
}

fn write_nsys(hosts: &[Host], path: &Path) -> Result<()> {
    let mut w = NsysWriter::create(path, Layout::Nsys2026_2)?;
    if hosts
        .iter()
        .any(|h| h.ops.iter().any(|o| o.graph.is_some()))
    {
        w.graph_trace_mode("Node")?;
    }
    for h in hosts {
        let (pid, tid) = (h.pid, h.pid);
        w.process(pid, "python3")?;
        w.thread(pid, tid, &format!("rank{}", h.rank))?;
        w.gpu(&GpuRec {
            id: h.device,
            name: "NVIDIA H100 80GB HBM3".to_owned(),
            memory_bandwidth_bytes_per_s: 3_352_000_000_000,
            sm_count: 132,
            total_memory_bytes: 85_520_809_984,
        })?;
        // Domains: a "domain create" row (eventType 75, no end) names each domain id once.
        let mut domains: HashMap<&str, i64> = HashMap::new();
        for s in &h.spans {
            if let Some(d) = s.domain {
                if !domains.contains_key(d) {
                    let id = domains.len() as i64 + 1;
                    domains.insert(d, id);
                    w.nvtx(&NvtxRec {
                        start_ns: START_NS,
                        end_ns: None,
                        event_type: event_type::DOMAIN_CREATE,
                        pid,
                        tid,
                        name: NvtxName::Text(d),
                        domain_id: Some(id),
                    })?;
                }
            }
        }
        for s in &h.spans {
            if !matches!(s.kind, SpanKind::Marker | SpanKind::NvtxOnly) {
                continue;
            }
            w.nvtx(&NvtxRec {
                start_ns: s.start,
                end_ns: Some(s.end),
                event_type: event_type::PUSH_POP,
                pid,
                tid,
                name: NvtxName::Text(&s.name),
                domain_id: Some(s.domain.map_or(0, |d| domains[d])),
            })?;
        }
        for c in &h.calls {
            let (name, class) = c.kind.nsys();
            let name = w.string(name)?;
            w.call(&CallRec {
                start_ns: c.start,
                end_ns: c.end,
                event_class: class,
                pid,
                tid,
                correlation_id: Some(c.corr),
                name,
            })?;
        }
        for op in &h.ops {
            match op.memcpy {
                Some((kind, bytes)) => w.memcpy(&MemcpyRec {
                    start_ns: op.start,
                    end_ns: op.end,
                    device: h.device,
                    stream: STREAM,
                    pid,
                    correlation_id: Some(op.corr),
                    copy_kind: kind,
                    bytes,
                    graph_node_id: None,
                })?,
                None => {
                    let name = w.string(&h.names[op.name as usize])?;
                    w.kernel(&KernelRec {
                        start_ns: op.start,
                        end_ns: op.end,
                        device: h.device,
                        stream: STREAM,
                        pid,
                        correlation_id: Some(op.corr),
                        demangled_name: name,
                        short_name: name,
                        graph_node_id: op.graph.map(|g| g.1),
                        graph_id: op.graph.map(|g| g.0),
                    })?
                }
            }
        }
    }
    w.finish()
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
