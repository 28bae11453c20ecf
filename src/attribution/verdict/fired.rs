//! What a verdict rule says when it fires: its sentence and its action apart, joined into
//! the run line only for readers of the old `line` field, with the number that proves it.

use crate::wire::attribution::KernelClass;
use crate::wire::verdict::{Proof, ProofBasis, ProofShare, ProofUnit, ShareOf};

/// What a rule says when it fires: the sentence and the action apart, so that no reader
/// has to find the action in the line.
pub struct Fired {
    pub sentence: String,
    /// What joins the action to the sentence in the run line (" — ", or ": " where the
    /// table's wording reads "…: take it to Nsight Compute").
    pub joiner: &'static str,
    pub action: Option<String>,
    pub held_back: Vec<String>,
    /// The number the sentence rests on.
    pub proof: Option<Proof>,
    /// The class whose own action the verdict gives (the group where one is named), so
    /// the ranked actions leave it out by identity.
    pub own: Option<(Option<String>, KernelClass)>,
}

/// The separator the verdict table puts before an action (docs/verdict-rules.md).
pub const DASH: &str = " — ";

impl Fired {
    /// A sentence with its action.
    pub fn act(sentence: String, joiner: &'static str, action: String) -> Fired {
        Fired {
            sentence,
            joiner,
            action: Some(action),
            held_back: Vec::new(),
            proof: None,
            own: None,
        }
    }

    /// A sentence with no action.
    pub fn bare(sentence: String) -> Fired {
        Fired {
            sentence,
            joiner: "",
            action: None,
            held_back: Vec::new(),
            proof: None,
            own: None,
        }
    }

    /// A line another module wrote whole (a step's action, an item's): every such text
    /// puts its action after its last " — " (docs/verdict-rules.md), so it is split once
    /// here, where it is made, and never by a reader. A text without one is all sentence.
    pub fn whole(text: &str) -> Fired {
        match text.rsplit_once(DASH) {
            Some((s, a)) if !a.trim().is_empty() => Fired::act(s.to_owned(), DASH, a.to_owned()),
            _ => Fired::bare(text.to_owned()),
        }
    }

    pub fn held(mut self, held_back: Vec<String>) -> Fired {
        self.held_back = held_back;
        self
    }

    pub fn proved(mut self, proof: Proof) -> Fired {
        self.proof = Some(proof);
        self
    }

    pub fn owns(mut self, group: Option<String>, class: KernelClass) -> Fired {
        self.own = Some((group, class));
        self
    }

    /// The run line: the sentence and the action as the verdict table words them.
    pub fn line(&self) -> String {
        match &self.action {
            Some(a) => format!("{}{}{a}", self.sentence, self.joiner),
            None => self.sentence.clone(),
        }
    }
}

/// A time in ns that proves a verdict, with its share of a whole where there is one.
pub fn time_proof(
    ns: f64,
    basis: ProofBasis,
    what: String,
    share: Option<(f64, ShareOf)>,
) -> Proof {
    Proof {
        value: ns,
        unit: ProofUnit::Ns,
        basis,
        what,
        share: share.map(|(fraction, of)| ProofShare { fraction, of }),
        interval: None,
    }
}

/// A fraction that proves a verdict (a roof fraction, MBU), derived.
pub fn fraction_proof(fraction: f64, what: String) -> Proof {
    Proof {
        value: fraction,
        unit: ProofUnit::Fraction,
        basis: ProofBasis::Derived,
        what,
        share: None,
        interval: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_line_splits_at_its_last_dash_and_joins_back_to_itself() {
        let text = "attention at 50%: below the roof — check the split — batch more";
        let f = Fired::whole(text);
        assert_eq!(
            f.sentence,
            "attention at 50%: below the roof — check the split"
        );
        assert_eq!(f.action.as_deref(), Some("batch more"));
        assert_eq!(f.line(), text);
        // No dash, or nothing after it: all sentence.
        let bare = Fired::whole("kernels are back to back: give --model");
        assert_eq!(bare.action, None);
        assert_eq!(bare.line(), "kernels are back to back: give --model");
        assert_eq!(Fired::whole("a stall — ").action, None);
        // A rule's own joiner is kept in the line.
        let f = Fired::act("k is 90% of busy time".into(), ": ", "take it to X".into());
        assert_eq!(f.line(), "k is 90% of busy time: take it to X");
    }
}
