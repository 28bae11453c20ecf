//! Files stepgate writes and its standard output, under hostile conditions built here: an
//! output that is an input, an output that is a FIFO or a directory, a symlinked target,
//! an output inside a dataset or a report directory, a missing directory among several
//! outputs, stale temporaries, a closed pipe, a full disk, concurrent writers, and names
//! carrying CR/LF/ESC/NUL.

mod names;
use names::tree;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stepgate::synth::workload::{
    build, vllm_execute_detailed, KernelSpec, LaunchMode, Scenario, StepSpec,
};
use stepgate::synth::Layout;

use crate::common::{bin, run};

const GEMM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64";
const NORM: &str = "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)";

/// A one-rank nsys export of `steps` CUDA-graph decode steps, each running `kernels`
/// (name, ns); kernel `slow` (if any) runs `factor` times longer. Durations carry a small
/// deterministic jitter so the gate's statistics see spread, as real runs do.
fn report(path: &Path, steps: usize, kernels: &[(&str, i64)], slow: Option<(&str, f64)>) {
    let name = vllm_execute_detailed(32, [0; 5], [32, 32, 32 * 2048, 32, 32 * 2048]);
    let specs = (0..steps)
        .map(|i| {
            let jitter = 1.0 + 0.002 * ((i * 7 % 5) as f64 - 2.0);
            let ks = kernels
                .iter()
                .map(|(k, ns)| {
                    let f = match slow {
                        Some((s, f)) if s == *k => f,
                        _ => 1.0,
                    };
                    KernelSpec::new(k, (*ns as f64 * f * jitter) as i64)
                })
                .collect();
            let mut s = StepSpec::new(Some(&name), LaunchMode::GraphNode, ks);
            s.host_gap_before_ns = 50_000;
            s
        })
        .collect();
    build(&Scenario::new(Layout::Nsys2026_2, 1, specs), path).unwrap();
}

fn plain(path: &Path, steps: usize) {
    report(path, steps, &[(GEMM, 40_000), (NORM, 5_000)], None);
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn one_line_error(err: &str) {
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("stepgate: error: "), "{err:?}");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A recorded baseline of `plain` with 30 steps, and its report.
fn recorded(dir: &Path) -> (PathBuf, PathBuf) {
    let r = dir.join("run.sqlite");
    plain(&r, 30);
    let b = dir.join("base.json");
    let (code, _, err) = run(&["baseline", "record", s(&r), "-o", s(&b)]);
    assert_eq!(code, 0, "{err}");
    (r, b)
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let (r, b) = recorded(d.path());
    let report_bytes = std::fs::read(&r).unwrap();
    let base_bytes = std::fs::read(&b).unwrap();
    let policy = d.path().join("policy.toml");
    std::fs::write(&policy, "").unwrap();
    // Same file through another spelling, and through a symlink.
    let dotted = d.path().join(".").join("run.sqlite");
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(&b, &link).unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["gate", s(&r), "--baseline", s(&b), "--markdown", s(&r)],
        vec!["gate", s(&r), "--baseline", s(&b), "--json", s(&b)],
        vec!["gate", s(&r), "--baseline", s(&b), "--json", s(&link)],
        vec![
            "gate",
            s(&r),
            "--baseline",
            s(&b),
            "--policy",
            s(&policy),
            "--markdown",
            s(&policy),
        ],
        vec!["baseline", "record", s(&r), "-o", s(&r)],
        vec!["baseline", "record", s(&r), "-o", s(&dotted)],
        vec!["diff", s(&r), s(&b), "--markdown", s(&r)],
        vec!["diff", s(&b), s(&r), "--markdown", s(&b)],
    ];
    for args in cases {
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        one_line_error(&err);
        assert!(err.contains("is also an input"), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
    }
    assert_eq!(std::fs::read(&r).unwrap(), report_bytes);
    assert_eq!(std::fs::read(&b).unwrap(), base_bytes);
    assert_eq!(std::fs::read(&policy).unwrap(), b"");
    // Two outputs naming one file.
    let same = d.path().join("same.md");
    let (code, _, err) = run(&[
        "gate",
        s(&r),
        "--baseline",
        s(&b),
        "--markdown",
        s(&same),
        "--json",
        s(&same),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("both name"), "{err}");
    assert!(!same.exists());
}

#[test]
fn when_one_output_cannot_be_written_none_is() {
    let d = tempfile::tempdir().unwrap();
    let (r, b) = recorded(d.path());
    let before = listing(d.path());
    let md = d.path().join("e.md");
    let bad = d.path().join("nodir").join("x.json");
    let (code, out, err) = run(&[
        "gate",
        s(&r),
        "--baseline",
        s(&b),
        "--markdown",
        s(&md),
        "--json",
        s(&bad),
    ]);
    assert_eq!(code, 2, "{err}");
    one_line_error(&err);
    assert!(
        err.contains("--json") && err.contains("does not exist"),
        "{err}"
    );
    assert!(out.is_empty());
    // No e.md saying "Pass", no temporary file.
    assert_eq!(listing(d.path()), before);
    // Both writable: both written, and the verdict (pass on the same run) is exit 0.
    let js = d.path().join("x.json");
    let (code, out, err) = run(&[
        "gate",
        s(&r),
        "--baseline",
        s(&b),
        "--markdown",
        s(&md),
        "--json",
        s(&js),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Pass"), "{out}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("Pass"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&js).unwrap()).unwrap();
    assert!(v.is_object());
    // Written files are shareable (0644), not the 0600 of a temporary file.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&js).unwrap().permissions().mode() & 0o777,
        0o644
    );
}

#[test]
fn what_is_not_a_regular_file_is_never_replaced_and_symlinks_are_written_through() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("run.sqlite");
    plain(&r, 12);
    let fifo = d.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo_link = d.path().join("fifo-link.json");
    std::os::unix::fs::symlink(&fifo, &fifo_link).unwrap();
    let sub = d.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    for target in [&fifo, &fifo_link, &sub] {
        let (code, _, err) = run(&["baseline", "record", s(&r), "-o", s(target)]);
        assert_eq!(code, 2, "{target:?}: {err}");
        one_line_error(&err);
        assert!(err.contains("not a regular file"), "{err}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::symlink_metadata(&fifo_link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(sub.is_dir() && listing(&sub).is_empty());
    // A symlink to a regular file: the link stays, its target gets the baseline.
    let real = d.path().join("real.json");
    std::fs::write(&real, b"old").unwrap();
    let link = d.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, _, err) = run(&["baseline", "record", s(&r), "-o", s(&link)]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&real).unwrap()).unwrap();
    assert_eq!(v["format"], "stepgate-baseline");
    // A directory that does not exist yet is created for a baseline (and only then).
    let nested = d.path().join("baselines").join("h100").join("b.json");
    let (code, _, err) = run(&["baseline", "record", s(&r), "-o", s(&nested)]);
    assert_eq!(code, 0, "{err}");
    assert!(nested.is_file());
}

#[test]
fn baseline_record_cleans_stale_temporaries_and_leaves_none_of_its_own() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("run.sqlite");
    plain(&r, 12);
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // What a SIGKILLed run leaves: an old temporary beside the target.
    let stale = out.join(".stepgate-Xy12ab.tmp");
    std::fs::write(&stale, b"{\"half\":").unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let keep = out.join("notes.tmp");
    std::fs::write(&keep, b"mine").unwrap();
    let b = out.join("b.json");
    let (code, _, err) = run(&["baseline", "record", s(&r), "-o", s(&b)]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("removed 1 stale temporary file"), "{err}");
    assert_eq!(
        listing(&out),
        vec!["b.json".to_owned(), "notes.tmp".to_owned()]
    );
}

/// Spawn stepgate with its stdout's read end closed before it writes anything.
fn with_closed_stdout(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn with_stdout_to_dev_full(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(bin())
        .args(args)
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_pipe_is_quiet_and_keeps_the_exit_code_a_full_disk_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let (r, b) = recorded(d.path());
    // A candidate whose GEMM is three times slower: a regression, exit 1.
    let slow = d.path().join("slow.sqlite");
    report(
        &slow,
        30,
        &[(GEMM, 40_000), (NORM, 5_000)],
        Some((GEMM, 3.0)),
    );
    let (code, out, err) = run(&["gate", s(&slow), "--baseline", s(&b)]);
    assert_eq!(code, 1, "{out}{err}");

    let every: Vec<Vec<&str>> = vec![
        vec!["steps", s(&r), "--each"],
        vec!["analyze", s(&r)],
        vec!["analyze", s(&r), "--format", "json"],
        vec!["floor"],
        vec!["capacity"],
        vec!["baseline", "show", s(&b)],
        vec!["diff", s(&b), s(&b)],
    ];
    for args in &every {
        let (code, err) = with_closed_stdout(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        // A full disk is an output error (exit 5), not bad input.
        let (code, err) = with_stdout_to_dev_full(args);
        assert_eq!(code, 5, "{args:?}: {err}");
        one_line_error(&err);
        assert!(err.contains("cannot write to standard output"), "{err}");
    }
    // gate: the pipe closing never turns a regression into a pass or a crash.
    let (code, err) = with_closed_stdout(&["gate", s(&slow), "--baseline", s(&b)]);
    assert_eq!(code, 1, "{err}");
    let (code, err) = with_closed_stdout(&["gate", s(&r), "--baseline", s(&b)]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = with_stdout_to_dev_full(&["gate", s(&slow), "--baseline", s(&b)]);
    assert_eq!(code, 5, "{err}");
    one_line_error(&err);
    // baseline record's confirmation line on a closed pipe: the file is still written.
    let b2 = d.path().join("b2.json");
    let (code, err) = with_closed_stdout(&["baseline", "record", s(&r), "-o", s(&b2)]);
    assert_eq!(code, 0, "{err}");
    assert!(b2.is_file());
}

#[test]
fn concurrent_writers_of_one_path_never_leave_invalid_json() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("gate.json");
    std::fs::write(&target, b"{}").unwrap();
    // Large documents (about 200 KB) so a torn write would be visible.
    let docs: Vec<Vec<u8>> = (0..4)
        .map(|w| {
            let v: Vec<u64> = (0..20_000).map(|i| i * (w + 1)).collect();
            serde_json::to_vec(&serde_json::json!({ "writer": w, "values": v })).unwrap()
        })
        .collect();
    let all = &docs;
    std::thread::scope(|sc| {
        for doc in all {
            let target = &target;
            sc.spawn(move || {
                for _ in 0..50 {
                    stepgate::output::write_atomic(target, doc).unwrap();
                    let read = std::fs::read(target).unwrap();
                    let v: serde_json::Value = serde_json::from_slice(&read)
                        .unwrap_or_else(|e| panic!("invalid JSON after a write: {e}"));
                    // Whole documents only: one of the four, never a mix.
                    assert!(all.contains(&read), "{}", v["writer"]);
                }
            });
        }
    });
    assert_eq!(listing(d.path()), vec!["gate.json".to_owned()]);
}

#[test]
fn outputs_aimed_into_a_dataset_or_a_report_directory_are_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let (r, base) = recorded(d.path());
    let ds = d.path().join("ds");
    let (code, _, err) = run(&["export", s(&r), "-o", s(&ds)]);
    assert_eq!(code, 0, "{err}");
    // A Kineto report directory (one rank).
    let kdir = d.path().join("ranks");
    std::fs::create_dir(&kdir).unwrap();
    std::fs::copy(
        crate::common::fixture("kineto/vllm_mi300x_decode_fullgraph_step.json.gz"),
        kdir.join("rank0.pt.trace.json.gz"),
    )
    .unwrap();
    let inside = |p: &Path, name: &str| p.join(name).to_str().unwrap().to_owned();
    // A dataset that does not exist yet is guarded all the same.
    let missing = d.path().join("not-yet");
    let (ds_, r_, b_, k_, m_) = (s(&ds), s(&r), s(&base), s(&kdir), s(&missing));
    let cases: Vec<Vec<String>> = [
        vec!["trend", ds_, "--html", &inside(&ds, "runs/x.html")],
        vec!["trend", ds_, "--html", &inside(&ds, ".lock")],
        vec![
            "gate",
            r_,
            "--history",
            ds_,
            "--json",
            &inside(&ds, "g.json"),
        ],
        vec![
            "gate",
            r_,
            "--baseline",
            b_,
            "--export",
            m_,
            "--markdown",
            &inside(&missing, "g.md"),
        ],
        vec![
            "baseline",
            "record",
            r_,
            "-o",
            &inside(&ds, "steps/b.json"),
            "--export",
            ds_,
        ],
        vec!["steps", k_, "--perfetto", &inside(&kdir, "p.json")],
        vec!["analyze", k_, "--html", &inside(&kdir, "a.html")],
        vec!["baseline", "record", k_, "-o", &inside(&kdir, "sub/b.json")],
        vec!["diff", r_, k_, "--markdown", &inside(&kdir, "d.md")],
    ]
    .iter()
    .map(|c| c.iter().map(|a| (*a).to_owned()).collect())
    .collect();
    let before = tree(d.path());
    for c in &cases {
        let args: Vec<&str> = c.iter().map(String::as_str).collect();
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        one_line_error(&err);
        assert!(err.contains("is inside"), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    assert_eq!(tree(d.path()), before, "something was written");
    // Beside a dataset or a report directory is fine: `trend DS --html DS.html`.
    let beside = d.path().join("ds.html");
    let (code, _, err) = run(&["trend", ds_, "--html", s(&beside)]);
    assert_eq!(code, 0, "{err}");
    assert!(beside.is_file());
}
