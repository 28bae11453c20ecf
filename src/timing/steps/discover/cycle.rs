//! Cycles of recurring annotations on one thread, and the steps they tile.
//!
//! A cycle is a set of names that recur in lockstep: taking one of them, the anchor, its
//! occurrences cut the thread's time into intervals, and every other member occurs
//! exactly once in each interval, in the same order every time (once at most before the
//! anchor's first occurrence and after its last: a capture may start or stop inside an
//! iteration). The anchor opens each cycle: a step runs from one of its occurrences to
//! the next. After the last one, the final cycle is a step only when every member
//! occurs again, and it ends where the last of them ends; otherwise the capture cut it
//! and it is left outside steps.
//!
//! Anchors are tried in order of what they say about an iteration: the names PyTorch
//! itself writes once per training iteration ([`TRAINING`], in the order an iteration
//! meets them), then the names that recur least often (the coarsest cycle), the earliest
//! first. A name in an accepted cycle is never tried again, and at most [`MAX_ANCHORS`]
//! names per thread are tried, so a thread with thousands of distinct recurring names
//! stays linear in its occurrences.

use std::collections::HashMap;

use crate::exit::Result;
use crate::timing::stepname::strip_emit_nvtx;
use crate::trace::RangeKind;

use super::Index;

/// Name prefixes PyTorch writes once per training iteration, in iteration order: the
/// DataLoader's `__next__` (`torch/utils/data/dataloader.py`, `_profile_name`), and the
/// optimizer's profile hooks (`torch/optim/optimizer.py`, `Optimizer.zero_grad#{cls}.
/// zero_grad`, `Optimizer.step#{cls}.step`).
pub(super) const TRAINING: [&str; 3] = [
    "enumerate(DataLoader)#",
    "Optimizer.zero_grad#",
    "Optimizer.step#",
];

/// At most this many names per thread are tried as a cycle's anchor.
const MAX_ANCHORS: usize = 64;

/// Where `name` stands in [`TRAINING`], if it is one of those names.
pub(super) fn training_rank(name: &str) -> Option<usize> {
    TRAINING.iter().position(|p| name.starts_with(p))
}

/// One name's occurrences on one thread, in start order (emit_nvtx suffixes stripped, so
/// `… , op_id = N` names of one annotation are one name).
pub(super) struct Occurrences {
    pub name: String,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
}

/// The recurring names of one thread.
pub(super) struct Thread {
    pub pid: i64,
    pub tid: i64,
    pub names: Vec<Occurrences>,
}

/// A stable cycle on one thread: its members' indices in [`Thread::names`], the anchor
/// (opener) first, the others in the order an iteration meets them.
pub(super) struct Cycle {
    pub members: Vec<usize>,
}

/// The steps a cycle tiles, and whether its final cycle was cut by the capture.
pub(super) struct Tiles {
    pub spans: Vec<(i64, i64)>,
    pub cut_last: bool,
}

/// Host ranges (no GPU annotations, no python-stack spans) whose name passes `keep`,
/// grouped per thread and per name with the emit_nvtx suffix stripped.
/// `keep` sees a range's bare name and its named domain, if any (see
/// [`super::ranges::host_ranges_in`]).
pub(super) fn threads(
    ix: &Index<'_>,
    mut keep: impl FnMut(&str, Option<&str>) -> bool,
) -> Result<Vec<Thread>> {
    let t = ix.trace;
    let r = t.ranges_view()?;
    let mut key_of: HashMap<&str, u32> = HashMap::new();
    let mut keys: Vec<&str> = Vec::new();
    let mut rows: Vec<(i64, i64, u32, i64, i64)> = Vec::new();
    for i in 0..r.start_ns.len() {
        if r.kind[i] == RangeKind::GpuAnnotation as u32
            || r.kind[i] == RangeKind::PythonStack as u32
        {
            continue;
        }
        let raw = t.name(r.name_id[i]);
        if !keep(raw, t.meta.domain_name(i64::from(r.pid[i]), r.domain_id[i])) {
            continue;
        }
        let name = strip_emit_nvtx(raw);
        let k = *key_of.entry(name).or_insert_with(|| {
            keys.push(name);
            keys.len() as u32 - 1
        });
        rows.push((i64::from(r.pid[i]), r.tid[i], k, r.start_ns[i], r.end_ns[i]));
    }
    rows.sort_unstable();
    let mut out: Vec<Thread> = Vec::new();
    for (pid, tid, k, s, e) in rows {
        let same_thread = out.last().is_some_and(|t| (t.pid, t.tid) == (pid, tid));
        if !same_thread {
            out.push(Thread {
                pid,
                tid,
                names: Vec::new(),
            });
        }
        let th = out.last_mut().expect("pushed above");
        if th.names.last().is_none_or(|o| o.name != keys[k as usize]) {
            th.names.push(Occurrences {
                name: keys[k as usize].to_owned(),
                starts: Vec::new(),
                ends: Vec::new(),
            });
        }
        let o = th.names.last_mut().expect("pushed above");
        o.starts.push(s);
        o.ends.push(e);
    }
    Ok(out)
}

/// For each full interval `[a[i], a[i + 1])` of the anchor's starts `a`, the start of
/// `b`'s one occurrence in it; `None` when some interval holds none or several, or when
/// more than one occurrence lies before the first or after the last anchor.
fn slots(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let mut p = b.partition_point(|&x| x < a[0]);
    if p > 1 {
        return None;
    }
    let mut out = Vec::with_capacity(a.len() - 1);
    for w in a.windows(2) {
        let q = p + b[p..].partition_point(|&x| x < w[1]);
        if q != p + 1 {
            return None;
        }
        out.push(b[p]);
        p = q;
    }
    (b.len() - p <= 1).then_some(out)
}

/// Every stable cycle of the thread, in anchor order (see the module doc). A cycle of
/// one name counts only for a [`TRAINING`] name: an unknown name recurring alone (a
/// collective called per gradient bucket) says nothing about iterations.
pub(super) fn cycles(t: &Thread) -> Vec<Cycle> {
    let names = &t.names;
    let mut anchors: Vec<usize> = (0..names.len())
        .filter(|&i| names[i].starts.len() >= 2)
        .collect();
    anchors.sort_by_key(|&i| {
        let o = &names[i];
        (
            training_rank(&o.name).unwrap_or(usize::MAX),
            o.starts.len(),
            o.starts[0],
        )
    });
    let mut taken = vec![false; names.len()];
    let mut out = Vec::new();
    for &a in anchors.iter().take(MAX_ANCHORS) {
        if taken[a] {
            continue;
        }
        let an = &names[a].starts;
        let mut slotted: Vec<(Vec<i64>, usize)> = (0..names.len())
            .filter(|&b| b != a && !taken[b] && names[b].starts.len().abs_diff(an.len()) <= 1)
            .filter_map(|b| slots(an, &names[b].starts).map(|s| (s, b)))
            .collect();
        slotted.sort_unstable();
        // Members in iteration order: each must follow the previous one in every interval.
        let mut members = vec![a];
        let mut last: Vec<i64> = an[..an.len() - 1].to_vec();
        for (s, b) in slotted {
            if last.iter().zip(&s).all(|(l, x)| l <= x) {
                members.push(b);
                last = s;
            }
        }
        if members.len() == 1 && training_rank(&names[a].name).is_none() {
            continue;
        }
        for &m in &members {
            taken[m] = true;
        }
        out.push(Cycle { members });
    }
    out
}

/// The steps of `c` on `t`: from each occurrence of the opener to the next (1 ns before
/// it, so no call belongs to two steps); the final cycle when every member occurs after
/// the last opener, up to the latest end among those occurrences.
pub(super) fn tiles(t: &Thread, c: &Cycle) -> Tiles {
    let open = &t.names[c.members[0]];
    let mut spans: Vec<(i64, i64)> = open
        .starts
        .windows(2)
        .map(|w| (w[0], w[1].saturating_sub(1)))
        .collect();
    let last = open.starts[open.starts.len() - 1];
    let mut end = open.ends[open.ends.len() - 1];
    let mut cut_last = false;
    for &m in &c.members[1..] {
        let o = &t.names[m];
        let p = o.starts.partition_point(|&x| x < last);
        match o.ends.get(p) {
            Some(&e) => end = end.max(e),
            None => cut_last = true,
        }
    }
    if !cut_last {
        spans.push((last, end.max(last)));
    }
    Tiles { spans, cut_last }
}

/// A looser tiling for a user's `--steps REGEX` with the cycle extent: the opener is the
/// matched name PyTorch writes first in an iteration, else the one that recurs most (the
/// earliest on ties), and the last step runs to the latest end of a matched range that
/// starts after the last opener, whatever the other names do.
pub(super) fn loose_tiles(t: &Thread) -> Vec<(i64, i64)> {
    let Some(open) = t.names.iter().min_by_key(|o| {
        (
            training_rank(&o.name).unwrap_or(usize::MAX),
            std::cmp::Reverse(o.starts.len()),
            o.starts[0],
        )
    }) else {
        return Vec::new();
    };
    let mut spans: Vec<(i64, i64)> = open
        .starts
        .windows(2)
        .map(|w| (w[0], w[1].saturating_sub(1)))
        .collect();
    let last = open.starts[open.starts.len() - 1];
    let end = t
        .names
        .iter()
        .flat_map(|o| o.starts.iter().zip(&o.ends))
        .filter(|(&s, _)| s >= last)
        .map(|(_, &e)| e)
        .max()
        .unwrap_or(last);
    spans.push((last, end.max(last)));
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread from (name, start) events (every range 10 ns long).
    fn thread(events: &[(&str, i64)]) -> Thread {
        let mut names: Vec<Occurrences> = Vec::new();
        for &(n, s) in events {
            match names.iter_mut().find(|o| o.name == n) {
                Some(o) => {
                    o.starts.push(s);
                    o.ends.push(s + 10);
                }
                None => names.push(Occurrences {
                    name: n.to_owned(),
                    starts: vec![s],
                    ends: vec![s + 10],
                }),
            }
        }
        Thread {
            pid: 1,
            tid: 1,
            names,
        }
    }

    fn member_names(t: &Thread, c: &Cycle) -> Vec<String> {
        c.members.iter().map(|&m| t.names[m].name.clone()).collect()
    }

    const ZG: &str = "Optimizer.zero_grad#SGD.zero_grad";
    const ST: &str = "Optimizer.step#SGD.step";

    #[test]
    fn alternating_names_are_one_cycle_tiled_opener_to_opener() {
        let t = thread(&[
            (ZG, 100),
            ("## forward ##", 150),
            (ST, 300),
            (ZG, 400),
            ("## forward ##", 450),
            (ST, 600),
            (ZG, 700),
            ("## forward ##", 750),
            (ST, 900),
        ]);
        let c = cycles(&t);
        assert_eq!(c.len(), 1);
        assert_eq!(member_names(&t, &c[0]), [ZG, "## forward ##", ST]);
        let tl = tiles(&t, &c[0]);
        // Opener to opener - 1 ns, then the last cycle to the end of its last member.
        assert_eq!(tl.spans, [(100, 399), (400, 699), (700, 910)]);
        assert!(!tl.cut_last);
    }

    #[test]
    fn a_capture_cut_at_both_ends_keeps_the_whole_cycles() {
        // Starts inside an iteration (a step before the first zero_grad) and stops after a
        // zero_grad whose step never came: two whole cycles, the cut one dropped.
        let t = thread(&[
            (ST, 50),
            (ZG, 100),
            (ST, 300),
            (ZG, 400),
            (ST, 600),
            (ZG, 700),
        ]);
        let c = cycles(&t);
        assert_eq!(c.len(), 1);
        assert_eq!(member_names(&t, &c[0]), [ZG, ST]);
        let tl = tiles(&t, &c[0]);
        assert_eq!(tl.spans, [(100, 399), (400, 699)]);
        assert!(tl.cut_last);
    }

    #[test]
    fn the_dataloader_opens_and_its_final_stop_iteration_call_is_cut() {
        // `enumerate(DataLoader)` runs once more at the end (StopIteration).
        let dl = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
        let t = thread(&[
            (dl, 0),
            (ZG, 100),
            (ST, 300),
            (dl, 400),
            (ZG, 500),
            (ST, 700),
            (dl, 800),
        ]);
        let c = cycles(&t);
        assert_eq!(member_names(&t, &c[0]), [dl, ZG, ST]);
        assert_eq!(tiles(&t, &c[0]).spans, [(0, 399), (400, 799)]);
    }

    #[test]
    fn unstable_orders_and_single_occurrences_are_no_cycle() {
        // Same counts, no stable alternation: A A B B A B.
        let t = thread(&[
            ("load", 0),
            ("load", 10),
            ("log", 20),
            ("log", 30),
            ("load", 40),
            ("log", 50),
        ]);
        assert!(cycles(&t).is_empty());
        // Once each: nothing recurs.
        assert!(cycles(&thread(&[(ZG, 0), (ST, 100)])).is_empty());
        // An unknown name recurring alone (a collective per bucket) is no iteration.
        assert!(cycles(&thread(&[("nccl:all_reduce", 0), ("nccl:all_reduce", 50)])).is_empty());
        // Twice each is two iterations; a training name alone also recurs.
        let t = thread(&[(ZG, 0), (ST, 100), (ZG, 200), (ST, 300)]);
        assert_eq!(tiles(&t, &cycles(&t)[0]).spans, [(0, 199), (200, 310)]);
        let t = thread(&[(ST, 0), (ST, 100), (ST, 200)]);
        assert_eq!(
            tiles(&t, &cycles(&t)[0]).spans,
            [(0, 99), (100, 199), (200, 210)]
        );
    }

    #[test]
    fn a_member_out_of_phase_is_left_out_of_the_cycle() {
        // `b` and `c` swap places in the second iteration: `b` joins (it leads `c` in the
        // first interval), `c` is refused (it precedes `b` in the second).
        let t = thread(&[
            ("a", 0),
            ("b", 10),
            ("c", 20),
            ("a", 100),
            ("c", 110),
            ("b", 120),
            ("a", 200),
            ("b", 210),
            ("c", 220),
        ]);
        let c = cycles(&t);
        assert_eq!(c.len(), 1);
        assert_eq!(member_names(&t, &c[0]), ["a", "b"]);
    }

    #[test]
    fn loose_tiles_follow_the_most_recurring_or_training_name() {
        let t = thread(&[("x", 0), ("y", 50), ("x", 100), ("x", 200), ("y", 250)]);
        assert_eq!(loose_tiles(&t), [(0, 99), (100, 199), (200, 260)]);
        let t = thread(&[(ST, 0), (ZG, 50), (ST, 100), (ZG, 150)]);
        assert_eq!(loose_tiles(&t), [(50, 149), (150, 160)]);
    }
}
