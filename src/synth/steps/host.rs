//! The schedule model: one rank's host timeline (threads, spans, calls) and the GPU ops
//! its calls place on their streams, each op tagged with the iteration it belongs to
//! (`truth` computes a rank's truth from those tags).

use std::collections::HashMap;

use super::{KERNEL_GAP_NS, LATENCY_NS, LAUNCH_GAP_NS, LAUNCH_NS, START_NS, STREAM, SYNC_AFTER_NS};
use crate::synth::writer::event_class;
use crate::wire::synth::CompositionTruth;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanKind {
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
pub struct Span {
    pub kind: SpanKind,
    /// The host thread it runs on.
    pub tid: i64,
    pub name: String,
    pub start: i64,
    pub end: i64,
    pub parent: Option<usize>,
    pub domain: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallKind {
    Launch,
    DriverLaunch,
    GraphLaunch,
    Memcpy,
    StreamSync,
    EventRecord,
    EventSync,
}

impl CallKind {
    pub fn kineto(self) -> (&'static str, &'static str, i64) {
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
    pub fn nsys(self) -> (&'static str, i64) {
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
pub struct Call {
    pub kind: CallKind,
    pub tid: i64,
    pub start: i64,
    pub end: i64,
    pub corr: i64,
    /// The span whose External id the call carries: its cpu_op (noise), else the innermost
    /// open record_function.
    pub owner: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub name: u32,
    pub stream: i64,
    pub start: i64,
    pub end: i64,
    pub corr: i64,
    /// (copyKind, bytes) for a memcpy; `None` for a kernel.
    pub memcpy: Option<(i64, i64)>,
    /// (graphId, graphNodeId) for a graph-replayed kernel.
    pub graph: Option<(i64, i64)>,
    /// (iteration, launched after the span).
    pub tag: Option<(usize, bool)>,
}

/// Per-step facts the scenario declares (the measured ones come from the ops).
#[derive(Debug, Clone)]
pub(crate) struct StepMeta {
    pub name: Option<String>,
    pub found_by: &'static str,
    pub kind: &'static str,
    pub composition: Option<CompositionTruth>,
    pub graph_launches: u64,
}

/// One rank's timeline, built by the scenario through its methods.
pub struct Host {
    pub rank: u32,
    pub pid: i64,
    pub device: i64,
    pub h: i64,
    /// The host thread now launching (the process's main thread, `pid`, unless a
    /// scenario switches, e.g. to an autograd thread).
    pub tid: i64,
    /// Other threads of the process, with their names.
    pub threads: Vec<(i64, &'static str)>,
    /// The stream now launched to, and when each stream used so far is free again.
    pub stream: i64,
    pub free: Vec<(i64, i64)>,
    pub corr: i64,
    pub extra_ns: i64,
    pub noise: bool,
    pub names: Vec<String>,
    pub name_ids: HashMap<String, u32>,
    pub spans: Vec<Span>,
    pub stack: Vec<usize>,
    pub calls: Vec<Call>,
    pub ops: Vec<Op>,
    pub steps: Vec<StepMeta>,
    pub tag: Option<(usize, bool)>,
    /// Graph ids by the graph's key: a captured graph keeps its id across replays.
    pub graph_ids: HashMap<String, i64>,
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
    pub fn new(rank: u32, noise: bool) -> Host {
        let pid = 1000 + rank as i64;
        Host {
            rank,
            pid,
            device: rank as i64,
            h: START_NS,
            tid: pid,
            threads: Vec::new(),
            stream: STREAM,
            free: vec![(STREAM, START_NS)],
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

    pub fn name_id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.name_ids.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_owned());
        self.name_ids.insert(s.to_owned(), i);
        i
    }

    /// Launch from thread `tid` from now on (named `name` in the capture).
    pub(crate) fn on_thread(&mut self, tid: i64, name: &'static str) {
        if tid != self.pid && !self.threads.iter().any(|t| t.0 == tid) {
            self.threads.push((tid, name));
        }
        self.tid = tid;
    }

    /// Launch to `stream` from now on.
    pub(crate) fn on_stream(&mut self, stream: i64) {
        if !self.free.iter().any(|f| f.0 == stream) {
            self.free.push((stream, START_NS));
        }
        self.stream = stream;
    }

    /// When the current stream is free again.
    fn free_mut(&mut self) -> &mut i64 {
        let k = self.stream;
        let at = self.free.iter().position(|f| f.0 == k).unwrap_or(0);
        &mut self.free[at].1
    }

    /// When every stream has drained.
    fn drained(&self) -> i64 {
        self.free.iter().map(|f| f.1).max().unwrap_or(START_NS)
    }

    pub(crate) fn open_in(&mut self, kind: SpanKind, name: &str, domain: Option<&'static str>) {
        self.spans.push(Span {
            kind,
            tid: self.tid,
            name: name.to_owned(),
            start: self.h,
            end: self.h,
            parent: self.stack.last().copied(),
            domain,
        });
        self.stack.push(self.spans.len() - 1);
        self.h += 500;
    }

    pub fn open(&mut self, kind: SpanKind, name: &str) {
        self.open_in(kind, name, None);
    }

    pub fn close(&mut self) {
        self.h += 400;
        if let Some(i) = self.stack.pop() {
            self.spans[i].end = self.h;
        }
        self.h += 200;
    }

    pub fn idle(&mut self, ns: i64) {
        self.h += ns;
    }

    /// Start iteration `i` (ops launched from now on are its busy part).
    pub(crate) fn begin(&mut self, meta: StepMeta) {
        self.steps.push(meta);
        self.tag = Some((self.steps.len() - 1, false));
    }

    /// Ops launched from now on are the current iteration's tail.
    pub fn tail(&mut self) {
        if let Some((i, _)) = self.tag {
            self.tag = Some((i, true));
        }
    }

    pub fn end(&mut self) {
        self.tag = None;
    }

    /// A call of `dur` host ns, with the noise frames around it.
    pub fn call(&mut self, kind: CallKind, dur: i64) -> Call {
        let owner = self
            .stack
            .iter()
            .rev()
            .copied()
            .find(|&i| self.spans[i].kind == SpanKind::Marker);
        let mut c = Call {
            kind,
            tid: self.tid,
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
                    tid: self.tid,
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
                tid: self.tid,
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

    /// An op of `dur` on the current stream: after the stream's previous op, and (the
    /// first op of a call) after the call's launch latency. Streams run independently, so
    /// ops of two streams overlap in time.
    pub fn place(&mut self, call_end: i64, first: bool, dur: i64) -> (i64, i64) {
        let free = self.free_mut();
        let s = if first {
            (*free + KERNEL_GAP_NS).max(call_end + LATENCY_NS)
        } else {
            *free + KERNEL_GAP_NS
        };
        let e = s + dur;
        *free = e;
        (s, e)
    }

    pub(crate) fn push_op(
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
            stream: self.stream,
            start: s,
            end: e,
            corr,
            memcpy,
            graph,
            tag: self.tag,
        });
    }

    pub fn kernel(&mut self, name: &str, dur: i64) {
        self.kernel_via(CallKind::Launch, name, dur);
    }

    pub(crate) fn kernel_via(&mut self, kind: CallKind, name: &str, dur: i64) {
        let c = self.call(kind, LAUNCH_NS);
        let (s, e) = self.place(c.end, true, dur + self.extra_ns);
        self.push_op(name, s, e, c.corr, None, None);
    }

    /// One `cudaGraphLaunch` replaying `kernels` (node-mode tracing: every kernel carries
    /// the launch's correlation id). The graph is keyed by its kernel count and names:
    /// an engine captures one graph per batch size and replays that same graph (same
    /// `graphId`) every step.
    pub fn graph(&mut self, kernels: &[(&str, i64)]) {
        let key = format!("{}:{}", kernels.len(), kernels.first().map_or("", |k| k.0));
        self.graph_keyed(&key, kernels);
    }

    /// A graph launch replaying the graph captured under `key` (vLLM's piecewise pieces
    /// hold the same kernels but are distinct graphs, one per piece).
    pub(crate) fn graph_keyed(&mut self, key: &str, kernels: &[(&str, i64)]) {
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
    pub fn memcpy(&mut self, kind: i64, bytes: i64) {
        let c = self.call(CallKind::Memcpy, LAUNCH_NS);
        let (s, e) = self.place(c.end, true, 1_000 + bytes / 20);
        let name = if kind == 2 {
            "Memcpy DtoH (Device -> Pinned)"
        } else {
            "Memcpy HtoD (Pinned -> Device)"
        };
        self.push_op(name, s, e, c.corr, Some((kind, bytes)), None);
    }

    /// A blocking sync: returns `SYNC_AFTER_NS` after every stream has drained.
    pub fn sync(&mut self, kind: CallKind) {
        let dur = (self.drained() + SYNC_AFTER_NS - self.h).max(1_500);
        self.call(kind, dur);
    }

    /// The small DtoH copy of sampled token ids and the blocking wait on it (vLLM 0.8.x
    /// `.tolist()`, SGLang without overlap).
    pub(crate) fn copy_and_sync(&mut self) {
        self.memcpy(2, 256);
        self.sync(CallKind::StreamSync);
    }

    pub fn sampling(&mut self) {
        self.kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", 6_000);
        self.kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)", 4_000);
        self.kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<long>, at::detail::Array<char*, 1>)", 1_500);
    }
}
