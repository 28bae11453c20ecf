//! Host ranges as step candidates: the NVTX ranges and torch annotations whose name a
//! family accepts, reduced to the outermost per thread.

use crate::exit::Result;
use crate::timing::stepname;
use crate::trace::RangeKind;

use super::{Candidate, Index};

/// Host ranges (no GPU annotations, no python-stack spans) whose bare name passes `keep`
/// (the engines' markers are matched by their own names, whatever domain they are in).
pub(super) fn host_ranges(
    ix: &Index<'_>,
    mut keep: impl FnMut(&str) -> bool,
) -> Result<Vec<Candidate>> {
    host_ranges_in(ix, |n, _| keep(n))
}

/// Host ranges that `keep` accepts given the bare name and the range's named domain, if
/// any: nsys names a range pushed in a named domain `Domain:Name`, so a user's pattern may
/// be written either way ([`matches_range`]). The candidate carries the domain.
pub(super) fn host_ranges_in(
    ix: &Index<'_>,
    mut keep: impl FnMut(&str, Option<&str>) -> bool,
) -> Result<Vec<Candidate>> {
    let trace = ix.trace;
    let r = trace.ranges_view()?;
    let mut out = Vec::new();
    for i in 0..r.start_ns.len() {
        if r.kind[i] == RangeKind::GpuAnnotation as u32
            || r.kind[i] == RangeKind::PythonStack as u32
        {
            continue;
        }
        let pid = i64::from(r.pid[i]);
        let domain = trace.meta.domain_name(pid, r.domain_id[i]);
        if keep(trace.name(r.name_id[i]), domain) {
            out.push(Candidate {
                domain: domain.map(str::to_owned),
                ..Candidate::range(pid, r.tid[i], r.start_ns[i], r.end_ns[i], r.name_id[i])
            });
        }
    }
    Ok(out)
}

/// Whether a `--steps REGEX` selects a range: its bare name matches, or, in a named
/// domain, the `Domain:Name` nsys shows (`nsys stats -r nvtxgpuproj`, the timeline).
pub(super) fn matches_range(re: &regex::Regex, name: &str, domain: Option<&str>) -> bool {
    re.is_match(name) || domain.is_some_and(|d| re.is_match(&format!("{d}:{name}")))
}

/// Host ranges that are steps: the outermost match per thread; an enclosed parsable
/// span lends its name and composition to the outer one.
pub(super) fn outermost(mut cands: Vec<Candidate>) -> Vec<Candidate> {
    cands.sort_by_key(|c| (c.pid, c.tid, c.start, std::cmp::Reverse(c.end)));
    let mut kept: Vec<Candidate> = Vec::new();
    let mut inner_named: Vec<bool> = Vec::new();
    for c in cands {
        let idx = kept.len().wrapping_sub(1);
        if let Some(last) = kept.last_mut() {
            if last.pid == c.pid && last.tid == c.tid && c.start >= last.start && c.end <= last.end
            {
                if !inner_named[idx] {
                    if let Some(inner) = c.parsed {
                        let merged = match &last.parsed {
                            Some(outer) => stepname::ParsedStep {
                                kind: inner.kind,
                                composition: stepname::merge_inner(
                                    &outer.composition,
                                    &inner.composition,
                                ),
                            },
                            None => inner,
                        };
                        last.parsed = Some(merged);
                        last.name_id = c.name_id;
                        last.label = c.label;
                        last.domain = c.domain;
                        inner_named[idx] = true;
                    }
                }
                continue;
            }
        }
        kept.push(c);
        inner_named.push(false);
    }
    kept
}
