//! [`KinetoWriter`]: writes a PyTorch-profiler (Kineto) Chrome trace the way libkineto's
//! `output_json.cpp` does: one JSON object with `schemaVersion`, `deviceProperties`,
//! metadata, `baseTimeNanoseconds`, `traceEvents` (complete `ph: "X"` events whose `ts`/`dur`
//! are microseconds with a 3-digit nanosecond fraction, relative to the base) and
//! `traceName`; gzip when the path ends in `.gz`, as `export_chrome_trace` does.
//! [`KinetoWriter::layout_2021`] writes the 2021 layout instead (docs/kineto-format.md
//! §12), and [`training_2021`] a training loop in it with the steps it must yield.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use crate::exit::{Error, Result};

/// A device in `deviceProperties` (CUDA keys).
#[derive(Debug, Clone)]
pub struct DeviceProps {
    pub id: i64,
    pub name: String,
    pub total_global_mem: i64,
    pub compute_major: i64,
    pub compute_minor: i64,
    pub num_sms: i64,
}

impl DeviceProps {
    /// An H100 SXM as the CUDA runtime reports it.
    pub fn h100(id: i64) -> Self {
        DeviceProps {
            id,
            name: "NVIDIA H100 80GB HBM3".to_owned(),
            total_global_mem: 85_029_158_912,
            compute_major: 9,
            compute_minor: 0,
            num_sms: 132,
        }
    }
}

/// Kineto's `fmtTs`: `{ns/1000}.{ns%1000:03}` (negative values are clamped to 0 by Kineto).
fn ts(out: &mut String, ns: i64) {
    let ns = ns.max(0);
    let _ = write!(out, "{}.{:03}", ns / 1000, ns % 1000);
}

/// JSON string body with Kineto's sanitising (quotes and backslashes escaped).
fn esc(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push('/'),
            '\n' | '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A `pid`/`tid` value: a number, or a string (Kineto's `"Spans"`, `""`).
#[derive(Debug, Clone, Copy)]
pub enum JId<'a> {
    Num(i64),
    Str(&'a str),
}

fn id(out: &mut String, v: JId<'_>) {
    match v {
        JId::Num(n) => {
            let _ = write!(out, "{n}");
        }
        JId::Str(s) => esc(out, s),
    }
}

/// Accumulates events, then writes the whole trace at once.
pub struct KinetoWriter {
    base_ns: i64,
    devices: Vec<DeviceProps>,
    rank: Option<(i64, i64)>,
    events: Vec<String>,
    /// The 2021 layout: absolute epoch times in integer µs, no `baseTimeNanoseconds` and
    /// no metadata keys besides `schemaVersion` and `deviceProperties`.
    legacy: bool,
}

impl KinetoWriter {
    /// `base_ns` is `baseTimeNanoseconds`; every time passed in is relative to it.
    pub fn new(base_ns: i64) -> Self {
        KinetoWriter {
            base_ns,
            devices: Vec::new(),
            rank: None,
            events: Vec::new(),
            legacy: false,
        }
    }

    /// A writer of the 2021 layout (PyTorch 1.8/1.9): every time passed in is absolute
    /// epoch ns and is written as integer µs (truncated), as those builds did.
    pub(crate) fn layout_2021() -> Self {
        KinetoWriter {
            legacy: true,
            ..KinetoWriter::new(0)
        }
    }

    fn time(&self, out: &mut String, ns: i64) {
        if self.legacy {
            let _ = write!(out, "{}", ns.max(0) / 1000);
        } else {
            ts(out, ns);
        }
    }

    pub fn device(&mut self, d: DeviceProps) {
        self.devices.push(d);
    }

    /// `distributedInfo` (backend nccl) with this rank and world size.
    pub fn distributed(&mut self, rank: i64, world_size: i64) {
        self.rank = Some((rank, world_size));
    }

    /// A complete (`ph: "X"`) event; `args` is the inner text of the args object (may be empty).
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        cat: &str,
        name: &str,
        pid: JId<'_>,
        tid: JId<'_>,
        start_ns: i64,
        dur_ns: i64,
        args: &str,
    ) {
        let mut e = String::with_capacity(96 + name.len() + args.len());
        e.push_str("{\n    \"ph\": \"X\", \"cat\": ");
        esc(&mut e, cat);
        e.push_str(", \"name\": ");
        esc(&mut e, name);
        e.push_str(", \"pid\": ");
        id(&mut e, pid);
        e.push_str(", \"tid\": ");
        id(&mut e, tid);
        e.push_str(",\n    \"ts\": ");
        self.time(&mut e, start_ns);
        e.push_str(", \"dur\": ");
        self.time(&mut e, dur_ns.max(0));
        if !args.is_empty() {
            e.push_str(",\n    \"args\": {\n      ");
            e.push_str(args);
            e.push_str("\n    }");
        }
        e.push_str("\n  }");
        self.events.push(e);
    }

    /// A `ph: "M"` metadata event (`process_name`, `thread_name`, `process_labels`, …).
    pub fn metadata(&mut self, what: &str, pid: i64, tid: i64, key: &str, value: &str) {
        let mut e = String::new();
        e.push_str("{\n    \"name\": ");
        esc(&mut e, what);
        let _ = write!(e, ", \"ph\": \"M\", \"ts\": 0.000, \"pid\": {pid}, \"tid\": {tid},\n    \"args\": {{\n      ");
        esc(&mut e, key);
        e.push_str(": ");
        esc(&mut e, value);
        e.push_str("\n    }\n  }");
        self.events.push(e);
    }

    /// A flow event (`s` on the launching call, `f` on the GPU op), as the 2021 layout
    /// writes them: category `async`, name `launch`, an integer `tid` even where the
    /// complete events spell it as a string.
    pub fn flow(&mut self, start: bool, id: i64, pid: i64, tid: i64, at_ns: i64) {
        let mut e = format!(
            "{{\n    \"ph\": \"{}\", \"id\": {id}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": ",
            if start { "s" } else { "f" }
        );
        self.time(&mut e, at_ns);
        e.push_str(", \"cat\": \"async\", \"name\": \"launch\"");
        if !start {
            e.push_str(", \"bp\": \"e\"");
        }
        e.push_str("\n  }");
        self.events.push(e);
    }

    /// The closing `Record Window End` instant (pid and tid are empty strings in Kineto).
    pub(crate) fn record_window_end(&mut self, at_ns: i64) {
        let mut e = String::from(
            "{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": ",
        );
        self.time(&mut e, at_ns);
        e.push_str("\n  }");
        self.events.push(e);
    }

    /// Write the trace to `path` (gzip when it ends in `.gz`).
    pub fn finish(self, path: &Path) -> Result<()> {
        let mut head = String::from("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
        for (i, d) in self.devices.iter().enumerate() {
            if i > 0 {
                head.push(',');
            }
            head.push_str("\n    {\n      \"id\": ");
            let _ = write!(head, "{}, \"name\": ", d.id);
            esc(&mut head, &d.name);
            let _ = write!(
                head,
                ", \"totalGlobalMem\": {},\n      \"computeMajor\": {}, \"computeMinor\": {},\n      \
                 \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \
                 \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n      \
                 \"sharedMemPerBlock\": 49152, \"sharedMemPerMultiprocessor\": 233472,\n      \
                 \"numSms\": {}, \"sharedMemPerBlockOptin\": 232448\n    }}",
                d.total_global_mem, d.compute_major, d.compute_minor, d.num_sms
            );
        }
        head.push_str("\n  ],\n");
        if self.legacy {
            head.push_str("  \"traceEvents\": [\n  ");
        } else {
            if let Some((rank, world)) = self.rank {
                let _ = writeln!(
                    head,
                    "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {world}}},"
                );
            }
            let _ = write!(
                head,
                "  \"with_stack\": 1,\n  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12080,\n  \
                 \"cuda_driver_version\": 12080,\n  \"trace_id\": \"SYNTHETIC\",\n  \
                 \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [\n  ",
                self.base_ns
            );
        }
        let io = |e: std::io::Error| Error::environment(format!("writing {}: {e}", path.display()));
        let file = std::fs::File::create(path).map_err(io)?;
        let gz = path.extension().is_some_and(|e| e == "gz");
        let mut out: Box<dyn Write> = if gz {
            Box::new(flate2::write::GzEncoder::new(
                std::io::BufWriter::new(file),
                flate2::Compression::fast(),
            ))
        } else {
            Box::new(std::io::BufWriter::new(file))
        };
        out.write_all(head.as_bytes()).map_err(io)?;
        for (i, e) in self.events.iter().enumerate() {
            if i > 0 {
                out.write_all(b",\n  ").map_err(io)?;
            }
            out.write_all(e.as_bytes()).map_err(io)?;
        }
        out.write_all(b"\n  ],\n  \"traceName\": \"synthetic.pt.trace.json\"\n}\n")
            .map_err(io)?;
        out.flush().map_err(io)?;
        drop(out);
        Ok(())
    }
}

/// One step of [`training_2021`] as step discovery must find it (ns, absolute epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step2021 {
    pub name: String,
    pub cpu_start_ns: i64,
    pub cpu_end_ns: i64,
    pub gpu_start_ns: i64,
    pub gpu_end_ns: i64,
    /// GPU time of what the step launched, from every thread of the process.
    pub busy_ns: i64,
    pub kernels: u64,
}

/// The 2021 layout's main and autograd threads, and its epoch origin (µs).
const PID_2021: i64 = 5555;
const AUTOGRAD_TID_2021: i64 = 5786;
const T0_2021_US: i64 = 1_623_212_388_000_000;

/// A training loop in the 2021 layout (PyTorch 1.9, docs/kineto-format.md §12): `steps`
/// iterations, each a `ProfilerStep#N` (`cat: "Operator"`, like every CPU op) holding a
/// data-loader `record_function`, `forward` aten ops on the main thread (tid `"5555"`), as
/// many autograd nodes on the autograd thread (`"5786"`) and an `Optimizer.step#SGD.step`
/// range; every op launches one kernel through a `Runtime` call with its correlation id
/// (`external id` in lower case, as then), kernels on `"stream 7"` of GPU 0, a zero-length
/// memset per step, flows with integer tids. Returns the steps it must yield.
pub fn training_2021(path: &Path, steps: usize, forward: usize) -> Result<Vec<Step2021>> {
    let us = |v: i64| v * 1000;
    let mut w = KinetoWriter::layout_2021();
    w.device(DeviceProps {
        name: "Tesla V100-DGXS-32GB".to_owned(),
        total_global_mem: 34_089_730_048,
        compute_major: 7,
        num_sms: 80,
        ..DeviceProps::h100(0)
    });
    w.metadata("process_name", PID_2021, 0, "name", "python");
    w.metadata("process_name", 0, 0, "name", "python");
    let main = JId::Str("5555");
    let autograd = JId::Str("5786");
    let stream = JId::Str("stream 7");
    let mut corr = 1;
    let mut truth = Vec::with_capacity(steps);
    for k in 0..steps {
        let start = T0_2021_US + k as i64 * (1000 + 400 * forward as i64 + 1000);
        let len = 100 + 400 * forward as i64 + 700;
        let name = format!("ProfilerStep#{}", k + 5);
        let args = |ext: i64| format!("\"Device\": {PID_2021}, \"External id\": {ext}");
        w.complete(
            "Operator",
            &name,
            JId::Num(PID_2021),
            main,
            us(start),
            us(len),
            &args(1),
        );
        w.complete(
            "Operator",
            "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            JId::Num(PID_2021),
            main,
            us(start + 10),
            us(60),
            &args(2),
        );
        let mut kernels: Vec<(i64, i64)> = Vec::new();
        // (op name, thread, start µs, kernel duration µs) of every launching operator.
        let mut launching: Vec<(String, JId<'_>, i64, i64)> = Vec::new();
        for j in 0..forward as i64 {
            launching.push(("aten::addmm".into(), main, start + 100 + j * 200, 100 + j));
        }
        let back = start + 100 + 200 * forward as i64;
        for j in 0..forward as i64 {
            launching.push(("AddmmBackward".into(), autograd, back + j * 200, 120 + j));
        }
        let opt = back + 200 * forward as i64;
        w.complete(
            "Operator",
            "Optimizer.step#SGD.step",
            JId::Num(PID_2021),
            main,
            us(opt),
            us(300),
            &args(3),
        );
        launching.push(("aten::add_".into(), main, opt + 50, 90));
        for (op, tid, at, kdur) in launching {
            let dims = "\"Input Dims\": [[32, 1024], [1024, 1024]], \"Input type\": [\"float\", \"float\"]";
            let seq = if op.ends_with("Backward") {
                ", \"Sequence number\": 7, \"Fwd thread id\": 1"
            } else {
                ""
            };
            w.complete(
                "Operator",
                &op,
                JId::Num(PID_2021),
                tid,
                us(at),
                us(150),
                &format!("{}, {dims}{seq}", args(corr + 100)),
            );
            let tid_num = if matches!(tid, JId::Str("5786")) {
                AUTOGRAD_TID_2021
            } else {
                PID_2021
            };
            w.complete(
                "Runtime",
                "cudaLaunchKernel",
                JId::Num(PID_2021),
                tid,
                us(at + 20),
                us(10),
                &format!(
                    "\"cbid\": 211, \"correlation\": {corr}, \"external id\": {}",
                    corr + 100
                ),
            );
            w.flow(true, corr, PID_2021, tid_num, us(at + 20));
            let ks = at + 60;
            w.complete(
                "Kernel",
                "volta_sgemm_128x64_nn",
                JId::Num(0),
                stream,
                us(ks),
                us(kdur),
                &format!(
                    "\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {corr}, \
                     \"external id\": {}, \"registers per thread\": 128, \"shared memory\": 32768, \
                     \"grid\": [8, 16, 1], \"block\": [256, 1, 1]",
                    corr + 100
                ),
            );
            w.flow(false, corr, 0, 7, us(ks));
            kernels.push((us(ks), us(ks + kdur)));
            corr += 1;
        }
        // A zero-length memset (integer µs round short copies down to 0).
        w.complete(
            "Runtime",
            "cudaMemsetAsync",
            JId::Num(PID_2021),
            main,
            us(opt + 200),
            us(8),
            &format!(
                "\"cbid\": 51, \"correlation\": {corr}, \"external id\": {}",
                corr + 100
            ),
        );
        w.complete(
            "Memset",
            "Memset (Device)",
            JId::Num(0),
            stream,
            us(opt + 240),
            0,
            &format!("\"device\": 0, \"context\": 1, \"stream\": 7, \"correlation\": {corr}, \"bytes\": 4"),
        );
        corr += 1;
        truth.push(Step2021 {
            name,
            cpu_start_ns: us(start),
            cpu_end_ns: us(start + len),
            gpu_start_ns: kernels.iter().map(|k| k.0).min().unwrap_or(0),
            gpu_end_ns: us(opt + 240).max(kernels.iter().map(|k| k.1).max().unwrap_or(0)),
            busy_ns: kernels.iter().map(|k| k.1 - k.0).sum(),
            kernels: kernels.len() as u64,
        });
    }
    w.finish(path)?;
    Ok(truth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_microseconds_with_a_nanosecond_fraction() {
        let mut s = String::new();
        ts(&mut s, 1_234_567);
        assert_eq!(s, "1234.567");
        s.clear();
        ts(&mut s, 5);
        assert_eq!(s, "0.005");
        s.clear();
        ts(&mut s, -3);
        assert_eq!(s, "0.000");
    }

    #[test]
    fn names_are_sanitised_as_kineto_does() {
        let mut s = String::new();
        esc(&mut s, "a\"b\\c\nd");
        assert_eq!(s, "\"a\\\"b/cd\"");
    }

    #[test]
    fn written_trace_is_valid_json() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        let mut w = KinetoWriter::new(1_767_189_312_000_000_000);
        w.device(DeviceProps::h100(0));
        w.distributed(0, 1);
        w.metadata("process_name", 7, 0, "name", "python3");
        w.complete(
            "kernel",
            "k",
            JId::Num(0),
            JId::Num(7),
            1500,
            2000,
            "\"device\": 0, \"stream\": 7, \"correlation\": 3",
        );
        w.record_window_end(9000);
        w.finish(&p).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let ev = &v["traceEvents"];
        assert_eq!(ev.as_array().unwrap().len(), 3);
        assert_eq!(ev[1]["ts"].as_f64(), Some(1.5));
        assert_eq!(ev[1]["args"]["correlation"].as_i64(), Some(3));
        assert_eq!(v["deviceProperties"][0]["numSms"].as_i64(), Some(132));
    }
}
