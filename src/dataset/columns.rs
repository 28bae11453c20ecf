//! The `steps` table built column by column: each step is flattened into typed cells as
//! it is serialized (`dataset::flatten`, the same fields `steps --format json` prints), so
//! the table costs its typed cells (8 bytes a number, a string view a text) rather than a
//! JSON tree of every step; and `step_kernels`, written straight from the steps in row
//! groups.

use std::collections::HashMap;
use std::io::Write;

use polars::prelude::*;
use serde::Serialize;

use crate::dataset::flatten::{Flat, Scalar, Sink};
use crate::dataset::schema::{leading, step_core, Ids, Ty, MEAN_CONTEXT};
use crate::exit::{Error, Result};
use crate::wire::steps::{Step, StepsReport};

impl Scalar<'_> {
    /// The type a value asks for: integers stay integers, a fraction (or an integer too
    /// big for i64) is a float.
    fn ty(self) -> Option<Ty> {
        match self {
            Scalar::Null => None,
            Scalar::Int(_) => Some(Ty::Int),
            Scalar::Big(_) | Scalar::Float(_) => Some(Ty::Float),
            Scalar::Bool(_) => Some(Ty::Bool),
            Scalar::Str(_) => Some(Ty::Str),
        }
    }

    fn as_i64(self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(i),
            Scalar::Big(u) => Some(u as f64 as i64),
            Scalar::Float(f) => Some(f as i64),
            _ => None,
        }
    }

    fn as_f64(self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(i as f64),
            Scalar::Big(u) => Some(u as f64),
            Scalar::Float(f) => Some(f),
            _ => None,
        }
    }

    /// The value as text (numbers and booleans as JSON writes them).
    fn write_text(self, out: &mut String) {
        use std::fmt::Write as _;
        out.clear();
        // Writing into a String cannot fail.
        let _ = match self {
            Scalar::Null => Ok(()),
            Scalar::Int(i) => write!(out, "{i}"),
            Scalar::Big(u) => write!(out, "{u}"),
            Scalar::Float(f) => match serde_json::Number::from_f64(f) {
                Some(n) => write!(out, "{n}"),
                None => Ok(()),
            },
            Scalar::Bool(b) => write!(out, "{b}"),
            Scalar::Str(s) => out.write_str(s),
        };
    }
}

/// The cells of one column so far. A column whose type is not fixed starts as `Null`
/// and is promoted as values arrive: integers stay integers, a fraction makes it a
/// float, anything mixed becomes text.
enum Cells {
    Null(usize),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Str(StringChunkedBuilder, usize),
}

impl Cells {
    fn len(&self) -> usize {
        match self {
            Cells::Null(n) | Cells::Str(_, n) => *n,
            Cells::Int(v) => v.len(),
            Cells::Float(v) => v.len(),
            Cells::Bool(v) => v.len(),
        }
    }

    fn empty(ty: Ty, name: &str, capacity: usize) -> Cells {
        match ty {
            Ty::Int => Cells::Int(Vec::with_capacity(capacity)),
            Ty::Float => Cells::Float(Vec::with_capacity(capacity)),
            Ty::Bool => Cells::Bool(Vec::with_capacity(capacity)),
            Ty::Str => Cells::Str(StringChunkedBuilder::new(name.into(), capacity), 0),
        }
    }

    fn ty(&self) -> Option<Ty> {
        match self {
            Cells::Null(_) => None,
            Cells::Int(_) => Some(Ty::Int),
            Cells::Float(_) => Some(Ty::Float),
            Cells::Bool(_) => Some(Ty::Bool),
            Cells::Str(..) => Some(Ty::Str),
        }
    }

    /// Push a value converted to this column's type (null where it has none, as the
    /// schema types it: text in a numeric column, a number in a boolean one).
    fn push(&mut self, v: Scalar<'_>, text: &mut String) {
        match self {
            Cells::Null(n) => *n += 1,
            Cells::Int(c) => c.push(v.as_i64()),
            Cells::Float(c) => c.push(v.as_f64()),
            Cells::Bool(c) => c.push(match v {
                Scalar::Bool(b) => Some(b),
                _ => None,
            }),
            Cells::Str(b, n) => {
                match v {
                    Scalar::Null => b.append_null(),
                    Scalar::Str(s) => b.append_value(s),
                    other => {
                        other.write_text(text);
                        b.append_value(&*text);
                    }
                }
                *n += 1;
            }
        }
    }

    /// Re-type the cells so far to `to` (null → anything, int → float, anything → text).
    fn promote(&mut self, to: Ty, name: &str) {
        let n = self.len();
        let mut out = Cells::empty(to, name, n.max(16));
        let mut text = String::new();
        match std::mem::replace(self, Cells::Null(0)) {
            Cells::Null(k) => (0..k).for_each(|_| out.push(Scalar::Null, &mut text)),
            Cells::Int(v) => v
                .into_iter()
                .for_each(|x| out.push(x.map_or(Scalar::Null, Scalar::Int), &mut text)),
            Cells::Float(v) => v
                .into_iter()
                .for_each(|x| out.push(x.map_or(Scalar::Null, Scalar::Float), &mut text)),
            Cells::Bool(v) => v
                .into_iter()
                .for_each(|x| out.push(x.map_or(Scalar::Null, Scalar::Bool), &mut text)),
            s @ Cells::Str(..) => out = s,
        }
        *self = out;
    }

    fn finish(self, name: &str) -> Column {
        let name = PlSmallStr::from(name);
        match self {
            Cells::Null(n) => Column::full_null(name, n, &DataType::String),
            Cells::Int(v) => Column::new(name, v),
            Cells::Float(v) => Column::new(name, v),
            Cells::Bool(v) => Column::new(name, v),
            Cells::Str(b, _) => b.finish().with_name(name).into_column(),
        }
    }
}

/// One column being filled.
struct Col {
    name: String,
    /// Core columns have a fixed type whatever the values.
    fixed: bool,
    /// Where it came first (row, then field path), for the column order.
    first_row: usize,
    path: Vec<String>,
    cells: Cells,
}

impl Col {
    fn push(&mut self, v: Scalar<'_>, text: &mut String) {
        if !self.fixed {
            if let Some(want) = v.ty() {
                let to = match (self.cells.ty(), want) {
                    (None, t) => Some(t),
                    (Some(a), b) if a == b => None,
                    (Some(Ty::Int), Ty::Float) => Some(Ty::Float),
                    (Some(Ty::Float), Ty::Int) | (Some(Ty::Str), _) => None,
                    _ => Some(Ty::Str),
                };
                if let Some(t) = to {
                    self.cells.promote(t, &self.name);
                }
            }
        }
        self.cells.push(v, text);
    }
}

/// Flattened step rows: core columns first, in schema order; then the others in the order
/// a walk of each step's JSON object (keys in sorted order) first meets them.
pub(crate) struct StepColumns {
    cols: Vec<Col>,
    at: HashMap<String, usize>,
    rows: usize,
    /// The current field path, `_`-joined, and where each of its segments starts.
    key: String,
    segments: Vec<usize>,
    /// Reused buffers: JSON text of arrays, text of numbers in text columns.
    json: Vec<u8>,
    text: String,
}

impl StepColumns {
    pub fn new(capacity: usize) -> Self {
        let mut s = StepColumns {
            cols: Vec::with_capacity(64),
            at: HashMap::new(),
            rows: 0,
            key: String::with_capacity(64),
            segments: Vec::with_capacity(4),
            json: Vec::new(),
            text: String::new(),
        };
        for (name, ty) in step_core() {
            s.at.insert(name.to_owned(), s.cols.len());
            s.cols.push(Col {
                name: name.to_owned(),
                fixed: true,
                first_row: 0,
                path: Vec::new(),
                cells: Cells::empty(ty, name, capacity),
            });
        }
        s
    }

    /// One step, flattened as it is serialized, plus the derived mean context.
    pub fn push(&mut self, step: &Step) -> Result<()> {
        self.key.clear();
        self.segments.clear();
        step.serialize(Flat { cols: &mut *self })
            .map_err(|e| Error::input(format!("internal: a step could not be flattened: {e}")))?;
        let ctx = step.composition.as_ref().and_then(|c| c.mean_context());
        self.key.clear();
        self.segments.clear();
        let len = self.enter(MEAN_CONTEXT);
        self.cell(match ctx {
            Some(c) if c.is_finite() => Scalar::Float(c),
            _ => Scalar::Null,
        });
        self.leave(len);
        self.rows += 1;
        // A field absent from this step (an object that was null) gets a null cell.
        for c in &mut self.cols {
            if c.cells.len() < self.rows {
                c.cells.push(Scalar::Null, &mut self.text);
            }
        }
        Ok(())
    }

    /// The frame. A non-core column with no value in this run is left out rather than
    /// typed by guess: a guessed type could clash with the real one in other runs' files
    /// (Spark's mergeSchema refuses string vs long).
    pub fn finish(self, run_id: Ids<'_>) -> Result<DataFrame> {
        let n = self.rows;
        let (core, mut rest): (Vec<Col>, Vec<Col>) = self.cols.into_iter().partition(|c| c.fixed);
        rest.sort_by(|a, b| (a.first_row, &a.path).cmp(&(b.first_row, &b.path)));
        let mut out = leading(run_id, n);
        for c in core.into_iter().chain(rest) {
            if !c.fixed && matches!(c.cells, Cells::Null(_)) {
                continue;
            }
            out.push(c.cells.finish(&c.name));
        }
        Ok(DataFrame::new(n, out)?)
    }
}

impl Sink for StepColumns {
    fn enter(&mut self, name: &str) -> usize {
        let len = self.key.len();
        if len > 0 {
            self.key.push('_');
        }
        self.segments.push(self.key.len());
        self.key.push_str(name);
        len
    }

    fn leave(&mut self, len: usize) {
        self.key.truncate(len);
        self.segments.pop();
    }

    /// The buffer arrays are written into (taken while one is open).
    fn take_text(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.json)
    }

    fn give_text(&mut self, buf: Vec<u8>) {
        self.json = buf;
    }

    /// A cell for the current field path; the column is made (null so far) on first sight.
    fn cell(&mut self, v: Scalar<'_>) {
        let i = match self.at.get(self.key.as_str()) {
            Some(&i) => i,
            None => {
                let i = self.cols.len();
                let mut path = Vec::with_capacity(self.segments.len());
                for (j, &start) in self.segments.iter().enumerate() {
                    // A segment ends where the next one's `_` is, or at the key's end.
                    let end = self
                        .segments
                        .get(j + 1)
                        .map_or(self.key.len(), |&next| next - 1);
                    path.push(self.key[start..end].to_owned());
                }
                self.cols.push(Col {
                    name: self.key.clone(),
                    fixed: false,
                    first_row: self.rows,
                    path,
                    cells: Cells::Null(self.rows),
                });
                self.at.insert(self.key.clone(), i);
                i
            }
        };
        self.cols[i].push(v, &mut self.text);
    }
}

/// The `steps` table: one row per step, every per-step field of `steps --format json`.
pub(crate) fn steps_frame(run_id: Ids<'_>, report: &StepsReport) -> Result<DataFrame> {
    let mut cols = StepColumns::new(report.steps.len());
    for s in &report.steps {
        cols.push(s)?;
    }
    cols.finish(run_id)
}

/// Rows per `step_kernels` row group: bounds the rows held at once (names are copied into
/// Arrow buffers) whatever the report's size.
const ROW_GROUP: usize = 1 << 16;

/// Write the `step_kernels` table (one row per (step, op name), every op name of the
/// step, not only the top ones) in row groups of `ROW_GROUP` rows.
pub(crate) fn write_step_kernels(
    run_id: Ids<'_>,
    report: &StepsReport,
    w: &mut dyn Write,
    compression: ParquetCompression,
) -> Result<()> {
    let mut out = Batches {
        out: Some(w),
        writer: None,
        compression,
    };
    let mut chunk = KernelChunk::default();
    for s in &report.steps {
        for k in &s.all_kernels {
            chunk.push(s, k);
            if chunk.len() == ROW_GROUP {
                out.write(&chunk.take(run_id)?)?;
            }
        }
    }
    // The last (or only, possibly empty) row group: a run without kernels still gets a
    // file with the table's columns.
    if chunk.len() > 0 || out.writer.is_none() {
        out.write(&chunk.take(run_id)?)?;
    }
    out.finish()
}

/// A Parquet writer opened on the first row group (its schema is that frame's).
struct Batches<'w> {
    out: Option<&'w mut dyn Write>,
    writer: Option<polars::io::parquet::write::BatchedWriter<&'w mut dyn Write>>,
    compression: ParquetCompression,
}

impl Batches<'_> {
    fn write(&mut self, df: &DataFrame) -> Result<()> {
        if let Some(w) = self.out.take() {
            self.writer = Some(
                ParquetWriter::new(w)
                    .with_compression(self.compression)
                    .batched(df.schema())?,
            );
        }
        if let Some(b) = self.writer.as_mut() {
            b.write_batch(df)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<()> {
        if let Some(b) = self.writer {
            b.finish()?;
        }
        Ok(())
    }
}

/// Up to [`ROW_GROUP`] `step_kernels` rows.
#[derive(Default)]
struct KernelChunk<'a> {
    series: Vec<i64>,
    index: Vec<i64>,
    device: Vec<Option<i64>>,
    name: Vec<&'a str>,
    short: Vec<&'a str>,
    cat: Vec<&'a str>,
    inst: Vec<i64>,
    total: Vec<i64>,
    excl: Vec<i64>,
}

impl<'a> KernelChunk<'a> {
    fn len(&self) -> usize {
        self.series.len()
    }

    fn push(&mut self, s: &Step, k: &'a crate::wire::steps::StepKernel) {
        self.series.push(s.series as i64);
        self.index.push(s.index as i64);
        self.device.push(s.device);
        self.name.push(&k.name);
        self.short.push(&k.short_name);
        self.cat.push(&k.category);
        self.inst.push(k.instances as i64);
        self.total.push(k.total_ns);
        self.excl.push(k.exclusive_ns);
    }

    /// The rows as a frame; the chunk is empty afterwards.
    fn take(&mut self, run_id: Ids<'_>) -> Result<DataFrame> {
        let c = std::mem::take(self);
        let mut cols = leading(run_id, c.len());
        cols.extend([
            Column::new("series".into(), c.series),
            Column::new("step_index".into(), c.index),
            Column::new("device".into(), c.device),
            Column::new("name".into(), c.name),
            Column::new("short_name".into(), c.short),
            Column::new("category".into(), c.cat),
            Column::new("instances".into(), c.inst),
            Column::new("total_ns".into(), c.total),
            Column::new("exclusive_ns".into(), c.excl),
        ]);
        Ok(DataFrame::new_infer_height(cols)?)
    }
}
