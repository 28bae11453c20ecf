//! The server process tree stepgate starts (nsys and the engine under it), and its
//! shutdown: SIGINT, SIGTERM, SIGKILL to its process group, each after a bounded wait, then
//! whatever is left of it anywhere. nsys 2022.4's launcher starts the application in a
//! session (and process group) of its own, so a signal to nsys's group alone would leave
//! the engine running: the groups of every descendant are tracked too.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::exit::{Error, Result};

#[cfg(unix)]
mod sig {
    pub const SIGINT: i32 = 2;
    pub(crate) const SIGKILL: i32 = 9;
    pub(crate) const SIGTERM: i32 = 15;
    extern "C" {
        // libc's kill(2) and getpgrp(2); a negative pid addresses a whole process group.
        fn kill(pid: i32, sig: i32) -> i32;
        fn getpgrp() -> i32;
    }
    /// Send `sig` to process group `pgid`; false when no process is left in it.
    pub fn group(pgid: i32, sig: i32) -> bool {
        // Safety: plain syscall wrapper.
        unsafe { kill(-pgid, sig) == 0 }
    }
    /// This process's own group, never signalled.
    pub(crate) fn own_group() -> i32 {
        // Safety: plain syscall wrapper.
        unsafe { getpgrp() }
    }
}

/// `(pid, ppid, pgrp)` of every process in /proc (Linux); empty elsewhere.
fn processes() -> Vec<(i32, i32, i32)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
            let mut f = stat.rsplit_once(')')?.1.split_whitespace().skip(1);
            let ppid = f.next()?.parse().ok()?;
            let pgrp = f.next()?.parse().ok()?;
            Some((pid, ppid, pgrp))
        })
        .collect()
}

/// The process groups of `root` and everything below it.
pub(crate) fn descendant_groups(root: i32) -> BTreeSet<i32> {
    let procs = processes();
    let mut groups = BTreeSet::new();
    let mut frontier = vec![root];
    let mut seen = BTreeSet::from([root]);
    while let Some(p) = frontier.pop() {
        for &(pid, ppid, pgrp) in &procs {
            if pid == p {
                groups.insert(pgrp);
            }
            if ppid == p && seen.insert(pid) {
                frontier.push(pid);
            }
        }
    }
    groups
}

/// How often the process tree is looked at while the server runs (a /proc scan).
const SCAN_EVERY: Duration = Duration::from_secs(1);

/// The server (nsys and everything it started), in a process group of its own so that one
/// signal reaches all of it and Ctrl-C in the terminal reaches only stepgate. Dropping the
/// guard shuts the group down.
#[derive(Debug)]
pub struct ServerGroup {
    child: Child,
    status: Option<ExitStatus>,
    /// How long nsys may take to write its report after SIGINT.
    pub grace: Duration,
    /// Process groups its descendants were seen in, besides its own.
    groups: BTreeSet<i32>,
    scanned: Option<Instant>,
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
            groups: BTreeSet::new(),
            scanned: None,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its own process group id (it leads it).
    fn pgid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Remember the process groups of the tree as it is now (at most once per
    /// [`SCAN_EVERY`] unless `now`).
    fn scan(&mut self, now: bool) {
        if !now && self.scanned.is_some_and(|t| t.elapsed() < SCAN_EVERY) {
            return;
        }
        self.scanned = Some(Instant::now());
        if self.status.is_none() {
            self.groups.extend(descendant_groups(self.pgid()));
        }
    }

    /// `Some(status)` once the direct child (nsys) has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.scan(false);
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

    /// SIGINT to the group (what Ctrl-C in a terminal does: nsys finalises its report and
    /// passes the signal to the application), then SIGTERM, then SIGKILL, each after a
    /// bounded wait; last, any process left in the group or in a group a descendant was
    /// seen in (server workers, an application nsys started in its own session) is
    /// terminated. Returns nsys's status.
    pub fn shutdown(&mut self) -> Option<ExitStatus> {
        #[cfg(unix)]
        {
            let pgid = self.pgid();
            self.scan(true);
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
            // Stragglers: whatever nsys left running. A recorded group id cannot have been
            // reused by now: a group id lives while any member does, and a fresh group
            // needs its pid recycled first.
            let own = sig::own_group();
            self.groups.insert(pgid);
            for g in std::mem::take(&mut self.groups) {
                if g != own && g > 1 && sig::group(g, 0) {
                    sig::group(g, sig::SIGTERM);
                    let until = Instant::now() + Duration::from_secs(10);
                    while sig::group(g, 0) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    sig::group(g, sig::SIGKILL);
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_in_its_own_session_is_found_and_stopped() {
        // `setsid` starts the sleep in a session (and group) of its own, as nsys 2022.4's
        // launcher does with the application.
        // util-linux's setsid is on every Linux this runs on; a missing one is a failure,
        // not a silent pass.
        let setsid = which("setsid").expect("setsid (util-linux) on PATH");
        let args: Vec<OsString> = ["-c", &format!("{} sleep 60 & wait", setsid.display())]
            .iter()
            .map(OsString::from)
            .collect();
        let mut g =
            ServerGroup::spawn(Path::new("/bin/sh"), &args, &[], Duration::from_secs(1)).unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        let mut groups = BTreeSet::new();
        while groups.len() < 2 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
            groups = descendant_groups(g.pgid());
        }
        assert_eq!(groups.len(), 2, "{groups:?}");
        let other = *groups.iter().find(|&&x| x != g.pgid()).unwrap();
        g.shutdown();
        assert!(
            !sig::group(other, 0),
            "the sleep in its own session survived"
        );
        assert!(!sig::group(g.pgid(), 0));
    }

    #[cfg(target_os = "linux")]
    fn which(p: &str) -> std::result::Result<std::path::PathBuf, ()> {
        crate::source::nsys::export::find_program(p, std::env::var_os("PATH").as_deref()).ok_or(())
    }
}
