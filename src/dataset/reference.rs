//! How the decisions on record move a history's reference (docs/gate.md, "Decisions on
//! record"): a rejected run is left out; the newest accepted run becomes the reference of
//! the metrics its decision covers (every metric for a record that names none), and a
//! decision on the candidate's own run makes the candidate its own reference.
//!
//! A decision names its run by the report's content (`report_sha256`) and by the run id
//! the comparison computed: a run is the decided one when either matches, so the same
//! report exported before or after the decision, under any labels, is that run.

use crate::dataset::store::Store;
use crate::exit::Result;
use crate::wire::baseline::{metric, Group};
use crate::wire::dataset::RunRow;
use crate::wire::decision::Decision;

/// The candidate's own run was accepted: which metrics it is the reference of (None:
/// every metric) and the note that says so.
#[derive(Debug, Clone)]
pub struct AcceptedSelf {
    pub metrics: Option<Vec<String>>,
    pub note: String,
    /// Said instead of `note` when too few other runs match for a comparison: the
    /// acceptance is on record, but nothing it does not cover can be judged.
    pub too_few_note: String,
}

/// Whether decision `d` is on run `r`: the same report (its content), or, for records that
/// name no report digest, the same run id.
pub(crate) fn names_run(d: &Decision, r: &RunRow) -> bool {
    match (&d.report_sha256, &r.report_sha256) {
        (Some(a), Some(b)) if a == b => true,
        _ => d.run_id.as_deref() == Some(r.run_id.as_str()),
    }
}

/// Whether decision `d` is on the candidate: its report digest, or one of its run ids.
fn names_candidate(d: &Decision, sha: Option<&str>, runs: &[&str]) -> bool {
    (d.report_sha256.is_some() && d.report_sha256.as_deref() == sha)
        || d.run_id.as_deref().is_some_and(|r| runs.contains(&r))
}

/// How the newest accepted decision moves the reference.
pub(super) enum Moved {
    /// No accepted run among the matching ones.
    Not,
    /// An accepted run among them covers these metrics (from this index of the matching
    /// runs on); the others keep every matching run.
    Metrics {
        from: usize,
        keys: Vec<String>,
        note: String,
    },
}

/// "accepted on DATE by WHO: 'REASON'" (the reason on one line).
fn accepted_words(d: &Decision) -> String {
    // A record is read from the dataset, so any text may be in it: one line each, and the
    // date cut on a character boundary.
    let line = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    };
    format!(
        "accepted on {} by {}: '{}'",
        line(d.at.get(..10).unwrap_or(&d.at)),
        line(&d.by),
        line(&d.reason)
    )
}

/// The metrics a decision covers, for the note: step metrics by name, then kernels and
/// categories by name when one or two, else counted (the record lists each).
fn covered_words(keys: &[String]) -> String {
    let (rows, steps): (Vec<&String>, Vec<&String>) = keys.iter().partition(|k| k.contains(':'));
    let mut words: Vec<String> = steps.iter().map(|s| (*s).clone()).collect();
    if rows.len() <= 2 {
        words.extend(rows.iter().map(|r| (*r).clone()));
    } else {
        let kernels = rows.iter().filter(|r| r.starts_with("kernel:")).count();
        let categories = rows.len() - kernels;
        if kernels > 0 {
            words.push(format!("{kernels} kernel(s)"));
        }
        if categories > 0 {
            words.push(format!("{categories} category(ies)"));
        }
    }
    let mut out = words.join(", ");
    if TIME_FAMILY[..3].iter().any(|m| keys.iter().any(|k| k == m)) {
        out.push_str(" (with the step times and kernel breakdown they add up to)");
    }
    out
}

/// The decisions' effect on the gate: the note's tail, how the reference moves, and an
/// accepted decision on the candidate's own run.
pub(super) struct Decided {
    pub(super) tail: String,
    pub(super) moved: Moved,
    pub(super) own: Option<AcceptedSelf>,
}

/// Apply the dataset's decisions to the matching runs (oldest first): a rejected run never
/// serves as a reference. The newest accepted run among them moves the reference: for a
/// decision that names its metrics, those metrics are measured from that run on and the
/// others keep every matching run; for one that names none (records written before
/// decisions named their metrics), the history starts at that run (the runs before it
/// measured what the accepted change replaced). A decision on the candidate's own run
/// makes the candidate the reference of its metrics.
pub(super) fn decide(
    store: &Store,
    runs: &mut Vec<RunRow>,
    // The candidate's report digest, its run id and those of its earlier exports (same
    // report, other labels): a decision on any of them is a decision on this run.
    candidate_sha: Option<&str>,
    candidate_runs: &[&str],
    warnings: &mut Vec<String>,
) -> Result<Decided> {
    use crate::wire::decision::Outcome;
    let mut out = Decided {
        tail: String::new(),
        moved: Moved::Not,
        own: None,
    };
    let decisions = crate::dataset::decisions::read(store, warnings)?;
    if decisions.is_empty() {
        return Ok(out);
    }
    let of = |o: Outcome| -> Vec<&Decision> {
        decisions
            .iter()
            .filter(|d| d.outcome == o && (d.run_id.is_some() || d.report_sha256.is_some()))
            .collect()
    };
    let rejected = of(Outcome::Rejected);
    let before = runs.len();
    runs.retain(|r| !rejected.iter().any(|d| names_run(d, r)));
    if runs.len() < before {
        out.tail.push_str(&format!(
            "; {} rejected run(s) left out",
            before - runs.len()
        ));
    }
    let accepted = of(Outcome::Accepted);
    if let Some(d) = accepted
        .iter()
        .rev()
        .find(|d| names_candidate(d, candidate_sha, candidate_runs))
    {
        let what = match &d.metrics {
            Some(m) => format!("the reference of {} is", covered_words(m)),
            None => "the reference of every metric is".to_owned(),
        };
        out.own = Some(AcceptedSelf {
            too_few_note: format!(
                "; this run was {} — too few other runs match to compare it, so the \
                 decision is not applied and the gate stays inconclusive",
                accepted_words(d)
            ),
            metrics: d.metrics.clone(),
            note: format!(
                "; this run was {} — {what} this run itself{}",
                accepted_words(d),
                if d.metrics.is_some() {
                    ", the other metrics keep these runs"
                } else {
                    ""
                }
            ),
        });
        return Ok(out);
    }
    let newest = runs.iter().enumerate().rev().find_map(|(i, r)| {
        accepted
            .iter()
            .rev()
            .find(|d| names_run(d, r))
            .map(|d| (i, *d))
    });
    match newest {
        Some((i, d)) if d.metrics.is_none() => {
            runs.drain(..i);
            out.tail.push_str(&format!(
                "; {} — the history starts at that run, {}",
                accepted_words(d),
                runs[0].run_id
            ));
        }
        Some((i, d)) => {
            let keys = d.metrics.clone().unwrap_or_default();
            out.moved = Moved::Metrics {
                from: i,
                note: format!(
                    "; run {} was {} — the reference of {} is that run and the ones after it",
                    runs[i].run_id,
                    accepted_words(d),
                    covered_words(&keys)
                ),
                keys,
            };
        }
        None => {}
    }
    Ok(out)
}

/// The step times that add up to one another (wall = busy + gap, period ≈ wall) and the
/// gap's share: when the wall, period or busy time moves, all of them move with the
/// kernel, category and class breakdown, or the waterfall would add one reference's
/// kernels to another's gap.
const TIME_FAMILY: [&str; 5] = [
    metric::WALL_NS,
    metric::PERIOD_NS,
    metric::BUSY_NS,
    metric::GAP_NS,
    metric::GAP_FRACTION,
];

/// Move the covered metrics of `prior`'s groups to `after`'s samples: a step metric by
/// name, `kernel:NAME`, `category:NAME`; `None` moves every group whole. When the wall,
/// period or busy time moves, every step time (wall, period, busy, gap, gap fraction) and
/// every kernel, category and class moves with it (launches and MBU only when named). A
/// group or metric `after` lacks keeps its prior samples.
pub(crate) fn merge_reference(prior: &mut Vec<Group>, after: &[Group], keys: Option<&[String]>) {
    for a in after {
        let Some(p) = prior
            .iter_mut()
            .find(|g| g.step_kind == a.step_kind && g.batch_size == a.batch_size)
        else {
            if keys.is_none() {
                prior.push(a.clone());
            }
            continue;
        };
        let Some(keys) = keys else {
            *p = a.clone();
            continue;
        };
        if TIME_FAMILY[..3].iter().any(|m| keys.iter().any(|k| k == m)) {
            for m in TIME_FAMILY {
                if let Some(v) = a.metrics.get(m) {
                    p.metrics.insert(m.to_owned(), v.clone());
                }
            }
            p.kernels.clone_from(&a.kernels);
            p.categories.clone_from(&a.categories);
            p.classes.clone_from(&a.classes);
        }
        for k in keys {
            if let Some(name) = k.strip_prefix("kernel:") {
                if let Some(v) = a.kernels.get(name) {
                    p.kernels.insert(name.to_owned(), v.clone());
                }
            } else if let Some(c) = k.strip_prefix("category:") {
                if let Some(v) = a.categories.get(c) {
                    p.categories.insert(c.to_owned(), v.clone());
                }
            } else if let Some(v) = a.metrics.get(k) {
                p.metrics.insert(k.clone(), v.clone());
            }
        }
    }
}
