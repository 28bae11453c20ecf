//! The run verdict of a steps report, with its sentence and its action apart, the number
//! that proves it, the other actions ranked by what each can win, and what the report
//! means by a class that "varies" across like steps.

use serde::{Deserialize, Serialize};

/// A class varies when its p90 is at least this multiple of its p10 …
pub const VARIES_RATIO: f64 = 2.0;
/// … and p90 − p10 is at least this share of the group's median wall, so a 2 µs kernel
/// that sometimes takes 5 µs is not named.
pub const VARIES_OF_WALL: f64 = 0.1;

/// The run's verdict: the first rule of the verdict table (`attribution::verdict`,
/// docs/verdict-rules.md) that fires on the capture, with its line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunVerdict {
    /// The rule's id (`dispatch-bound`, `one-kernel-at-roof`, …).
    pub rule: String,
    /// What the claim is about, as the answer's first word: the run's step shape, or
    /// what the rule speaks of where that differs from it (a class, a kernel at its roof,
    /// in a run whose steps are one kernel dominant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The run line, in the tool's words, with its numbers labelled measured or derived:
    /// the sentence and the action joined (kept for readers of older reports).
    pub line: String,
    /// What the capture shows, with its numbers: the line without its action.
    #[serde(default)]
    pub sentence: String,
    /// The next action the verdict gives, where it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Advice held back because the capture shows it already runs or cannot help (a
    /// custom all-reduce already running, CUDA graphs already replayed, a kernel at the
    /// roof).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<String>,
    /// The one number that proves the sentence, with its basis: written by the rule that
    /// fired, so no reader finds it in the sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    /// The other next actions (each group's class actions), largest win per step first,
    /// one per wording, without the verdict's own and without those that contradict it
    /// (a kernel action that can win less than the idle time an idle verdict names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranked: Vec<RankedAction>,
}

/// The number a verdict rests on: its value, unit and basis, what it is, its share of the
/// whole it is measured against, and its interval where the rule has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Proof {
    pub value: f64,
    pub unit: ProofUnit,
    pub basis: ProofBasis,
    /// What the number is, in words ("the longest gap between two kernels inside a step").
    pub what: String,
    /// The value's share of a whole (the steps' wall, their busy time, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<ProofShare>,
    /// Low and high ends in the value's unit (the p10 and p90 of a class that varies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
}

/// The unit of a proof's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProofUnit {
    /// Nanoseconds.
    Ns,
    /// A fraction (0.8 is 80%).
    Fraction,
}

/// How a proof's value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProofBasis {
    /// Timed in the trace.
    Measured,
    /// Arithmetic on measured times and the roofline floor.
    Derived,
}

impl ProofBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            ProofBasis::Measured => "measured",
            ProofBasis::Derived => "derived",
        }
    }
}

/// A proof's value as a fraction of a whole.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProofShare {
    pub fraction: f64,
    pub of: ShareOf,
}

/// The whole a proof's share is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShareOf {
    /// The wall of the steps the value is over.
    Wall,
    /// Their GPU busy time.
    Busy,
    /// The class excess of the step (time − floor, classes with an excess).
    Excess,
}

/// One next action beside the verdict: a class's action in a group's median step and the
/// most it can win per step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankedAction {
    /// The group of like steps (`decode`, `prefill`, …).
    pub group: String,
    /// The kernel class's key, as the class tables name it.
    pub class: String,
    pub action: String,
    /// The most it can win per step: the class's excess over its floor in the group's
    /// median step, ns (derived).
    pub win_ns: i64,
}
