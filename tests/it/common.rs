//! Helpers shared by the integration tests: paths to fixtures and the built binary.

#![allow(dead_code)]

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file under tests/fixtures.
pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests").join("fixtures").join(rel)
}

/// The stepgate binary cargo built for this test run.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stepgate"))
}

/// Run the binary with args; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(bin())
        .args(args)
        .output()
        .expect("spawn stepgate");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
