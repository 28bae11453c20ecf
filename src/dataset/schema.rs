//! The dataset's tables and columns (schema version 1) and how a run becomes five data
//! frames. Per-step columns are generated from the serialized `Step` (the same JSON that
//! `steps --format json` prints), so fields added to `Step` later become columns without a
//! change here; the core columns below always exist with a fixed type, so every run's file
//! has them even when a value is absent.

use std::collections::HashMap;

use polars::prelude::*;
use serde_json::Value;

use crate::exit::Result;
use crate::timing::steps::{Step, StepsReport};

/// Bump when a column changes meaning or type, or disappears (new columns do not bump it).
pub const SCHEMA_VERSION: i32 = 1;

/// The five tables, one directory each under the dataset root. `runs` is written last, so a
/// run whose `runs` row is visible has all its other files in place.
pub const TABLES: [&str; 5] = ["steps", "step_kernels", "kernels", "devices", "runs"];

/// A column's Parquet type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Float,
    Bool,
    Str,
}

/// Step columns that every `steps` file has, whatever the run held: what `trend` and
/// `gate --history` read. Nested `Step` fields are flattened with `_`
/// (`composition.requests` → `composition_requests`).
pub const STEP_CORE: &[(&str, Ty)] = &[
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
    ("attribution_floor_floor_ns", Ty::Float),
    ("attribution_floor_mbu", Ty::Float),
    ("attribution_shape", Ty::Str),
    ("mean_context", Ty::Float),
];

/// Column name of the derived mean context per request (not a `Step` field: computed from
/// the batch composition, as baselines do).
pub const MEAN_CONTEXT: &str = "mean_context";

/// One column being filled row by row from JSON values.
struct Col {
    name: String,
    values: Vec<Value>,
}

/// Flattened step rows: column order is first-seen order (core columns first).
pub struct StepColumns {
    cols: Vec<Col>,
    at: HashMap<String, usize>,
    rows: usize,
}

impl StepColumns {
    fn new(capacity: usize) -> Self {
        let mut s = StepColumns {
            cols: Vec::new(),
            at: HashMap::new(),
            rows: 0,
        };
        for (name, _) in STEP_CORE {
            s.col(name);
        }
        for c in &mut s.cols {
            c.values.reserve(capacity);
        }
        s
    }

    fn col(&mut self, name: &str) -> usize {
        if let Some(&i) = self.at.get(name) {
            return i;
        }
        let i = self.cols.len();
        self.cols.push(Col {
            name: name.to_owned(),
            values: vec![Value::Null; self.rows],
        });
        self.at.insert(name.to_owned(), i);
        i
    }

    /// Walk one step's JSON object: scalars become cells, objects recurse with a `_`
    /// joined name, arrays (top kernels, categories) are kept as JSON text.
    fn walk(&mut self, key: &mut String, v: Value) {
        match v {
            Value::Object(m) => {
                let len = key.len();
                for (k, x) in m {
                    if !key.is_empty() {
                        key.push('_');
                    }
                    key.push_str(&k);
                    self.walk(key, x);
                    key.truncate(len);
                }
            }
            Value::Array(_) => {
                let i = self.col(key);
                self.cols[i].values.push(Value::String(v.to_string()));
            }
            _ => {
                let i = self.col(key);
                self.cols[i].values.push(v);
            }
        }
    }

    /// One step: its serialized JSON (moved in, not copied) and the struct for the derived
    /// columns.
    fn push(&mut self, step: &Step, v: Value) {
        let mut key = String::with_capacity(64);
        self.walk(&mut key, v);
        let ctx = step.composition.as_ref().and_then(|c| c.mean_context());
        let i = self.col(MEAN_CONTEXT);
        self.cols[i]
            .values
            .push(ctx.map_or(Value::Null, |c| serde_json::json!(c)));
        self.rows += 1;
        // A field absent from this step (an object that was null) gets a null cell.
        for c in &mut self.cols {
            if c.values.len() < self.rows {
                c.values.push(Value::Null);
            }
        }
    }

    /// The frame, with a fixed type for core columns and an inferred one for the rest.
    fn finish(self, run_id: &str) -> Result<DataFrame> {
        let n = self.rows;
        let mut out = leading(run_id, n);
        for c in self.cols {
            let ty = match STEP_CORE.iter().find(|(k, _)| *k == c.name) {
                Some((_, t)) => *t,
                // A non-core column with no value in this run is left out rather than
                // typed by guess: a guessed type could clash with the real one in other
                // runs' files (Spark's mergeSchema refuses string vs long).
                None if c.values.iter().all(Value::is_null) => continue,
                None => infer(&c.values),
            };
            out.push(typed(&c.name, ty, &c.values));
        }
        Ok(DataFrame::new(n, out)?)
    }
}

/// The type a column's JSON values fit: integers stay integers, any fraction makes it a
/// float, anything mixed (or all null) is text.
fn infer(values: &[Value]) -> Ty {
    let mut ty: Option<Ty> = None;
    for v in values {
        let t = match v {
            Value::Null => continue,
            Value::Bool(_) => Ty::Bool,
            Value::Number(n) if n.is_i64() => Ty::Int,
            Value::Number(_) => Ty::Float,
            _ => Ty::Str,
        };
        ty = Some(match (ty, t) {
            (None, t) => t,
            (Some(a), b) if a == b => a,
            (Some(Ty::Int), Ty::Float) | (Some(Ty::Float), Ty::Int) => Ty::Float,
            _ => return Ty::Str,
        });
    }
    ty.unwrap_or(Ty::Str)
}

fn typed(name: &str, ty: Ty, values: &[Value]) -> Column {
    let name = PlSmallStr::from(name);
    match ty {
        Ty::Int => Column::new(
            name,
            values
                .iter()
                .map(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
                .collect::<Vec<_>>(),
        ),
        Ty::Float => Column::new(name, values.iter().map(Value::as_f64).collect::<Vec<_>>()),
        Ty::Bool => Column::new(name, values.iter().map(Value::as_bool).collect::<Vec<_>>()),
        Ty::Str => Column::new(
            name,
            values
                .iter()
                .map(|v| match v {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    other => Some(other.to_string()),
                })
                .collect::<Vec<_>>(),
        ),
    }
}

/// `schema_version` and `run_id`, the two columns every table starts with.
fn leading(run_id: &str, n: usize) -> Vec<Column> {
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
    ]
}

/// The `steps` table: one row per step. `steps_json` is the report's `steps` array as
/// `steps --format json` prints it (serialized once by the caller).
pub fn steps_frame(
    run_id: &str,
    report: &StepsReport,
    steps_json: Vec<Value>,
) -> Result<DataFrame> {
    if steps_json.len() != report.steps.len() {
        return Err(crate::exit::Error::input(
            "internal: the serialized steps do not match the steps",
        ));
    }
    let mut cols = StepColumns::new(report.steps.len());
    for (s, v) in report.steps.iter().zip(steps_json) {
        cols.push(s, v);
    }
    cols.finish(run_id)
}

/// The `step_kernels` table: one row per (step, op name), every op name of the step (not
/// only the top ones).
pub fn step_kernels_frame(run_id: &str, report: &StepsReport) -> Result<DataFrame> {
    let n: usize = report.steps.iter().map(|s| s.all_kernels.len()).sum();
    let mut series = Vec::with_capacity(n);
    let mut index = Vec::with_capacity(n);
    let mut device = Vec::with_capacity(n);
    let mut name = Vec::with_capacity(n);
    let mut short = Vec::with_capacity(n);
    let mut cat = Vec::with_capacity(n);
    let mut inst = Vec::with_capacity(n);
    let mut total = Vec::with_capacity(n);
    let mut excl = Vec::with_capacity(n);
    for s in &report.steps {
        for k in &s.all_kernels {
            series.push(s.series as i64);
            index.push(s.index as i64);
            device.push(s.device);
            name.push(k.name.as_ref());
            short.push(k.short_name.as_ref());
            cat.push(k.category.as_ref());
            inst.push(k.instances as i64);
            total.push(k.total_ns);
            excl.push(k.exclusive_ns);
        }
    }
    let mut cols = leading(run_id, n);
    cols.extend([
        Column::new("series".into(), series),
        Column::new("step_index".into(), index),
        Column::new("device".into(), device),
        Column::new("name".into(), name),
        Column::new("short_name".into(), short),
        Column::new("category".into(), cat),
        Column::new("instances".into(), inst),
        Column::new("total_ns".into(), total),
        Column::new("exclusive_ns".into(), excl),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// The `kernels` table: one row per (device, op name), summed over the run's steps.
pub fn kernels_frame(run_id: &str, report: &StepsReport) -> Result<DataFrame> {
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
pub fn devices_frame(
    run_id: &str,
    devices: &[DeviceRow],
    report: &StepsReport,
) -> Result<DataFrame> {
    let mut ids: Vec<i64> = devices.iter().map(|d| d.id).collect();
    ids.extend(report.steps.iter().filter_map(|s| s.device));
    ids.sort_unstable();
    ids.dedup();
    let info = |id: i64| devices.iter().find(|d| d.id == id);
    let mut steps = Vec::with_capacity(ids.len());
    let mut gpu_steps = Vec::with_capacity(ids.len());
    let mut wall = Vec::with_capacity(ids.len());
    let mut busy = Vec::with_capacity(ids.len());
    let mut gap = Vec::with_capacity(ids.len());
    for &id in &ids {
        let on = report.steps.iter().filter(|s| s.device == Some(id));
        let (mut n, mut g, mut w, mut b, mut p) = (0i64, 0i64, 0i64, 0i64, 0i64);
        for s in on {
            n += 1;
            if let Some(x) = s.wall_ns {
                g += 1;
                w += x;
            }
            b += s.busy_ns;
            p += s.gap_ns.unwrap_or(0);
        }
        steps.push(n);
        gpu_steps.push(g);
        wall.push(w);
        busy.push(b);
        gap.push(p);
    }
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
        Column::new("steps".into(), steps),
        Column::new("steps_with_gpu_work".into(), gpu_steps),
        Column::new("step_wall_ns".into(), wall),
        Column::new("step_busy_ns".into(), busy),
        Column::new("step_gap_ns".into(), gap),
    ]);
    Ok(DataFrame::new_infer_height(cols)?)
}

/// One `runs` row.
#[derive(Debug, Clone, Default)]
pub struct RunMeta {
    pub run_id: String,
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
pub fn runs_frame(m: &RunMeta) -> Result<DataFrame> {
    let s = |name: &str, v: Option<&str>| Column::new(name.into(), [v]);
    let i = |name: &str, v: i64| Column::new(name.into(), [v]);
    let mut cols = leading(&m.run_id, 1);
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

/// A partition value safe in any path and any engine: lower case, `[a-z0-9._-]`, other
/// characters folded to `-`; `unknown` when absent.
pub fn slug(v: Option<&str>) -> String {
    let mut out = String::new();
    for c in v.unwrap_or("").trim().chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_owned();
    if out.is_empty() {
        "unknown".to_owned()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_path_safe() {
        assert_eq!(slug(Some("NVIDIA H100 80GB HBM3")), "nvidia-h100-80gb-hbm3");
        assert_eq!(
            slug(Some("meta-llama/Llama-3.1-8B")),
            "meta-llama-llama-3.1-8b"
        );
        assert_eq!(slug(None), "unknown");
        assert_eq!(slug(Some(" / ")), "unknown");
    }

    #[test]
    fn inference_keeps_integers_and_promotes_fractions() {
        use serde_json::json;
        assert_eq!(infer(&[json!(1), Value::Null, json!(3)]), Ty::Int);
        assert_eq!(infer(&[json!(1), json!(2.5)]), Ty::Float);
        assert_eq!(infer(&[json!(true), json!(false)]), Ty::Bool);
        assert_eq!(infer(&[json!(1), json!("x")]), Ty::Str);
        assert_eq!(infer(&[Value::Null]), Ty::Str);
    }
}
