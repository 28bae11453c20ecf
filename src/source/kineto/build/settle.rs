//! What needs every file read: the launching process of each op, one numbering of
//! devices and processes across ranks (renumbered only where ranks collide), the
//! devices with their properties, and one `distributedInfo`.

use std::collections::HashMap;

use super::Collector;
use crate::source::kineto::header::DeviceProps;
use crate::source::kineto::ids::{collides, dec, renumber, DEVICE_STRIDE, PID_STRIDE};
use crate::trace::RangeKind;
use crate::wire::trace::{DeviceInfo, Distributed};

/// The largest world size read from a trace: `--tp`'s bound (`commands::numbers`).
const MAX_WORLD_SIZE: i64 = 4096;

impl Collector {
    /// One `distributedInfo` for the trace: that of the first file with GPU ops that
    /// has one, with the rank of every such file (docs/kineto-format.md §9). Files that
    /// disagree on the backend or world size are not one run: a warning says so.
    pub(super) fn distributed(&mut self) -> Option<Distributed> {
        let mut out: Option<Distributed> = None;
        for f in self.files.iter().filter(|f| f.has_ops()) {
            let Some(d) = &f.header.distributed else {
                continue;
            };
            // The same bounds as --tp: a world size outside them is not priced.
            let mut d = d.clone();
            if let Some(w) = d.world_size.filter(|w| !(1..=MAX_WORLD_SIZE).contains(w)) {
                let name = &self.slot_name[f.base_slot as usize];
                self.warnings.push(format!(
                    "{name}: distributedInfo.world_size {w} is outside 1..={MAX_WORLD_SIZE}; ignored (give --tp if the run was parallel)"
                ));
                d.world_size = None;
            }
            let d = &d;
            let Some(first) = &mut out else {
                out = Some(d.clone());
                continue;
            };
            first.ranks.extend(&d.ranks);
            if (&d.backend, d.world_size) != (&first.backend, first.world_size) {
                let name = &self.slot_name[f.base_slot as usize];
                self.warnings.push(format!(
                    "{name}: distributedInfo says backend {} world size {}, the first rank \
                     {} world size {}: these traces are not from one run",
                    d.backend.as_deref().unwrap_or("?"),
                    d.world_size.map_or("?".to_owned(), |w| w.to_string()),
                    first.backend.as_deref().unwrap_or("?"),
                    first.world_size.map_or("?".to_owned(), |w| w.to_string()),
                ));
            }
        }
        out
    }

    /// `ops.pid` = the process of the call with the same correlation id in the same rank
    /// (docs/kineto-format.md §5 rule 1); else the rank's busiest calling process; else -1.
    pub(super) fn fill_op_pids(&mut self) {
        let mut by_corr: HashMap<(u32, i64), i64> = HashMap::with_capacity(self.calls.pid.len());
        let mut counts: HashMap<i64, u64> = HashMap::new();
        for (&pid, &corr) in self.calls.pid.iter().zip(&self.calls.correlation_id) {
            if corr >= 0 {
                by_corr.entry((dec(pid).0, corr)).or_insert(pid);
            }
            *counts.entry(pid).or_insert(0) += 1;
        }
        let mut busiest: HashMap<u32, (u64, i64)> = HashMap::new();
        for (&pid, &n) in &counts {
            let e = busiest.entry(dec(pid).0).or_insert((0, -1));
            if n > e.0 || (n == e.0 && pid < e.1) {
                *e = (n, pid);
            }
        }
        for i in 0..self.ops.len() {
            let slot = dec(self.ops.device[i]).0;
            let corr = self.ops.correlation_id[i];
            self.ops.pid[i] = by_corr
                .get(&(slot, corr))
                .copied()
                .or_else(|| busiest.get(&slot).map(|b| b.1))
                .unwrap_or(-1);
        }
    }

    /// Slot → dense rank number over the slots that have events (unused slots: the base
    /// slot of a merged file, whose events all carry labels).
    pub(super) fn ranks_of_slots(&self) -> Vec<i64> {
        let mut used = vec![false; self.slot_file.len()];
        let all = self
            .ops
            .device
            .iter()
            .chain(&self.calls.pid)
            .chain(&self.ranges.pid)
            .chain(&self.shapes.pid)
            .chain(self.process_names.iter().map(|p| &p.0));
        for &v in all {
            if v >= 0 {
                used[dec(v).0 as usize] = true;
            }
        }
        let mut next = 0;
        used.iter()
            .map(|&u| {
                if u {
                    next += 1;
                    next - 1
                } else {
                    -1
                }
            })
            .collect()
    }

    pub(super) fn remap_devices(&mut self, ranks: &[i64]) -> impl Fn(i64) -> i64 {
        let mut ids: Vec<i64> = self.ops.device.clone();
        for (p, k) in self.ranges.pid.iter().zip(&self.ranges.kind) {
            if *k == RangeKind::GpuAnnotation as u32 {
                ids.push(*p);
            }
        }
        let clash = collides(ids);
        if clash {
            self.warnings.push(format!(
                "device ids repeat across ranks; renumbered as rank*{DEVICE_STRIDE}+device ({})",
                self.rank_legend(ranks)
            ));
        }
        let ranks = ranks.to_vec();
        move |v| renumber(v, clash.then_some(&ranks[..]), DEVICE_STRIDE)
    }

    pub(super) fn remap_pids(&mut self, ranks: &[i64]) -> impl Fn(i64) -> i64 {
        let mut ids: Vec<i64> = self.calls.pid.clone();
        ids.extend(&self.shapes.pid);
        ids.extend(self.process_names.iter().map(|p| p.0));
        for (p, k) in self.ranges.pid.iter().zip(&self.ranges.kind) {
            if *k != RangeKind::GpuAnnotation as u32 {
                ids.push(*p);
            }
        }
        let clash = collides(ids);
        if clash {
            self.warnings.push(format!(
                "process ids repeat across ranks; renumbered as rank*{PID_STRIDE}+pid ({})",
                self.rank_legend(ranks)
            ));
        }
        let ranks = ranks.to_vec();
        move |v| renumber(v, clash.then_some(&ranks[..]), PID_STRIDE)
    }

    fn rank_legend(&self, ranks: &[i64]) -> String {
        self.slot_name
            .iter()
            .zip(ranks)
            .filter(|(_, r)| **r >= 0)
            .map(|(n, r)| format!("rank {r} = {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Devices that ran ops, with `deviceProperties` of their file. Kineto records no
    /// memory bandwidth (neither clock nor bus width), so that stays `None`.
    pub(super) fn devices(&self, device_map: &impl Fn(i64) -> i64) -> Vec<DeviceInfo> {
        let mut used: Vec<i64> = self.ops.device.clone();
        used.sort_unstable();
        used.dedup();
        let mut out: Vec<DeviceInfo> = used
            .into_iter()
            .map(|v| {
                let (slot, raw) = dec(v);
                let props = &self.files[self.slot_file[slot as usize]].header.devices;
                let p = pick_props(props, raw);
                DeviceInfo {
                    id: device_map(v),
                    name: p.and_then(|p| p.name.clone()),
                    memory_bandwidth_bytes_per_s: None,
                    sm_count: p.and_then(|p| p.sm_count),
                    total_memory_bytes: p.and_then(|p| p.total_memory_bytes),
                }
            })
            .collect();
        out.sort_by_key(|d| d.id);
        out
    }
}

/// The `deviceProperties` entry for a device: the one with that `id`; failing that (ROCm
/// numbers GPU rows by agent, e.g. pid 9 with one entry `id 0`, docs/kineto-format.md §4) the entries'
/// common values when they all describe the same GPU model.
fn pick_props(props: &[DeviceProps], device: i64) -> Option<&DeviceProps> {
    if let Some(p) = props.iter().find(|p| p.id == Some(device)) {
        return Some(p);
    }
    let first = props.first()?;
    props
        .iter()
        .all(|p| {
            p.name == first.name
                && p.sm_count == first.sm_count
                && p.total_memory_bytes == first.total_memory_bytes
        })
        .then_some(first)
}
