//! Where a gate or a diff is computed: the candidate loaded (a report recorded, or a
//! baseline file), the baseline side read from a file or built from run history, both
//! compared under a policy; the result carries both sides and the run `--export` appends.

use std::path::Path;

use crate::baseline::compare::{compare_side, BaselineSide};
use crate::baseline::Policy;
use crate::baseline::{compare, compare_unchecked, is_baseline_file, read_baseline};
use crate::dataset::{self, write};
use crate::exit::{Error, Result};
use crate::pipeline::history::{
    history_side, note_history, with_report_hash, HistoryPlan, PendingExport,
};
use crate::pipeline::plan::{ExportPlan, StepsPlan};
use crate::pipeline::record;
use crate::wire::baseline::{Baseline, Group};
use crate::wire::gate::Comparison;
use crate::wire::meta::{ComparisonSource, SideKind, SideSource};

/// The side being judged, and the run to append when `--export` asked for it.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub baseline: Baseline,
    /// What it was read from, for the comparison's `source`.
    pub source: SideSource,
    pub export: Option<PendingExport>,
    /// The run an export of this report is (or would be): a history never includes it.
    pub own_run: Option<dataset::Candidate>,
    /// What recording it said (samples left out), for the comparison's warnings.
    pub warnings: Vec<String>,
}

impl Candidate {
    /// Load the candidate: a baseline file as it is, a report recorded with the plan (and
    /// kept for `export`, which needs a report). `history`: the report is hashed while it
    /// loads, so that its own earlier export can be left out of the history it meets.
    pub fn load(
        path: &Path,
        plan: &StepsPlan,
        export: Option<&ExportPlan>,
        history: bool,
    ) -> Result<Candidate> {
        let source = side_source(path);
        if is_baseline_file(path) {
            if export.is_some() {
                return Err(Error::usage(
                    "--export needs a report as the candidate, not a baseline file",
                ));
            }
            let (baseline, warnings) = record::side(path, plan)?;
            return Ok(Candidate {
                baseline,
                source,
                export: None,
                own_run: None,
                warnings,
            });
        }
        let own_run = |sha: &str, labels: &dataset::Labels| dataset::Candidate {
            run_id: write::run_id(sha, labels),
            report_sha256: sha.to_owned(),
        };
        let (baseline, export, own, warnings) = match export {
            Some(to) => {
                let (baseline, pending, warnings) = record::record_for_export(path, plan, to)?;
                let own = own_run(&pending.sha256, &pending.labels);
                (baseline, Some(pending), Some(own), warnings)
            }
            None if history => {
                let (r, sha) =
                    with_report_hash(path, plan.find.workers, || record::record(path, plan))?;
                (
                    r.baseline,
                    None,
                    Some(own_run(&sha, &dataset::Labels::new())),
                    r.warnings,
                )
            }
            None => {
                let (baseline, warnings) = record::side(path, plan)?;
                (baseline, None, None, warnings)
            }
        };
        let source = SideSource {
            run_id: own.as_ref().map(|o| o.run_id.clone()),
            report_sha256: own.as_ref().map(|o| o.report_sha256.clone()),
            ..source
        };
        Ok(Candidate {
            baseline,
            source,
            export,
            own_run: own,
            warnings,
        })
    }
}

/// A side as the comparison's `source` names it: a baseline file or a report, and its path.
fn side_source(path: &Path) -> SideSource {
    SideSource {
        kind: if is_baseline_file(path) {
            SideKind::Baseline
        } else {
            SideKind::Report
        },
        path: path.display().to_string(),
        run_id: None,
        report_sha256: None,
    }
}

/// A dataset as a decision finds it again from another directory: a URL as written, a
/// local path made absolute (not canonical: a symlinked dataset stays where it was named).
pub(crate) fn dataset_location(ds: &Path) -> String {
    let s = ds.display().to_string();
    if s.contains("://") {
        return s;
    }
    std::path::absolute(ds).map_or(s, |p| p.display().to_string())
}

/// What the candidate is compared against.
#[derive(Debug, Clone, Copy)]
pub enum Against<'a> {
    /// A stored baseline file (a path, or a URL reached as the configuration says).
    Baseline(&'a Path, &'a crate::store::StoreConfig),
    /// The last runs of a dataset that match.
    History(&'a HistoryPlan),
}

/// A finished comparison and both sides of it.
#[derive(Debug, Clone)]
pub struct Compared {
    pub comparison: Comparison,
    pub baseline: Baseline,
    pub candidate: Baseline,
    /// The candidate's run, to append after the report is written (never before: a run
    /// is not part of its own history).
    pub export: Option<PendingExport>,
}

impl Compared {
    /// The groups the comparison compared, in the order of its `groups`, with their
    /// samples on both sides: what a page's distributions draw (matched once, here).
    pub fn pairs(&self) -> Vec<(&Group, &Group)> {
        crate::baseline::compare::compared_pairs(&self.baseline, &self.candidate)
    }
}

/// Gate a candidate: the comparison with its verdict (GPU and model must match).
pub fn gate(cand: Candidate, against: Against<'_>, policy: &Policy) -> Result<Compared> {
    let baseline_source = match against {
        Against::Baseline(path, _) => side_source(path),
        Against::History(plan) => SideSource {
            kind: SideKind::History,
            path: plan.dataset.display().to_string(),
            run_id: None,
            report_sha256: None,
        },
    };
    let history = match against {
        Against::History(plan) => Some(dataset_location(&plan.dataset)),
        Against::Baseline(..) => None,
    };
    let export = cand.export.as_ref().map(|e| dataset_location(&e.dataset));
    let (mut comparison, baseline) = match against {
        Against::Baseline(path, store) => {
            let base = read_baseline(path, store)?;
            (compare(&base, &cand.baseline, policy)?, base)
        }
        Against::History(plan) => {
            let h = history_side(plan, &cand.baseline, cand.own_run.clone(), policy)?;
            // Too few runs matched: there is no baseline side, and nothing is compared
            // (an empty one would claim the candidate's groups are missing from it).
            let cmp = if h.too_few {
                let mut cmp =
                    compare_side(BaselineSide::Unavailable(&h.note), &cand.baseline, policy)?;
                cmp.warnings.extend(h.warnings.iter().cloned());
                cmp
            } else {
                let mut cmp = compare(&h.baseline, &cand.baseline, policy)?;
                note_history(&mut cmp, &h);
                cmp
            };
            (cmp, h.baseline)
        }
    };
    comparison.source = Some(ComparisonSource {
        baseline: baseline_source,
        candidate: cand.source,
        history,
        export,
    });
    comparison.warnings.extend(cand.warnings);
    Ok(Compared {
        comparison,
        baseline,
        candidate: cand.baseline,
        export: cand.export,
    })
}

/// `diff A B`: each side a report or a baseline file; judged like a gate only with
/// `verdict` (otherwise sides of different GPUs or models are compared as they are).
pub fn diff(
    a: &Path,
    b: &Path,
    plan: &StepsPlan,
    policy: &Policy,
    verdict: bool,
) -> Result<Compared> {
    let source = ComparisonSource {
        baseline: side_source(a),
        candidate: side_source(b),
        history: None,
        export: None,
    };
    let (a, mut warnings) = record::side(a, plan)?;
    let (b, more) = record::side(b, plan)?;
    warnings.extend(more);
    let mut comparison = if verdict {
        compare(&a, &b, policy)?
    } else {
        compare_unchecked(&a, &b, policy)?
    };
    comparison.source = Some(source);
    comparison.warnings.extend(warnings);
    Ok(Compared {
        comparison,
        baseline: a,
        candidate: b,
        export: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::categories::Categorizer;
    use crate::pipeline::plan::FloorPlan;
    use crate::timing::steps::StepOptions;
    use crate::wire::attribution::LaunchCost;

    #[test]
    fn export_needs_a_report_not_a_baseline_file() {
        let plan = StepsPlan {
            find: StepOptions::default(),
            kind: None,
            launch_cost: LaunchCost::default(),
            categories: Categorizer::default(),
            floor: FloorPlan::default(),
            device: None,
        };
        let to = ExportPlan {
            dataset: "ds".into(),
            labels: crate::dataset::Labels::new(),
            store: crate::store::StoreConfig::default(),
        };
        let base = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("baselines")
            .join("example-h100-vllm-decode.json");
        let e = Candidate::load(&base, &plan, Some(&to), true).unwrap_err();
        assert_eq!(e.kind, crate::exit::Kind::Usage);
        assert!(
            e.message.starts_with("--export needs a report"),
            "{}",
            e.message
        );
        // Without --export the same file is the candidate as it is.
        let c = Candidate::load(&base, &plan, None, true).unwrap();
        assert_eq!(
            c.baseline,
            read_baseline(&base, &crate::store::StoreConfig::default()).unwrap()
        );
        assert!(c.export.is_none());
        assert!(
            c.own_run.is_none(),
            "a baseline file is no run of a dataset"
        );
    }
}
