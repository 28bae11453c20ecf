//! A local dataset's file-system failures, answered as every other path's
//! ([`crate::exit::io_fault`]): the root's state before a read or write, and a failed
//! request of object_store's `LocalFileSystem` by the OS error inside it.

use std::path::Path;

use crate::exit::{io_fault, Access, Error, Fault, Result};

/// What is at a local dataset's root: `Ok(true)` a directory, `Ok(false)` nothing yet.
/// A file there, a symlink loop, a path through a file or a refused look is one error,
/// the same for every command ([`io_fault`]; a file there is exit 2).
pub fn local_root(d: &Path, access: Access) -> Result<bool> {
    match std::fs::metadata(d) {
        Ok(m) if m.is_dir() => Ok(true),
        Ok(_) => Err(Error::input(format!(
            "{} exists and is not a directory: pass a dataset directory (one `stepgate \
             export` writes)",
            d.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => {
            let verb = match access {
                Access::Read => "read",
                Access::Write => "write",
            };
            Err(io_fault(
                access,
                &format!("cannot {verb} the dataset {}", d.display()),
                &e,
            ))
        }
    }
}

/// Whether `op` only reads.
fn access_of(op: &str) -> Access {
    match op {
        "read" | "list" => Access::Read,
        _ => Access::Write,
    }
}

/// A local dataset's failed request: the OS error inside it classified as any path's
/// ([`io_fault`]); a write adds that nothing was committed (the export removes what it
/// wrote before the failure). Without an OS error (a walk that found a loop by itself),
/// the reason as the store gives it, with the same exit code a read or write gets.
pub(crate) fn local_fault(op: &str, what: &str, e: &object_store::Error, why: &str) -> Error {
    use std::error::Error as _;
    let access = access_of(op);
    let mut src: Option<&dyn std::error::Error> = e.source();
    let mut found = None;
    while let Some(x) = src {
        if let Some(io) = x.downcast_ref::<std::io::Error>() {
            found = Some(io);
        }
        src = x.source();
    }
    let mut err = match found {
        Some(io) => io_fault(access, &format!("cannot {op} {what}"), io),
        None if why.contains("loop") => io_fault(
            access,
            &format!("cannot {op} {what}"),
            &std::io::Error::from_raw_os_error(crate::exit::ELOOP),
        ),
        None => Error::new(
            Fault::Other.kind(access),
            format!("cannot {op} {what}: {why}"),
        ),
    };
    if access == Access::Write {
        err.message.push_str("; nothing was committed");
    }
    err
}
