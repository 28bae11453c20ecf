//! The dataset's tables and columns (schema version 1), and the small per-run frames
//! (`runs`, `kernels`, `devices`). Per-step columns are generated from the serialized
//! `Step` (`dataset::columns`), so fields added to `Step` later become columns without a
//! change here; the core columns below always exist with a fixed type, so every run's file
//! has them even when a value is absent.

use std::collections::HashMap;

use polars::prelude::*;

use crate::exit::Result;
use crate::wire::steps::StepsReport;

/// Bump when a column changes meaning or type, or disappears (new columns do not bump it).
pub const SCHEMA_VERSION: i32 = 1;

/// The five tables, one directory each under the dataset root. `runs` is written last, so a
/// run whose `runs` row is visible has all its other files in place.
pub const TABLES: [&str; 5] = ["steps", "step_kernels", "kernels", "devices", "runs"];

/// A column's Parquet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Int,
    Float,
    Bool,
    Str,
}

/// Step columns that every `steps` file has, whatever the run held, in file order: these,
/// then any column a step metric of the table reads that they do not list ([`step_core`]).
/// Nested `Step` fields are flattened with `_` (`composition.requests` →
/// `composition_requests`).
const STEP_FIELDS: &[(&str, Ty)] = &[
    ("index", Ty::Int),
    ("series", Ty::Int),
    ("pid", Ty::Int),
    ("tid", Ty::Int),
    ("device", Ty::Int),
    ("name", Ty::Str),
    ("kind", Ty::Str),
    ("composition_engine", Ty::Str),
    ("composition_requests", Ty::Int),
    ("composition_tokens", Ty::Int),
    ("cpu_ns", Ty::Int),
    ("gpu_start_ns", Ty::Int),
    ("gpu_end_ns", Ty::Int),
    ("wall_ns", Ty::Int),
    ("period_ns", Ty::Int),
    ("idle_before_ns", Ty::Int),
    ("busy_ns", Ty::Int),
    ("gap_ns", Ty::Int),
    ("kernels", Ty::Int),
    ("ops", Ty::Int),
    ("launches", Ty::Int),
    ("launch_host_ns", Ty::Int),
    ("exposed_comm_ns", Ty::Int),
    ("attribution_floor_floor_ns", Ty::Float),
    ("attribution_floor_mbu", Ty::Float),
    ("attribution_shape", Ty::Str),
    ("mean_context", Ty::Float),
];

/// Every step column a `steps` file has whatever the run held (what `trend` and `gate
/// --history` read): [`STEP_FIELDS`], then each column a row of the metric table reads
/// (`baseline::metrics`) that they lack, so a metric added as one row is a core column
/// of its file without a second list to keep.
pub(crate) fn step_core() -> Vec<(&'static str, Ty)> {
    let mut core = STEP_FIELDS.to_vec();
    for (column, float) in crate::baseline::metrics::Metrics::builtin().columns() {
        if !core.iter().any(|(c, _)| *c == column) {
            core.push((column, if float { Ty::Float } else { Ty::Int }));
        }
    }
    core
}

/// Step columns an object may lack, which a reader takes as nulls: `exposed_comm_ns` was
/// added after the first files were written (and is a core column since);
/// `attribution_classes` exists only in runs exported with a model.
pub(crate) const NULL_WHEN_ABSENT: &[(&str, Ty)] = &[
    ("exposed_comm_ns", Ty::Int),
    ("attribution_classes", Ty::Str),
];

/// Column name of the derived mean context per request (not a `Step` field: computed from
/// the batch composition, as baselines do).
pub(crate) const MEAN_CONTEXT: &str = "mean_context";

/// The run and the export a table's rows belong to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ids<'a> {
    pub run: &'a str,
    /// Unique per export attempt: an outside reader joins every table to `runs` on
    /// (`run_id`, `export_id`), so files of an export that never committed never join.
    pub export: &'a str,
}

/// A data object (steps, kernels, …) written by a newer stepgate than this build reads is
/// refused by name: its runs row said this build could read the run, so the dataset was
/// mixed or edited, and reading columns whose meaning changed would be a silent guess.
pub(crate) fn newer_refused(name: &str, df: &DataFrame) -> Result<()> {
    let v = match df.column("schema_version")?.dtype() {
        DataType::Int32 | DataType::Int64 => df
            .column("schema_version")?
            .cast(&DataType::Int64)?
            .i64()?
            .max(),
        _ => {
            return Err(crate::exit::Error::input(format!(
                "dataset file {name}: column schema_version is not an integer: move it aside and \
                 re-export that run"
            )))
        }
    };
    match v {
        Some(v) if v > i64::from(SCHEMA_VERSION) => Err(crate::exit::Error::input(format!(
            "dataset file {name} was written by a newer stepgate (schema_version {v}; this \
             build reads up to {SCHEMA_VERSION}): upgrade stepgate to read it, or move the \
             file's run aside"
        ))),
        _ => Ok(()),
    }
}

/// `schema_version`, `run_id` and `export_id`, the columns every table starts with.
pub(crate) fn leading(ids: Ids<'_>, n: usize) -> Vec<Column> {
    let run_id = ids.run;
    vec![
        Column::new_scalar(
            "schema_version".into(),
            Scalar::new(DataType::Int32, AnyValue::Int32(SCHEMA_VERSION)),
            n,
        ),
        Column::new_scalar(
            "run_id".into(),
            Scalar::new(DataType::String, AnyValue::StringOwned(run_id.into())),
            n,
        ),
        Column::new_scalar(
            "export_id".into(),
            Scalar::new(DataType::String, AnyValue::StringOwned(ids.export.into())),
            n,
        ),
    ]
}

/// The `kernels` table: one row per (device, op name), summed over the run's steps.
pub(crate) fn kernels_frame(run_id: Ids<'_>, report: &StepsReport) -> Result<DataFrame> {
    // (device, name) → (short, category, instances, total, exclusive, steps)
    type Acc<'a> = (&'a str, &'a str, i64, i64, i64, i64);
    let mut by: HashMap<(Option<i64>, &str), Acc> = HashMap::new();
    for s in &report.steps {
        for k in &s.all_kernels {
            let e = by.entry((s.device, k.name.as_ref())).or_insert((
                &k.short_name,
                &k.category,
                0,
                0,
                0,
                0,
            ));
            e.2 += k.instances as i64;
            e.3 += k.total_ns;
            e.4 += k.exclusive_ns;
            e.5 += 1;
        }
    }
    let mut rows: Vec<_> = by.into_iter().collect();
    // Stable file contents: by device, then exclusive time (largest first), then name.
    rows.sort_by(|a, b| (a.0 .0, -a.1 .4, a.0 .1).cmp(&(b.0 .0, -b.1 .4, b.0 .1)));
    let n = rows.len();
    let mut cols = leading(run_id, n);
    cols.extend([
        Column::new(
            "device".into(),
            rows.iter().map(|r| r.0 .0).collect::<Vec<_>>(),
        ),
        Column::new(
            "name".into(),
            rows.iter().map(|r| r.0 .1).collect::<Vec<_>>(),
        ),
        Column::new(
            "short_name".into(),
            rows.iter().map(|r| r.1 .0).collect::<Vec<_>>(),
        ),
        Column::new(
            "category".into(),
            rows.iter().map(|r| r.1 .1).collect::<Vec<_>>(),
        ),
        Column::new(
            "instances".into(),
            rows.iter().map(|r| r.1 .2).collect::<Vec<_>>(),
        ),
        Column::new(
            "total_ns".into(),
            rows.iter().map(|r| r.1 .3).collect::<Vec<_>>(),
        ),
        Column::new(
            "exclusive_ns".into(),
            rows.iter().map(|r| r.1 .4).collect::<Vec<_>>(),
        ),
        Column::new(
            "steps".into(),
            rows.iter().map(|r| r.1 .5).collect::<Vec<_>>(),
        ),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// What the report says about one device.
#[derive(Debug, Clone)]
pub struct DeviceRow {
    pub id: i64,
    pub name: Option<String>,
    pub memory_bandwidth_bytes_per_s: Option<f64>,
    pub sm_count: Option<i64>,
    pub total_memory_bytes: Option<i64>,
}

/// The `devices` table: one row per device the report names or a step ran on, with the
/// step totals on it.
pub(crate) fn devices_frame(
    run_id: Ids<'_>,
    devices: &[DeviceRow],
    report: &StepsReport,
) -> Result<DataFrame> {
    let mut ids: Vec<i64> = devices.iter().map(|d| d.id).collect();
    ids.extend(report.steps.iter().filter_map(|s| s.device));
    ids.sort_unstable();
    ids.dedup();
    let info = |id: i64| devices.iter().find(|d| d.id == id);
    // (steps, with GPU work, wall, busy, gap) per device, in one pass over the steps.
    let mut acc = vec![[0i64; 5]; ids.len()];
    for s in &report.steps {
        let Some(i) = s.device.and_then(|d| ids.binary_search(&d).ok()) else {
            continue;
        };
        let a = &mut acc[i];
        a[0] += 1;
        if let Some(x) = s.wall_ns {
            a[1] += 1;
            a[2] += x;
        }
        a[3] += s.busy_ns;
        a[4] += s.gap_ns.unwrap_or(0);
    }
    let sums = |j: usize| acc.iter().map(|a| a[j]).collect::<Vec<_>>();
    let mut cols = leading(run_id, ids.len());
    cols.extend([
        Column::new("device".into(), ids.clone()),
        Column::new(
            "name".into(),
            ids.iter()
                .map(|&i| info(i).and_then(|d| d.name.clone()))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "memory_bandwidth_bytes_per_s".into(),
            ids.iter()
                .map(|&i| info(i).and_then(|d| d.memory_bandwidth_bytes_per_s))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "sm_count".into(),
            ids.iter()
                .map(|&i| info(i).and_then(|d| d.sm_count))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "total_memory_bytes".into(),
            ids.iter()
                .map(|&i| info(i).and_then(|d| d.total_memory_bytes))
                .collect::<Vec<_>>(),
        ),
        Column::new("steps".into(), sums(0)),
        Column::new("steps_with_gpu_work".into(), sums(1)),
        Column::new("step_wall_ns".into(), sums(2)),
        Column::new("step_busy_ns".into(), sums(3)),
        Column::new("step_gap_ns".into(), sums(4)),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// One `runs` row.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunMeta {
    pub run_id: String,
    pub export_id: String,
    pub exported_at_ns: i64,
    pub report_path: String,
    pub report_sha256: String,
    pub source_format: String,
    pub tool_version: Option<String>,
    pub source_schema_version: Option<String>,
    pub stepgate_version: String,
    pub gpu_name: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    /// `{"branch": "main", …}` as JSON text.
    pub labels_json: String,
    pub method: String,
    pub found_by: Option<String>,
    pub steps: i64,
    pub steps_with_gpu_work: i64,
    pub devices: i64,
}

/// The `runs` table: one row.
pub(crate) fn runs_frame(m: &RunMeta) -> Result<DataFrame> {
    let s = |name: &str, v: Option<&str>| Column::new(name.into(), [v]);
    let i = |name: &str, v: i64| Column::new(name.into(), [v]);
    let mut cols = leading(
        Ids {
            run: &m.run_id,
            export: &m.export_id,
        },
        1,
    );
    cols.extend([
        i("exported_at_ns", m.exported_at_ns),
        s("report_path", Some(&m.report_path)),
        s("report_sha256", Some(&m.report_sha256)),
        s("source_format", Some(&m.source_format)),
        s("tool_version", m.tool_version.as_deref()),
        s("source_schema_version", m.source_schema_version.as_deref()),
        s("stepgate_version", Some(&m.stepgate_version)),
        s("gpu_name", m.gpu_name.as_deref()),
        // Not `model`: that name is the hive partition key, and Spark refuses a data column
        // with a partition column's name.
        s("model_name", m.model.as_deref()),
        s("engine", m.engine.as_deref()),
        s("labels", Some(&m.labels_json)),
        s("method", Some(&m.method)),
        s("found_by", m.found_by.as_deref()),
        i("steps", m.steps),
        i("steps_with_gpu_work", m.steps_with_gpu_work),
        i("devices", m.devices),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The history reads each built-in step metric from a steps-table column its row in
    /// `baseline::metrics` names: every such column is a core column of the row's type, so
    /// a run whose steps all lack the value still has it. A metric column the fixed list
    /// also names must have the row's type there (else the file and the gate disagree).
    #[test]
    fn every_metric_column_is_a_core_column() {
        let table = crate::baseline::metrics::Metrics::builtin();
        let core = step_core();
        let mut n = 0;
        for (column, float) in table.columns() {
            let want = if float { Ty::Float } else { Ty::Int };
            assert!(
                core.contains(&(column, want)),
                "{column} ({want:?}) is not a core column of that type"
            );
            assert_eq!(core.iter().filter(|(c, _)| *c == column).count(), 1);
            n += 1;
        }
        // Today every metric column is also a field of the fixed list: the file's columns
        // are in the order they always had.
        assert_eq!(core.len(), STEP_FIELDS.len());
        // wall, period, busy, gap, launches, exposed communication, MBU (gap fraction is
        // computed from wall and gap).
        assert_eq!(n, 7);
    }
}
