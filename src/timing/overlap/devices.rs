//! One summary per device: ops, kernels, busy and idle time, the window, the processes
//! that used it, and every op name ranked by exclusive time with its category.

use std::collections::HashMap;

use crate::categories::Categorizer;
use crate::exit::Result;
use crate::timing::labels::{display_name, NameLabels};
use crate::trace::{col, OpKind, Trace};
use crate::wire::analysis::{DeviceSummary, Dominant, KernelStat, ProcessRef};

/// Share of busy time from which one name dominates a device.
const DOMINANT_SHARE: f64 = 0.5;

use super::categories::category_totals;
use super::names::name_stats;
use super::sweep::{name_ranks, sweep_order};

/// Per-device summaries with every op name ranked by exclusive time.
pub fn device_summaries(trace: &Trace, categorizer: &Categorizer) -> Result<Vec<DeviceSummary>> {
    let mut frame = trace.ops.clone();
    if frame.should_rechunk() {
        frame.rechunk_mut();
    }
    let device = crate::trace::i32s(&frame, col::DEVICE)?;
    let pid = crate::trace::i32s(&frame, col::PID)?;
    let start = crate::trace::i64s(&frame, col::START)?;
    let end = crate::trace::i64s(&frame, col::END)?;
    let name = crate::trace::u32s(&frame, col::NAME)?;
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
    let stats = name_stats(
        &order,
        &buckets,
        name,
        &trace.short_names,
        start,
        end,
        &exclusive,
    );
    drop(order);
    drop(exclusive);

    // Which processes used each device.
    let mut pairs: std::collections::BTreeSet<(i64, i64)> = std::collections::BTreeSet::new();
    let mut last = None;
    for p in device.iter().copied().zip(pid.iter().copied()) {
        if last != Some(p) {
            pairs.insert((i64::from(p.0), i64::from(p.1)));
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
            // Set below, once the device's busy time is known.
            share_of_busy: 0.0,
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
        let window = we - ws;
        let share = |part: i64| {
            if busy > 0 {
                part as f64 / busy as f64
            } else {
                0.0
            }
        };
        for k in &mut ks {
            k.share_of_busy = share(k.exclusive_ns);
        }
        let mut categories = categories;
        for c in &mut categories {
            c.share_of_busy = Some(share(c.exclusive_ns));
        }
        // `ks` is ranked by exclusive time: the first name is the only candidate.
        let dominant = ks
            .first()
            .filter(|k| share(k.exclusive_ns) >= DOMINANT_SHARE)
            .map(|k| Dominant {
                short_name: k.short_name.clone(),
                share_of_busy: share(k.exclusive_ns),
                exclusive_ns: k.exclusive_ns,
                instances: k.instances,
            });
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
            window_ns: window,
            busy_fraction: if window > 0 {
                busy as f64 / window as f64
            } else {
                0.0
            },
            idle_ns: window - busy,
            dominant,
            kernels_by_name: ks,
            categories,
        });
    }
    Ok(out)
}
