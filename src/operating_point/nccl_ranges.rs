//! The collective a communication kernel ran, from the NCCL NVTX range its launch lies in:
//! PyTorch's c10d wraps each collective in a `nccl:<op>` range (`nccl:all_to_all`,
//! `nccl:all_reduce`, …; nsys appends `, op_id = N` under `--pytorch`), so the range
//! names what the kernel name may not (an all-to-all runs as `ncclDevKernel_SendRecv`,
//! one send and one receive per peer). The launch is found by its correlation id, the
//! range on the launching thread.

use std::collections::{HashMap, HashSet};

use crate::exit::Result;
use crate::timing::steps::{Found, StepOptions};
use crate::trace::{OpKind, Trace};

/// The collective of one range name: `nccl:all_to_all, op_id = 7` → `nccl:all_to_all`;
/// None for any other range (NCCL's own `ncclSend`/`ncclGroupStart` API ranges name the
/// calls, not the collective they build).
pub(crate) fn collective_of_range(name: &str) -> Option<&str> {
    crate::categories::families::collective_range(name)
}

/// Per communication kernel name of the steps, the NCCL range its launches lie in: the
/// most frequent range, the launches under it, and the launches found (a launch with no
/// recorded call is not counted). Empty when the trace records no `nccl:` range.
#[derive(Debug, Default)]
pub struct Enclosing(pub HashMap<String, (String, u64, u64)>);

impl Enclosing {
    /// The range most of `kernel`'s launches lie in, with (under it, launches found).
    pub fn of(&self, kernel: &str) -> Option<(&str, u64, u64)> {
        self.0.get(kernel).map(|(r, n, all)| (r.as_str(), *n, *all))
    }
}

/// One `nccl:` range on a host thread: start, end, the collective.
type Span<'t> = (i64, i64, &'t str);

/// Whether any interned name is a c10d collective range.
fn has_ranges(trace: &Trace) -> bool {
    trace
        .strings
        .iter()
        .any(|s| collective_of_range(s).is_some())
}

/// The capture's `nccl:` ranges alone, read again from a report whose first load kept
/// only the ranges its step method uses (a second load, made only where a TP no reading
/// took is to be explained by the collectives).
fn reload(trace: &Trace, find: &StepOptions) -> Result<Option<Trace>> {
    let path = std::path::Path::new(&trace.meta.path);
    if !trace.meta.format.capabilities().ranges_on_request || !path.exists() {
        return Ok(None);
    }
    let opts = find.read(crate::source::LoadOptions {
        ranges: true,
        range_filter: Some(
            crate::categories::families::KernelFamily::NcclRange
                .regex()
                .clone(),
        ),
        ..crate::source::LoadOptions::ops_only()
    });
    let t = crate::source::load_with(path, &opts)?;
    Ok(has_ranges(&t).then_some(t))
}

/// Read the enclosing NCCL ranges of the steps' communication kernels: from `trace`'s own
/// ranges where it kept them, else from a second read of its export.
pub fn read(trace: &Trace, found: &Found, find: &StepOptions) -> Result<Enclosing> {
    let has_comm = found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .any(|k| k.category.as_ref() == crate::categories::COMMUNICATION);
    if !has_comm {
        return Ok(Enclosing::default());
    }
    if has_ranges(trace) {
        return read_in(trace, trace, found);
    }
    match reload(trace, find)? {
        Some(r) => read_in(trace, &r, found),
        None => Ok(Enclosing::default()),
    }
}

/// The enclosing ranges of `trace`'s launches, the ranges read from `rt` (the same
/// capture: its process and thread ids are the same).
fn read_in(trace: &Trace, rt: &Trace, found: &Found) -> Result<Enclosing> {
    let range_op: HashMap<u32, &str> = rt
        .strings
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((u32::try_from(i).ok()?, collective_of_range(s)?)))
        .collect();
    if range_op.is_empty() {
        return Ok(Enclosing::default());
    }
    let comm: HashSet<&str> = found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .filter(|k| k.category.as_ref() == crate::categories::COMMUNICATION)
        .map(|k| k.name.as_ref())
        .collect();
    if comm.is_empty() {
        return Ok(Enclosing::default());
    }
    // The communication kernels' name ids, so the op rows (millions) are matched by id,
    // not by hashing each row's name.
    let comm_ids: HashMap<u32, &str> = trace
        .strings
        .iter()
        .enumerate()
        .filter(|(_, s)| comm.contains(s.as_str()))
        .filter_map(|(i, s)| Some((u32::try_from(i).ok()?, s.as_str())))
        .collect();
    // Launches of those kernels: (pid, correlation id) → kernel name.
    let o = trace.ops_view()?;
    let mut launches: HashMap<(i32, i32), &str> = HashMap::new();
    for i in 0..o.start_ns.len() {
        if OpKind::from_u32(o.kind[i]) != OpKind::Kernel || o.correlation_id[i] < 0 {
            continue;
        }
        if let Some(&name) = comm_ids.get(&o.name_id[i]) {
            launches.insert((o.pid[i], o.correlation_id[i]), name);
        }
    }
    // NCCL ranges per host thread, by start.
    let r = rt.ranges_view()?;
    let mut ranges: HashMap<(i32, i64), Vec<Span<'_>>> = HashMap::new();
    for i in 0..r.start_ns.len() {
        if let Some(op) = range_op.get(&r.name_id[i]) {
            ranges
                .entry((r.pid[i], r.tid[i]))
                .or_default()
                .push((r.start_ns[i], r.end_ns[i], op));
        }
    }
    // Sorted by start, each with the latest end among it and the ranges before it: the
    // backward walk for a call stops as soon as no earlier range reaches it (a call
    // outside every range costs the nesting depth, not every range before it).
    let ranges: HashMap<(i32, i64), Vec<(Span<'_>, i64)>> = ranges
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            let mut reach = i64::MIN;
            let v = v
                .into_iter()
                .map(|r| {
                    reach = reach.max(r.1);
                    (r, reach)
                })
                .collect();
            (k, v)
        })
        .collect();
    let c = trace.calls_view()?;
    let mut tally: HashMap<&str, HashMap<&str, u64>> = HashMap::new();
    let mut found_calls: HashMap<&str, u64> = HashMap::new();
    for i in 0..c.start_ns.len() {
        let Some(&kernel) = launches.get(&(c.pid[i], c.correlation_id[i])) else {
            continue;
        };
        *found_calls.entry(kernel).or_default() += 1;
        let t = c.start_ns[i];
        let Some(mine) = ranges.get(&(c.pid[i], c.tid[i])) else {
            continue;
        };
        // The innermost range holding the call: the latest-starting one that has not ended.
        let upto = mine.partition_point(|&((s, _, _), _)| s <= t);
        let holding = mine[..upto]
            .iter()
            .rev()
            .take_while(|&&(_, reach)| reach >= t)
            .find(|&&((_, e, _), _)| e >= t);
        if let Some(&((_, _, op), _)) = holding {
            *tally.entry(kernel).or_default().entry(op).or_default() += 1;
        }
    }
    Ok(Enclosing(
        tally
            .into_iter()
            .filter_map(|(kernel, ops)| {
                let (op, n) = ops
                    .into_iter()
                    .max_by_key(|&(op, n)| (n, std::cmp::Reverse(op)))?;
                let all = found_calls.get(kernel).copied().unwrap_or(n);
                Some((kernel.to_owned(), (op.to_owned(), n, all)))
            })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_c10d_ranges_name_a_collective() {
        assert_eq!(
            collective_of_range("nccl:all_to_all, op_id = 999762"),
            Some("nccl:all_to_all")
        );
        assert_eq!(
            collective_of_range("nccl:all_reduce"),
            Some("nccl:all_reduce")
        );
        assert_eq!(collective_of_range("ncclSend"), None);
        assert_eq!(collective_of_range("ncclGroupStart"), None);
        assert_eq!(collective_of_range("nccl:"), None);
        assert_eq!(collective_of_range("aten::mul, op_id = 3"), None);
    }
}
