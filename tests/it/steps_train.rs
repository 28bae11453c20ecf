//! Training loops on real PyTorch-profiler traces: without `ProfilerStep#N` the recurring
//! `Optimizer.zero_grad#…` / `Optimizer.step#…` annotations give one step per iteration
//! (backward launched from the autograd thread included); with `ProfilerStep#N` present it
//! still wins; a `--steps REGEX` can ask for the cycle and the process's threads.
//!
//! Every expected value is computed here from the raw JSON events (gzip + serde_json):
//! iteration boundaries from the annotations' own timestamps, GPU busy per iteration as
//! the union of the kernel/memcpy/memset intervals whose correlation id is that of a
//! runtime/driver call, on any thread of the process, starting inside the iteration, plus
//! the ops no call in the trace launched whose GPU start lies inside it (the documented
//! time-window fallback; one of these traces lost a quarter of its launching calls).

use std::collections::HashMap;
use std::io::Read;

use serde_json::Value;
use stepgate::categories::Categorizer;
use stepgate::timing::steps::{find_steps, Extent, StepOptions, StepSource, Threads};
use stepgate::wire::steps::{FoundBy, StepsReport};

use crate::common::{fixture, run, union_ns};

const GP100: &str = "kineto/hta_gp100_train_no_profilerstep_optimizer_annot.json.gz";
const RESNET: &str = "kineto/tracelens_mi300x_resnet18_train_no_profilerstep.json.gz";
const A100_DDP: &str = "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz";
const MI300_DDP: &str = "kineto/tracelens_mi300x_ddp_rank0_of8_actckpt_profilerstep.json.gz";

/// A Kineto time in µs (integer or decimal text) as integer ns, exactly: the decimal
/// digits are read as text, never through an f64 product.
fn ns(v: &Value) -> i64 {
    if let Some(i) = v.as_i64() {
        return i * 1000;
    }
    let s = v.to_string();
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    assert!(!frac.contains('e') && frac.len() <= 3, "time {s}");
    let frac = format!("{frac:0<3}");
    let sign = if int.starts_with('-') { -1 } else { 1 };
    int.parse::<i64>().unwrap() * 1000 + sign * frac.parse::<i64>().unwrap()
}

/// The raw events of a fixture, read here without stepgate.
struct Raw {
    /// Host annotations: (name, tid, start, end).
    annotations: Vec<(String, i64, i64, i64)>,
    /// Runtime/driver calls: (tid, start, correlation).
    calls: Vec<(i64, i64, i64)>,
    /// GPU ops by correlation: (start, end, is a kernel).
    ops: HashMap<i64, Vec<(i64, i64, bool)>>,
}

fn raw(rel: &str) -> Raw {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(rel)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut r = Raw {
        annotations: Vec::new(),
        calls: Vec::new(),
        ops: HashMap::new(),
    };
    for e in v["traceEvents"].as_array().unwrap() {
        if e["ph"] != "X" {
            continue;
        }
        let (s, d) = (ns(&e["ts"]), ns(&e["dur"]));
        let tid = e["tid"].as_i64().unwrap_or(i64::MIN);
        match e["cat"].as_str() {
            Some("user_annotation") => {
                let n = e["name"].as_str().unwrap().to_owned();
                r.annotations.push((n, tid, s, s + d));
            }
            Some("cuda_runtime" | "cuda_driver") => {
                if let Some(c) = e["args"]["correlation"].as_i64() {
                    r.calls.push((tid, s, c));
                }
            }
            Some(c @ ("kernel" | "gpu_memcpy" | "gpu_memset")) => r
                .ops
                .entry(e["args"]["correlation"].as_i64().unwrap())
                .or_default()
                .push((s, s + d, c == "kernel")),
            _ => {}
        }
    }
    r.annotations.sort_by_key(|a| a.2);
    r
}

impl Raw {
    /// Starts and ends of one annotation name, in time order.
    fn spans(&self, prefix: &str) -> Vec<(i64, i64, i64)> {
        self.annotations
            .iter()
            .filter(|a| a.0.starts_with(prefix))
            .map(|a| (a.1, a.2, a.3))
            .collect()
    }

    /// (busy union, kernels) of the ops launched by calls starting in [s, e], on thread
    /// `tid` only or (None) on every thread.
    fn busy(&self, tid: Option<i64>, s: i64, e: i64) -> (i64, u64) {
        let mut iv = Vec::new();
        let mut kernels = 0;
        for &(t, cs, corr) in &self.calls {
            if cs >= s && cs <= e && tid.is_none_or(|x| x == t) {
                for &(a, b, k) in self.ops.get(&corr).map_or(&[][..], |v| &v[..]) {
                    iv.push((a, b));
                    kernels += u64::from(k);
                }
            }
        }
        (union_ns(iv), kernels)
    }

    /// [`Raw::busy`] over every thread, plus the ops that no call in the trace launched
    /// and that start in [s, e): a step's busy when its window is its host span.
    fn busy_window(&self, s: i64, e: i64) -> (i64, u64) {
        let launched: std::collections::HashSet<i64> = self.calls.iter().map(|c| c.2).collect();
        let mut iv = Vec::new();
        let mut kernels = 0;
        for &(_, cs, corr) in &self.calls {
            if cs >= s && cs <= e {
                for &(a, b, k) in self.ops.get(&corr).map_or(&[][..], |v| &v[..]) {
                    iv.push((a, b));
                    kernels += u64::from(k);
                }
            }
        }
        for (corr, v) in &self.ops {
            if !launched.contains(corr) {
                for &(a, b, k) in v.iter().filter(|o| o.0 >= s && o.0 < e) {
                    iv.push((a, b));
                    kernels += u64::from(k);
                }
            }
        }
        (union_ns(iv), kernels)
    }

    /// Union of every GPU op's interval.
    fn all_busy(&self) -> i64 {
        union_ns(self.ops.values().flatten().map(|&(a, b, _)| (a, b)))
    }
}

fn steps_with(rel: &str, opts: &StepOptions) -> StepsReport {
    let t = stepgate::source::load(&fixture(rel)).unwrap();
    find_steps(&t, opts, &Categorizer::default()).unwrap()
}

fn regex(re: &str, extent: Option<Extent>, threads: Option<Threads>) -> StepOptions {
    StepOptions {
        source: StepSource::parse(re).unwrap(),
        extent,
        threads,
        ..Default::default()
    }
}

/// Iterations from one `opener` to the next (1 ns before it); the last from the final
/// opener to the latest end of an annotation on its thread that starts at or after it
/// and occurs as often as the opener (once per iteration).
fn iterations(r: &Raw, opener: &str) -> Vec<(i64, i64)> {
    let open = r.spans(opener);
    let tid = open[0].0;
    let mut out: Vec<(i64, i64)> = open.windows(2).map(|w| (w[0].1, w[1].1 - 1)).collect();
    let last = open.last().unwrap().1;
    let mut count: HashMap<&str, usize> = HashMap::new();
    for a in r.annotations.iter().filter(|a| a.1 == tid) {
        *count.entry(a.0.as_str()).or_default() += 1;
    }
    let end = r
        .annotations
        .iter()
        .filter(|a| a.1 == tid && count[a.0.as_str()] == open.len() && a.2 >= last)
        .map(|a| a.3)
        .max()
        .unwrap();
    out.push((last, end));
    out
}

/// Every step's host span and busy/kernels against the independent ones, over `tid`
/// (`None`: every thread, with the time-window fallback).
fn check_steps(r: &StepsReport, raw: &Raw, want: &[(i64, i64)], tid: Option<i64>) {
    assert_eq!(r.steps.len(), want.len());
    for (s, &(a, b)) in r.steps.iter().zip(want) {
        assert_eq!((s.cpu_start_ns, s.cpu_end_ns), (Some(a), Some(b)));
        let (busy, kernels) = match tid {
            Some(_) => raw.busy(tid, a, b),
            None => raw.busy_window(a, b),
        };
        assert_eq!(s.busy_ns, busy, "step {}", s.index);
        assert_eq!(s.kernels, kernels, "step {}", s.index);
        assert_eq!(s.tail_busy_ns, 0, "a cycle has no tail");
    }
}

#[test]
fn training_loops_without_profilerstep_give_one_step_per_iteration() {
    let zg = "Optimizer.zero_grad#SGD.zero_grad";
    let st = "Optimizer.step#SGD.step";
    for (rel, main_tid, autograd_tid) in [(GP100, 2_543_932, 2_544_009), (RESNET, 1, 108)] {
        let raw = raw(rel);
        assert_eq!((raw.spans(zg).len(), raw.spans(st).len()), (5, 5), "{rel}");
        let r = steps_with(rel, &StepOptions::default());
        assert_eq!(r.method, FoundBy::Recurring, "{rel}");
        assert_eq!(r.found_by, FoundBy::Recurring);
        assert!(r.steps.iter().all(|s| s.found_by == FoundBy::Recurring));
        assert_eq!(
            r.found_by_engine.as_deref(),
            Some("PyTorch training loop without ProfilerStep")
        );
        assert!(r
            .exact_steps_hint
            .as_deref()
            .unwrap()
            .contains("ProfilerStep#N"));
        let want = iterations(&raw, zg);
        check_steps(&r, &raw, &want, None);
        // Backward comes from the autograd thread: its launches are in every iteration,
        // and the main thread alone would miss them.
        for &(a, b) in &want {
            let (main, _) = raw.busy(Some(main_tid), a, b);
            let (auto, _) = raw.busy(Some(autograd_tid), a, b);
            assert!(auto > 0 && main > 0, "{rel}: both threads launch");
        }
        // Work outside the iterations is outside steps; every op is accounted once.
        let o = &r.outside_steps[0];
        let steps_busy: i64 = r.steps.iter().map(|s| s.busy_ns).sum();
        assert_eq!(o.busy_ns, raw.all_busy());
        assert_eq!(
            steps_busy + o.before_ns + o.between_ns + o.after_ns,
            o.busy_ns,
            "{rel}"
        );
        assert_eq!(o.between_ns, 0);
    }
}

#[test]
fn the_headline_says_recurring_and_how_to_make_steps_exact() {
    let (code, out, _) = run(&["steps", fixture(GP100).to_str().unwrap()]);
    assert_eq!(code, 0);
    let first = out.lines().next().unwrap();
    assert!(
        first.ends_with(
            "5 steps by recurring annotations (heuristic: PyTorch training loop without ProfilerStep) on 1 rank(s); 0 without GPU work"
        ),
        "{first}"
    );
    assert!(out.contains("note: steps are a heuristic here; exact steps: plain PyTorch: torch.profiler.profile(schedule="));
    let (code, out, _) = run(&[
        "steps",
        fixture(GP100).to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["found_by"], "recurring");
    assert_eq!(v["method"], "recurring");
    assert_eq!(v["steps"][0]["found_by"], "recurring");
}

#[test]
fn profilerstep_still_wins_over_the_optimizer_annotations() {
    for (rel, first) in [(A100_DDP, 4), (MI300_DDP, 15)] {
        let raw = raw(rel);
        let r = steps_with(rel, &StepOptions::default());
        assert_eq!(r.found_by, FoundBy::Marker, "{rel}");
        let names: Vec<String> = (first..first + 3)
            .map(|n| format!("ProfilerStep#{n}"))
            .collect();
        assert_eq!(
            r.steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            names
        );
        let want: Vec<(i64, i64)> = raw
            .spans("ProfilerStep#")
            .iter()
            .map(|a| (a.1, a.2))
            .collect();
        for (s, &(a, b)) in r.steps.iter().zip(&want) {
            assert_eq!((s.cpu_start_ns, s.cpu_end_ns), (Some(a), Some(b)));
            assert_eq!(s.busy_ns, raw.busy(None, a, b).0, "{rel} step {}", s.index);
        }
        // Forced, the recurring family finds the per-iteration cycle inside them: every
        // annotation written once per iteration (zero_grad, forward, backward, step …), a
        // step from one zero_grad to the next.
        let opts = StepOptions {
            source: StepSource::Recurring,
            ..Default::default()
        };
        let r = steps_with(rel, &opts);
        let want = iterations(&raw, "Optimizer.zero_grad#");
        check_steps(&r, &raw, &want, None);
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("Optimizer.zero_grad#SGD.zero_grad → ")));
    }
}

#[test]
fn a_user_regex_chooses_the_span_or_the_cycle_and_the_threads() {
    let raw = raw(GP100);
    let st = "Optimizer.step#SGD.step";
    // Default: the span itself on its own thread (the optimizer's few kernels).
    let r = steps_with(GP100, &regex(st, None, None));
    assert_eq!(r.found_by, FoundBy::Regex);
    let spans = raw.spans(st);
    assert_eq!(r.steps.len(), 5);
    for (s, a) in r.steps.iter().zip(&spans) {
        assert_eq!((s.cpu_start_ns, s.cpu_end_ns), (Some(a.1), Some(a.2)));
        assert_eq!(s.busy_ns, raw.busy(Some(a.0), a.1, a.2).0);
    }
    // The cycle over the process: from one step to the next, backward included.
    let r = steps_with(
        GP100,
        &regex(st, Some(Extent::Cycle), Some(Threads::Process)),
    );
    check_steps(&r, &raw, &iterations(&raw, st), None);
    // The cycle on the main thread alone misses the autograd thread's launches.
    let r2 = steps_with(GP100, &regex(st, Some(Extent::Cycle), None));
    let main = spans[0].0;
    check_steps(&r2, &raw, &iterations(&raw, st), Some(main));
    assert!(r2.steps[0].busy_ns < r.steps[0].busy_ns);
    // Both names: the opener is zero_grad (PyTorch writes it first in an iteration).
    let zg = "Optimizer.zero_grad#SGD.zero_grad";
    let r = steps_with(
        GP100,
        &regex("^Optimizer", Some(Extent::Cycle), Some(Threads::Process)),
    );
    check_steps(&r, &raw, &iterations(&raw, zg), None);
}

#[test]
fn steps_are_in_time_order_with_the_ones_without_gpu_work_among_them() {
    // On this trace zero_grad launches nothing (set_to_none) and step launches the update:
    // matched together they alternate, and the array must too.
    let r = steps_with(RESNET, &regex("^Optimizer", None, None));
    assert_eq!(r.steps.len(), 10);
    assert_eq!(r.steps_without_gpu_work, 5);
    let starts: Vec<i64> = r.steps.iter().map(|s| s.cpu_start_ns.unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    for (i, s) in r.steps.iter().enumerate() {
        assert_eq!(s.index, i);
        assert_eq!(
            s.wall_ns.is_none(),
            s.name.starts_with("Optimizer.zero_grad")
        );
    }
    // Periods are still read between the steps with GPU work: step to step.
    let gpu: Vec<_> = r.steps.iter().filter(|s| s.wall_ns.is_some()).collect();
    for w in gpu.windows(2) {
        assert_eq!(
            w[0].period_ns,
            Some(w[1].gpu_start_ns.unwrap() - w[0].gpu_start_ns.unwrap())
        );
    }
}

#[test]
fn extent_and_threads_flags_need_a_regex_and_an_empty_steps_is_refused() {
    let f = fixture(GP100);
    let f = f.to_str().unwrap();
    let (code, _, err) = run(&["steps", f, "--steps-extent", "cycle"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--steps-extent and --steps-threads apply to --steps REGEX only"),
        "{err}"
    );
    let (code, _, err) = run(&["steps", f, "--steps", "Optimizer", "--steps-threads", "all"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not own or process"), "{err}");
    // An unset CI variable: `--steps "$STEPS"` with STEPS empty.
    let (code, out, err) = run(&["steps", f, "--steps", ""]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--steps is empty"), "{err}");
}
