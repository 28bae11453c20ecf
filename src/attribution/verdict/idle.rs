//! The verdict rules about idle time between the steps' kernels (docs/verdict-rules.md):
//! many short gaps (dispatch), one long stall, a sync in every step, and gappy steps; each
//! proved by the idle time it names (measured).

use super::{
    median_step, pct, time_proof, us, Evidence, Fired, ProofBasis, ShareOf, DASH,
    DISPATCH_GAPS_PER_STEP, DISPATCH_MEDIAN_NS, DISPATCH_SHARE,
};
use crate::attribution::GAPPY_FRACTION;

pub(super) fn idle_share(e: &Evidence<'_>) -> f64 {
    e.gaps.idle_share(e.wall_ns)
}

/// The idle time between the steps' kernels and its share of their wall (measured): what
/// every idle rule rests on.
fn idle_proof(e: &Evidence<'_>, what: &str) -> crate::wire::verdict::Proof {
    time_proof(
        e.gaps.total_ns as f64,
        ProofBasis::Measured,
        format!("{what} over {}", super::steps_word(e.steps.len())),
        Some((idle_share(e), ShareOf::Wall)),
    )
}

pub(super) fn dispatch_bound(e: &Evidence<'_>) -> Option<Fired> {
    let g = &e.gaps;
    let per_step = g.count as f64 / e.steps.len().max(1) as f64;
    let share = idle_share(e);
    // The short gaps themselves must hold the wall: many tiny gaps beside one long stall
    // are the stall's.
    let short = g.short_total_ns as f64 / e.wall_ns.max(1) as f64;
    if per_step < DISPATCH_GAPS_PER_STEP
        || g.median_ns >= DISPATCH_MEDIAN_NS
        || short <= DISPATCH_SHARE
    {
        return None;
    }
    let head = format!(
        "the host cannot keep up with dispatch: {} gaps between kernels over {} steps, median {}, {} of wall (measured)",
        g.count,
        e.steps.len(),
        us(g.median_ns),
        pct(share)
    );
    let proof = idle_proof(e, &format!("idle time in {} gaps between kernels", g.count));
    if e.graph_replays > 0 {
        return Some(
            Fired::act(
                head,
                DASH,
                format!(
                    "{} already run ({} replays): the gaps are the kernels launched outside them; torch.compile or fusing those kernels",
                    e.profiler.graphs, e.graph_replays
                ),
            )
            .held(vec![format!(
                "{} (already replayed in the trace)",
                e.profiler.graphs
            )])
            .proved(proof),
        );
    }
    Some(
        Fired::act(
            head,
            DASH,
            format!(
                "capture the step in {} or use torch.compile",
                e.profiler.graphs
            ),
        )
        .proved(proof),
    )
}

pub(super) fn one_long_stall(e: &Evidence<'_>) -> Option<Fired> {
    let g = &e.gaps;
    if !g.is_long_stall(e.wall_ns) {
        return None;
    }
    let call = g
        .longest_step
        .and_then(|i| e.steps.iter().find(|s| s.index == i))
        .and_then(|s| s.longest_host_call.as_ref())
        .map(|c| {
            format!(
                "; the longest host call of its step: {} {}",
                crate::trace::display_call_name(&c.name),
                us(c.dur_ns)
            )
        })
        .unwrap_or_default();
    let frame = e
        .stall_frame
        .as_ref()
        .map(|f| {
            let from = f
                .caller
                .as_ref()
                .map(|c| format!(", called from {c}"))
                .unwrap_or_default();
            format!(
                "; the innermost Python frame over it: {} {}{from}",
                f.name,
                us(f.dur_ns)
            )
        })
        .unwrap_or_default();
    let of_wall = g.longest_ns() as f64 / e.wall_ns.max(1) as f64;
    let step = g
        .longest_step
        .map(|i| format!(" (step {i})"))
        .unwrap_or_default();
    Some(
        Fired::act(
            format!(
                "one long stall: a {} gap is {} of the idle time and {} of wall (measured){call}{frame}",
                us(g.longest_ns()),
                pct(g.longest_ns() as f64 / g.total_ns as f64),
                pct(of_wall)
            ),
            DASH,
            "find what the host waits on there".to_owned(),
        )
        .proved(time_proof(
            g.longest_ns() as f64,
            ProofBasis::Measured,
            format!("the longest gap between two kernels inside a step{step}"),
            Some((of_wall, ShareOf::Wall)),
        )),
    )
}

pub(super) fn sync_per_step(e: &Evidence<'_>) -> Option<Fired> {
    let n = e.steps.len();
    if idle_share(e) <= GAPPY_FRACTION || n < 2 || e.gaps.steps_one_gap < n {
        return None;
    }
    Some(
        Fired::act(
            format!(
                "a host sync each step: in all {n} steps one gap holds more than half of the step's idle time ({} of wall idle, measured)",
                pct(idle_share(e))
            ),
            DASH,
            "look for a .item(), .cpu() or synchronize between the step's launches".to_owned(),
        )
        .proved(idle_proof(e, "idle time between kernels (one gap holds most of each step's)")),
    )
}

pub(super) fn gappy(e: &Evidence<'_>) -> Option<Fired> {
    if idle_share(e) <= GAPPY_FRACTION {
        return None;
    }
    Some(median_step(e)?.proved(idle_proof(e, "idle time between kernels")))
}
