//! Hostile names and concurrent writers: control characters, bad regexes, CR/LF in kernel names, concurrent gate processes.

use super::*;

#[test]
fn control_characters_in_names_are_escaped_in_tables_and_markdown() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("evil.sqlite");
    let evil = "evil\r\n| injected | row |\u{1b}[2J\0end";
    report(&r, 12, &[(GEMM, 40_000), (evil, 5_000)], None);
    let (code, md, err) = run(&["analyze", s(&r), "--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    assert!(!md.contains('\r') && !md.contains('\u{1b}') && !md.contains('\0'));
    // The row is still one row: every line that starts a table cell ends one.
    for line in md.lines().filter(|l| l.starts_with('|')) {
        assert!(line.ends_with('|'), "split row: {line:?}");
    }
    let row = md
        .lines()
        .find(|l| l.starts_with('|') && l.contains("injected"))
        .unwrap_or_else(|| panic!("no row for the kernel:\n{md}"));
    assert!(
        row.contains(r"evil\\r\\n\| injected \| row \|\\x1b\[2J\\0end"),
        "{row}"
    );
    let (code, txt, err) = run(&["analyze", s(&r)]);
    assert_eq!(code, 0, "{err}");
    assert!(!txt.contains('\r') && !txt.contains('\u{1b}') && !txt.contains('\0'));
    assert!(txt.contains(r"evil\r\n| injected"), "{txt}");
}

#[test]
fn a_bad_regex_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("run.sqlite");
    plain(&r, 12);
    for cmd in [
        vec!["steps", s(&r), "--steps", "(unclosed"],
        vec!["analyze", s(&r), "--steps", "a{99999999}"],
    ] {
        let (code, _, err) = run(&cmd);
        assert_eq!(code, 2, "{err}");
        one_line_error(&err);
        assert!(err.contains("--steps"), "{err}");
        assert!(!err.contains('^'), "{err}");
    }
}

/// A baseline JSON of 20 decode steps whose one kernel (named with CR/LF) takes `ns`.
fn evil_baseline(ns: f64) -> String {
    let n = 20u32;
    let k: Vec<f64> = (0..n).map(|i| ns + f64::from(i) * 10.0).collect();
    let wall: Vec<f64> = k.iter().map(|x| x + 20_000.0).collect();
    serde_json::json!({
        "format": "stepgate-baseline", "schema_version": 1,
        "meta": { "gpu_name": "NVIDIA H100 80GB HBM3", "nsys_version": null,
            "source_format": "nsys-sqlite", "engine": null, "step_kinds": [],
            "batch_compositions": [], "model": null, "floor_inputs": null, "created_by": "test" },
        "samples": { "groups": [ {
            "step_kind": "decode", "batch_size": 32, "mean_context": null,
            "metrics": { "wall_ns": wall, "busy_ns": k },
            "kernels": { "void evil<int>(x)\r\n- injected item\u{1b}[31m": {
                "short_name": "evil\r\n- injected", "category": "gemm",
                "exclusive_ns": k, "instances": vec![1.0; n as usize] } },
            "categories": {}
        } ] }
    })
    .to_string()
}

#[test]
fn kernel_names_with_cr_lf_never_split_the_gate_markdown() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.json");
    let b = d.path().join("b.json");
    std::fs::write(&a, evil_baseline(80_000.0)).unwrap();
    std::fs::write(&b, evil_baseline(240_000.0)).unwrap();
    let md = d.path().join("gate.md");
    let (code, out, err) = run(&["gate", s(&b), "--baseline", s(&a), "--markdown", s(&md)]);
    assert_eq!(code, 1, "{out}{err}");
    let text = std::fs::read_to_string(&md).unwrap();
    // The kernel regressed threefold, so it is listed, with its full name.
    assert!(text.contains(r"evil\r\n- injected"), "{text}");
    assert!(
        text.contains(r"void evil<int>(x)\r\n- injected item\x1b[31m"),
        "{text}"
    );
    for t in [&text, &out] {
        assert!(!t.contains('\r') && !t.contains('\u{1b}'), "{t}");
        assert!(!t.lines().any(|l| l.starts_with("- injected")), "{t}");
    }
}

#[test]
fn concurrent_gate_processes_writing_one_json_never_leave_it_invalid() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a.json");
    let b = d.path().join("b.json");
    std::fs::write(&a, evil_baseline(80_000.0)).unwrap();
    std::fs::write(&b, evil_baseline(240_000.0)).unwrap();
    let out = d.path().join("gate.json");
    let done = std::sync::atomic::AtomicBool::new(false);
    let reads = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|sc| {
        // A reader parsing the file over and over while the writers run.
        sc.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if let Ok(bytes) = std::fs::read(&out) {
                    let v: serde_json::Value = serde_json::from_slice(&bytes)
                        .unwrap_or_else(|e| panic!("invalid JSON mid-run: {e}"));
                    assert_eq!(v["verdict"], "regression");
                    reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        });
        for _ in 0..4 {
            let children: Vec<_> = (0..6)
                .map(|_| {
                    Command::new(bin())
                        .args(["gate", s(&b), "--baseline", s(&a), "--json", s(&out)])
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            for c in children {
                let o = c.wait_with_output().unwrap();
                assert_eq!(
                    o.status.code(),
                    Some(1),
                    "{}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
            assert_eq!(v["verdict"], "regression");
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    assert!(reads.load(std::sync::atomic::Ordering::SeqCst) > 0);
    assert_eq!(
        listing(d.path()),
        vec![
            "a.json".to_owned(),
            "b.json".to_owned(),
            "gate.json".to_owned()
        ]
    );
}

/// Every path under `dir`, sorted.
pub(super) fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(tree(&e.path()));
        }
    }
    out.sort();
    out
}
