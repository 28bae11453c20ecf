//! Each generated step-marker scenario read back by `steps` in both formats and checked against its truth.

use super::*;

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
pub(super) fn check(scn: Scenario, fmt: Format, extra: &[&str]) -> Value {
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
