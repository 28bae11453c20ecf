//! What the trace itself adds to the attribution once the steps are priced, as values the
//! report is assembled from: each step's measured DRAM throughput from the GPU's counters
//! (nsys `--gpu-metrics-devices`), and each group with its median step's kernels in launch
//! order read — the measured DRAM throughput per class (which then decides shape 2 vs 4,
//! not the byte model) and the per-layer view.

use crate::categories::{class_of, Categorizer};
use crate::exit::Result;
use crate::timing::overlap::exclusive_in_order;
use crate::trace::{GpuMetric, GpuMetricSeries, OpKind, Trace};
use crate::wire::attribution::{ClassAttribution, ClassShape, GroupAttribution, KernelClass};
use crate::wire::steps::{Step, StepKind};

use super::layers::{self, Geometry, Kernel};
use super::AT_ROOF_FACTOR;

/// The DRAM read and write series of one device.
fn dram(trace: &Trace, device: i64) -> Option<(&GpuMetricSeries, &GpuMetricSeries)> {
    let of = |m: GpuMetric| {
        trace
            .gpu_metrics
            .iter()
            .find(|s| s.device == device && s.metric == m)
    };
    Some((of(GpuMetric::DramRead)?, of(GpuMetric::DramWrite)?))
}

/// Read + write throughput as a fraction of peak over `[start, end)` (measured).
fn dram_over(read: &GpuMetricSeries, write: &GpuMetricSeries, start: i64, end: i64) -> Option<f64> {
    Some((read.mean_in(start, end)? + write.mean_in(start, end)?) / 100.0)
}

/// Per class, one counter's fraction of peak, each sampling period weighted by how much
/// of it the class's kernels occupy (`ops` in start order: (start, end, class)).
fn per_class_one(
    series: &GpuMetricSeries,
    ops: &[(i64, i64, Option<KernelClass>)],
) -> [Option<f64>; KernelClass::COUNT] {
    let Some(period) = series.interval_ns() else {
        return [None; KernelClass::COUNT];
    };
    let (mut num, mut den) = ([0.0f64; KernelClass::COUNT], [0.0f64; KernelClass::COUNT]);
    let mut first = 0;
    for &(t, v) in &series.samples {
        let (a, b) = (t - period, t);
        while first < ops.len() && ops[first].1 <= a {
            first += 1;
        }
        for &(s, e, c) in ops[first..].iter().take_while(|o| o.0 < b) {
            let Some(c) = c else { continue };
            let overlap = (e.min(b) - s.max(a)).max(0) as f64;
            num[c as usize] += overlap * v / 100.0;
            den[c as usize] += overlap;
        }
    }
    let mut out = [None; KernelClass::COUNT];
    for i in 0..KernelClass::COUNT {
        if den[i] > 0.0 {
            out[i] = Some(num[i] / den[i]);
        }
    }
    out
}

/// Per class, read + write as a fraction of peak (measured).
fn per_class(
    read: &GpuMetricSeries,
    write: &GpuMetricSeries,
    ops: &[(i64, i64, Option<KernelClass>)],
) -> [Option<f64>; KernelClass::COUNT] {
    let (r, w) = (per_class_one(read, ops), per_class_one(write, ops));
    let mut out = [None; KernelClass::COUNT];
    for i in 0..KernelClass::COUNT {
        out[i] = r[i].zip(w[i]).map(|(a, b)| a + b);
    }
    out
}

/// One op of a step, in sweep order.
struct StepOp<'t> {
    start: i64,
    end: i64,
    name: &'t str,
    class: Option<KernelClass>,
    kernel: bool,
    exclusive_ns: i64,
}

/// The median step's own ops, in sweep order: its process's ops on its device inside its
/// GPU span, with their names, classes and exclusive times.
fn ops_of<'t>(trace: &'t Trace, step: &Step, cats: &Categorizer) -> Result<Vec<StepOp<'t>>> {
    let (Some(dev), Some(gs), Some(ge)) = (step.device, step.gpu_start_ns, step.gpu_end_ns) else {
        return Ok(Vec::new());
    };
    let o = trace.ops_view()?;
    let mut idx: Vec<usize> = (0..o.start_ns.len())
        .filter(|&i| {
            i64::from(o.pid[i]) == step.pid
                && i64::from(o.device[i]) == dev
                && o.start_ns[i] >= gs
                && o.end_ns[i] <= ge
        })
        .collect();
    idx.sort_by(|&a, &b| {
        (o.start_ns[a], o.end_ns[a], trace.name(o.name_id[a])).cmp(&(
            o.start_ns[b],
            o.end_ns[b],
            trace.name(o.name_id[b]),
        ))
    });
    let starts: Vec<i64> = idx.iter().map(|&i| o.start_ns[i]).collect();
    let ends: Vec<i64> = idx.iter().map(|&i| o.end_ns[i]).collect();
    let excl = exclusive_in_order(&starts, &ends);
    Ok(idx
        .iter()
        .zip(excl)
        .map(|(&i, x)| {
            let name = trace.name(o.name_id[i]);
            StepOp {
                start: o.start_ns[i],
                end: o.end_ns[i],
                name,
                class: class_of(cats.categorize(name)),
                kernel: o.kind[i] == OpKind::Kernel as u32,
                exclusive_ns: x,
            }
        })
        .collect())
}

/// The shape the counter says, and the action that goes with it.
fn by_counter(c: &mut ClassAttribution, measured: f64) {
    c.measured_dram_of_peak = Some(measured);
    c.measured_dram_bytes_per_s = c.roof_bytes_per_s.map(|r| measured * r);
    if !matches!(c.shape, ClassShape::AtRoof | ClassShape::UnderUtilized)
        || c.class == KernelClass::Communication
    {
        return;
    }
    let at_roof = measured * AT_ROOF_FACTOR >= 1.0;
    let derived = c
        .roof_fraction
        .map(|f| format!(" (the byte model says {:.0}%)", f * 100.0))
        .unwrap_or_default();
    let verdict = if at_roof {
        "at the roof — only fewer bytes help"
    } else {
        "the kernels leave DRAM idle"
    };
    let head = format!(
        "{}: the GPU's DRAM counter measured {:.0}% of peak{derived}: {verdict}",
        c.class.as_str(),
        measured * 100.0
    );
    c.shape = if at_roof {
        ClassShape::AtRoof
    } else {
        ClassShape::UnderUtilized
    };
    c.action = Some(match c.action.take() {
        // The byte-model action keeps its concrete advice when the counter agrees.
        Some(a) if at_roof == a.contains("at the roof") => format!("{head}; {a}"),
        _ => head,
    });
}

/// Per step, the DRAM throughput the GPU's counters measured over its GPU span (read +
/// write as a fraction of peak); None where the trace has no counters for its device.
pub(crate) fn step_dram(trace: &Trace, steps: &[Step]) -> Vec<Option<f64>> {
    steps
        .iter()
        .map(|s| {
            let (Some(d), Some(a), Some(b)) = (s.device, s.gpu_start_ns, s.gpu_end_ns) else {
                return None;
            };
            dram(trace, d).and_then(|(r, w)| dram_over(r, w, a, b))
        })
        .collect()
}

/// Each group with what the trace adds to it: its classes' measured DRAM counters and,
/// for a decode group of a priced model, the per-layer view of its median step.
/// `geometry` is the priced model (None: no layer view), `tokens` a step's new tokens as
/// the floor priced them (its MoE layers' experts).
pub fn groups(
    trace: &Trace,
    steps: &[Step],
    groups: Vec<GroupAttribution>,
    cats: &Categorizer,
    geometry: Option<&Geometry<'_>>,
    tokens: &dyn Fn(&Step) -> Option<f64>,
) -> Result<Vec<GroupAttribution>> {
    let out = groups
        .into_iter()
        .map(|g| group(trace, steps, g, cats, geometry, tokens))
        .collect();
    crate::phases::mark("steps: group detail");
    out
}

/// One group with the trace's detail on its median step (unchanged when that step is not
/// among `steps`).
fn group(
    trace: &Trace,
    steps: &[Step],
    mut g: GroupAttribution,
    cats: &Categorizer,
    geometry: Option<&Geometry<'_>>,
    tokens: &dyn Fn(&Step) -> Option<f64>,
) -> Result<GroupAttribution> {
    let Some(step) = steps
        .iter()
        .find(|s| s.series == g.series && s.index == g.index)
    else {
        return Ok(g);
    };
    let ops = ops_of(trace, step, cats)?;
    if let Some((r, w)) = step.device.and_then(|d| dram(trace, d)) {
        let spans: Vec<(i64, i64, Option<KernelClass>)> =
            ops.iter().map(|o| (o.start, o.end, o.class)).collect();
        let measured = per_class(r, w, &spans);
        for c in &mut g.classes {
            if let Some(m) = measured[c.class as usize] {
                by_counter(c, m);
            }
        }
    }
    let decode = step.kind_label().kind == StepKind::Decode;
    if let (Some(geo), true) = (geometry, decode) {
        let kernels: Vec<Kernel<'_>> = ops
            .iter()
            .filter(|o| o.kernel)
            .map(|o| Kernel {
                name: o.name,
                class: o.class,
                exclusive_ns: o.exclusive_ns,
            })
            .collect();
        g.layers = Some(layers::map(&kernels, geo, tokens(step)));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(metric: GpuMetric, samples: &[(i64, f64)]) -> GpuMetricSeries {
        GpuMetricSeries {
            device: 0,
            device_inferred: false,
            metric,
            name: String::new(),
            unit: "%".to_owned(),
            samples: samples.to_vec(),
        }
    }

    #[test]
    fn the_dram_counter_is_split_over_every_class_of_the_table() {
        // Two 1 µs sampling periods: the weight GEMM fills the first (read 40% + write
        // 10% of peak), the test build's probe class the second (80% + 10%).
        let read = series(GpuMetric::DramRead, &[(1_000, 40.0), (2_000, 80.0)]);
        let write = series(GpuMetric::DramWrite, &[(1_000, 10.0), (2_000, 10.0)]);
        let ops = [
            (0, 1_000, Some(KernelClass::Weights)),
            (1_000, 2_000, Some(KernelClass::Probe)),
        ];
        let m = per_class(&read, &write, &ops);
        let near = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-12);
        assert!(near(m[KernelClass::Weights as usize], 0.5), "{m:?}");
        assert!(near(m[KernelClass::Probe as usize], 0.9), "{m:?}");
        assert_eq!(m[KernelClass::Attention as usize], None);
    }
}
