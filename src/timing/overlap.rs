//! Per-device busy time and per-kernel exclusive (non-overlapped) time, computed on polars
//! frames with one sweep per device.
//!
//! The sweep is vLLM's gputrc2graph one, but per device: walk a device's ops in
//! (start, end, name) order keeping the latest end seen so far; each op is credited the
//! part of it past that running end. Σ exclusive = busy (the union length) on every
//! device by construction. Merging all GPUs into one sweep, as gputrc2graph does,
//! under-reports multi-GPU busy time, so the sweep restarts at every device.

use std::collections::HashMap;

use polars::prelude::*;

use crate::analysis::{CategoryStat, DeviceSummary, KernelStat, ProcessRef};
use crate::categories::Categorizer;
use crate::exit::Result;
use crate::trace::{col, OpKind, Trace};

/// Exclusive time of each interval, given intervals already in sweep order.
///
/// Each interval gets `max(0, end - max(start, running_end))`, where `running_end` is
/// the latest end among the intervals before it; zero-length or inverted intervals
/// get 0.
pub fn exclusive_in_order(start_ns: &[i64], end_ns: &[i64]) -> Vec<i64> {
    let mut out = Vec::with_capacity(start_ns.len());
    let mut running = i64::MIN;
    for (&s, &e) in start_ns.iter().zip(end_ns) {
        let from = s.max(running);
        out.push((e - from).max(0));
        running = running.max(e);
    }
    out
}

/// Rank of every interned name in string order, so ties sort by name identically
/// whatever order a source interned names in (nsys and Kineto intern differently).
pub fn name_ranks(strings: &[String]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..strings.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| strings[a as usize].cmp(&strings[b as usize]));
    let mut rank = vec![0u32; strings.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    rank
}

fn i64_vec(df: &DataFrame, name: &str) -> Result<Vec<i64>> {
    let ca = df.column(name)?.i64()?.rechunk();
    Ok(ca
        .cont_slice()
        .map(<[i64]>::to_vec)
        .unwrap_or_else(|_| ca.iter().map(|v| v.unwrap_or(0)).collect()))
}

fn u32_vec(df: &DataFrame, name: &str) -> Result<Vec<u32>> {
    let ca = df.column(name)?.u32()?.rechunk();
    Ok(ca
        .cont_slice()
        .map(<[u32]>::to_vec)
        .unwrap_or_else(|_| ca.iter().map(|v| v.unwrap_or(0)).collect()))
}

fn f64_vec(df: &DataFrame, name: &str) -> Result<Vec<f64>> {
    let s = df.column(name)?.cast(&DataType::Float64)?;
    Ok(s.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// Op row indices in sweep order (device, start, end, name rank), one slice per device
/// in ascending device order. Devices are few, so rows are bucketed by device first;
/// within a device they arrive as a few start-ordered runs (one per source table), which
/// the stable sort merges in near-linear time. A polars multi-column sort of the frame
/// cost ~700 MB of row encodings and gathered columns on a 4M-op report; this costs one
/// u32 per op.
fn sweep_order(
    device: &[i64],
    start: &[i64],
    end: &[i64],
    name: &[u32],
    ranks: &[u32],
) -> (Vec<u32>, Vec<(i64, std::ops::Range<usize>)>) {
    let mut counts: std::collections::BTreeMap<i64, usize> = Default::default();
    for &d in device {
        *counts.entry(d).or_default() += 1;
    }
    let mut at: HashMap<i64, usize> = HashMap::with_capacity(counts.len());
    let mut buckets = Vec::with_capacity(counts.len());
    let mut off = 0;
    for (&d, &n) in &counts {
        at.insert(d, off);
        buckets.push((d, off..off + n));
        off += n;
    }
    let mut order = vec![0u32; device.len()];
    for (i, d) in device.iter().enumerate() {
        let slot = at.get_mut(d).expect("every device was counted");
        order[*slot] = i as u32;
        *slot += 1;
    }
    for (_, r) in &buckets {
        order[r.clone()].sort_by_key(|&i| {
            let i = i as usize;
            (start[i], end[i], ranks[name[i] as usize])
        });
    }
    (order, buckets)
}

/// Per-device summaries with every op name ranked by exclusive time.
pub fn device_summaries(trace: &Trace, categorizer: &Categorizer) -> Result<Vec<DeviceSummary>> {
    let mut frame = trace.ops.clone();
    if frame.should_rechunk() {
        frame.rechunk_mut();
    }
    let device = crate::trace::i64s(&frame, col::DEVICE)?;
    let pid = crate::trace::i64s(&frame, col::PID)?;
    let start = crate::trace::i64s(&frame, col::START)?;
    let end = crate::trace::i64s(&frame, col::END)?;
    let name = crate::trace::u32s(&frame, col::NAME)?;
    let short = crate::trace::u32s(&frame, col::SHORT)?;
    let kind = crate::trace::u32s(&frame, col::KIND)?;
    let ranks = name_ranks(&trace.strings);
    let (order, buckets) = sweep_order(device, start, end, name, &ranks);
    let kernel = OpKind::Kernel as u32;

    // One sweep per device (the running end restarts at each device), with the device
    // totals on the way. Sums wrap as polars' do, so hostile durations give the same.
    let mut exclusive = vec![0i64; order.len()];
    let mut totals = Vec::with_capacity(buckets.len());
    for (d, r) in &buckets {
        let mut running = i64::MIN;
        let (mut kernels, mut busy, mut ksum) = (0u64, 0i64, 0i64);
        let (mut ws, mut we) = (i64::MAX, i64::MIN);
        for k in r.clone() {
            let i = order[k] as usize;
            let (s, e) = (start[i], end[i]);
            let x = (e - s.max(running)).max(0);
            running = running.max(e);
            exclusive[k] = x;
            busy = busy.wrapping_add(x);
            if kind[i] == kernel {
                kernels += 1;
                ksum = ksum.wrapping_add(e.wrapping_sub(s));
            }
            ws = ws.min(s);
            we = we.max(e);
        }
        totals.push((*d, r.len() as u64, kernels, busy, ksum, ws, we));
    }

    // Per (device, name) statistics.
    let stats = match name_stats(&order, &buckets, name, short, start, end, &exclusive) {
        Some(st) => st,
        None => polars_name_stats(&order, device, name, short, start, end, exclusive)?,
    };
    drop(order);

    // Which processes used each device.
    let mut pairs: std::collections::BTreeSet<(i64, i64)> = Default::default();
    let mut last = None;
    for p in device.iter().copied().zip(pid.iter().copied()) {
        if last != Some(p) {
            pairs.insert(p);
            last = Some(p);
        }
    }
    let process_names: HashMap<i64, &str> = trace
        .meta
        .process_names
        .iter()
        .map(|(p, n)| (*p, n.as_str()))
        .collect();
    let mut processes: HashMap<i64, Vec<ProcessRef>> = HashMap::new();
    for (d, p) in pairs {
        processes.entry(d).or_default().push(ProcessRef {
            pid: p,
            name: process_names.get(&p).map(|s| (*s).to_owned()),
        });
    }

    // Categorize each distinct name once.
    let mut category_of: HashMap<u32, String> = HashMap::new();
    let mut kernels: HashMap<i64, Vec<KernelStat>> = HashMap::new();
    for g in stats {
        let name = trace.name(g.name);
        let category = category_of
            .entry(g.name)
            .or_insert_with(|| categorizer.categorize(name).to_owned())
            .clone();
        kernels.entry(g.device).or_default().push(KernelStat {
            name: name.to_owned(),
            short_name: display_name(trace.name(g.short), name),
            category,
            instances: g.instances,
            total_ns: g.total_ns,
            mean_ns: g.mean_ns,
            median_ns: g.median_ns,
            min_ns: g.min_ns,
            max_ns: g.max_ns,
            exclusive_ns: g.exclusive_ns,
        });
    }

    let mut out = Vec::with_capacity(totals.len());
    for (d, ops, kernels_n, busy, ksum, ws, we) in totals {
        let info = trace.devices.iter().find(|x| x.id == d);
        let mut ks = kernels.remove(&d).unwrap_or_default();
        ks.sort_by(|a, b| {
            b.exclusive_ns
                .cmp(&a.exclusive_ns)
                .then(b.total_ns.cmp(&a.total_ns))
                .then_with(|| a.name.cmp(&b.name))
        });
        let categories = category_totals(
            ks.iter()
                .map(|k| (k.category.as_str(), k.instances, k.total_ns, k.exclusive_ns)),
        );
        out.push(DeviceSummary {
            device: d,
            name: info.and_then(|x| x.name.clone()),
            memory_bandwidth_bytes_per_s: info.and_then(|x| x.memory_bandwidth_bytes_per_s),
            processes: processes.remove(&d).unwrap_or_default(),
            ops,
            kernels: kernels_n,
            busy_ns: busy,
            kernel_sum_ns: ksum,
            window_start_ns: ws,
            window_end_ns: we,
            idle_ns: (we - ws) - busy,
            kernels_by_name: ks,
            categories,
        });
    }
    Ok(out)
}

/// One (device, name) group's statistics.
struct NameStat {
    device: i64,
    name: u32,
    /// Short name of the group's first op in sweep order.
    short: u32,
    instances: u64,
    total_ns: i64,
    mean_ns: f64,
    median_ns: f64,
    min_ns: i64,
    max_ns: i64,
    exclusive_ns: i64,
}

/// Largest |duration| and |Σ durations| of a group for which [`name_stats`] computes
/// mean and median in exact arithmetic: every value, partial sum and midpoint is then an
/// f64 without rounding, so any summation order (polars' Kahan sum included) and either
/// interpolation formula give the same bits.
const EXACT: i128 = 1 << 52;

/// Per (device, name) statistics in one pass over the sweep order, plus a median by
/// selection on each group's durations. `None` when some group leaves the exact range
/// (durations near 2^52 ns, only in damaged reports): the caller then uses polars.
fn name_stats(
    order: &[u32],
    buckets: &[(i64, std::ops::Range<usize>)],
    name: &[u32],
    short: &[u32],
    start: &[i64],
    end: &[i64],
    exclusive: &[i64],
) -> Option<Vec<NameStat>> {
    let n_names = name.iter().map(|&n| n as usize + 1).max().unwrap_or(0);
    let mut slot = vec![u32::MAX; n_names];
    let mut touched: Vec<u32> = Vec::new();
    let mut groups: Vec<NameStat> = Vec::new();
    let mut abs_sum: Vec<i128> = Vec::new();
    let mut group_of = vec![0u32; order.len()];
    for (d, r) in buckets {
        for k in r.clone() {
            let i = order[k] as usize;
            let nm = name[i];
            if slot[nm as usize] == u32::MAX {
                slot[nm as usize] = groups.len() as u32;
                touched.push(nm);
                groups.push(NameStat {
                    device: *d,
                    name: nm,
                    short: short[i],
                    instances: 0,
                    total_ns: 0,
                    mean_ns: 0.0,
                    median_ns: 0.0,
                    min_ns: i64::MAX,
                    max_ns: i64::MIN,
                    exclusive_ns: 0,
                });
                abs_sum.push(0);
            }
            let g = slot[nm as usize];
            group_of[k] = g;
            let dur = end[i].wrapping_sub(start[i]);
            let st = &mut groups[g as usize];
            st.instances += 1;
            st.total_ns = st.total_ns.wrapping_add(dur);
            st.min_ns = st.min_ns.min(dur);
            st.max_ns = st.max_ns.max(dur);
            st.exclusive_ns = st.exclusive_ns.wrapping_add(exclusive[k]);
            abs_sum[g as usize] += (dur as i128).abs();
        }
        for nm in touched.drain(..) {
            slot[nm as usize] = u32::MAX;
        }
    }
    if abs_sum.iter().any(|&s| s >= EXACT) {
        return None;
    }
    // Durations laid out group by group, for the medians.
    let mut at: Vec<usize> = Vec::with_capacity(groups.len());
    let mut off = 0;
    for g in &groups {
        at.push(off);
        off += g.instances as usize;
    }
    let mut durs = vec![0i64; order.len()];
    for (k, &g) in group_of.iter().enumerate() {
        let i = order[k] as usize;
        durs[at[g as usize]] = end[i].wrapping_sub(start[i]);
        at[g as usize] += 1;
    }
    drop(group_of);
    let mut lo = 0;
    for g in &mut groups {
        let n = g.instances as usize;
        let v = &mut durs[lo..lo + n];
        lo += n;
        g.mean_ns = g.total_ns as f64 / n as f64;
        let (_, &mut upper, _) = v.select_nth_unstable(n / 2);
        let median = if n % 2 == 1 {
            upper as f64
        } else {
            let lower = v[..n / 2].iter().copied().max().unwrap_or(upper);
            let (l, u) = (lower as f64, upper as f64);
            if l == u {
                l
            } else {
                0.5 * (u - l) + l
            }
        };
        g.median_ns = median;
    }
    Some(groups)
}

/// [`name_stats`] through polars' group_by, for reports whose durations leave its exact
/// range (the rows in sweep order, so mean, median and first are polars' own).
fn polars_name_stats(
    order: &[u32],
    device: &[i64],
    name: &[u32],
    short: &[u32],
    start: &[i64],
    end: &[i64],
    exclusive: Vec<i64>,
) -> Result<Vec<NameStat>> {
    let gather_i64 = |v: &[i64]| -> Vec<i64> { order.iter().map(|&i| v[i as usize]).collect() };
    let gather_u32 = |v: &[u32]| -> Vec<u32> { order.iter().map(|&i| v[i as usize]).collect() };
    let dur: Vec<i64> = order
        .iter()
        .map(|&i| end[i as usize].wrapping_sub(start[i as usize]))
        .collect();
    let i64c = |n: &str, v: Vec<i64>| Int64Chunked::from_vec(n.into(), v).into_column();
    let u32c = |n: &str, v: Vec<u32>| UInt32Chunked::from_vec(n.into(), v).into_column();
    let swept = DataFrame::new_infer_height(vec![
        i64c(col::DEVICE, gather_i64(device)),
        u32c(col::NAME, gather_u32(name)),
        u32c(col::SHORT, gather_u32(short)),
        i64c("dur_ns", dur),
        i64c("exclusive_ns", exclusive),
    ])?;

    let by_name = swept
        .clone()
        .lazy()
        .group_by([col(col::DEVICE), col(col::NAME)])
        .agg([
            len().alias("instances"),
            col(col::SHORT).first().alias(col::SHORT),
            col("dur_ns").sum().alias("total_ns"),
            col("dur_ns").mean().alias("mean_ns"),
            col("dur_ns").median().alias("median_ns"),
            col("dur_ns").min().alias("min_ns"),
            col("dur_ns").max().alias("max_ns"),
            col("exclusive_ns").sum().alias("exclusive_ns"),
        ])
        .collect()?;

    let n_dev = i64_vec(&by_name, col::DEVICE)?;
    let n_name = u32_vec(&by_name, col::NAME)?;
    let n_short = u32_vec(&by_name, col::SHORT)?;
    let n_inst = f64_vec(&by_name, "instances")?;
    let n_total = i64_vec(&by_name, "total_ns")?;
    let n_mean = f64_vec(&by_name, "mean_ns")?;
    let n_median = f64_vec(&by_name, "median_ns")?;
    let n_min = i64_vec(&by_name, "min_ns")?;
    let n_max = i64_vec(&by_name, "max_ns")?;
    let n_excl = i64_vec(&by_name, "exclusive_ns")?;
    Ok((0..n_dev.len())
        .map(|i| NameStat {
            device: n_dev[i],
            name: n_name[i],
            short: n_short[i],
            instances: n_inst[i] as u64,
            total_ns: n_total[i],
            mean_ns: n_mean[i],
            median_ns: n_median[i],
            min_ns: n_min[i],
            max_ns: n_max[i],
            exclusive_ns: n_excl[i],
        })
        .collect())
}

/// Category totals from per-name rows `(category, instances, total_ns, exclusive_ns)`,
/// ranked by exclusive time. Used for a device and for a single step.
pub fn category_totals<'a>(
    rows: impl IntoIterator<Item = (&'a str, u64, i64, i64)>,
) -> Vec<CategoryStat> {
    let mut by: Vec<CategoryStat> = Vec::new();
    for (category, instances, total_ns, exclusive_ns) in rows {
        match by.iter_mut().find(|c| c.category == category) {
            Some(c) => {
                c.instances += instances;
                c.total_ns += total_ns;
                c.exclusive_ns += exclusive_ns;
            }
            None => by.push(CategoryStat {
                category: category.to_owned(),
                instances,
                total_ns,
                exclusive_ns,
            }),
        }
    }
    by.sort_by(|a, b| {
        b.exclusive_ns
            .cmp(&a.exclusive_ns)
            .then_with(|| a.category.cmp(&b.category))
    });
    by
}

/// A readable display name: the source's short name when it has one, else the demangled
/// name cut before its argument list and template arguments.
pub fn display_name(short: &str, full: &str) -> String {
    if !short.is_empty() {
        return short.to_owned();
    }
    let mut s = full;
    if let Some(rest) = s.strip_prefix("void ") {
        s = rest;
    }
    let cut = s.find(['(', '<']).unwrap_or(s.len());
    let head = s[..cut].trim();
    if head.is_empty() {
        full.to_owned()
    } else {
        head.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_credits_only_new_time() {
        // [0,10) [5,15) [20,30) [22,25): union 25, exclusive 10,5,10,0.
        let s = [0, 5, 20, 22];
        let e = [10, 15, 30, 25];
        assert_eq!(exclusive_in_order(&s, &e), vec![10, 5, 10, 0]);
        // A zero-length and an inverted interval get nothing.
        assert_eq!(exclusive_in_order(&[0, 3, 4], &[5, 3, 2]), vec![5, 0, 0]);
    }

    /// Ops on two devices, interleaved and out of order: (device, start, end, name).
    fn ops() -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<u32>) {
        let rows: &[(i64, i64, i64, u32)] = &[
            (1, 50, 57, 0),
            (0, 10, 20, 0),
            (0, 0, 5, 1),
            (1, 0, 4, 1),
            (0, 12, 13, 0),
            (0, 30, 33, 0),
            (0, 40, 49, 0),
            (1, 60, 61, 0),
            (0, 2, 9, 1),
        ];
        (
            rows.iter().map(|r| r.0).collect(),
            rows.iter().map(|r| r.1).collect(),
            rows.iter().map(|r| r.2).collect(),
            rows.iter().map(|r| r.3).collect(),
        )
    }

    #[test]
    fn sweep_order_groups_devices_then_sorts_by_start() {
        let (d, s, e, n) = ops();
        let (order, buckets) = sweep_order(&d, &s, &e, &n, &[0, 1]);
        assert_eq!(order, vec![2, 8, 1, 4, 5, 6, 3, 0, 7]);
        assert_eq!(buckets, vec![(0, 0..6), (1, 6..9)]);
    }

    #[test]
    fn name_stats_match_by_hand_and_polars() {
        let (d, s, e, n) = ops();
        let (order, buckets) = sweep_order(&d, &s, &e, &n, &[0, 1]);
        let st: Vec<i64> = order.iter().map(|&i| s[i as usize]).collect();
        let en: Vec<i64> = order.iter().map(|&i| e[i as usize]).collect();
        let mut excl = Vec::new();
        for (_, r) in &buckets {
            excl.extend(exclusive_in_order(&st[r.clone()], &en[r.clone()]));
        }
        let short = [7u32, 8];
        let short: Vec<u32> = n.iter().map(|&x| short[x as usize]).collect();
        let fast = name_stats(&order, &buckets, &n, &short, &s, &e, &excl).unwrap();
        // Device 0, name 0: durations 10, 1, 3, 9 → total 23, mean 5.75, median
        // (3 + 9) / 2 = 6; exclusive 10 + 0 + 3 + 9 (the [12,13) op is inside [10,20)).
        let g = &fast[1];
        assert_eq!((g.device, g.name, g.short, g.instances), (0, 0, 7, 4));
        assert_eq!(
            (g.total_ns, g.min_ns, g.max_ns, g.exclusive_ns),
            (23, 1, 10, 22)
        );
        assert_eq!((g.mean_ns, g.median_ns), (5.75, 6.0));
        // Device 0, name 1: [0,5) and [2,9) → durations 5, 7, exclusive 5 + 4.
        let g = &fast[0];
        assert_eq!((g.device, g.name, g.instances, g.total_ns), (0, 1, 2, 12));
        assert_eq!((g.median_ns, g.exclusive_ns), (6.0, 9));
        // Device 1, name 0: durations 7, 1 (odd counts take the middle value elsewhere).
        assert_eq!(
            (fast[3].device, fast[3].instances, fast[3].median_ns),
            (1, 2, 4.0)
        );
        // polars' group_by on the same rows agrees on every field.
        let slow = polars_name_stats(&order, &d, &n, &short, &s, &e, excl.clone()).unwrap();
        let key = |g: &NameStat| {
            (
                g.device,
                g.name,
                g.short,
                g.instances,
                g.total_ns,
                g.mean_ns.to_bits(),
                g.median_ns.to_bits(),
                g.min_ns,
                g.max_ns,
                g.exclusive_ns,
            )
        };
        let mut a: Vec<_> = fast.iter().map(key).collect();
        let mut b: Vec<_> = slow.iter().map(key).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn name_stats_leave_huge_durations_to_polars() {
        let (d, s, e, n) = (vec![0, 0], vec![0, 1], vec![1 << 52, 3], vec![0u32, 0]);
        let (order, buckets) = sweep_order(&d, &s, &e, &n, &[0]);
        assert!(name_stats(&order, &buckets, &n, &[0, 0], &s, &e, &[1 << 52, 0]).is_none());
    }

    #[test]
    fn ranks_follow_string_order() {
        let strings = vec!["b".to_owned(), "a".to_owned(), "c".to_owned()];
        assert_eq!(name_ranks(&strings), vec![1, 0, 2]);
    }

    #[test]
    fn display_names() {
        assert_eq!(display_name("", "void flash::fwd<128>(int)"), "flash::fwd");
        assert_eq!(display_name("gemm", "void cutlass::Kernel<...>"), "gemm");
        assert_eq!(display_name("", "[memcpy HtoD]"), "[memcpy HtoD]");
    }
}
