//! Borrowed, column-sliced views of the trace's frames: the hot loops read plain
//! slices, never polars' per-element access.

use polars::prelude::*;

use super::{col, Launch, Trace};
use crate::exit::{Error, Result};

/// Borrow a whole column as one contiguous slice (frames built here are single-chunk).
pub fn i64s<'a>(df: &'a DataFrame, name: &str) -> Result<&'a [i64]> {
    df.column(name)?
        .i64()?
        .cont_slice()
        .map_err(|e| Error::input(format!("internal frame error on {name}: {e}")))
}

/// As [`i64s`] for i32 columns (ids: device, stream, process, correlation, graph).
pub fn i32s<'a>(df: &'a DataFrame, name: &str) -> Result<&'a [i32]> {
    df.column(name)?
        .i32()?
        .cont_slice()
        .map_err(|e| Error::input(format!("internal frame error on {name}: {e}")))
}

/// As [`i64s`] for u32 columns (name ids).
pub fn u32s<'a>(df: &'a DataFrame, name: &str) -> Result<&'a [u32]> {
    df.column(name)?
        .u32()?
        .cont_slice()
        .map_err(|e| Error::input(format!("internal frame error on {name}: {e}")))
}

/// Borrowed, column-sliced view of the ops frame: the hot loops read these.
pub struct OpsView<'a> {
    pub device: &'a [i32],
    pub stream: &'a [i32],
    pub pid: &'a [i32],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub kind: &'a [u32],
    pub correlation_id: &'a [i32],
    pub graph_id: &'a [i32],
    short_names: &'a super::NameTable,
}

impl OpsView<'_> {
    /// Op `i`'s short name id (held per name, [`super::NameTable`]).
    #[inline]
    pub fn short_id(&self, i: usize) -> u32 {
        self.short_names.of(self.name_id[i])
    }
}

/// Borrowed view of the ops' launch geometry ([`Trace::geometry_view`]), row for row
/// with [`OpsView`]; 0 where unknown or not a kernel.
pub struct GeometryView<'a> {
    pub grid_x: &'a [u32],
    pub grid_y: &'a [u32],
    pub grid_z: &'a [u32],
    pub block_x: &'a [u32],
    pub block_y: &'a [u32],
    pub block_z: &'a [u32],
}

impl GeometryView<'_> {
    /// Row `i`'s geometry.
    pub fn launch(&self, i: usize) -> Launch {
        Launch {
            grid: [self.grid_x[i], self.grid_y[i], self.grid_z[i]],
            block: [self.block_x[i], self.block_y[i], self.block_z[i]],
        }
    }
}

/// Borrowed view of the shapes frame.
pub struct ShapesView<'a> {
    pub pid: &'a [i32],
    pub tid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub dims_id: &'a [u32],
    pub first_dim: &'a [i64],
}

/// Borrowed view of the calls frame.
pub struct CallsView<'a> {
    pub pid: &'a [i32],
    pub tid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub correlation_id: &'a [i32],
    apis: &'a super::NameTable,
    /// Per interned name: whether a call of that name launches GPU work
    /// ([`is_launch_call`](super::is_launch_call)).
    launch_name: Vec<bool>,
}

impl CallsView<'_> {
    /// Call `i`'s API family ([`CallApi`](super::CallApi) as u32; held per name).
    #[inline]
    pub fn api(&self, i: usize) -> u32 {
        self.apis
            .of_or(self.name_id[i], super::CallApi::Runtime as u32)
    }

    /// Whether call `i` is a kernel or graph launch (not a copy or sync).
    #[inline]
    pub fn is_launch(&self, i: usize) -> bool {
        self.launch_name
            .get(self.name_id[i] as usize)
            .copied()
            .unwrap_or(false)
    }
}

/// Borrowed view of the ranges frame.
pub struct RangesView<'a> {
    pub pid: &'a [i32],
    pub tid: &'a [i64],
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    pub name_id: &'a [u32],
    pub domain_id: &'a [i64],
    pub kind: &'a [u32],
}

impl Trace {
    pub fn ops_view(&self) -> Result<OpsView<'_>> {
        let d = &self.ops;
        Ok(OpsView {
            device: i32s(d, col::DEVICE)?,
            stream: i32s(d, col::STREAM)?,
            pid: i32s(d, col::PID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            kind: u32s(d, col::KIND)?,
            correlation_id: i32s(d, col::CORR)?,
            graph_id: i32s(d, col::GRAPH)?,
            short_names: &self.short_names,
        })
    }

    pub fn calls_view(&self) -> Result<CallsView<'_>> {
        let d = &self.calls;
        Ok(CallsView {
            pid: i32s(d, col::PID)?,
            tid: i64s(d, col::TID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            correlation_id: i32s(d, col::CORR)?,
            apis: &self.call_apis,
            launch_name: self
                .strings
                .iter()
                .map(|n| super::is_launch_call(n))
                .collect(),
        })
    }

    pub fn ranges_view(&self) -> Result<RangesView<'_>> {
        let d = &self.ranges;
        Ok(RangesView {
            pid: i32s(d, col::PID)?,
            tid: i64s(d, col::TID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            domain_id: i64s(d, col::DOMAIN)?,
            kind: u32s(d, col::KIND)?,
        })
    }

    /// The ops' launch geometry, parallel to [`Trace::ops_view`]; `None` when the trace
    /// was loaded without `LoadOptions::geometry`.
    pub fn geometry_view(&self) -> Result<Option<GeometryView<'_>>> {
        let d = &self.ops;
        if d.column(col::GRID_X).is_err() {
            return Ok(None);
        }
        Ok(Some(GeometryView {
            grid_x: u32s(d, col::GRID_X)?,
            grid_y: u32s(d, col::GRID_Y)?,
            grid_z: u32s(d, col::GRID_Z)?,
            block_x: u32s(d, col::BLOCK_X)?,
            block_y: u32s(d, col::BLOCK_Y)?,
            block_z: u32s(d, col::BLOCK_Z)?,
        }))
    }

    pub fn shapes_view(&self) -> Result<ShapesView<'_>> {
        let d = &self.shapes;
        Ok(ShapesView {
            pid: i32s(d, col::PID)?,
            tid: i64s(d, col::TID)?,
            start_ns: i64s(d, col::START)?,
            end_ns: i64s(d, col::END)?,
            name_id: u32s(d, col::NAME)?,
            dims_id: u32s(d, col::DIMS)?,
            first_dim: i64s(d, col::FIRST_DIM)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{OpKind, OpRow, OpsBuilder};
    use crate::wire::trace::{SourceFormat, TraceMeta};

    #[test]
    fn builders_make_single_chunk_frames() {
        let mut b = OpsBuilder::default();
        b.push(OpRow {
            device: 0,
            stream: 7,
            pid: 1,
            start_ns: 10,
            end_ns: 20,
            name_id: 0,
            short_id: 0,
            kind: OpKind::Kernel,
            correlation_id: 5,
            graph_id: -1,
            bytes: 0,
        });
        let mut t = Trace::empty(TraceMeta::new(SourceFormat::Nsys, "x")).unwrap();
        t.ops = b.finish().unwrap();
        let v = t.ops_view().unwrap();
        assert_eq!(v.start_ns, &[10]);
        assert_eq!(v.end_ns, &[20]);
        assert_eq!(t.op_devices().unwrap(), vec![0]);
    }
}
