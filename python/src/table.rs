//! Result tables: rows of a command's JSON report (or a run-history DataFrame) as one Arrow
//! struct array, handed to Python through the Arrow PyCapsule stream interface.
//!
//! The columns are built from the same JSON the `.report` dict is parsed from, so a table
//! can never disagree with the report: a nested object becomes `parent.child` columns, an
//! array inside a row is left out (it is a table of its own, or stays in `.report`), and a
//! column's type is the narrowest that holds every value (int64, float64, bool, string; a
//! column mixing kinds is kept as JSON text).

use std::ffi::CStr;

use polars::prelude::{CompatLevel, DataFrame, IntoSeries, PlSmallStr};
use polars_arrow::array::{Array, BooleanArray, PrimitiveArray, StructArray, Utf8Array};
use polars_arrow::datatypes::{ArrowDataType, Field};
use polars_arrow::ffi::{export_iterator, ArrowArrayStream};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use serde_json::{Map, Value};

/// Tables by name, in order.
pub type Named = Vec<(String, Table)>;

/// One table: a struct array (its fields are the columns) and its row count.
#[pyclass(module = "stepgate._native", frozen)]
pub struct Table {
    array: StructArray,
}

/// Where a table's rows are in a report: `parent` is a JSON pointer to an array; with
/// `child`, each element's `child` array holds the rows and `keep` names the element's
/// fields repeated on each of them (as `(field, column)`).
pub struct Spec {
    pub name: &'static str,
    pub parent: &'static str,
    pub child: Option<&'static str>,
    pub keep: &'static [(&'static str, &'static str)],
}

/// The tables `specs` describe, from the parsed report.
pub fn from_report(report: &Value, specs: &[Spec]) -> Named {
    specs
        .iter()
        .map(|s| {
            let mut rows: Vec<Map<String, Value>> = Vec::new();
            let items = report.pointer(s.parent).and_then(Value::as_array);
            for item in items.into_iter().flatten() {
                match s.child {
                    None => rows.push(flatten(item)),
                    Some(c) => {
                        let kids = item.get(c).and_then(Value::as_array);
                        for kid in kids.into_iter().flatten() {
                            let mut row = Map::new();
                            for (field, col) in s.keep {
                                let v = item.get(*field).cloned().unwrap_or(Value::Null);
                                row.insert((*col).to_owned(), v);
                            }
                            row.extend(flatten(kid));
                            rows.push(row);
                        }
                    }
                }
            }
            let lead: Vec<&str> = s.keep.iter().map(|(_, col)| *col).collect();
            (s.name.to_owned(), Table::from_rows(&rows, &lead))
        })
        .collect()
}

/// A row's scalar fields, nested objects as `a.b` columns; arrays are left out.
fn flatten(v: &Value) -> Map<String, Value> {
    fn walk(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, x, out);
                }
            }
            Value::Array(_) => {}
            x => {
                out.insert(prefix.to_owned(), x.clone());
            }
        }
    }
    let mut out = Map::new();
    match v {
        Value::Object(_) => walk("", v, &mut out),
        x => {
            out.insert("value".to_owned(), x.clone());
        }
    }
    out
}

/// The narrowest Arrow type of a column's values.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Null,
    Int,
    Float,
    Bool,
    Str,
    Json,
}

fn kind_of(values: &[&Value]) -> Kind {
    let mut k = Kind::Null;
    for v in values {
        let this = match v {
            Value::Null => continue,
            Value::Bool(_) => Kind::Bool,
            Value::Number(n) if n.is_i64() => Kind::Int,
            Value::Number(_) => Kind::Float,
            Value::String(_) => Kind::Str,
            _ => Kind::Json,
        };
        k = match (k, this) {
            (Kind::Null, t) => t,
            (a, b) if a == b => a,
            (Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => Kind::Float,
            _ => Kind::Json,
        };
    }
    k
}

fn column(values: &[&Value]) -> Box<dyn Array> {
    match kind_of(values) {
        Kind::Int => Box::new(PrimitiveArray::<i64>::from(
            values.iter().map(|v| v.as_i64()).collect::<Vec<_>>(),
        )),
        Kind::Float => Box::new(PrimitiveArray::<f64>::from(
            values.iter().map(|v| v.as_f64()).collect::<Vec<_>>(),
        )),
        Kind::Bool => Box::new(BooleanArray::from(
            values.iter().map(|v| v.as_bool()).collect::<Vec<_>>(),
        )),
        Kind::Str => Box::new(Utf8Array::<i64>::from(
            values.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
        )),
        // A column with no value at all: typed as text, every row null.
        Kind::Null => Box::new(Utf8Array::<i64>::from(vec![None::<&str>; values.len()])),
        Kind::Json => Box::new(Utf8Array::<i64>::from(
            values
                .iter()
                .map(|v| (!v.is_null()).then(|| v.to_string()))
                .collect::<Vec<_>>(),
        )),
    }
}

impl Table {
    /// A table of flat rows, absent fields null. Column order: `lead` (the keys repeated
    /// from a parent row), then the row's identifying fields, then the rest by name (the
    /// JSON maps here are sorted, not in the report's field order).
    pub fn from_rows(rows: &[Map<String, Value>], lead: &[&str]) -> Table {
        const IDS: [&str; 8] = [
            "index",
            "device",
            "label",
            "metric",
            "check",
            "class",
            "name",
            "short_name",
        ];
        let mut names: Vec<&String> = Vec::new();
        for r in rows {
            for k in r.keys() {
                if !names.contains(&k) {
                    names.push(k);
                }
            }
        }
        let rank = |n: &str| {
            lead.iter()
                .position(|l| *l == n)
                .or_else(|| IDS.iter().position(|l| *l == n).map(|i| i + lead.len()))
                .unwrap_or(usize::MAX)
        };
        names.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
        let mut fields = Vec::with_capacity(names.len());
        let mut arrays = Vec::with_capacity(names.len());
        for name in names {
            let values: Vec<&Value> = rows
                .iter()
                .map(|r| r.get(name).unwrap_or(&Value::Null))
                .collect();
            let a = column(&values);
            fields.push(Field::new(name.as_str().into(), a.dtype().clone(), true));
            arrays.push(a);
        }
        Table {
            array: StructArray::new(ArrowDataType::Struct(fields), rows.len(), arrays, None),
        }
    }

    /// A DataFrame (a run-history table) as one struct array.
    pub fn from_frame(df: DataFrame) -> std::result::Result<Table, String> {
        let height = df.height();
        let s = df.into_struct(PlSmallStr::EMPTY).into_series().rechunk();
        let arr = s.to_arrow(0, CompatLevel::oldest());
        match arr.as_any().downcast_ref::<StructArray>() {
            Some(a) if a.len() == height => Ok(Table { array: a.clone() }),
            _ => Err("a history table did not convert to an Arrow struct array".to_owned()),
        }
    }
}

/// The stream the capsule owns; `Send` because the stream's private data (one exported
/// array) is owned and touched by whichever single thread consumes it.
#[repr(transparent)]
struct SendStream(ArrowArrayStream);
// SAFETY: the stream owns its data (no borrowed pointers) and the C stream interface
// lets a consumer call it from any one thread at a time.
unsafe impl Send for SendStream {}

const STREAM_NAME: &CStr = c"arrow_array_stream";

#[pymethods]
impl Table {
    /// The Arrow PyCapsule interface: the table as an Arrow C stream of one struct batch
    /// (polars.DataFrame(t), pyarrow.table(t), duckdb read it without Python objects).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // The schema is fixed: a consumer that asked for another casts afterwards (the
        // interface allows a producer to ignore the request).
        let _ = requested_schema;
        let array: Box<dyn Array> = Box::new(self.array.clone());
        let field = Field::new(PlSmallStr::EMPTY, array.dtype().clone(), false);
        let stream = export_iterator(Box::new(std::iter::once(Ok(array))), field);
        // A consumer moves the stream out (leaving release null); one that never does
        // leaves it to this destructor, whose drop releases it.
        PyCapsule::new_with_value_and_destructor(
            py,
            SendStream(stream),
            STREAM_NAME,
            |s: SendStream, _| drop(s),
        )
    }

    /// Row count.
    fn __len__(&self) -> usize {
        self.array.len()
    }

    /// Row count.
    #[getter]
    fn num_rows(&self) -> usize {
        self.array.len()
    }

    /// Column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.array
            .fields()
            .iter()
            .map(|f| f.name.to_string())
            .collect()
    }
}
