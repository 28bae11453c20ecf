//! Every file stepgate writes, and standard output, go through here: output paths are
//! checked before any work starts, files are written to a temporary file beside the
//! target, synced and renamed into place, all or nothing.
//!
//! Why one module: a CI job commits what stepgate writes (baselines, reports), so a crash,
//! a full disk or a typo in a flag must never leave a half-written file, replace a device
//! node, or overwrite the report it was reading.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::exit::{Error, Result};

/// Prefix and suffix of every temporary file, so a stale one (left by SIGKILL) is
/// recognizable and can be cleaned up.
pub const TMP_PREFIX: &str = ".stepgate-";
pub const TMP_SUFFIX: &str = ".tmp";

/// One file a command will write: the flag that named it and its path.
#[derive(Debug, Clone)]
pub struct Planned {
    pub flag: &'static str,
    pub path: PathBuf,
    /// The writer creates missing parent directories (`baseline record -o baselines/x.json`),
    /// so the check only asks that the nearest existing ancestor be a writable directory.
    pub create_dirs: bool,
}

/// The files a command will write, checked up front.
#[derive(Debug, Default)]
pub struct Plan {
    items: Vec<Planned>,
}

impl Plan {
    pub fn new() -> Self {
        Plan::default()
    }

    /// Add an output named by `flag` (e.g. `--json`). `None` adds nothing.
    pub fn add(&mut self, flag: &'static str, path: Option<&Path>) -> &mut Self {
        if let Some(p) = path {
            self.items.push(Planned {
                flag,
                path: p.to_path_buf(),
                create_dirs: false,
            });
        }
        self
    }

    /// Like [`Plan::add`], for an output whose missing parent directories the command
    /// creates (with [`create_parent`]) just before writing.
    pub fn add_creating_dirs(&mut self, flag: &'static str, path: &Path) -> &mut Self {
        self.items.push(Planned {
            flag,
            path: path.to_path_buf(),
            create_dirs: true,
        });
        self
    }

    /// The planned outputs, in the order they were added.
    pub fn items(&self) -> &[Planned] {
        &self.items
    }

    /// Refuse, before anything runs: an output that is one of the inputs, an output inside
    /// a dataset or a report directory the command reads or writes, two outputs that are
    /// the same file, an existing target that is not a regular file (a device, a FIFO, a
    /// directory), and a directory that does not exist or cannot be written.
    pub fn check(&self, inputs: &[Input<'_>]) -> Result<()> {
        for (i, o) in self.items.iter().enumerate() {
            // A URL is never a local file named `s3:`: a baseline goes to object storage.
            if crate::dataset::store::remote_output(o.flag, &o.path, o.create_dirs)? {
                continue;
            }
            let target = resolve(&o.path);
            for input in inputs {
                if same_file(&target, input.path) {
                    return Err(Error::usage(format!(
                        "{} {} is also an input: refusing to overwrite it; choose another output path",
                        o.flag,
                        o.path.display()
                    )));
                }
                if let Some(why) = input.holds(&target) {
                    return Err(Error::usage(format!(
                        "{} {} is inside {} {why}: refusing to write there; choose a path \
                         outside it",
                        o.flag,
                        o.path.display(),
                        input.path.display()
                    )));
                }
            }
            for other in &self.items[..i] {
                if same_file(&target, &resolve(&other.path)) {
                    return Err(Error::usage(format!(
                        "{} and {} both name {}: give each output its own path",
                        other.flag,
                        o.flag,
                        o.path.display()
                    )));
                }
            }
            check_target(o.flag, &o.path, &target, o.create_dirs)?;
        }
        Ok(())
    }
}

/// What an input path is, for [`Plan::check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A file the command reads (a baseline, a policy, a model config): no output may be it.
    File,
    /// A report: a file, or a directory of per-rank traces, inside which no output may go
    /// (the next read would take it for one more rank).
    Report,
    /// A dataset the command reads or appends to, whether or not it exists yet: no output
    /// may go inside it (a stray file among its tables, or its lock).
    Dataset,
}

/// One input of a command, with its kind.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub path: &'a Path,
    pub kind: InputKind,
}

impl<'a> Input<'a> {
    pub fn file(path: &'a Path) -> Self {
        Input {
            path,
            kind: InputKind::File,
        }
    }

    pub fn report(path: &'a Path) -> Self {
        Input {
            path,
            kind: InputKind::Report,
        }
    }

    pub fn dataset(path: &'a Path) -> Self {
        Input {
            path,
            kind: InputKind::Dataset,
        }
    }

    /// Why `target` may not be written, when this input is a directory that holds it.
    fn holds(&self, target: &Path) -> Option<&'static str> {
        let why = match self.kind {
            InputKind::File => return None,
            InputKind::Report if !self.path.is_dir() => return None,
            InputKind::Report => {
                "the report directory this command reads (the next read would take it for one more rank)"
            }
            InputKind::Dataset => "the dataset this command reads or writes",
        };
        absolute(target)
            .starts_with(absolute(self.path))
            .then_some(why)
    }
}

/// An absolute path with every symlink of its existing part resolved and `.`/`..` of the
/// part that does not exist yet applied, so two spellings of one place compare equal.
fn absolute(p: &Path) -> PathBuf {
    use std::path::Component;
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut at = PathBuf::new();
    for c in full.components() {
        match c {
            Component::CurDir => {}
            // `at` has no symlink left in it, so going up is going to its parent.
            Component::ParentDir => {
                at.pop();
            }
            c => {
                at.push(c);
                if let Ok(real) = std::fs::canonicalize(&at) {
                    at = real;
                }
            }
        }
    }
    at
}

/// Create the missing parent directories of an output planned with
/// [`Plan::add_creating_dirs`].
pub fn create_parent(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::new(
            crate::exit::Kind::Output,
            format!("cannot create directory {}: {e}", dir.display()),
        )
        .with_source(e)
    })
}

/// Follow a symlink chain to the file it points to (which may not exist yet), so the
/// link itself is kept and its target written.
fn resolve(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(&p) {
                Ok(t) => {
                    p = if t.is_absolute() {
                        t
                    } else {
                        p.parent().unwrap_or(Path::new(".")).join(t)
                    };
                }
                Err(_) => return p,
            },
            _ => return p,
        }
    }
    p
}

/// Whether two paths name one file: the same inode when both exist, else the same
/// canonical directory and file name (an output that does not exist yet).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    let abs = |p: &Path| {
        std::fs::canonicalize(parent_dir(p))
            .ok()
            .map(|d| d.join(p.file_name().unwrap_or_default()))
    };
    matches!((abs(a), abs(b)), (Some(x), Some(y)) if x == y)
}

fn parent_dir(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn check_target(flag: &str, given: &Path, target: &Path, create_dirs: bool) -> Result<()> {
    if let Ok(m) = std::fs::metadata(target) {
        if !m.is_file() {
            return Err(Error::usage(format!(
                "{flag} {} exists and is not a regular file: refusing to replace it; choose a file path",
                given.display()
            )));
        }
    }
    let mut dir = parent_dir(target);
    if create_dirs {
        // Probe the nearest ancestor that exists: that is where the first new directory
        // will be created.
        while std::fs::metadata(dir).is_err() {
            match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => dir = p,
                _ => {
                    dir = Path::new(".");
                    break;
                }
            }
        }
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(Error::usage(format!(
                "{flag} {}: {} is not a directory",
                given.display(),
                dir.display()
            )))
        }
        Err(_) => {
            return Err(Error::usage(format!(
                "{flag} {}: directory {} does not exist; create it first",
                given.display(),
                dir.display()
            )))
        }
    }
    // Probe writability with a real temporary file: permission bits lie under root,
    // read-only mounts and ACLs. Ctrl-C is held meanwhile so the probe is never left.
    let hold = crate::capture::interrupt::defer();
    let probe = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .suffix(TMP_SUFFIX)
        .tempfile_in(dir)
        .map(drop);
    if hold.interrupted() {
        return Err(Error::interrupted(
            "interrupted before anything was written",
        ));
    }
    if let Err(e) = probe {
        return Err(Error::new(
            crate::exit::Kind::Output,
            format!(
                "{flag} {}: cannot write in {}: {e}",
                given.display(),
                dir.display()
            ),
        )
        .with_source(e));
    }
    Ok(())
}

/// Write every file or none: all contents go to temporary files first (synced), then
/// each is renamed over its target. A failure before the renames removes every
/// temporary file and leaves every target untouched.
///
/// Ctrl-C (or SIGTERM) while this runs does not kill the process mid-write: it is noted,
/// the temporary files are removed, and the error says so (exit 130).
pub fn write_all(files: &[(&Path, &[u8])]) -> Result<()> {
    write_all_with(files, &|| {})
}

/// [`write_all`] with a hook run after staging and before the renames (the tests send
/// SIGINT there).
#[doc(hidden)]
pub fn write_all_with(files: &[(&Path, &[u8])], after_stage: &dyn Fn()) -> Result<()> {
    let fills = files
        .iter()
        .map(|(path, bytes)| {
            let fill: Fill<'_> = Box::new(move |w: &mut dyn Write| {
                w.write_all(bytes).map_err(|e| Error::output(path, e))
            });
            (*path, fill)
        })
        .collect();
    let staged = Staged::stage(fills)?;
    after_stage();
    staged.commit()
}

/// Write one file atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_all(&[(path, bytes)])
}

/// The contents of one output, written straight into its temporary file (an encoder can
/// stream into it, so a large output is never held in memory whole).
pub type Fill<'a> = Box<dyn FnOnce(&mut dyn Write) -> Result<()> + 'a>;

/// Outputs written in full to temporary files beside their targets, synced, and not yet
/// renamed. Ctrl-C and SIGTERM are held while it lives; dropping it without
/// [`Staged::commit`] removes every temporary file and touches no target.
pub struct Staged<'a> {
    files: Vec<(tempfile::NamedTempFile, &'a Path)>,
    guard: crate::capture::interrupt::Deferred,
}

impl<'a> Staged<'a> {
    /// Stage every output in order; the first failure (or a signal) removes what was
    /// staged and returns the error.
    pub fn stage(fills: Vec<(&'a Path, Fill<'_>)>) -> Result<Staged<'a>> {
        let guard = crate::capture::interrupt::defer();
        let mut files = Vec::with_capacity(fills.len());
        for (path, fill) in fills {
            // A failure drops `files`, which deletes every temporary file made so far.
            files.push((stage(path, fill)?, path));
            if guard.interrupted() {
                return Err(not_written());
            }
        }
        Ok(Staged { files, guard })
    }

    /// The signal deferral this staging holds (a caller that waits between staging and
    /// committing polls it).
    pub fn guard(&self) -> &crate::capture::interrupt::Deferred {
        &self.guard
    }

    /// Rename every staged file over its target, in staging order.
    pub fn commit(self) -> Result<()> {
        if self.guard.interrupted() {
            return Err(not_written());
        }
        for (tmp, path) in self.files {
            let target = resolve(path);
            tmp.persist(&target)
                .map_err(|e| Error::output(path, e.error))?;
        }
        if self.guard.interrupted() {
            return Err(Error::interrupted(
                "interrupted: every output file had been written in full",
            ));
        }
        Ok(())
    }
}

fn not_written() -> Error {
    Error::interrupted("interrupted: no output file was written (temporary files removed)")
}

fn stage(path: &Path, fill: Fill<'_>) -> Result<tempfile::NamedTempFile> {
    let target = resolve(path);
    if let Ok(m) = std::fs::metadata(&target) {
        if !m.is_file() {
            return Err(Error::usage(format!(
                "{} exists and is not a regular file: refusing to replace it",
                path.display()
            )));
        }
    }
    let fail = |e: std::io::Error| Error::output(path, e);
    let mut tmp = tempfile::Builder::new()
        .prefix(TMP_PREFIX)
        .suffix(TMP_SUFFIX)
        .tempfile_in(parent_dir(&target))
        .map_err(fail)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        fill(&mut w)?;
        w.flush().map_err(fail)?;
    }
    tmp.as_file().sync_all().map_err(fail)?;
    // Temp files are created 0600; what stepgate writes is meant to be shared.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(fail)?;
    }
    Ok(tmp)
}

/// Remove stale temporary files (left by a SIGKILL) from `dir`; returns how many.
pub fn clean_stale(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let stale = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 60);
        if name.starts_with(TMP_PREFIX)
            && name.ends_with(TMP_SUFFIX)
            && stale
            && std::fs::remove_file(e.path()).is_ok()
        {
            n += 1;
        }
    }
    n
}

/// Print to standard output through one locked handle. A closed pipe (`| head -1`) is
/// not an error: the rest is dropped quietly, as ripgrep does, and the command still
/// returns its own exit code (0, or `gate`'s verdict, which a pipe must never turn into
/// a pass or a crash). Any other write error (a full disk) is one line with exit 2.
pub fn print(s: &str) -> Result<()> {
    print_to(&mut std::io::stdout().lock(), s)
}

/// [`print()`] on any writer (the tests use a failing one).
pub fn print_to(w: &mut dyn Write, s: &str) -> Result<()> {
    match w.write_all(s.as_bytes()).and_then(|()| w.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::stdout(e)),
    }
}

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
            crate::capture::interrupt::raise_sigint();
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
    fn print_drops_a_closed_pipe_and_reports_other_errors() {
        struct Fails(std::io::ErrorKind);
        impl Write for Fails {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(self.0))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(print_to(&mut Fails(std::io::ErrorKind::BrokenPipe), "x").is_ok());
        let e = print_to(&mut Fails(std::io::ErrorKind::StorageFull), "x").unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::OUTPUT);
        assert!(e.message.starts_with("cannot write to standard output"));
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
