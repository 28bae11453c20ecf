//! A step's ops measured on the GPU: busy time (the sweep's Σ exclusive, the union), its
//! window, and one row per op name with its category. Names and categories are shared
//! (`Arc<str>`) across steps, looked up once per name.

use std::collections::HashMap;
use std::sync::Arc;

use crate::categories::{Categorizer, COMMUNICATION};
use crate::timing::labels::display_name;
use crate::timing::overlap::exclusive_in_order;
use crate::trace::OpKind;

use super::index::{union_ns, Index};
use crate::wire::steps::StepKernel;

/// GPU-side measurements of one set of ops (all empty for no ops).
#[derive(Default)]
pub struct Measured {
    pub device: Option<i64>,
    pub gpu_start: Option<i64>,
    pub gpu_end: Option<i64>,
    pub busy: i64,
    pub kernels: u64,
    pub graph_replays: u64,
    pub all_kernels: Vec<StepKernel>,
    /// Time in which only communication ops run: `None` without any.
    pub exposed_comm: Option<i64>,
}

/// Measures sets of ops, keeping each name's shared strings and category.
pub(crate) struct Measurer<'i, 'a> {
    ix: &'i Index<'a>,
    cats: &'i Categorizer,
    categories: HashMap<u32, Arc<str>>,
    names: HashMap<u32, (Arc<str>, Arc<str>)>,
}

impl<'i, 'a> Measurer<'i, 'a> {
    pub fn new(ix: &'i Index<'a>, cats: &'i Categorizer) -> Self {
        Measurer {
            ix,
            cats,
            categories: HashMap::new(),
            names: HashMap::new(),
        }
    }

    /// Busy, window, counts and per-name rows of `ops` (sorted here into sweep order).
    pub fn measure(&mut self, ops: &mut [u32]) -> Measured {
        let ix = self.ix;
        let o = &ix.ops;
        if ops.is_empty() {
            return Measured::default();
        }
        ix.sort_ops(ops);
        let starts: Vec<i64> = ops.iter().map(|&i| o.start_ns[i as usize]).collect();
        let ends: Vec<i64> = ops.iter().map(|&i| o.end_ns[i as usize]).collect();
        let excl = exclusive_in_order(&starts, &ends);
        let busy = excl.iter().sum();
        let mut per_name: Vec<(u32, u32, i64, i64)> = ops
            .iter()
            .zip(&excl)
            .map(|(&i, &x)| {
                let i = i as usize;
                (o.name_id[i], o.short_id(i), o.end_ns[i] - o.start_ns[i], x)
            })
            .collect();
        per_name.sort_unstable_by_key(|r| r.0);
        let mut all_kernels: Vec<StepKernel> = Vec::new();
        // Name ids of communication ops, ascending (per_name is sorted by id).
        let mut comm: Vec<u32> = Vec::new();
        let mut k = 0;
        while k < per_name.len() {
            let id = per_name[k].0;
            let (mut n, mut total, mut ex) = (0u64, 0i64, 0i64);
            let short = per_name[k].1;
            while k < per_name.len() && per_name[k].0 == id {
                n += 1;
                total += per_name[k].2;
                ex += per_name[k].3;
                k += 1;
            }
            let (name, short_name) = self
                .names
                .entry(id)
                .or_insert_with(|| {
                    let name = ix.trace.name(id);
                    (
                        Arc::from(name),
                        Arc::from(display_name(ix.trace.name(short), name)),
                    )
                })
                .clone();
            let category = self
                .categories
                .entry(id)
                .or_insert_with(|| Arc::from(self.cats.categorize(&name)))
                .clone();
            if &*category == COMMUNICATION {
                comm.push(id);
            }
            all_kernels.push(StepKernel {
                name,
                short_name,
                category,
                instances: n,
                total_ns: total,
                exclusive_ns: ex,
            });
        }
        let exposed_comm = exposed_comm(ix, ops, &comm, busy);
        all_kernels.sort_by(|a, b| {
            b.exclusive_ns
                .cmp(&a.exclusive_ns)
                .then_with(|| a.name.cmp(&b.name))
        });
        let count = |k: OpKind| {
            ops.iter()
                .filter(|&&i| o.kind[i as usize] == k as u32)
                .count() as u64
        };
        Measured {
            device: Some(i64::from(o.device[ops[0] as usize])),
            gpu_start: starts.iter().min().copied(),
            gpu_end: ends.iter().max().copied(),
            busy,
            kernels: count(OpKind::Kernel),
            graph_replays: count(OpKind::Graph),
            all_kernels,
            exposed_comm,
        }
    }
}

/// Communication time no other op hides: busy minus the union of the ops whose name is
/// not in `comm` (sorted name ids of communication ops). `None` when no op is
/// communication, so a metric over it exists only for steps that communicate.
fn exposed_comm(ix: &Index<'_>, ops: &[u32], comm: &[u32], busy: i64) -> Option<i64> {
    if comm.is_empty() {
        return None;
    }
    let names = &ix.ops.name_id;
    let mut rest: Vec<u32> = ops
        .iter()
        .copied()
        .filter(|&i| comm.binary_search(&names[i as usize]).is_err())
        .collect();
    Some(busy - union_ns(&ix.ops, &mut rest))
}
