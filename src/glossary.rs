//! The one glossary of the words stepgate's outputs use (β, MBU, "of roof", shape 2/4,
//! floor, busy, gap, exclusive, …): `stepgate explain TERM` prints an entry, and the text,
//! markdown and HTML renderers quote the same wording, so a term reads the same everywhere.

/// One term: what it is called in the outputs, other spellings that find it, and what it
/// means (one or two sentences, then where the method describes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The spelling the outputs use.
    pub term: &'static str,
    /// Other spellings `explain` accepts (ASCII ones for Greek letters, plural forms).
    pub aliases: &'static [&'static str],
    /// What the term means, in one or two sentences.
    pub meaning: &'static str,
    /// Where the method describes it (a docs path and section), or "".
    pub see: &'static str,
}

const fn e(
    term: &'static str,
    aliases: &'static [&'static str],
    meaning: &'static str,
    see: &'static str,
) -> Entry {
    Entry {
        term,
        aliases,
        meaning,
        see,
    }
}

/// Every term, in the order `stepgate explain` lists them: the step's time, its floor,
/// where the rest went, the basis labels, then the capacity plan's words.
pub const GLOSSARY: &[Entry] = &[
    e(
        "step",
        &["steps", "engine step"],
        "One iteration of the engine's scheduler loop (one forward pass over the batch), found from the engine's markers or a heuristic (--steps) and projected onto the GPU.",
        "docs/steps.md",
    ),
    e(
        "wall",
        &["wall time", "wall_ns"],
        "The step's GPU-projected span: from the first GPU op it launched starting to the last one ending (measured).",
        "docs/method.md §4",
    ),
    e(
        "period",
        &["period_ns"],
        "From the start of one step to the start of the next on the same series: wall plus the idle time before the next step (measured).",
        "",
    ),
    e(
        "busy",
        &["busy time", "busy_ns"],
        "The union of the step's GPU op intervals: time at least one of its kernels, copies or memsets ran (measured).",
        "docs/method.md §4",
    ),
    e(
        "gap",
        &["gap_ns", "idle"],
        "wall − busy: time inside the step when the GPU ran none of its ops, waiting on the host (measured).",
        "docs/method.md §4",
    ),
    e(
        "gap fraction",
        &["gap_fraction"],
        "gap / wall: the share of the step the GPU sat idle (measured).",
        "",
    ),
    e(
        "exclusive",
        &["exclusive µs", "exclusive time", "exclusive_ns", "exclusive us"],
        "Time one kernel name alone kept the GPU busy: the part of its intervals no other op overlapped (measured).",
        "docs/dataset.md",
    ),
    e(
        "launches",
        &["launch"],
        "Kernel launch calls the host made for the step (runtime or driver API calls, measured).",
        "docs/method.md §8",
    ),
    e(
        "launch cost",
        &["per-launch cost", "driver floor"],
        "The host time one kernel launch costs in the driver: the cited 2.374 µs (H100, CUDA 12.6) unless --launch-cost gives one (µs or a launch-probe file) measured here.",
        "docs/method.md §8.1",
    ),
    e(
        "floor",
        &["roofline floor", "step floor"],
        "The least time a step could take: max(bytes Q / β, FLOPs F / π) for the compulsory bytes (weights once, the KV cache read) and FLOPs of its batch (derived from the model and GPU).",
        "docs/method.md §3",
    ),
    e(
        "β",
        &["beta", "hbm bandwidth", "memory roof"],
        "The GPU's HBM bandwidth in bytes/s, the memory roof: the cited datasheet figure unless --hbm-tb-s gives a measured one.",
        "docs/method.md §9",
    ),
    e(
        "π",
        &["pi", "peak", "compute roof"],
        "The GPU's peak dense tensor FLOP/s (the compute roof), cited, unless --peak-tflops gives one.",
        "docs/method.md §9",
    ),
    e(
        "roof",
        &["roofline", "the roof"],
        "The limit a kernel class cannot pass: β for bytes (the memory roof), π for FLOPs (the compute roof).",
        "docs/method.md §3",
    ),
    e(
        "of roof",
        &["of β", "of beta", "% of roof"],
        "A kernel class's achieved bandwidth (its floor bytes / its time) as a share of β: near 100% only fewer bytes help; far below, the kernels leave the machine idle (derived).",
        "docs/method.md §4.1",
    ),
    e(
        "achieved",
        &["achieved bandwidth", "achieved bytes/s"],
        "Compulsory bytes moved / time taken (Q / busy for a step, floor bytes / time for a class): the bandwidth the work reached (derived).",
        "docs/method.md §4",
    ),
    e(
        "MBU",
        &["mbu", "model bandwidth utilization"],
        "Model bandwidth utilization: floor / wall, the share of the step's wall the compulsory bytes need at β (derived; Databricks' term, 2023).",
        "docs/method.md §4",
    ),
    e(
        "floor/busy",
        &["floor / busy"],
        "floor / busy: how close the kernels alone come to the floor, the idle gap left out (derived).",
        "docs/method.md §4",
    ),
    e(
        "MFU",
        &["mfu", "model flops utilization", "prefill mfu"],
        "Model FLOPs utilization: the share of π a phase reaches; capacity assumes one for the prefill (--prefill-mfu), its softest input.",
        "docs/method.md §7",
    ),
    e(
        "excess",
        &["excess µs", "excess us"],
        "Time above the floor: a class's time − its floor, or busy − floor for a step; what faster kernels could win (derived).",
        "docs/method.md §4.1",
    ),
    e(
        "waterfall",
        &[],
        "The step's wall split into floors + excess + time of no priced class + gap, exact in ns: where the time above the floor went.",
        "docs/method.md §4.1",
    ),
    e(
        "shape",
        &["shapes", "step shape"],
        "What a step's timeline looks like, named in this order: launch-bound (1), host stall, one kernel or copy dominant (3), at the memory roof (2), under-utilized (4); each with its next action.",
        "docs/method.md §4",
    ),
    e(
        "shape 2/4",
        &["shape 2", "shape 4", "at the roof", "at the memory roof", "under-utilized"],
        "Shapes 2 and 4 look the same in a timeline (kernels back to back); the floor tells them apart: busy within 1.3× the floor is at the roof (2: only fewer bytes help), beyond it under-utilized (4: the kernels leave the machine idle).",
        "docs/method.md §4",
    ),
    e(
        "launch-bound",
        &["launch bound", "shape 1"],
        "Gap above 20% of wall with host launch time at least half the gap: the host cannot launch fast enough; CUDA graphs or fused kernels help, not faster kernels.",
        "docs/method.md §4",
    ),
    e(
        "host stall",
        &["stall"],
        "Gap above 20% of wall that launches do not explain: the host waits on something (a synchronize, a blocking copy, scheduler work), named by its longest call.",
        "docs/method.md §4",
    ),
    e(
        "below the floor",
        &["below floor", "below its floor"],
        "Measured faster than the floor allows: the byte model is wrong for this step (prefix caching, a KV dtype or TP not passed), not the machine.",
        "docs/method.md §3.3",
    ),
    e(
        "measured",
        &[],
        "A number read from the capture itself (times, counts).",
        "",
    ),
    e(
        "derived",
        &[],
        "A number computed from measured, cited or input numbers with a stated model (floors, MBU, the capacity plan).",
        "",
    ),
    e(
        "cited",
        &[],
        "A number from a public source named beside it (a GPU datasheet, a paper), not measured here.",
        "",
    ),
    e(
        "input",
        &[],
        "A number the command line gave.",
        "",
    ),
    e(
        "TP",
        &["tp", "tensor parallel", "tensor-parallel"],
        "Tensor-parallel degree: GPUs one model replica is split across; each holds 1/TP of the weights and KV heads.",
        "",
    ),
    e(
        "KV cell",
        &["kv cell k", "k", "kv cell bytes"],
        "Bytes of KV cache one token of context takes per GPU: 2 (K and V) × layers × KV heads/TP × head dim × bytes per element.",
        "docs/method.md §2.1",
    ),
    e(
        "B_max",
        &["bmax", "b max"],
        "The most requests the KV pool holds at once: ⌊KV pool tokens / mean resident context⌋ (capacity step 1).",
        "docs/method.md §7",
    ),
    e(
        "mean context",
        &["mean resident context", "s̄"],
        "A request's mean resident context over its life: input + output/2 tokens (capacity step 1).",
        "docs/method.md §7",
    ),
    e(
        "service time",
        &["s", "service time s"],
        "S: GPU time per request, its prefill plus its share of decode steps (output tokens / decode tok/s) (capacity step 4).",
        "docs/method.md §7",
    ),
    e(
        "ρ",
        &["rho", "utilization", "utilisation"],
        "Utilization λ·S: the share of the GPU's time requests keep it busy; the queue is stable below 1.",
        "docs/method.md §7",
    ),
    e(
        "λ",
        &["lambda", "arrival rate", "request rate"],
        "Requests per second arriving at one replica.",
        "docs/method.md §7",
    ),
    e(
        "M/M/1 screen",
        &["m/m/1", "mm1", "fixed-batch screen"],
        "Capacity step 5: p99 TTFT ≈ S·ln(100ρ)/(1−ρ) + prefill for a single queue, solved for the highest ρ that meets the target; a screening proxy.",
        "docs/method.md §7",
    ),
    e(
        "fluid root",
        &["fluid", "fluid model", "fluid itl closure"],
        "Capacity step 6: with a binding ITL target the live batch is B = ITL·output·λ; the higher-load λ where the p99 TTFT meets its target is the operating point.",
        "docs/method.md §7",
    ),
    e(
        "TTFT",
        &["ttft", "time to first token"],
        "Time to first token: queueing wait plus prefill; capacity targets its p99.",
        "docs/method.md §7",
    ),
    e(
        "ITL",
        &["itl", "inter-token latency", "tpot"],
        "Inter-token latency: time between a request's output tokens, one decode step at its batch.",
        "docs/method.md §7",
    ),
    e(
        "95% interval",
        &["interval", "confidence interval"],
        "The gate's bootstrap interval of a relative change: a regression is declared only when the whole interval is past the threshold.",
        "docs/gate.md",
    ),
    e(
        "inconclusive",
        &[],
        "The gate could not decide: too few steps per side (fewer than 10), or a metric too noisy for its threshold (exit 3).",
        "docs/gate.md",
    ),
    e(
        "incomparable",
        &[],
        "The two sides of a gate ran on a different GPU, model or TP, or share no step kind (exit 6).",
        "docs/gate.md",
    ),
];

/// Lower case with the spaces, dashes and underscores of a spelling folded, so `Of-Roof`,
/// `of_roof` and `of roof` find the same entry.
fn fold(s: &str) -> String {
    s.trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == '-' || c == '_' { ' ' } else { c })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The entry for `term` (its spelling in the outputs or an alias, any case).
pub fn entry(term: &str) -> Option<&'static Entry> {
    let want = fold(term);
    GLOSSARY
        .iter()
        .find(|e| fold(e.term) == want || e.aliases.iter().any(|a| fold(a) == want))
}

/// The entry as one line, `TERM: MEANING (see: …)`, as every renderer quotes it.
pub fn line(e: &Entry) -> String {
    if e.see.is_empty() {
        format!("{}: {}", e.term, e.meaning)
    } else {
        format!("{}: {} (see {})", e.term, e.meaning, e.see)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_finds_one_entry_only() {
        let mut seen = std::collections::HashMap::new();
        for e in GLOSSARY {
            for s in std::iter::once(e.term).chain(e.aliases.iter().copied()) {
                if let Some(prev) = seen.insert(fold(s), e.term) {
                    assert_eq!(prev, e.term, "{s:?} names two terms");
                }
            }
        }
        assert_eq!(entry("Of-Roof").map(|e| e.term), Some("of roof"));
        assert_eq!(entry("beta").map(|e| e.term), Some("β"));
        assert_eq!(entry("shape 4").map(|e| e.term), Some("shape 2/4"));
        assert!(entry("no such word").is_none());
    }
}
