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

/// The report's steps of one series (its pid), in time order.
fn series_steps<'a>(r: &'a Value, s: &SeriesTruth) -> Vec<&'a Value> {
    let mut v: Vec<&Value> = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["pid"].as_i64() == Some(s.pid))
        .collect();
    v.sort_by_key(|x| {
        (
            x["cpu_start_ns"].as_i64().or(x["gpu_start_ns"].as_i64()),
            x["index"].as_u64(),
        )
    });
    v
}

/// Check one capture's discovered steps against its truth.
fn check(scn: Scenario, fmt: Format, extra: &[&str]) -> Value {
    let (_d, path, truth) = generate(scn, fmt);
    let what = format!("{} {}", scn.name(), fmt.as_str());
    let r = steps_json(&path, extra);
    if truth.found_by != "mixed" {
        assert_eq!(r["found_by"].as_str(), Some(&*truth.found_by), "{what}");
    }
    // Not an engine marker: the report says which flag or version makes steps exact.
    if truth.found_by != "marker" {
        let hint = r["exact_steps_hint"].as_str().unwrap_or("");
        assert!(!hint.is_empty(), "{what}: no exact_steps_hint");
    }
    assert!(r["warnings"].is_array(), "{what}: warnings");
    assert!(r["method"].is_string(), "{what}: method (kept)");
    assert!(!r["outside_steps"].is_null(), "{what}: outside_steps");
    for s in &truth.series {
        let got = series_steps(&r, s);
        assert_eq!(
            got.len(),
            s.steps.len(),
            "{what} rank {} step count",
            s.rank
        );
        for (g, t) in got.iter().zip(&s.steps) {
            let at = format!("{what} rank {} step {}", s.rank, t.index);
            assert_eq!(g["found_by"].as_str(), Some(&*t.found_by), "{at} found_by");
            assert_eq!(g["kind"].as_str(), Some(&*t.kind), "{at} kind");
            let busy = g["busy_ns"].as_i64().unwrap();
            let tail = g["tail_busy_ns"].as_i64().unwrap_or(0);
            let tail_k = g["tail_kernels"].as_u64().unwrap_or(0);
            let kernels = g["kernels"].as_u64().unwrap();
            if t.name.is_some() {
                // A span marks the step: busy is its own projection, the rest is tail.
                assert_eq!(busy, t.busy_ns, "{at} busy");
                assert_eq!(kernels, t.kernels, "{at} kernels");
                assert_eq!(tail, t.tail_busy_ns, "{at} tail_busy_ns");
                assert_eq!(tail_k, t.tail_kernels, "{at} tail_kernels");
                assert_eq!(g["ops"].as_u64(), Some(t.ops), "{at} ops");
                assert_eq!(g["tail_ops"].as_u64(), Some(t.tail_ops), "{at} tail_ops");
                assert_eq!(g["gpu_start_ns"].as_i64(), t.gpu_start_ns, "{at} gpu start");
                assert_eq!(g["gpu_end_ns"].as_i64(), t.gpu_end_ns, "{at} gpu end");
            } else {
                // No span: where busy ends and tail begins is the finder's choice; together
                // they are the whole iteration.
                assert_eq!(busy + tail, t.busy_ns + t.tail_busy_ns, "{at} busy+tail");
                assert_eq!(
                    kernels + tail_k,
                    t.kernels + t.tail_kernels,
                    "{at} kernels+tail"
                );
            }
            if let Some(c) = &t.composition {
                let gc = &g["composition"];
                assert_eq!(
                    gc["context"]["requests"].as_u64(),
                    Some(c.context_requests),
                    "{at} ctx reqs"
                );
                assert_eq!(
                    gc["generation"]["requests"].as_u64(),
                    Some(c.generation_requests),
                    "{at} gen reqs"
                );
                if let Some(tok) = c.context_tokens {
                    assert_eq!(gc["context"]["sq"].as_u64(), Some(tok), "{at} ctx tokens");
                }
            }
        }
    }
    r
}

#[test]
fn steps_vllm_v1_python_stack_tp4_piecewise() {
    check(Scenario::VllmV1Python, Format::Kineto, &[]);
}

#[test]
fn steps_vllm_v1_under_nsys_from_its_per_step_sync() {
    // The server under nsys: 81 graph launches per decode, no marker, no python;
    // the blocking copy of the sampled tokens ends each of the 10 steps with GPU work.
    let r = check(Scenario::VllmV1Python, Format::Nsys, &[]);
    assert_eq!(r["steps"].as_array().unwrap().len(), 40);
}

#[test]
fn steps_vllm_v1_python_stack_with_a_host_stall() {
    check(Scenario::VllmV1PythonStall, Format::Kineto, &[]);
}

#[test]
fn steps_vllm_v1_python_stack_with_sample_tokens_tail() {
    check(Scenario::VllmV1PythonAsync, Format::Kineto, &[]);
}

#[test]
fn steps_vllm_execute_context_and_new_both_formats() {
    for scn in [Scenario::VllmExecuteContext, Scenario::VllmExecuteNew] {
        for fmt in [Format::Kineto, Format::Nsys] {
            check(scn, fmt, &[]);
        }
    }
}

#[test]
fn steps_vllm_custom_scopes_both_formats() {
    check(Scenario::VllmCustomScopes, Format::Kineto, &[]);
    check(Scenario::VllmCustomScopes, Format::Nsys, &[]);
}

#[test]
fn steps_sglang_step_marker_wins_over_scheduler_and_python() {
    check(Scenario::SglangStep, Format::Kineto, &[]);
}

#[test]
fn steps_sglang_python_frames_without_step_marker() {
    check(Scenario::SglangPython, Format::Kineto, &[]);
}

#[test]
fn steps_sglang_under_nsys_without_marker_from_graphs_and_syncs() {
    check(Scenario::SglangNsysBare, Format::Nsys, &[]);
}

#[test]
fn steps_sglang_scheduler_nvtx() {
    check(Scenario::SglangScheduler, Format::Nsys, &[]);
}

#[test]
fn steps_trtllm_composition_and_floor() {
    for scn in [Scenario::Trtllm, Scenario::TrtllmOld] {
        let (_d, _path, truth) = generate(scn, Format::Nsys);
        let r = check(
            scn,
            Format::Nsys,
            &[
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100-sxm",
                "--context",
                "1024",
            ],
        );
        let mut unpriced = 0;
        for st in &truth.series {
            for (s, t) in series_steps(&r, st).iter().zip(&st.steps) {
                let f = s["attribution"]["floor"]["floor_ns"].as_f64();
                let c = t.composition.as_ref().unwrap();
                // A prefill's floor scales with its context tokens. The older TensorRT-LLM
                // form names context requests but not their tokens (and --context is the
                // decode KV length, not a prompt length): those steps cannot be priced,
                // and a made-up floor would be a guess presented as fact. Decode-only
                // steps can.
                if c.context_requests == 0 || c.context_tokens.is_some() {
                    assert!(f.is_some_and(|f| f > 0.0), "{}: no floor: {s}", scn.name());
                } else {
                    assert!(f.is_none(), "{}: floor without tokens: {s}", scn.name());
                    unpriced += 1;
                }
            }
        }
        let notes = r["notes"].to_string();
        if scn == Scenario::Trtllm {
            assert_eq!(unpriced, 0);
            assert!(!notes.contains("not their token count"), "{notes}");
        } else {
            // Iteration 100's context step and iteration 106's mixed one.
            assert_eq!(unpriced, 2);
            assert!(
                notes.contains(
                    "2 step(s) name context (prefill) requests but not their token count"
                ),
                "{notes}"
            );
        }
        // --context was given: no note may ask for it again.
        assert!(!notes.contains("pass --context"), "{notes}");
    }
}

#[test]
fn steps_pytorch_profiler_steps_back_to_back() {
    check(Scenario::ProfilerStep, Format::Kineto, &[]);
}

#[test]
fn steps_emit_nvtx_suffixes_tolerated() {
    check(Scenario::EmitNvtx, Format::Nsys, &[]);
}

#[test]
fn steps_sync_only_both_formats() {
    check(Scenario::SyncOnly, Format::Kineto, &[]);
    check(Scenario::SyncOnly, Format::Nsys, &[]);
}

#[test]
fn steps_pytorch_training_loop_from_its_recurring_annotations() {
    for fmt in [Format::Kineto, Format::Nsys] {
        let r = check(Scenario::PytorchTrain, fmt, &[]);
        let what = format!("{fmt:?}");
        assert_eq!(r["method"].as_str(), Some("recurring"), "{what}");
        assert_eq!(
            r["found_by_engine"].as_str(),
            Some("PyTorch training loop without ProfilerStep"),
            "{what}"
        );
        let notes = r["notes"].to_string();
        assert!(
            notes.contains("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ → Optimizer.zero_grad#SGD.zero_grad → Optimizer.step#SGD.step"),
            "{what}: {notes}"
        );
        assert!(
            notes.contains("1 final cycle(s) never completed"),
            "{what}: {notes}"
        );
        // The partial iteration before the first `__next__` and the metrics copy after the
        // last one are outside steps.
        let o = &r["outside_steps"][0];
        assert!(o["before_ns"].as_i64().unwrap() > 0, "{what}: {o}");
        assert!(o["after_ns"].as_i64().unwrap() > 0, "{what}: {o}");
    }
    // Forced on the same capture, the families that find nothing there say so.
    let (_d, path, _) = generate(Scenario::PytorchTrain, Format::Nsys);
    let (code, _, err) = common::run(&["steps", path.to_str().unwrap(), "--steps", "marker"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn steps_annotations_out_of_lockstep_fall_through_to_syncs() {
    let r = check(Scenario::PytorchTrainUnstable, Format::Kineto, &[]);
    assert_eq!(r["method"].as_str(), Some("sync"));
    let (_d, path, _) = generate(Scenario::PytorchTrainUnstable, Format::Kineto);
    let (code, _, err) = common::run(&["steps", path.to_str().unwrap(), "--steps", "recurring"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--steps recurring: no annotations recur in a stable cycle"),
        "{err}"
    );
}

#[test]
fn steps_contradictory_markers_give_the_inner_steps_and_a_warning() {
    // One ~1 s vLLM `execute_…` around 20 SGLang `step[DECODE bs=8]`: 20 decode steps,
    // and the report says why the outer marker is not one.
    let r = check(Scenario::MarkersContradict, Format::Kineto, &[]);
    assert_eq!(r["steps"].as_array().unwrap().len(), 20);
    let w: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        w.iter()
            .any(|w| w.contains("\"execute_context_0(0)_generation_8(8)\" encloses 20")),
        "{w:?}"
    );
    let (_d, path, _) = generate(Scenario::MarkersContradict, Format::Kineto);
    let (code, out, _) = common::run(&["steps", path.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.starts_with("warning: 1 step marker(s) enclose several")),
        "{out}"
    );
}

#[test]
fn steps_an_empty_steps_value_is_refused_not_matched_against_everything() {
    let (_d, path, _) = generate(Scenario::SyncOnly, Format::Nsys);
    for args in [&["--steps", ""][..], &["--steps", "   "]] {
        let mut a = vec!["steps", path.to_str().unwrap()];
        a.extend_from_slice(args);
        let (code, out, err) = common::run(&a);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("--steps is empty (an unset variable?)"),
            "{err}"
        );
    }
}

#[test]
fn steps_forced_source_overrides_discovery() {
    // --steps graphs on the vLLM python trace (Kineto: no graph ids) and on its nsys form
    // (graph ids): graph launches grouped, no python. The 81 pieces of a decode (with the
    // eager attention between them) have no host sync between them and replay 81
    // different graphs: one step per decode, never one per piece (729 per rank).
    for fmt in [Format::Kineto, Format::Nsys] {
        let (_d, path, truth) = generate(Scenario::VllmV1Python, fmt);
        let r = steps_json(&path, &["--steps", "graphs"]);
        assert_eq!(r["found_by"].as_str(), Some("graphs"));
        for s in &truth.series {
            let got = series_steps(&r, s);
            let decodes: Vec<_> = s.steps.iter().filter(|t| t.graph_launches > 0).collect();
            assert_eq!(decodes.len(), 9);
            assert_eq!(got.len(), decodes.len(), "{fmt:?} rank {}", s.rank);
            for (g, t) in got.iter().zip(&decodes) {
                assert_eq!(
                    g["name"].as_str(),
                    Some(&*format!("[{} CUDA-graph launches]", t.graph_launches)),
                    "{fmt:?} rank {}",
                    s.rank
                );
                // The group spans first to last launch: its busy time is the 81 pieces
                // and the 80 attention kernels between them; the decode's sampling and
                // copies fall outside the group (tail or outside steps).
                assert!(g["busy_ns"].as_i64().unwrap() <= t.busy_ns);
                assert!(g["busy_ns"].as_i64().unwrap() * 10 >= t.busy_ns * 9);
            }
        }
    }
}

/// The real vLLM fixtures carry `gpu_model_runner.py(N): execute_model` next to their
/// `execute_…` annotation: with the annotation dropped they are the annotation-less form of a
/// real trace, and the python frame must give the step, with the busy time of the projection
/// computed here.
#[test]
fn steps_real_vllm_traces_without_annotation_come_from_python_frames() {
    for (fixture, frame) in [
        (
            "kineto/vllm_b200_eager_prefill_rank0.json.gz",
            "vllm/v1/worker/gpu_model_runner.py(2907): execute_model",
        ),
        (
            "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
            "vllm/v1/worker/gpu_model_runner.py(3380): execute_model",
        ),
    ] {
        let mut v = read_trace(&common::fixture(fixture));
        let before = v["traceEvents"].as_array().unwrap().len();
        v["traceEvents"]
            .as_array_mut()
            .unwrap()
            .retain(|e| !e["name"].as_str().unwrap_or("").starts_with("execute_"));
        let dropped = before - v["traceEvents"].as_array().unwrap().len();
        assert!(dropped >= 1, "{fixture}: no execute_ annotation to drop");
        let want = python_span_busy(&v, frame);
        assert_eq!(want.len(), 1, "{fixture}");
        assert!(want[0].0 > 0, "{fixture}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no_annotation.json");
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
        let r = steps_json(&path, &[]);
        assert_eq!(r["found_by"].as_str(), Some("python"), "{fixture}");
        let steps = r["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 1, "{fixture}");
        assert_eq!(steps[0]["found_by"].as_str(), Some("python"), "{fixture}");
        assert_eq!(steps[0]["kind"].as_str(), Some("unknown"), "{fixture}");
        assert_eq!(steps[0]["busy_ns"].as_i64(), Some(want[0].0), "{fixture}");
        assert_eq!(steps[0]["kernels"].as_u64(), Some(want[0].1), "{fixture}");
    }
}

#[test]
fn generator_real_fixture_python_projection_sees_the_annotated_steps_work() {
    // The independent projection agrees with today's annotation projection on the real
    // files where the python frame encloses the annotation (it can only add ops launched
    // between the two spans' edges, which these traces do not have).
    for (fixture, frame) in [
        (
            "kineto/vllm_b200_eager_prefill_rank0.json.gz",
            "vllm/v1/worker/gpu_model_runner.py(2907): execute_model",
        ),
        (
            "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
            "vllm/v1/worker/gpu_model_runner.py(3380): execute_model",
        ),
    ] {
        let path = common::fixture(fixture);
        let got = python_span_busy(&read_trace(&path), frame);
        let r = steps_json(&path, &[]);
        let steps = r["steps"].as_array().unwrap();
        assert_eq!((got.len(), steps.len()), (1, 1), "{fixture}");
        assert!(
            got[0].0 >= steps[0]["busy_ns"].as_i64().unwrap(),
            "{fixture}: python {} < annotation {}",
            got[0].0,
            steps[0]["busy_ns"]
        );
    }
}

#[test]
fn generator_cli_writes_the_capture_and_its_truth() {
    let synth = env!("CARGO_BIN_EXE_stepgate-synth");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trt.sqlite");
    let truth_path = dir.path().join("truth.json");
    let st = std::process::Command::new(synth)
        .args(["steps", "--scenario", "trtllm", "--format", "nsys", "-o"])
        .arg(&out)
        .arg("--truth")
        .arg(&truth_path)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let from_cli: Truth =
        serde_json::from_str(&std::fs::read_to_string(&truth_path).unwrap()).unwrap();
    let (_d, _p, direct) = generate(Scenario::Trtllm, Format::Nsys);
    // Same schedule, same truth (only the file path differs).
    assert_eq!(from_cli.series, direct.series);
    assert_eq!(from_cli.found_by, "marker");
    // TP=2, 12 iterations each; the TensorRT-LLM domain is declared once per process.
    assert_eq!(from_cli.series.len(), 2);
    assert!(from_cli.series.iter().all(|s| s.steps.len() == 12));
    let conn = rusqlite::Connection::open(&out).unwrap();
    let domains: i64 = conn
        .query_row(
            "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'TensorRT-LLM'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(domains, 2);
    let in_domain: i64 = conn
        .query_row(
            "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND domainId = 1 \
             AND text LIKE '[Executor] _forward_step %'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(in_domain, 24);
    // A marker form the engine cannot write is an input error (exit 2).
    let st = std::process::Command::new(synth)
        .args(["steps", "--scenario", "trtllm", "--format", "kineto", "-o"])
        .arg(dir.path().join("x.json"))
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    let list = std::process::Command::new(synth)
        .args(["steps", "--list"])
        .output()
        .unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    assert_eq!(list.lines().count(), Scenario::ALL.len());
    assert!(list.contains("vllm-v1-python") && list.contains("kineto"));
}

#[test]
fn generator_python_spans_and_tails_match_an_independent_projection() {
    // sample_tokens after each execute_model is the tail (vLLM >= 0.11.2); SGLang's
    // process_batch_result after run_batch is too.
    for (scn, step_frame, tail_frame) in [
        (
            Scenario::VllmV1PythonAsync,
            "vllm/v1/worker/gpu_worker.py(520): execute_model",
            "vllm/v1/worker/gpu_worker.py(497): sample_tokens",
        ),
        (
            Scenario::SglangPython,
            "sglang/srt/managers/scheduler.py(1378): run_batch",
            "sglang/srt/managers/scheduler.py(1501): process_batch_result",
        ),
    ] {
        let (_d, path, truth) = generate(scn, Format::Kineto);
        let files: Vec<PathBuf> = if path.is_dir() {
            let mut f: Vec<PathBuf> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            f.sort();
            f
        } else {
            vec![path.clone()]
        };
        assert_eq!(files.len(), truth.series.len(), "{}", scn.name());
        for (f, s) in files.iter().zip(&truth.series) {
            let v = read_trace(f);
            let body = python_span_busy(&v, step_frame);
            let tail = python_span_busy(&v, tail_frame);
            assert_eq!(body.len(), s.steps.len(), "{}", scn.name());
            for (b, st) in body.iter().zip(&s.steps) {
                assert_eq!((b.0, b.1), (st.busy_ns, st.kernels), "{}", scn.name());
            }
            // One tail frame per step that has GPU work after its span.
            let with_tail: Vec<_> = s.steps.iter().filter(|t| t.tail_ops > 0).collect();
            assert!(with_tail.len() + 1 >= s.steps.len(), "{}", scn.name());
            assert_eq!(tail.len(), with_tail.len(), "{}", scn.name());
            for (t, st) in tail.iter().zip(with_tail) {
                assert_eq!(
                    (t.0, t.1),
                    (st.tail_busy_ns, st.tail_kernels),
                    "{}",
                    scn.name()
                );
            }
        }
    }
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
