//! The run verdict as one rule table (docs/verdict-rules.md): the evidence is read from
//! the capture once (the gaps between the steps' kernels, the run's top kernel over every
//! step, what already runs), then the rules are tried in order and the first that fires
//! gives the run line. Every rule checks its cause against the capture before it is
//! printed: a kernel at the roof is not sent to Nsight Compute, the idle time is named by
//! its pattern, and nothing the trace shows running is recommended.

use std::collections::HashMap;

use crate::categories::class_of;
use crate::exit::Result;
use crate::timing::labels::NameLabels;
use crate::trace::Trace;
use crate::wire::attribution::{GroupAttribution, GroupSpread, KernelClass, RunVerdict, Shape};
use crate::wire::steps::Step;
use crate::wire::verdict::{ProofBasis, ShareOf};

use super::items::{self, Item};
use super::{KernelProfiler, DOMINANT_FRACTION, GAPPY_FRACTION};

mod classes;
mod fired;
mod frames;
mod gaps;
mod gemms;
mod idle;
mod median;
mod ranked;

pub use classes::{at_roof_action, dominant_at_roof};
pub use fired::{fraction_proof, time_proof, Fired, DASH};
pub use frames::{FrameLoader, StallFrame};
pub use gaps::Gaps;
pub use gemms::GEMM_EXCESS_SHARE;

use classes::class_below_roof;
use gemms::{by_excess_suffix, gemms_below_roof, mapped_gemm};
use idle::{dispatch_bound, gappy, one_long_stall, sync_per_step};
use median::{median_step, steps_word};

/// Share of β (or of the link) at and above which a kernel or class is at the roof: only
/// fewer bytes help, and Nsight Compute has nothing to find.
pub(crate) const AT_ROOF_OF_BETA: f64 = 0.8;
/// Many short gaps: at least this many gaps per step on average …
pub(crate) const DISPATCH_GAPS_PER_STEP: f64 = 100.0;
/// … with a median below this …
pub(crate) const DISPATCH_MEDIAN_NS: i64 = 200_000;
/// … that together hold more than this share of the wall.
pub(crate) const DISPATCH_SHARE: f64 = 0.5;
/// One long stall: one gap holds at least this share of all the idle time.
pub(crate) const STALL_SHARE: f64 = 0.5;

/// What the rules read of a capture.
pub(crate) struct Evidence<'a> {
    /// Steps with GPU work.
    pub steps: Vec<&'a Step>,
    pub wall_ns: i64,
    pub busy_ns: i64,
    pub gaps: Gaps,
    /// The run's top kernel over every step: its label, exclusive ns, class.
    pub top: Option<(String, i64, Option<KernelClass>)>,
    /// That kernel's name as the trace has it (to find it in the layer map).
    pub top_raw: Option<String>,
    /// What that top item is (a kernel, a copy, an opaque graph replay, a collective):
    /// only a kernel goes to a kernel profiler.
    pub top_item: Item,
    /// CUDA-graph launches over the steps: node-mode launches plus opaque replays
    /// (measured).
    pub graph_replays: u64,
    /// The run's shape (the most common) and its median step's action.
    pub shape: Option<Shape>,
    /// The median step (by wall) of the run's shape, whose action `median-step` gives.
    pub median: Option<&'a Step>,
    /// The largest group of like steps with a class attribution.
    pub group: Option<&'a GroupAttribution>,
    /// The largest group's classes across its steps.
    pub spread: Option<&'a GroupSpread>,
    /// The trace's vendor's kernel profiler, where a rule sends one kernel.
    pub profiler: KernelProfiler,
    /// The innermost Python frame over the longest gap, where that gap is a long stall
    /// and the capture has frames (read from a second load).
    pub stall_frame: Option<StallFrame>,
}

/// One row of the verdict table.
pub(crate) struct Rule {
    pub id: &'static str,
    /// When it fires, in words (docs/verdict-rules.md; `stepgate explain RULE`).
    pub when: &'static str,
    pub fire: fn(&Evidence<'_>) -> Option<Fired>,
    /// What the claim is about, where that is not a dominant kernel below its roof (a
    /// class, GEMMs, a kernel at its roof): the label in a run whose steps are "one kernel
    /// dominant", so the label never names a kernel the claim is not about.
    pub about: Option<&'static str>,
    /// The claim is about idle time between kernels: a kernel-class action that can win
    /// less per step than its group's median step idles contradicts it (ranked out).
    pub idle: bool,
}

impl Rule {
    /// The verdict's label: the run's most common step shape, or what the claim is about
    /// where that shape is "one kernel dominant".
    pub fn label(&self, run_shape: Shape) -> &'static str {
        match (run_shape, self.about) {
            (Shape::OneKernelDominant, Some(about)) => about,
            (s, _) => s.as_str(),
        }
    }
}

/// The verdict table, in the order the rules are tried.
#[rustfmt::skip]
/// When the verdict rule `id` fires, in words; None for no such rule.
pub(crate) fn rule_when(id: &str) -> Option<&'static str> {
    RULES.iter().find(|r| r.id == id).map(|r| r.when)
}

pub(crate) const RULES: &[Rule] = &[
    Rule { id: "dispatch-bound", when: "≥ 100 gaps per step, median < 200 µs, the gaps < 200 µs > 50% of wall", fire: dispatch_bound, about: None, idle: true },
    Rule { id: "one-long-stall", when: "idle > 20% of wall and one gap holds ≥ 50% of it", fire: one_long_stall, about: None, idle: true },
    Rule { id: "host-sync-per-step", when: "idle > 20% of wall and in every step one gap holds > 50% of its idle", fire: sync_per_step, about: None, idle: true },
    Rule { id: "class-varies", when: "≥ 5 like steps and a class whose p90 ≥ 2 × its p10 with p90 − p10 ≥ 10% of the median wall", fire: class_varies, about: Some("one class varies"), idle: false },
    Rule { id: "gappy", when: "idle > 20% of wall, none of the patterns above", fire: gappy, about: None, idle: true },
    Rule { id: "one-kernel-at-roof", when: "one kernel > 50% of the run's busy time and its class ≥ 80% of β", fire: kernel_at_roof, about: Some("one kernel at the roof"), idle: false },
    Rule { id: "one-kernel-dominant", when: "one kernel > 50% of the run's busy time, its class below 80% of β", fire: kernel_dominant, about: None, idle: false },
    Rule { id: "largest-excess", when: "priced, under-utilized or dominated steps: the class and GEMMs with the largest time − floor", fire: largest_excess, about: Some("one class's excess"), idle: false },
    Rule { id: "gemms-below-roof", when: "decode layers mapped and their GEMMs below 80% of β hold ≥ 5% of the median step's wall in excess", fire: gemms_below_roof, about: Some("GEMMs below their roof"), idle: false },
    Rule { id: "class-below-roof", when: "the run at the memory roof, but in the largest group's median step a class below 80% of its roof holds ≥ 5% of the wall in excess", fire: class_below_roof, about: Some("one class below its roof"), idle: false },
    Rule { id: "median-step", when: "otherwise: the action of the run's median step of its shape", fire: median_step, about: None, idle: false },
];

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn us(ns: i64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

fn class_varies(e: &Evidence<'_>) -> Option<Fired> {
    let g = e.spread?;
    let (sentence, action) = super::spread::varies_parts(g)?;
    let c = super::spread::varying(g)?;
    let spread = c.p90_ns - c.p10_ns;
    let mut proof = time_proof(
        spread,
        ProofBasis::Measured,
        format!(
            "the p90 − p10 of {} per step across {} {} steps",
            c.class.as_str(),
            g.steps,
            g.group
        ),
        (g.median_wall_ns > 0.0).then(|| (spread / g.median_wall_ns, ShareOf::Wall)),
    );
    proof.interval = Some([c.p10_ns, c.p90_ns]);
    Some(Fired::act(sentence, DASH, action).proved(proof))
}

/// The class's fraction of its roof in the run's largest priced group (derived).
fn class_roof(e: &Evidence<'_>, class: Option<KernelClass>) -> Option<f64> {
    let c = class?;
    e.group?
        .classes
        .iter()
        .find(|x| x.class == c)?
        .roof_fraction
}

/// How close a dominant kernel is to its roof, and whose fraction that is: the kernel's
/// own where the layer map priced it, else its class's.
struct Roof {
    fraction: f64,
    own: bool,
}

impl Roof {
    /// The roof fraction as the proof of a claim about the roof (derived).
    fn proof(&self, e: &Evidence<'_>) -> crate::wire::verdict::Proof {
        let what = match (self.own, e.group) {
            (true, _) => "the kernel's own fraction of β (its layer GEMM)".to_owned(),
            (false, Some(g)) => format!(
                "its class's fraction of its roof in the median {} step",
                g.group
            ),
            (false, None) => "its class's fraction of its roof".to_owned(),
        };
        fraction_proof(self.fraction, what)
    }

    fn words(&self) -> String {
        if self.own {
            format!(
                "it runs at {} of β (derived, its layer GEMM)",
                pct(self.fraction)
            )
        } else {
            format!(
                "its class runs at {} of its roof (derived)",
                pct(self.fraction)
            )
        }
    }
}

/// The run's top kernel's exclusive time and its share of the busy time (measured).
fn top_proof(e: &Evidence<'_>) -> Option<crate::wire::verdict::Proof> {
    let (name, ns, _) = e.top.as_ref()?;
    Some(time_proof(
        *ns as f64,
        ProofBasis::Measured,
        format!(
            "the exclusive time of {name} over {}",
            steps_word(e.steps.len())
        ),
        Some((*ns as f64 / e.busy_ns.max(1) as f64, ShareOf::Busy)),
    ))
}

fn dominant<'e>(e: &'e Evidence<'_>) -> Option<(&'e str, f64, Option<Roof>)> {
    let (name, ns, class) = e.top.as_ref()?;
    let share = *ns as f64 / e.busy_ns.max(1) as f64;
    let own = e
        .top_raw
        .as_deref()
        .and_then(|raw| mapped_gemm(e, raw))
        .and_then(|g| g.roof_fraction)
        .map(|fraction| Roof {
            fraction,
            own: true,
        });
    let roof = own.or_else(|| {
        class_roof(e, *class).map(|fraction| Roof {
            fraction,
            own: false,
        })
    });
    (share > DOMINANT_FRACTION).then_some((name.as_str(), share, roof))
}

fn kernel_at_roof(e: &Evidence<'_>) -> Option<Fired> {
    if e.top_item != Item::Kernel {
        // A copy's class roof is HBM's, a host copy's the link's; a graph replay has no
        // class; a collective waits on other ranks: each has its own row in the item table.
        return None;
    }
    let (name, share, roof) = dominant(e)?;
    let roof = roof.filter(|r| r.fraction >= AT_ROOF_OF_BETA)?;
    let proof = roof.proof(e);
    Some(
        Fired::act(
            format!(
                "{name} is {} of busy time over {} steps (measured) and {}: at the roof",
                pct(share),
                e.steps.len(),
                roof.words(),
            ),
            DASH,
            format!(
                "only fewer bytes help (quantize, or batch more per step){}",
                by_excess_suffix(e)
            ),
        )
        .held(vec![format!(
            "{} for {name} (at {} of its roof)",
            e.profiler.name,
            pct(roof.fraction)
        )])
        .proved(proof),
    )
}

fn kernel_dominant(e: &Evidence<'_>) -> Option<Fired> {
    let (name, share, roof) = dominant(e)?;
    if e.top_item != Item::Kernel {
        let rule = items::rule(e.top_item);
        return Some(
            Fired::whole(&(rule.action)(name, share, Some(e.steps.len()), e.profiler))
                .held((rule.held_back)(name, e.profiler).into_iter().collect())
                .proved(top_proof(e)?),
        );
    }
    let at = roof.map(|r| format!(", {}", r.words())).unwrap_or_default();
    Some(
        Fired::act(
            format!(
                "{name} is {} of busy time over {} steps (measured){at}",
                pct(share),
                e.steps.len(),
            ),
            ": ",
            format!("take it to {}{}", e.profiler.name, by_excess_suffix(e)),
        )
        .proved(top_proof(e)?),
    )
}

fn largest_excess(e: &Evidence<'_>) -> Option<Fired> {
    if !matches!(
        e.shape,
        Some(Shape::UnderUtilized | Shape::OneKernelDominant)
    ) {
        return None;
    }
    let g = e.group?;
    let c = g
        .classes
        .iter()
        .filter(|c| c.excess_ns.is_some_and(|x| x > 0))
        .max_by_key(|c| c.excess_ns)?;
    let total: i64 = g
        .classes
        .iter()
        .filter_map(|c| c.excess_ns)
        .filter(|&x| x > 0)
        .sum();
    let mut line = format!(
        "the largest excess (time − floor, derived) of the median {} step is {}: {} of {} excess",
        g.group,
        c.class.as_str(),
        us(c.excess_ns.unwrap_or(0)),
        us(total)
    );
    if let Some(r) = c.roof_fraction {
        line.push_str(&format!(", at {} of its roof", pct(r)));
    }
    let excess = c.excess_ns.unwrap_or(0);
    let proof = time_proof(
        excess as f64,
        ProofBasis::Derived,
        format!(
            "the excess (time − floor) of {} in the median {} step",
            c.class.as_str(),
            g.group
        ),
        (total > 0).then(|| (excess as f64 / total as f64, ShareOf::Excess)),
    );
    // The GEMMs of the layer map by their own excess (time − floor), not by time.
    line.push_str(&by_excess_suffix(e));
    if c.roof_fraction.is_some_and(|r| r >= AT_ROOF_OF_BETA) {
        let held = vec![format!(
            "{} for {} (at the roof)",
            e.profiler.name,
            c.class.as_str()
        )];
        return Some(
            Fired::act(line, DASH, "at the roof: only fewer bytes help".to_owned())
                .held(held)
                .proved(proof),
        );
    }
    Some(Fired::act(line, DASH, "start there".to_owned()).proved(proof))
}

/// The run's top kernel by exclusive time summed over every step, named as the step
/// tables name it.
fn run_top(steps: &[&Step]) -> Option<(String, i64, Option<KernelClass>, Item, String)> {
    let mut by: HashMap<&str, (i64, &str, &str)> = HashMap::new();
    for s in steps {
        for k in &s.all_kernels {
            let e = by.entry(&k.name).or_insert((0, &k.short_name, &k.category));
            e.0 += k.exclusive_ns;
        }
    }
    let labels = NameLabels::new(by.iter().map(|(n, v)| (*n, v.1)));
    let (name, (ns, short, cat)) = by
        .iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| b.0.cmp(a.0)))?;
    Some((
        labels.get(name, short).to_owned(),
        *ns,
        class_of(cat),
        items::item_of(name, cat),
        (*name).to_owned(),
    ))
}

/// What the verdict reads: the values the stages before it returned (so it cannot be
/// decided before one of them), the attributed steps, shapes, groups, spread and vendor.
pub struct Attributed<'a> {
    pub steps: &'a [Step],
    pub shapes: &'a [crate::wire::attribution::ShapeCount],
    pub groups: &'a [GroupAttribution],
    pub spread: &'a [GroupSpread],
    pub vendor: Option<&'a str>,
}

/// Read the evidence of the attributed steps and try the rules in order. `frames` reads
/// the capture's Python frames when the idle time is one long stall (a second load, made
/// only then).
pub fn decide(
    trace: &Trace,
    r: &Attributed<'_>,
    frames: FrameLoader<'_>,
    workers: usize,
) -> Result<Option<RunVerdict>> {
    let steps: Vec<&Step> = r.steps.iter().filter(|s| s.wall_ns.is_some()).collect();
    if steps.is_empty() {
        return Ok(None);
    }
    let shape = r.shapes.first().map(|s| s.shape);
    let mut of_shape: Vec<&&Step> = steps
        .iter()
        .filter(|s| s.attribution.as_ref().map(|a| a.shape) == shape)
        .collect();
    of_shape.sort_by_key(|s| s.wall_ns);
    let median = of_shape.get(of_shape.len() / 2).map(|s| **s);
    let gaps = gaps::gaps(trace, &steps, workers)?;
    let wall_ns = steps.iter().filter_map(|s| s.wall_ns).sum();
    let stall_frame = if gaps.is_long_stall(wall_ns) {
        frames::stall_frame(&gaps, &steps, frames)?
    } else {
        None
    };
    let top = run_top(&steps);
    let e = Evidence {
        wall_ns,
        stall_frame,
        busy_ns: steps.iter().map(|s| s.busy_ns).sum(),
        graph_replays: gaps.graph_launches + steps.iter().map(|s| s.graph_replays).sum::<u64>(),
        gaps,
        top_item: top.as_ref().map_or(Item::Kernel, |t| t.3),
        top_raw: top.as_ref().map(|t| t.4.clone()),
        top: top.map(|(name, ns, class, _, _)| (name, ns, class)),
        shape,
        median,
        group: r.groups.iter().max_by_key(|g| g.steps),
        spread: r.spread.iter().max_by_key(|g| g.steps),
        profiler: super::kernel_profiler(r.vendor),
        steps,
    };
    Ok(RULES.iter().find_map(|rule| {
        (rule.fire)(&e).map(|f| {
            let ranking = ranked::rank(r.groups, f.own.as_ref(), rule.idle);
            let mut held_back = f.held_back.clone();
            held_back.extend(ranking.held_back);
            RunVerdict {
                rule: rule.id.to_owned(),
                label: shape.map(|s| rule.label(s).to_owned()),
                line: f.line(),
                sentence: f.sentence,
                action: f.action,
                held_back,
                proof: f.proof,
                ranked: ranking.ranked,
            }
        })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_and_the_fallback_is_last() {
        let ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        let mut d = ids.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), ids.len());
        assert_eq!(ids.last(), Some(&"median-step"));
    }

    #[test]
    fn a_claim_about_a_class_is_never_labelled_one_kernel_dominant() {
        let k = Shape::OneKernelDominant;
        for r in RULES {
            let claims_a_dominant_kernel = matches!(
                r.id,
                "one-kernel-dominant"
                    | "dispatch-bound"
                    | "one-long-stall"
                    | "host-sync-per-step"
                    | "gappy"
                    | "median-step"
            );
            assert_eq!(
                r.label(k) == k.as_str(),
                claims_a_dominant_kernel,
                "{}",
                r.id
            );
            // Another run shape says what the steps are, beside any claim.
            assert_eq!(r.label(Shape::HostStall), "host stall", "{}", r.id);
        }
    }
}
