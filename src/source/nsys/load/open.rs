//! Opening an export without ever writing beside it (read-only, `immutable=1`, or a
//! private copy of a WAL database), and the one-line messages for SQLite failures
//! (locked, corrupt, missing tables).

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::exit::{Error, Result};

/// Open an export read-only: never write into a user's report.
pub fn open(path: &Path) -> Result<Connection> {
    Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| sql_error(path, "opening", e))
}

/// How one export is opened so that nothing is ever written beside it.
///
/// A WAL-mode database (header bytes 18 and 19 = 2, sqlite.org/fileformat2.html §1.3)
/// makes even a read-only connection create `-wal` and `-shm` files next to it, and fails
/// on a read-only mount. Without a `-wal` file the database file holds every committed
/// page, so it is opened `immutable=1` (sqlite.org/uri.html: no locks, no side files).
/// With a `-wal` file its pages belong to the database too: the database and its `-wal`
/// are copied to a private temporary directory and read there (SQLite rebuilds the
/// `-shm` index from the `-wal` on first open). A rollback-journal database is opened
/// plainly read-only, which writes nothing and respects another writer's lock.
pub struct Db {
    /// What the user passed (for messages).
    pub shown: std::path::PathBuf,
    /// The file SQLite opens.
    file: std::path::PathBuf,
    immutable: bool,
    _tmp: Option<tempfile::TempDir>,
    /// Said to the user when the database was read from a copy.
    pub note: Option<String>,
}

impl Db {
    /// Decide how to open `path` (an SQLite file, checked by the caller).
    pub fn new(path: &Path) -> Result<Db> {
        let plain = |file: &Path| Db {
            shown: path.to_path_buf(),
            file: file.to_path_buf(),
            immutable: false,
            _tmp: None,
            note: None,
        };
        if !is_wal(path) {
            return Ok(plain(path));
        }
        let wal = side_file(path, "-wal");
        if !wal.metadata().map(|m| m.len() > 0).unwrap_or(false) {
            return Ok(Db {
                immutable: true,
                ..plain(path)
            });
        }
        let env = |what: &str, e: std::io::Error| {
            Error::environment(format!(
                "{}: the export is in WAL mode with a pending -wal file and could not be \
                 copied to a temporary directory to read it untouched ({what}: {e}); free \
                 space in $TMPDIR or run `sqlite3 {} 'PRAGMA wal_checkpoint'` on a copy",
                path.display(),
                path.display()
            ))
        };
        let tmp = tempfile::Builder::new()
            .prefix(".stepgate-")
            .tempdir()
            .map_err(|e| env("creating the directory", e))?;
        let copy = tmp.path().join("export.sqlite");
        std::fs::copy(path, &copy).map_err(|e| env("copying the database", e))?;
        std::fs::copy(&wal, side_file(&copy, "-wal")).map_err(|e| env("copying the -wal", e))?;
        Ok(Db {
            note: Some(format!(
                "the export is an SQLite database in WAL mode with a pending {} file: read \
                 from a private copy of both in a temporary directory, so nothing was \
                 written beside the report",
                wal.file_name().unwrap_or_default().to_string_lossy()
            )),
            _tmp: Some(tmp),
            ..plain(&copy)
        })
    }

    /// A read-only connection (immutable where that is safe, see [`Db`]).
    pub fn open(&self) -> Result<Connection> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = if self.immutable {
            Connection::open_with_flags(
                format!("file:{}?immutable=1", uri_path(&self.file)),
                flags | OpenFlags::SQLITE_OPEN_URI,
            )
        } else if self._tmp.is_some() {
            // The private copy may need its -shm built: it is ours to write.
            Connection::open_with_flags(
                &self.file,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        } else {
            Connection::open_with_flags(&self.file, flags)
        };
        conn.map_err(|e| sql_error(&self.shown, "opening", e))
    }

    /// As [`Db::open`], reading the file's pages through a memory map rather than SQLite's
    /// page cache (`PRAGMA mmap_size`, <https://sqlite.org/mmap.html>; SQLite caps the map
    /// at its build's limit and reads the rest as usual). For a second reader whose query
    /// seeks through joins on every row: measured when the bundled SQLite was still built
    /// with `SQLITE_ENABLE_MEMORY_MANAGEMENT` (every connection's page cache in one group
    /// behind one mutex; `.cargo/config.toml` now leaves it out), two such readers spent
    /// their time waiting on it (rocpd `analyze` at 2 threads: 2.40 s through the cache,
    /// 1.47 s mapped; 2.08 s on one thread, docs/rocpd-format.md). A file truncated by
    /// another process while it is mapped raises SIGBUS, as SQLite documents; the rocpd
    /// reader, the one caller, answers it with one line and exit 2 while the mapped read
    /// runs (`source::rocpd`).
    pub(crate) fn open_mapped(&self) -> Result<Connection> {
        let conn = self.open()?;
        conn.execute_batch("PRAGMA mmap_size = 1099511627776")
            .map_err(|e| sql_error(&self.shown, "opening", e))?;
        Ok(conn)
    }
}

/// `path` + suffix (`x.sqlite` → `x.sqlite-wal`), as SQLite names its side files.
fn side_file(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    s.into()
}

/// Whether the database header says WAL mode (write and read versions both 2).
fn is_wal(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head[18] == 2
        && head[19] == 2
}

/// A path for an SQLite `file:` URI: absolute, with every byte that is not unreserved or
/// `/` percent-encoded (`?`, `#` and `%` in a file name would otherwise end the path).
fn uri_path(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for &b in abs.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One line for a SQLite failure, saying what to do about it.
pub fn sql_error(path: &Path, what: &str, e: rusqlite::Error) -> Error {
    let p = path.display();
    let corrupt = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    let locked = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    );
    let msg = e.to_string();
    if locked {
        Error::environment(format!(
            "{p}: the database is locked by another process ({what}: {msg}): wait until \
             that process (an nsys export still writing it?) finishes, or copy the file and \
             pass the copy"
        ))
    } else if corrupt {
        Error::input(format!(
            "{p}: the SQLite file is corrupt or truncated ({what}: {msg}); export the report \
             again with `nsys export --type sqlite`"
        ))
    } else if msg.contains("no such column") || msg.contains("no such table") {
        Error::input(format!(
            "{p}: this nsys export lacks what stepgate reads ({what}: {msg}); export it with \
             nsys 2020.5 to 2026.2 or report the nsys version"
        ))
    } else {
        Error::input(format!("{p}: reading the export failed ({what}: {msg})"))
    }
}

#[cfg(test)]
mod tests {
    /// The bundled SQLite is built as `.cargo/config.toml` asks (`LIBSQLITE3_FLAGS`): each
    /// connection's page cache of its own and no allocation statistics, so the loader's
    /// connections on several threads share no lock. A build that lost the setting (another
    /// build tool, a moved config) fails here rather than only running slower.
    #[test]
    fn sqlite_is_built_without_shared_cache_locks() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let mut st = conn.prepare("PRAGMA compile_options").unwrap();
        let opts: Vec<String> = st
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(opts.iter().any(|o| o == "THREADSAFE=1"), "{opts:?}");
        assert!(
            !opts.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "{opts:?}"
        );
        assert!(opts.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{opts:?}");
    }
}
