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

/// The ops frame sorted in sweep order (device, start, end, name) with `dur_ns` and
/// `exclusive_ns` columns added.
pub fn sweep_frame(trace: &Trace) -> Result<DataFrame> {
    let ranks = name_ranks(&trace.strings);
    let name_ids = crate::trace::u32s(&trace.ops, col::NAME)?;
    let name_rank: Vec<u32> = name_ids.iter().map(|&i| ranks[i as usize]).collect();
    let mut ops = trace.ops.select([
        col::DEVICE,
        col::PID,
        col::START,
        col::END,
        col::NAME,
        col::SHORT,
        col::KIND,
    ])?;
    ops.with_column(Column::new("name_rank".into(), name_rank))?;
    let sorted = ops
        .lazy()
        .with_column((col(col::END) - col(col::START)).alias("dur_ns"))
        .sort_by_exprs(
            [
                col(col::DEVICE),
                col(col::START),
                col(col::END),
                col("name_rank"),
            ],
            SortMultipleOptions::default(),
        )
        .collect()?;
    let device = i64_vec(&sorted, col::DEVICE)?;
    let start = i64_vec(&sorted, col::START)?;
    let end = i64_vec(&sorted, col::END)?;
    // One sweep per device: restart the running end at each device boundary.
    let mut exclusive = Vec::with_capacity(start.len());
    let mut lo = 0;
    while lo < device.len() {
        let mut hi = lo;
        while hi < device.len() && device[hi] == device[lo] {
            hi += 1;
        }
        exclusive.extend(exclusive_in_order(&start[lo..hi], &end[lo..hi]));
        lo = hi;
    }
    let mut sorted = sorted;
    sorted.with_column(Column::new("exclusive_ns".into(), exclusive))?;
    Ok(sorted)
}

/// Per-device summaries with every op name ranked by exclusive time.
pub fn device_summaries(trace: &Trace, categorizer: &Categorizer) -> Result<Vec<DeviceSummary>> {
    let swept = sweep_frame(trace)?;
    let kernel = OpKind::Kernel as u32;

    // Device totals.
    let totals = swept
        .clone()
        .lazy()
        .group_by([col(col::DEVICE)])
        .agg([
            len().alias("ops"),
            col(col::KIND).eq(lit(kernel)).sum().alias("kernels"),
            col("exclusive_ns").sum().alias("busy_ns"),
            col("dur_ns")
                .filter(col(col::KIND).eq(lit(kernel)))
                .sum()
                .alias("kernel_sum_ns"),
            col(col::START).min().alias("window_start_ns"),
            col(col::END).max().alias("window_end_ns"),
        ])
        .sort([col::DEVICE], SortMultipleOptions::default())
        .collect()?;

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
    let pids = swept
        .lazy()
        .select([col(col::DEVICE), col(col::PID)])
        .unique(None, UniqueKeepStrategy::First)
        .sort([col::DEVICE, col::PID], SortMultipleOptions::default())
        .collect()?;
    let process_names: HashMap<i64, &str> = trace
        .meta
        .process_names
        .iter()
        .map(|(p, n)| (*p, n.as_str()))
        .collect();
    let mut processes: HashMap<i64, Vec<ProcessRef>> = HashMap::new();
    for (d, p) in i64_vec(&pids, col::DEVICE)?
        .into_iter()
        .zip(i64_vec(&pids, col::PID)?)
    {
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

    let t_dev = i64_vec(&totals, col::DEVICE)?;
    let t_ops = f64_vec(&totals, "ops")?;
    let t_kernels = f64_vec(&totals, "kernels")?;
    let t_busy = i64_vec(&totals, "busy_ns")?;
    let t_ksum = i64_vec(&totals, "kernel_sum_ns")?;
    let t_ws = i64_vec(&totals, "window_start_ns")?;
    let t_we = i64_vec(&totals, "window_end_ns")?;
    let mut out = Vec::with_capacity(t_dev.len());
    for i in 0..t_dev.len() {
        let d = t_dev[i];
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
            ops: t_ops[i] as u64,
            kernels: t_kernels[i] as u64,
            busy_ns: t_busy[i],
            kernel_sum_ns: t_ksum[i],
            window_start_ns: t_ws[i],
            window_end_ns: t_we[i],
            idle_ns: (t_we[i] - t_ws[i]) - t_busy[i],
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
