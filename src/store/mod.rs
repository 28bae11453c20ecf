//! The one storage seam of the run history: a dataset is a local directory or a URL
//! (`s3://`, `gs://`, `az://`, `file://`), opened through the `object_store` crate —
//! `LocalFileSystem` for a directory, so local and remote datasets follow one protocol.
//!
//! Configuration is the standard one for each store (`AWS_*`, `GOOGLE_*`, `AZURE_*`
//! environment variables), then `--storage-option KEY=VALUE`, then `--io-timeout`. Errors
//! name the object and the store, never a credential: every message is scrubbed of the
//! secret values the configuration holds before it leaves this module.

pub mod awsprofile;
pub mod config;
pub mod localfs;
mod location;
pub mod reads;
mod secrets;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

pub use crate::store::config::{parse_options, scrub, StoreConfig};
use crate::store::config::{remote, short};

use self::localfs::local_fault;
pub use self::localfs::local_root;
pub use self::location::{remote_output, Location, SCHEMES};
use crate::exit::{io_fault, Access, Error, Result};

/// One object of a listing, its key relative to the dataset root.
#[derive(Debug, Clone)]
pub struct Obj {
    pub key: String,
    pub size: u64,
    /// When the store last wrote it (server time), Unix epoch ns.
    pub modified_ns: i64,
}

/// What a create-only put found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    Written,
    AlreadyExists,
}

/// An open dataset root: a store, the prefix inside it, and a runtime to wait on it.
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    root: Key,
    /// How messages name the root (the path or URL as given, scrubbed).
    name: String,
    /// The local directory, for a local dataset.
    local: Option<PathBuf>,
    rt: tokio::runtime::Runtime,
    /// Retries of a failed request, for the message that gives up.
    retries: usize,
    /// Objects read, per top-level prefix (table), for `store::reads`.
    reads: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        if !self::reads::debug_reads() {
            return;
        }
        if let Ok(r) = self.reads.lock() {
            self::reads::record(&self.name, &r);
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({})", self.name)
    }
}

/// Requests in flight at once when many objects are read.
const PARALLEL: usize = 32;

impl Store {
    /// Open the dataset at `p` (a path or a URL) as `c` configures a remote store. Nothing
    /// is created: a local directory appears with its first object.
    pub fn open(p: &Path, c: &StoreConfig) -> Result<Store> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::internal(format!("cannot start the I/O runtime: {e}")))?;
        let name = scrub(&p.display().to_string());
        match Location::parse(p)? {
            Location::Local(dir) => {
                let abs = std::path::absolute(&dir).map_err(|e| {
                    Error::input(format!("{}: cannot resolve the path: {e}", dir.display()))
                })?;
                let root = Key::from_absolute_path(&abs).map_err(|e| {
                    Error::input(format!("{}: not a usable dataset path: {e}", dir.display()))
                })?;
                Ok(Store {
                    inner: Arc::new(object_store::local::LocalFileSystem::new()),
                    root,
                    name,
                    local: Some(dir),
                    rt,
                    retries: c.retries,
                    reads: std::sync::Mutex::default(),
                })
            }
            Location::Remote { url, scheme } => {
                let (inner, root) = remote(&url, &scheme, c)?;
                Ok(Store {
                    inner,
                    root,
                    name: name.trim_end_matches('/').to_owned(),
                    local: None,
                    rt,
                    retries: c.retries,
                    reads: std::sync::Mutex::default(),
                })
            }
        }
    }

    /// The root as given (path or URL).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The local directory, for a local dataset.
    pub(crate) fn local_dir(&self) -> Option<&Path> {
        self.local.as_deref()
    }

    /// How messages name one object.
    pub fn name_of(&self, rel: &str) -> String {
        match &self.local {
            Some(d) => d.join(rel).display().to_string(),
            None => format!("{}/{rel}", self.name),
        }
    }

    fn key(&self, rel: &str) -> Key {
        let root = self.root.as_ref();
        if rel.is_empty() {
            self.root.clone()
        } else if root.is_empty() {
            Key::from(rel)
        } else {
            Key::from(format!("{root}/{rel}"))
        }
    }

    fn rel(&self, k: &Key) -> Option<String> {
        let parts: Vec<String> = k
            .prefix_match(&self.root)?
            .map(|p| p.as_ref().to_owned())
            .collect();
        Some(parts.join("/"))
    }

    /// The error of a failed request, one line naming the object and the store. A local
    /// dataset's failure is a file system's, answered as every other path's
    /// ([`crate::exit::io_fault`]); a remote store's is about credentials, a missing
    /// bucket or prefix, or the store not answering.
    fn fail(&self, op: &str, rel: &str, e: &object_store::Error) -> Error {
        let what = self.name_of(rel);
        let why = short(e);
        if self.local.is_some() {
            return local_fault(op, &what, e, &why);
        }
        match e {
            object_store::Error::PermissionDenied { .. } => Error::environment(format!(
                "{op} {what}: access denied ({why}): check the credentials and that they may \
                 {op} under {} (read-only credentials can only read a history)",
                self.name
            )),
            object_store::Error::Unauthenticated { .. } => Error::environment(format!(
                "{op} {what}: not authenticated ({why}): set the store's credentials \
                 (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile's role, or \
                 --storage-option)"
            )),
            object_store::Error::NotFound { .. } => Error::input(format!(
                "{op} {what}: not found ({why}): check the bucket and prefix of {}",
                self.name
            )),
            _ => Error::environment(format!(
                "{op} {what} failed ({why}); nothing was committed: check that the store is \
                 reachable (retried {} times; --io-timeout sets the wait per request)",
                self.retries
            )),
        }
    }

    /// Refuse, before any work, a dataset that cannot be written: a local path that is a
    /// file, a directory or bucket that refuses a write (a probe object is written and
    /// removed).
    pub(crate) fn check_writable(&self) -> Result<()> {
        if let Some(d) = &self.local {
            local_root(d, Access::Write)?;
            // Directories made only for the probe are removed after it: a dataset that
            // does not exist yet still does not until its first run.
            let mut made = Vec::new();
            let mut at = d.clone();
            while !at.as_os_str().is_empty() && !at.exists() {
                made.push(at.clone());
                if !at.pop() {
                    break;
                }
            }
            std::fs::create_dir_all(d).map_err(|e| {
                io_fault(
                    Access::Write,
                    &format!("cannot create the dataset directory {}", d.display()),
                    &e,
                )
            })?;
            let r = self.probe();
            for m in &made {
                let _ = std::fs::remove_dir(m);
            }
            return r;
        }
        self.probe()
    }

    /// Write and remove a probe object at the root.
    fn probe(&self) -> Result<()> {
        let probe = format!(
            ".stepgate-probe-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        match self.put(&probe, Vec::new(), false) {
            Ok(_) => self.delete(&probe),
            Err(e) => Err(Error::new(
                e.kind,
                format!(
                    "{} cannot be written, so the export would fail after the work: {}",
                    self.name, e.message
                ),
            )),
        }
    }

    /// Whether anything is stored under the root. A local root that is a file, a symlink
    /// loop or cannot be looked at is an error (the same for every command that reads).
    pub fn exists(&self) -> Result<bool> {
        if let Some(d) = &self.local {
            return local_root(d, Access::Read);
        }
        let mut s = self.inner.list(Some(&self.root));
        match self.rt.block_on(s.next()) {
            None => Ok(false),
            Some(Ok(_)) => Ok(true),
            Some(Err(e)) => Err(self.fail("list", "", &e)),
        }
    }

    fn count(&self, rels: &[&str]) {
        let Ok(mut r) = self.reads.lock() else { return };
        for rel in rels {
            *r.entry(rel.split('/').next().unwrap_or("").to_owned())
                .or_default() += 1;
        }
    }

    /// Read one object; `None` when it is not there.
    pub fn get(&self, rel: &str) -> Result<Option<Vec<u8>>> {
        self.local_guard(rel)?;
        self.count(&[rel]);
        let k = self.key(rel);
        let r = self.rt.block_on(async {
            let g = self.inner.get(&k).await?;
            g.bytes().await
        });
        match r {
            Ok(b) => Ok(Some(b.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.fail("read", rel, &e)),
        }
    }

    /// Read many objects, `PARALLEL` requests at a time, in the order given.
    pub fn get_many(&self, rels: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        for r in rels {
            self.local_guard(r)?;
        }
        self.count(&rels.iter().map(String::as_str).collect::<Vec<_>>());
        let keys: Vec<Key> = rels.iter().map(|r| self.key(r)).collect();
        let inner = &self.inner;
        let out: Vec<std::result::Result<Option<Vec<u8>>, object_store::Error>> = self.rt.block_on(
            futures_util::stream::iter(keys.iter().map(|k| async move {
                match inner.get(k).await {
                    Ok(g) => g.bytes().await.map(|b| Some(b.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            }))
            .buffered(PARALLEL)
            .collect(),
        );
        out.into_iter()
            .zip(rels)
            .map(|(r, rel)| r.map_err(|e| self.fail("read", rel, &e)))
            .collect()
    }

    /// A local object that is not a regular file (a FIFO would block the read forever, a
    /// device never ends) is refused before it is opened.
    fn local_guard(&self, rel: &str) -> Result<()> {
        if let Some(d) = &self.local {
            let p = d.join(rel);
            if std::fs::symlink_metadata(&p).is_ok()
                && !std::fs::metadata(&p).is_ok_and(|m| m.is_file())
            {
                return Err(Error::input(format!(
                    "dataset file {} is not a regular file: move it aside and re-export that \
                     run (`stepgate export REPORT -o DATASET --replace`)",
                    p.display()
                )));
            }
        }
        Ok(())
    }

    /// Refuse a write or removal below a symbolic link inside a local dataset: the local
    /// store creates and follows parent directories, so a partition directory planted as
    /// a link (a dataset committed in a pull request's checkout) would put the export, or
    /// `vacuum`'s removals, outside the dataset. The dataset root itself may be a link:
    /// that is where the user pointed it.
    fn local_parents_guard(&self, rel: &str) -> Result<()> {
        let Some(d) = &self.local else {
            return Ok(());
        };
        let mut at = d.clone();
        let mut parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        parts.pop();
        for part in parts {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(Error::input(format!(
                        "dataset directory {} is a symbolic link: stepgate writes only inside the \
                         dataset; replace the link with a real directory",
                        at.display()
                    )))
                }
                Ok(_) => {}
                // Not there yet: the store creates it as a real directory.
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Write one object whole; `create_only` is the conditional put (If-None-Match: *, an
    /// atomic hard link on a local disk) that makes it a commit.
    pub fn put(&self, rel: &str, bytes: Vec<u8>, create_only: bool) -> Result<Put> {
        self.local_parents_guard(rel)?;
        let k = self.key(rel);
        let opts = PutOptions {
            mode: if create_only {
                PutMode::Create
            } else {
                PutMode::Overwrite
            },
            ..PutOptions::default()
        };
        let r = self
            .rt
            .block_on(self.inner.put_opts(&k, PutPayload::from(bytes), opts));
        match r {
            Ok(_) => Ok(Put::Written),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(Put::AlreadyExists),
            Err(e) => Err(self.fail("write", rel, &e)),
        }
    }

    /// Remove one object (one that is already gone is fine).
    pub(crate) fn delete(&self, rel: &str) -> Result<()> {
        self.local_parents_guard(rel)?;
        let k = self.key(rel);
        match self.rt.block_on(self.inner.delete(&k)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.fail("delete", rel, &e)),
        }
    }

    /// Every object under `prefix` (recursive, every page), keys relative to the root.
    pub fn list(&self, prefix: &str) -> Result<Vec<Obj>> {
        let p = self.key(prefix);
        let r: std::result::Result<Vec<_>, _> =
            self.rt.block_on(self.inner.list(Some(&p)).try_collect());
        match r {
            Ok(v) => Ok(v
                .into_iter()
                .filter_map(|m| {
                    Some(Obj {
                        key: self.rel(&m.location)?,
                        size: m.size,
                        modified_ns: m.last_modified.timestamp_nanos_opt().unwrap_or(0),
                    })
                })
                .collect()),
            Err(object_store::Error::NotFound { .. }) => Ok(Vec::new()),
            Err(e) => Err(self.fail("list", prefix, &e)),
        }
    }

    /// The names of the "directories" right under `prefix` (common prefixes).
    pub(crate) fn list_dirs(&self, prefix: &str) -> Result<Vec<String>> {
        let p = self.key(prefix);
        match self.rt.block_on(self.inner.list_with_delimiter(Some(&p))) {
            Ok(l) => Ok(l
                .common_prefixes
                .iter()
                .filter_map(|k| k.filename().map(str::to_owned))
                .collect()),
            Err(object_store::Error::NotFound { .. }) => Ok(Vec::new()),
            Err(e) => Err(self.fail("list", prefix, &e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_paths_or_urls_and_unknown_schemes_are_named() {
        assert_eq!(
            Location::parse(Path::new("history/")).unwrap(),
            Location::Local(PathBuf::from("history/"))
        );
        assert_eq!(
            Location::parse(Path::new("file:///tmp/h")).unwrap(),
            Location::Local(PathBuf::from("/tmp/h"))
        );
        assert!(matches!(
            Location::parse(Path::new("s3://b/p")).unwrap(),
            Location::Remote { scheme, .. } if scheme == "s3"
        ));
        let e = Location::parse(Path::new("hdfs://nn/x")).unwrap_err();
        assert!(e.message.contains("`hdfs://`"), "{}", e.message);
        // A colon without `//` is a local name.
        assert!(matches!(
            Location::parse(Path::new("a:b")).unwrap(),
            Location::Local(_)
        ));
    }
}
