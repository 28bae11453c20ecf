//! Steps into per-rank series: order, period, idle time, per-kind summaries, rank
//! alignment, and the GPU time no step accounts for.

use std::collections::HashMap;

use super::found::{Found, Meta};
use super::index::{gpu_annotations, union_ns};
use super::project::Raw;
use super::StepOptions;
use crate::exit::Result;
use crate::timing::overlap::category_totals;
use crate::timing::par;
use crate::trace::{OpsView, Trace};
use crate::wire::steps::{AlignedStep, OutsideSteps, Series, Step};

/// Fewest steps (or ops, ×4096) worth a thread of their own.
const MIN_CHUNK: usize = 64;

pub(crate) fn assemble(
    trace: &Trace,
    ops: &OpsView<'_>,
    meta: Meta,
    raws: Vec<Raw>,
    claimed: &[bool],
    opts: &StepOptions,
) -> Result<Found> {
    // Series: one per (pid, device), in host order (GPU order when there is no host
    // range). A step that launched nothing joins its process's device series.
    let mut pid_device: HashMap<i64, i64> = HashMap::new();
    for r in &raws {
        if let Some(d) = r.m.device {
            pid_device.entry(r.pid).or_insert(d);
        }
    }
    let dev_of = |r: &Raw| r.m.device.or_else(|| pid_device.get(&r.pid).copied());
    let mut keys: Vec<(i64, Option<i64>)> = raws.iter().map(|r| (r.pid, dev_of(r))).collect();
    keys.sort();
    keys.dedup();
    let gpu_ann = gpu_annotations(trace);
    // Each raw record made a step on its own: in chunks of steps on the stage threads.
    let mut steps: Vec<Step> = par::map_vec(raws, opts.workers, MIN_CHUNK, |chunk| {
        chunk
            .into_iter()
            .map(|r| {
                let device = dev_of(&r);
                let series = keys.binary_search(&(r.pid, device)).unwrap_or(0);
                let wall = match (r.m.gpu_start, r.m.gpu_end) {
                    (Some(s), Some(e)) => Some(e - s),
                    _ => None,
                };
                let (ann_s, ann_e) = match (r.name_id, r.m.device, r.m.gpu_start, r.m.gpu_end) {
                    (Some(id), Some(d), Some(s), Some(e)) => gpu_ann
                        .get(&(d, id))
                        .and_then(|v| v.iter().find(|(a, b)| *a < e && *b > s).copied())
                        .map_or((None, None), |(a, b)| (Some(a), Some(b))),
                    _ => (None, None),
                };
                Step {
                    index: 0,
                    series,
                    pid: r.pid,
                    tid: r.tid,
                    device,
                    name: r.name,
                    domain: r.domain,
                    found_by: r.found_by,
                    kind: r.kind,
                    kind_guess: r.kind_guess,
                    kind_evidence: None,
                    batch_guess: None,
                    batch_evidence: None,
                    tokens_guess: None,
                    tokens_evidence: None,
                    composition: r.composition,
                    cpu_start_ns: r.cpu.map(|c| c.0),
                    cpu_end_ns: r.cpu.map(|c| c.1),
                    cpu_ns: r.cpu.map(|c| c.1 - c.0),
                    gpu_start_ns: r.m.gpu_start,
                    gpu_end_ns: r.m.gpu_end,
                    wall_ns: wall,
                    period_ns: None,
                    idle_before_ns: None,
                    busy_ns: r.m.busy,
                    gap_ns: wall.map(|w| w - r.m.busy),
                    kernels: r.m.kernels,
                    ops: r.m.all_kernels.iter().map(|k| k.instances).sum(),
                    tail_busy_ns: r.tail.busy,
                    tail_kernels: r.tail.kernels,
                    tail_ops: r.tail.ops,
                    graph_replays: r.m.graph_replays,
                    launches: r.launches,
                    launch_host_ns: r.launch_host_ns,
                    exposed_comm_ns: r.m.exposed_comm,
                    longest_host_call: r.longest,
                    annotation_gpu_start_ns: ann_s,
                    annotation_gpu_end_ns: ann_e,
                    top_kernels: r
                        .m
                        .all_kernels
                        .iter()
                        .take(opts.top_kernels)
                        .cloned()
                        .collect(),
                    categories: category_totals(
                        r.m.all_kernels
                            .iter()
                            .map(|k| (&*k.category, k.instances, k.total_ns, k.exclusive_ns)),
                    ),
                    attribution: None,
                    all_kernels: r.m.all_kernels,
                }
            })
            .collect()
    })?;
    time_order(&mut steps);
    // Period and idle-before within each series, over steps with GPU work.
    let mut series: Vec<Series> = keys
        .iter()
        .map(|&(pid, device)| Series {
            pid,
            device,
            steps: 0,
        })
        .collect();
    let mut i = 0;
    while i < steps.len() {
        let s = steps[i].series;
        let mut j = i;
        while j < steps.len() && steps[j].series == s {
            j += 1;
        }
        series[s].steps = j - i;
        for (n, k) in (i..j).enumerate() {
            steps[k].index = n;
        }
        let gpu: Vec<usize> = (i..j)
            .filter(|&k| steps[k].gpu_start_ns.is_some())
            .collect();
        for w in gpu.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (next_start, prev_end) = (
                steps[b].gpu_start_ns.unwrap_or(0),
                steps[a].gpu_end_ns.unwrap_or(0),
            );
            steps[a].period_ns = Some(next_start - steps[a].gpu_start_ns.unwrap_or(0));
            steps[b].idle_before_ns = Some(next_start - prev_end);
        }
        i = j;
    }
    let ranks = align_ranks(&steps, &series);
    let outside_steps = outside(ops, &steps, &series, claimed, opts.workers)?;
    Ok(Found {
        meta,
        series,
        outside_steps,
        ranks,
        steps,
    })
}

/// Each series' steps as one timeline: those with GPU work in GPU-start order (periods and
/// idle times are read between neighbours), and each step without GPU work placed by its
/// host start, just before the first step with GPU work whose host start (GPU start when
/// it has no host span) is later. A linear merge of the two orders.
fn time_order(steps: &mut Vec<Step>) {
    steps.sort_by_key(|s| {
        (
            s.series,
            s.gpu_start_ns.is_none(),
            s.gpu_start_ns.or(s.cpu_start_ns),
        )
    });
    let mut merged: Vec<usize> = Vec::with_capacity(steps.len());
    let mut i = 0;
    while i < steps.len() {
        let series = steps[i].series;
        let end = i + steps[i..].partition_point(|s| s.series == series);
        let idle = i + steps[i..end].partition_point(|s| s.gpu_start_ns.is_some());
        let host = |s: &Step| s.cpu_start_ns.or(s.gpu_start_ns);
        let (mut g, mut n) = (i, idle);
        while g < idle || n < end {
            let take_idle = n < end
                && (g == idle
                    || host(&steps[n]).is_some_and(|t| host(&steps[g]).is_none_or(|h| t < h)));
            if take_idle {
                merged.push(n);
                n += 1;
            } else {
                merged.push(g);
                g += 1;
            }
        }
        i = end;
    }
    let mut rank = vec![0usize; steps.len()];
    for (pos, &k) in merged.iter().enumerate() {
        rank[k] = pos;
    }
    let mut keyed: Vec<(usize, Step)> = rank.into_iter().zip(steps.drain(..)).collect();
    keyed.sort_unstable_by_key(|k| k.0);
    steps.extend(keyed.into_iter().map(|k| k.1));
}

/// Per series, the union of its ops that no step claimed, split at the first step's
/// GPU start and the last step's GPU end, next to the union of all its ops.
fn outside(
    o: &OpsView<'_>,
    steps: &[Step],
    series: &[Series],
    claimed: &[bool],
    threads: usize,
) -> Result<Vec<OutsideSteps>> {
    let key: HashMap<(i64, i64), usize> = series
        .iter()
        .enumerate()
        .filter_map(|(k, s)| s.device.map(|d| ((s.pid, d), k)))
        .collect();
    let mut bounds: Vec<(i64, i64)> = vec![(i64::MAX, i64::MIN); series.len()];
    for s in steps {
        if let (Some(a), Some(b)) = (s.gpu_start_ns, s.gpu_end_ns) {
            let x = &mut bounds[s.series];
            *x = (x.0.min(a), x.1.max(b));
        }
    }
    // Per series: all ops, and the unclaimed ones by where they fall; each chunk of ops
    // on its own thread, the chunks' lists joined in op order.
    let chunks = par::map_chunks(claimed.len(), threads, MIN_CHUNK << 12, |r| {
        vec![sort_out(o, r, claimed, &key, &bounds, series.len())]
    })?;
    // The first chunk's lists are taken as they are (one thread: no copy), the rest
    // appended in order.
    let mut chunks = chunks.into_iter();
    let mut lists: Vec<[Vec<u32>; 4]> = chunks
        .next()
        .unwrap_or_else(|| vec![Default::default(); series.len()]);
    for mut c in chunks {
        for (k, l) in lists.iter_mut().enumerate() {
            for (p, part) in l.iter_mut().enumerate() {
                part.append(&mut c[k][p]);
            }
        }
    }
    // The unions, one series (a device) per thread.
    let kept: Vec<(usize, [Vec<u32>; 4])> = lists
        .into_iter()
        .enumerate()
        .filter(|(k, _)| series[*k].device.is_some())
        .collect();
    par::map_vec(kept, threads, 1, |chunk| {
        chunk
            .into_iter()
            .map(|(k, [mut b, mut m, mut a, mut all])| OutsideSteps {
                series: k,
                before_ns: union_ns(o, &mut b),
                between_ns: union_ns(o, &mut m),
                after_ns: union_ns(o, &mut a),
                busy_ns: union_ns(o, &mut all),
            })
            .collect()
    })
}

/// The ops of `rows` by series: (unclaimed before the first step's GPU start, between,
/// after the last step's GPU end, all), per series.
fn sort_out(
    o: &OpsView<'_>,
    rows: std::ops::Range<usize>,
    claimed: &[bool],
    key: &HashMap<(i64, i64), usize>,
    bounds: &[(i64, i64)],
    n_series: usize,
) -> Vec<[Vec<u32>; 4]> {
    let mut out: Vec<[Vec<u32>; 4]> = vec![Default::default(); n_series];
    // Ops come in long runs of one (process, device): look the series up where it changes.
    let mut last: Option<((i32, i32), Option<usize>)> = None;
    for i in rows {
        let pd = (o.pid[i], o.device[i]);
        let k = match last {
            Some((l, k)) if l == pd => k,
            _ => key.get(&(i64::from(pd.0), i64::from(pd.1))).copied(),
        };
        last = Some((pd, k));
        let Some(k) = k else {
            continue;
        };
        out[k][3].push(i as u32);
        if claimed[i] {
            continue;
        }
        let (first, last) = bounds[k];
        let part = if o.start_ns[i] < first {
            0
        } else if o.start_ns[i] >= last {
            2
        } else {
            1
        };
        out[k][part].push(i as u32);
    }
    out
}

/// With several ranks, align their GPU steps by order and name the slowest per step.
fn align_ranks(steps: &[Step], series: &[Series]) -> Vec<AlignedStep> {
    let with_gpu: Vec<usize> = (0..series.len())
        .filter(|&s| series[s].device.is_some())
        .collect();
    if with_gpu.len() < 2 {
        return Vec::new();
    }
    let per: Vec<Vec<&Step>> = with_gpu
        .iter()
        .map(|&s| {
            steps
                .iter()
                .filter(|x| x.series == s && x.wall_ns.is_some())
                .collect()
        })
        .collect();
    let n = per.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .map(|i| {
            let (mut best, mut max_w, mut min_w) = (0, i64::MIN, i64::MAX);
            for (r, v) in per.iter().enumerate() {
                let w = v[i].wall_ns.unwrap_or(0);
                if w > max_w {
                    max_w = w;
                    best = r;
                }
                min_w = min_w.min(w);
            }
            let s = with_gpu[best];
            AlignedStep {
                index: i,
                slowest_series: s,
                slowest_pid: series[s].pid,
                slowest_device: series[s].device,
                max_wall_ns: max_w,
                min_wall_ns: min_w,
            }
        })
        .collect()
}
