//! Where a dataset lives: a local path or a URL of a store this build reaches, told apart
//! by the scheme it is written with.

use std::path::{Path, PathBuf};

use super::config::scrub;
use crate::exit::{Error, Result};

/// Where a dataset lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Local(PathBuf),
    /// A URL the object_store builders take (`s3://bucket/prefix`, …), its scheme.
    Remote {
        url: String,
        scheme: String,
    },
}

/// The URL schemes this build reaches.
pub const SCHEMES: &[&str] = &["s3", "s3a", "gs", "az", "abfs", "abfss", "file"];

/// The scheme of `s` when it is written as a URL (`scheme://…`).
fn scheme_of(s: &str) -> Option<&str> {
    let (scheme, _) = s.split_once("://")?;
    let mut c = scheme.chars();
    let ok = c.next().is_some_and(|c| c.is_ascii_alphabetic())
        && c.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then_some(scheme)
}

impl Location {
    /// A local path or a URL; a scheme this build does not reach is an error naming it
    /// (never a local directory called `s3:`).
    pub fn parse(p: &Path) -> Result<Location> {
        let s = p.to_string_lossy();
        let Some(scheme) = scheme_of(&s) else {
            return Ok(Location::Local(p.to_path_buf()));
        };
        let lower = scheme.to_ascii_lowercase();
        if lower == "file" {
            let url = url::Url::parse(&s)
                .map_err(|e| Error::usage(format!("{s} is not a file:// URL: {e}")))?;
            let path = url.to_file_path().map_err(|()| {
                Error::usage(format!(
                    "{s} is not a local file:// URL (write file:///absolute/path)"
                ))
            })?;
            return Ok(Location::Local(path));
        }
        if !SCHEMES.contains(&lower.as_str()) {
            return Err(Error::usage(format!(
                "{}: the storage scheme `{scheme}://` is not supported by this build: use a \
                 local path, file://, s3:// (any S3-compatible store), gs:// or az://",
                scrub(&s)
            )));
        }
        Ok(Location::Remote {
            url: s.into_owned(),
            scheme: lower,
        })
    }

    /// Whether `p` is written as a URL of a remote store.
    pub(crate) fn is_remote(p: &Path) -> bool {
        matches!(Location::parse(p), Ok(Location::Remote { .. }))
    }
}

/// For an output path of a command: `Ok(true)` when it is a URL this output may take (a
/// baseline, planned creating its directories), an error when it is a URL it may not.
pub fn remote_output(flag: &str, path: &Path, may_be_remote: bool) -> Result<bool> {
    if !Location::is_remote(path) {
        Location::parse(path)?;
        return Ok(false);
    }
    if may_be_remote {
        return Ok(true);
    }
    Err(Error::usage(format!(
        "{flag} {}: this output is written to a local path only (URLs are for baselines and \
         datasets)",
        scrub(&path.display().to_string())
    )))
}
