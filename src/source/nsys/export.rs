//! `.nsys-rep` / `.qdrep` reports: find or make their SQLite export with
//! `nsys export --type sqlite` — next to the report, or in a temp dir when that directory is
//! not writable — and reuse an export that is newer than the report. A `.qdstrm` (the raw
//! capture `nsys profile` leaves when it cannot find its importer, as Debian's nsys 2022.4
//! does: docs/capture.md) is first imported into a `.nsys-rep` with nsys's `QdstrmImporter`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exit::{Error, Result};

/// Where to look for `nsys` and whether the report's directory may be written.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// The PATH to search for `nsys` (the process's own PATH in [`ExportOptions::from_env`]).
    pub path_env: Option<OsString>,
    /// Overrides the writability probe of the report's directory (tests running as root
    /// cannot make a directory unwritable).
    pub dir_writable: Option<bool>,
}

impl ExportOptions {
    pub fn from_env() -> Self {
        ExportOptions {
            path_env: std::env::var_os("PATH"),
            dir_writable: None,
        }
    }
}

/// The `nsys` executable on a PATH value, if any.
pub(crate) fn find_nsys(path_env: Option<&OsStr>) -> Option<PathBuf> {
    find_program("nsys", path_env)
}

/// An executable the way a shell finds it: a path with a `/` as is, else the first
/// executable `program` in the directories of `path_env`.
pub fn find_program(program: &str, path_env: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    std::env::split_paths(path_env?)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

/// `nsys export` arguments that write `out` (SQLite) from `report`, replacing an old export.
pub(crate) fn export_argv(out: &Path, report: &Path) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = [
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "-o",
    ]
    .iter()
    .map(Into::into)
    .collect();
    a.push(out.as_os_str().to_owned());
    a.push(report.as_os_str().to_owned());
    a
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

/// Whether files can be created in `dir` (probed by creating one: permission bits lie for
/// root, read-only mounts and ACLs).
pub(crate) fn dir_is_writable(dir: &Path) -> bool {
    tempfile::Builder::new()
        .prefix(".stepgate-probe")
        .tempfile_in(dir)
        .is_ok()
}

/// The export beside the report (`some.nsys-rep` → `some.sqlite`, as nsys names it).
pub(crate) fn sibling_export(report: &Path) -> PathBuf {
    report.with_extension("sqlite")
}

/// The export in the temp dir, keyed by the report's absolute path so reruns reuse it.
pub fn temp_export(report: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let abs = std::fs::canonicalize(report).unwrap_or_else(|_| report.to_path_buf());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    abs.hash(&mut h);
    let stem = report
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    std::env::temp_dir()
        .join("stepgate-exports")
        .join(format!("{stem}-{:016x}.sqlite", h.finish()))
}

/// The text a `.qdstrm` carries in its first bytes (after a short binary prefix):
/// `NVIDIA Nsight Systems Stream 2022.4.2.1-…`.
pub(crate) const STREAM_MAGIC: &[u8] = b"NVIDIA Nsight Systems Stream";

/// Whether a file's first bytes (or its name) say it is an unimported `.qdstrm` capture.
pub(crate) fn is_qdstrm(path: &Path, head: &[u8]) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("qdstrm"))
        || head.windows(STREAM_MAGIC.len()).any(|w| w == STREAM_MAGIC)
}

/// The first bytes of a file (fewer when it is shorter or unreadable).
fn head(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut buf = Vec::with_capacity(64);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(64).read_to_end(&mut buf);
    }
    buf
}

const IMPORTER: &str = "QdstrmImporter";

/// nsys's `QdstrmImporter`, looked for where nsys itself looks — `DIR/../host-linux-x64`,
/// `DIR`, `DIR/host-linux-x64` of the nsys binary — at every link of the path's symlink
/// chain. nsys looks only beside its resolved binary; Debian installs that binary under
/// `/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64` and the importer under
/// `/usr/lib/nsight-systems/host-linux-x64`, which the middle link
/// (`/usr/lib/nsight-systems/bin/nsys`) reaches.
pub(crate) fn find_importer(nsys: &Path) -> Option<PathBuf> {
    let mut link = nsys.to_path_buf();
    // A symlink loop ends the walk (40 is the kernel's own limit).
    for _ in 0..40 {
        let dir = link.parent().unwrap_or(Path::new("."));
        let found = [
            dir.join("..").join("host-linux-x64").join(IMPORTER),
            dir.join(IMPORTER),
            dir.join("host-linux-x64").join(IMPORTER),
        ]
        .into_iter()
        .find(|p| is_executable(p));
        if found.is_some() {
            return found;
        }
        let next = std::fs::read_link(&link).ok()?;
        link = if next.is_absolute() {
            next
        } else {
            dir.join(next)
        };
    }
    None
}

/// Import `qdstrm` into the report `out` with the importer beside `nsys`, replacing an old
/// `out`. An environment error when there is no importer, an input error when it refuses
/// the file.
pub(crate) fn import_qdstrm(nsys: &Path, qdstrm: &Path, out: &Path) -> Result<()> {
    let Some(importer) = find_importer(nsys) else {
        return Err(Error::environment(format!(
            "{}: an unimported nsys capture, and no {IMPORTER} beside {} (nsys's host-linux-x64 \
             directory): run `{IMPORTER} -i {}` from your Nsight Systems install and pass the \
             .nsys-rep it writes",
            qdstrm.display(),
            nsys.display(),
            qdstrm.display()
        )));
    };
    let mut argv: Vec<OsString> = ["-f", "-i"].iter().map(Into::into).collect();
    argv.push(qdstrm.as_os_str().to_owned());
    argv.push("-o".into());
    argv.push(out.as_os_str().to_owned());
    let result = Command::new(&importer).args(&argv).output().map_err(|e| {
        Error::environment(format!("{}: could not run it ({e})", importer.display()))
    })?;
    if !result.status.success() || !out.is_file() {
        return Err(Error::input(format!(
            "{}: {IMPORTER} could not import it ({}{}); the capture may have been cut off",
            qdstrm.display(),
            result.status,
            last_line(&[&result.stdout, &result.stderr])
        )));
    }
    Ok(())
}

/// `: LAST LINE` of a tool's output (its last non-empty line across the streams, progress
/// bars drawn with `\r` split off), or nothing.
fn last_line(streams: &[&[u8]]) -> String {
    streams
        .iter()
        .rev()
        .find_map(|s| {
            String::from_utf8_lossy(s)
                .split(['\n', '\r'])
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .map(|l| format!(": {l}"))
        })
        .unwrap_or_default()
}

/// Whether `export` exists and is newer than (or as new as) `report`.
fn fresh(export: &Path, report: &Path) -> bool {
    let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (m(export), m(report)) {
        (Some(e), Some(r)) => e >= r,
        _ => false,
    }
}

/// The SQLite export of a report, made with `nsys` when there is none newer than it.
pub fn ensure_sqlite(report: &Path, opts: &ExportOptions) -> Result<PathBuf> {
    let sibling = sibling_export(report);
    if fresh(&sibling, report) {
        return Ok(sibling);
    }
    let temp = temp_export(report);
    if fresh(&temp, report) {
        return Ok(temp);
    }
    let dir = report
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let writable = opts.dir_writable.unwrap_or_else(|| dir_is_writable(dir));
    let out = if writable { sibling } else { temp };
    let Some(nsys) = find_nsys(opts.path_env.as_deref()) else {
        return Err(Error::environment(format!(
            "{}: is an nsys report and `nsys` is not on PATH; run `nsys export --type sqlite \
             -o {} {}` and pass the .sqlite",
            report.display(),
            out.display(),
            report.display()
        )));
    };
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::environment(format!("cannot create {}: {e}", parent.display())))?;
    }
    // A .qdstrm is imported beside its export (the same directory choice) first.
    let imported;
    let report = if is_qdstrm(report, &head(report)) {
        imported = out.with_extension("nsys-rep");
        if !fresh(&imported, report) {
            import_qdstrm(&nsys, report, &imported)?;
        }
        imported.as_path()
    } else {
        report
    };
    let result = Command::new(&nsys)
        .args(export_argv(&out, report))
        .output()
        .map_err(|e| Error::environment(format!("{}: could not run it ({e})", nsys.display())))?;
    if !result.status.success() || !out.is_file() {
        return Err(Error::input(format!(
            "{}: `nsys export --type sqlite` failed ({}{}); check the report opens in nsys",
            report.display(),
            result.status,
            last_line(&[&result.stderr])
        )));
    }
    Ok(out)
}
