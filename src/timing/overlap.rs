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
    let mut counts: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
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
    let mut pairs: std::collections::BTreeSet<(i64, i64)> = std::collections::BTreeSet::new();
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
            for l in &mut labels {
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
