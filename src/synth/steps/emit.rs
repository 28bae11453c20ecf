//! Writing a schedule: as a Kineto trace per rank (python frames, annotations with their GPU
//! spans, cpu ops, runtime/driver calls, kernels and copies) or as one nsys export for all
//! ranks (NVTX ranges in their domains, calls, kernels and copies).

use std::collections::HashMap;
use std::path::Path;

use crate::exit::Result;
use crate::synth::kineto::{DeviceProps, JId, KinetoWriter};
use crate::synth::writer::{
    event_type, CallRec, GpuRec, KernelRec, Layout, MemcpyRec, NsysWriter, NvtxName, NvtxRec,
};

use super::host::{Host, SpanKind};
use super::{KINETO_BASE_NS, START_NS, STREAM};

pub(super) fn write_kineto(h: &Host, world: u32, path: &Path) -> Result<()> {
    let mut w = KinetoWriter::new(KINETO_BASE_NS);
    for d in 0..world {
        w.device(DeviceProps::h100(d as i64));
    }
    if world > 1 {
        w.distributed(h.rank as i64, world as i64);
    }
    let pid = h.pid;
    w.metadata("process_name", pid, 0, "name", "VLLM::Worker");
    w.metadata("thread_name", pid, pid, "name", "python3");
    for &(tid, name) in &h.threads {
        w.metadata("thread_name", pid, tid, "name", name);
    }
    w.metadata("process_name", h.device, 0, "name", "python3");
    w.metadata(
        "process_labels",
        h.device,
        0,
        "labels",
        &format!("GPU {}", h.device),
    );
    for &(stream, _) in &h.free {
        w.metadata(
            "thread_name",
            h.device,
            stream,
            "name",
            &format!("stream {stream} "),
        );
    }
    let p = JId::Num(pid);
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
        w.complete(
            cat,
            &s.name,
            p,
            JId::Num(s.tid),
            s.start,
            s.end - s.start,
            &args,
        );
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
            .filter(|c| c.tid == s.tid && c.start >= s.start && c.end <= s.end)
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
        w.complete(
            cat,
            name,
            p,
            JId::Num(c.tid),
            c.start,
            c.end - c.start,
            &args,
        );
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
            "\"External id\": {ext}, \"queued\": 0, \"device\": {}, \"context\": 1, \"stream\": {}, \"correlation\": {}{extra}",
            h.device, op.stream, op.corr
        ));
        w.complete(
            cat,
            &h.names[op.name as usize],
            JId::Num(h.device),
            JId::Num(op.stream),
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

pub(super) fn write_nsys(hosts: &[Host], path: &Path) -> Result<()> {
    let mut w = NsysWriter::create(path, Layout::Nsys2026_2)?;
    if hosts
        .iter()
        .any(|h| h.ops.iter().any(|o| o.graph.is_some()))
    {
        w.graph_trace_mode("Node")?;
    }
    for h in hosts {
        let pid = h.pid;
        w.process(pid, "python3")?;
        w.thread(pid, pid, &format!("rank{}", h.rank))?;
        for &(tid, name) in &h.threads {
            w.thread(pid, tid, name)?;
        }
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
                        tid: pid,
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
                tid: s.tid,
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
                tid: c.tid,
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
                    stream: op.stream,
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
                        stream: op.stream,
                        pid,
                        correlation_id: Some(op.corr),
                        demangled_name: name,
                        short_name: name,
                        graph_node_id: op.graph.map(|g| g.1),
                        graph_id: op.graph.map(|g| g.0),
                        grid: None,
                    })?;
                }
            }
        }
    }
    w.finish()
}
