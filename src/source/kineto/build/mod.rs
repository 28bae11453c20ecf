//! Turns kept events into the [`Trace`] frames, one file (rank) after another, then
//! settles what needs the whole picture: time origin, launching pid of each op, and
//! device/pid numbering when several ranks share ids. Here the collector and its files;
//! `events` turns one event into rows, `times` aligns the files' clocks, `settle` does
//! the numbering, devices and `distributedInfo`.
//!
//! While reading, every device and CPU pid is stored as `slot << 32 | raw`, where a slot
//! is one rank: one file, or one `[TPxx…]` label of an SGLang merged trace. [`finish`]
//! strips the slot again unless two ranks use the same raw id; then ids are renumbered
//! `rank * 1000 + device` and `rank * 10_000_000 + pid` (Linux pids stay below 2^22), where
//! `rank` counts the slots that have events, in reading order (directory files are read
//! in rank order), and a warning in `meta.warnings` says so.

mod events;
mod settle;
mod times;

use std::collections::HashMap;
use std::path::Path;

use crate::exit::{Error, Result};
use crate::source::LoadOptions;
use crate::trace::{
    CallsBuilderOf, Interner, OpsBuilderOf, RangeKind, RangesBuilderOf, ShapesBuilderOf, Trace,
};
use crate::wire::trace::{SourceFormat, TraceMeta};

use super::event::Keep;
use super::header::Header;

/// Kineto has no NVTX domains; its annotations count as the default domain (id 0), the
/// one vLLM's and SGLang's own NVTX ranges use (docs/engines.md §1.2, §2.2).
const DEFAULT_DOMAIN: i64 = 0;

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
pub(crate) struct Collector {
    names: Interner,
    short_of: Vec<u32>,
    scratch: String,
    // 64-bit ids while reading: the rank slot sits in their high bits (`ids`); `finish`
    // narrows them to the trace's 32 bits after the slots are stripped.
    ops: OpsBuilderOf<i64>,
    calls: CallsBuilderOf<i64>,
    ranges: RangesBuilderOf<i64>,
    shapes: ShapesBuilderOf<i64>,
    /// Read kernels' `grid`/`block` (`LoadOptions::geometry`).
    geometry: bool,
    /// Keep `cpu_op` input shapes (`LoadOptions::shapes`) and Python frames
    /// (`LoadOptions::python_frames_min_ns`).
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
    /// GPU ops whose device id is 2^31 or more (dropped), and host events whose pid is
    /// (kept with pid unknown).
    bad_device_ids: u64,
    bad_pids: u64,
    /// 2021-layout `Operator` events read as `record_function` ranges (inferred).
    operator_ranges: u64,
    pub warnings: Vec<String>,
}

impl Collector {
    /// A collector for the extras `opts` asks for (calls and ranges are always kept).
    pub fn new(opts: &LoadOptions) -> Self {
        let ops = if opts.geometry {
            OpsBuilderOf::default().with_geometry()
        } else {
            OpsBuilderOf::default()
        };
        Collector {
            names: Interner::default(),
            short_of: Vec::new(),
            scratch: String::new(),
            ops,
            calls: CallsBuilderOf::default(),
            ranges: RangesBuilderOf::default(),
            shapes: ShapesBuilderOf::default(),
            geometry: opts.geometry,
            keep: Keep {
                cpu_ops: opts.shapes,
                python_frames_min_ns: opts.python_frames_min_ns,
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
            operator_ranges: 0,
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
    pub(crate) fn begin_file(&mut self, path: &Path) {
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
    pub(crate) fn end_file(&mut self, header: Header) -> usize {
        let ends = self.row_counts();
        let f = self.files.last_mut().expect("begin_file first");
        f.header = header;
        for (row, end) in f.rows.iter_mut().zip(ends) {
            row.1 = end;
        }
        f.rows[0].1 - f.rows[0].0
    }

    /// Forget the current file's rows (a CPU-only trace in a directory).
    pub(crate) fn discard_file(&mut self) {
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
        // Renumbered ids (rank × stride + id) beyond 32 bits: only where hundreds of ranks
        // share process ids.
        Trace::warn_out_of_range(
            &mut meta,
            self.ops.out_of_range()
                + self.calls.out_of_range()
                + self.ranges.out_of_range()
                + self.shapes.out_of_range(),
        );
        let (ops, short_names) = self.ops.finish_ops()?;
        let (calls, call_apis) = self.calls.finish_calls()?;
        Trace::warn_name_conflicts(&mut meta, &call_apis, "API family");
        Trace::warn_name_conflicts(&mut meta, &short_names, "short name");
        Ok(Trace {
            ops,
            short_names,
            calls,
            call_apis,
            ranges: self.ranges.finish()?,
            shapes: self.shapes.finish()?,
            gpu_metrics: Vec::new(),
            devices,
            strings: self.names.into_strings(),
            meta,
        })
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
                "{} GPU event(s) had a device id of 2^31 or more (not a device) and were dropped",
                self.bad_device_ids
            ));
        }
        if self.bad_pids > 0 {
            self.warnings.push(format!(
                "{} host event(s) had a pid of 2^31 or more (not a process id); kept with the \
                 process unknown",
                self.bad_pids
            ));
        }
        if self.operator_ranges > 0 {
            self.warnings.push(format!(
                "2021 profiler layout (cat \"Operator\"): {} event(s) read as record_function \
                 ranges (ProfilerStep#N and other annotations), told from operators by their \
                 names and recorded inputs (inferred, docs/kineto-format.md §12)",
                self.operator_ranges
            ));
        }
    }
}
