//! Row-wise builders of the trace's frames: sources push one row at a time, then
//! `finish` hands each column's vector to polars without a copy. One macro writes the
//! four builders (ops, calls, ranges, shapes) from their column lists, so a column is
//! named once: in its builder, its row and its frame.

use polars::prelude::*;

use super::{col, CallApi, OpKind, RangeKind};
use crate::exit::Result;

/// A row field's value as its column stores it (enums and flags as u32).
impl From<OpKind> for u32 {
    fn from(k: OpKind) -> u32 {
        k as u32
    }
}

impl From<CallApi> for u32 {
    fn from(k: CallApi) -> u32 {
        k as u32
    }
}

impl From<RangeKind> for u32 {
    fn from(k: RangeKind) -> u32 {
        k as u32
    }
}

/// A column's native type, and how its vector becomes a polars column.
trait Native: Sized {
    fn column(name: &str, v: Vec<Self>) -> Column;
}

impl Native for i64 {
    fn column(name: &str, v: Vec<i64>) -> Column {
        owned::<Int64Type>(name, v)
    }
}

impl Native for u32 {
    fn column(name: &str, v: Vec<u32>) -> Column {
        owned::<UInt32Type>(name, v)
    }
}

/// A column that takes over a builder's vector (`Column::new` from a `Vec` copies it: a
/// second 4M-row buffer per column, page faults and all, at the end of every load).
fn owned<T: PolarsNumericType>(name: &str, mut v: Vec<T::Native>) -> Column {
    // Return the growth slack (an in-place shrink for large blocks).
    v.shrink_to_fit();
    ChunkedArray::<T>::from_vec(name.into(), v).into_column()
}

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

/// `$builder` (a vector per column) and `$row` (one row, for `push`), with push, len,
/// finish, and the whole-row operations truncate and append. Every builder has a
/// `start_ns` column, which gives its length. `optional` names a [`Group`] of columns
/// the builder carries only when a load asks for it.
macro_rules! builder {
    (
        $(#[$bdoc:meta])*
        $builder:ident,
        $(#[$rdoc:meta])*
        $row:ident {
            $($(#[$fdoc:meta])* $field:ident: $rty:ty => $cty:ty = $colname:expr,)+
        }
        $(optional $(#[$odoc:meta])* $opt:ident: $oty:ty)?
    ) => {
        $(#[$bdoc])*
        #[derive(Debug, Default)]
        pub struct $builder {
            $(pub $field: Vec<$cty>,)+
            $($(#[$odoc])* pub $opt: Option<$oty>,)?
        }

        $(#[$rdoc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $row {
            $($(#[$fdoc])* pub $field: $rty,)+
        }

        impl $builder {
            /// Push a row (unknown values in an optional group).
            pub fn push(&mut self, r: $row) {
                self.push_row(r);
                $(if let Some(g) = &mut self.$opt {
                    g.push_unknown();
                })?
            }

            fn push_row(&mut self, r: $row) {
                $(self.$field.push(<$cty>::from(r.$field));)+
            }

            pub fn len(&self) -> usize {
                self.start_ns.len()
            }

            pub fn is_empty(&self) -> bool {
                self.start_ns.is_empty()
            }

            pub fn finish(self) -> Result<DataFrame> {
                #[allow(unused_mut)]
                let mut columns = vec![$(<$cty as Native>::column($colname, self.$field)),+];
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
                    std::mem::swap(self, other);
                    return;
                }
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
        }
    };
}

builder! {
    /// Row-wise builder for [`Trace::ops`](super::Trace::ops).
    OpsBuilder,
    /// One GPU op, for [`OpsBuilder::push`].
    OpRow {
        device: i64 => i64 = col::DEVICE,
        stream: i64 => i64 = col::STREAM,
        pid: i64 => i64 = col::PID,
        start_ns: i64 => i64 = col::START,
        end_ns: i64 => i64 = col::END,
        name_id: u32 => u32 = col::NAME,
        short_id: u32 => u32 = col::SHORT,
        kind: OpKind => u32 = col::KIND,
        correlation_id: i64 => i64 = col::CORR,
        graph_node_id: i64 => i64 = col::GRAPH_NODE,
        graph_id: i64 => i64 = col::GRAPH,
        bytes: i64 => i64 = col::BYTES,
    }
    optional
    /// Launch geometry, one entry per row, only when asked for
    /// ([`OpsBuilder::with_geometry`]): a builder without it allocates nothing for it.
    geometry: GeometryCols
}

builder! {
    /// Row-wise builder for [`Trace::calls`](super::Trace::calls).
    CallsBuilder,
    /// One host API call, for [`CallsBuilder::push`].
    CallRow {
        pid: i64 => i64 = col::PID,
        tid: i64 => i64 = col::TID,
        start_ns: i64 => i64 = col::START,
        end_ns: i64 => i64 = col::END,
        name_id: u32 => u32 = col::NAME,
        correlation_id: i64 => i64 = col::CORR,
        api: CallApi => u32 = col::API,
        /// A kernel or graph launch (not a copy or sync).
        is_launch: bool => u32 = col::IS_LAUNCH,
    }
}

builder! {
    /// Row-wise builder for [`Trace::ranges`](super::Trace::ranges).
    RangesBuilder,
    /// One annotated range, for [`RangesBuilder::push`].
    RangeRow {
        pid: i64 => i64 = col::PID,
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
    ShapesBuilder,
    /// One operator's input shapes, for [`ShapesBuilder::push`].
    ShapeRow {
        pid: i64 => i64 = col::PID,
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

impl OpsBuilder {
    /// Record launch geometry too (rows pushed without one get zeros).
    pub fn with_geometry(mut self) -> Self {
        self.geometry = Some(GeometryCols::default());
        self
    }

    /// Push a row with its launch geometry (kept only by a builder
    /// [`with_geometry`](Self::with_geometry)).
    pub fn push_launch(&mut self, r: OpRow, launch: Launch) {
        self.push_row(r);
        if let Some(g) = &mut self.geometry {
            g.push(launch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(start_ns: i64) -> OpRow {
        OpRow {
            device: 0,
            stream: 7,
            pid: 1,
            start_ns,
            end_ns: start_ns + 10,
            name_id: 0,
            short_id: 0,
            kind: OpKind::Kernel,
            correlation_id: 5,
            graph_node_id: -1,
            graph_id: -1,
            bytes: 0,
        }
    }

    #[test]
    fn parts_with_and_without_geometry_stay_row_for_row() {
        let l = Launch {
            grid: [4, 2, 1],
            block: [128, 1, 1],
        };
        let mut a = OpsBuilder::default().with_geometry();
        a.push_launch(op(0), l);
        a.push(op(10));
        let mut b = OpsBuilder::default();
        b.push(op(20));
        b.push_launch(op(30), l); // no geometry kept here
        a.append(&mut b);
        assert!(b.is_empty());
        a.truncate(3);
        let g = a.geometry.as_ref().unwrap();
        assert_eq!(g.grid_x, vec![4, 0, 0]);
        assert_eq!(g.block_x, vec![128, 0, 0]);
        let df = a.finish().unwrap();
        assert_eq!((df.height(), df.width()), (3, 18));
        assert_eq!(
            df.column(col::START)
                .unwrap()
                .i64()
                .unwrap()
                .cont_slice()
                .unwrap(),
            &[0, 10, 20]
        );
    }
}
