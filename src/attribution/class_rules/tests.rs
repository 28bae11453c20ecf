//! The class rule table's tests: each class's action on the step it fires for.

use std::sync::Arc;

use super::*;
use crate::attribution::{attribute_priced, compare, spread, Pricer, NSIGHT_COMPUTE};
use crate::baseline::from_report::samples_from_steps;
use crate::report::table::{Align, Table};
use crate::roofline::floor::step_floor;
use crate::roofline::{gpu, presets};
use crate::wire::attribution::{ClassShape, LaunchCost};
use crate::wire::baseline::BaselineMeta;
use crate::wire::roofline::{FloorOptions, StepComposition};
use crate::wire::steps::{Step, StepKernel, StepsReport};

/// The throwaway class's compulsory bytes: 6.7 MB, which an H100 SXM's cited
/// 3.35 TB/s moves in 6.7e6 / 3.35e12 s = 2,000 ns.
const PROBE_BYTES: f64 = 6.7e6;
const PROBE_FLOOR_NS: i64 = 2_000;

/// The probe's floor: its fixed bytes over β, as any HBM-priced class.
pub(super) fn probe_floor(class: KernelClass, p: &Priced<'_>) -> ClassFloor {
    floors::on_hbm(class, p, PROBE_BYTES, 0.0, "probe bytes")
}

pub(super) fn probe_advice(a: &Advice<'_>) -> String {
    let shape = if a.at_roof {
        "at the roof"
    } else {
        "under-utilized"
    };
    format!("probe{}: {shape}", a.at)
}

#[test]
fn memory_bound_classes_sum_to_the_step_bytes() {
    // Llama-3-8B, B=32, s=2048 on an H100: weights 15,009,849,344 B of which lm_head
    // is 128,256·4096·2 = 1,050,673,152 B and the norms (65 × 4096 × 2) 532,480 B.
    let m = presets::preset("llama-3-8b").unwrap();
    let g = gpu::lookup("h100-sxm").unwrap();
    let f = step_floor(
        &m,
        &g,
        &StepComposition::decode(32, 2048),
        &FloorOptions::default(),
    );
    let c = class_floors(&f, &g, 1);
    let by = |k| c.iter().find(|x| x.class == k).unwrap();
    assert_eq!(by(KernelClass::Rest).bytes, 65.0 * 4096.0 * 2.0);
    assert_eq!(
        by(KernelClass::Weights).bytes,
        15_009_849_344.0 - 65.0 * 4096.0 * 2.0
    );
    assert_eq!(by(KernelClass::Attention).bytes, 8_589_934_592.0);
    assert_eq!(by(KernelClass::KvWrite).bytes, 4_194_304.0);
    // The byte model's classes (the test build's probe is not one) sum to the step.
    let sum: f64 = c
        .iter()
        .filter(|x| x.class != KernelClass::Probe)
        .map(|x| x.floor_ns.unwrap())
        .sum();
    assert!((sum - f.floor_ns).abs() < 1e-3, "{sum} vs {}", f.floor_ns);
    assert_eq!(by(KernelClass::Communication).floor_ns, Some(0.0));
    // One floor per class, in table order; quantize prices no bytes.
    let order: Vec<KernelClass> = c.iter().map(|x| x.class).collect();
    assert_eq!(order, KernelClass::ALL);
    assert_eq!(by(KernelClass::Quantize).bytes, 0.0);
    assert_eq!(by(KernelClass::Quantize).floor_ns, Some(0.0));
    assert_eq!(
        by(KernelClass::Weights).basis,
        "derived: linear, expert and lm_head weights / β"
    );
}

#[test]
fn communication_floor_needs_a_cited_link() {
    // Llama-3-70B at TP 4, 32 decode tokens: 2 · 80 layers · 32 · 8192 · 2 B, times
    // 2·3/4 on the wire = 125,829,120 B; over NVLink's 450 GB/s each way.
    let m = presets::preset("llama-3-70b").unwrap();
    let opts = FloorOptions {
        tp: 4,
        ..FloorOptions::default()
    };
    let comp = StepComposition::decode(32, 1010);
    let comm = |c: &[ClassFloor]| {
        c.iter()
            .find(|x| x.class == KernelClass::Communication)
            .unwrap()
            .clone()
    };
    let h100 = gpu::lookup("h100-sxm").unwrap();
    let f = step_floor(&m, &h100, &comp, &opts);
    assert_eq!(f.allreduce_bytes, 2.0 * 80.0 * 32.0 * 8192.0 * 2.0 * 1.5);
    let c = comm(&class_floors(&f, &h100, 4));
    assert_eq!(c.floor_ns, Some(125_829_120.0 / 450e9 * 1e9));
    // The PCIe part has no cited link: no floor, and it says so.
    let pcie = gpu::lookup("h100-pcie").unwrap();
    let c = comm(&class_floors(
        &step_floor(&m, &pcie, &comp, &opts),
        &pcie,
        4,
    ));
    assert_eq!(c.floor_ns, None);
    assert!(c.basis.starts_with("no floor"), "{}", c.basis);
    // A full mesh (MI300X) sends to the other three peers at once: 3 × 64 GB/s.
    let mi = gpu::lookup("mi300x").unwrap();
    let f = step_floor(&m, &mi, &comp, &opts);
    let c = comm(&class_floors(&f, &mi, 4));
    assert_eq!(c.roof_bytes_per_s, Some(3.0 * 64e9));
}

fn kernel(name: &str, category: &str, instances: u64, exclusive_ns: i64) -> StepKernel {
    StepKernel {
        name: Arc::from(name),
        short_name: Arc::from(name),
        category: Arc::from(category),
        instances,
        total_ns: exclusive_ns,
        exclusive_ns,
    }
}

/// Kernel times of every step: a 5 ms GEMM, 3 ms of attention, 1 µs in no class
/// and 100 µs of gap, besides the probe's.
const GEMM_NS: i64 = 5_000_000;
const ATTENTION_NS: i64 = 3_000_000;
const OTHER_NS: i64 = 1_000;
const GAP_NS: i64 = 100_000;
/// The probe kernel's 4 launches per step.
const PROBE_LAUNCHES: u64 = 4;

/// A decode step whose probe kernels (category `probe_test`) take `probe_ns`.
fn step(index: usize, probe_ns: i64) -> Step {
    let kernels = vec![
        kernel("gemm_kernel", "gemm", 200, GEMM_NS),
        kernel("flash_fwd_kernel", "attention", 32, ATTENTION_NS),
        kernel("probe_kernel", "probe_test", PROBE_LAUNCHES, probe_ns),
        kernel("mystery_kernel", "other", 1, OTHER_NS),
    ];
    let busy = GEMM_NS + ATTENTION_NS + probe_ns + OTHER_NS;
    let start = index as i64 * 20_000_000;
    Step {
        name: format!("execute_model_{index}"),
        cpu_start_ns: Some(start),
        cpu_end_ns: Some(start + 1_000),
        cpu_ns: Some(1_000),
        gpu_start_ns: Some(start),
        gpu_end_ns: Some(start + busy + GAP_NS),
        wall_ns: Some(busy + GAP_NS),
        busy_ns: busy,
        gap_ns: Some(GAP_NS),
        kernels: 237,
        ops: 237,
        launch_host_ns: 500_000,
        top_kernels: kernels.clone(),
        all_kernels: kernels,
        ..crate::wire::steps::tests::step(index, 237)
    }
}

/// Five decode steps with these probe times, priced as Llama-3-8B, 32 requests at
/// context 2,048 on an H100 SXM (TP 1), attributed and joined as `steps` does.
fn report(probe_ns: &[i64]) -> StepsReport {
    let steps: Vec<Step> = probe_ns
        .iter()
        .enumerate()
        .map(|(i, &p)| step(i, p))
        .collect();
    let model = presets::preset("llama-3-8b").unwrap();
    let gpu = gpu::lookup("h100-sxm").unwrap();
    let composition = |_: &Step| Some(StepComposition::decode(32, 2048));
    let pricer = Pricer {
        composition: &composition,
        model: &model,
        gpu: &gpu,
        opts: FloorOptions::default(),
    };
    let a = attribute_priced(
        &steps,
        Some(&pricer),
        &LaunchCost::default(),
        NSIGHT_COMPUTE,
    );
    let steps = crate::pipeline::steps::attach(steps, a.steps).unwrap();
    StepsReport {
        class_spread: spread::by_group(&steps),
        shapes: a.shapes,
        launch_cost: Some(a.launch_cost),
        groups: a.groups,
        ..crate::wire::steps::tests::report(steps)
    }
}

/// The cells of the text table's row that starts with `first`.
fn text_row(text: &str, first: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|w| w.first().is_some_and(|w| w == first))
        .unwrap_or_else(|| panic!("no {first} row in\n{text}"))
}

/// A throwaway class that exists in test builds only, as one row of the wire table
/// and one row of [`RULES`], reaches every output that shows classes: nothing else
/// in the crate names it.
#[test]
fn a_class_added_as_one_row_reaches_every_output() {
    // Probe times of the five steps; the median step by wall is step 3 (110 µs).
    let probe = [100_000, 120_000, 2_000_000, 110_000, 90_000];
    let r = report(&probe);

    // The class attribution of every step (the steps JSON): the probe kernels'
    // exclusive time, the floor of its row, excess = time − floor.
    let json = serde_json::to_value(&r).unwrap();
    for (i, &t) in probe.iter().enumerate() {
        let classes = json["steps"][i]["attribution"]["classes"]
            .as_array()
            .unwrap();
        let p = classes.iter().find(|c| c["class"] == "probe").unwrap();
        assert_eq!(p["time_ns"], t);
        assert_eq!(p["kernels"], PROBE_LAUNCHES);
        assert_eq!(p["floor_ns"], PROBE_FLOOR_NS);
        assert_eq!(p["excess_ns"], t - PROBE_FLOOR_NS);
        assert_eq!(p["bytes"], PROBE_BYTES);
        assert_eq!(p["basis"], "derived: probe bytes / β");
        assert_eq!(p["shape"], "under-utilized");
        // The last row: the table's order.
        assert_eq!(classes.last().unwrap()["class"], "probe");
        // The step's waterfall holds the probe's time: floors + excess + no class
        // + gap is the wall, GEMM + attention + probe + other + gap.
        let w = &json["steps"][i]["attribution"]["waterfall"];
        let sum = [
            "floor_ns",
            "excess_ns",
            "unpriced_ns",
            "unclassified_ns",
            "gap_ns",
        ]
        .iter()
        .map(|k| w[k].as_i64().unwrap())
        .sum::<i64>();
        assert_eq!(sum, GEMM_NS + ATTENTION_NS + t + OTHER_NS + GAP_NS);
        assert_eq!(w["unclassified_ns"], OTHER_NS);
    }
    // Step 0: 6.7 MB in 100 µs is 67 GB/s, 2% of 3.35 TB/s: the row's own action.
    let p0 = r.steps[0].attribution.as_ref().unwrap();
    let p0 = p0
        .classes
        .iter()
        .find(|c| c.class == KernelClass::Probe)
        .unwrap();
    assert_eq!(p0.shape, ClassShape::UnderUtilized);
    assert_eq!(
        p0.action.as_deref(),
        Some("probe at 2% of β: under-utilized")
    );

    // The group's median step (step 3) in the text and markdown class tables:
    // 110 µs measured, 2 µs floor, 108 µs excess, 6.7 MB = 0.007 GB, 6.7e6 B / 110 µs
    // = 60.9 GB/s, 1.8% of β.
    assert_eq!(r.groups.len(), 1);
    assert_eq!(r.groups[0].index, 3);
    let text = crate::report::classes::groups_text(&r.groups, false);
    assert_eq!(
        text_row(&text, "probe"),
        [
            "probe",
            "4",
            "110.0",
            "2.0",
            "108.0",
            "0.007",
            "60.9",
            "GB/s",
            "1.8%",
            "under-utilized"
        ]
    );
    assert!(
        text.contains("next: probe at 2% of β: under-utilized"),
        "{text}"
    );
    let md = crate::report::classes::groups_text(&r.groups, true);
    assert!(
        md.contains(
            "| probe | 4 | 110.0 | 2.0 | 108.0 | 0.007 | 60.9 GB/s | 1.8% | under-utilized |"
        ),
        "{md}"
    );

    // The CSV's per-class columns, step 0.
    let mut t = Table::new(&[("step", Align::Right)]);
    for s in &r.steps {
        t.row(vec![s.index.to_string()]);
    }
    crate::report::classes::append_class_columns(&mut t, &r.steps);
    let at = |h: &str| t.headers.iter().position(|x| x == h).unwrap();
    assert_eq!(t.rows[0][at("probe_time_ns")], "100000");
    assert_eq!(t.rows[0][at("probe_floor_ns")], "2000");
    assert_eq!(t.rows[0][at("probe_bytes")], "6700000");

    // The HTML chart: a seventh colour, none of the other classes' or the reserved
    // ones, in the legend beside the label and in the bars.
    let colors = crate::report::html::classes::class_colors();
    assert_eq!(colors.len(), 7);
    let (k, c) = *colors.last().unwrap();
    assert_eq!(k, KernelClass::Probe);
    use crate::report::charts::{FLOOR, GAP, NEUTRAL, OTHER};
    for other in colors[..6]
        .iter()
        .map(|x| x.1)
        .chain([FLOOR, GAP, NEUTRAL, OTHER])
    {
        assert_ne!(c, other);
    }
    let html = crate::report::html::classes::section(&r.groups);
    let hex = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    let fills = html.to_uppercase().matches(&hex).count();
    // Its floor bar, its measured bar and its legend swatch.
    assert!(fills >= 3, "{hex} {fills} times");
    assert!(html.contains(">probe<"), "no probe legend");

    // The spread across the five like steps: p10 = 90 + 0.4·10 = 94 µs, p50 110 µs,
    // p90 = 120 + 0.6·1,880 = 1,248 µs; least in step 4, most in step 2; it varies
    // (13× and 1.15 ms of an ~8.2 ms wall), so the class-varies line names it.
    let g = &r.class_spread[0];
    let sp = g
        .classes
        .iter()
        .find(|c| c.class == KernelClass::Probe)
        .unwrap();
    assert_eq!(sp.steps_with, 5);
    let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(near(sp.p10_ns, 94_000.0), "{}", sp.p10_ns);
    assert!(near(sp.p50_ns, 110_000.0), "{}", sp.p50_ns);
    assert!(near(sp.p90_ns, 1_248_000.0), "{}", sp.p90_ns);
    assert_eq!((sp.min.index, sp.min.ns), (4, 90_000));
    assert_eq!((sp.max.index, sp.max.ns), (2, 2_000_000));
    assert!(sp.varies);
    let line = spread::varies_line(g).unwrap();
    assert!(
        line.starts_with("probe takes 94.0 µs–1.2 ms per step"),
        "{line}"
    );
    let st = crate::report::spread::table(g).to_text();
    assert_eq!(text_row(&st, "probe")[0], "probe");
    assert!(json["class_spread"][0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["class"] == "probe"));

    // The baseline's metric `excess_ns.probe` (the gate's and the history's name),
    // one sample per step in report order.
    let (base, _) = samples_from_steps(&r, BaselineMeta::default());
    let bg = &base.samples.groups[0];
    let excess: Vec<f64> = probe.iter().map(|&t| (t - PROBE_FLOOR_NS) as f64).collect();
    assert_eq!(
        bg.metric_samples("excess_ns.probe"),
        Some(excess.as_slice())
    );
    assert_eq!(
        crate::report::words::metric_name("excess_ns.probe"),
        "probe excess (derived)"
    );

    // The gate's class rows: a candidate whose probe kernels take 50 µs more per step
    // has 50 µs more probe excess, the floor unchanged.
    let slower: Vec<i64> = probe.iter().map(|t| t + 50_000).collect();
    let (cand, _) = samples_from_steps(&report(&slower), BaselineMeta::default());
    let cg = &cand.samples.groups[0];
    let d = compare::excess_change(&bg.classes, &cg.classes);
    let pd = d.iter().find(|c| c.class == KernelClass::Probe).unwrap();
    // Mean baseline excess: (98 + 118 + 1,998 + 108 + 88) / 5 = 482 µs.
    assert_eq!(pd.baseline_excess_ns, 482_000.0);
    assert_eq!(pd.candidate_excess_ns, 532_000.0);
    assert_eq!(pd.delta_excess_ns, 50_000.0);
    assert_eq!(pd.baseline_floor_ns, PROBE_FLOOR_NS as f64);
    let w = crate::baseline::waterfall::waterfall(bg, cg);
    let gt = crate::report::gate::tables::class_excess_table(&w).unwrap();
    let row = gt.rows.iter().find(|r| r[0] == "probe").unwrap();
    assert_eq!(row[1..5], ["2.0", "2.0", "482.0", "532.0"]);

    // The history: the dataset's `attribution_classes` cell of step 0.
    let ids = crate::dataset::schema::Ids {
        run: "r",
        export: "e",
    };
    let df = crate::dataset::columns::steps_frame(ids, &r).unwrap();
    let cell = df
        .column("attribution_classes")
        .unwrap()
        .str()
        .unwrap()
        .get(0)
        .unwrap()
        .to_owned();
    let cells: serde_json::Value = serde_json::from_str(&cell).unwrap();
    let p = cells
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "probe")
        .unwrap();
    assert_eq!(
        (p["floor_ns"].as_i64(), p["excess_ns"].as_i64()),
        (Some(2_000), Some(98_000))
    );
}
