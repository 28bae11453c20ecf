//! nsys for a capture: the `nsys profile -c cudaProfilerApi` argv the server runs under
//! (the invocation SGLang's own test uses; never a shell string), finding nsys, finishing
//! the report it leaves (importing a `.qdstrm`), and exporting it to SQLite.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::exit::{Error, Result};
use crate::source::nsys::export;

/// The report base name: `run` and `run.nsys-rep` both mean `run.nsys-rep` (nsys appends
/// the extension itself).
pub(crate) fn base_name(out: &Path) -> PathBuf {
    let s = out.as_os_str().to_string_lossy();
    match s.strip_suffix(".nsys-rep") {
        Some(b) => PathBuf::from(b),
        None => out.to_path_buf(),
    }
}

/// `BASE.nsys-rep`.
pub(crate) fn report_path(base: &Path) -> PathBuf {
    with_suffix(base, ".nsys-rep")
}

/// `BASE.sqlite`.
pub(crate) fn sqlite_path(base: &Path) -> PathBuf {
    with_suffix(base, ".sqlite")
}

/// `BASE.qdstrm`: the raw capture nsys 2022.4 leaves when it cannot find its importer.
pub(crate) fn qdstrm_path(base: &Path) -> PathBuf {
    with_suffix(base, ".qdstrm")
}

fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// `nsys profile` arguments: CUDA, NVTX and OS-runtime tracing, graphs traced per node (so
/// kernels inside graph replays are visible), capture range opened by cudaProfilerStart and
/// closed, once, by cudaProfilerStop.
pub(crate) fn profile_args(base: &Path, server: &[String]) -> Vec<OsString> {
    let mut a: Vec<OsString> = [
        "profile",
        "-t",
        "cuda,nvtx,osrt",
        "--cuda-graph-trace=node",
        "-c",
        "cudaProfilerApi",
        "--capture-range-end",
        "stop",
        "-o",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    a.push(base.as_os_str().to_owned());
    a.extend(server.iter().map(OsString::from));
    a
}

/// `nsys export` arguments: `BASE.nsys-rep` → `BASE.sqlite`.
pub(crate) fn export_args(base: &Path) -> Vec<OsString> {
    export::export_argv(&sqlite_path(base), &report_path(base))
}

/// Find `nsys` (or an explicit path) the way a shell would, so a missing install is a clear
/// exit-4 error before anything starts.
pub fn find(program: &str, path_var: Option<OsString>) -> Result<PathBuf> {
    let missing = || {
        Error::environment(format!(
            "nsys not found ({program} is not on PATH): install Nsight Systems \
             (https://developer.nvidia.com/nsight-systems) or pass --nsys /path/to/nsys"
        ))
    };
    export::find_program(program, path_var.as_deref()).ok_or_else(missing)
}

/// The report nsys left for `base`: `BASE.nsys-rep`, or (nsys 2022.4 without its importer
/// in reach) `BASE.qdstrm` imported into it with nsys's `QdstrmImporter`, which is what
/// nsys itself would have run. The `.qdstrm` is removed once imported, as nsys removes its
/// own. `None` when nsys wrote neither: the capture range never opened.
pub(crate) fn finish_report(nsys: &Path, base: &Path) -> Result<Option<PathBuf>> {
    let rep = report_path(base);
    if rep.is_file() {
        return Ok(Some(rep));
    }
    let raw = qdstrm_path(base);
    if !raw.is_file() {
        return Ok(None);
    }
    export::import_qdstrm(nsys, &raw, &rep)?;
    // The raw capture is an intermediate nsys deletes after importing; keeping it would
    // leave hundreds of MB beside every report.
    let _ = std::fs::remove_file(&raw);
    Ok(Some(rep))
}

/// Run `nsys export` and check the SQLite file exists.
pub fn export(nsys: &Path, base: &Path, timeout: Duration) -> Result<PathBuf> {
    let sqlite = sqlite_path(base);
    let mut child = Command::new(nsys)
        .args(export_args(base))
        .spawn()
        .map_err(|e| Error::environment(format!("cannot run {} export: {e}", nsys.display())))?;
    let until = Instant::now() + timeout;
    let status = loop {
        let exited = child.try_wait().map_err(|e| {
            Error::environment(format!("cannot wait for {} export: {e}", nsys.display()))
        })?;
        if let Some(s) = exited {
            break s;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::environment(format!(
                "nsys export of {} took longer than {} s; run `nsys export --type sqlite {}` by hand",
                report_path(base).display(),
                timeout.as_secs(),
                report_path(base).display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() || !sqlite.is_file() {
        return Err(Error::environment(format!(
            "nsys export failed ({status}) and wrote no {}: check nsys's message above; \
             the report itself is {}",
            sqlite.display(),
            report_path(base).display()
        )));
    }
    Ok(sqlite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            base_name(Path::new("out/run.nsys-rep")),
            PathBuf::from("out/run")
        );
        assert_eq!(base_name(Path::new("out/run")), PathBuf::from("out/run"));
        assert_eq!(report_path(Path::new("r")), PathBuf::from("r.nsys-rep"));
        assert_eq!(sqlite_path(Path::new("r")), PathBuf::from("r.sqlite"));
    }

    #[test]
    fn argv_is_the_documented_invocation() {
        let a = profile_args(
            Path::new("run"),
            &["python3".into(), "-m".into(), "x y".into()],
        );
        let s: Vec<String> = a.iter().map(|x| x.to_string_lossy().into_owned()).collect();
        assert_eq!(
            s.join("|"),
            "profile|-t|cuda,nvtx,osrt|--cuda-graph-trace=node|-c|cudaProfilerApi|\
             --capture-range-end|stop|-o|run|python3|-m|x y"
        );
    }

    #[test]
    fn missing_nsys_is_exit_4() {
        let e = find("nsys", Some(OsString::from("/nonexistent-dir"))).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::ENVIRONMENT);
        assert!(e.message.contains("install Nsight Systems"));
    }
}
