//! The exit-code contract and the error type every command returns, defined in one place.
//!
//! 0 ok · 1 regression found by `gate` (or a capture `doctor` failed, or a `policy check` found a dead rule) · 2 usage or input error · 3 inconclusive gate ·
//! 6 incomparable gate (the sides' GPU, model, TP or step kinds differ) ·
//! 4 environment missing (no CUDA driver, no nsys, engine not reachable or not profiling) ·
//! 5 an output could not be written · 70 internal error (a bug in stepgate) ·
//! An I/O failure on a path is answered by [`io_fault`] alone, for every command.
//! 130 interrupted (Ctrl-C) while writing output files, which were removed.
//!
//! An [`Error`] says what failed ([`Kind`]), one line for the user, and keeps the error
//! that caused it ([`std::error::Error::source`]) for callers of the library. Its
//! `kind`/`message` fields and the `input`/`environment`/`interrupted` constructors are the
//! interface every module uses; [`Kind::exit_code`] is the only mapping to exit codes.

use std::fmt;
use std::path::Path;
use std::sync::Mutex;

/// Success.
pub const OK: u8 = 0;
/// `gate` found a regression.
pub(crate) const REGRESSION: u8 = 1;
/// `doctor` found a problem at the failing severity (an error; a warning with `--strict`):
/// the same code as a regression, so a CI step fails on either.
pub(crate) const DOCTOR_FAILED: u8 = 1;
/// `policy check` found a rule that selects nothing on the side checked.
pub(crate) const POLICY_DEAD_RULES: u8 = 1;
/// Bad flags, an unreadable or malformed report or baseline, infeasible capacity inputs.
pub const INPUT: u8 = 2;
/// `gate` had too few samples to decide.
pub(crate) const INCONCLUSIVE: u8 = 3;
/// `gate` found the two sides' operating points too different to compare (GPU, model,
/// TP, no step kind in common).
pub(crate) const INCOMPARABLE: u8 = 6;
/// Something outside stepgate is missing: CUDA driver, nsys, a reachable engine.
pub(crate) const ENVIRONMENT: u8 = 4;
/// A file or standard output could not be written (full disk, permission denied).
pub(crate) const OUTPUT: u8 = 5;
/// A bug in stepgate: a panic, a frame operation that failed on its own data (BSD
/// `sysexits.h` EX_SOFTWARE).
pub const INTERNAL: u8 = 70;
/// Ctrl-C or SIGTERM arrived while output files were being written (the shell's 128 + 2).
pub(crate) const INTERRUPTED: u8 = 130;

/// What failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad flags or a combination of flags that cannot work together (exit 2).
    Usage,
    /// An input file (report, model config, policy, categories, launch-cost file) that
    /// cannot be read or is malformed, or inputs the models refuse (exit 2).
    Input,
    /// A baseline file or run-history dataset that cannot be read, is malformed, or does
    /// not match the candidate (GPU, model) (exit 2).
    Baseline,
    /// Something outside stepgate is missing or refuses: CUDA driver, nsys, the engine
    /// (exit 4).
    Environment,
    /// A file or standard output could not be written (exit 5).
    Output,
    /// A bug in stepgate (exit 70).
    Internal,
    /// Interrupted by a signal while writing (exit 130).
    Interrupted,
}

impl Kind {
    /// The process exit code for this kind: the one mapping of errors to exit codes.
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Usage | Kind::Input | Kind::Baseline => INPUT,
            Kind::Environment => ENVIRONMENT,
            Kind::Output => OUTPUT,
            Kind::Internal => INTERNAL,
            Kind::Interrupted => INTERRUPTED,
        }
    }
}

/// The error that caused an [`Error`], kept for [`std::error::Error::source`].
type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// An error a user can act on: what failed, and one line that says what is wrong and what
/// to do.
#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    source: Option<Source>,
}

impl Error {
    /// An error of `kind` with its one-line message.
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Keep the error that caused this one.
    #[must_use]
    pub(crate) fn with_source(mut self, source: impl Into<Source>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Bad flags or flag combinations (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Error::new(Kind::Usage, message)
    }

    /// An input file that cannot be read or is malformed (exit code 2).
    pub fn input(message: impl Into<String>) -> Self {
        Error::new(Kind::Input, message)
    }

    /// A baseline or dataset that cannot be read, is malformed or does not match (exit 2).
    pub fn baseline(message: impl Into<String>) -> Self {
        Error::new(Kind::Baseline, message)
    }

    /// A missing-environment error (exit code 4).
    pub fn environment(message: impl Into<String>) -> Self {
        Error::new(Kind::Environment, message)
    }

    /// `path` could not be written: classified by [`io_fault`] (exit 5 when the place
    /// refuses the write, 2 when the path is wrong).
    pub fn output(path: &Path, e: std::io::Error) -> Self {
        io_fault(
            Access::Write,
            &format!("cannot write {}", path.display()),
            &e,
        )
    }

    /// Standard output could not be written (exit code 5).
    pub fn stdout(e: std::io::Error) -> Self {
        Error::new(
            Kind::Output,
            format!("cannot write to standard output: {e}"),
        )
        .with_source(e)
    }

    /// A bug in stepgate (exit code 70).
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(Kind::Internal, message)
    }

    /// Interrupted by a signal (exit code 130).
    pub fn interrupted(message: impl Into<String>) -> Self {
        Error::new(Kind::Interrupted, message)
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        self.kind.exit_code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<polars::error::PolarsError> for Error {
    // Polars errors inside our own frame code are plumbing bugs, not user input; keep the
    // context so a report from the field says where it broke.
    fn from(e: polars::error::PolarsError) -> Self {
        Error::internal(format!("frame operation failed: {e}")).with_source(e)
    }
}

impl From<std::io::Error> for Error {
    // What reaches `?` without a context is a file being created or written (the
    // generator's outputs): an output error. Reads name their file with their own message.
    fn from(e: std::io::Error) -> Self {
        Error::new(Kind::Output, format!("I/O error: {e}")).with_source(e)
    }
}

/// The result type used across stepgate.
pub type Result<T> = std::result::Result<T, Error>;

/// What stepgate was doing with a path when an I/O call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading an input: a report, a baseline, a dataset.
    Read,
    /// Writing an output: a file, a dataset, a baseline.
    Write,
}

/// The few kinds of I/O failure a user can act on, whatever the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The path, or a directory on it, does not exist.
    NotFound,
    /// A component of the path is a file, not a directory.
    NotADirectory,
    /// A symbolic link on the path loops (ELOOP).
    Loop,
    /// The user may not read or write there.
    PermissionDenied,
    /// The file system is mounted read-only.
    ReadOnly,
    /// The disk, the quota or the file-size limit is full.
    NoSpace,
    /// The network or the store does not answer.
    Unreachable,
    /// Anything else.
    Other,
}

/// ELOOP, which `std::io::ErrorKind` names only on nightly (`FilesystemLoop`).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) const ELOOP: i32 = 40;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) const ELOOP: i32 = 62;

impl Fault {
    /// The fault an I/O error is.
    pub fn of(e: &std::io::Error) -> Fault {
        use std::io::ErrorKind as K;
        // A wrapped error (tempfile's, with the path) keeps its kind but not the OS code.
        if e.raw_os_error() == Some(ELOOP) || format!("{:?}", e.kind()) == "FilesystemLoop" {
            return Fault::Loop;
        }
        match e.kind() {
            K::NotFound => Fault::NotFound,
            K::NotADirectory => Fault::NotADirectory,
            K::PermissionDenied => Fault::PermissionDenied,
            K::ReadOnlyFilesystem => Fault::ReadOnly,
            K::StorageFull | K::QuotaExceeded | K::FileTooLarge => Fault::NoSpace,
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::TimedOut
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown => Fault::Unreachable,
            _ => Fault::Other,
        }
    }

    /// The one rule (README, Exit codes): a path that names nothing usable (missing, a
    /// file where a directory is needed, a symlink loop) is the user's input, 2; a place
    /// that refuses a write (permission, read-only, full) is an output error, 5; a store
    /// that does not answer is the environment, 4. A read that is refused is an input
    /// that cannot be read, 2.
    pub fn kind(self, access: Access) -> Kind {
        match (self, access) {
            (Fault::NotFound | Fault::NotADirectory | Fault::Loop, _) => Kind::Input,
            (Fault::Unreachable, _) => Kind::Environment,
            (_, Access::Read) => Kind::Input,
            (_, Access::Write) => Kind::Output,
        }
    }

    /// What is wrong and what to do, after the path.
    fn sentence(self, access: Access, e: &std::io::Error) -> String {
        let verb = match access {
            Access::Read => "read",
            Access::Write => "write",
        };
        match (self, access) {
            (Fault::NotFound, Access::Read) => "does not exist: check the path".to_owned(),
            (Fault::NotFound, Access::Write) => {
                "a directory on the path does not exist: create it first".to_owned()
            }
            (Fault::NotADirectory, _) => {
                "a part of the path is a file, not a directory: give a path through directories"
                    .to_owned()
            }
            (Fault::Loop, _) => "a symbolic link on the path loops (too many levels of \
                 symbolic links): point the link at a real directory"
                .to_owned(),
            (Fault::PermissionDenied, _) => {
                format!("permission denied: {verb} as a user allowed to, or choose another path")
            }
            (Fault::ReadOnly, _) => {
                "the file system is read-only: write to a writable directory".to_owned()
            }
            (Fault::NoSpace, _) => "no space left (disk, quota or file-size limit): free some \
                 space or write elsewhere"
                .to_owned(),
            (Fault::Unreachable, _) => {
                format!("cannot be reached ({e}): check the network and the endpoint")
            }
            (Fault::Other, _) => e.to_string(),
        }
    }
}

/// The one answer to an I/O failure on a path, for every command and output: `what`
/// says what was done to which path ("cannot write out/g.md", "cannot read the dataset
/// DS"), [`Fault`] says what
/// went wrong in one sentence, and [`Fault::kind`] alone picks the exit code.
pub(crate) fn io_fault(access: Access, what: &str, e: &std::io::Error) -> Error {
    let fault = Fault::of(e);
    let cause = e.raw_os_error().map_or_else(
        || std::io::Error::new(e.kind(), e.to_string()),
        std::io::Error::from_raw_os_error,
    );
    Error::new(
        fault.kind(access),
        format!("{what}: {}", fault.sentence(access, e)),
    )
    .with_source(cause)
}

/// The one line a panic prints (through the hook `main` installs): what panicked, where,
/// and that it is a bug.
pub fn panic_line(message: &str, location: Option<(&str, u32)>) -> String {
    let at = location
        .map(|(file, line)| format!(" at {file}:{line}"))
        .unwrap_or_default();
    // One line however the message was written (a panic message may span several).
    let message: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    format!(
        "stepgate: internal error: {}{at}; this is a bug in stepgate — please report it with the command line",
        message.join(" ")
    )
}

/// A panic as the hook saw it: its message and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanicRecord {
    pub message: String,
    pub location: Option<(String, u32)>,
}

impl PanicRecord {
    /// The one line to print; `context` is the error the panic surfaced as, when a
    /// thread's panic came back as one ("the report hashing thread panicked: …").
    pub fn line(&self, context: Option<&str>) -> String {
        let message = match context {
            Some(c) => format!("{c}: {}", self.message),
            None => self.message.clone(),
        };
        panic_line(
            &message,
            self.location.as_ref().map(|(f, l)| (f.as_str(), *l)),
        )
    }
}

/// The first panic of this process. The hook records it instead of printing, because
/// some panics are caught and turned into an ordinary error (`launch-probe` inside the
/// CUDA bindings); `main` prints it when the panic (or a thread's panic, reported as
/// [`Kind::Internal`]) ends the run.
static FIRST_PANIC: Mutex<Option<PanicRecord>> = Mutex::new(None);

/// Record a panic (called by the panic hook; keeps the first).
pub(crate) fn record_panic(info: &std::panic::PanicHookInfo<'_>) {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    let record = PanicRecord {
        message: message.to_owned(),
        location: info.location().map(|l| (l.file().to_owned(), l.line())),
    };
    let mut first = FIRST_PANIC.lock().unwrap_or_else(|e| e.into_inner());
    first.get_or_insert(record);
}

/// The recorded panic, if a panic happened.
pub fn recorded_panic() -> Option<PanicRecord> {
    FIRST_PANIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_exit_code() {
        let cases = [
            (Error::usage("x"), INPUT),
            (Error::input("x"), INPUT),
            (Error::baseline("x"), INPUT),
            (Error::environment("x"), ENVIRONMENT),
            (
                Error::stdout(std::io::ErrorKind::StorageFull.into()),
                OUTPUT,
            ),
            (Error::internal("x"), INTERNAL),
            (Error::interrupted("x"), INTERRUPTED),
        ];
        for (e, code) in cases {
            assert_eq!(e.exit_code(), code, "{:?}", e.kind);
        }
        assert_eq!((OUTPUT, INTERNAL), (5, 70));
    }

    #[test]
    fn an_output_error_names_the_file_and_keeps_its_cause() {
        use std::error::Error as _;
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = Error::output(Path::new("out/g.md"), io);
        assert_eq!(e.kind, Kind::Output);
        assert_eq!(
            e.message,
            "cannot write out/g.md: permission denied: write as a user allowed to, or choose \
             another path"
        );
        let src = e.source().expect("the io error is kept");
        assert_eq!(
            src.downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind),
            Some(std::io::ErrorKind::PermissionDenied)
        );
        assert!(Error::input("no cause").source().is_none());
    }

    #[test]
    fn a_polars_error_is_internal_with_its_source() {
        use std::error::Error as _;
        let p = polars::error::PolarsError::ColumnNotFound("wall_ns".into());
        let e = Error::from(p);
        assert_eq!(e.exit_code(), INTERNAL);
        assert!(e.message.contains("wall_ns"), "{}", e.message);
        assert!(e.source().is_some());
    }

    #[test]
    fn a_thread_panic_names_both_the_error_and_the_panic() {
        let p = PanicRecord {
            message: "attempt to subtract with overflow".into(),
            location: Some(("src/dataset/write.rs".into(), 80)),
        };
        assert_eq!(
            p.line(Some("the report hashing thread panicked")),
            "stepgate: internal error: the report hashing thread panicked: attempt to subtract \
             with overflow at src/dataset/write.rs:80; this is a bug in stepgate — please report it \
             with the command line"
        );
    }

    #[test]
    fn the_panic_line_is_one_line_with_the_place_and_the_plea() {
        assert_eq!(
            panic_line("index out of bounds: the len is 3\nbut the index is 7", Some(("src/x.rs", 12))),
            "stepgate: internal error: index out of bounds: the len is 3 but the index is 7 at src/x.rs:12; \
             this is a bug in stepgate — please report it with the command line"
        );
        assert_eq!(
            panic_line("boom", None),
            "stepgate: internal error: boom; this is a bug in stepgate — please report it with the command line"
        );
    }
}
