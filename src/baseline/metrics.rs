//! The step metrics as a table: one [`MetricDef`] per metric says its name, unit, which
//! way is better, how it is read from a step (and from the history's steps table), how it
//! is gated by default and how it is shown. The baseline's samples, their bounds, the
//! policy's defaults, the comparison's order and rows, the history read and every gate
//! rendering iterate a [`Metrics`] table instead of naming metrics, so a metric is one row.
//!
//! The built-in table is [`Metrics::builtin`]; a plan carries a [`Metrics`] (the gate's in
//! its [`Policy`](crate::baseline::Policy)), so a caller (a test) can add a row.

use std::borrow::Cow;

use crate::baseline::model::bounds::{self, OutOfRange, Range};
use crate::wire::baseline::{metric, MetricUnit};
use crate::wire::gate::Threshold;
use crate::wire::steps::Step;

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// What a sample out of its range means: a measured one is no measurement (the step is
/// left out), a derived one had absurd inputs (the sample is dropped, the step kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Measured,
    Derived,
}

/// How a metric's per-step value is read.
#[derive(Debug, Clone, Copy)]
pub enum Read {
    /// A value of the step; the history reads it back from the steps-table `column` (the
    /// step field as `dataset` flattens it), `float` for a Float column, else Int.
    Field {
        step: fn(&Step) -> Option<f64>,
        column: &'static str,
        float: bool,
    },
    /// Computed from metrics before it in the table, the same way for a report's step and
    /// a history row.
    Of(fn(&StepSample) -> Option<f64>),
}

/// One step metric.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    /// Its name in the baseline's samples, the policy's `[metrics.NAME]` and the gate's
    /// JSON rows.
    pub name: &'static str,
    /// How the gate's tables and reason lines name it.
    pub label: &'static str,
    /// How its values are shown, and the range a sample must fall in.
    pub unit: MetricUnit,
    pub better: Better,
    pub origin: Origin,
    pub read: Read,
    /// Every step has it: a null in the history is no measurement (NaN fails its range).
    pub required: bool,
    /// Kept in a group where some steps lack it (`period_ns`: the last step of a series
    /// has none); any other metric present on only some steps is dropped.
    pub partial: bool,
    /// Whether a step's value is a result at all (MBU below its floor is not: the floor is
    /// wrong); checked after the range.
    pub valid_on: fn(&Step) -> bool,
    /// The default policy's threshold; None: reported, never gated.
    pub threshold: Option<Threshold>,
}

/// The range a sample of a unit must fall in.
pub(crate) fn range_of_unit(u: MetricUnit) -> Range {
    match u {
        MetricUnit::Ns => bounds::TIME,
        MetricUnit::Count => bounds::COUNT,
        MetricUnit::Fraction => bounds::FRACTION,
        MetricUnit::Utilisation => bounds::MBU,
    }
}

fn always(_: &Step) -> bool {
    true
}

const STEP_TIME: Threshold = Threshold {
    rel: 0.03,
    abs: 20_000.0,
    gate: true,
};

/// The built-in metrics, in the order the gate reads them.
const BUILTIN: [MetricDef; 8] = [
    MetricDef {
        name: metric::WALL_NS,
        label: "wall",
        unit: MetricUnit::Ns,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| Some(s.wall_ns.unwrap_or(0) as f64),
            column: "wall_ns",
            float: false,
        },
        required: true,
        partial: false,
        valid_on: always,
        threshold: Some(STEP_TIME),
    },
    MetricDef {
        name: metric::PERIOD_NS,
        label: "period",
        unit: MetricUnit::Ns,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| s.period_ns.map(|p| p as f64),
            column: "period_ns",
            float: false,
        },
        required: false,
        partial: true,
        valid_on: always,
        threshold: Some(STEP_TIME),
    },
    MetricDef {
        name: metric::BUSY_NS,
        label: "busy",
        unit: MetricUnit::Ns,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| Some(s.busy_ns as f64),
            column: "busy_ns",
            float: false,
        },
        required: true,
        partial: false,
        valid_on: always,
        threshold: Some(STEP_TIME),
    },
    MetricDef {
        name: metric::GAP_NS,
        label: "gap",
        unit: MetricUnit::Ns,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| Some(s.gap_ns.unwrap_or(0) as f64),
            column: "gap_ns",
            float: false,
        },
        required: true,
        partial: false,
        valid_on: always,
        threshold: Some(STEP_TIME),
    },
    MetricDef {
        name: metric::GAP_FRACTION,
        label: "gap fraction",
        unit: MetricUnit::Fraction,
        better: Better::Lower,
        origin: Origin::Measured,
        // gap / wall (0 for a zero-length step).
        read: Read::Of(|s| {
            let wall = s.get(metric::WALL_NS).unwrap_or(0.0);
            let gap = s.get(metric::GAP_NS).unwrap_or(f64::NAN);
            Some(if wall > 0.0 { gap / wall } else { 0.0 })
        }),
        required: true,
        partial: false,
        valid_on: always,
        // One percentage point of the step: smaller gap-fraction moves are noise.
        threshold: Some(Threshold {
            rel: 0.03,
            abs: 0.01,
            gate: true,
        }),
    },
    MetricDef {
        name: metric::LAUNCHES,
        label: "launches",
        unit: MetricUnit::Count,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| Some(s.launches as f64),
            column: "launches",
            float: false,
        },
        required: true,
        partial: false,
        valid_on: always,
        // At least one more launch per step.
        threshold: Some(Threshold {
            rel: 0.03,
            abs: 1.0,
            gate: true,
        }),
    },
    MetricDef {
        name: metric::EXPOSED_COMM_NS,
        label: "exposed communication",
        unit: MetricUnit::Ns,
        better: Better::Lower,
        origin: Origin::Measured,
        read: Read::Field {
            step: |s| s.exposed_comm_ns.map(|x| x as f64),
            column: "exposed_comm_ns",
            float: false,
        },
        required: false,
        partial: false,
        valid_on: always,
        // Reported only: a gate recorded before it existed must not start failing.
        threshold: None,
    },
    MetricDef {
        name: metric::MBU,
        label: "MBU (derived)",
        unit: MetricUnit::Utilisation,
        better: Better::Higher,
        origin: Origin::Derived,
        read: Read::Field {
            step: |s| {
                s.attribution
                    .as_ref()
                    .and_then(|a| a.floor.as_ref())
                    .map(|f| f.mbu)
            },
            column: "attribution_floor_mbu",
            float: true,
        },
        required: false,
        partial: false,
        // Below its floor a step has no MBU (the floor is wrong, not a result); the steps
        // report already warns of it.
        valid_on: |s| {
            !s.attribution
                .as_ref()
                .and_then(|a| a.floor.as_ref())
                .is_some_and(|f| f.below_floor)
        },
        // One percentage point of bandwidth utilisation.
        threshold: Some(Threshold {
            rel: 0.03,
            abs: 0.01,
            gate: true,
        }),
    },
];

/// A table of step metrics, in reading order.
#[derive(Debug, Clone)]
pub struct Metrics {
    rows: Vec<MetricDef>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::builtin()
    }
}

impl Metrics {
    /// The metrics stepgate gates.
    pub fn builtin() -> Self {
        Metrics {
            rows: BUILTIN.to_vec(),
        }
    }

    /// Add a metric after the others; a row of the same name replaces it.
    pub fn push(&mut self, def: MetricDef) {
        match self.rows.iter_mut().find(|r| r.name == def.name) {
            Some(r) => *r = def,
            None => self.rows.push(def),
        }
    }

    pub fn rows(&self) -> &[MetricDef] {
        &self.rows
    }

    pub fn get(&self, name: &str) -> Option<&MetricDef> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// A metric's place in reading order (one past the table for any other).
    pub fn rank(&self, name: &str) -> usize {
        self.rows
            .iter()
            .position(|r| r.name == name)
            .unwrap_or(self.rows.len())
    }

    /// Which way is worse: the row's direction; a class excess and any metric no row
    /// declares are times, worse higher.
    pub fn higher_is_worse(&self, name: &str) -> bool {
        self.get(name).is_none_or(|r| r.better == Better::Lower)
    }

    /// How a metric is named and its values shown: the row's, else a class excess (ns) or
    /// a name the table does not know (kept as is; ns when it ends in `_ns`).
    pub fn shown(&self, name: &str) -> (String, MetricUnit) {
        match self.get(name) {
            Some(r) => (r.label.to_owned(), r.unit),
            None => (
                crate::words::metric_name(name).into_owned(),
                if metric::in_ns(name) {
                    MetricUnit::Ns
                } else {
                    MetricUnit::Count
                },
            ),
        }
    }

    /// A metric's label (`wall_ns` → `wall`), else [`crate::words::metric_name`].
    pub fn label<'a>(&self, name: &'a str) -> Cow<'a, str> {
        match self.get(name) {
            Some(r) => Cow::Borrowed(r.label),
            None => crate::words::metric_name(name),
        }
    }

    /// The range a sample of a metric must fall in: its unit's, a class excess a time,
    /// any other metric a finite number of reasonable size.
    pub fn range(&self, name: &str) -> Range {
        match self.get(name) {
            Some(r) => range_of_unit(r.unit),
            None => of_metric(name),
        }
    }

    /// The step metrics a step has, read through the table in its order.
    pub fn sample(&self, s: &Step, mean_context: Option<f64>) -> StepSample {
        let mut x = StepSample {
            values: Vec::with_capacity(self.rows.len()),
            mean_context,
        };
        for r in &self.rows {
            let v = match r.read {
                Read::Field { step, .. } => step(s),
                Read::Of(f) => f(&x),
            };
            x.values.push((r.name, v));
        }
        x
    }

    /// The steps-table columns the history reads the metrics from: (name, is Float).
    pub fn columns(&self) -> impl Iterator<Item = (&'static str, bool)> + '_ {
        self.rows.iter().filter_map(|r| match r.read {
            Read::Field { column, float, .. } => Some((column, float)),
            Read::Of(_) => None,
        })
    }

    /// A history row's sample: `column(name)` is that column's value in the row (None for
    /// a null); a required metric's null reads NaN, which fails its range.
    pub(crate) fn sample_from_columns(
        &self,
        column: impl Fn(&str) -> Option<f64>,
        mean_context: Option<f64>,
    ) -> StepSample {
        let mut x = StepSample {
            values: Vec::with_capacity(self.rows.len()),
            mean_context,
        };
        for r in &self.rows {
            let v = match r.read {
                Read::Field { column: c, .. } => match column(c) {
                    None if r.required => Some(f64::NAN),
                    v => v,
                },
                Read::Of(f) => f(&x),
            };
            x.values.push((r.name, v));
        }
        x
    }
}

/// The per-step values of the step metrics of one step, as a table read them, and the
/// derived mean context per request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepSample {
    /// (metric name, value) in the table's order; None where the step has none.
    pub values: Vec<(&'static str, Option<f64>)>,
    pub mean_context: Option<f64>,
}

impl StepSample {
    /// A metric's value by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| *v)
    }

    /// Set (or add) a metric's value.
    pub fn set(&mut self, name: &'static str, v: Option<f64>) {
        match self.values.iter_mut().find(|(n, _)| *n == name) {
            Some(x) => x.1 = v,
            None => self.values.push((name, v)),
        }
    }

    /// The first measured sample out of range. A step with one is not a measurement (a
    /// sign-flipped or overflowed column): it is left out, never compared.
    pub(crate) fn bad_measurement(&self, table: &Metrics) -> Option<OutOfRange> {
        table
            .rows
            .iter()
            .filter(|r| r.origin == Origin::Measured)
            .find_map(|r| {
                let v = self.get(r.name)?;
                let range = range_of_unit(r.unit);
                (!range.holds(v)).then(|| OutOfRange {
                    field: r.name.to_owned(),
                    value: v,
                    range,
                })
            })
    }

    /// Derived samples out of range are set absent (the floor or the step name was
    /// absurd, not the step): returns what was dropped.
    pub(crate) fn drop_bad_derived(&mut self, table: &Metrics) -> Vec<OutOfRange> {
        let mut out = Vec::new();
        for r in table.rows.iter().filter(|r| r.origin == Origin::Derived) {
            if let Some(x) = self.get(r.name) {
                let range = range_of_unit(r.unit);
                if !range.holds(x) {
                    out.push(OutOfRange {
                        field: r.name.to_owned(),
                        value: x,
                        range,
                    });
                    self.set(r.name, None);
                }
            }
        }
        if let Some(x) = self.mean_context {
            if !bounds::CONTEXT.holds(x) {
                out.push(OutOfRange {
                    field: "mean_context".to_owned(),
                    value: x,
                    range: bounds::CONTEXT,
                });
                self.mean_context = None;
            }
        }
        out
    }
}

/// The range of a step metric of the built-in table (a baseline file read back is held to
/// it); see [`Metrics::range`].
pub(crate) fn of_metric(name: &str) -> Range {
    match BUILTIN.iter().find(|r| r.name == name) {
        Some(r) => range_of_unit(r.unit),
        None if metric::in_ns(name) => bounds::TIME,
        None => bounds::OTHER,
    }
}
