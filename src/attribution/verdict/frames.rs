//! The Python frame a long stall sits in: the innermost `python_function` span of the
//! stalled step's host thread over the idle GPU time, read from a second load of a
//! capture recorded with stacks (Kineto `with_stack=True`).

use crate::exit::Result;
use crate::trace::{RangeKind, Trace};
use crate::wire::steps::Step;

use super::Gaps;

/// The longest gap: its step's host thread and the idle GPU interval (measured).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StallAt {
    pub pid: i64,
    pub tid: i64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// The frame named for a stall: its `file.py(line): function` (or a built-in's name) and
/// its duration, and where the innermost is a built-in (`<built-in method copy_ …>`) or
/// PyTorch's own code, the innermost frame of the program around it: the line a user
/// opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StallFrame {
    pub name: String,
    pub dur_ns: i64,
    pub caller: Option<String>,
}

/// A frame of the program's own Python source (`file.py(line): function`): not a
/// built-in or C function, and not PyTorch's files (`torch/…`, which the profiler prints
/// relative to site-packages), whose dispatch wraps every tensor call.
fn is_program_frame(name: &str) -> bool {
    name.contains(".py(") && !name.starts_with("torch/") && !name.contains("/torch/")
}

/// Reads the capture's Python frames of at least the given ns (a second load, only when a
/// long stall is found); `Ok(None)` where the capture has none.
pub type FrameLoader<'a> = &'a dyn Fn(i64) -> Result<Option<Trace>>;

/// The shortest frame needed: one that overlaps at least half the gap is at least that
/// long, so a frames load keeps nothing shorter.
fn min_frame_ns(at: &StallAt) -> i64 {
    ((at.end_ns - at.start_ns) / 2).max(1)
}

/// The innermost frame of `at`'s host thread that overlaps at least half of the gap: the
/// shortest such span (nested frames are shorter than their callers), a later start on a
/// tie. Half, not all: the host runs ahead of the GPU by the launch latency, so the frame
/// that held the host is shifted against the idle GPU time by a few µs.
fn innermost(frames: &Trace, at: &StallAt) -> Result<Option<StallFrame>> {
    let r = frames.ranges_view()?;
    let gap = at.end_ns - at.start_ns;
    // (duration, -start, row): the smallest is the innermost, a later start on a tie.
    type Key = (i64, i64, usize);
    let (mut best, mut source): (Option<Key>, Option<Key>) = (None, None);
    for i in 0..r.start_ns.len() {
        if r.kind[i] != RangeKind::PythonStack as u32
            || i64::from(r.pid[i]) != at.pid
            || r.tid[i] != at.tid
        {
            continue;
        }
        let overlap = r.end_ns[i].min(at.end_ns) - r.start_ns[i].max(at.start_ns);
        if 2 * overlap < gap {
            continue;
        }
        let key = (r.end_ns[i] - r.start_ns[i], -r.start_ns[i], i);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
        if is_program_frame(frames.name(r.name_id[i])) && source.is_none_or(|b| key < b) {
            source = Some(key);
        }
    }
    Ok(best.map(|(dur_ns, _, i)| StallFrame {
        name: frames.name(r.name_id[i]).to_owned(),
        dur_ns,
        caller: source
            .filter(|s| s.2 != i)
            .map(|s| frames.name(r.name_id[s.2]).to_owned()),
    }))
}

/// The innermost Python frame over the longest gap of a run whose idle time is one long
/// stall, where the capture's frames can be loaded.
pub(crate) fn stall_frame(
    g: &Gaps,
    steps: &[&Step],
    load: FrameLoader<'_>,
) -> Result<Option<StallFrame>> {
    let (Some(i), Some((start_ns, end_ns))) = (g.longest_step, g.longest_at) else {
        return Ok(None);
    };
    let Some(step) = steps.iter().find(|s| s.index == i) else {
        return Ok(None);
    };
    let Some(tid) = step.tid else {
        return Ok(None);
    };
    let at = StallAt {
        pid: step.pid,
        tid,
        start_ns,
        end_ns,
    };
    match load(min_frame_ns(&at))? {
        Some(t) => innermost(&t, &at),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{RangeRow, RangesBuilder};
    use crate::wire::trace::{SourceFormat, TraceMeta};

    fn frames(rows: &[(i64, i64, i64, &str)]) -> Trace {
        let mut t = Trace::empty(TraceMeta::new(SourceFormat::Kineto, "x")).unwrap();
        let mut b = RangesBuilder::default();
        for &(tid, s, e, name) in rows {
            t.strings.push(name.to_owned());
            b.push(RangeRow {
                pid: 1,
                tid,
                start_ns: s,
                end_ns: e,
                name_id: t.strings.len() as u32 - 1,
                domain_id: 0,
                kind: RangeKind::PythonStack,
            });
        }
        t.ranges = b.finish().unwrap();
        t
    }

    #[test]
    fn the_shortest_frame_over_half_the_gap_is_named() {
        let at = StallAt {
            pid: 1,
            tid: 7,
            start_ns: 1_000,
            end_ns: 11_000,
        };
        assert_eq!(min_frame_ns(&at), 5_000);
        let t = frames(&[
            (7, 0, 20_000, "runner.py(10): execute_model"),
            // Shifted by the launch latency: still over 90% of the gap.
            (7, 900, 10_800, "runner.py(50): _prepare_inputs"),
            // Shorter, but over less than half of the gap.
            (7, 1_000, 5_000, "runner.py(60): _helper"),
            // Shorter and over all of it, on another thread.
            (8, 1_000, 11_000, "other.py(1): spin"),
        ]);
        assert_eq!(
            innermost(&t, &at).unwrap(),
            Some(StallFrame {
                name: "runner.py(50): _prepare_inputs".to_owned(),
                dur_ns: 9_900,
                caller: None,
            })
        );
        // A built-in inside it is the innermost; the source frame around it is named too.
        let t = frames(&[
            (7, 900, 10_800, "runner.py(50): _prepare_inputs"),
            (
                7,
                940,
                10_750,
                "torch/utils/_device.py(99): __torch_function__",
            ),
            (
                7,
                950,
                10_700,
                "<built-in method copy_ of Tensor object at 0x7f>",
            ),
        ]);
        assert_eq!(
            innermost(&t, &at).unwrap(),
            Some(StallFrame {
                name: "<built-in method copy_ of Tensor object at 0x7f>".to_owned(),
                dur_ns: 9_750,
                caller: Some("runner.py(50): _prepare_inputs".to_owned()),
            })
        );
        let none = frames(&[(7, 1_000, 5_000, "runner.py(60): _helper")]);
        assert_eq!(innermost(&none, &at).unwrap(), None);
    }
}
