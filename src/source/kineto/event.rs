//! One `traceEvents` element → what stepgate keeps of it. Categories are decided from
//! `ph`/`cat` before the rest is read, so the >90 % of events that are `python_function`
//! or `cpu_op` cost only the structural scan that found their end. A `python_function`
//! is kept only when its name ends like an engine step function (a byte suffix check on
//! the raw name, before anything is allocated).

use super::number::int_text;
use super::scan::{Cur, JStr, Val};
use crate::trace::Launch;

/// What an event is, for stepgate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
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
    /// `cpu_op` (an aten operator), kept only when input shapes are asked for.
    CpuOp,
    /// 2021 layout `Operator`: an aten operator or a `record_function` range, told apart
    /// by [`is_record_function`].
    Operator,
    /// `ph: "M"` metadata (process names).
    Meta,
    Skip,
}

/// Category names, with the capitalised spellings of the 2021 layout (§3, §12).
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
        b"cpu_op" => Class::CpuOp,
        b"Operator" => Class::Operator,
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
pub(crate) fn is_step_function(raw: &[u8]) -> bool {
    STEP_FUNCTIONS.iter().any(|s| raw.ends_with(s))
}

/// A `pid`/`tid` value: a number, or a string such as SGLang's merged
/// `"[TP01-DP00] 6583"` (docs/engines.md §2.3), Kineto's `"Spans"`, `""`, or the 2021
/// layout's `"5555"` (a CPU thread) and `"stream 7"` (a GPU stream).
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
            // `"stream 7"`: the 2021 layout's GPU row (docs/kineto-format.md §12).
            let digits = raw.strip_prefix(b"stream ").unwrap_or(raw);
            Id {
                num: int_text(digits),
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

/// Which optional event classes a load keeps.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keep {
    /// `cpu_op` events (for their input shapes); skipped at the category otherwise.
    pub cpu_ops: bool,
    /// Every `python_function` at least this long (ns), not only the step functions
    /// (`LoadOptions::python_frames_min_ns`): parsed here, the duration checked by the
    /// collector once the times are read.
    pub python_frames_min_ns: Option<i64>,
}

impl Keep {
    /// Whether a `python_function` of this raw name is read on (a step function, or any
    /// frame in a frames load).
    fn python(self, raw: &[u8]) -> bool {
        self.python_frames_min_ns.is_some() || is_step_function(raw)
    }

    fn class(self, cat: &[u8]) -> Class {
        match class_of_cat(cat) {
            Class::CpuOp if !self.cpu_ops => Class::Skip,
            c => c,
        }
    }
}

/// Parse an event; `Ok(None)` = not kept (decided as early as `ph`/`cat` allow);
/// `Err(())` = not a JSON object.
pub fn parse(slice: &[u8], keep: Keep) -> Result<Option<Event<'_>>, ()> {
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
                if keep.class(ev.cat) == Class::Skip {
                    skip = true;
                    return Some(false);
                }
            }
            b"name" => {
                let n = c.string()?;
                // Most python_function events stop here: not a step function.
                if ev.cat == b"python_function" && !keep.python(n.raw) {
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
    if skip || ev.class() == Class::Skip || (ev.class() == Class::CpuOp && !keep.cpu_ops) {
        return Ok(None);
    }
    // `name` before `cat` (not Kineto's order, but legal JSON): check it now.
    if ev.class() == Class::Python && !ev.name.is_some_and(|n| keep.python(n.raw)) {
        return Ok(None);
    }
    Ok(Some(ev))
}

/// The `args` keys used for linking and placement (docs/kineto-format.md §5); -1 where
/// absent (the launch geometry: zeros).
#[derive(Debug, Clone, Copy)]
pub struct Args {
    pub device: i64,
    pub stream: i64,
    /// -1 also for 0: CUPTI numbers correlations from 1, so 0 means "no launching call"
    /// (docs/kineto-format.md §5), never one id shared by every such op.
    pub correlation: i64,
    pub bytes: i64,
    pub graph_id: i64,
    /// `grid` / `block`, read only when asked for.
    pub launch: Launch,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            device: -1,
            stream: -1,
            correlation: -1,
            bytes: -1,
            graph_id: -1,
            launch: Launch::default(),
        }
    }
}

/// The linking keys of `args`, and `grid`/`block` when `geometry` is set.
pub(crate) fn parse_args(slice: Option<&[u8]>, geometry: bool) -> Args {
    let mut a = Args::default();
    let Some(slice) = slice else { return a };
    let mut c = Cur::new(slice);
    // A malformed args object leaves the defaults: the event itself was well-formed.
    let _ = c.members(|key, c| {
        let slot = match key {
            b"grid" | b"block" if geometry => {
                if let Val::Nested(v) = c.value()? {
                    let dims = dims3(v);
                    if key == b"grid" {
                        a.launch.grid = dims;
                    } else {
                        a.launch.block = dims;
                    }
                }
                return Some(true);
            }
            b"device" => &mut a.device,
            b"stream" => &mut a.stream,
            b"correlation" => &mut a.correlation,
            b"bytes" => &mut a.bytes,
            b"graph id" => &mut a.graph_id,
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
    if a.correlation == 0 {
        a.correlation = -1;
    }
    a
}

/// A `[x, y, z]` launch dimension array; 0 for an entry that is missing, not an
/// integer, or outside u32.
fn dims3(raw: &[u8]) -> [u32; 3] {
    let mut out = [0u32; 3];
    let mut k = 0;
    let _ = Cur::new(raw).elements(|c| {
        if let Val::Scalar(t) = c.value()? {
            if let Some(slot) = out.get_mut(k) {
                *slot = int_text(t).and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
            }
        }
        k += 1;
        Some(k < 3)
    });
    out
}

/// Whether a 2021-layout `Operator` event is a `record_function` range rather than an
/// operator (docs/kineto-format.md §12). That layout marks neither, so this is inferred
/// from what only operators have: a qualified name (`aten::mm`,
/// `torch::autograd::AccumulateGrad`), an autograd node's name (`…Backward`,
/// `…Backward1`), the two unqualified names autograd records itself (`detach`, `detach_`,
/// torch/csrc/autograd/VariableTypeManual.cpp), recorded inputs (a non-empty `Input
/// Dims`) or an autograd sequence number.
pub(crate) fn is_record_function(ev: &Event<'_>) -> bool {
    let Some(name) = ev.name.map(|n| n.raw) else {
        return false;
    };
    let backward = {
        let t = name.trim_ascii_end();
        let t = &t[..t.len() - t.iter().rev().take_while(|b| b.is_ascii_digit()).count()];
        t.ends_with(b"Backward")
    };
    if backward || name.windows(2).any(|w| w == b"::") || matches!(name, b"detach" | b"detach_") {
        return false;
    }
    let mut op_keys = false;
    if let Some(args) = ev.args {
        let _ = Cur::new(args).members(|key, c| {
            let v = c.value()?;
            op_keys = match key {
                b"Sequence number" => true,
                b"Input Dims" | b"Input dims" => matches!(v, Val::Nested(d) if !is_empty_array(d)),
                _ => false,
            };
            Some(!op_keys)
        });
    }
    !op_keys
}

/// `[]` (whitespace aside).
fn is_empty_array(raw: &[u8]) -> bool {
    let mut t = raw.iter().filter(|b| !b.is_ascii_whitespace());
    t.next() == Some(&b'[') && t.next() == Some(&b']')
}

/// The raw `args["Input Dims"]` array of an operator (`"Input dims"` in early-2021
/// traces), where recorded.
pub(crate) fn input_dims(slice: Option<&[u8]>) -> Option<&[u8]> {
    let mut out = None;
    let mut c = Cur::new(slice?);
    let _ = c.members(|key, c| {
        let v = c.value()?;
        if matches!(key, b"Input Dims" | b"Input dims") {
            if let Val::Nested(raw) = v {
                out = Some(raw);
            }
            return Some(false);
        }
        Some(true)
    });
    out
}

/// `args.name` of a `process_name` metadata event.
pub(crate) fn meta_name<'a>(slice: Option<&'a [u8]>) -> Option<JStr<'a>> {
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
mod tests;
