//! One `traceEvents` element → what stepgate keeps of it. Categories are decided from
//! `ph`/`cat` before the rest is read, so the >90 % of events that are `python_function`
//! or `cpu_op` cost only the structural scan that found their end. A `python_function`
//! is kept only when its name ends like an engine step function (a byte suffix check on
//! the raw name, before anything is allocated).

use super::number::int_text;
use super::scan::{Cur, JStr, Val};

/// What an event is, for stepgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    Driver,
    /// CPU `user_annotation` (a `record_function` span such as `execute_…`, `step[…]`).
    Annotation,
    /// `gpu_user_annotation`: Kineto's GPU-side span of an annotation.
    GpuAnnotation,
    /// `python_function` whose name is an engine step function (see [`is_step_function`]).
    Python,
    /// `ph: "M"` metadata (process names).
    Meta,
    Skip,
}

/// Category names, with the older capitalised spellings one HTA fixture uses (§3).
fn class_of_cat(cat: &[u8]) -> Class {
    match cat {
        b"kernel" | b"Kernel" => Class::Kernel,
        b"gpu_memcpy" | b"Memcpy" => Class::Memcpy,
        b"gpu_memset" | b"Memset" => Class::Memset,
        b"cuda_runtime" | b"Runtime" => Class::Runtime,
        b"cuda_driver" | b"Driver" => Class::Driver,
        b"user_annotation" => Class::Annotation,
        b"gpu_user_annotation" => Class::GpuAnnotation,
        b"python_function" => Class::Python,
        _ => Class::Skip,
    }
}

/// Step functions of the engines, as python_function names end (`file.py(N): func`):
/// vLLM V1 `gpu_worker`/`gpu_model_runner` `execute_model`; SGLang scheduler `run_batch`
/// and `_run_batch_inner`, tp_worker `forward_batch_generation`, the ≤ 0.5.2 overlap
/// thread's `forward_thread_func_`. Step discovery checks the file part.
const STEP_FUNCTIONS: [&[u8]; 5] = [
    b"): execute_model",
    b"): run_batch",
    b"): _run_batch_inner",
    b"): forward_batch_generation",
    b"): forward_thread_func_",
];

/// Whether a raw (still escaped) python_function name can be a step function.
pub fn is_step_function(raw: &[u8]) -> bool {
    STEP_FUNCTIONS.iter().any(|s| raw.ends_with(s))
}

/// A `pid`/`tid` value: a number, or a string such as SGLang's merged
/// `"[TP01-DP00] 6583"` (docs/engines.md §2.3) or Kineto's `"Spans"`, `""`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Id<'a> {
    /// The numeric part, if any.
    pub num: Option<i64>,
    /// The `[…]` rank label of a merged trace.
    pub label: Option<&'a [u8]>,
}

fn parse_id(v: Val<'_>) -> Id<'_> {
    match v {
        Val::Scalar(t) => Id {
            num: int_text(t),
            label: None,
        },
        Val::Str(s) => {
            let raw = s.raw;
            if raw.first() == Some(&b'[') {
                if let Some(close) = raw.iter().position(|&b| b == b']') {
                    let rest = raw[close + 1..].trim_ascii_start();
                    return Id {
                        num: int_text(rest),
                        label: Some(&raw[..=close]),
                    };
                }
            }
            Id {
                num: int_text(raw),
                label: None,
            }
        }
        Val::Nested(_) => Id::default(),
    }
}

/// A number's raw text; a string or nested value is consumed and read as `None`.
fn scalar_or_none<'a>(c: &mut Cur<'a>) -> Option<Option<&'a [u8]>> {
    if c.at_scalar() {
        c.scalar().map(Some)
    } else {
        c.value().map(|_| None)
    }
}

/// The fields of one kept event (all borrowed from the input window).
#[derive(Debug, Default)]
pub struct Event<'a> {
    pub ph: &'a [u8],
    pub cat: &'a [u8],
    pub name: Option<JStr<'a>>,
    pub pid: Id<'a>,
    pub tid: Id<'a>,
    pub ts: Option<&'a [u8]>,
    pub dur: Option<&'a [u8]>,
    pub args: Option<&'a [u8]>,
}

impl Event<'_> {
    pub fn class(&self) -> Class {
        match self.ph {
            b"X" => class_of_cat(self.cat),
            b"M" => Class::Meta,
            _ => Class::Skip,
        }
    }
}

/// Parse an event; `Ok(None)` = not kept (decided as early as `ph`/`cat` allow);
/// `Err(())` = not a JSON object.
pub fn parse(slice: &[u8]) -> Result<Option<Event<'_>>, ()> {
    let mut ev = Event::default();
    let mut skip = false;
    let mut c = Cur::new(slice);
    c.members(|key, c| {
        match key {
            b"ph" => {
                ev.ph = c.string()?.raw;
                if !matches!(ev.ph, b"X" | b"M") {
                    skip = true;
                    return Some(false);
                }
            }
            b"cat" => {
                ev.cat = c.string()?.raw;
                if class_of_cat(ev.cat) == Class::Skip {
                    skip = true;
                    return Some(false);
                }
            }
            b"name" => {
                let n = c.string()?;
                // Most python_function events stop here: not a step function.
                if ev.cat == b"python_function" && !is_step_function(n.raw) {
                    skip = true;
                    return Some(false);
                }
                ev.name = Some(n);
            }
            b"pid" => ev.pid = parse_id(c.value()?),
            b"tid" => ev.tid = parse_id(c.value()?),
            // A string or nested `ts`/`dur` is read as missing (the event is then dropped
            // with a warning), not as a malformed trace.
            b"ts" => ev.ts = scalar_or_none(c)?,
            b"dur" => ev.dur = scalar_or_none(c)?,
            b"args" => {
                ev.args = match c.value()? {
                    Val::Nested(a) => Some(a),
                    _ => None,
                }
            }
            _ => {
                c.value()?;
            }
        }
        Some(true)
    })
    .ok_or(())?;
    if skip || ev.class() == Class::Skip {
        return Ok(None);
    }
    // `name` before `cat` (not Kineto's order, but legal JSON): check it now.
    if ev.class() == Class::Python && !ev.name.is_some_and(|n| is_step_function(n.raw)) {
        return Ok(None);
    }
    Ok(Some(ev))
}

/// The `args` keys used for linking and placement (docs/kineto-format.md §5); -1 where absent.
#[derive(Debug, Clone, Copy)]
pub struct Args {
    pub device: i64,
    pub stream: i64,
    pub correlation: i64,
    pub bytes: i64,
    pub graph_id: i64,
    pub graph_node_id: i64,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            device: -1,
            stream: -1,
            correlation: -1,
            bytes: -1,
            graph_id: -1,
            graph_node_id: -1,
        }
    }
}

pub fn parse_args(slice: Option<&[u8]>) -> Args {
    let mut a = Args::default();
    let Some(slice) = slice else { return a };
    let mut c = Cur::new(slice);
    // A malformed args object leaves the defaults: the event itself was well-formed.
    let _ = c.members(|key, c| {
        let slot = match key {
            b"device" => &mut a.device,
            b"stream" => &mut a.stream,
            b"correlation" => &mut a.correlation,
            b"bytes" => &mut a.bytes,
            b"graph id" => &mut a.graph_id,
            b"graph node id" => &mut a.graph_node_id,
            _ => {
                c.value()?;
                return Some(true);
            }
        };
        if let Val::Scalar(t) = c.value()? {
            if let Some(v) = int_text(t) {
                *slot = v;
            }
        }
        Some(true)
    });
    a
}

/// `args.name` of a `process_name` metadata event.
pub fn meta_name<'a>(slice: Option<&'a [u8]>) -> Option<JStr<'a>> {
    let mut out = None;
    let mut c = Cur::new(slice?);
    c.members(|key, c| {
        if let (b"name", Val::Str(s)) = (key, c.value()?) {
            out = Some(s);
        }
        Some(true)
    })?;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_cpu_ops_at_the_category() {
        // `args` after `cat` is never read: a broken payload there does not matter.
        let e = br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"#;
        assert!(matches!(parse(e), Ok(None)));
        let e = br#"{"ph": "f", "id": 3, "cat": "ac2g"}"#;
        assert!(matches!(parse(e), Ok(None)));
    }

    #[test]
    fn kernel_fields_and_merged_pid() {
        let e = br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": "[TP01-DP00] 9", "tid": 3,
            "ts": 4909914679584.875, "dur": 6.649,
            "args": {"device": 9, "stream": 3, "correlation": 92158, "grid": [1, 1, 1]}}"#;
        let ev = parse(e).unwrap().unwrap();
        assert_eq!(ev.class(), Class::Kernel);
        assert_eq!(ev.pid.num, Some(9));
        assert_eq!(ev.pid.label, Some(&b"[TP01-DP00]"[..]));
        assert_eq!(ev.tid.num, Some(3));
        assert_eq!(ev.ts, Some(&b"4909914679584.875"[..]));
        let a = parse_args(ev.args);
        assert_eq!(
            (a.device, a.stream, a.correlation, a.graph_id),
            (9, 3, 92158, -1)
        );
    }

    #[test]
    fn python_functions_only_for_step_functions() {
        let e = br#"{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1750): _call_impl", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"#;
        assert!(matches!(parse(e), Ok(None)));
        let e = br#"{"ph": "X", "cat": "python_function", "name": "vllm/v1/worker/gpu_worker.py(263): execute_model", "pid": 1, "tid": 2, "ts": 1, "dur": 1}"#;
        let ev = parse(e).unwrap().unwrap();
        assert_eq!(ev.class(), Class::Python);
        assert_eq!(ev.tid.num, Some(2));
        // Name first, category after.
        let e = br#"{"name": "a.py(3): helper", "ph": "X", "cat": "python_function", "ts": 1}"#;
        assert!(matches!(parse(e), Ok(None)));
        let e = br#"{"name": "x/scheduler.py(3): run_batch", "ph": "X", "cat": "python_function", "ts": 1}"#;
        assert_eq!(parse(e).unwrap().unwrap().class(), Class::Python);
    }

    #[test]
    fn malformed_event() {
        assert!(parse(br#"{"ph" "X"}"#).is_err());
    }
}
