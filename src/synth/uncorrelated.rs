//! Captures whose ops and calls carry correlation id 0, in both formats: CUPTI numbers
//! correlations from 1, so 0 means "no launching call" (docs/kineto-format.md §5,
//! docs/nsys-format.md §3), never one id that every such op shares. Each of a few vLLM
//! steps launches kernels with real ids, and also holds kernels and one runtime call
//! with id 0; [`write()`] returns what each step must yield.

use std::path::Path;

use crate::exit::Result;
use crate::synth::kineto::{DeviceProps, JId, KinetoWriter};
use crate::synth::workload::vllm_execute;
use crate::synth::writer::{event_type, CallRec, KernelRec, NvtxName, NvtxRec};
use crate::synth::{Layout, NsysWriter};

/// Which format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Nsys,
    Kineto,
}

/// One step as it must be found: its host span, and the kernels and GPU time it holds
/// through real correlation ids (`linked_*`) and through id 0 (`uncorrelated_*`: their
/// kernels start inside the step's span).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub cpu_start_ns: i64,
    pub cpu_end_ns: i64,
    pub linked_kernels: u64,
    pub linked_busy_ns: i64,
    pub uncorrelated_kernels: u64,
    pub uncorrelated_busy_ns: i64,
}

const PID: i64 = 4242;
const STREAM: i64 = 7;
const LAUNCHED: i64 = 4;
const UNCORRELATED: i64 = 2;
const LAUNCH_NAME: &str = "cudaLaunchKernel_v7000";

/// Every event of the scenario, format-free: `(kind, start, end, correlation, name)`.
enum Ev {
    Range(i64, i64, String),
    Call(i64, i64, i64),
    Kernel(i64, i64, i64, &'static str),
}

fn schedule(steps: usize) -> (Vec<Ev>, Vec<Step>) {
    let mut ev = Vec::new();
    let mut truth = Vec::new();
    let mut corr = 1;
    for k in 0..steps as i64 {
        let s = 1_000_000 + k * 1_000_000;
        let name = vllm_execute(0, 0, 4, 4);
        ev.push(Ev::Range(s, s + 500_000, name.clone()));
        for i in 0..LAUNCHED {
            let at = s + 10_000 + i * 50_000;
            ev.push(Ev::Call(at, at + 5_000, corr));
            ev.push(Ev::Kernel(at + 20_000, at + 40_000, corr, "gemm_kernel"));
            corr += 1;
        }
        // A launch call and kernels of id 0, inside the span.
        ev.push(Ev::Call(s + 250_000, s + 253_000, 0));
        for j in 0..UNCORRELATED {
            let at = s + 300_000 + j * 50_000;
            ev.push(Ev::Kernel(at, at + 10_000, 0, "uncorrelated_kernel"));
        }
        truth.push(Step {
            name,
            cpu_start_ns: s,
            cpu_end_ns: s + 500_000,
            linked_kernels: LAUNCHED as u64,
            linked_busy_ns: LAUNCHED * 20_000,
            uncorrelated_kernels: UNCORRELATED as u64,
            uncorrelated_busy_ns: UNCORRELATED * 10_000,
        });
    }
    (ev, truth)
}

/// Write `steps` steps in `format` to `path`; returns the steps it must yield.
pub fn write(path: &Path, format: Format, steps: usize) -> Result<Vec<Step>> {
    let (events, truth) = schedule(steps);
    match format {
        Format::Nsys => write_nsys(path, &events)?,
        Format::Kineto => write_kineto(path, &events)?,
    }
    Ok(truth)
}

fn write_nsys(path: &Path, events: &[Ev]) -> Result<()> {
    let mut w = NsysWriter::create(path, Layout::Nsys2026_2)?;
    w.process(PID, "python3")?;
    w.thread(PID, PID, "python3")?;
    let launch = w.string(LAUNCH_NAME)?;
    for e in events {
        match e {
            Ev::Range(s, end, name) => w.nvtx(&NvtxRec {
                start_ns: *s,
                end_ns: Some(*end),
                event_type: event_type::PUSH_POP,
                pid: PID,
                tid: PID,
                name: NvtxName::Text(name),
                domain_id: Some(0),
            })?,
            Ev::Call(s, end, corr) => w.call(&CallRec {
                start_ns: *s,
                end_ns: *end,
                pid: PID,
                tid: PID,
                correlation_id: Some(*corr),
                name: launch,
                ..CallRec::default()
            })?,
            Ev::Kernel(s, end, corr, name) => {
                let n = w.string(name)?;
                w.kernel(&KernelRec {
                    start_ns: *s,
                    end_ns: *end,
                    device: 0,
                    stream: STREAM,
                    pid: PID,
                    correlation_id: Some(*corr),
                    demangled_name: n,
                    short_name: n,
                    ..KernelRec::default()
                })?;
            }
        }
    }
    w.finish()
}

fn write_kineto(path: &Path, events: &[Ev]) -> Result<()> {
    let mut w = KinetoWriter::new(1_767_189_312_000_000_000);
    w.device(DeviceProps::h100(0));
    w.metadata("process_name", PID, 0, "name", "python3");
    for e in events {
        match e {
            Ev::Range(s, end, name) => w.complete(
                "user_annotation",
                name,
                JId::Num(PID),
                JId::Num(PID),
                *s,
                end - s,
                "",
            ),
            Ev::Call(s, end, corr) => w.complete(
                "cuda_runtime",
                "cudaLaunchKernel",
                JId::Num(PID),
                JId::Num(PID),
                *s,
                end - s,
                &format!("\"cbid\": 211, \"correlation\": {corr}"),
            ),
            Ev::Kernel(s, end, corr, name) => w.complete(
                "kernel",
                name,
                JId::Num(0),
                JId::Num(STREAM),
                *s,
                end - s,
                &format!("\"device\": 0, \"stream\": {STREAM}, \"correlation\": {corr}"),
            ),
        }
    }
    w.finish(path)
}
