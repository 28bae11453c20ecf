//! Hostile exports: long names, exports into report directories, URL schemes, the candidate in its own history, absurd step names, FIFOs, bad counts, failing and symlinked writes.

use super::*;

#[test]
fn names_longer_than_a_file_name_get_a_short_stable_partition() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    // A report whose GPU name is longer than a file name allows.
    let gpu = format!("NVIDIA H100 {}", "very long part name ".repeat(20));
    let long = d.path().join("long-gpu.sqlite");
    jittered_decode_report(&long, 8, 12, 1, &gpu, &|_| 1.0);
    export(&long, &ds, &[]);
    // The model partition is named after --model-config's path when no --model is given.
    let deep = d.path().join("m".repeat(200)).join("n".repeat(200));
    std::fs::create_dir_all(&deep).unwrap();
    let cfg = deep.join("config.json");
    let llama = serde_json::json!({
        "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "torch_dtype": "bfloat16"
    });
    std::fs::write(&cfg, llama.to_string()).unwrap();
    let (code, out, err) = run(&["export", s(&r), "-o", s(&ds), "--model-config", s(&cfg)]);
    assert_eq!(code, 0, "{out}{err}");
    for t in ["runs", "steps", "step_kernels", "kernels", "devices"] {
        for e in walk(&ds.join(t)) {
            let name = e.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.len() <= 255, "{} bytes: {name}", name.len());
        }
    }
    // The full names are in the runs table: --where matches them.
    let (code, out, err) = run(&[
        "trend",
        s(&ds),
        "--where",
        "gpu=very long part name very long",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["runs_matched"], 1);
}

pub(super) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// Run stepgate with a deadline: a command that hangs fails the test instead of hanging it.
pub(super) fn run_within(args: &[&str], limit: Duration) -> (i32, String) {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if start.elapsed() > limit {
            child.kill().unwrap();
            panic!("{args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_export_into_the_report_directory_it_reads_is_refused_before_the_work() {
    // A directory report (per-rank traces): a dataset inside it would be read as one more
    // rank next time and change the report's hash. Refused before the report is loaded,
    // so the directory's contents do not matter here.
    let d = tempfile::tempdir().unwrap();
    let rep = d.path().join("ranks");
    std::fs::create_dir(&rep).unwrap();
    std::fs::write(rep.join("rank0.json"), "{}").unwrap();
    let ds = rep.join("history");
    let (code, err) = run_within(&["export", s(&rep), "-o", s(&ds)], Duration::from_secs(60));
    assert_eq!(code, 2, "{err}");
    one_line_error(&err);
    assert!(err.contains("is inside the report directory"), "{err}");
    assert!(!ds.exists(), "the dataset was created");
    assert_eq!(walk(&rep).len(), 1, "the report directory changed");
}

#[test]
fn an_export_into_another_report_directory_is_refused_and_a_dataset_is_not_one() {
    // Exporting one capture into a directory of other ranks' traces would make the
    // export's tables part of that report. Refused before any work, nothing written.
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    let other = d.path().join("ranks");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("x_rank0.1.pt.trace.json.gz"), b"").unwrap();
    let (code, err) = run_within(&["export", s(&r), "-o", s(&other)], Duration::from_secs(60));
    assert_eq!(code, 2, "{err}");
    one_line_error(&err);
    assert!(
        err.contains("holds profiler reports (x_rank0.1.pt.trace.json.gz among them)"),
        "{err}"
    );
    assert_eq!(walk(&other).len(), 1, "the report directory changed");
    // A directory with only the capture sidecar, or an existing dataset that happens to
    // hold a report beside its tables, is a target like any other.
    let side = d.path().join("side");
    std::fs::create_dir(&side).unwrap();
    std::fs::write(side.join("capture.json"), b"{}").unwrap();
    let (code, err) = run_within(&["export", s(&r), "-o", s(&side)], Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    let ds = d.path().join("ds");
    let (code, err) = run_within(&["export", s(&r), "-o", s(&ds)], Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    std::fs::copy(&r, ds.join("kept.sqlite")).unwrap();
    let (code, err) = run_within(
        &["export", s(&r), "-o", s(&ds), "--label", "i=2"],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_url_scheme_this_build_does_not_reach_is_named_never_a_local_directory() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    for url in ["hdfs://nn/history", "http://example.invalid/h", "ftp://x/y"] {
        let out = Command::new(bin())
            .current_dir(d.path())
            .args(["export", s(&r), "-o", url])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        one_line_error(&err);
        let scheme = url.split("://").next().unwrap();
        assert!(err.contains(&format!("`{scheme}://`")), "{url}: {err}");
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["r.sqlite".to_owned()], "{url}: {left:?}");
    }
}

#[test]
fn the_candidate_is_never_in_its_own_history() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let r = d.path().join("r.sqlite");
    report(&r, 20, 1);
    let other = d.path().join("o.sqlite");
    report(&other, 20, 2);
    export(&r, &ds, &["branch=main"]);
    export(&other, &ds, &["branch=main"]);
    // Same report, same labels (same run id) or other labels (same report hash): left
    // out whatever --where says, with a warning; only the other run is the baseline.
    for labels in [
        vec!["--label", "branch=main"],
        vec!["--label", "branch=pr"],
        vec![],
    ] {
        let mut a = vec![
            "gate",
            s(&r),
            "--history",
            s(&ds),
            "--min-runs",
            "1",
            "--format",
            "json",
        ];
        if !labels.is_empty() {
            a.extend(["--export", s(&ds)]);
            a.extend(labels.iter().copied());
        }
        let (code, out, err) = run(&a);
        assert_eq!(code, 0, "{labels:?}: {out}{err}");
        let j = json(&out);
        assert_eq!(j["baseline"]["steps"], 20, "{labels:?}: {out}");
        let w = j["warnings"].to_string();
        assert!(
            w.contains("an export of this very report"),
            "{labels:?}: {w}"
        );
    }
}

#[test]
fn gate_history_export_starts_a_history_from_nothing() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("new-history");
    let r = d.path().join("r.sqlite");
    report(&r, 20, 1);
    let cmd = |r: &Path| {
        run(&[
            "gate",
            s(r),
            "--history",
            s(&ds),
            "--export",
            s(&ds),
            "--label",
            "branch=main",
        ])
    };
    let (code, out, err) = cmd(&r);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("does not exist yet"), "{out}");
    assert!(err.contains("exported run"), "{err}");
    assert_eq!(stepgate::dataset::layout::table_files(&ds, "runs").len(), 1);
    // An empty directory is the same: no runs yet.
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, out, _) = run(&["gate", s(&r), "--history", s(&empty)]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("holds no runs yet"), "{out}");
}

#[test]
fn a_baseline_recorded_from_absurd_step_names_is_one_gate_accepts() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.sqlite");
    // Steps annotated with a batch of 2^20 + 1 requests at 1000 tokens of context: the
    // floor priced for them is thousands of times the measured step.
    let b = 1_048_577u64;
    let name =
        stepgate::synth::workload::vllm_execute_detailed(b, [0; 5], [b, b, b * 1000, b, b * 1000]);
    {
        use stepgate::synth::workload::*;
        let specs = (0..30)
            .map(|i| {
                let ks = decode_kernels(8)
                    .iter()
                    .map(|k| KernelSpec::new(&k.name, k.duration_ns + (i % 5) * 10))
                    .collect();
                let mut s = StepSpec::new(Some(&name), LaunchMode::GraphNode, ks);
                s.host_gap_before_ns = 50_000;
                s
            })
            .collect();
        let mut scn = Scenario::new(stepgate::synth::Layout::Nsys2026_2, 1, specs);
        scn.gpu_name = H100.to_owned();
        build(&scn, &r).unwrap();
    }
    let (code, out, err) = run(&["steps", s(&r), "--model", "llama-3-8b", "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let mbu = json(&out)["steps"][0]["attribution"]["floor"]["mbu"].as_f64();
    assert!(
        mbu.is_some_and(|m| m > 1000.0),
        "the case must pass the bound: {mbu:?}"
    );
    let base = d.path().join("b.json");
    let (code, _, err) = run(&[
        "baseline",
        "record",
        s(&r),
        "-o",
        s(&base),
        "--model",
        "llama-3-8b",
    ]);
    assert_eq!(code, 0, "{err}");
    let recorded = err;
    // What record wrote, gate reads: the same report against it passes.
    let (code, out, err) = run(&[
        "gate",
        s(&r),
        "--baseline",
        s(&base),
        "--model",
        "llama-3-8b",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // The absurd MBU was dropped, and record said so.
    assert!(
        recorded.contains("30 derived sample(s) dropped"),
        "{recorded}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&base).unwrap()).unwrap();
    assert!(
        v["samples"]["groups"][0]["metrics"].get("mbu").is_none(),
        "{v}"
    );
}

#[test]
fn a_table_file_that_is_a_fifo_is_named_not_opened() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    let id = export(&r, &ds, &[]);
    let steps = file_of(&ds, "steps", &id);
    std::fs::remove_file(&steps).unwrap();
    assert!(Command::new("mkfifo")
        .arg(&steps)
        .status()
        .unwrap()
        .success());
    let (code, err) = run_within(&["trend", s(&ds)], Duration::from_secs(120));
    assert_eq!(code, 2, "{err}");
    one_line_error(&err);
    assert!(
        err.contains(s(&steps)) && err.contains("not a regular file"),
        "{err}"
    );
}

/// A count of runs that selects nothing, and a lock wait that is not a whole number of
/// seconds, are refused at the flag (exit 2), naming it, before any dataset is touched —
/// never silently changed to 1 or to the default.
#[test]
fn zero_counts_and_bad_timeouts_are_refused_at_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("r.sqlite");
    let ds = dir.path().join("ds");
    report(&r, 4, 1);
    let cases: &[(&[&str], &str)] = &[
        (&["trend", s(&ds), "--last", "0"], "--last must be ≥ 1"),
        (&["trend", s(&ds), "--window", "0"], "--window must be ≥ 1"),
        (
            &["trend", s(&ds), "--window", "-3"],
            "--window must be a positive number of runs",
        ),
        (
            &["gate", s(&r), "--history", s(&ds), "--last", "0"],
            "--last must be ≥ 1",
        ),
        (
            &["gate", s(&r), "--history", s(&ds), "--min-runs", "0"],
            "--min-runs must be ≥ 1",
        ),
        (
            &["export", s(&r), "-o", s(&ds), "--io-timeout", "0"],
            "give a whole number of seconds from 1 to 3600",
        ),
        (
            &["export", s(&r), "-o", s(&ds), "--io-timeout", "2.5"],
            "give a whole number of seconds from 1 to 3600",
        ),
        (
            &["dataset", "vacuum", s(&ds), "--older-than", "10s"],
            "at least 1m",
        ),
    ];
    for (args, want) in cases {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.is_empty());
        assert!(!ds.exists(), "{args:?} touched the dataset");
    }
}

/// All or nothing across `--export`: a dataset path that cannot take the run (a file, a
/// lock path that is a FIFO) or a label that is not key=value is refused before any work,
/// so the gate's JSON and the recorded baseline are not written either.
#[test]
fn an_export_that_would_fail_writes_nothing_else_first() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("r.sqlite");
    report(&r, 12, 1);
    let file = dir.path().join("notadir");
    std::fs::write(&file, "x").unwrap();
    let base = dir.path().join("base.json");
    let out = dir.path().join("out.json");
    let fresh = dir.path().join("fresh_ds");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--export", s(&file)], "exists and is not a directory"),
        (
            vec!["--export", s(&fresh), "--label", "bad"],
            "is not key=value",
        ),
    ];
    for (extra, want) in cases {
        let mut gate = vec!["gate", s(&r), "--baseline", s(&r), "--json", s(&out)];
        gate.extend(&extra);
        let mut record = vec!["baseline", "record", s(&r), "-o", s(&base)];
        record.extend(&extra);
        for args in [gate, record] {
            let (code, stdout, err) = run(&args);
            assert_eq!(code, 2, "{args:?}: {err}");
            one_line_error(&err);
            assert!(err.contains(want), "{args:?}: {err}");
            assert!(stdout.is_empty(), "{args:?}");
            assert!(!out.exists() && !base.exists(), "{args:?} wrote an output");
            assert!(!fresh.exists(), "{args:?} made the dataset");
        }
    }
}

/// A partition directory planted as a symbolic link inside a local dataset (a dataset
/// committed in a pull request's checkout) is refused in one line: nothing is written
/// where it points.
#[test]
fn a_symlinked_directory_inside_a_dataset_is_never_written_through() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let outside = d.path().join("outside");
    let r = d.path().join("r.sqlite");
    report(&r, 12, 1);
    export(&r, &ds, &[]);
    // `runs/` (where the commit row goes) now points outside the dataset.
    std::fs::rename(ds.join("runs"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, ds.join("runs")).unwrap();
    let before = walk(&outside);
    let (code, _, err) = run(&["export", s(&r), "-o", s(&ds), "--label", "x=2"]);
    assert_eq!(code, 2, "{err}");
    one_line_error(&err);
    assert!(
        err.contains("is a symbolic link") && err.contains(s(&ds.join("runs"))),
        "{err}"
    );
    assert_eq!(walk(&outside), before);
}

/// Unmounts its tmpfs however the test ends.
pub(super) struct Mounted(pub(super) PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
