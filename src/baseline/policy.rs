//! The gate's thresholds: built-in defaults, and a policy file (TOML or JSON) that
//! overrides them per step metric, per kernel (a [`Selector`]: part of the name, or
//! `re:REGEX`) and per category.
//!
//! Defaults (docs/gate.md): step times 3% and 20 µs, per-kernel time per step 10% and 5 µs,
//! new kernels above 1% of step busy time; gap fraction, launches, MBU and categories have
//! their own starting points, documented there too.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::baseline::metrics::Metrics;
pub use crate::baseline::select::Selector;
use crate::exit::{Error, Result};
use crate::wire::baseline::metric;
use crate::wire::gate::Threshold;

impl Threshold {
    const fn new(rel: f64, abs: f64) -> Self {
        Threshold {
            rel,
            abs,
            gate: true,
        }
    }
}

/// A partial threshold from a policy file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    pub rel: Option<f64>,
    /// For step metrics: in the metric's unit.
    pub abs: Option<f64>,
    /// For kernels and categories: ns per step.
    pub abs_ns: Option<f64>,
    pub gate: Option<bool>,
}

impl Override {
    fn apply(&self, t: Threshold) -> Threshold {
        Threshold {
            rel: self.rel.unwrap_or(t.rel),
            abs: self.abs.or(self.abs_ns).unwrap_or(t.abs),
            gate: self.gate.unwrap_or(t.gate),
        }
    }
}

/// One `[[kernel]]` rule.
#[derive(Debug, Clone)]
pub struct KernelRule {
    pub selector: Selector,
    pub over: Override,
    /// A rule that may select no kernel (a policy shared by runs with and without, say,
    /// all-reduce kernels); any other rule that selects none is an input error.
    pub optional: bool,
}

/// What `baseline record` does with a sample no gate could decide on (no group with
/// `min_samples` steps): refuse it (exit 2), or write it with a loud warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SmallBaseline {
    Refuse,
    Warn,
}

/// Everything the comparison needs to decide.
#[derive(Debug, Clone)]
pub struct Policy {
    /// `baseline record` of a sample below `min_samples`: refuse (the default) or warn.
    pub small_baseline: SmallBaseline,
    /// Inconclusive exits 1 (a failure) instead of 3.
    pub inconclusive_fails: bool,
    /// Compare sides whose operating points differ in meaning instead of calling them
    /// incomparable (`gate --allow-incomparable`; not a policy-file key).
    pub allow_incomparable: bool,
    /// Fewer samples per side than this in a group: inconclusive.
    pub min_samples: usize,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Interval coverage (0.95).
    pub confidence: f64,
    /// Bootstrap seed: same inputs, same verdict.
    pub seed: u64,
    /// Mean context moved by more than this fraction: the group is not like for like.
    pub context_shift: f64,
    /// Step metrics by name; a metric not listed is reported, not gated.
    pub metrics: BTreeMap<String, Threshold>,
    /// The step metrics: what is sampled, how each is judged and shown; the defaults of
    /// `metrics` are its rows' thresholds.
    pub table: Metrics,
    /// Default for every kernel's exclusive ns per step.
    pub kernel: Threshold,
    /// Default for every category's ns per step.
    pub category: Threshold,
    /// A new (or vanished) kernel is listed when its mean time per step is above this
    /// share of the mean step busy time (and above the kernel's absolute threshold).
    pub new_kernel_share: f64,
    /// Whether a listed new kernel fails the gate.
    pub new_kernels_fail: bool,
    /// `[[kernel]]` rules; the first match wins over category rules and the default.
    pub kernel_rules: Vec<KernelRule>,
    /// `[[category]]` rules by category name; apply to the category and its kernels.
    pub category_rules: BTreeMap<String, Override>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::with_table(Metrics::builtin())
    }
}

impl Policy {
    /// The default policy over a metric table: each row's threshold (a row without one is
    /// reported, not gated).
    pub fn with_table(table: Metrics) -> Self {
        let metrics = table
            .rows()
            .iter()
            .filter_map(|r| Some((r.name.to_owned(), r.threshold?)))
            .collect();
        Policy {
            small_baseline: SmallBaseline::Refuse,
            inconclusive_fails: false,
            allow_incomparable: false,
            min_samples: 10,
            resamples: 10_000,
            confidence: 0.95,
            seed: 0x5EED,
            context_shift: 0.10,
            metrics,
            kernel: Threshold::new(0.10, 5_000.0),
            category: Threshold::new(0.05, 10_000.0),
            new_kernel_share: 0.01,
            new_kernels_fail: true,
            kernel_rules: Vec::new(),
            category_rules: BTreeMap::new(),
            table,
        }
    }
}

/// A step metric the policy does not list: reported with a 3% relative threshold, never
/// gated (a new metric must not fail gates recorded before it existed).
pub(crate) const UNLISTED_METRIC: Threshold = Threshold {
    rel: 0.03,
    abs: 0.0,
    gate: false,
};

impl Policy {
    /// The threshold for one step metric: the policy's entry, else [`UNLISTED_METRIC`].
    pub fn metric_threshold(&self, metric_name: &str) -> Threshold {
        self.metrics
            .get(metric_name)
            .copied()
            .unwrap_or(UNLISTED_METRIC)
    }

    /// The threshold for one kernel: first `[[kernel]]` rule that matches, else its
    /// category's rule, else the kernel default. None: ignored (`gate = false` still
    /// reports; this is the resolved threshold in every case).
    pub fn kernel_threshold(&self, full_name: &str, short_name: &str, category: &str) -> Threshold {
        if let Some(r) = self
            .kernel_rules
            .iter()
            .find(|r| r.selector.matches(full_name, short_name))
        {
            return r.over.apply(self.kernel);
        }
        match self.category_rules.get(category) {
            Some(o) => o.apply(self.kernel),
            None => self.kernel,
        }
    }

    /// The threshold a `[[kernel]]` rule gives the kernels it selects (over the kernel
    /// default).
    pub(crate) fn kernel_threshold_of(&self, rule: &KernelRule) -> Threshold {
        rule.over.apply(self.kernel)
    }

    /// The threshold for one category's time per step.
    pub fn category_threshold(&self, category: &str) -> Threshold {
        match self.category_rules.get(category) {
            Some(o) => o.apply(self.category),
            None => self.category,
        }
    }

    /// Whether a `[metrics."excess_ns.CLASS"]` entry gates a class's excess: only then
    /// does a history gate read the runs' per-class samples.
    pub(crate) fn gates_class_excess(&self) -> bool {
        self.metrics
            .keys()
            .any(|k| k.starts_with(metric::CLASS_EXCESS_PREFIX))
    }

    /// The policy of `--policy FILE`, or the defaults without one.
    pub fn load(path: Option<&Path>) -> Result<Policy> {
        path.map_or_else(|| Ok(Policy::default()), Policy::from_file)
    }

    /// Read a policy file (`.toml` or `.json`) over the defaults.
    pub fn from_file(path: &Path) -> Result<Policy> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::input(format!("cannot read policy {}: {e}", path.display())))?;
        let is_json = path.extension().and_then(|e| e.to_str()) == Some("json");
        Policy::from_str(&text, is_json)
            .map_err(|e| Error::input(format!("policy {}: {}", path.display(), e.message)))
    }

    /// Parse policy text (TOML, or JSON when `json`) over the defaults.
    pub fn from_str(text: &str, json: bool) -> Result<Policy> {
        let hint = "see docs/gate.md for the policy format";
        let f: PolicyFile = if json {
            serde_json::from_str(text).map_err(|e| Error::input(format!("{e}; {hint}")))?
        } else {
            toml::from_str(text).map_err(|e| Error::input(format!("{}; {hint}", e.message())))?
        };
        f.into_policy()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKernelsFile {
    min_share: Option<f64>,
    fail: Option<bool>,
}

// Fields spelled out rather than `#[serde(flatten)]`: serde cannot refuse unknown keys
// through a flattened struct.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelRuleFile {
    name: Option<String>,
    regex: Option<String>,
    rel: Option<f64>,
    abs_ns: Option<f64>,
    gate: Option<bool>,
    optional: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CategoryRuleFile {
    name: String,
    rel: Option<f64>,
    abs_ns: Option<f64>,
    gate: Option<bool>,
}

fn rule_override(rel: Option<f64>, abs_ns: Option<f64>, gate: Option<bool>) -> Override {
    Override {
        rel,
        abs: None,
        abs_ns,
        gate,
    }
}

/// The file as written: every field optional, unknown keys refused (a typo must not
/// silently loosen a gate).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    small_baseline: Option<SmallBaseline>,
    inconclusive_fails: Option<bool>,
    min_samples: Option<usize>,
    resamples: Option<usize>,
    confidence: Option<f64>,
    seed: Option<u64>,
    context_shift: Option<f64>,
    #[serde(default)]
    metrics: BTreeMap<String, Override>,
    kernels: Option<Override>,
    categories: Option<Override>,
    new_kernels: Option<NewKernelsFile>,
    #[serde(default)]
    kernel: Vec<KernelRuleFile>,
    #[serde(default)]
    category: Vec<CategoryRuleFile>,
}

fn check_threshold(what: &str, t: Threshold) -> Result<Threshold> {
    if !(t.rel.is_finite() && t.rel >= 0.0 && t.abs.is_finite() && t.abs >= 0.0) {
        return Err(Error::input(format!(
            "{what}: rel and abs must be finite and ≥ 0 (got rel {}, abs {})",
            t.rel, t.abs
        )));
    }
    Ok(t)
}

impl PolicyFile {
    fn into_policy(self) -> Result<Policy> {
        let mut p = Policy::default();
        p.small_baseline = self.small_baseline.unwrap_or(p.small_baseline);
        p.inconclusive_fails = self.inconclusive_fails.unwrap_or(p.inconclusive_fails);
        p.min_samples = self.min_samples.unwrap_or(p.min_samples);
        p.resamples = self.resamples.unwrap_or(p.resamples);
        p.confidence = self.confidence.unwrap_or(p.confidence);
        p.seed = self.seed.unwrap_or(p.seed);
        p.context_shift = self.context_shift.unwrap_or(p.context_shift);
        if p.min_samples < 2 {
            return Err(Error::input("min_samples must be at least 2"));
        }
        if !(100..=1_000_000).contains(&p.resamples) {
            return Err(Error::input("resamples must be between 100 and 1,000,000"));
        }
        if !(p.confidence > 0.5 && p.confidence < 1.0) {
            return Err(Error::input(
                "confidence must be between 0.5 and 1 (e.g. 0.95)",
            ));
        }
        if !(p.context_shift.is_finite() && p.context_shift >= 0.0) {
            return Err(Error::input("context_shift must be ≥ 0 (e.g. 0.10)"));
        }
        for (name, o) in &self.metrics {
            // A metric the defaults do not know starts from the step default, gated.
            let base = p
                .metrics
                .get(name)
                .copied()
                .unwrap_or(Threshold::new(0.03, 20_000.0));
            let t = check_threshold(&format!("metrics.{name}"), o.apply(base))?;
            p.metrics.insert(name.clone(), t);
        }
        if let Some(o) = self.kernels {
            p.kernel = check_threshold("kernels", o.apply(p.kernel))?;
        }
        if let Some(o) = self.categories {
            p.category = check_threshold("categories", o.apply(p.category))?;
        }
        if let Some(n) = self.new_kernels {
            p.new_kernel_share = n.min_share.unwrap_or(p.new_kernel_share);
            p.new_kernels_fail = n.fail.unwrap_or(p.new_kernels_fail);
            if !(0.0..=1.0).contains(&p.new_kernel_share) {
                return Err(Error::input(
                    "new_kernels.min_share must be between 0 and 1",
                ));
            }
        }
        for (i, r) in self.kernel.into_iter().enumerate() {
            let selector = match (r.name, r.regex) {
                (Some(n), None) => Selector::parse(&n),
                // `regex = "…"` is the older spelling of `name = "re:…"`.
                (None, Some(re)) => Selector::parse(&format!("re:{re}")),
                _ => {
                    return Err(Error::input(
                        "each [[kernel]] rule needs exactly one of name = \"…\" (part of the \
                         name, or re:REGEX) or regex = \"…\"",
                    ))
                }
            }
            .map_err(|e| Error::input(format!("[[kernel]] rule {}: {}", i + 1, e.message)))?;
            let over = rule_override(r.rel, r.abs_ns, r.gate);
            check_threshold("[[kernel]]", over.apply(p.kernel))?;
            p.kernel_rules.push(KernelRule {
                selector,
                over,
                optional: r.optional.unwrap_or(false),
            });
        }
        for c in self.category {
            let over = rule_override(c.rel, c.abs_ns, c.gate);
            check_threshold(&format!("[[category]] {}", c.name), over.apply(p.category))?;
            p.category_rules.insert(c.name, over);
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_issue_starting_points() {
        let p = Policy::default();
        assert_eq!(p.metrics[metric::WALL_NS], Threshold::new(0.03, 20_000.0));
        assert_eq!(p.kernel, Threshold::new(0.10, 5_000.0));
        assert_eq!(p.new_kernel_share, 0.01);
        assert_eq!((p.resamples, p.min_samples), (10_000, 10));
    }

    #[test]
    fn an_unlisted_metric_is_reported_not_gated() {
        let p = Policy::default();
        assert_eq!(
            p.metric_threshold(metric::WALL_NS),
            Threshold::new(0.03, 20_000.0)
        );
        let t = p.metric_threshold("tokens_per_s");
        assert_eq!((t.rel, t.abs, t.gate), (0.03, 0.0, false));
    }

    #[test]
    fn rules_take_precedence_in_order() {
        let p = Policy::from_str(
            r#"
inconclusive_fails = true
[metrics.wall_ns]
rel = 0.05
[kernels]
abs_ns = 1000
[[kernel]]
regex = "^nccl"
gate = false
[[kernel]]
name = "gemm_a"
rel = 0.02
[[category]]
name = "attention"
rel = 0.25
"#,
            false,
        )
        .unwrap();
        assert!(p.inconclusive_fails);
        assert_eq!(p.metrics[metric::WALL_NS], Threshold::new(0.05, 20_000.0));
        assert!(
            !p.kernel_threshold("ncclAllReduce", "x", "communication")
                .gate
        );
        assert_eq!(p.kernel_threshold("full", "gemm_a", "gemm").rel, 0.02);
        assert_eq!(p.kernel_threshold("flash", "flash", "attention").rel, 0.25);
        assert_eq!(
            p.kernel_threshold("flash", "flash", "attention").abs,
            1000.0
        );
        assert_eq!(p.category_threshold("attention").rel, 0.25);
        assert_eq!(p.category_threshold("gemm"), p.category);
    }

    #[test]
    fn json_and_bad_files() {
        let p = Policy::from_str(r#"{"kernel": [{"name": "k", "rel": 0.5}]}"#, true).unwrap();
        assert_eq!(p.kernel_threshold("k", "k", "c").rel, 0.5);
        let e = Policy::from_str("[kernelz]\nrel = 1", false).unwrap_err();
        assert!(e.message.contains("unknown field"), "{}", e.message);
        let e = Policy::from_str("[[kernel]]\nregex = \"(\"", false).unwrap_err();
        assert!(e.message.contains("does not compile"), "{}", e.message);
        let e = Policy::from_str("[[kernel]]\nname = \"re:(\"", false).unwrap_err();
        assert!(e.message.contains("rule 1") && e.message.contains("does not compile"));
        assert!(Policy::from_str("[[kernel]]\nname = \"\"", false).is_err());
        assert!(Policy::from_str("[[kernel]]\nrel = 0.1", false).is_err());
        assert!(Policy::from_str("[kernels]\nrel = -1", false).is_err());
    }
}
