//! [`KinetoWriter`]: writes a PyTorch-profiler (Kineto) Chrome trace the way libkineto's
//! `output_json.cpp` does: one JSON object with `schemaVersion`, `deviceProperties`,
//! metadata, `baseTimeNanoseconds`, `traceEvents` (complete `ph: "X"` events whose `ts`/`dur`
//! are microseconds with a 3-digit nanosecond fraction, relative to the base) and
//! `traceName`; gzip when the path ends in `.gz`, as `export_chrome_trace` does.

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
}

impl KinetoWriter {
    /// `base_ns` is `baseTimeNanoseconds`; every time passed in is relative to it.
    pub fn new(base_ns: i64) -> Self {
        KinetoWriter {
            base_ns,
            devices: Vec::new(),
            rank: None,
            events: Vec::new(),
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
        ts(&mut e, start_ns);
        e.push_str(", \"dur\": ");
        ts(&mut e, dur_ns.max(0));
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

    /// The closing `Record Window End` instant (pid and tid are empty strings in Kineto).
    pub fn record_window_end(&mut self, at_ns: i64) {
        let mut e = String::from(
            "{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": ",
        );
        ts(&mut e, at_ns);
        e.push_str("\n  }");
        self.events.push(e);
    }

    pub fn event_count(&self) -> usize {
        self.events.len()
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
