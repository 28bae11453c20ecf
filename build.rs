//! Build script: records the commit the binary is built from, for `stepgate --version`.
//!
//! From `git rev-parse` when the source is a git checkout (a `.git` directory or, in a
//! worktree, a `.git` file); else from `STEPGATE_COMMIT` (what a wheel or tarball build
//! without `.git` sets); else "unknown commit". Never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `git -C root ARGS`, trimmed stdout; None when git is missing or says no.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// An abbreviated commit id: 7 to 40 hex digits, cut to 12.
fn commit_id(s: &str) -> Option<String> {
    let s = s.trim();
    ((7..=40).contains(&s.len()) && s.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| s[..s.len().min(12)].to_ascii_lowercase())
}

/// Ask cargo to rerun when a git file changes; only files that exist (a missing one
/// would rerun the script, and rebuild the crate, on every build).
fn watch(root: &Path, git_path: &str) {
    if let Some(p) = git(root, &["rev-parse", "--git-path", git_path]) {
        let p = PathBuf::from(p);
        let p = if p.is_absolute() { p } else { root.join(p) };
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=STEPGATE_COMMIT");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut commit = None;
    if root.join(".git").exists() {
        // HEAD moves on checkout; the branch it names moves on commit (loose or packed).
        watch(&root, "HEAD");
        if let Some(r) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
            watch(&root, &r);
        }
        watch(&root, "packed-refs");
        commit = git(&root, &["rev-parse", "HEAD"]).and_then(|c| commit_id(&c));
    }
    let commit = commit.or_else(|| {
        std::env::var("STEPGATE_COMMIT")
            .ok()
            .and_then(|c| commit_id(&c))
    });
    let text = commit.map_or_else(|| "unknown commit".to_owned(), |c| format!("commit {c}"));
    println!("cargo:rustc-env=STEPGATE_BUILD_COMMIT={text}");
}
