//! A step's kind as groups key it: the marker's kind, else the inferred one, marked so
//! that an inferred decode never matches an exact one (the key groups, `--kind`, the
//! class spread and a baseline's groups share): a projection of two fields, vocabulary
//! every layer (the renderers included) reads.

use super::{Step, StepKind};

/// A step's kind as groups key it: the marker's kind, else the inferred one, marked so
/// that an inferred decode never matches an exact one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindLabel {
    pub kind: StepKind,
    pub inferred: bool,
}

impl KindLabel {
    /// `decode`, or `decode (inferred)` for a guess: the group key a baseline stores.
    pub fn as_str(self) -> &'static str {
        if !self.inferred {
            return self.kind.as_str();
        }
        match self.kind {
            StepKind::Decode => "decode (inferred)",
            StepKind::Prefill => "prefill (inferred)",
            StepKind::Mixed => "mixed (inferred)",
            StepKind::Verify => "verify (inferred)",
            StepKind::Draft => "draft (inferred)",
            StepKind::Idle => "idle (inferred)",
            StepKind::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for KindLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Step {
    /// The kind groups and `--kind` use: the marker's, else the inferred guess.
    pub(crate) fn kind_label(&self) -> KindLabel {
        match (self.kind, self.kind_guess) {
            (StepKind::Unknown, Some(g)) => KindLabel {
                kind: g,
                inferred: true,
            },
            (k, _) => KindLabel {
                kind: k,
                inferred: false,
            },
        }
    }
}
