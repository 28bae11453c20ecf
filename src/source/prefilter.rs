//! A byte-level pre-test for the NVTX range filter: most annotation rows of a real
//! capture (`aten::view, op_id = 314290`) cannot match a step pattern that is anchored at
//! the start, and the pre-test rejects them on their first byte instead of paying a UTF-8
//! check and a regex search per row (5 rows per kernel in PyTorch-annotated reports).
//!
//! The pre-test only ever rejects; whatever it lets through is matched by the regex itself,
//! so the kept rows are exactly the regex's.

use regex::Regex;
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::Look;

/// The regex's finite set of literal match prefixes, for a pattern whose every match
/// begins at the text's start (`^`, not `(?m)^`).
#[derive(Debug, Clone)]
pub(crate) struct Prefilter {
    /// Whether a literal starts with this byte.
    first: [bool; 256],
    literals: Vec<Vec<u8>>,
}

impl Prefilter {
    /// The pre-test for `re`, or None when its matches do not all start with one of a few
    /// known literals at the text's start (unanchored, `(?m)`, a leading class or
    /// repetition, a literal set too large to extract, or a match of the empty string).
    pub fn new(re: &Regex) -> Option<Prefilter> {
        // `Regex::new` compiles with the parser's defaults, so parsing `as_str()` with
        // them again gives the pattern the regex runs.
        let hir = regex_syntax::parse(re.as_str()).ok()?;
        if !hir.properties().look_set_prefix().contains(Look::Start) {
            return None;
        }
        let seq = Extractor::new().kind(ExtractKind::Prefix).extract(&hir);
        let literals: Vec<Vec<u8>> = seq
            .literals()?
            .iter()
            .map(|l| l.as_bytes().to_vec())
            .collect();
        // An empty literal lets every text through; U+FFFD in a literal could match a
        // replaced byte of an invalid cell, which a byte test would not see (the filter
        // matches such a cell as its lossy string).
        if literals.is_empty()
            || literals
                .iter()
                .any(|l| l.is_empty() || String::from_utf8_lossy(l).contains('\u{FFFD}'))
        {
            return None;
        }
        let mut first = [false; 256];
        for l in &literals {
            first[usize::from(l[0])] = true;
        }
        Some(Prefilter { first, literals })
    }

    /// False only when `text` cannot match: it starts with none of the literals. For
    /// invalid UTF-8 too: a literal without U+FFFD that starts the cell's lossy string
    /// starts its bytes, because the lossy string copies valid bytes verbatim.
    #[inline]
    pub(crate) fn may_match(&self, text: &[u8]) -> bool {
        match text.first() {
            Some(&b) if self.first[usize::from(b)] => {
                self.literals.iter().any(|l| text.starts_with(l))
            }
            _ => false,
        }
    }
}

/// The NVTX range filter as a reader applies it: the regex, with its pre-test when it has
/// one.
#[derive(Debug, Clone)]
pub(crate) struct RangeFilter {
    re: Regex,
    pre: Option<Prefilter>,
}

impl RangeFilter {
    pub fn new(re: Regex) -> RangeFilter {
        let pre = Prefilter::new(&re);
        RangeFilter { re, pre }
    }

    /// Whether a name (an interned string) matches.
    pub fn is_match(&self, name: &str) -> bool {
        self.re.is_match(name)
    }

    /// Whether a raw text cell matches: valid UTF-8 is matched in place, anything else as
    /// its lossy string (what the range is named), so both agree.
    #[inline]
    pub(crate) fn matches_text(&self, t: &[u8]) -> bool {
        if self.pre.as_ref().is_some_and(|p| !p.may_match(t)) {
            return false;
        }
        match std::str::from_utf8(t) {
            Ok(s) => self.re.is_match(s),
            Err(_) => self.re.is_match(&String::from_utf8_lossy(t)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre(p: &str) -> Option<Prefilter> {
        Prefilter::new(&Regex::new(p).unwrap())
    }

    #[test]
    fn anchored_literal_alternatives_get_a_pre_test() {
        let p = pre(r"^(execute_|step\[|ProfilerStep#)|^(scheduler\.run_batch)(, |$)").unwrap();
        let mut lits = p.literals.clone();
        lits.sort();
        assert_eq!(
            lits,
            [
                b"ProfilerStep#".to_vec(),
                b"execute_".to_vec(),
                b"scheduler.run_batch".to_vec(),
                // `(, |$)` after it: both spellings (`$` reads as the empty string).
                b"scheduler.run_batch, ".to_vec(),
                b"step[".to_vec()
            ]
        );
        assert!(p.may_match(b"execute_new_1_cached_0"));
        assert!(p.may_match(b"step[DECODE bs=8]"));
        assert!(!p.may_match(b"aten::view, op_id = 3"));
        // Same first byte, another word: the literal test rejects it.
        assert!(!p.may_match(b"stepper"));
        assert!(!p.may_match(b""));
    }

    #[test]
    fn patterns_that_can_match_elsewhere_get_none() {
        for p in [
            "execute_",      // unanchored
            "(?m)^execute_", // a line start, not the text's
            r"^\w+_step",    // a class first: too many literals
            "^(a|)",         // the empty string
            "^.*",           // anything
            "^x|y",          // one branch unanchored
        ] {
            assert!(pre(p).is_none(), "{p}");
        }
        // Case-insensitive: a finite set of case variants, each tested.
        let p = pre("(?i)^ab").unwrap();
        assert!(p.may_match(b"Ab1") && p.may_match(b"aB") && !p.may_match(b"ba"));
    }

    #[test]
    fn the_filter_keeps_exactly_what_the_regex_keeps() {
        let re = Regex::new(r"^(execute_|step\[|_forward_step)").unwrap();
        let f = RangeFilter::new(re.clone());
        assert!(f.pre.is_some());
        for t in [
            &b"execute_context_1"[..],
            b"aten::mm",
            b"step[",
            b"_forward_step",
            b"_forward",
            b"",
            b"execute_\xff\xfe",
            b"\xffexecute_",
        ] {
            assert_eq!(
                f.matches_text(t),
                re.is_match(&String::from_utf8_lossy(t)),
                "{t:?}"
            );
        }
        // A pattern without a pre-test is the regex alone.
        let g = RangeFilter::new(Regex::new("step").unwrap());
        assert!(g.pre.is_none() && g.matches_text(b"a step") && !g.matches_text(b"x"));
        // U+FFFD in the pattern: an invalid byte's lossy form matches, so no byte pre-test.
        let h = RangeFilter::new(Regex::new("^\u{FFFD}x").unwrap());
        assert!(h.pre.is_none() && h.matches_text(b"\xffx"));
    }
}
