//! The outputs a command will write, checked before any work starts: not an input, not
//! inside a dataset or a rank directory being read, not two flags naming one file, not a
//! device or a directory, in a directory that exists and can be written.

use std::path::{Path, PathBuf};

use super::{TMP_PREFIX, TMP_SUFFIX};
use crate::exit::{io_fault, Access, Error, Fault, Result};

/// One file a command will write: the flag that named it and its path.
#[derive(Debug, Clone)]
pub struct Planned {
    pub flag: &'static str,
    pub path: PathBuf,
    /// The writer creates missing parent directories (`baseline record -o baselines/x.json`),
    /// so the check only asks that the nearest existing ancestor be a writable directory.
    pub create_dirs: bool,
    /// A file inside an output directory (`man --dir`): an existing symlink in its place is
    /// replaced by the new file, never written through (a link planted in a shared
    /// directory must not redirect the write outside it).
    pub entry: bool,
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
                entry: false,
            });
        }
        self
    }

    /// Like [`Plan::add`], for an output whose missing parent directories the command
    /// creates (with [`create_parent`]) just before writing.
    pub(crate) fn add_creating_dirs(&mut self, flag: &'static str, path: &Path) -> &mut Self {
        self.items.push(Planned {
            flag,
            path: path.to_path_buf(),
            create_dirs: true,
            entry: false,
        });
        self
    }

    /// Like [`Plan::add`], for one file of a multi-file output written into a directory
    /// ([`super::write::write_entries`]): a symlink already at the path is replaced, not followed.
    pub(crate) fn add_entry(&mut self, flag: &'static str, path: &Path) -> &mut Self {
        self.items.push(Planned {
            flag,
            path: path.to_path_buf(),
            create_dirs: false,
            entry: true,
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
            if crate::store::remote_output(o.flag, &o.path, o.create_dirs)? {
                continue;
            }
            let target = o.target();
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
                if same_file(&target, &other.target()) {
                    return Err(Error::usage(format!(
                        "{} and {} both name {}: give each output its own path",
                        other.flag,
                        o.flag,
                        o.path.display()
                    )));
                }
            }
            check_target(o, &target)?;
        }
        Ok(())
    }
}

impl Planned {
    /// The path the write lands on: the end of the symlink chain, except for a directory
    /// entry, whose link is replaced.
    fn target(&self) -> PathBuf {
        if self.entry {
            self.path.clone()
        } else {
            resolve(&self.path)
        }
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
        io_fault(
            Access::Write,
            &format!("cannot create directory {}", dir.display()),
            &e,
        )
    })
}

/// Follow a symlink chain to the file it points to (which may not exist yet), so the
/// link itself is kept and its target written.
pub(super) fn resolve(path: &Path) -> PathBuf {
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

pub(super) fn parent_dir(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn check_target(o: &Planned, target: &Path) -> Result<()> {
    let (flag, given, create_dirs) = (o.flag, o.path.as_path(), o.create_dirs);
    special(
        &format!("{flag} {}", given.display()),
        given,
        target,
        o.entry,
    )
    .map_err(|e| Error::usage(format!("{e}; choose a file path")))?;
    if !o.entry {
        // A path that loops or runs through a file is answered as every other path.
        if let Err(e) = std::fs::metadata(given) {
            if matches!(Fault::of(&e), Fault::Loop | Fault::NotADirectory) {
                return Err(io_fault(
                    Access::Write,
                    &format!("{flag} {}", given.display()),
                    &e,
                ));
            }
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
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::usage(format!(
                "{flag} {}: directory {} does not exist; create it first",
                given.display(),
                dir.display()
            )))
        }
        Err(e) => {
            return Err(io_fault(
                Access::Write,
                &format!("{flag} {}: directory {}", given.display(), dir.display()),
                &e,
            ))
        }
    }
    // Probe writability with a real temporary file: permission bits lie under root,
    // read-only mounts and ACLs. Ctrl-C is held meanwhile so the probe is never left.
    let hold = crate::interrupt::defer();
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
        return Err(io_fault(
            Access::Write,
            &format!(
                "{flag} {}: cannot write in {}",
                given.display(),
                dir.display()
            ),
            &e,
        ));
    }
    Ok(())
}

/// Refuse an output whose target exists and is not a regular file (a directory, a FIFO,
/// a device, a terminal), looked at both through the resolved link chain and as the
/// kernel follows the path: `/dev/stdout` names `/proc/self/fd/1`, whose link text
/// (`pipe:[…]`) is no path, yet the kernel opens the pipe. The message starts with `what`.
pub(super) fn special(what: &str, given: &Path, target: &Path, entry: bool) -> Result<()> {
    let seen = [existing(target, entry), existing(given, entry)];
    for m in seen.into_iter().flatten() {
        if !m.is_file() && !m.file_type().is_symlink() {
            let ft = m.file_type();
            let is = if m.is_dir() {
                "a directory"
            } else if is_pipe(&ft) {
                "a pipe"
            } else {
                "a device or other special file"
            };
            return Err(Error::usage(format!(
                "{what} is {is}, not a regular file: refusing to write it (outputs are \
                 written whole to a file and renamed into place; to print a report, use \
                 --format)"
            )));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn is_pipe(ft: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    ft.is_fifo() || ft.is_socket()
}

#[cfg(not(unix))]
fn is_pipe(_: &std::fs::FileType) -> bool {
    false
}

/// What is at `target` now; for a directory entry the link itself, not what it names.
pub(super) fn existing(target: &Path, entry: bool) -> std::io::Result<std::fs::Metadata> {
    if entry {
        std::fs::symlink_metadata(target)
    } else {
        std::fs::metadata(target)
    }
}
