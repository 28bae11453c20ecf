//! A forward-only SQLite cursor for the loaders' big row loops (kernels, runtime, NVTX:
//! millions of rows of 6–15 cells), reading each cell with one `sqlite3_column_value`.
//!
//! Why not rusqlite's `Row::get_ref`: per cell it asks the column count, the column type
//! and then the value, each a separate column lookup inside SQLite; `perf` put that at
//! about a quarter of the CPU of `steps` on a 4M-kernel report (rusqlite `value_ref` 9%,
//! `sqlite3_column_type` / `_int64` / `_count` and their mutex calls 16%). One lookup per
//! cell gives the same [`ValueRef`] (SQLite: "Result Values From A Query",
//! <https://sqlite.org/c3ref/column_blob.html>, and `sqlite3_value_*` on the returned
//! value, <https://sqlite.org/c3ref/value_blob.html>).

use std::marker::PhantomData;
use std::os::raw::c_int;
use std::ptr::{self, NonNull};

use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection};

/// A prepared statement stepped row by row; the cells of the current row are read with
/// [`Cursor::cell`]. Borrows the connection, which therefore outlives it.
pub(super) struct Cursor<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    cols: usize,
    /// Whether the last step produced a row (cells exist only then).
    on_row: bool,
    /// Stepped past the last row: stepping again would restart the query (SQLite resets a
    /// finished statement on its next step).
    done: bool,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> Cursor<'c> {
    /// Prepare one statement (`sql` holds exactly one).
    pub fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Cursor<'c>> {
        // SAFETY: the handle is the open connection's, and `conn` is borrowed for as long
        // as the cursor lives, so the statement is finalized before the connection closes.
        let db = unsafe { conn.handle() };
        let len = c_int::try_from(sql.len()).map_err(|_| failure(ffi::SQLITE_TOOBIG, None))?;
        let mut stmt = ptr::null_mut();
        // SAFETY: `sql` is valid for `len` bytes (no NUL needed when the length is given);
        // `stmt` receives a statement owned by this cursor.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(db, sql.as_ptr().cast(), len, &mut stmt, ptr::null_mut())
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: a failed prepare leaves `stmt` NULL and the message on `db`.
            return Err(unsafe { error(db, rc) });
        }
        let stmt = NonNull::new(stmt)
            .ok_or_else(|| failure(ffi::SQLITE_MISUSE, Some("empty statement".to_owned())))?;
        // SAFETY: a valid statement.
        let cols = unsafe { ffi::sqlite3_column_count(stmt.as_ptr()) };
        Ok(Cursor {
            stmt,
            db,
            cols: usize::try_from(cols).unwrap_or(0),
            on_row: false,
            done: false,
            _conn: PhantomData,
        })
    }

    /// Step to the next row: `false` at the end.
    pub fn next(&mut self) -> rusqlite::Result<bool> {
        if self.done {
            return Ok(false);
        }
        // SAFETY: a valid statement; stepping invalidates the cells read before, which the
        // borrow checker enforces (`cell` borrows `self`, this takes it mutably).
        let rc = unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) };
        self.on_row = rc == ffi::SQLITE_ROW;
        self.done = !self.on_row;
        match rc {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            // SAFETY: the step's error is the connection's current one.
            rc => Err(unsafe { error(self.db, rc) }),
        }
    }

    /// Cell `i` of the current row (as rusqlite's `Row::get_ref` would give it).
    #[inline]
    pub fn cell(&self, i: usize) -> rusqlite::Result<ValueRef<'_>> {
        if i >= self.cols || !self.on_row {
            return Err(rusqlite::Error::InvalidColumnIndex(i));
        }
        let stmt = self.stmt.as_ptr();
        // SAFETY: `i` is a column of the statement and a row is current; the value and
        // any bytes it points to stay valid until the next step or finalize, both of
        // which need `&mut self` while the returned borrow of `self` lives.
        unsafe {
            let v = ffi::sqlite3_column_value(stmt, i as c_int);
            Ok(match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(v)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(v)),
                ffi::SQLITE_TEXT => {
                    // Text first, then its length (the order SQLite documents).
                    let p = ffi::sqlite3_value_text(v);
                    let n = ffi::sqlite3_value_bytes(v);
                    ValueRef::Text(bytes(p, n))
                }
                ffi::SQLITE_BLOB => {
                    let p = ffi::sqlite3_value_blob(v);
                    let n = ffi::sqlite3_value_bytes(v);
                    ValueRef::Blob(bytes(p.cast(), n))
                }
                _ => ValueRef::Null,
            })
        }
    }
}

/// The bytes SQLite returned (NULL for an empty text or blob, or out of memory: empty).
///
/// # Safety
/// `p` is NULL or valid for `n` bytes for the lifetime the caller gives the slice.
unsafe fn bytes<'a>(p: *const u8, n: c_int) -> &'a [u8] {
    match usize::try_from(n) {
        Ok(n) if !p.is_null() && n > 0 => std::slice::from_raw_parts(p, n),
        _ => &[],
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: the statement is this cursor's and finalized once.
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

fn failure(code: c_int, msg: Option<String>) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), msg)
}

/// The error for result code `rc`, with the connection's message when it is about `rc`
/// (as rusqlite words its own errors, so `sql_error` reads them the same).
///
/// # Safety
/// `db` is an open connection.
unsafe fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    let msg = if ffi::sqlite3_errcode(db) == rc {
        ffi::sqlite3_errmsg(db)
    } else {
        ffi::sqlite3_errstr(rc)
    };
    let msg =
        (!msg.is_null()).then(|| std::ffi::CStr::from_ptr(msg).to_string_lossy().into_owned());
    failure(rc, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every storage class reads as `Row::get_ref` reads it.
    #[test]
    fn cells_read_as_rusqlite_reads_them() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t(a, b, c, d, e);
             INSERT INTO t VALUES (1, 2.5, 'x\u{e9}', x'00ff', NULL);
             INSERT INTO t VALUES (-9007199254740993, 1e300, '', x'', 7);",
        )
        .unwrap();
        let sql = "SELECT a, b, c, d, e FROM t ORDER BY rowid";
        let mut want: Vec<Vec<rusqlite::types::Value>> = Vec::new();
        let mut st = conn.prepare(sql).unwrap();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            want.push((0..5).map(|i| r.get_ref(i).unwrap().into()).collect());
        }
        let mut got: Vec<Vec<rusqlite::types::Value>> = Vec::new();
        let mut c = Cursor::prepare(&conn, sql).unwrap();
        assert!(c.cell(0).is_err(), "no row before the first step");
        while c.next().unwrap() {
            got.push((0..5).map(|i| c.cell(i).unwrap().into()).collect());
            assert!(c.cell(5).is_err());
        }
        assert_eq!(got, want);
        assert_eq!(got.len(), 2);
        assert!(!c.next().unwrap(), "stays at the end");
    }

    #[test]
    fn errors_carry_sqlite_messages() {
        let conn = Connection::open_in_memory().unwrap();
        let e = Cursor::prepare(&conn, "SELECT nope FROM missing")
            .err()
            .expect("no such table");
        assert!(e.to_string().contains("no such table"), "{e}");
        let e = Cursor::prepare(&conn, "   ").err().expect("empty");
        assert!(e.to_string().contains("empty statement"), "{e}");
    }
}
