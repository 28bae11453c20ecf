//! The environment the real-nsys tests (tests/it/real_nsys.rs, tests/it/nvtx_projection.rs)
//! need: nsys on PATH and a python whose `nvtx` records ranges under it (a probe proves it
//! once), the skip-or-fail rule (`STEPGATE_REQUIRE_NSYS=1` makes a skip a failure), one
//! nsys session at a time, and the stand-in engine profiled under nsys.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use stepgate::source::nsys::export::{ensure_sqlite, find_program, ExportOptions};

use crate::common;

pub(crate) fn standin() -> PathBuf {
    common::root()
        .join("tests")
        .join("standin")
        .join("engine.py")
}

/// The python that runs the stand-in: `STEPGATE_TEST_PYTHON` (`.ci/run` points it at the
/// virtualenv `.ci/install_nsys.sh` makes, with an nvtx that records under nsys 2022.4),
/// else `python3` on PATH.
pub(crate) fn python() -> String {
    std::env::var("STEPGATE_TEST_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}

/// The installed nvtx version, as the package metadata says (the module has no
/// `__version__`), or None when it does not import.
pub(crate) fn nvtx_version(python: &str) -> Option<String> {
    let out = Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, nvtx; print(m.version('nvtx'))",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !v.is_empty()).then_some(v)
}

/// Whether an nvtx version is one of those that record nothing under nsys 2022.4: from
/// 0.2.12 a domain is created only when `nvtxDomainIsEnabled` returns non-zero, and
/// 2022.4's injection library answers 0.
pub(crate) fn gated_on_domain_enabled(version: &str) -> bool {
    let n: Vec<u32> = version
        .split('.')
        .take(3)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    n.as_slice() >= [0, 2, 12].as_slice()
}

/// The range the probe pushes.
const PROBE_RANGE: &str = "stepgate-nvtx-probe";

/// Profile one `nvtx.push_range`/`pop_range` under nsys and count the rows of that name
/// in the export: the proof that this nsys and this nvtx record ranges at all (a version
/// check alone cannot tell for an nsys other than 2022.4). Err is the reason it could not
/// be run.
fn probe_records_a_range(nsys: &Path, python: &str) -> Result<bool, String> {
    let t = tempfile::tempdir().map_err(|e| e.to_string())?;
    let code = format!("import nvtx; nvtx.push_range('{PROBE_RANGE}'); nvtx.pop_range()");
    let out = retry_launcher_race(|| {
        Command::new(nsys)
            .args(["profile", "-t", "nvtx", "--sample=none", "--cpuctxsw=none"])
            .arg("-o")
            .arg(t.path().join("p"))
            .args([python, "-c", &code])
            .output()
    })
    .map_err(|e| format!("cannot run {}: {e}", nsys.display()))?;
    if !out.status.success() {
        return Err(format!(
            "nsys profile of the nvtx probe failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let rep = ["p.nsys-rep", "p.qdstrm"]
        .iter()
        .map(|f| t.path().join(f))
        .find(|p| p.is_file())
        .ok_or("nsys wrote no report for the nvtx probe")?;
    let sqlite = ensure_sqlite(&rep, &ExportOptions::from_env()).map_err(|e| e.message)?;
    let db = rusqlite::Connection::open(&sqlite).map_err(|e| e.to_string())?;
    // No NVTX_EVENTS table at all is what an export with no NVTX row looks like.
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON e.textId = s.id \
             WHERE coalesce(e.text, s.value) = ?1",
            [PROBE_RANGE],
            |r| r.get(0),
        )
        .unwrap_or(0);
    Ok(n > 0)
}

/// What a test needs of nsys and the stand-in's python.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Needs {
    /// nsys, and a python that imports `nvtx` (the stand-in imports it): the capture tests,
    /// whose checks are the server's lifecycle, not its ranges.
    Import,
    /// Also NVTX ranges recorded under this nsys, proved by the probe: the step tests.
    Ranges,
}

/// nsys on PATH and a python whose `nvtx` does what `needs` says (the range probe runs
/// once per test process), or why not (printed as the skip line).
fn prerequisites(needs: Needs) -> Result<PathBuf, String> {
    static FOUND: std::sync::OnceLock<Result<(PathBuf, String, String), String>> =
        std::sync::OnceLock::new();
    static RECORDS: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let (nsys, python, version) = FOUND
        .get_or_init(|| {
            let nsys = find_program("nsys", std::env::var_os("PATH").as_deref()).ok_or(
                "nsys is not on PATH (.ci/install_nsys.sh installs Nsight Systems 2022.4 from Debian)",
            )?;
            let python = python();
            let version = nvtx_version(&python).ok_or_else(|| {
                format!(
                    "{python} cannot import nvtx (.ci/install_nsys.sh makes a virtualenv with \
                     nvtx<0.2.12; point STEPGATE_TEST_PYTHON at its python3)"
                )
            })?;
            Ok((nsys, python, version))
        })
        .clone()?;
    if needs == Needs::Import {
        return Ok(nsys);
    }
    RECORDS
        .get_or_init(|| {
            if probe_records_a_range(&nsys, &python)? {
                return Ok(());
            }
            let why = if gated_on_domain_enabled(&version) {
                " (nvtx 0.2.12 and later create a domain only when nvtxDomainIsEnabled \
                 returns non-zero, which nsys 2022.4 answers 0)"
            } else {
                ""
            };
            Err(format!(
                "nsys recorded no NVTX range from nvtx {version} under {python}{why}: \
                 install nvtx<0.2.12 (.ci/install_nsys.sh makes a virtualenv with it; point \
                 STEPGATE_TEST_PYTHON at its python3)"
            ))
        })
        .clone()
        .map(|()| nsys)
}

/// Run an `nsys profile` again (at most twice more) when it failed in nsys 2022.4's
/// launcher with `sem_open ... No such file or directory`, or in its client with `Local
/// Endpoint is not available` (its daemon's socket not up yet): a race with another nsys
/// process on the machine (the `nsys export` that other tests' .nsys-rep inputs start
/// runs beside the lock below), not an answer about the profiled program. Any other
/// failure is returned at once.
fn retry_launcher_race<T: Launched>(mut run: impl FnMut() -> T) -> T {
    let mut out = run();
    for _ in 0..2 {
        if !out.lost_the_race() {
            break;
        }
        out = run();
    }
    out
}

/// What a launch returned, asked whether it lost nsys' launcher race.
trait Launched {
    fn lost_the_race(&self) -> bool;
}

impl Launched for std::process::Output {
    fn lost_the_race(&self) -> bool {
        let said = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            s.contains("sem_open") || s.contains("Local Endpoint is not available")
        };
        !self.status.success() && (said(&self.stderr) || said(&self.stdout))
    }
}

impl<E> Launched for Result<std::process::Output, E> {
    fn lost_the_race(&self) -> bool {
        self.as_ref().is_ok_and(Launched::lost_the_race)
    }
}

/// One nsys session at a time: two `nsys profile` launched together in one process tree
/// can fail in nsys 2022.4's launcher (`sem_open ... No such file or directory`).
static NSYS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The nsys lock (a failed test before us does not poison it for the rest) and nsys, or
/// the skip line and None; with `STEPGATE_REQUIRE_NSYS=1` (`.ci/run`) a skip is a
/// failure, so CI cannot go green without having run these tests.
pub(crate) fn need(
    test: &str,
    needs: Needs,
) -> Option<(std::sync::MutexGuard<'static, ()>, PathBuf)> {
    let one = NSYS.lock().unwrap_or_else(|e| e.into_inner());
    match prerequisites(needs) {
        Ok(n) => Some((one, n)),
        Err(why) => {
            if std::env::var("STEPGATE_REQUIRE_NSYS").as_deref() == Ok("1") {
                panic!("{test}: STEPGATE_REQUIRE_NSYS=1, but {why}");
            }
            // Straight to stderr: libtest captures eprintln! of a passing test, and the
            // skip must be seen in a plain `cargo test`.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
            None
        }
    }
}

/// The stand-in's log: one JSON object per line.
pub(crate) fn read_log(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Profile `engine.py emit --engine ENGINE` under nsys in `dir`; returns the report nsys
/// left (`e.nsys-rep`, or `e.qdstrm` where nsys cannot find its importer) and the log.
pub(crate) fn profile_emit(
    nsys: &Path,
    dir: &Path,
    engine: &str,
    steps: usize,
) -> (PathBuf, Vec<Value>) {
    let log = dir.join("e.log");
    let out = retry_launcher_race(|| {
        Command::new(nsys)
            .args([
                "profile",
                "-t",
                "nvtx,osrt",
                "--sample=none",
                "--cpuctxsw=none",
                "-o",
            ])
            .arg(dir.join("e"))
            .arg(python())
            .arg(standin())
            .args([
                "emit",
                "--engine",
                engine,
                "--steps",
                &steps.to_string(),
                "--log",
            ])
            .arg(&log)
            .output()
            .unwrap()
    });
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "nsys profile failed: {said}");
    let rep = ["e.nsys-rep", "e.qdstrm"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("nsys wrote no report: {said}"));
    (rep, read_log(&log))
}
