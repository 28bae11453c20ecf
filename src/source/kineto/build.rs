//! Turns kept events into the [`Trace`] frames, one file (rank) after another, then
//! settles what needs the whole picture: time origin, launching pid of each op, and
//! device/pid numbering when several ranks share ids.
//!
//! While reading, every device and CPU pid is stored as `slot << 32 | raw`, where a slot
//! is one rank: one file, or one `[TPxx…]` label of an SGLang merged trace. [`finish`]
//! strips the slot again unless two ranks use the same raw id; then ids are renumbered
//! `rank * 1000 + device` and `rank * 10_000_000 + pid` (Linux pids stay below 2^22), where
//! `rank` counts the slots that have events, in reading order (directory files are read
//! in rank order), and a warning in `meta.warnings` says so.

use std::collections::HashMap;
use std::path::Path;

use crate::exit::{Error, Result};
use crate::source::LoadOptions;
use crate::trace::{
    is_launch_call, CallApi, CallRow, CallsBuilder, DeviceInfo, Distributed, Interner, OpKind,
    OpRow, OpsBuilder, RangeKind, RangeRow, RangesBuilder, ShapeRow, ShapesBuilder, SourceFormat,
    Trace, TraceMeta,
};

use super::event::{self, Class, Event, Keep};
use super::header::{DeviceProps, Header};
use super::ids::{self, collides, dec, enc, renumber, DEVICE_STRIDE, PID_STRIDE};
use super::names::short_name;
use super::number::us_text_to_ns;
use super::shapes;

/// Kineto has no NVTX domains; its annotations count as the default domain (id 0), the
/// one vLLM's and SGLang's own NVTX ranges use (docs/engines.md §1.2, §2.2).
const DEFAULT_DOMAIN: i64 = 0;

/// Largest `ts` accepted, ns (2^62 ≈ year 2116 as an epoch time); larger is damage.
const MAX_ABS_TS_NS: i64 = 1 << 62;
/// Largest `dur` accepted, ns (2^55 ≈ 417 days); longer is damage.
const MAX_DUR_NS: i64 = 1 << 55;
/// Earliest `ts` accepted, ns: 417 days before the file's time base. Together with the
/// bounds above, any two times differ by less than 2^63, so no later subtraction or
/// small addition can overflow.
const MIN_TS_NS: i64 = -MAX_DUR_NS;
/// Latest time after ranks are shifted onto one base.
const MAX_END_NS: i64 = MAX_ABS_TS_NS + MAX_DUR_NS;
/// Ranks whose time bases differ by more than this (ns, one hour) are not one capture.
const MAX_BASE_SPREAD_NS: i64 = 3_600_000_000_000;

struct FileState {
    header: Header,
    base_slot: u32,
    labels: HashMap<Vec<u8>, u32>,
    /// `(first, end)` row of this file in ops, calls, ranges and shapes.
    rows: [(usize, usize); 4],
    /// `process_names` length when the file began (to forget a discarded file's names).
    names_start: usize,
}

impl FileState {
    fn has_ops(&self) -> bool {
        self.rows[0].1 > self.rows[0].0
    }
}

/// Accumulates rows from one or more trace files.
pub struct Collector {
    names: Interner,
    short_of: Vec<u32>,
    scratch: String,
    ops: OpsBuilder,
    calls: CallsBuilder,
    ranges: RangesBuilder,
    shapes: ShapesBuilder,
    /// Read kernels' `grid`/`block` (`LoadOptions::geometry`).
    geometry: bool,
    /// Keep `cpu_op` input shapes (`LoadOptions::shapes`).
    keep: Keep,
    process_names: Vec<(i64, String)>,
    /// Slot → file index.
    slot_file: Vec<usize>,
    /// Slot → a name for warnings (file name, plus the merged-trace label).
    slot_name: Vec<String>,
    files: Vec<FileState>,
    /// Complete events without a readable `ts`, or GPU events without a device.
    dropped: u64,
    /// GPU ops / host events whose `ts` or `dur` is missing, not a finite number, negative
    /// (dur) or out of range: dropped, never read as 0.
    bad_time_ops: u64,
    bad_time_host: u64,
    /// GPU ops whose device id is 2^32 or more (dropped), and host events whose pid is
    /// (kept with pid unknown).
    bad_device_ids: u64,
    bad_pids: u64,
    pub warnings: Vec<String>,
}

impl Collector {
    /// A collector for the extras `opts` asks for (calls and ranges are always kept).
    pub fn new(opts: &LoadOptions) -> Self {
        let ops = if opts.geometry {
            OpsBuilder::default().with_geometry()
        } else {
            OpsBuilder::default()
        };
        Collector {
            names: Interner::default(),
            short_of: Vec::new(),
            scratch: String::new(),
            ops,
            calls: CallsBuilder::default(),
            ranges: RangesBuilder::default(),
            shapes: ShapesBuilder::default(),
            geometry: opts.geometry,
            keep: Keep {
                cpu_ops: opts.shapes,
            },
            process_names: Vec::new(),
            slot_file: Vec::new(),
            slot_name: Vec::new(),
            files: Vec::new(),
            dropped: 0,
            bad_time_ops: 0,
            bad_time_host: 0,
            bad_device_ids: 0,
            bad_pids: 0,
            warnings: Vec::new(),
        }
    }

    /// The optional event classes this load keeps.
    pub fn keep(&self) -> Keep {
        self.keep
    }

    fn row_counts(&self) -> [usize; 4] {
        [
            self.ops.len(),
            self.calls.pid.len(),
            self.ranges.pid.len(),
            self.shapes.pid.len(),
        ]
    }

    fn new_slot(&mut self, file: usize, name: String) -> u32 {
        self.slot_file.push(file);
        self.slot_name.push(name);
        (self.slot_file.len() - 1) as u32
    }

    /// Start a file: the following events belong to it.
    pub fn begin_file(&mut self, path: &Path) {
        let idx = self.files.len();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let base_slot = self.new_slot(idx, name);
        let rows = self.row_counts().map(|n| (n, 0));
        self.files.push(FileState {
            header: Header::default(),
            base_slot,
            labels: HashMap::new(),
            rows,
            names_start: self.process_names.len(),
        });
    }

    /// End the current file with its header; returns how many GPU ops it had.
    pub fn end_file(&mut self, header: Header) -> usize {
        let ends = self.row_counts();
        let f = self.files.last_mut().expect("begin_file first");
        f.header = header;
        for (row, end) in f.rows.iter_mut().zip(ends) {
            row.1 = end;
        }
        f.rows[0].1 - f.rows[0].0
    }

    /// Forget the current file's rows (a CPU-only trace in a directory).
    pub fn discard_file(&mut self) {
        let f = self.files.last().expect("begin_file first");
        let [o, c, r, sh] = f.rows.map(|row| row.0);
        self.process_names.truncate(f.names_start);
        self.ops.truncate(o);
        self.calls.truncate(c);
        self.ranges.truncate(r);
        self.shapes.truncate(sh);
        let f = self.files.last_mut().expect("begin_file first");
        f.rows = f.rows.map(|row| (row.0, row.0));
        f.header.distributed = None;
    }

    fn slot_for(&mut self, label: Option<&[u8]>) -> u32 {
        let fi = self.files.len() - 1;
        let Some(label) = label else {
            return self.files[fi].base_slot;
        };
        if let Some(&s) = self.files[fi].labels.get(label) {
            return s;
        }
        let name = format!(
            "{} {}",
            self.slot_name[self.files[fi].base_slot as usize],
            String::from_utf8_lossy(label)
        );
        let s = self.new_slot(fi, name);
        self.files[fi].labels.insert(label.to_vec(), s);
        s
    }

    fn intern_name(&mut self, ev: &Event<'_>, want_short: bool) -> (u32, u32) {
        let text = match &ev.name {
            Some(n) => n.text(&mut self.scratch),
            None => "".into(),
        };
        let id = self.names.intern(&text);
        if !want_short {
            return (id, id);
        }
        let i = id as usize;
        if i >= self.short_of.len() {
            self.short_of.resize(i + 1, u32::MAX);
        }
        if self.short_of[i] == u32::MAX {
            let short = short_name(&text).to_owned();
            self.short_of[i] = self.names.intern(&short);
        }
        (id, self.short_of[i])
    }

    /// Copies and fills under nsys's names (`[memcpy HtoD]`, `[memset]`), so both formats
    /// rank the same op under the same name: Kineto says `Memcpy HtoD (Pageable -> Device)`.
    fn intern_copy_name(&mut self, ev: &Event<'_>, kind: OpKind) -> (u32, u32) {
        let text = match &ev.name {
            Some(n) => n.text(&mut self.scratch),
            None => "".into(),
        };
        let name = match kind {
            OpKind::Memcpy => match text
                .strip_prefix("Memcpy ")
                .and_then(|r| r.split_whitespace().next())
            {
                Some(dir) => format!("[memcpy {dir}]"),
                None => "[memcpy]".to_owned(),
            },
            _ => "[memset]".to_owned(),
        };
        let id = self.names.intern(&name);
        (id, id)
    }

    /// Take one kept event.
    pub fn event(&mut self, ev: &Event<'_>) {
        let class = ev.class();
        if class == Class::Meta {
            return self.meta(ev);
        }
        // Kineto itself never writes a negative `dur` (it clamps them to 0), and always
        // writes `ts` and `dur` on complete events: anything else is not to be trusted.
        let start = ev
            .ts
            .and_then(us_text_to_ns)
            .filter(|t| (MIN_TS_NS..=MAX_ABS_TS_NS).contains(t));
        let dur = ev
            .dur
            .and_then(us_text_to_ns)
            .filter(|d| (0..=MAX_DUR_NS).contains(d));
        let Some((start_ns, end_ns)) = start
            .zip(dur)
            .and_then(|(s, d)| Some((s, s.checked_add(d)?)))
        else {
            match class {
                Class::Kernel | Class::Memcpy | Class::Memset => self.bad_time_ops += 1,
                _ => self.bad_time_host += 1,
            }
            return;
        };
        let slot = self.slot_for(ev.pid.label);
        match class {
            Class::Kernel | Class::Memcpy | Class::Memset => {
                let a = event::parse_args(ev.args, self.geometry && class == Class::Kernel);
                // On ROCm the GPU pid is not the deviceProperties index; args.device is the
                // key (docs/kineto-format.md §4). They agree wherever both exist.
                let device = if a.device >= 0 {
                    Some(a.device)
                } else {
                    ev.pid.num
                };
                let Some(device) = device else {
                    self.dropped += 1;
                    return;
                };
                if !ids::fits(device) {
                    self.bad_device_ids += 1;
                    return;
                }
                let stream = if a.stream >= 0 {
                    a.stream
                } else {
                    ev.tid.num.unwrap_or(-1)
                };
                let kind = match class {
                    Class::Kernel => OpKind::Kernel,
                    Class::Memcpy => OpKind::Memcpy,
                    _ => OpKind::Memset,
                };
                let (name_id, short_id) = match kind {
                    OpKind::Kernel => self.intern_name(ev, true),
                    _ => self.intern_copy_name(ev, kind),
                };
                let row = OpRow {
                    device: enc(slot, device),
                    stream,
                    // Filled in `finish` from the launching call (same correlation).
                    pid: -1,
                    start_ns,
                    end_ns,
                    name_id,
                    short_id,
                    kind,
                    correlation_id: a.correlation,
                    graph_node_id: a.graph_node_id,
                    graph_id: a.graph_id,
                    bytes: if kind == OpKind::Kernel {
                        0
                    } else {
                        a.bytes.max(0)
                    },
                };
                self.ops.push_launch(row, a.launch);
            }
            Class::Runtime | Class::Driver => {
                let a = event::parse_args(ev.args, false);
                let (name_id, _) = self.intern_name(ev, false);
                let is_launch = ev
                    .name
                    .is_some_and(|n| is_launch_call(&String::from_utf8_lossy(n.raw)));
                let pid = ev.pid.num.unwrap_or(-1);
                self.bad_pids += u64::from(!ids::fits(pid));
                self.calls.push(CallRow {
                    pid: enc(slot, pid),
                    tid: ev.tid.num.unwrap_or(-1),
                    start_ns,
                    end_ns,
                    name_id,
                    correlation_id: a.correlation,
                    api: if class == Class::Runtime {
                        CallApi::Runtime
                    } else {
                        CallApi::Driver
                    },
                    is_launch,
                });
            }
            Class::Annotation | Class::GpuAnnotation | Class::Python => {
                let Some(pid) = ev.pid.num else {
                    self.dropped += 1;
                    return;
                };
                self.bad_pids += u64::from(!ids::fits(pid));
                let (name_id, _) = self.intern_name(ev, false);
                self.ranges.push(RangeRow {
                    pid: enc(slot, pid),
                    tid: ev.tid.num.unwrap_or(-1),
                    start_ns,
                    end_ns,
                    name_id,
                    domain_id: DEFAULT_DOMAIN,
                    kind: match class {
                        Class::Annotation => RangeKind::HostPushPop,
                        Class::Python => RangeKind::PythonStack,
                        _ => RangeKind::GpuAnnotation,
                    },
                });
            }
            Class::CpuOp => self.shape(ev, slot, start_ns, end_ns),
            Class::Meta | Class::Skip => {}
        }
    }

    /// An operator's input shapes (`record_shapes` traces; docs/kineto-format.md §11).
    fn shape(&mut self, ev: &Event<'_>, slot: u32, start_ns: i64, end_ns: i64) {
        let Some(dims) = event::input_dims(ev.args) else {
            return;
        };
        let Some(pid) = ev.pid.num else {
            self.dropped += 1;
            return;
        };
        self.bad_pids += u64::from(!ids::fits(pid));
        let (name_id, _) = self.intern_name(ev, false);
        shapes::compact(dims, &mut self.scratch);
        let first_dim = shapes::first_dim(&self.scratch);
        let dims_id = self.names.intern(&self.scratch);
        self.shapes.push(ShapeRow {
            pid: enc(slot, pid),
            tid: ev.tid.num.unwrap_or(-1),
            start_ns,
            end_ns,
            name_id,
            dims_id,
            first_dim,
        });
    }

    fn meta(&mut self, ev: &Event<'_>) {
        if ev.name.map(|n| n.raw) != Some(b"process_name") {
            return;
        }
        let (Some(pid), Some(name)) = (ev.pid.num, event::meta_name(ev.args)) else {
            return;
        };
        let slot = self.slot_for(ev.pid.label);
        let text = name.text(&mut self.scratch).into_owned();
        self.process_names.push((enc(slot, pid), text));
    }

    /// Build the trace. `path` is what the user passed.
    pub fn finish(mut self, path: &Path) -> Result<Trace> {
        self.warn_dropped();
        if self.ops.is_empty() {
            if self.bad_time_ops + self.bad_device_ids > 0 {
                return Err(Error::input(format!(
                    "{}: no usable GPU kernels: {}",
                    path.display(),
                    self.warnings.join("; ")
                )));
            }
            return Err(Error::input(format!(
                "{}: no GPU kernels in this trace: was the profiler run with CUDA activities?",
                path.display()
            )));
        }
        let origin = self.align_times(path)?;
        self.fill_op_pids();
        let ranks = self.ranks_of_slots();
        let device_map = self.remap_devices(&ranks);
        let pid_map = self.remap_pids(&ranks);
        let devices = self.devices(&device_map);

        let first = &self
            .files
            .iter()
            .find(|f| f.has_ops())
            .expect("ops exist, so some file has them")
            .header;
        let mut meta = TraceMeta::new(SourceFormat::Kineto, path.display().to_string());
        meta.tool_version = first.tool_version();
        meta.schema_version = first.schema_version.clone();
        meta.origin_epoch_ns = origin;
        meta.distributed = self.distributed();
        let mut names = std::mem::take(&mut self.process_names);
        for (pid, _) in &mut names {
            *pid = pid_map(*pid);
        }
        names.sort();
        names.dedup();
        meta.process_names = names;
        if self.dropped > 0 {
            self.warnings.push(format!(
                "{} kept events had no readable pid or device and were dropped",
                self.dropped
            ));
        }
        meta.warnings = std::mem::take(&mut self.warnings);

        for d in &mut self.ops.device {
            *d = device_map(*d);
        }
        for p in &mut self.ops.pid {
            *p = pid_map(*p);
        }
        for p in self.calls.pid.iter_mut().chain(&mut self.shapes.pid) {
            *p = pid_map(*p);
        }
        for (p, k) in self.ranges.pid.iter_mut().zip(&self.ranges.kind) {
            *p = if *k == RangeKind::GpuAnnotation as u32 {
                device_map(*p)
            } else {
                pid_map(*p)
            };
        }
        Ok(Trace {
            ops: self.ops.finish()?,
            calls: self.calls.finish()?,
            ranges: self.ranges.finish()?,
            shapes: self.shapes.finish()?,
            gpu_metrics: Vec::new(),
            devices,
            strings: self.names.into_strings(),
            meta,
        })
    }

    /// One `distributedInfo` for the trace: that of the first file with GPU ops that
    /// has one, with the rank of every such file (docs/kineto-format.md §9). Files that
    /// disagree on the backend or world size are not one run: a warning says so.
    fn distributed(&mut self) -> Option<Distributed> {
        let mut out: Option<Distributed> = None;
        for f in self.files.iter().filter(|f| f.has_ops()) {
            let Some(d) = &f.header.distributed else {
                continue;
            };
            let Some(first) = &mut out else {
                out = Some(d.clone());
                continue;
            };
            first.ranks.extend(&d.ranks);
            if (&d.backend, d.world_size) != (&first.backend, first.world_size) {
                let name = &self.slot_name[f.base_slot as usize];
                self.warnings.push(format!(
                    "{name}: distributedInfo says backend {} world size {}, the first rank \
                     {} world size {}: these traces are not from one run",
                    d.backend.as_deref().unwrap_or("?"),
                    d.world_size.map_or("?".to_owned(), |w| w.to_string()),
                    first.backend.as_deref().unwrap_or("?"),
                    first.world_size.map_or("?".to_owned(), |w| w.to_string()),
                ));
            }
        }
        out
    }

    /// One origin for all files: each file's own time base (`baseTimeNanoseconds`, or 0
    /// for the old absolute-epoch layout), and the smallest base is the trace's origin
    /// (docs/kineto-format.md §8: "align ranks on absolute ns"). A single file keeps its own times.
    ///
    /// A base outside 0..=2^62 ns is not a time: it is ignored (with a warning), so the
    /// shift below can never overflow; a shifted time that would is an error.
    fn align_times(&mut self, path: &Path) -> Result<Option<i64>> {
        let mut bases: Vec<i64> = Vec::with_capacity(self.files.len());
        for i in 0..self.files.len() {
            let b = match self.files[i].header.base_time_ns {
                Some(b) if !(0..=MAX_ABS_TS_NS).contains(&b) => {
                    let name = self.slot_name[self.files[i].base_slot as usize].clone();
                    self.warnings.push(format!(
                        "{name}: baseTimeNanoseconds {b} is not a plausible time; ignored \
                         (its times are taken as they are)"
                    ));
                    0
                }
                b => {
                    if let Some(raw) = &self.files[i].header.base_time_unreadable {
                        let name = self.slot_name[self.files[i].base_slot as usize].clone();
                        // Shown escaped: the text is the file's, not ours.
                        let raw: String =
                            raw.chars().take(40).flat_map(char::escape_debug).collect();
                        self.warnings.push(format!(
                            "{name}: baseTimeNanoseconds {raw} is not an integer number of \
                             nanoseconds; ignored (its times are taken as they are)"
                        ));
                    }
                    b.unwrap_or(0)
                }
            };
            bases.push(b);
        }
        let kept: Vec<i64> = self
            .files
            .iter()
            .zip(&bases)
            .filter(|(f, _)| f.has_ops())
            .map(|(_, b)| *b)
            .collect();
        let Some(origin) = kept.iter().copied().min() else {
            return Ok(None);
        };
        let spread = kept.iter().copied().max().unwrap_or(origin) - origin;
        if spread > MAX_BASE_SPREAD_NS {
            self.warnings.push(format!(
                "the ranks' time bases (baseTimeNanoseconds) lie {:.0} s apart: these \
                 traces are not from one capture, or a clock was wrong; times across \
                 ranks are not comparable",
                spread as f64 / 1e9
            ));
        }
        let overflow = || {
            Error::input(format!(
                "{}: shifting the ranks onto one time base overflows (baseTimeNanoseconds \
                 and ts too far apart): pass the ranks one at a time",
                path.display()
            ))
        };
        for (f, base) in self.files.iter().zip(bases) {
            let shift = base - origin;
            if shift == 0 {
                continue;
            }
            let [(o0, o1), (c0, c1), (r0, r1), (s0, s1)] = f.rows;
            let ok = shift_rows(
                &mut self.ops.start_ns[o0..o1],
                &mut self.ops.end_ns[o0..o1],
                shift,
            ) && shift_rows(
                &mut self.calls.start_ns[c0..c1],
                &mut self.calls.end_ns[c0..c1],
                shift,
            ) && shift_rows(
                &mut self.ranges.start_ns[r0..r1],
                &mut self.ranges.end_ns[r0..r1],
                shift,
            ) && shift_rows(
                &mut self.shapes.start_ns[s0..s1],
                &mut self.shapes.end_ns[s0..s1],
                shift,
            );
            if !ok {
                return Err(overflow());
            }
        }
        Ok(Some(origin))
    }

    /// `ops.pid` = the process of the call with the same correlation id in the same rank
    /// (docs/kineto-format.md §5 rule 1); else the rank's busiest calling process; else -1.
    fn fill_op_pids(&mut self) {
        let mut by_corr: HashMap<(u32, i64), i64> = HashMap::with_capacity(self.calls.pid.len());
        let mut counts: HashMap<i64, u64> = HashMap::new();
        for (&pid, &corr) in self.calls.pid.iter().zip(&self.calls.correlation_id) {
            if corr >= 0 {
                by_corr.entry((dec(pid).0, corr)).or_insert(pid);
            }
            *counts.entry(pid).or_insert(0) += 1;
        }
        let mut busiest: HashMap<u32, (u64, i64)> = HashMap::new();
        for (&pid, &n) in &counts {
            let e = busiest.entry(dec(pid).0).or_insert((0, -1));
            if n > e.0 || (n == e.0 && pid < e.1) {
                *e = (n, pid);
            }
        }
        for i in 0..self.ops.len() {
            let slot = dec(self.ops.device[i]).0;
            let corr = self.ops.correlation_id[i];
            self.ops.pid[i] = by_corr
                .get(&(slot, corr))
                .copied()
                .or_else(|| busiest.get(&slot).map(|b| b.1))
                .unwrap_or(-1);
        }
    }

    /// Say how many events were dropped or degraded, and why (one warning per cause).
    fn warn_dropped(&mut self) {
        if self.bad_time_ops > 0 {
            self.warnings.push(format!(
                "{} kernel/memcpy/memset event(s) had a missing, non-numeric (NaN, Infinity), \
                 negative or out-of-range ts or dur and were dropped (never read as 0)",
                self.bad_time_ops
            ));
        }
        if self.bad_time_host > 0 {
            self.warnings.push(format!(
                "{} runtime/annotation event(s) had a missing, non-numeric (NaN, Infinity), \
                 negative or out-of-range ts or dur and were dropped",
                self.bad_time_host
            ));
        }
        if self.bad_device_ids > 0 {
            self.warnings.push(format!(
                "{} GPU event(s) had a device id of 2^32 or more (not a device) and were dropped",
                self.bad_device_ids
            ));
        }
        if self.bad_pids > 0 {
            self.warnings.push(format!(
                "{} host event(s) had a pid of 2^32 or more (not a process id); kept with the \
                 process unknown",
                self.bad_pids
            ));
        }
    }

    /// Slot → dense rank number over the slots that have events (unused slots: the base
    /// slot of a merged file, whose events all carry labels).
    fn ranks_of_slots(&self) -> Vec<i64> {
        let mut used = vec![false; self.slot_file.len()];
        let all = self
            .ops
            .device
            .iter()
            .chain(&self.calls.pid)
            .chain(&self.ranges.pid)
            .chain(&self.shapes.pid)
            .chain(self.process_names.iter().map(|p| &p.0));
        for &v in all {
            if v >= 0 {
                used[dec(v).0 as usize] = true;
            }
        }
        let mut next = 0;
        used.iter()
            .map(|&u| {
                if u {
                    next += 1;
                    next - 1
                } else {
                    -1
                }
            })
            .collect()
    }

    fn remap_devices(&mut self, ranks: &[i64]) -> impl Fn(i64) -> i64 {
        let mut ids: Vec<i64> = self.ops.device.clone();
        for (p, k) in self.ranges.pid.iter().zip(&self.ranges.kind) {
            if *k == RangeKind::GpuAnnotation as u32 {
                ids.push(*p);
            }
        }
        let clash = collides(ids);
        if clash {
            self.warnings.push(format!(
                "device ids repeat across ranks; renumbered as rank*{DEVICE_STRIDE}+device ({})",
                self.rank_legend(ranks)
            ));
        }
        let ranks = ranks.to_vec();
        move |v| renumber(v, clash.then_some(&ranks[..]), DEVICE_STRIDE)
    }

    fn remap_pids(&mut self, ranks: &[i64]) -> impl Fn(i64) -> i64 {
        let mut ids: Vec<i64> = self.calls.pid.clone();
        ids.extend(&self.shapes.pid);
        ids.extend(self.process_names.iter().map(|p| p.0));
        for (p, k) in self.ranges.pid.iter().zip(&self.ranges.kind) {
            if *k != RangeKind::GpuAnnotation as u32 {
                ids.push(*p);
            }
        }
        let clash = collides(ids);
        if clash {
            self.warnings.push(format!(
                "process ids repeat across ranks; renumbered as rank*{PID_STRIDE}+pid ({})",
                self.rank_legend(ranks)
            ));
        }
        let ranks = ranks.to_vec();
        move |v| renumber(v, clash.then_some(&ranks[..]), PID_STRIDE)
    }

    fn rank_legend(&self, ranks: &[i64]) -> String {
        self.slot_name
            .iter()
            .zip(ranks)
            .filter(|(_, r)| **r >= 0)
            .map(|(n, r)| format!("rank {r} = {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Devices that ran ops, with `deviceProperties` of their file. Kineto records no
    /// memory bandwidth (neither clock nor bus width), so that stays `None`.
    fn devices(&self, device_map: &impl Fn(i64) -> i64) -> Vec<DeviceInfo> {
        let mut used: Vec<i64> = self.ops.device.clone();
        used.sort_unstable();
        used.dedup();
        let mut out: Vec<DeviceInfo> = used
            .into_iter()
            .map(|v| {
                let (slot, raw) = dec(v);
                let props = &self.files[self.slot_file[slot as usize]].header.devices;
                let p = pick_props(props, raw);
                DeviceInfo {
                    id: device_map(v),
                    name: p.and_then(|p| p.name.clone()),
                    memory_bandwidth_bytes_per_s: None,
                    sm_count: p.and_then(|p| p.sm_count),
                    total_memory_bytes: p.and_then(|p| p.total_memory_bytes),
                }
            })
            .collect();
        out.sort_by_key(|d| d.id);
        out
    }
}

/// The `deviceProperties` entry for a device: the one with that `id`; failing that (ROCm
/// numbers GPU rows by agent, e.g. pid 9 with one entry `id 0`, docs/kineto-format.md §4) the entries'
/// common values when they all describe the same GPU model.
fn pick_props(props: &[DeviceProps], device: i64) -> Option<&DeviceProps> {
    if let Some(p) = props.iter().find(|p| p.id == Some(device)) {
        return Some(p);
    }
    let first = props.first()?;
    props
        .iter()
        .all(|p| {
            p.name == first.name
                && p.sm_count == first.sm_count
                && p.total_memory_bytes == first.total_memory_bytes
        })
        .then_some(first)
}

/// Add `shift` to every time; false if one would overflow.
fn shift_rows(start: &mut [i64], end: &mut [i64], shift: i64) -> bool {
    for v in start.iter_mut().chain(end.iter_mut()) {
        match v.checked_add(shift).filter(|x| *x <= MAX_END_NS) {
            Some(x) => *v = x,
            None => return false,
        }
    }
    true
}
