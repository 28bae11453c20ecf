//! Engine-step scenarios for every step-marker form stepgate is meant to read (vLLM V1
//! python stacks and annotations, SGLang, TensorRT-LLM, plain PyTorch, emit_nvtx, none at
//! all), written as Kineto traces or nsys exports from ONE host/GPU schedule, with the
//! steps they must yield computed from that schedule (plain arithmetic, no stepgate
//! analysis code): per step its GPU window, busy time, the tail launched after its span,
//! how it should be found and its kind.
//!
//! Schedule, per rank (one process, one device; one host thread and one stream unless the
//! scenario launches from another thread or to another stream): the host clock advances
//! through spans, launch calls (`LAUNCH_NS` each, `LAUNCH_GAP_NS` apart) and blocking
//! syncs (which return `SYNC_AFTER_NS` after every stream drains). Each GPU op starts at
//! `max(previous op end on its stream + KERNEL_GAP_NS, its call's end + LATENCY_NS)`; the
//! kernels of one graph replay run back to back. A step's busy time is the union of its
//! ops' intervals: the sum of their durations on one stream, less where two streams
//! overlap.
//!
//! Every op is tagged, when it is launched, with the engine iteration it belongs to and
//! whether it was launched inside the step's span (`busy`) or after it (`tail`).

use std::path::Path;

use crate::exit::{Error, Result};

mod emit;
mod host;
mod scenarios;
mod truth;

use crate::wire::synth::{Format, SeriesTruth, Truth};
use emit::{write_kineto, write_nsys};
use host::Host;
use scenarios::schedule;
use truth::series_truth;

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
    /// [`Scenario::VllmV1Python`] on one rank, with one decode whose host stalls 60 ms
    /// inside a nested `_prepare_inputs` frame before it launches its kernels: one long
    /// stall, and the Python frame it sits in.
    VllmV1PythonStall,
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
    /// A plain PyTorch training loop without `ProfilerStep#N`: `enumerate(DataLoader)#…`,
    /// `Optimizer.zero_grad#…` and `Optimizer.step#…` once per iteration on the main
    /// thread, backward launched from the autograd thread, DDP-style all-reduces on a
    /// second stream overlapping the backward kernels. The capture starts inside an
    /// iteration and ends with the loop's final `__next__` (StopIteration); under nsys
    /// (`emit_nvtx`) the names carry `, op_id = N` and aten ops are NVTX ranges too.
    PytorchTrain,
    /// A loop whose annotations recur but not in lockstep (`fetch`/`decode` swap places
    /// every iteration, `zero_grad` only once): no recurring cycle, the steps come from
    /// the blocking sync that ends each iteration.
    PytorchTrainUnstable,
    /// Contradictory markers: one ~1 s vLLM `execute_…` span around 20 SGLang
    /// `step[DECODE bs=8]` spans. The inner markers are the steps (and a warning says so).
    MarkersContradict,
}

impl Scenario {
    pub const ALL: [Scenario; 18] = [
        Scenario::VllmV1Python,
        Scenario::VllmV1PythonStall,
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
        Scenario::PytorchTrain,
        Scenario::PytorchTrainUnstable,
        Scenario::MarkersContradict,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::VllmV1Python => "vllm-v1-python",
            Scenario::VllmV1PythonStall => "vllm-v1-python-stall",
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
            Scenario::PytorchTrain => "pytorch-train",
            Scenario::PytorchTrainUnstable => "pytorch-train-unstable",
            Scenario::MarkersContradict => "markers-contradict",
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
            | Scenario::VllmV1PythonStall
            | Scenario::SglangStep
            | Scenario::SglangPython
            | Scenario::ProfilerStep
            | Scenario::PytorchTrainUnstable
            | Scenario::MarkersContradict => &[Kineto],
            Scenario::SglangNsysBare
            | Scenario::SglangScheduler
            | Scenario::Trtllm
            | Scenario::TrtllmOld
            | Scenario::EmitNvtx => &[Nsys],
            Scenario::VllmV1Python
            | Scenario::VllmExecuteContext
            | Scenario::VllmExecuteNew
            | Scenario::VllmCustomScopes
            | Scenario::SyncOnly
            | Scenario::PytorchTrain => &[Kineto, Nsys],
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
