//! Steps on synthetic captures of every step-marker form (vLLM V1 python stack, vLLM
//! annotations and scopes, SGLang, TensorRT-LLM, PyTorch `ProfilerStep#N`, emit_nvtx, a
//! training loop's recurring annotations, no marker at all, contradictory markers), in
//! Kineto and nsys form. The generator computes each capture's steps
//! from its own schedule; `stepgate steps --format json` must find exactly those.
//!
//! Two groups: `generator_*` check the captures themselves against an independent reading
//! (the loader's ops, or a projection done here on the raw JSON) and pass on their own;
//! `steps_*` check step discovery against the JSON contract (`found_by`, `tail_busy_ns`,
//! `exact_steps_hint`, …).

mod projection;
mod scenarios;

use crate::common::union_ns;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stepgate::synth::steps::{build, Scenario};
use stepgate::trace::OpKind;
use stepgate::wire::synth::{Format, SeriesTruth, Truth};

use super::common;

/// Generate `scn` in `fmt` into a fresh directory.
fn generate(scn: Scenario, fmt: Format) -> (tempfile::TempDir, PathBuf, Truth) {
    let dir = tempfile::tempdir().unwrap();
    let name = match fmt {
        Format::Nsys => format!("{}.sqlite", scn.name()),
        Format::Kineto => format!("{}.pt.trace.json.gz", scn.name()),
    };
    let path = dir.path().join(name);
    let truth = build(scn, fmt, &path).unwrap();
    (dir, path, truth)
}

fn every_capture() -> Vec<(Scenario, Format)> {
    Scenario::ALL
        .iter()
        .flat_map(|s| s.formats().iter().map(move |f| (*s, *f)))
        .collect()
}

#[test]
fn generator_scenarios_and_formats_are_consistent() {
    // 18 scenarios; the formats each engine can produce its marker in.
    assert_eq!(Scenario::ALL.len(), 18);
    assert_eq!(every_capture().len(), 24);
    for s in Scenario::ALL {
        assert_eq!(Scenario::from_name(s.name()).unwrap(), s);
    }
    assert!(Scenario::from_name("nope").is_err());
    let dir = tempfile::tempdir().unwrap();
    // ProfilerStep#N is a torch annotation only: asking for its nsys form is an input error.
    let e = build(
        Scenario::ProfilerStep,
        Format::Nsys,
        &dir.path().join("x.sqlite"),
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 2);
}

/// The same scenario written twice is the same file, byte for byte (tables are created in
/// a fixed order), so a benchmark input or a bug report can be regenerated exactly.
#[test]
fn generator_writes_the_same_bytes_every_run() {
    for scn in [Scenario::SglangNsysBare, Scenario::Trtllm] {
        let (_a, pa, _) = generate(scn, Format::Nsys);
        let (_b, pb, _) = generate(scn, Format::Nsys);
        let (a, b) = (std::fs::read(&pa).unwrap(), std::fs::read(&pb).unwrap());
        assert!(a.len() > 4096, "{}", scn.name());
        assert!(a == b, "{}: two runs wrote different files", scn.name());
    }
}

#[test]
fn generator_captures_load_with_the_truths_ops_and_busy_union() {
    for (scn, fmt) in every_capture() {
        let (_d, path, truth) = generate(scn, fmt);
        let what = format!("{} {}", scn.name(), fmt.as_str());
        let t = stepgate::source::load(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        let dev = t.ops.column("device").unwrap().i32().unwrap();
        let st = t.ops.column("start_ns").unwrap().i64().unwrap();
        let en = t.ops.column("end_ns").unwrap().i64().unwrap();
        let kind = t.ops.column("kind").unwrap().u32().unwrap();
        for s in &truth.series {
            let mut iv = Vec::new();
            let mut kernels = 0u64;
            for i in 0..t.ops.height() {
                if dev.get(i).map(i64::from) == Some(s.device) {
                    iv.push((st.get(i).unwrap(), en.get(i).unwrap()));
                    kernels += (kind.get(i) == Some(OpKind::Kernel as u32)) as u64;
                }
            }
            assert_eq!(iv.len() as u64, s.device_ops, "{what} device {}", s.device);
            assert_eq!(kernels, s.device_kernels, "{what} device {}", s.device);
            // The loader's union equals the truth's (a plain sum where one stream runs).
            assert_eq!(union_ns(iv), s.device_busy_ns, "{what} device {}", s.device);
            // The truth accounts every op once: steps, tails and outside.
            let acc: i64 = s
                .steps
                .iter()
                .map(|x| x.busy_ns + x.tail_busy_ns)
                .sum::<i64>()
                + s.outside_busy_ns;
            assert_eq!(acc, s.device_busy_ns, "{what}");
        }
    }
}

/// A Kineto file's JSON (gzip or plain).
fn read_trace(file: &Path) -> Value {
    use std::io::Read;
    let raw = std::fs::read(file).unwrap();
    let mut text = String::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8(raw).unwrap();
    }
    serde_json::from_str(&text).unwrap()
}

/// A second, independent projection of python step spans, done here on the raw Kineto JSON:
/// span → runtime/driver calls on its thread inside it → correlation → kernel, memcpy and
/// memset intervals, unioned. Returns (busy, kernels) per span, in time order.
fn python_span_busy(v: &Value, span_name: &str) -> Vec<(i64, u64)> {
    let ns = |x: &Value| -> i64 { (x.as_f64().unwrap() * 1000.0).round() as i64 };
    let thread = |e: &Value| (e["pid"].to_string(), e["tid"].to_string());
    let ev = v["traceEvents"].as_array().unwrap();
    let mut spans = Vec::new();
    let mut calls = Vec::new();
    let mut ops: BTreeMap<i64, Vec<(i64, i64, bool)>> = BTreeMap::new();
    for e in ev {
        if e["ph"] != "X" {
            continue;
        }
        let (s, d) = (ns(&e["ts"]), ns(&e["dur"]));
        match e["cat"].as_str() {
            Some("python_function") if e["name"] == span_name => spans.push((s, s + d, thread(e))),
            Some("cuda_runtime" | "cuda_driver") => {
                if let Some(c) = e["args"]["correlation"].as_i64() {
                    calls.push((s, s + d, c, thread(e)));
                }
            }
            Some(c @ ("kernel" | "gpu_memcpy" | "gpu_memset")) => ops
                .entry(e["args"]["correlation"].as_i64().unwrap())
                .or_default()
                .push((s, s + d, c == "kernel")),
            _ => {}
        }
    }
    spans.sort();
    spans
        .iter()
        .map(|(a, b, th)| {
            let mut iv = Vec::new();
            let mut k = 0;
            for (cs, ce, corr, cth) in &calls {
                if cs >= a && ce <= b && cth == th {
                    for &(s, e, is_k) in ops.get(corr).map(|v| &v[..]).unwrap_or(&[]) {
                        iv.push((s, e));
                        k += is_k as u64;
                    }
                }
            }
            (union_ns(iv), k)
        })
        .collect()
}

#[test]
fn generator_vllm_v1_python_trace_matches_an_independent_projection() {
    let (_d, dir, truth) = generate(Scenario::VllmV1Python, Format::Kineto);
    assert_eq!(truth.series.len(), 4);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 4);
    for (f, s) in files.iter().zip(&truth.series) {
        let got = python_span_busy(
            &read_trace(f),
            "vllm/v1/worker/gpu_worker.py(263): execute_model",
        );
        assert_eq!(got.len(), 11, "{}", f.display());
        for (g, t) in got.iter().zip(&s.steps) {
            assert_eq!(g.0, t.busy_ns, "rank {} step {}", s.rank, t.index);
            assert_eq!(g.1, t.kernels, "rank {} step {}", s.rank, t.index);
        }
        // The shape: 1 prefill of ~84 ms, 9 decodes of ~16.5 ms with 81 graph
        // launches and 80 eager attention kernels between them, 1 step without GPU work.
        let busy: Vec<i64> = s.steps.iter().map(|t| t.busy_ns).collect();
        assert!((83_000_000..86_000_000).contains(&busy[0]), "{busy:?}");
        for b in &busy[1..10] {
            assert!((16_000_000..17_000_000).contains(b), "{busy:?}");
        }
        assert_eq!(busy[10], 0);
        assert!(s.steps[1..10].iter().all(|t| t.graph_launches == 81));
    }
    // Python frames are most of the trace, as with_stack makes them.
    let text = {
        use std::io::Read;
        let mut t = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&files[0]).unwrap())
            .read_to_string(&mut t)
            .unwrap();
        t
    };
    let py = text.matches("\"cat\": \"python_function\"").count();
    let all = text.matches("\"ph\": \"X\"").count();
    assert!(py * 2 > all, "{py} python_function of {all} events");
}

#[test]
fn generator_marker_scenarios_agree_with_todays_range_projection() {
    // Where the marker is one today's reader already projects, its busy/kernels equal the
    // truth: the generator's arithmetic and the projection are two methods.
    for (scn, fmt) in [
        (Scenario::VllmExecuteContext, Format::Kineto),
        (Scenario::VllmExecuteContext, Format::Nsys),
        (Scenario::VllmExecuteNew, Format::Kineto),
        (Scenario::VllmExecuteNew, Format::Nsys),
        (Scenario::SglangStep, Format::Kineto),
    ] {
        let (_d, path, truth) = generate(scn, fmt);
        let r = steps_json(&path, &[]);
        let steps = r["steps"].as_array().unwrap();
        let s = &truth.series[0];
        assert_eq!(steps.len(), s.steps.len(), "{}", scn.name());
        for (g, t) in steps.iter().zip(&s.steps) {
            assert_eq!(g["busy_ns"].as_i64().unwrap(), t.busy_ns, "{}", scn.name());
            assert_eq!(g["kernels"].as_u64().unwrap(), t.kernels, "{}", scn.name());
            assert_eq!(g["kind"].as_str().unwrap(), t.kind, "{}", scn.name());
            assert_eq!(g["gpu_start_ns"].as_i64(), t.gpu_start_ns, "{}", scn.name());
            assert_eq!(g["gpu_end_ns"].as_i64(), t.gpu_end_ns, "{}", scn.name());
        }
    }
}

/// The raw rows of a generated training capture, read without stepgate: the start of
/// every `enumerate(DataLoader)#…` range, each runtime/driver call's (start, correlation),
/// and each GPU op's (start, end, correlation, stream).
struct TrainRows {
    openers: Vec<i64>,
    calls: Vec<(i64, i64)>,
    ops: Vec<(i64, i64, i64, i64)>,
}

fn raw_train_rows(path: &Path, fmt: Format) -> TrainRows {
    let (mut openers, mut calls, mut ops) = (Vec::new(), Vec::new(), Vec::new());
    match fmt {
        Format::Kineto => {
            let ns = |x: &Value| -> i64 { (x.as_f64().unwrap() * 1000.0).round() as i64 };
            for e in read_trace(path)["traceEvents"].as_array().unwrap() {
                if e["ph"] != "X" {
                    continue;
                }
                let (s, d) = (ns(&e["ts"]), ns(&e["dur"]));
                match e["cat"].as_str() {
                    Some("user_annotation")
                        if e["name"]
                            .as_str()
                            .unwrap()
                            .starts_with("enumerate(DataLoader)#") =>
                    {
                        openers.push(s);
                    }
                    Some("cuda_runtime" | "cuda_driver") => {
                        calls.push((s, e["args"]["correlation"].as_i64().unwrap()));
                    }
                    Some("kernel" | "gpu_memcpy" | "gpu_memset") => ops.push((
                        s,
                        s + d,
                        e["args"]["correlation"].as_i64().unwrap(),
                        e["args"]["stream"].as_i64().unwrap(),
                    )),
                    _ => {}
                }
            }
        }
        Format::Nsys => {
            let db = rusqlite::Connection::open(path).unwrap();
            let rows = |sql: &str| -> Vec<Vec<i64>> {
                let mut st = db.prepare(sql).unwrap();
                let n = st.column_count();
                st.query_map([], |r| (0..n).map(|i| r.get(i)).collect())
                    .unwrap()
                    .map(Result::unwrap)
                    .collect()
            };
            openers =
                rows("SELECT start FROM NVTX_EVENTS WHERE text LIKE 'enumerate(DataLoader)#%'")
                    .into_iter()
                    .map(|r| r[0])
                    .collect();
            calls = rows("SELECT start, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME")
                .into_iter()
                .map(|r| (r[0], r[1]))
                .collect();
            ops = rows(
                "SELECT start, end, correlationId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL \
                 UNION ALL SELECT start, end, correlationId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY",
            )
            .into_iter()
            .map(|r| (r[0], r[1], r[2], r[3]))
            .collect();
        }
    }
    openers.sort_unstable();
    TrainRows {
        openers,
        calls,
        ops,
    }
}

/// With kernels on two streams overlapping inside a step, busy is the union of the step's
/// op intervals, not their sum: both computed here from the generated rows (the ops whose
/// launching call, on any thread, starts between two `enumerate(DataLoader)` openers).
#[test]
fn generator_overlapping_streams_busy_is_a_union_not_a_sum() {
    for fmt in [Format::Kineto, Format::Nsys] {
        let (_d, path, truth) = generate(Scenario::PytorchTrain, fmt);
        let TrainRows {
            openers,
            calls,
            ops,
        } = raw_train_rows(&path, fmt);
        // Six iterations, then the loop's final StopIteration `__next__`.
        assert_eq!(openers.len(), 7, "{fmt:?}");
        let streams: std::collections::BTreeSet<i64> = ops.iter().map(|o| o.3).collect();
        assert_eq!(streams.len(), 2, "{fmt:?}: a compute and a comm stream");
        let r = steps_json(&path, &[]);
        let steps = r["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 6, "{fmt:?}");
        for (k, w) in openers.windows(2).enumerate() {
            let corr: std::collections::HashSet<i64> = calls
                .iter()
                .filter(|c| c.0 >= w[0] && c.0 < w[1])
                .map(|c| c.1)
                .collect();
            let iv: Vec<(i64, i64)> = ops
                .iter()
                .filter(|o| corr.contains(&o.2))
                .map(|o| (o.0, o.1))
                .collect();
            let sum: i64 = iv.iter().map(|(a, b)| b - a).sum();
            let union = union_ns(iv);
            assert!(
                union < sum,
                "{fmt:?} step {k}: the streams overlap ({union} vs {sum})"
            );
            assert_eq!(
                steps[k]["busy_ns"].as_i64(),
                Some(union),
                "{fmt:?} step {k}"
            );
            assert_eq!(truth.series[0].steps[k].busy_ns, union, "{fmt:?} truth {k}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Step discovery against the contract.

fn steps_json(path: &Path, extra: &[&str]) -> Value {
    let p = path.to_str().unwrap();
    let mut args = vec!["steps", p, "--format", "json"];
    args.extend_from_slice(extra);
    let (code, out, err) = common::run(&args);
    assert_eq!(code, 0, "stepgate {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn steps_headline_names_the_engine_and_each_method() {
    // (scenario, format, the headline's method words given the truth's step counts).
    type Words = fn(&Truth) -> String;
    let cases: [(Scenario, Format, Words); 4] = [
        (Scenario::VllmV1Python, Format::Kineto, |_| {
            "python-stack spans (heuristic: vLLM V1 without step annotation)".to_owned()
        }),
        (Scenario::SglangScheduler, Format::Nsys, |_| {
            "scheduler scopes (SGLang scheduler.run_batch)".to_owned()
        }),
        (Scenario::PytorchTrain, Format::Nsys, |_| {
            "recurring annotations (heuristic: PyTorch training loop without ProfilerStep)"
                .to_owned()
        }),
        (Scenario::SglangNsysBare, Format::Nsys, |t| {
            let n = |by: &str| {
                t.series
                    .iter()
                    .flat_map(|s| &s.steps)
                    .filter(|x| x.found_by == by)
                    .count()
            };
            format!(
                "host sync points ({}) and CUDA-graph launch groups ({}) (heuristic)",
                n("sync"),
                n("graphs")
            )
        }),
    ];
    for (scn, fmt, how) in cases {
        let (_d, path, truth) = generate(scn, fmt);
        let p = path.to_str().unwrap();
        let (code, out, err) = common::run(&["steps", p]);
        assert_eq!(code, 0, "{err}");
        // The JSON names the engine too, where the family identifies one.
        let j = steps_json(&path, &[]);
        let engine = j["found_by_engine"].as_str();
        match scn {
            Scenario::VllmV1Python => {
                assert_eq!(engine, Some("vLLM V1 without step annotation"));
            }
            Scenario::SglangScheduler => assert_eq!(engine, Some("SGLang scheduler.run_batch")),
            Scenario::PytorchTrain => {
                assert_eq!(engine, Some("PyTorch training loop without ProfilerStep"));
            }
            _ => assert!(j.get("found_by_engine").is_none(), "{j}"),
        }
        let steps: usize = truth.series.iter().map(|s| s.steps.len()).sum();
        let empty = truth
            .series
            .iter()
            .flat_map(|s| &s.steps)
            .filter(|x| x.gpu_start_ns.is_none() && x.tail_ops == 0)
            .count();
        let want = format!(
            "stepgate steps: {p}: {steps} steps by {} on {} rank(s); {empty} without GPU work",
            how(&truth),
            truth.series.len()
        );
        assert_eq!(out.lines().next(), Some(&*want), "{}", scn.name());
    }
}
