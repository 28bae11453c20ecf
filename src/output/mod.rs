//! Every file stepgate writes goes through here (standard output is the command layer's,
//! `commands::stdout`): output paths are
//! checked before any work starts, files are written to a temporary file beside the
//! target, synced and renamed into place, all or nothing.
//!
//! Why one module: a CI job commits what stepgate writes (baselines, reports), so a crash,
//! a full disk or a typo in a flag must never leave a half-written file, replace a device
//! node, or overwrite the report it was reading.

mod plan;
mod write;

pub use plan::{create_parent, Input, InputKind, Plan, Planned};
pub use write::{
    clean_stale, write_all, write_all_with, write_atomic, write_entries, Fill, Staged,
};

/// Prefix and suffix of every temporary file, so a stale one (left by SIGKILL) is
/// recognizable and can be cleaned up.
pub(crate) const TMP_PREFIX: &str = ".stepgate-";
pub(crate) const TMP_SUFFIX: &str = ".tmp";

/// Lib tests that write files take this, so the one that sends SIGINT to the process
/// never interrupts another test's write.
#[cfg(test)]
pub(crate) static TEST_WRITE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    fn lock() -> std::sync::MutexGuard<'static, ()> {
        TEST_WRITE_LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(unix)]
    #[test]
    fn ctrl_c_while_writing_removes_every_temporary_file() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.md");
        let b = d.path().join("b.json");
        std::fs::write(&b, b"old").unwrap();
        let e = write_all_with(&[(&a, b"new a"), (&b, b"new b")], &|| {
            // Both temporaries exist now; Ctrl-C arrives before the renames.
            let tmps = std::fs::read_dir(d.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(TMP_PREFIX))
                .count();
            assert_eq!(tmps, 2);
            crate::interrupt::raise_sigint();
        })
        .unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::INTERRUPTED);
        assert!(!a.exists());
        assert_eq!(std::fs::read(&b).unwrap(), b"old");
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["b.json".to_owned()]);
        // The default disposition is back: the next write is not deferred forever.
        write_atomic(&a, b"after").unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"after");
    }

    #[test]
    fn stale_temporaries_are_cleaned_fresh_ones_and_others_kept() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let old = d.path().join(".stepgate-abc123.tmp");
        let fresh = d.path().join(".stepgate-def456.tmp");
        let other = d.path().join(".other-abc.tmp");
        for p in [&old, &fresh, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for p in [&old, &other] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        }
        assert_eq!(clean_stale(d.path()), 1);
        assert!(!old.exists() && fresh.exists() && other.exists());
    }

    #[test]
    fn output_equal_to_input_is_refused() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let r = d.path().join("r.sqlite");
        std::fs::write(&r, b"x").unwrap();
        let mut p = Plan::new();
        p.add("--markdown", Some(&r));
        let e = p.check(&[Input::report(&r)]).unwrap_err();
        assert!(e.message.contains("also an input"), "{}", e.message);
        // Same file through another spelling.
        let mut p = Plan::new();
        let other = d.path().join(".").join("r.sqlite");
        p.add("--json", Some(&other));
        assert!(p.check(&[Input::report(&r)]).is_err());
    }

    #[test]
    fn two_outputs_one_file_refused_and_missing_dir_refused() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.md");
        let mut p = Plan::new();
        p.add("--markdown", Some(&a)).add("--json", Some(&a));
        assert!(p.check(&[]).unwrap_err().message.contains("both name"));
        let mut p = Plan::new();
        p.add("--json", Some(&d.path().join("nodir/x.json")));
        assert!(p.check(&[]).unwrap_err().message.contains("does not exist"));
    }

    #[test]
    fn non_regular_target_refused_symlink_written_through() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let mut p = Plan::new();
        p.add("-o", Some(d.path()));
        assert!(p
            .check(&[])
            .unwrap_err()
            .message
            .contains("not a regular file"));
        #[cfg(unix)]
        {
            let real = d.path().join("real.json");
            std::fs::write(&real, b"old").unwrap();
            let link = d.path().join("link.json");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            write_atomic(&link, b"new").unwrap();
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read(&real).unwrap(), b"new");
        }
    }

    #[test]
    fn write_all_leaves_nothing_when_one_fails() {
        let _l = lock();
        let d = tempfile::tempdir().unwrap();
        let ok = d.path().join("e.md");
        let bad = d.path().join("nodir/x.json");
        assert!(write_all(&[(&ok, b"Pass"), (&bad, b"{}")]).is_err());
        assert!(!ok.exists());
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }
}
