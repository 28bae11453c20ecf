//! One kept event → rows: ops (device, stream and names settled per event), host calls,
//! annotation ranges, operator shapes and process names, each tagged with its rank slot.

use super::times::{MAX_ABS_TS_NS, MAX_DUR_NS, MIN_TS_NS};
use super::{Collector, DEFAULT_DOMAIN};
use crate::source::kineto::event::{self, Class, Event};
use crate::source::kineto::ids::{self, enc};
use crate::source::kineto::names::short_name;
use crate::source::kineto::number::us_text_to_ns;
use crate::source::kineto::shapes;
use crate::trace::{CallApi, CallRow, OpKind, OpRow, RangeKind, RangeRow, ShapeRow};

impl Collector {
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
                });
            }
            Class::Annotation => self.range(ev, slot, (start_ns, end_ns), RangeKind::HostPushPop),
            Class::GpuAnnotation => {
                self.range(ev, slot, (start_ns, end_ns), RangeKind::GpuAnnotation);
            }
            Class::Python => {
                // Beside the step functions, a frames load keeps the frames long enough.
                let step_function = ev.name.is_some_and(|n| event::is_step_function(n.raw));
                let min_ns = self.keep.python_frames_min_ns;
                if step_function || min_ns.is_some_and(|m| end_ns - start_ns >= m) {
                    self.range(ev, slot, (start_ns, end_ns), RangeKind::PythonStack);
                }
            }
            Class::Operator if event::is_record_function(ev) => {
                self.operator_ranges += 1;
                self.range(ev, slot, (start_ns, end_ns), RangeKind::HostPushPop);
            }
            Class::Operator if self.keep.cpu_ops => self.shape(ev, slot, start_ns, end_ns),
            Class::Operator => {}
            Class::CpuOp => self.shape(ev, slot, start_ns, end_ns),
            Class::Meta | Class::Skip => {}
        }
    }

    /// An annotated range: `pid` is the process, or the device of a GPU annotation.
    fn range(
        &mut self,
        ev: &Event<'_>,
        slot: u32,
        (start_ns, end_ns): (i64, i64),
        kind: RangeKind,
    ) {
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
            kind,
        });
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
}
