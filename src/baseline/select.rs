//! Picking kernels by a few characters of their name: a selector is a substring of the
//! full demangled name (or of the short name), or `re:` and a regex searched in the full
//! name. Nobody has to paste a 190-character template to name `act_and_mul_kernel`.
//!
//! One matcher for every place that names kernels: the gate policy's `[[kernel]]` rules
//! (which say how many kernels each rule matched, and refuse a rule that matches none) and
//! a metric such as `trend --metric kernel:…`, which needs exactly one kernel
//! ([`Selector::one`] lists the candidates when several match).

use crate::exit::{Error, Result};

/// How many matching names an error lists before "and N more".
const LISTED: usize = 8;

/// A parsed kernel selector.
#[derive(Debug, Clone)]
pub enum Selector {
    /// A substring of the full or the short name (case-sensitive, as names are).
    Substring(String),
    /// A regex searched in the full name (`re:` prefix).
    Regex(regex::Regex),
}

impl Selector {
    /// `re:PATTERN` is a regex; anything else is a substring. Empty text is refused (it
    /// would match every kernel).
    pub fn parse(text: &str) -> Result<Selector> {
        match text.strip_prefix("re:") {
            Some(re) => regex::Regex::new(re).map(Selector::Regex).map_err(|e| {
                Error::input(format!(
                    "kernel selector {text:?}: the regex does not compile: {}",
                    crate::text::one_line(&e.to_string())
                ))
            }),
            None if text.is_empty() => Err(Error::input(
                "kernel selector is empty: give part of the kernel's name, or re:REGEX",
            )),
            None => Ok(Selector::Substring(text.to_owned())),
        }
    }

    /// The selector as it was written.
    pub fn text(&self) -> String {
        match self {
            Selector::Substring(s) => s.clone(),
            Selector::Regex(r) => format!("re:{}", r.as_str()),
        }
    }

    /// Whether a kernel with this full and short name is selected.
    pub fn matches(&self, full: &str, short: &str) -> bool {
        match self {
            Selector::Substring(s) => full.contains(s.as_str()) || short.contains(s.as_str()),
            Selector::Regex(r) => r.is_match(full),
        }
    }

    /// The full names selected among `names` (full, short), each once, in the order
    /// given.
    pub fn all<'a>(&self, names: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<&'a str> {
        let mut out: Vec<&str> = names
            .into_iter()
            .filter(|(f, s)| self.matches(f, s))
            .map(|(f, _)| f)
            .collect();
        let mut seen = std::collections::HashSet::with_capacity(out.len());
        out.retain(|f| seen.insert(*f));
        out
    }

    /// The one full name selected among `names`: none is an error that says how many
    /// kernels were searched, several an error that lists them.
    pub fn one<'a>(&self, names: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<&'a str> {
        let names: Vec<(&str, &str)> = names.into_iter().collect();
        let hits = self.all(names.iter().copied());
        match hits.as_slice() {
            [one] => Ok(one),
            [] => Err(self.none_error(names.len())),
            many => Err(Error::input(format!(
                "kernel {:?} matches {} kernels: {}; give more of the name, or re:REGEX",
                self.text(),
                many.len(),
                listed(many)
            ))),
        }
    }

    /// The error for a selector that matched none of `searched` kernels.
    pub(crate) fn none_error(&self, searched: usize) -> Error {
        Error::input(format!(
            "kernel {:?} matches none of the {searched} kernel name(s) searched (a substring \
             of the full or short name, or re:REGEX on the full name); `stepgate analyze` \
             lists the names",
            self.text()
        ))
    }
}

/// Up to [`LISTED`] names, quoted, then how many more.
fn listed(names: &[&str]) -> String {
    let mut s: Vec<String> = names
        .iter()
        .take(LISTED)
        .map(|n| format!("{:?}", crate::text::truncate(n, 120)))
        .collect();
    if names.len() > LISTED {
        s.push(format!("and {} more", names.len() - LISTED));
    }
    s.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACT: &str = "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, const c10::BFloat16*, int)";
    const GEMM_A: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    const GEMM_B: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";

    fn names() -> Vec<(&'static str, &'static str)> {
        vec![
            (ACT, "act_and_mul_kernel"),
            (GEMM_A, GEMM_A),
            (GEMM_B, GEMM_B),
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            ),
        ]
    }

    #[test]
    fn a_few_characters_pick_one_template() {
        let s = Selector::parse("act_and_mul").unwrap();
        assert_eq!(s.one(names()).unwrap(), ACT);
        // The short name selects too, and so does a regex on the full name.
        assert_eq!(
            Selector::parse("re:silu_kernel<c10::BFloat16>")
                .unwrap()
                .one(names())
                .unwrap(),
            ACT
        );
        assert_eq!(
            Selector::parse("tilesize64x64")
                .unwrap()
                .one(names())
                .unwrap(),
            GEMM_B
        );
    }

    #[test]
    fn several_are_listed_and_none_is_counted() {
        let e = Selector::parse("xmma_gemm")
            .unwrap()
            .one(names())
            .unwrap_err();
        assert!(e.message.contains("matches 2 kernels"), "{}", e.message);
        assert!(e.message.contains("tilesize128x128") && e.message.contains("tilesize64x64"));
        let s = Selector::parse("re:^nccl").unwrap();
        assert_eq!(
            s.all(names()),
            vec!["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"]
        );
        let e = Selector::parse("fused_moe")
            .unwrap()
            .one(names())
            .unwrap_err();
        assert!(
            e.message.contains("matches none of the 4 kernel"),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
    }

    #[test]
    fn bad_selectors_are_one_line_errors() {
        let e = Selector::parse("re:(").unwrap_err();
        assert!(
            e.message.contains("does not compile") && !e.message.contains('\n'),
            "{}",
            e.message
        );
        assert!(Selector::parse("").is_err());
        assert_eq!(Selector::parse("re:^a$").unwrap().text(), "re:^a$");
    }

    #[test]
    fn a_long_list_is_cut() {
        let many: Vec<String> = (0..20).map(|i| format!("kernel_{i}")).collect();
        let e = Selector::parse("kernel_")
            .unwrap()
            .one(many.iter().map(|s| (s.as_str(), s.as_str())))
            .unwrap_err();
        assert!(e.message.contains("and 12 more"), "{}", e.message);
    }
}
