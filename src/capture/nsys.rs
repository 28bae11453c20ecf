//! Running the server under `nsys profile -c cudaProfilerApi` (the invocation SGLang's own
//! test uses), as an argv and never a shell string; shutting its whole process group
//! down on success, error or Ctrl-C; exporting the report to SQLite.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::exit::{Error, Result};

/// The report base name: `run` and `run.nsys-rep` both mean `run.nsys-rep` (nsys appends
/// the extension itself).
pub fn base_name(out: &Path) -> PathBuf {
    let s = out.as_os_str().to_string_lossy();
    match s.strip_suffix(".nsys-rep") {
        Some(b) => PathBuf::from(b),
        None => out.to_path_buf(),
    }
}

/// `BASE.nsys-rep`.
pub fn report_path(base: &Path) -> PathBuf {
    with_suffix(base, ".nsys-rep")
}

/// `BASE.sqlite`.
pub fn sqlite_path(base: &Path) -> PathBuf {
    with_suffix(base, ".sqlite")
}

fn with_suffix(base: &Path, suffix: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// `nsys profile` arguments: CUDA, NVTX and OS-runtime tracing, graphs traced per node (so
/// kernels inside graph replays are visible), capture range opened by cudaProfilerStart and
/// closed, once, by cudaProfilerStop.
pub fn profile_args(base: &Path, server: &[String]) -> Vec<OsString> {
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
pub fn export_args(base: &Path) -> Vec<OsString> {
    crate::source::nsys::export::export_argv(&sqlite_path(base), &report_path(base))
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
    crate::source::nsys::export::find_program(program, path_var.as_deref()).ok_or_else(missing)
}

#[cfg(unix)]
mod sig {
    pub const SIGINT: i32 = 2;
    pub const SIGKILL: i32 = 9;
    pub const SIGTERM: i32 = 15;
    extern "C" {
        // libc's kill(2); a negative pid addresses a whole process group.
        fn kill(pid: i32, sig: i32) -> i32;
    }
    /// Send `sig` to process group `pgid`; false when no process is left in it.
    pub fn group(pgid: u32, sig: i32) -> bool {
        // Safety: plain syscall wrapper.
        unsafe { kill(-(pgid as i32), sig) == 0 }
    }
}

/// The server (nsys and everything it started), in a process group of its own so that one
/// signal reaches all of it and Ctrl-C in the terminal reaches only stepgate. Dropping the
/// guard shuts the group down.
#[derive(Debug)]
pub struct ServerGroup {
    child: Child,
    status: Option<ExitStatus>,
    /// How long nsys may take to write its report after SIGINT.
    pub grace: Duration,
}

impl ServerGroup {
    /// Start `program args…` in a new process group, with `env` added to the environment it
    /// inherits (nsys passes it on to the server).
    pub fn spawn(
        program: &Path,
        args: &[OsString],
        env: &[(String, String)],
        grace: Duration,
    ) -> Result<ServerGroup> {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let child = cmd.spawn().map_err(|e| {
            Error::environment(format!(
                "cannot start {}: {e}; check --nsys",
                program.display()
            ))
        })?;
        Ok(ServerGroup {
            child,
            status: None,
            grace,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once the direct child (nsys) has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    fn wait_for(&mut self, d: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + d;
        loop {
            if let Some(s) = self.exited() {
                return Some(s);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGINT to the group (what Ctrl-C in a terminal does: nsys finalises its report and the
    /// server shuts down), then SIGTERM, then SIGKILL, each after a bounded wait; last, any
    /// process left in the group (server workers) is terminated. Returns nsys's status.
    pub fn shutdown(&mut self) -> Option<ExitStatus> {
        #[cfg(unix)]
        {
            let pgid = self.child.id();
            if self.exited().is_none() {
                sig::group(pgid, sig::SIGINT);
                if self.wait_for(self.grace).is_none() {
                    sig::group(pgid, sig::SIGTERM);
                    if self.wait_for(Duration::from_secs(10)).is_none() {
                        sig::group(pgid, sig::SIGKILL);
                        self.wait_for(Duration::from_secs(5));
                    }
                }
            }
            // Stragglers: whatever nsys left running in the group.
            if sig::group(pgid, 0) {
                sig::group(pgid, sig::SIGTERM);
                let until = Instant::now() + Duration::from_secs(10);
                while sig::group(pgid, 0) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(50));
                }
                sig::group(pgid, sig::SIGKILL);
            }
        }
        #[cfg(not(unix))]
        {
            let _ = self.child.kill();
            self.wait_for(Duration::from_secs(10));
        }
        self.status
    }
}

impl Drop for ServerGroup {
    fn drop(&mut self) {
        self.shutdown();
    }
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
