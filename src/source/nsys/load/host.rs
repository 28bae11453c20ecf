//! Host API calls (CUDA runtime and driver) and NVTX ranges (the NVTX table in rowid
//! slices, see [`super::split`]).

use rusqlite::types::ValueRef;

use super::super::queries;
use super::super::schema::Schema;
use super::super::strings::{LocalNames, StringTable};
use super::open::{sql_error, Db};
use super::{cursor_rows, gid_pid, gid_tid, id_or_missing, int, times, TICK};
use crate::exit::Result;
use crate::source::prefilter::RangeFilter;
use crate::source::progress::Progress;
use crate::trace::{CallApi, CallRow, CallsBuilder, RangeKind, RangeRow, RangesBuilder};
use crate::wire::trace::{NvtxDomain, TraceMeta};

/// `eventType` of a named domain's create row (docs/nsys-format.md §4).
const DOMAIN_CREATE: i64 = 75;

/// One NVTX slice's result: its ranges, the named domains it met (create rows), and how
/// many start/end ranges it left out because another thread ended them.
#[derive(Default)]
pub(super) struct RangesPart {
    pub(super) b: RangesBuilder,
    pub(super) domains: Vec<NvtxDomain>,
    pub(super) ended_elsewhere: u64,
}

impl RangesPart {
    pub(super) fn append(&mut self, other: &mut Self) {
        self.b.append(&mut other.b);
        self.domains.append(&mut other.domains);
        self.ended_elsewhere += other.ended_elsewhere;
    }
}

pub(super) fn load_calls(
    db: &Db,
    schema: &Schema,
    table: &StringTable,
    rows: Option<(i64, i64)>,
    progress: &Progress,
) -> Result<(CallsBuilder, Vec<String>, u64)> {
    let path = db.shown.as_path();
    let conn = db.open()?;
    let mut names = LocalNames::new(table);
    let mut b = CallsBuilder::default();
    let mut n = 0u64;
    let mut n_bad = 0u64;
    let err = |e| sql_error(path, "runtime", e);
    if let Some(mut r) = cursor_rows(&conn, schema, &queries::RUNTIME, path, rows)? {
        while r.next().map_err(err)? {
            let r = &r;
            let rd = |i| int(r, i).map_err(err);
            let Some((start_ns, end_ns)) = times(r).map_err(err)? else {
                n_bad += 1;
                continue;
            };
            let name_id = names.id(rd(5)?.unwrap_or(-1));
            let gtid = rd(3)?;
            b.push(CallRow {
                pid: gtid.map(gid_pid).unwrap_or(-1),
                tid: gtid.map(gid_tid).unwrap_or(-1),
                start_ns,
                end_ns,
                name_id,
                correlation_id: id_or_missing(rd(4)?),
                api: if rd(2)? == Some(1) {
                    CallApi::Driver
                } else {
                    CallApi::Runtime
                },
            });
            n += 1;
            if n.is_multiple_of(TICK) {
                progress.inc(TICK);
            }
        }
    }
    progress.inc(n % TICK);
    Ok((b, names.finish(), n_bad))
}

pub(super) fn load_ranges(
    db: &Db,
    schema: &Schema,
    table: &StringTable,
    filter: Option<&regex::Regex>,
    in_domains: bool,
    rows: Option<(i64, i64)>,
    progress: &Progress,
) -> Result<(RangesPart, Vec<String>, u64)> {
    let path = db.shown.as_path();
    let conn = db.open()?;
    let mut names = LocalNames::new(table);
    let mut part = RangesPart::default();
    // Filter verdict once per distinct StringIds name (0 unknown, 1 keep, 2 drop), by its
    // position in the table; slot 0 is an id missing from StringIds (filtered as "": its
    // name is a placeholder).
    let mut keep: Vec<u8> = vec![0; table.len() + 1];
    let mut n = 0u64;
    let mut n_bad = 0u64;
    let err = |e| sql_error(path, "nvtx", e);
    // A clone per reader thread: a clone gets its own match-cache pool, while threads
    // sharing one regex take the pool's slow, locked path on every match.
    let filter = filter.cloned().map(RangeFilter::new);
    let filter = filter.as_ref();
    if let Some(mut r) = cursor_rows(&conn, schema, &queries::NVTX, path, rows)? {
        while r.next().map_err(err)? {
            let r = &r;
            n += 1;
            if n.is_multiple_of(TICK) {
                progress.inc(TICK);
            }
            let rd = |i| int(r, i).map_err(err);
            let event = rd(2)?;
            if event == Some(DOMAIN_CREATE) {
                let name = match r.cell(4).map_err(err)? {
                    ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    _ => table
                        .value(rd(5)?.unwrap_or(-1))
                        .map_or_else(String::new, |(_, s)| s.to_owned()),
                };
                if let (Some(g), Some(id), false) = (rd(3)?, rd(6)?, name.is_empty()) {
                    part.domains.push(NvtxDomain {
                        pid: gid_pid(g),
                        id,
                        name,
                    });
                }
                continue;
            }
            // A range in a named domain may be selected by `Domain:Name` (`--steps
            // REGEX`, `in_domains`), which only discovery can test once the domain's
            // create row is read: the bare-name filter does not drop it here. (Without
            // `in_domains` the domain is read only for the rows the filter keeps.)
            let domain = if in_domains { rd(6)?.unwrap_or(-1) } else { -1 };
            let filter = filter.filter(|_| !(in_domains && domain > 0));
            // The name first (COALESCE(text, StringIds[textId]), docs/nsys-format.md §4):
            // a row the filter drops is read no further — most rows of an annotated
            // capture — so its times are never read, nor counted as damaged.
            let name = match r.cell(4).map_err(err)? {
                // Inline texts are mostly distinct (`aten::mul, op_id = 321664`): test
                // the filter on the cell itself and intern only what is kept, so dropped
                // rows cost one match and never grow a name table.
                ValueRef::Text(t) => {
                    if filter.is_some_and(|f| !f.matches_text(t)) {
                        continue;
                    }
                    Name::Text(t)
                }
                // StringIds names repeat: one verdict per distinct id.
                _ => {
                    let id = rd(5)?.unwrap_or(-1);
                    let found = table.value(id);
                    let k = found.map_or(0, |(p, _)| p as usize + 1);
                    // Without a filter (none given, or a named domain's row kept for
                    // discovery) nothing is tested, and no verdict is cached.
                    if let Some(f) = filter {
                        if keep[k] == 0 {
                            let s = found.map_or("", |(_, s)| s);
                            keep[k] = if f.is_match(s) { 1 } else { 2 };
                        }
                        if keep[k] != 1 {
                            continue;
                        }
                    }
                    Name::Id(id)
                }
            };
            // A start/end range another thread ended brackets no work of the thread it
            // started on: left out, as nsys' own projection leaves it out (docs/nvtx.md).
            let gtid = rd(3)?;
            if rd(7)?.is_some_and(|e| Some(e) != gtid) {
                part.ended_elsewhere += 1;
                continue;
            }
            let domain = if in_domains {
                domain
            } else {
                rd(6)?.unwrap_or(-1)
            };
            let Some((start_ns, end_ns)) = times(r).map_err(err)? else {
                n_bad += 1;
                continue;
            };
            let name_id = match name {
                Name::Text(t) => names.text_bytes(t),
                Name::Id(id) => names.id(id),
            };
            let kind = match event {
                Some(60 | 71) => RangeKind::HostStartEnd,
                _ => RangeKind::HostPushPop,
            };
            part.b.push(RangeRow {
                pid: gtid.map(gid_pid).unwrap_or(-1),
                tid: gtid.map(gid_tid).unwrap_or(-1),
                start_ns,
                end_ns,
                name_id,
                domain_id: domain,
                kind,
            });
        }
    }
    progress.inc(n % TICK);
    Ok((part, names.finish(), n_bad))
}

/// The NVTX part's named domains into the metadata (one per process and id, the first
/// create row's name, as nsys' projection takes it), and a warning counting the start/end
/// ranges left out because another thread ended them.
pub(super) fn domains_into(part: RangesPart, meta: &mut TraceMeta) -> RangesBuilder {
    let mut domains = part.domains;
    // Slices are in rowid order, so the stable sort keeps the first create row first.
    domains.sort_by_key(|d| (d.pid, d.id));
    domains.dedup_by_key(|d| (d.pid, d.id));
    meta.nvtx_domains = domains;
    if part.ended_elsewhere > 0 {
        meta.warnings.push(format!(
            "{} NVTX start/end range(s) were ended on another thread than the one that \
             started them: left out, as `nsys stats -r nvtxgpuproj` leaves them out (a \
             range must bracket its own thread's launches; docs/nvtx.md)",
            part.ended_elsewhere
        ));
    }
    part.b
}

/// An NVTX row's name as the filter kept it: its inline text, or its StringIds id.
enum Name<'r> {
    Text(&'r [u8]),
    Id(i64),
}
