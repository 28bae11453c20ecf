//! The export lock: an exclusive `flock` on `DATASET/.lock`, waited for with a message and
//! a bounded timeout, naming the process that holds it (the holder writes its pid and
//! command line into the file after taking it). The kernel drops the lock when the holder
//! dies, so a killed export never leaves the dataset locked.
//!
//! The path is checked before it is opened: a FIFO there would block `open(2)` forever, a
//! symlink would create or lock a file outside the dataset, a directory cannot be locked.

use std::fs::{File, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::capture::interrupt::Deferred;
use crate::exit::{Error, Result};

/// The lock file's name inside the dataset.
pub const LOCK_FILE: &str = ".lock";

/// How long `export` waits for another export by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Held until dropped.
#[derive(Debug)]
pub struct DatasetLock {
    _file: File,
}

/// The lock file of a dataset.
pub fn lock_path(dataset: &Path) -> PathBuf {
    dataset.join(LOCK_FILE)
}

/// Refuse a lock path that is not a regular file (or absent) without opening it: a FIFO
/// would hang the open, a symlink would create a file outside the dataset.
pub fn check(dataset: &Path) -> Result<()> {
    let p = lock_path(dataset);
    match odd_kind(&p) {
        Some(what) => Err(refusal(&p, what)),
        None => Ok(()),
    }
}

fn refusal(p: &Path, what: &str) -> Error {
    Error::input(format!(
        "{} is {what}, not the dataset's lock file: refusing to open it; remove it \
         (export creates a regular file there)",
        p.display()
    ))
}

/// What the path is, when it is not a regular file.
fn odd_kind(path: &Path) -> Option<&'static str> {
    let m = std::fs::symlink_metadata(path).ok()?;
    let t = m.file_type();
    if t.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_socket() {
            return Some("a socket");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("a device");
        }
    }
    Some(if t.is_symlink() {
        "a symlink"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    })
}

/// Who holds the lock, as its holder wrote it (one line, at most 200 characters), or
/// "another process" when the file says nothing (a holder of an older stepgate).
fn holder(path: &Path) -> String {
    let mut text = String::new();
    if odd_kind(path).is_none() {
        if let Ok(f) = File::open(path) {
            let _ = f.take(512).read_to_string(&mut text);
        }
    }
    let line: String = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    if line.trim().is_empty() {
        "another process".to_owned()
    } else {
        line.trim().to_owned()
    }
}

/// Take the dataset's lock, waiting at most `timeout` for another holder (`waiting` is
/// given, once, the line that says who and for how long; the caller decides where it is
/// shown). A timeout is exit 4 naming the holder; Ctrl-C while waiting (held by `hold`, the
/// writer's deferral of signals) is exit 130.
pub fn acquire(
    dataset: &Path,
    timeout: Duration,
    hold: &Deferred,
    waiting: &mut dyn FnMut(String),
) -> Result<DatasetLock> {
    let p = lock_path(dataset);
    check(dataset)?;
    let refuse = |what: &str| refusal(&p, what);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&p)
        .map_err(|e| Error::input(format!("cannot open {}: {e}", p.display())))?;
    // Swapped for something else between the check and the open: refuse what was opened.
    if !f.metadata().is_ok_and(|m| m.is_file()) || odd_kind(&p).is_some() {
        return Err(refuse("not a regular file"));
    }
    let start = Instant::now();
    let mut said = false;
    loop {
        match f.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(Error::input(format!("cannot lock {}: {e}", p.display())))
            }
        }
        if hold.interrupted() {
            return Err(Error::interrupted(
                "interrupted while waiting for the dataset lock: nothing was written \
                 (temporary files removed)",
            ));
        }
        if start.elapsed() >= timeout {
            return Err(Error::environment(format!(
                "{} is still locked after {} s by {}: wait for that export to finish (or \
                 stop it if it is stuck), or allow a longer wait",
                p.display(),
                timeout.as_secs_f64(),
                holder(&p)
            )));
        }
        if !said {
            said = true;
            waiting(format!(
                "stepgate: waiting for the lock on {} (held by {}); giving up after {} s",
                p.display(),
                holder(&p),
                timeout.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Name ourselves for the next waiter. The flock is on the open file, not its
    // contents, so rewriting them does not touch the lock.
    let me = format!(
        "pid {}: {}\n",
        std::process::id(),
        std::env::args().collect::<Vec<_>>().join(" ")
    );
    let mut g = &f;
    let _ = f
        .set_len(0)
        .and_then(|()| g.write_all(me.as_bytes()))
        .and_then(|()| g.flush());
    Ok(DatasetLock { _file: f })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_lock_paths_are_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        assert_eq!(odd_kind(&p), None, "missing: fine, it is created");
        std::fs::create_dir(&p).unwrap();
        assert_eq!(odd_kind(&p), Some("a directory"));
        std::fs::remove_dir(&p).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.path().join("elsewhere"), &p).unwrap();
            assert_eq!(odd_kind(&p), Some("a symlink"));
        }
    }

    #[test]
    fn the_holder_is_read_as_one_clean_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        std::fs::write(&p, "").unwrap();
        assert_eq!(holder(&p), "another process");
        std::fs::write(&p, "pid 42: stepgate export\u{1b}[2J r.sqlite\nmore").unwrap();
        assert_eq!(holder(&p), "pid 42: stepgate export[2J r.sqlite");
    }
}
