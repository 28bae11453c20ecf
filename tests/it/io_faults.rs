//! One answer per I/O fault, whatever the command (docs/hostile-inputs.md, *I/O faults*):
//! a symlink loop is exit 2 with one sentence for `export`, `trend`, `gate --history`,
//! `--html` and `baseline record -o`; a read-only or full file system is exit 5 for the
//! dataset, the file outputs and the baseline alike, with nothing left behind. Also the
//! flag-level answers of the same issue: `--where` with a comma in a label value, a
//! `--perfetto-steps` value that starts with `-`, `--html /dev/stdout` into a pipe, and a
//! dataset file of a newer `schema_version`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common;

const REPORT: &str = "examples/vllm_decode_synthetic_h100.sqlite";

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::bin())
        .args(args)
        .current_dir(common::root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file below `d` (names relative to it), sorted.
fn files(d: &Path) -> Vec<String> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(d, d, &mut out);
    out.sort();
    out
}

/// The commands that read or write a path, each given `p` where the path goes.
fn every_command(p: &str) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    vec![
        v(&["export", REPORT, "-o", p]),
        v(&["trend", p]),
        v(&["gate", REPORT, "--history", p]),
        v(&["steps", REPORT, "--html", &format!("{p}/r.html")]),
        v(&["baseline", "record", REPORT, "-o", &format!("{p}/b.json")]),
    ]
}

#[test]
fn a_symlink_loop_is_one_sentence_and_exit_2_for_every_command() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("loopA");
    let b = d.path().join("loopB");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    for args in every_command(s(&a)) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(s(&a)), "{args:?}: {err}");
        assert!(
            err.contains(
                "a symbolic link on the path loops (too many levels of symbolic links): \
                 point the link at a real directory"
            ),
            "{args:?}: {err}"
        );
    }
}

/// A tmpfs at `dir`, unmounted when dropped; `None` (with the reason printed) where this
/// process may not mount (not root, no CAP_SYS_ADMIN).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, opts: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)");
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Each output command into `dir` fails with exit 5 and `why`, and leaves `dir` as it was.
fn refused_with_5(dir: &Path, why: &str) {
    let before = files(dir);
    let ds = dir.join("ds");
    let cases: Vec<Vec<String>> = every_command(s(&ds))
        .into_iter()
        .filter(|a| a[0] != "trend" && a[0] != "gate")
        .map(|mut a| {
            // The file outputs go straight into `dir` (it exists).
            if let Some(last) = a.last_mut() {
                *last = last.replace("/ds/", "/");
            }
            a
        })
        .collect();
    assert_eq!(cases.len(), 3);
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run(&args);
        assert_eq!(code, 5, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert_eq!(files(dir), before, "{args:?} left something behind");
    }
}

#[test]
fn a_read_only_file_system_is_exit_5_for_the_dataset_and_every_file_output() {
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("ro");
    let Some(_m) = Tmpfs::mount(&mnt, "size=1m,ro") else {
        return;
    };
    refused_with_5(
        &mnt,
        "the file system is read-only: write to a writable directory",
    );
}

#[test]
fn a_full_disk_is_exit_5_for_the_dataset_and_every_file_output() {
    let d = tempfile::tempdir().unwrap();
    let mnt = d.path().join("full");
    let Some(_m) = Tmpfs::mount(&mnt, "size=64k") else {
        return;
    };
    // Fill it: a new empty file still fits (the output probes), no byte of data does.
    {
        use std::io::Write;
        let mut f = std::fs::File::create(mnt.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    refused_with_5(
        &mnt,
        "no space left (disk, quota or file-size limit): free some space or write elsewhere",
    );
}

#[test]
fn a_comma_in_a_label_value_is_selectable_and_the_error_shows_the_escape() {
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let (code, _, err) = run(&["export", REPORT, "-o", s(&ds), "--label", "workload=a,b"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(&[
        "trend",
        s(&ds),
        "--where",
        "label.workload=a,b",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs_matched"], 1, "{out}");
    // Only the exact value: `a` alone matches nothing.
    let (code, out, err) = run(&[
        "trend",
        s(&ds),
        "--where",
        "label.workload=a",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs_matched"], 0, "{out}");
    let (code, _, err) = run(&["trend", s(&ds), "--where", "label.workload=a,b=c"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(r"--where 'label.K=A\,b=c'"), "{err}");
    let (_, help, _) = run(&["trend", "--help"]);
    assert!(help.contains(r"\,"), "--help names the escape");
}

#[test]
fn a_range_flag_value_starting_with_a_dash_names_the_flag() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p.json");
    let (code, _, err) = run(&[
        "steps",
        REPORT,
        "--perfetto",
        s(&p),
        "--perfetto-steps",
        "-1..3",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(r#"--perfetto-steps "-1..3" is not A..B"#) && err.contains("100..200"),
        "{err}"
    );
    assert!(!p.exists());
}

#[test]
fn html_to_dev_stdout_in_a_pipe_is_refused_before_the_work() {
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#""$0" steps "$1" --html /dev/stdout | cat"#)
        .arg(common::bin())
        .arg(REPORT)
        .current_dir(common::root())
        .output()
        .unwrap();
    // `sh` reports the pipeline's last status; ask stepgate's through PIPESTATUS-free means:
    // nothing reached the pipe, and stderr is the one refusal.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.is_empty(), "nothing written into the pipe");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--html /dev/stdout is a pipe, not a regular file"),
        "{err}"
    );
    // The same through a FIFO the test holds, where the exit code is stepgate's own.
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("f");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (code, _, err) = run(&["steps", REPORT, "--html", s(&fifo)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a pipe, not a regular file"), "{err}");
}

#[test]
fn a_dataset_file_of_a_newer_schema_version_is_refused_by_name() {
    use polars::prelude::*;
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("ds");
    let (code, _, err) = run(&["export", REPORT, "-o", s(&ds)]);
    assert_eq!(code, 0, "{err}");
    let steps = files(&ds)
        .into_iter()
        .find(|f| f.starts_with("steps/"))
        .map(|f| ds.join(f))
        .unwrap();
    let mut df = ParquetReader::new(std::fs::File::open(&steps).unwrap())
        .finish()
        .unwrap();
    let n = df.height();
    df.with_column(Column::new("schema_version".into(), vec![2i32; n]))
        .unwrap();
    ParquetWriter::new(std::fs::File::create(&steps).unwrap())
        .finish(&mut df)
        .unwrap();
    let (code, _, err) = run(&["trend", s(&ds)]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(s(&steps))
            && err.contains(
                "was written by a newer stepgate (schema_version 2; this build reads up to 1)"
            ),
        "{err}"
    );
}
