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

    // Distinct names sharing a short name get labels that tell them apart, the same on
    // every device.
    let labels = NameLabels::new(
        kernels
            .values()
            .flatten()
            .map(|k| (k.name.as_str(), k.short_name.as_str())),
    );
    if !labels.is_empty() {
        for k in kernels.values_mut().flatten() {
            let l = labels.get(&k.name, &k.short_name).to_owned();
            k.short_name = l;
        }
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

/// Labels that tell distinct demangled names apart when they share a display name.
///
/// Two names that share a short name get the short name followed by the template
/// arguments that differ between them (namespaces, casts and lambda bodies stripped), e.g.
/// `vectorized_elementwise_kernel<FillFunctor<long>>`; names still equal after that get a
/// stable `#2`, `#3` suffix in full-name order. A name no other name shares its short name
/// with keeps its short name. Distinct full names never get the same label.
#[derive(Debug, Default, Clone)]
pub struct NameLabels {
    by_full: HashMap<String, String>,
}

impl NameLabels {
    /// Labels for every distinct `(full, short)` pair given (duplicates are fine).
    pub fn new<'a>(names: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut by_short: HashMap<&str, Vec<&str>> = HashMap::new();
        for (full, short) in names {
            let v = by_short.entry(short).or_default();
            if !v.contains(&full) {
                v.push(full);
            }
        }
        let mut by_full = HashMap::new();
        for (short, mut fulls) in by_short {
            if fulls.len() < 2 {
                continue;
            }
            fulls.sort_unstable();
            let args: Vec<Vec<String>> = fulls.iter().map(|f| template_args(f, short)).collect();
            let width = args.iter().map(Vec::len).max().unwrap_or(0);
            // Greedily add the argument position that separates the most names, until no
            // position separates more: the shortest label set that tells them apart.
            let distinct = |pos: &[usize]| {
                let mut keys: Vec<Vec<&str>> = args
                    .iter()
                    .map(|a| {
                        pos.iter()
                            .map(|&i| a.get(i).map_or("", String::as_str))
                            .collect()
                    })
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                keys.len()
            };
            let mut differs: Vec<usize> = Vec::new();
            let mut best = 1;
            loop {
                let pick = (0..width)
                    .filter(|i| !differs.contains(i))
                    .map(|i| {
                        let mut p = differs.clone();
                        p.push(i);
                        (distinct(&p), i)
                    })
                    .max_by(|x, y| x.0.cmp(&y.0).then(y.1.cmp(&x.1)));
                match pick {
                    Some((n, i)) if n > best => {
                        best = n;
                        differs.push(i);
                    }
                    _ => break,
                }
            }
            differs.sort_unstable();
            let mut labels: Vec<String> = args
                .iter()
                .map(|a| {
                    let parts: Vec<&str> = differs
                        .iter()
                        .map(|&i| a.get(i).map_or("", String::as_str))
                        .collect();
                    if parts.iter().all(|p| p.is_empty()) {
                        return short.to_owned();
                    }
                    let mut inner = parts.join(", ");
                    // Keep labels table-sized (60 characters, ` #NN` included); the suffix
                    // pass below still separates any that the cut made equal.
                    let room = 56usize.saturating_sub(short.chars().count() + 2).max(12);
                    if inner.chars().count() > room {
                        inner = inner.chars().take(room - 1).collect::<String>() + "…";
                    }
                    format!("{short}<{inner}>")
                })
                .collect();
            // Still equal: a stable ordinal in full-name order (fulls are sorted).
            let mut seen: HashMap<String, usize> = HashMap::new();
            for l in labels.iter_mut() {
                let n = seen.entry(l.clone()).or_insert(0);
                *n += 1;
                if *n > 1 {
                    l.push_str(&format!(" #{n}"));
                }
            }
            for (f, l) in fulls.into_iter().zip(labels) {
                by_full.insert(f.to_owned(), l);
            }
        }
        NameLabels { by_full }
    }

    /// The label of `full`, or `short` when no other name shares it.
    pub fn get<'a>(&'a self, full: &str, short: &'a str) -> &'a str {
        self.by_full.get(full).map_or(short, String::as_str)
    }

    /// Whether any name needed telling apart.
    pub fn is_empty(&self) -> bool {
        self.by_full.is_empty()
    }
}

/// The top-level template arguments of `full` after its short name, simplified for a
/// label; the parameter list when it has no template arguments.
fn template_args(full: &str, short: &str) -> Vec<String> {
    let from = full.find(short).map_or(0, |i| i + short.len());
    let rest = &full[from..];
    let Some(open) = rest.find(['<', '(']) else {
        return Vec::new();
    };
    let close_ch = if rest.as_bytes()[open] == b'<' {
        '>'
    } else {
        ')'
    };
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut start = open + 1;
    for (i, ch) in rest.char_indices().skip_while(|(i, _)| *i <= open) {
        match ch {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' if depth > 0 => depth -= 1,
            c if c == close_ch && depth == 0 => {
                args.push(simplify_arg(&rest[start..i]));
                return args;
            }
            ',' if depth == 0 => {
                args.push(simplify_arg(&rest[start..i]));
                start = i + ch.len_utf8();
            }
            _ => {}
        }
    }
    args.push(simplify_arg(&rest[start..]));
    args
}

/// One template argument made short: no `void`, no casts like `(int)`, no function
/// signature or lambda body after a callable's name, no namespace qualifiers.
fn simplify_arg(arg: &str) -> String {
    let mut s = arg.trim().trim_start_matches("void ").to_owned();
    for cast in [
        "(int)",
        "(unsigned long)",
        "(unsigned int)",
        "(long)",
        "(bool)",
        "(char)",
    ] {
        s = s.replace(cast, "");
    }
    // `f<…>(params)::[lambda …]` → `f<…>`: the signature is noise next to the name.
    let mut depth = 0i32;
    for (i, ch) in s.char_indices() {
        match ch {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && i > 0 => {
                s.truncate(i);
                break;
            }
            _ => {}
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        out.push_str(token);
        token.clear();
    };
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            // A qualifier: drop the identifier (or `<unnamed>`) before `::`.
            token.clear();
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            token.push(c);
        } else if c == '<' && token.is_empty() && s.contains("<unnamed>::") {
            // `<unnamed>` is a qualifier when followed by `::`; collect it as a token.
            token.push(c);
        } else if c == '>' && token == "<unnamed" {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
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
    fn shared_short_names_are_told_apart() {
        let a = "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, std::array<char *, (unsigned long)1>>(int, T2, T3)";
        let b = "void at::native::vectorized_elementwise_kernel<(int)2, at::native::FillFunctor<long>, std::array<char *, (unsigned long)1>>(int, T2, T3)";
        let c = "void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed>::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase &, T2)::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)";
        let d = "void at::native::vectorized_elementwise_kernel<(int)4, void at::native::<unnamed>::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase &, T2)::[lambda(float) (instance 2)], std::array<char *, (unsigned long)2>>(int, T2, T3)";
        let s = "vectorized_elementwise_kernel";
        let l = NameLabels::new([(a, s), (b, s), (c, s), (d, s), ("gemm_x", "gemm"), (a, s)]);
        // The functor argument alone separates a, b and the pow pair: only it is shown.
        assert_eq!(
            l.get(a, s),
            "vectorized_elementwise_kernel<FillFunctor<float>>"
        );
        assert_eq!(
            l.get(b, s),
            "vectorized_elementwise_kernel<FillFunctor<long>>"
        );
        // c and d differ only inside the lambda: same simplified label, then an ordinal in
        // full-name order ("instance 1" < "instance 2").
        let lc = l.get(c, s);
        // Cut to 60 characters so a terminal table shows all of it.
        assert_eq!(
            lc,
            "vectorized_elementwise_kernel<pow_tensor_scalar_kernel…>"
        );
        assert_eq!(lc.chars().count() + " #2".len(), 59);
        assert_eq!(l.get(d, s), format!("{lc} #2"));
        // A name alone under its short name keeps it.
        assert_eq!(l.get("gemm_x", "gemm"), "gemm");
        assert_eq!(l.get("unseen", "short"), "short");
    }

    #[test]
    fn display_names() {
        assert_eq!(display_name("", "void flash::fwd<128>(int)"), "flash::fwd");
        assert_eq!(display_name("gemm", "void cutlass::Kernel<...>"), "gemm");
        assert_eq!(display_name("", "[memcpy HtoD]"), "[memcpy HtoD]");
    }
}
