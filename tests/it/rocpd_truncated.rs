//! A rocpd database that shrinks while it is read (another process truncating it: a
//! capture still being written, a rerun writing the same name) ends in one line and exit
//! 2, not a SIGBUS: from 2 threads its host regions are read through a memory map. The
//! truncation is made deterministic by the test hook `STEPGATE_TEST_TRUNCATE_MAPPED`,
//! which cuts the file right after the mapped connection has mapped it.

use std::path::Path;
use std::process::Command;

use stepgate::synth::rocpd::{write, Spec};

use crate::common;

fn analyze(db: &Path, threads: usize, truncate_to: Option<u64>) -> std::process::Output {
    let mut c = Command::new(common::bin());
    c.args([
        "analyze",
        "--format",
        "json",
        "--threads",
        &threads.to_string(),
    ])
    .arg(db);
    if let Some(n) = truncate_to {
        c.env("STEPGATE_TEST_TRUNCATE_MAPPED", n.to_string());
    }
    c.output().unwrap()
}

#[test]
fn a_rocpd_file_truncated_while_mapped_is_exit_2_not_sigbus() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("decode.db");
    let spec = Spec {
        processes: 2,
        steps: 400,
        ..Spec::default()
    };
    write(&db, &spec).unwrap();
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(size > 256 << 10, "a database of many pages: {size} bytes");
    // Whole, it reads at 2 threads.
    let ok = analyze(&db, 2, None);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // Cut to its first two pages while mapped.
    let cut = analyze(&db, 2, Some(8192));
    let err = String::from_utf8_lossy(&cut.stderr);
    assert_eq!(
        cut.status.code(),
        Some(2),
        "killed by a signal? {:?} {err}",
        cut.status
    );
    assert!(cut.stdout.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("stepgate: error: "), "{err}");
    assert!(err.contains(&db.display().to_string()), "{err}");
    assert!(err.contains("shrank while it was being read"), "{err}");
    assert_eq!(
        std::fs::metadata(&db).unwrap().len(),
        8192,
        "the hook cut the file"
    );
}
