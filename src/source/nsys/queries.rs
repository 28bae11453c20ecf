//! The one place that embeds `queries/*.sql`, and the renderer that fits each query to the
//! tables and columns a given export actually has.
//!
//! Placeholders: `{{TABLE}}` is the first of the query's candidate tables present in the
//! export; `{{a|b}}` is the first of columns `a`, `b` that table has, or `NULL` when it has
//! none (columns come and go across nsys versions, docs/nsys-format.md §9). Every other column
//! a query names is required: preparing it fails when the column is absent. `{{ROWS}}`
//! (in the NVTX query) is `rowid BETWEEN lo AND hi` for a query that reads
//! one slice of its table, else `1`. `{{GEOMETRY}}` (kernels) is the six launch-dimension
//! columns, each fitted as above, when [`Fill::geometry`] asks for them, else nothing.
//! `{{IDS:col}}` is `(col = a OR col = b …)` over [`Fill::ids`] (`0` for none): ORs, not
//! `IN (…)`, for the reason the NVTX query gives.

use super::schema::Schema;

/// One embedded query and the table(s) it may read.
#[derive(Debug, Clone, Copy)]
pub struct Query {
    pub name: &'static str,
    /// Candidate tables, in order of preference (renamed tables list every spelling).
    pub tables: &'static [&'static str],
    pub sql: &'static str,
}

pub const KERNELS: Query = Query {
    name: "kernels",
    tables: &["CUPTI_ACTIVITY_KIND_KERNEL"],
    sql: include_str!("../../../queries/kernels.sql"),
};
pub(crate) const MEMCPY: Query = Query {
    name: "memcpy",
    tables: &["CUPTI_ACTIVITY_KIND_MEMCPY"],
    sql: include_str!("../../../queries/memcpy.sql"),
};
pub(crate) const MEMSET: Query = Query {
    name: "memset",
    tables: &["CUPTI_ACTIVITY_KIND_MEMSET"],
    sql: include_str!("../../../queries/memset.sql"),
};
pub const GRAPH_TRACE: Query = Query {
    name: "graph_trace",
    tables: &["CUPTI_ACTIVITY_KIND_GRAPH_TRACE"],
    sql: include_str!("../../../queries/graph_trace.sql"),
};
pub(crate) const RUNTIME: Query = Query {
    name: "runtime",
    tables: &["CUPTI_ACTIVITY_KIND_RUNTIME"],
    sql: include_str!("../../../queries/runtime.sql"),
};
pub const NVTX: Query = Query {
    name: "nvtx",
    // Reported as NVTX_EVENTS_V2/_V3 by users of recent nsys versions.
    tables: &["NVTX_EVENTS", "NVTX_EVENTS_V*"],
    sql: include_str!("../../../queries/nvtx.sql"),
};
pub const STRINGS: Query = Query {
    name: "strings",
    tables: &["StringIds"],
    sql: include_str!("../../../queries/strings.sql"),
};
pub(crate) const STRING_IDS_RANGE: Query = Query {
    name: "string_ids_range",
    tables: &["StringIds"],
    sql: include_str!("../../../queries/string_ids_range.sql"),
};
pub const GPUS: Query = Query {
    name: "gpus",
    tables: &["TARGET_INFO_GPU"],
    sql: include_str!("../../../queries/gpus.sql"),
};
pub(crate) const EXPORT_META: Query = Query {
    name: "export_meta",
    tables: &["META_DATA_EXPORT", "EXPORT_META_DATA"],
    sql: include_str!("../../../queries/export_meta.sql"),
};
pub(crate) const CAPTURE_META: Query = Query {
    name: "capture_meta",
    tables: &["META_DATA_CAPTURE"],
    sql: include_str!("../../../queries/capture_meta.sql"),
};
pub const PROCESSES: Query = Query {
    name: "processes",
    tables: &["PROCESSES"],
    sql: include_str!("../../../queries/processes.sql"),
};
pub(crate) const GPU_METRIC_NAMES: Query = Query {
    name: "gpu_metric_names",
    tables: &["TARGET_INFO_GPU_METRICS"],
    sql: include_str!("../../../queries/gpu_metric_names.sql"),
};
pub const GPU_METRICS: Query = Query {
    name: "gpu_metrics",
    tables: &["GPU_METRICS"],
    sql: include_str!("../../../queries/gpu_metrics.sql"),
};
pub(crate) const MEMCPY_KINDS: Query = Query {
    name: "memcpy_kinds",
    tables: &["ENUM_CUDA_MEMCPY_OPER"],
    sql: include_str!("../../../queries/memcpy_kinds.sql"),
};

/// Every embedded query (the test that runs each against every fixture iterates this).
pub const ALL: &[Query] = &[
    KERNELS,
    MEMCPY,
    MEMSET,
    GRAPH_TRACE,
    RUNTIME,
    NVTX,
    STRINGS,
    STRING_IDS_RANGE,
    GPUS,
    EXPORT_META,
    CAPTURE_META,
    PROCESSES,
    GPU_METRIC_NAMES,
    GPU_METRICS,
    MEMCPY_KINDS,
];

/// The kernel table's launch-dimension columns, in `{{GEOMETRY}}` order.
const GEOMETRY_COLUMNS: [&str; 6] = ["gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"];

/// What a rendering fills in besides the table and columns.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fill<'a> {
    /// Read only rowids `lo..=hi` (`{{ROWS}}`).
    pub rows: Option<(i64, i64)>,
    /// Select the launch geometry too (`{{GEOMETRY}}`).
    pub geometry: bool,
    /// The ids `{{IDS:col}}` matches.
    pub ids: &'a [i64],
}

impl Query {
    /// The table this query reads in `schema`, if the export has one of its tables.
    pub fn table<'s>(&self, schema: &'s Schema) -> Option<&'s str> {
        self.tables.iter().find_map(|t| schema.table_name(t))
    }

    /// The SQL fitted to `schema`, or `None` when none of its tables exists.
    pub fn render(&self, schema: &Schema) -> Option<String> {
        self.render_with(schema, &Fill::default())
    }

    /// As [`Query::render`], reading only rowids `lo..=hi` when `rows` is given.
    #[cfg(test)]
    pub(crate) fn render_rows(&self, schema: &Schema, rows: Option<(i64, i64)>) -> Option<String> {
        self.render_with(
            schema,
            &Fill {
                rows,
                ..Fill::default()
            },
        )
    }

    /// As [`Query::render`], with the placeholders `fill` decides.
    pub fn render_with(&self, schema: &Schema, fill: &Fill<'_>) -> Option<String> {
        let table = self.table(schema)?;
        let mut out = String::with_capacity(self.sql.len());
        let mut rest = self.sql;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                out.push_str(&rest[open..]);
                rest = "";
                break;
            };
            let key = &after[..close];
            if key == "TABLE" {
                out.push_str(table);
            } else if key == "ROWS" {
                match fill.rows {
                    Some((lo, hi)) => out.push_str(&format!("rowid BETWEEN {lo} AND {hi}")),
                    None => out.push('1'),
                }
            } else if key == "GEOMETRY" {
                if fill.geometry {
                    for c in GEOMETRY_COLUMNS {
                        out.push_str(", ");
                        out.push_str(fit(schema, table, c));
                    }
                }
            } else if let Some(col) = key.strip_prefix("IDS:") {
                if fill.ids.is_empty() {
                    out.push('0');
                } else {
                    let terms: Vec<String> =
                        fill.ids.iter().map(|id| format!("{col} = {id}")).collect();
                    out.push_str(&format!("({})", terms.join(" OR ")));
                }
            } else {
                out.push_str(fit(schema, table, key));
            }
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        Some(out)
    }
}

/// The first of a placeholder's `a|b` columns that `table` has, else `NULL`.
fn fit<'k>(schema: &Schema, table: &str, key: &'k str) -> &'k str {
    key.split('|')
        .find(|c| schema.has_column(table, c))
        .unwrap_or("NULL")
}
