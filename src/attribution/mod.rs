//! Step versus floor: split each step's residual into gap and kernel excess, attribute
//! the gap to launches, and name the step's shape with the next action.
//!
//! The decision procedure (docs/method.md): is the GPU lane gappy? then
//! launch-bound if the host lane is dense, else a host stall; if dense, is one kernel
//! most of it? else are the kernels near the memory roof (only fewer bytes help) or
//! far from it (under-utilized)? With a floor, the kernel time is then split per kernel
//! class ([`classes`]) and each group of like steps gets its median step's split
//! ([`groups`]).

pub mod attention;
pub mod class_rules;
pub mod classes;
pub mod compare;
pub mod detail;
pub mod groups;
pub mod items;
pub mod layers;
pub mod medians;
mod notes;
pub mod spread;
pub mod verdict;

pub use notes::{
    for_vendor, kernel_profiler, missing_floor_notes, KernelProfiler, NSIGHT_COMPUTE,
    ROCPROF_COMPUTE,
};

use crate::roofline::floor::{plausibility_changes, step_floor};
use crate::timing::labels::NameLabels;
use crate::wire::attribution::{
    Attributions, Bound, FloorAttribution, FloorInput, LaunchAttribution, LaunchCost, Shape,
    ShapeCount, StepAttribution,
};
use crate::wire::roofline::{FloorOptions, GpuSpec, ModelSpec, StepComposition, StepFloor};
use crate::wire::steps::Step;
use class_rules::class_floors;

/// Gap share of wall above which the GPU lane counts as gappy.
pub const GAPPY_FRACTION: f64 = 0.20;
/// Host launch time, as a share of the gap, above which the host lane counts as dense.
pub const DENSE_HOST_FRACTION: f64 = 0.5;
/// Exclusive share of busy above which one kernel dominates.
pub const DOMINANT_FRACTION: f64 = 0.5;
/// Busy time within this factor of the floor is at the memory roof.
pub const AT_ROOF_FACTOR: f64 = 1.3;

impl Default for LaunchCost {
    fn default() -> Self {
        LaunchCost {
            per_launch_ns: crate::probe::CITED_LAUNCH_NS,
            source: format!("cited, {}", crate::probe::CITED_LAUNCH_SOURCE),
        }
    }
}

impl From<&StepFloor> for FloorInput {
    fn from(f: &StepFloor) -> Self {
        FloorInput {
            floor_ns: f.floor_ns,
            total_bytes: f.total_bytes,
            flops: f.flops,
            bound: f.bound,
        }
    }
}

/// What pricing a step needs: the model, GPU and options of the operating point, and
/// each step's composition (None: its floor is unknown).
pub(crate) struct Pricer<'a> {
    pub composition: &'a dyn Fn(&Step) -> Option<StepComposition>,
    pub model: &'a ModelSpec,
    pub gpu: &'a GpuSpec,
    pub opts: FloorOptions,
}

impl Pricer<'_> {
    /// The step's composition and floor at the operating point.
    pub fn price(&self, step: &Step) -> Option<(StepComposition, StepFloor)> {
        let c = (self.composition)(step)?;
        let f = step_floor(self.model, self.gpu, &c, &self.opts);
        Some((c, f))
    }

    /// The flags under which a step measured at `wall_ns` would not undercut its floor
    /// (each priced again, derived).
    fn plausible_with(&self, comp: &StepComposition, wall_ns: f64) -> Vec<String> {
        plausibility_changes(self.model, &self.opts)
            .into_iter()
            .filter(|c| {
                let (m, o) = c.apply(self.model, &self.opts);
                step_floor(&m, self.gpu, comp, &o).floor_ns <= wall_ns
            })
            .map(|c| c.flag())
            .collect()
    }
}

/// Model bandwidth utilisation (derived): the floor over the measured wall; 0 for a
/// wall of 0. For a decode step measured as tok/s, the wall is 1e9 / tok/s ns.
pub fn mbu(floor_ns: f64, wall_ns: f64) -> f64 {
    if wall_ns > 0.0 {
        floor_ns / wall_ns
    } else {
        0.0
    }
}

/// The floor's compulsory bytes over the GPU busy time, bytes/s (derived); 0 when idle.
pub fn achieved_bytes_per_s(total_bytes: f64, busy_ns: f64) -> f64 {
    if busy_ns > 0.0 {
        total_bytes / (busy_ns / 1e9)
    } else {
        0.0
    }
}

/// Attribute one step; `floor` is its own floor when a model and GPU are known.
pub fn attribute(step: &Step, floor: Option<&FloorInput>, cost: &LaunchCost) -> StepAttribution {
    attribute_named(step, floor, cost, &NameLabels::default(), NSIGHT_COMPUTE)
}

/// [`attribute`], naming kernels by `labels` (distinct kernels that share a short name
/// told apart, as the reports show them).
fn attribute_named(
    step: &Step,
    floor: Option<&FloorInput>,
    cost: &LaunchCost,
    labels: &NameLabels,
    profiler: KernelProfiler,
) -> StepAttribution {
    let driver = step.launches as f64 * cost.per_launch_ns;
    let launch = LaunchAttribution {
        launches: step.launches,
        host_ns: step.launch_host_ns,
        driver_floor_ns: driver,
        framework_ns: step.launch_host_ns as f64 - driver,
        host_to_gap_ratio: match step.gap_ns {
            Some(g) if g > 0 => Some(step.launch_host_ns as f64 / g as f64),
            _ => None,
        },
    };
    let (Some(wall), Some(gap)) = (step.wall_ns, step.gap_ns) else {
        return StepAttribution {
            floor: None,
            launch,
            shape: Shape::NoGpuWork,
            action: "the host range launched no GPU work: check the range and the capture window"
                .to_owned(),
            classes: Vec::new(),
            waterfall: None,
            plausible_with: Vec::new(),
            measured_dram_of_peak: None,
        };
    };
    let fa = floor.map(|f| FloorAttribution {
        floor_ns: f.floor_ns,
        bound: f.bound,
        residual_ns: wall as f64 - f.floor_ns,
        gap_ns: gap as f64,
        kernel_excess_ns: step.busy_ns as f64 - f.floor_ns,
        mbu: mbu(f.floor_ns, wall as f64),
        floor_over_busy: mbu(f.floor_ns, step.busy_ns as f64),
        achieved_bytes_per_s: achieved_bytes_per_s(f.total_bytes, step.busy_ns as f64),
        total_bytes: f.total_bytes,
        flops: f.flops,
        below_floor: (wall as f64) < f.floor_ns,
    });
    let subject = Subject {
        step,
        wall,
        gap,
        labels,
        profiler,
    };
    let (shape, action) = diagnose(subject, fa.as_ref());
    StepAttribution {
        floor: fa,
        launch,
        shape,
        action,
        classes: Vec::new(),
        waterfall: None,
        plausible_with: Vec::new(),
        measured_dram_of_peak: None,
    }
}

/// What the diagnosis reads of one step: the step, its wall and gap time, and the labels
/// that name its kernels.
#[derive(Clone, Copy)]
struct Subject<'a> {
    step: &'a Step,
    wall: i64,
    gap: i64,
    labels: &'a NameLabels,
    profiler: KernelProfiler,
}

fn diagnose(s: Subject<'_>, floor: Option<&FloorAttribution>) -> (Shape, String) {
    if let Some(f) = floor {
        if f.below_floor {
            // The floor is wrong, so only the floor-free shapes can be named.
            const WARNING: &str = "measured below its floor: the byte model is wrong, not the machine \
                (prefix caching, an L2-resident slice, or a KV dtype not passed) — fix the floor first";
            return match classify(s, None) {
                (Shape::Undetermined, _) => (Shape::BelowFloor, WARNING.to_owned()),
                (shape, action) => (shape, format!("{action}; and {WARNING}")),
            };
        }
    }
    classify(s, floor)
}

fn classify(s: Subject<'_>, floor: Option<&FloorAttribution>) -> (Shape, String) {
    let Subject {
        step,
        wall,
        gap,
        labels,
        profiler,
    } = s;
    let gap_frac = if wall > 0 {
        gap as f64 / wall as f64
    } else {
        0.0
    };
    if gap_frac > GAPPY_FRACTION {
        if step.launch_host_ns as f64 >= DENSE_HOST_FRACTION * gap as f64 && step.graph_replays > 0
        {
            // CUDA graphs already run: recommending them would be advice the trace refutes.
            return (
                Shape::LaunchBound,
                format!(
                    "gap is {:.0}% of wall and the host lane is dense although {} already run ({} replays): \
                     the kernels launched outside the graphs are the cost — capture them too, fuse them or torch.compile",
                    gap_frac * 100.0,
                    profiler.graphs,
                    step.graph_replays
                ),
            );
        }
        if step.launch_host_ns as f64 >= DENSE_HOST_FRACTION * gap as f64 {
            return (
                Shape::LaunchBound,
                format!(
                    "gap is {:.0}% of wall and the host lane is dense: launch-bound — use {} \
                     (vLLM: drop --enforce-eager; SGLang: drop --disable-cuda-graph) or fuse kernels; \
                     nothing about the kernels matters until this is fixed",
                    gap_frac * 100.0,
                    profiler.graphs
                ),
            );
        }
        let culprit = step
            .longest_host_call
            .as_ref()
            .map(|c| {
                format!(
                    " (longest host call: {} {:.1} µs)",
                    crate::trace::display_call_name(&c.name),
                    c.dur_ns as f64 / 1e3
                )
            })
            .unwrap_or_default();
        return (
            Shape::HostStall,
            format!(
                "gap is {:.0}% of wall but launches explain little of it: look for a synchronize, a \
                 blocking copy or the scheduler{culprit}",
                gap_frac * 100.0
            ),
        );
    }
    if let Some(top) = step.top_kernels.first() {
        if step.busy_ns > 0 && top.exclusive_ns as f64 > DOMINANT_FRACTION * step.busy_ns as f64 {
            let share = top.exclusive_ns as f64 / step.busy_ns as f64;
            let name = labels.get(&top.name, &top.short_name);
            // What the item is decides the action: one table for kernels, copies, graph
            // replays and collectives.
            let rule = items::rule(items::item_of(&top.name, &top.category));
            return (rule.shape, (rule.action)(name, share, None, profiler));
        }
    }
    match floor {
        Some(f)
            if f.bound == Bound::Compute && (step.busy_ns as f64) <= AT_ROOF_FACTOR * f.floor_ns =>
        {
            (
                Shape::AtComputeRoof,
                "kernels are back to back and within 1.3x of the floor, which FLOPs bind: at the compute roof — only fewer FLOPs help (fewer tokens per step, fp8 GEMMs, a smaller model)"
                    .to_owned(),
            )
        }
        Some(f) if f.bound == Bound::Compute => (
            Shape::UnderUtilized,
            format!(
                "kernels are back to back but busy time is {:.1}x the floor, which FLOPs bind: the GEMMs and attention run below the tensor peak — check their tensor-core utilization in {}",
                step.busy_ns as f64 / f.floor_ns,
                profiler.name
            ),
        ),
        Some(f) if (step.busy_ns as f64) <= AT_ROOF_FACTOR * f.floor_ns => (
            Shape::AtMemoryRoof,
            "kernels are back to back and within 1.3x of the floor: at the roof — only fewer bytes help \
             (quantize weights or KV)"
                .to_owned(),
        ),
        Some(f) => (
            Shape::UnderUtilized,
            format!(
                "kernels are back to back but busy time is {:.1}x the floor: they leave the machine idle — \
                 check achieved DRAM throughput per kernel (for decode attention, batch × heads blocks vs SMs)",
                step.busy_ns as f64 / f.floor_ns
            ),
        ),
        None => (
            Shape::Undetermined,
            "kernels are back to back: give --model and --gpu to tell at-the-roof from under-utilized".to_owned(),
        ),
    }
}

/// A copy or memset (`[memcpy …]`, `[memset]`, category `memory`): GPU time that is no
/// kernel, so no kernel profiler can speed it up.
pub(crate) fn is_copy(category: &str) -> bool {
    category == "memory"
}

/// The action when a copy holds most of the busy time (of one step, or over `steps`): a
/// host copy can overlap compute, a device copy or memset can only be avoided.
pub(crate) fn copy_action(
    name: &str,
    share: f64,
    steps: Option<usize>,
    profiler: KernelProfiler,
) -> String {
    let over = steps
        .map(|n| format!(" over {n} steps (measured)"))
        .unwrap_or_default();
    let host = name.contains("HtoD") || name.contains("DtoH");
    let then = if host {
        "move it out of the step, or copy from pinned host memory asynchronously (non_blocking=True) so it overlaps compute"
    } else {
        "a device-side copy or memset: write in place or move it out of the step"
    };
    format!(
        "{name} is {:.0}% of busy time{over}: a copy, not a kernel ({} has nothing to find in it) — {then}",
        share * 100.0,
        profiler.name
    )
}

/// Attribute every step and count shapes (steps with GPU work only). Reads the steps,
/// changes nothing: `pipeline::steps::attach` puts each attribution on its step, and the
/// report is built from them once.
pub fn attribute_all(
    steps: &[Step],
    floor_of: &dyn Fn(&Step) -> Option<FloorInput>,
    cost: &LaunchCost,
    profiler: KernelProfiler,
) -> Attributions {
    attribute_each(steps, cost, &|s, labels| {
        attribute_named(s, floor_of(s).as_ref(), cost, labels, profiler)
    })
}

/// [`attribute_all`] with the floor of each step from `pricer`, split per kernel class,
/// the inputs that would make an undercut floor plausible named, and the class split of
/// each group's median step.
pub(crate) fn attribute_priced(
    steps: &[Step],
    pricer: Option<&Pricer<'_>>,
    cost: &LaunchCost,
    profiler: KernelProfiler,
) -> Attributions {
    let Some(p) = pricer else {
        return attribute_all(steps, &|_| None, cost, profiler);
    };
    let heads_per_gpu = (p.model.heads / u64::from(p.opts.tp.max(1))).max(1);
    let kv_heads_per_gpu = (p.model.kv_heads / u64::from(p.opts.tp.max(1))).max(1);
    let mut a = attribute_each(steps, cost, &|s, labels| {
        let priced = p.price(s);
        let mut at = attribute_named(
            s,
            priced.as_ref().map(|(_, f)| f.into()).as_ref(),
            cost,
            labels,
            profiler,
        );
        let Some((comp, f)) = priced else {
            return at;
        };
        let requests = Some(comp.decode_requests).filter(|&n| n > 0);
        let ctx = class_rules::ClassContext {
            grid: attention::Grid {
                batch: requests,
                heads_per_gpu,
                kv_heads_per_gpu,
                // Σ N_KV over the requests: their mean context (all decodes here).
                mean_context: requests
                    .filter(|_| comp.prefill_requests == 0 && comp.sk > 0)
                    .map(|n| comp.sk.div_ceil(n)),
                sms: p.gpu.sm_count,
                sm_word: if p.gpu.name.starts_with("AMD") {
                    "CUs"
                } else {
                    "SMs"
                },
            },
            attention: attention::Family::of_step(s),
            custom_allreduce: s.all_kernels.iter().any(|k| {
                crate::categories::families::KernelFamily::CustomAllReduce.matches(&k.name)
            }),
            profiler,
            decode: comp.prefill_requests == 0,
        };
        if let Some((c, w)) = classes::attribute(s, &class_floors(&f, p.gpu, p.opts.tp), &ctx) {
            at.classes = c;
            at.waterfall = Some(w);
        }
        if at.shape == Shape::AtMemoryRoof {
            // "Only fewer bytes help" is checked against the step's own classes.
            let wall = at.waterfall.as_ref().map_or(0, |w| w.wall_ns);
            if let Some(a) = verdict::at_roof_action(&at.classes, wall) {
                at.action = a;
            }
        }
        if at.shape == Shape::OneKernelDominant {
            // Checked against the class the kernel belongs to before it is printed.
            let class = s
                .top_kernels
                .first()
                .and_then(|k| crate::categories::class_of(&k.category));
            let roof = at
                .classes
                .iter()
                .find(|c| Some(c.class) == class)
                .and_then(|c| c.roof_fraction);
            if let Some(a) = verdict::dominant_at_roof(&at.action, class, roof, profiler) {
                // The claim is now about the kernel's class at its roof: labelled so.
                at.action = a;
                at.shape = Shape::AtMemoryRoof;
            }
        }
        if at.floor.as_ref().is_some_and(|x| x.below_floor) {
            at.plausible_with = p.plausible_with(&comp, s.wall_ns.unwrap_or(0) as f64);
            if !at.plausible_with.is_empty() {
                at.action.push_str(&format!(
                    "; the floor is plausible with {}",
                    at.plausible_with.join(" or ")
                ));
            }
        }
        at
    });
    a.groups = groups::median_steps(steps, &a.steps);
    a
}

fn attribute_each(
    steps: &[Step],
    cost: &LaunchCost,
    one: &dyn Fn(&Step, &NameLabels) -> StepAttribution,
) -> Attributions {
    use std::collections::BTreeMap;
    let mut counts: BTreeMap<Shape, usize> = BTreeMap::new();
    let mut per_step = Vec::with_capacity(steps.len());
    // Over every kernel the steps list, so one kernel reads the same in every action.
    let labels = NameLabels::new(steps.iter().flat_map(|s| {
        s.top_kernels
            .iter()
            .map(|k| (k.name.as_ref(), k.short_name.as_ref()))
    }));
    for s in steps {
        let a = one(s, &labels);
        if a.shape != Shape::NoGpuWork {
            *counts.entry(a.shape).or_default() += 1;
        }
        per_step.push(a);
    }
    let mut shapes: Vec<ShapeCount> = counts
        .into_iter()
        .map(|(shape, steps)| ShapeCount { shape, steps })
        .collect();
    shapes.sort_by(|a, b| b.steps.cmp(&a.steps).then(a.shape.cmp(&b.shape)));
    Attributions {
        steps: per_step,
        shapes,
        launch_cost: cost.clone(),
        groups: Vec::new(),
    }
}
