//! Writing outputs all or nothing: each to a synced temporary file beside its target, then
//! renamed into place, with Ctrl-C held meanwhile; stale temporary files cleaned up.

use std::io::Write;
use std::path::Path;

use super::plan::{parent_dir, resolve, special};
use super::{TMP_PREFIX, TMP_SUFFIX};
use crate::exit::{Error, Result};

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

/// [`write_all`] for the files of one output directory (`man --dir`): each is created new
/// and renamed into place, so a symlink planted at one of the names is replaced by the
/// file, and nothing outside the directory is written.
pub fn write_entries(files: &[(&Path, &[u8])]) -> Result<()> {
    let fills = files
        .iter()
        .map(|(path, bytes)| {
            let fill: Fill<'_> = Box::new(move |w: &mut dyn Write| {
                w.write_all(bytes).map_err(|e| Error::output(path, e))
            });
            (*path, fill)
        })
        .collect();
    Staged::stage_as(fills, true)?.commit()
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
    guard: crate::interrupt::Deferred,
    /// Directory entries: the rename replaces the path itself, a symlink included.
    entries: bool,
}

impl<'a> Staged<'a> {
    /// Stage every output in order; the first failure (or a signal) removes what was
    /// staged and returns the error.
    pub fn stage(fills: Vec<(&'a Path, Fill<'_>)>) -> Result<Staged<'a>> {
        Staged::stage_as(fills, false)
    }

    fn stage_as(fills: Vec<(&'a Path, Fill<'_>)>, entries: bool) -> Result<Staged<'a>> {
        let guard = crate::interrupt::defer();
        let mut files = Vec::with_capacity(fills.len());
        for (path, fill) in fills {
            // A failure drops `files`, which deletes every temporary file made so far.
            files.push((stage(path, fill, entries)?, path));
            if guard.interrupted() {
                return Err(not_written());
            }
        }
        Ok(Staged {
            files,
            guard,
            entries,
        })
    }

    /// Rename every staged file over its target, in staging order.
    pub fn commit(self) -> Result<()> {
        if self.guard.interrupted() {
            return Err(not_written());
        }
        for (tmp, path) in self.files {
            let target = if self.entries {
                path.to_path_buf()
            } else {
                resolve(path)
            };
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

fn stage(path: &Path, fill: Fill<'_>, entry: bool) -> Result<tempfile::NamedTempFile> {
    let target = if entry {
        path.to_path_buf()
    } else {
        resolve(path)
    };
    special(&path.display().to_string(), path, &target, entry)?;
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
