//! What a baseline's samples must be and what a baseline does with them: the bounds every
//! sample is held to (`bounds`), the current-schema constructor, group labels and thinning.
//! The stored types themselves (per step kind and batch size, the per-step samples of every
//! step metric, kernel and category) are `wire::baseline`.

use crate::wire::baseline::{
    metric, Baseline, BaselineMeta, Group, SampleSet, FORMAT, SCHEMA_VERSION,
};

/// What a sane sample is: the one definition a baseline file is checked against when it is
/// read, a baseline is held to when it is recorded, and a dataset's rows are held to when
/// `trend` and `gate --history` read them. The bounds are far beyond any real step (a
/// step of 11.6 days, a trillion launches) and exist so that a corrupted, hand-edited or
/// sign-flipped number (1e308, −5 ns, a NaN context) never decides a gate.
pub mod bounds {
    /// Largest time sample, ns (about 11.6 days: no step is that long, and sums of such
    /// samples stay exact in f64).
    pub(crate) const MAX_NS: f64 = 1e15;
    /// Largest count sample (launches, kernel instances per step).
    pub(crate) const MAX_COUNT: f64 = 1e12;
    /// Largest mean context per request, tokens.
    pub const MAX_CONTEXT: f64 = 1e10;
    /// Largest MBU: above 1 is possible when the floor is priced high; beyond 1000 it is
    /// no measurement.
    pub(crate) const MAX_MBU: f64 = 1e3;

    /// The closed range a sample must lie in, and how a message says it.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Range {
        pub lo: f64,
        pub hi: f64,
        pub what: &'static str,
    }

    impl Range {
        /// Finite and within the range.
        pub fn holds(&self, v: f64) -> bool {
            v.is_finite() && v >= self.lo && v <= self.hi
        }
    }

    pub(crate) const TIME: Range = Range {
        lo: 0.0,
        hi: MAX_NS,
        what: "a time from 0 to 1e15 ns",
    };
    pub const COUNT: Range = Range {
        lo: 0.0,
        hi: MAX_COUNT,
        what: "a count from 0 to 1e12",
    };
    pub(crate) const FRACTION: Range = Range {
        lo: 0.0,
        hi: 1.0,
        what: "a fraction from 0 to 1",
    };
    pub const MBU: Range = Range {
        lo: 0.0,
        hi: MAX_MBU,
        what: "a utilisation from 0 to 1000",
    };
    pub(crate) const CONTEXT: Range = Range {
        lo: 0.0,
        hi: MAX_CONTEXT,
        what: "a number of tokens from 0 to 1e10",
    };
    /// A metric this build does not know: any finite number of reasonable size.
    pub const OTHER: Range = Range {
        lo: -MAX_NS,
        hi: MAX_NS,
        what: "a finite number within ±1e15",
    };

    /// A number as a person reads it: 1e308, not 309 digits.
    pub fn show(v: f64) -> String {
        if v.is_finite() && v != 0.0 && !(1e-4..1e9).contains(&v.abs()) {
            format!("{v:e}")
        } else {
            format!("{v}")
        }
    }

    /// A sample outside its range: which, what it was, what it must be.
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) struct OutOfRange {
        pub field: String,
        pub value: f64,
        pub range: Range,
    }

    impl std::fmt::Display for OutOfRange {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "{} is {} (must be {})",
                self.field,
                show(self.value),
                self.range.what
            )
        }
    }
}

impl Baseline {
    /// A baseline of the current schema.
    pub fn new(meta: BaselineMeta, samples: SampleSet) -> Self {
        Baseline {
            format: FORMAT.to_owned(),
            schema_version: SCHEMA_VERSION,
            tool: Some(crate::wire::meta::Tool::current()),
            source: None,
            meta,
            samples,
        }
    }
}

impl Group {
    /// An empty group of one kind and batch size.
    pub fn new(step_kind: impl Into<String>, batch_size: Option<u32>) -> Self {
        Group {
            step_kind: step_kind.into(),
            batch_size,
            ..Group::default()
        }
    }

    /// Steps in the group: the wall samples, else the longest sample vector.
    pub fn steps(&self) -> usize {
        if let Some(w) = self.metrics.get(metric::WALL_NS) {
            return w.len();
        }
        let m = self.metrics.values().map(Vec::len).max().unwrap_or(0);
        let k = self
            .kernels
            .values()
            .map(|k| k.exclusive_ns.len())
            .max()
            .unwrap_or(0);
        m.max(k)
    }

    /// The per-step samples of a step metric by name: a measured or derived metric, or
    /// `excess_ns.CLASS`, a priced class's excess over its floor (derived).
    pub(crate) fn metric_samples(&self, name: &str) -> Option<&[f64]> {
        match name.strip_prefix(metric::CLASS_EXCESS_PREFIX) {
            Some(class) => self.classes.get(class).map(|c| c.excess_ns.as_slice()),
            None => self.metrics.get(name).map(Vec::as_slice),
        }
    }

    /// `decode bs=32`, or `decode` when the batch size is unknown.
    pub fn label(&self) -> String {
        group_label(&self.step_kind, self.batch_size)
    }

    /// Keep at most `max_steps` steps, evenly spaced, the same steps for every metric,
    /// kernel and category, so a stored baseline stays small while its statistics hold.
    pub(crate) fn thin(&mut self, max_steps: usize) {
        let n = self.steps();
        if max_steps == 0 || n <= max_steps {
            return;
        }
        // Step i of the kept set is step floor(i·n/max) of the original: even spacing
        // keeps slow drifts over the capture represented.
        let keep: Vec<usize> = (0..max_steps).map(|i| i * n / max_steps).collect();
        let pick = |v: &mut Vec<f64>| {
            let picked: Vec<f64> = keep.iter().filter_map(|&i| v.get(i).copied()).collect();
            *v = picked;
        };
        self.metrics.values_mut().for_each(pick);
        self.categories.values_mut().for_each(pick);
        for c in self.classes.values_mut() {
            pick(&mut c.floor_ns);
            pick(&mut c.excess_ns);
        }
        for k in self.kernels.values_mut() {
            pick(&mut k.exclusive_ns);
            pick(&mut k.instances);
        }
    }
}

/// The label of a (kind, batch size) group key.
pub(crate) fn group_label(step_kind: &str, batch_size: Option<u32>) -> String {
    match batch_size {
        Some(b) => format!("{step_kind} bs={b}"),
        None => step_kind.to_owned(),
    }
}

impl SampleSet {
    /// Thin every group to at most `max_steps` steps (see [`Group::thin`]).
    pub(crate) fn thin(&mut self, max_steps: usize) {
        self.groups.iter_mut().for_each(|g| g.thin(max_steps));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::baseline::KernelSamples;

    #[test]
    fn thin_keeps_the_same_steps_everywhere() {
        let mut g = Group::new("decode", Some(8));
        g.metrics
            .insert(metric::WALL_NS.into(), (0..10).map(f64::from).collect());
        g.kernels.insert(
            "k".into(),
            KernelSamples {
                exclusive_ns: (100..110).map(f64::from).collect(),
                instances: vec![1.0; 10],
                ..KernelSamples::default()
            },
        );
        g.thin(4);
        // floor(i·10/4) for i in 0..4 = 0, 2, 5, 7
        assert_eq!(g.metrics[metric::WALL_NS], vec![0.0, 2.0, 5.0, 7.0]);
        assert_eq!(
            g.kernels["k"].exclusive_ns,
            vec![100.0, 102.0, 105.0, 107.0]
        );
        assert_eq!(g.steps(), 4);
        assert_eq!(g.label(), "decode bs=8");
    }
}
