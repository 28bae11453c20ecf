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

    // Per (device, name) statistics, aggregated by polars over the rows in sweep order
    // (its mean and median are the ones every earlier report printed).
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
    drop(order);

    // Per (device, name) statistics.
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
    let mut kernels: HashMap<i64, Vec<KernelStat>> = HashMap::new();
    for i in 0..n_dev.len() {
        let name = trace.name(n_name[i]);
        let category = category_of
            .entry(n_name[i])
            .or_insert_with(|| categorizer.categorize(name).to_owned())
            .clone();
        kernels.entry(n_dev[i]).or_default().push(KernelStat {
            name: name.to_owned(),
            short_name: display_name(trace.name(n_short[i]), name),
            category,
            instances: n_inst[i] as u64,
            total_ns: n_total[i],
            mean_ns: n_mean[i],
            median_ns: n_median[i],
            min_ns: n_min[i],
            max_ns: n_max[i],
            exclusive_ns: n_excl[i],
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
