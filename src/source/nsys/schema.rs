//! What an export contains: its tables and their columns, probed from `sqlite_master` and
//! `pragma_table_info` before any query runs (tables are created lazily and columns changed
//! across nsys versions, docs/nsys-format.md §0 and §9), and the export's schema version.

use std::collections::HashMap;

use rusqlite::Connection;

/// Tables and columns of one export. Names are matched case-insensitively (SQLite does).
#[derive(Debug, Default, Clone)]
pub struct Schema {
    /// lower-case table name → (name as stored, lower-case column names).
    tables: HashMap<String, (String, Vec<String>)>,
}

/// Newest export schema this loader was tested on (nsys 2026.2.1, docs/nsys-format.md F26b).
pub(crate) const NEWEST_TESTED_SCHEMA: (u32, u32) = (3, 25);

impl Schema {
    /// Probe every table of the database.
    pub fn probe(conn: &Connection) -> rusqlite::Result<Schema> {
        let mut names = Vec::new();
        {
            let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                names.push(r.get::<_, String>(0)?);
            }
        }
        let mut tables = HashMap::with_capacity(names.len());
        let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        for name in names {
            let mut cols = Vec::new();
            let mut rows = st.query([&name])?;
            while let Some(r) = rows.next()? {
                cols.push(r.get::<_, String>(0)?.to_ascii_lowercase());
            }
            tables.insert(name.to_ascii_lowercase(), (name, cols));
        }
        Ok(Schema { tables })
    }

    /// The stored spelling of `table`, when the export has it. A name ending in `*` is a
    /// pattern (`NVTX_EVENTS_V*`): of the tables it matches, the one with the highest
    /// number after the prefix (recent nsys versions version some tables' names).
    pub(crate) fn table_name(&self, table: &str) -> Option<&str> {
        let key = table.to_ascii_lowercase();
        let Some(prefix) = key.strip_suffix('*') else {
            return self.tables.get(&key).map(|(n, _)| n.as_str());
        };
        self.tables
            .iter()
            .filter_map(|(k, (n, _))| {
                let v: u32 = k.strip_prefix(prefix)?.parse().ok()?;
                Some((v, n.as_str()))
            })
            .max()
            .map(|(_, n)| n)
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.table_name(table).is_some()
    }

    pub(crate) fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables
            .get(&table.to_ascii_lowercase())
            .is_some_and(|(_, cols)| cols.iter().any(|c| c.eq_ignore_ascii_case(column)))
    }

    /// Whether this looks like an nsys export at all: every nsys export since 2020 has
    /// `StringIds` (docs/nsys-format.md §1) and at least one nsys event table.
    pub(crate) fn is_nsys_export(&self) -> bool {
        self.has_table("StringIds")
            && self.tables.keys().any(|t| {
                t.starts_with("cupti_activity_kind_")
                    || t.starts_with("nvtx_events")
                    || t.starts_with("target_info_")
                    || t == "processes"
                    || t.starts_with("meta_data_")
                    || t == "export_meta_data"
            })
    }
}

/// Parse `major.minor[.micro]` of an `EXPORT_SCHEMA_VERSION`.
pub(crate) fn parse_schema_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// The one warning line for a schema newer than any tested, or `None`.
pub(crate) fn newer_schema_warning(version: &str) -> Option<String> {
    let v = parse_schema_version(version)?;
    (v > NEWEST_TESTED_SCHEMA).then(|| {
        format!(
            "nsys export schema {version} is newer than the newest tested ({}.{}.x, nsys 2026.2): \
             reading it on a best-effort basis",
            NEWEST_TESTED_SCHEMA.0, NEWEST_TESTED_SCHEMA.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_versions() {
        assert_eq!(parse_schema_version("3.25.0"), Some((3, 25)));
        assert_eq!(parse_schema_version("2.9.1"), Some((2, 9)));
        assert!(newer_schema_warning("3.25.7").is_none());
        assert!(newer_schema_warning("2.9.1").is_none());
        assert!(newer_schema_warning("3.26.0").is_some());
        assert!(newer_schema_warning("4.0").is_some());
        assert!(newer_schema_warning("garbage").is_none());
    }
}
