//! The nsys export layouts the writer can produce: each one's DDL (copied from real
//! exports), its version strings and metadata table, and the event tables written lazily.

const DDL_2026_2: &str = include_str!("../ddl_2026_2.sql");
const DDL_2026_2_EXTRA: &str = include_str!("../ddl_2026_2_extra.sql");
const DDL_2022_2: &str = include_str!("../ddl_2022_2.sql");
const DDL_2020_5: &str = include_str!("../ddl_2020_5.sql");
const DDL_GPU_METRICS: &str = include_str!("../ddl_gpu_metrics.sql");

/// Which nsys export layout to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// nsys 2026.2.1 / schema 3.25.0: META_DATA_EXPORT, META_DATA_CAPTURE, ENUM tables.
    Nsys2026_2,
    /// nsys 2022.2.1 / schema 2.9.1: EXPORT_META_DATA, no ENUM tables, no capture metadata.
    Nsys2022_2,
    /// nsys 2022.1.3 (same tables as 2022.2).
    Nsys2022_1,
    /// nsys 2020.5.1: TARGET_INFO_GPU.deviceId, no mangledName, no export-metadata table.
    Nsys2020_5,
}

impl Layout {
    pub(super) fn ddl(self) -> Vec<&'static str> {
        match self {
            Layout::Nsys2026_2 => vec![DDL_2026_2, DDL_2026_2_EXTRA, DDL_GPU_METRICS],
            Layout::Nsys2022_2 | Layout::Nsys2022_1 => vec![DDL_2022_2, DDL_GPU_METRICS],
            Layout::Nsys2020_5 => vec![DDL_2020_5],
        }
    }

    /// (EXPORT_PRODUCT_VERSION, EXPORT_SCHEMA_VERSION) the layout's nsys wrote.
    pub fn versions(self) -> (&'static str, &'static str) {
        match self {
            Layout::Nsys2026_2 => ("2026.2.1.210", "3.25.0"),
            Layout::Nsys2022_2 => ("2022.2.1.31", "2.9.1"),
            Layout::Nsys2022_1 => ("2022.1.3.3", "2.9.1"),
            Layout::Nsys2020_5 => ("2020.5.1.85", ""),
        }
    }

    /// The export-metadata table, if this layout has one.
    pub(crate) fn export_meta_table(self) -> Option<&'static str> {
        match self {
            Layout::Nsys2026_2 => Some("META_DATA_EXPORT"),
            Layout::Nsys2022_2 | Layout::Nsys2022_1 => Some("EXPORT_META_DATA"),
            Layout::Nsys2020_5 => None,
        }
    }
}

/// Tables written through prepared inserts, created lazily.
#[derive(Debug, Clone, Copy)]
pub(super) enum T {
    Kernel,
    Runtime,
    Nvtx,
    Memcpy,
    Memset,
    GraphTrace,
    GraphNode,
    Gpu,
    GpuMetricNames,
    GpuMetrics,
}

pub(super) const TABLE_NAMES: [&str; 10] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "CUDA_GRAPH_NODE_EVENTS",
    "TARGET_INFO_GPU",
    "TARGET_INFO_GPU_METRICS",
    "GPU_METRICS",
];

/// Split a DDL file into (table name, statement) pairs and INSERT statements.
pub(super) fn parse_ddl(text: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut tables = Vec::new();
    let mut inserts = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if line.trim() == ";" {
            let stmt = std::mem::take(&mut cur);
            let body: String = stmt
                .lines()
                .skip_while(|l| l.trim().is_empty() || l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n");
            if let Some(rest) = body.strip_prefix("CREATE TABLE ") {
                let name = rest
                    .split(|c: char| c.is_whitespace() || c == '(')
                    .next()
                    .unwrap_or("")
                    .to_owned();
                tables.push((name, body));
            } else if body.starts_with("INSERT") {
                inserts.push(body);
            }
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    (tables, inserts)
}
