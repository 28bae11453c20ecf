//! Row-wise builders of the trace's frames: sources push one row at a time, then
//! `finish` hands each column's vector to polars without a copy. One macro writes the
//! four builders (ops, calls, ranges, shapes) from their column lists, so a column is
//! named once: in its builder, its row and its frame.
//!
//! Ids (device, stream, process, correlation, graph) are 32-bit columns: every format's
//! ids fit (CUDA's device, stream, correlation and graph ids are 32-bit, OS pids stay
//! below 2^22), and at 20M ops and 27M calls each 64-bit id column would cost 80–110 MB.
//! Thread ids stay 64-bit (Kineto writes pthread ids). A reader that needs wider ids
//! while it reads (Kineto keeps a rank slot in the high bits, `source/kineto/ids.rs`)
//! builds with `I = i64` and narrows at `finish`. An id that does not fit is stored as -1
//! (unknown) and counted ([`OpsBuilder::out_of_range`]), and the loaders say so in a
//! warning. How each field is stored is in `store`.

use polars::prelude::*;

use super::store::{owned, Elem, Id, IdStore, Native, Store};
use super::{col, CallApi, OpKind, RangeKind};
use crate::exit::Result;

fn frame(columns: Vec<Column>) -> Result<DataFrame> {
    Ok(DataFrame::new_infer_height(columns)?)
}

/// A group of columns only some loads carry (launch geometry): kept row for row with
/// its builder.
trait Group: Default {
    /// One row of unknown values.
    fn push_unknown(&mut self);
    fn truncate(&mut self, n: usize);
    fn append(&mut self, other: &mut Self);
    /// `n` rows of unknown values.
    fn pad(&mut self, n: usize);
    fn into_columns(self, out: &mut Vec<Column>);
}

/// One column's copy, run by whichever thread takes it.
type Job<'a> = Box<dyn FnOnce() + Send + 'a>;

/// Run `jobs` on up to `threads` threads (this one included), each taken in order by
/// the first thread free.
fn run_jobs(jobs: Vec<Job<'_>>, threads: usize) {
    let jobs: Vec<std::sync::Mutex<Option<Job<'_>>>> = jobs
        .into_iter()
        .map(|j| std::sync::Mutex::new(Some(j)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || loop {
        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(slot) = jobs.get(k) else { break };
        let job = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(job) = job {
            job();
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads.min(jobs.len()) {
            s.spawn(work);
        }
        work();
    });
}

/// A column of the frame from the builder's vector: ids through [`IdStore::id_column`].
macro_rules! column {
    (Id, $name:expr, $v:expr) => {
        I::id_column($name, $v)
    };
    ($t:ty, $name:expr, $v:expr) => {
        <$t as Native>::column($name, $v)
    };
}

/// How many of a column's values will not fit the frame (ids only).
macro_rules! wide {
    (Id, $v:expr) => {
        I::count_wide($v)
    };
    ($t:ty, $v:expr) => {
        0
    };
}

/// `$builder` (a vector per column) and `$row` (one row, for `push`), with push, len,
/// finish, and the whole-row operations truncate and append. Every builder has a
/// `start_ns` column, which gives its length. A column typed [`Id`] is stored as the
/// builder's `I` (see [`IdStore`]). `optional` names a [`Group`] of columns the builder
/// carries only when a load asks for it.
macro_rules! builder {
    (
        $(#[$bdoc:meta])*
        $builder:ident = $generic:ident<i32>,
        $(#[$rdoc:meta])*
        $row:ident {
            $($(#[$fdoc:meta])* $field:ident: $rty:ty => $cty:tt = $colname:expr,)+
        }
        $(optional $(#[$odoc:meta])* $opt:ident: $oty:ty)?
    ) => {
        /// The builder over any id storage (see [`IdStore`]).
        #[derive(Debug, Default)]
        pub struct $generic<I: IdStore> {
            $(pub $field: Vec<<$cty as Elem<I>>::Out>,)+
            $($(#[$odoc])* pub $opt: Option<$oty>,)?
            /// Ids pushed that did not fit 32 bits (stored as -1).
            out_of_range: u64,
        }

        $(#[$bdoc])*
        pub type $builder = $generic<i32>;

        $(#[$rdoc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $row {
            $($(#[$fdoc])* pub $field: $rty,)+
        }

        impl<I: IdStore> $generic<I> {
            /// Push a row (unknown values in an optional group).
            pub fn push(&mut self, r: $row) {
                self.push_row(r);
                $(if let Some(g) = &mut self.$opt {
                    g.push_unknown();
                })?
            }

            #[inline]
            fn push_row(&mut self, r: $row) {
                $(self.$field.push(<<$cty as Elem<I>>::Out as Store<$rty>>::store(
                    r.$field,
                    &mut self.out_of_range,
                ));)+
            }

            pub fn len(&self) -> usize {
                self.start_ns.len()
            }

            pub fn is_empty(&self) -> bool {
                self.start_ns.is_empty()
            }

            /// How many ids did not fit (or, in an `i64` builder, will not fit) the
            /// frame's 32-bit columns: they read as -1, unknown.
            pub(crate) fn out_of_range(&self) -> u64 {
                self.out_of_range $(+ wide!($cty, &self.$field))+
            }

            pub fn finish(self) -> Result<DataFrame> {
                #[allow(unused_mut)]
                let mut columns = vec![$(column!($cty, $colname, self.$field)),+];
                $(if let Some(g) = self.$opt {
                    g.into_columns(&mut columns);
                })?
                frame(columns)
            }

            /// Keep only the first `n` rows (drop what a rejected file added).
            pub fn truncate(&mut self, n: usize) {
                $(self.$field.truncate(n);)+
                $(if let Some(g) = &mut self.$opt {
                    g.truncate(n);
                })?
            }

            /// Move `other`'s rows after this builder's (into an empty builder: no copy).
            /// Each of `other`'s columns is freed as soon as it is moved, so a
            /// concatenation of big parts holds one extra column at a time, not a part.
            pub fn append(&mut self, other: &mut Self) {
                if self.is_empty() {
                    let counted = self.out_of_range;
                    std::mem::swap(self, other);
                    self.out_of_range += counted;
                    return;
                }
                self.out_of_range += std::mem::take(&mut other.out_of_range);
                $(
                    // Parts of one load are built alike; a part without the group gets
                    // unknown values for it.
                    match (&mut self.$opt, &mut other.$opt) {
                        (Some(a), Some(b)) => a.append(b),
                        (Some(a), None) => a.pad(other.len()),
                        (None, _) => {}
                    }
                )?
                $(
                    self.$field.append(&mut other.$field);
                    drop(std::mem::take(&mut other.$field));
                )+
            }

            /// [`Self::append`] with the columns copied on up to `threads` threads (the
            /// same rows: each column is its own copy). Copying the second half of a
            /// 4M-op read was a tenth of `steps` at 2 threads, on one thread.
            pub fn append_on(&mut self, other: &mut Self, threads: usize)
            where
                I: Send,
            {
                if threads <= 1 || self.is_empty() {
                    return self.append(other);
                }
                self.out_of_range += std::mem::take(&mut other.out_of_range);
                $(
                    match (&mut self.$opt, &mut other.$opt) {
                        (Some(a), Some(b)) => a.append(b),
                        (Some(a), None) => a.pad(other.len()),
                        (None, _) => {}
                    }
                )?
                let mut jobs: Vec<Job<'_>> = Vec::new();
                $(
                    let (a, b) = (&mut self.$field, &mut other.$field);
                    jobs.push(Box::new(move || {
                        a.append(b);
                        drop(std::mem::take(b));
                    }));
                )+
                run_jobs(jobs, threads);
            }
        }
    };
}

builder! {
    /// Row-wise builder for [`Trace::ops`](super::Trace::ops).
    OpsBuilder = OpsBuilderOf<i32>,
    /// One GPU op, for [`OpsBuilder::push`].
    OpRow {
        device: i64 => Id = col::DEVICE,
        stream: i64 => Id = col::STREAM,
        pid: i64 => Id = col::PID,
        start_ns: i64 => i64 = col::START,
        end_ns: i64 => i64 = col::END,
        name_id: u32 => u32 = col::NAME,
        short_id: u32 => u32 = col::SHORT,
        kind: OpKind => u32 = col::KIND,
        correlation_id: i64 => Id = col::CORR,
        graph_id: i64 => Id = col::GRAPH,
        bytes: i64 => i64 = col::BYTES,
    }
    optional
    /// Launch geometry, one entry per row, only when asked for
    /// ([`OpsBuilder::with_geometry`]): a builder without it allocates nothing for it.
    geometry: GeometryCols
}

builder! {
    /// Row-wise builder for [`Trace::calls`](super::Trace::calls).
    CallsBuilder = CallsBuilderOf<i32>,
    /// One host API call, for [`CallsBuilder::push`].
    CallRow {
        pid: i64 => Id = col::PID,
        /// Thread ids stay 64-bit: Kineto writes pthread ids (2248185664 in a 2021 trace).
        tid: i64 => i64 = col::TID,
        start_ns: i64 => i64 = col::START,
        end_ns: i64 => i64 = col::END,
        name_id: u32 => u32 = col::NAME,
        correlation_id: i64 => Id = col::CORR,
        api: CallApi => u32 = col::API,
    }
}

builder! {
    /// Row-wise builder for [`Trace::ranges`](super::Trace::ranges).
    RangesBuilder = RangesBuilderOf<i32>,
    /// One annotated range, for [`RangesBuilder::push`].
    RangeRow {
        pid: i64 => Id = col::PID,
        /// Thread ids stay 64-bit: Kineto writes pthread ids (2248185664 in a 2021 trace).
        tid: i64 => i64 = col::TID,
        start_ns: i64 => i64 = col::START,
        end_ns: i64 => i64 = col::END,
        name_id: u32 => u32 = col::NAME,
        domain_id: i64 => i64 = col::DOMAIN,
        kind: RangeKind => u32 = col::KIND,
    }
}

builder! {
    /// Row-wise builder for [`Trace::shapes`](super::Trace::shapes).
    ShapesBuilder = ShapesBuilderOf<i32>,
    /// One operator's input shapes, for [`ShapesBuilder::push`].
    ShapeRow {
        pid: i64 => Id = col::PID,
        /// Thread ids stay 64-bit: Kineto writes pthread ids (2248185664 in a 2021 trace).
        tid: i64 => i64 = col::TID,
        start_ns: i64 => i64 = col::START,
        end_ns: i64 => i64 = col::END,
        name_id: u32 => u32 = col::NAME,
        /// The interned compact JSON of the inputs' dimensions.
        dims_id: u32 => u32 = col::DIMS,
        /// The first dimension of the first input, -1 where it has none.
        first_dim: i64 => i64 = col::FIRST_DIM,
    }
}

/// A value held per name id instead of per row, built from the rows' (name, value)
/// pairs: what is a function of a row's name in every format (a kernel's short name, a
/// call's API family).
#[derive(Debug, Clone, Default)]
pub struct NameTable {
    /// Per name id: the value (`u32::MAX`: no row has that name).
    by_name: Vec<u32>,
    /// Rows whose value differs from the first row of the same name (none in any
    /// format's own files; a rewritten export could have them): they read the first.
    pub conflicts: u64,
}

impl NameTable {
    pub(crate) fn from_rows(name: &[u32], value: &[u32]) -> NameTable {
        let mut by_name: Vec<u32> = Vec::new();
        let mut conflicts = 0;
        for (&n, &v) in name.iter().zip(value) {
            let n = n as usize;
            if n >= by_name.len() {
                by_name.resize(n + 1, u32::MAX);
            }
            if by_name[n] == u32::MAX {
                by_name[n] = v;
            } else if by_name[n] != v {
                conflicts += 1;
            }
        }
        NameTable { by_name, conflicts }
    }

    /// The value of name `name_id`, `default` where no row has that name.
    #[inline]
    pub(crate) fn of_or(&self, name_id: u32, default: u32) -> u32 {
        match self.by_name.get(name_id as usize) {
            Some(&v) if v != u32::MAX => v,
            _ => default,
        }
    }

    /// The short name id of name `name_id` (a table of short names; the name itself
    /// where no op has it).
    #[inline]
    pub fn of(&self, name_id: u32) -> u32 {
        self.of_or(name_id, name_id)
    }
}

/// A kernel's launch geometry: grid and block dimensions (0 where unknown or not a kernel).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// The six geometry columns of [`OpsBuilder`].
#[derive(Debug, Default)]
pub struct GeometryCols {
    pub grid_x: Vec<u32>,
    pub grid_y: Vec<u32>,
    pub grid_z: Vec<u32>,
    pub block_x: Vec<u32>,
    pub block_y: Vec<u32>,
    pub block_z: Vec<u32>,
}

impl GeometryCols {
    fn columns(&mut self) -> [&mut Vec<u32>; 6] {
        [
            &mut self.grid_x,
            &mut self.grid_y,
            &mut self.grid_z,
            &mut self.block_x,
            &mut self.block_y,
            &mut self.block_z,
        ]
    }

    fn push(&mut self, l: Launch) {
        let [gx, gy, gz] = l.grid;
        let [bx, by, bz] = l.block;
        let values = [gx, gy, gz, bx, by, bz];
        for (c, v) in self.columns().into_iter().zip(values) {
            c.push(v);
        }
    }
}

impl Group for GeometryCols {
    fn push_unknown(&mut self) {
        self.push(Launch::default());
    }

    fn truncate(&mut self, n: usize) {
        for c in self.columns() {
            c.truncate(n);
        }
    }

    fn append(&mut self, other: &mut Self) {
        for (a, b) in self.columns().into_iter().zip(other.columns()) {
            a.append(b);
            drop(std::mem::take(b));
        }
    }

    fn pad(&mut self, n: usize) {
        for c in self.columns() {
            c.resize(c.len() + n, 0);
        }
    }

    fn into_columns(self, out: &mut Vec<Column>) {
        out.extend([
            owned::<UInt32Type>(col::GRID_X, self.grid_x),
            owned::<UInt32Type>(col::GRID_Y, self.grid_y),
            owned::<UInt32Type>(col::GRID_Z, self.grid_z),
            owned::<UInt32Type>(col::BLOCK_X, self.block_x),
            owned::<UInt32Type>(col::BLOCK_Y, self.block_y),
            owned::<UInt32Type>(col::BLOCK_Z, self.block_z),
        ]);
    }
}

impl<I: IdStore> CallsBuilderOf<I> {
    /// The calls frame without its API column, and the API family of each name id: a
    /// call's API is a function of its name (`cuda*` runtime, `cu*` driver entry points;
    /// the value kept is the one the file states), so it is held once per name (4 bytes
    /// × 27M calls at 16M kernels).
    pub fn finish_calls(self) -> Result<(DataFrame, NameTable)> {
        let apis = NameTable::from_rows(&self.name_id, &self.api);
        let mut df = self.finish()?;
        drop(df.drop_in_place(col::API)?);
        Ok((df, apis))
    }
}

impl<I: IdStore> OpsBuilderOf<I> {
    /// The ops frame without its short-name column, and the short name of each name id
    /// ([`NameTable`]): a kernel's short name is a function of its full name in every
    /// format (nsys derives it from the mangled name, the other readers from the full
    /// name), so it is held once per name, not per op (4 bytes × 20M ops at 16M kernels).
    pub fn finish_ops(self) -> Result<(DataFrame, NameTable)> {
        let shorts = NameTable::from_rows(&self.name_id, &self.short_id);
        let mut df = self.finish()?;
        drop(df.drop_in_place(col::SHORT)?);
        Ok((df, shorts))
    }

    /// Record launch geometry too (rows pushed without one get zeros).
    pub(crate) fn with_geometry(mut self) -> Self {
        self.geometry = Some(GeometryCols::default());
        self
    }

    /// Push a row with its launch geometry (kept only by a builder
    /// [`with_geometry`](Self::with_geometry)).
    pub(crate) fn push_launch(&mut self, r: OpRow, launch: Launch) {
        self.push_row(r);
        if let Some(g) = &mut self.geometry {
            g.push(launch);
        }
    }
}

#[cfg(test)]
mod tests;
