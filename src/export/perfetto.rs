//! `steps --perfetto FILE`: the found steps with the GPU work under them as a Chrome
//! trace-event JSON file that ui.perfetto.dev and chrome://tracing open.
//!
//! Layout (Trace Event Format, "JSON Object Format"; Kineto's own conventions so that
//! stepgate's Kineto reader loads the file back):
//! - GPU ops: complete events (`ph: "X"`) with `cat` `kernel` / `gpu_memcpy` /
//!   `gpu_memset`, `pid` = device, `tid` = stream, `args.correlation` joining them to the
//!   host call that launched them, and `args.exclusive_ns` (the op's share of the device's
//!   busy time, from the same sweep as `analyze`).
//! - Host calls: `cat` `cuda_runtime` / `cuda_driver` on their own process and thread.
//! - Steps: the host range of each step as a `user_annotation` on its thread (as the
//!   engine's annotation was), and one track per series (`cat: "stepgate.step"`, under
//!   the series' GPU process) with a slice per step spanning its GPU projection and the
//!   step's measurements in `args`.
//!
//! Times: `ts`/`dur` in µs with three decimals, i.e. exactly the integer ns stepgate
//! measured, relative to the report's origin.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write;

use crate::exit::{Error, Result};
use crate::timing::overlap::{exclusive_per_op, name_ranks};
use crate::trace::{CallApi, OpKind, Trace};
use crate::wire::steps::{Step, StepsReport};

/// Thread id of the per-series step track inside a GPU process: far above any stream id
/// so the track never merges with a stream.
pub(crate) const STEP_TRACK_TID: i64 = 1_000_000;

/// Steps to include: `index` in `[from, to)` of every series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepWindow {
    pub from: usize,
    pub to: usize,
}

impl StepWindow {
    /// Parse `A..B` (half-open, like a Rust range: steps A to B−1 of each series).
    pub fn parse(s: &str) -> Result<StepWindow> {
        let bad = || {
            Error::input(format!(
                "--perfetto-steps {s:?} is not A..B (step indices, B excluded, A < B), e.g. 100..200"
            ))
        };
        let (a, b) = s.split_once("..").ok_or_else(bad)?;
        let from: usize = a.trim().parse().map_err(|_| bad())?;
        let to: usize = b.trim().parse().map_err(|_| bad())?;
        if from >= to {
            return Err(bad());
        }
        Ok(StepWindow { from, to })
    }

    fn contains(&self, i: usize) -> bool {
        (self.from..self.to).contains(&i)
    }
}

/// `12345` ns → `12.345` (µs with three decimals, exact).
fn push_us(out: &mut String, ns: i64) {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:03}", a / 1000, a % 1000);
}

/// `s` as a JSON string literal, escaped in place (no allocation per event).
fn push_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// One complete event; `args` is a JSON object's body (without braces) or empty.
#[allow(clippy::too_many_arguments)]
fn push_x(
    out: &mut String,
    cat: &str,
    name: &str,
    pid: i64,
    tid: i64,
    ts: i64,
    dur: i64,
    args: &str,
) {
    out.push_str(",\n{\"ph\":\"X\",\"cat\":\"");
    out.push_str(cat);
    out.push_str("\",\"name\":");
    push_str(out, name);
    let _ = write!(out, ",\"pid\":{pid},\"tid\":{tid},\"ts\":");
    push_us(out, ts);
    out.push_str(",\"dur\":");
    push_us(out, dur.max(0));
    out.push_str(",\"args\":{");
    out.push_str(args);
    out.push_str("}}");
}

fn push_meta(out: &mut String, what: &str, pid: i64, tid: Option<i64>, name: &str) {
    let _ = write!(out, ",\n{{\"ph\":\"M\",\"name\":\"{what}\",\"pid\":{pid}");
    if let Some(t) = tid {
        let _ = write!(out, ",\"tid\":{t}");
    }
    out.push_str(",\"args\":{\"name\":");
    push_str(out, name);
    out.push_str("}}");
}

/// The step slice's `args`: what stepgate measured and derived for it.
fn step_args(s: &Step) -> String {
    let mut a = serde_json::Map::new();
    a.insert("series".into(), s.series.into());
    a.insert("index".into(), s.index.into());
    a.insert("kind".into(), s.kind.as_str().into());
    if let Some(c) = &s.composition {
        a.insert(
            "composition".into(),
            serde_json::to_value(c).unwrap_or_default(),
        );
    }
    a.insert("wall_ns".into(), s.wall_ns.into());
    a.insert("busy_ns".into(), s.busy_ns.into());
    a.insert("gap_ns".into(), s.gap_ns.into());
    a.insert("kernels".into(), s.kernels.into());
    a.insert("launches".into(), s.launches.into());
    if let Some(at) = &s.attribution {
        if let Some(f) = &at.floor {
            a.insert("floor_ns (derived)".into(), f.floor_ns.into());
            a.insert("mbu (derived)".into(), f.mbu.into());
        }
        a.insert("shape".into(), at.shape.as_str().into());
    }
    a.insert("found_by".into(), s.found_by.as_str().into());
    if let Some(g) = s.kind_guess {
        a.insert("kind_guess (heuristic)".into(), g.as_str().into());
    }
    if let Some(b) = s.batch_guess {
        a.insert("batch_guess (inferred)".into(), b.into());
    }
    a.insert("tail_busy_ns".into(), s.tail_busy_ns.into());
    let v = serde_json::Value::Object(a).to_string();
    // Body only: the caller adds the braces.
    v[1..v.len() - 1].to_owned()
}

/// The steps each series has, as `A..B` ranges: what a window outside them is told.
fn steps_held(report: &StepsReport) -> String {
    let mut by: std::collections::BTreeMap<usize, (usize, usize)> =
        std::collections::BTreeMap::new();
    for s in &report.steps {
        let e = by.entry(s.series).or_insert((s.index, s.index));
        e.0 = e.0.min(s.index);
        e.1 = e.1.max(s.index);
    }
    let ranges: Vec<String> = by
        .iter()
        .map(|(series, (a, b))| format!("{a}..{} (series {series})", b + 1))
        .collect();
    match ranges.as_slice() {
        [] => "the report has no steps".to_owned(),
        _ => format!("the report's steps are {}", ranges.join(", ")),
    }
}

/// The whole trace JSON for `report` (found on `trace`), cut to `window` when given. A
/// window that holds none of the report's steps is an input error, not an empty trace.
pub fn render(trace: &Trace, report: &StepsReport, window: Option<StepWindow>) -> Result<String> {
    let steps: Vec<&Step> = report
        .steps
        .iter()
        .filter(|s| window.is_none_or(|w| w.contains(s.index)))
        .collect();
    if let (Some(w), true) = (window, steps.is_empty()) {
        return Err(Error::input(format!(
            "--perfetto-steps {}..{} holds none of the steps: {}; give a range inside them",
            w.from,
            w.to,
            steps_held(report)
        )));
    }
    // The time span to keep: every selected step's host and GPU extent.
    let (t0, t1) = match window {
        None => (i64::MIN, i64::MAX),
        Some(_) => {
            let lo = steps
                .iter()
                .flat_map(|s| [s.cpu_start_ns, s.gpu_start_ns])
                .flatten()
                .min();
            let hi = steps
                .iter()
                .flat_map(|s| [s.cpu_end_ns, s.gpu_end_ns])
                .flatten()
                .max();
            match (lo, hi) {
                (Some(a), Some(b)) => (a, b),
                _ => (0, -1),
            }
        }
    };
    let inside = |s: i64, e: i64| s < t1 && e > t0 || (s == e && s >= t0 && s <= t1);

    let mut out = String::with_capacity(1 << 20);
    out.push_str("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"stepgate ");
    out.push_str(env!("CARGO_PKG_VERSION"));
    out.push_str("\",\"found_by\":");
    push_str(&mut out, report.found_by.as_str());
    out.push_str("},\"traceEvents\":[\n");
    // A first metadata event so every later one can start with a comma.
    out.push_str(
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":-1,\"args\":{\"name\":\"stepgate\"}}",
    );

    // GPU ops in the sweep order `analyze` uses, each with its exclusive time from that
    // sweep (computed in timing::overlap; this module only writes it out).
    let o = trace.ops_view()?;
    let ranks = name_ranks(&trace.strings);
    let (order, excl) = exclusive_per_op(o.device, o.start_ns, o.end_ns, o.name_id, &ranks);
    // Correlation ids are unique per process in nsys, but a Kineto file's reader joins on
    // the id alone: make them unique in the file by giving each process its own block
    // (after the blocks of the processes before it), which keeps them within the 32 bits
    // a reader holds.
    let c = trace.calls_view()?;
    let mut top: BTreeMap<i32, i64> = BTreeMap::new();
    for (&p, &id) in c
        .pid
        .iter()
        .zip(c.correlation_id)
        .chain(o.pid.iter().zip(o.correlation_id))
    {
        let m = top.entry(p).or_insert(-1);
        *m = (*m).max(i64::from(id));
    }
    let mut base: HashMap<i32, i64> = HashMap::with_capacity(top.len());
    let mut next = 0i64;
    for (p, m) in top {
        base.insert(p, next);
        next += m + 1;
    }
    let corr = |pid: i32, id: i32| -> i64 {
        if id < 0 {
            return i64::from(id);
        }
        base.get(&pid).copied().unwrap_or(0) + i64::from(id)
    };
    let mut tracks: BTreeSet<(i64, i64)> = BTreeSet::new();
    // Launches of the ops kept, so a window keeps each op's launching call even when the
    // call fell before the window: read back, the op then stays with the step (or the
    // outside time) it belonged to instead of losing its launch.
    let mut launched: HashSet<(i32, i32)> = HashSet::new();
    let mut args = String::with_capacity(128);
    for (k, &i) in order.iter().enumerate() {
        let i = i as usize;
        let (s, e) = (o.start_ns[i], o.end_ns[i]);
        if !inside(s, e) {
            continue;
        }
        if window.is_some() && o.correlation_id[i] >= 0 {
            launched.insert((o.pid[i], o.correlation_id[i]));
        }
        let cat = match OpKind::from_u32(o.kind[i]) {
            OpKind::Memcpy => "gpu_memcpy",
            OpKind::Memset => "gpu_memset",
            OpKind::Kernel | OpKind::Graph => "kernel",
        };
        args.clear();
        let _ = write!(
            args,
            "\"device\":{},\"stream\":{},\"correlation\":{},\"exclusive_ns\":{}",
            o.device[i],
            o.stream[i],
            corr(o.pid[i], o.correlation_id[i]),
            excl[k]
        );
        if OpKind::from_u32(o.kind[i]) == OpKind::Graph {
            args.push_str(",\"graph replay\":true");
        }
        let track = (i64::from(o.device[i]), i64::from(o.stream[i]));
        tracks.insert(track);
        // Kineto spells copies `Memcpy HtoD (…)` and fills `Memset (…)`; its reader maps
        // them back to stepgate's `[memcpy HtoD]` / `[memset]`.
        let name = trace.name(o.name_id[i]);
        let kineto_name;
        let name = match OpKind::from_u32(o.kind[i]) {
            OpKind::Memcpy => {
                let dir = name
                    .strip_prefix("[memcpy")
                    .map(|r| r.trim_end_matches(']').trim())
                    .unwrap_or("");
                kineto_name = format!("Memcpy {dir}");
                kineto_name.trim_end()
            }
            OpKind::Memset => "Memset",
            _ => name,
        };
        push_x(&mut out, cat, name, track.0, track.1, s, e - s, &args);
    }
    let devices: BTreeSet<i64> = tracks.iter().map(|t| t.0).collect();
    for &d in &devices {
        let gpu = trace
            .devices
            .iter()
            .find(|x| x.id == d)
            .and_then(|x| x.name.clone())
            .unwrap_or_else(|| "GPU".to_owned());
        push_meta(
            &mut out,
            "process_name",
            d,
            None,
            &format!("GPU {d} ({gpu})"),
        );
    }
    for &(d, s) in &tracks {
        push_meta(&mut out, "thread_name", d, Some(s), &format!("stream {s}"));
    }

    // Host calls on their threads.
    let mut threads: BTreeSet<(i64, i64)> = BTreeSet::new();
    for i in 0..c.start_ns.len() {
        if !inside(c.start_ns[i], c.end_ns[i])
            && !launched.contains(&(c.pid[i], c.correlation_id[i]))
        {
            continue;
        }
        let cat = if c.api(i) == CallApi::Driver as u32 {
            "cuda_driver"
        } else {
            "cuda_runtime"
        };
        args.clear();
        let _ = write!(
            args,
            "\"correlation\":{}",
            corr(c.pid[i], c.correlation_id[i])
        );
        let thread = (i64::from(c.pid[i]), c.tid[i]);
        threads.insert(thread);
        push_x(
            &mut out,
            cat,
            trace.name(c.name_id[i]),
            thread.0,
            thread.1,
            c.start_ns[i],
            c.end_ns[i] - c.start_ns[i],
            &args,
        );
    }

    // Steps: host range on the step's thread, and a slice on the series' step track.
    let mut series_tracks: BTreeSet<(i64, usize)> = BTreeSet::new();
    for s in &steps {
        if let (Some(a), Some(b), Some(tid)) = (s.cpu_start_ns, s.cpu_end_ns, s.tid) {
            threads.insert((s.pid, tid));
            push_x(
                &mut out,
                "user_annotation",
                &s.name,
                s.pid,
                tid,
                a,
                b - a,
                "",
            );
        }
        if let (Some(a), Some(b)) = (s.gpu_start_ns, s.gpu_end_ns) {
            let pid = s.device.unwrap_or(s.pid);
            let tid = STEP_TRACK_TID + s.series as i64;
            series_tracks.insert((pid, s.series));
            push_x(
                &mut out,
                "stepgate.step",
                &format!("{} {}", s.kind.as_str(), s.index),
                pid,
                tid,
                a,
                b - a,
                &step_args(s),
            );
        }
    }
    let host_pids: BTreeSet<i64> = threads.iter().map(|t| t.0).collect();
    for &p in &host_pids {
        if !devices.contains(&p) {
            push_meta(
                &mut out,
                "process_name",
                p,
                None,
                &format!("host process {p}"),
            );
        }
    }
    for &(p, t) in &threads {
        push_meta(&mut out, "thread_name", p, Some(t), &format!("thread {t}"));
    }
    for &(p, series) in &series_tracks {
        push_meta(
            &mut out,
            "thread_name",
            p,
            Some(STEP_TRACK_TID + series as i64),
            &format!("steps (series {series})"),
        );
        // Sort the step track first in the process.
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{p},\"tid\":{},\"args\":{{\"sort_index\":-1}}}}",
            STEP_TRACK_TID + series as i64
        );
    }
    out.push_str("\n]}\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_every_nanosecond() {
        let mut s = String::new();
        push_us(&mut s, 12_345);
        s.push(' ');
        push_us(&mut s, 7);
        s.push(' ');
        push_us(&mut s, -1_500);
        assert_eq!(s, "12.345 0.007 -1.500");
    }

    #[test]
    fn strings_are_valid_json() {
        let mut s = String::new();
        push_str(&mut s, "a\"b\\c\nd\u{1}é<>");
        let back: String = serde_json::from_str(&s).unwrap();
        assert_eq!(back, "a\"b\\c\nd\u{1}é<>");
    }

    #[test]
    fn windows_parse_half_open() {
        assert_eq!(
            StepWindow::parse("100..200").unwrap(),
            StepWindow { from: 100, to: 200 }
        );
        assert!(StepWindow::parse("5..5").is_err());
        assert!(StepWindow::parse("9..3").is_err());
        assert!(StepWindow::parse("a..3").is_err());
        assert!(StepWindow::parse("3").is_err());
        let w = StepWindow::parse("2..4").unwrap();
        assert!(!w.contains(1) && w.contains(2) && w.contains(3) && !w.contains(4));
    }
}
