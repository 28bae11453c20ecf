//! The tensor- and pipeline-parallel degrees a capture ran at, from what it records
//! (docs/method.md §3.3): Kineto's `distributedInfo` (world size and process groups,
//! read), else the rank count custom all-reduce kernels carry in their template (vLLM and
//! SGLang `cross_device_reduce_{1,2}stage<T, N>`, TensorRT-LLM
//! `{one,two}ShotAllReduceKernel<T, RANKS_PER_NODE>`), else the number of ranks in the
//! capture that run the same steps with all-reduces inside them. A world whose
//! collectives are data parallel (DDP's gradient all-reduces after the backward starts,
//! FSDP's all-gathers and reduce-scatters) is said so, and is TP 1
//! ([`super::training::data_parallel`]).

use std::collections::BTreeMap;

use crate::categories::families::{self, KernelFamily};
use crate::timing::steps::Found;
use crate::wire::attribution::{Basis, Sourced};
use crate::wire::trace::Distributed;

use super::nccl_ranges::Enclosing;

/// The TP degree the capture states or implies, with its evidence (the trace's
/// `distributedInfo` first, the kernels' own evidence after it); None when nothing says.
pub(crate) fn infer_tp(found: &Found, distributed: Option<&Distributed>) -> Option<Sourced<u32>> {
    let kernels = from_templates(found).or_else(|| from_ranks(found));
    // A world of several ranks is tensor parallel only if its steps all-reduce like TP
    // layers do; data-parallel training shares the same distributedInfo.
    let stated = distributed
        .and_then(|d| from_distributed(d).0)
        .filter(|t| t.value == 1 || tp_like(found));
    match (stated, kernels) {
        (Some(mut d), Some(k)) if k.value != d.value => {
            d.evidence
                .push_str(&format!("; but {} ({})", k.evidence, k.value));
            Some(d)
        }
        (Some(d), _) => Some(d),
        (None, k) => k,
    }
}

/// The PP degree the trace's `distributedInfo` implies, where it does.
pub(crate) fn infer_pp(distributed: Option<&Distributed>) -> Option<Sourced<u32>> {
    distributed.and_then(|d| from_distributed(d).1)
}

/// NCCL process groups of more than one rank: (size, ranks).
fn nccl_groups(d: &Distributed) -> Vec<(i64, &[i64])> {
    d.process_groups
        .iter()
        .filter(|g| {
            g.backend_config
                .as_deref()
                .is_some_and(|b| b.contains("nccl"))
        })
        .filter_map(|g| g.size.filter(|&n| n > 1).map(|n| (n, g.ranks.as_slice())))
        .collect()
}

/// (TP, PP) from `distributedInfo`: a world whose NCCL groups all span it is TP over the
/// whole world (read); smaller groups of consecutive ranks are TP groups and strided
/// ones PP groups, as vLLM and SGLang build them (inferred).
fn from_distributed(d: &Distributed) -> (Option<Sourced<u32>>, Option<Sourced<u32>>) {
    let Some(world) = d.world_size.filter(|n| (1..=1 << 16).contains(n)) else {
        return (None, None);
    };
    let groups = nccl_groups(d);
    let read = |n: i64, why: String| Sourced {
        value: n as u32,
        basis: Basis::Read,
        evidence: why,
    };
    if groups.iter().all(|&(n, _)| n == world) {
        let why = if world == 1 {
            "distributedInfo.world_size = 1".to_owned()
        } else {
            format!("distributedInfo.world_size = {world}, every NCCL process group spans all {world} ranks")
        };
        return (Some(read(world, why)), None);
    }
    let mine = d.rank.unwrap_or(0);
    let contiguous = |r: &[i64]| r.windows(2).all(|w| w[1] == w[0] + 1);
    let strided = |r: &[i64]| {
        r.len() > 1 && r.windows(2).all(|w| w[1] - w[0] == r[1] - r[0]) && r[1] - r[0] > 1
    };
    let sub: Vec<(i64, &[i64])> = groups
        .into_iter()
        .filter(|&(n, r)| n < world && r.contains(&mine))
        .collect();
    let inferred = |n: i64, why: String| Sourced {
        value: n as u32,
        basis: Basis::Inferred,
        evidence: why,
    };
    let tp = sub
        .iter()
        .filter(|(_, r)| contiguous(r))
        .map(|&(n, _)| n)
        .max()
        .map(|n| {
            inferred(
                n,
                format!("distributedInfo: an NCCL group of {n} consecutive ranks in a world of {world} (TP groups are consecutive ranks)"),
            )
        });
    let pp = sub
        .iter()
        .filter(|(_, r)| strided(r))
        .map(|&(n, _)| n)
        .max()
        .zip(tp.as_ref())
        .filter(|(n, t)| *n * i64::from(t.value) <= world)
        .map(|(n, _)| {
            inferred(
                n,
                format!("distributedInfo: an NCCL group of {n} strided ranks in a world of {world} (pipeline stages)"),
            )
        });
    (tp, pp)
}

/// Rank counts read off collective kernel templates, most frequent first.
fn from_templates(found: &Found) -> Option<Sourced<u32>> {
    let mut counts: BTreeMap<u32, (u64, String)> = BTreeMap::new();
    let mut seen: Vec<*const u8> = Vec::new();
    for k in found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .filter(|k| k.category.as_ref() == crate::categories::COMMUNICATION)
    {
        // Names are shared between steps: parse each distinct one once.
        let key = k.name.as_ptr();
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        if let Some(c) = families::captures(KernelFamily::AllReduceRanksInTemplate, &k.name) {
            if let Ok(n) = c[2].parse::<u32>() {
                let e = counts.entry(n).or_insert((0, c[1].to_owned()));
                e.0 += k.instances;
            }
        }
    }
    let (&n, (_, family)) = counts.iter().max_by_key(|(_, (c, _))| *c)?;
    let others = if counts.len() > 1 {
        format!(
            "; other counts in the trace: {}",
            counts
                .keys()
                .filter(|&&k| k != n)
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    Some(Sourced {
        value: n,
        basis: Basis::Inferred,
        evidence: format!("{family}<…, {n}> all-reduce kernels carry the rank count{others}"),
    })
}

/// Tensor-parallel layers all-reduce twice per layer: fewer all-reduces per step than
/// this is data parallelism (gradient buckets), not TP.
const MIN_ALL_REDUCES_PER_STEP: u64 = 8;

/// Every step with GPU work all-reduces at least [`MIN_ALL_REDUCES_PER_STEP`] times.
fn tp_like(found: &Found) -> bool {
    let all_reduces = |s: &crate::wire::steps::Step| -> u64 {
        s.all_kernels
            .iter()
            .filter(|k| {
                k.category.as_ref() == crate::categories::COMMUNICATION
                    && KernelFamily::CollectiveAllReduce.matches(&k.name)
            })
            .map(|k| k.instances)
            .sum()
    };
    let mut with_gpu = found
        .steps
        .iter()
        .filter(|s| s.wall_ns.is_some())
        .peekable();
    with_gpu.peek().is_some() && with_gpu.all(|s| all_reduces(s) >= MIN_ALL_REDUCES_PER_STEP)
}

/// Several ranks, each on its own device, with the same number of steps and all-reduce
/// kernels inside every one of them: tensor parallel across them.
fn from_ranks(found: &Found) -> Option<Sourced<u32>> {
    let with_gpu: Vec<usize> = found
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.device.is_some() && s.steps > 0)
        .map(|(i, _)| i)
        .collect();
    let mut devices: Vec<i64> = with_gpu
        .iter()
        .filter_map(|&i| found.series[i].device)
        .collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.len() < 2 || devices.len() != with_gpu.len() {
        return None;
    }
    let same_steps = with_gpu
        .windows(2)
        .all(|w| found.series[w[0]].steps == found.series[w[1]].steps);
    if !(same_steps && tp_like(found)) {
        return None;
    }
    let n = with_gpu.len() as u32;
    Some(Sourced {
        value: n,
        basis: Basis::Inferred,
        evidence: format!(
            "{n} ranks on {n} devices run the same {} steps, each with all-reduces inside",
            found.series[with_gpu[0]].steps
        ),
    })
}

/// What the steps' collectives are, by kind, for a TP no reading took: each kind with its
/// launches and what it is the sign of, so "TP 1" says what it is set beside. A kernel
/// launched inside a c10d `nccl:<op>` NVTX range is named by the range (an all-to-all runs
/// as send/recv kernels), the kernel's name otherwise. None when the steps run no
/// collective.
pub(crate) fn collectives_seen(found: &Found, nvtx: &Enclosing) -> Option<String> {
    let mut counts: Vec<(u64, &str, String)> = Vec::new();
    for k in found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .filter(|k| k.category.as_ref() == crate::categories::COMMUNICATION)
    {
        let kind_of = |name: &str| {
            COLLECTIVE_KINDS
                .iter()
                .find(|(f, _)| f.matches(name))
                .map(|(_, w)| *w)
        };
        let by_range = nvtx.of(&k.name).and_then(|(op, n, all)| {
            Some((kind_of(families::collective_range_op(op)?)?, op, n, all))
        });
        let (what, eg) = match by_range {
            Some((what, op, n, all)) => (
                what,
                format!(
                    "{}, launched inside the NVTX range {op}: {n} of its {all} recorded launches",
                    k.short_name
                ),
            ),
            None => (
                kind_of(&k.name).unwrap_or("collective(s) whose name does not say their kind"),
                k.short_name.to_string(),
            ),
        };
        match counts.iter_mut().find(|c| c.1 == what) {
            Some(c) => c.0 += k.instances,
            None => counts.push((k.instances, what, eg)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.0));
    let parts: Vec<String> = counts
        .iter()
        .map(|(n, what, eg)| format!("{n} {what} (e.g. {eg})"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Collective kinds by name, first match wins, with what each is the sign of.
const COLLECTIVE_KINDS: [(KernelFamily, &str); 5] = [
    (
        KernelFamily::CollectiveSendRecv,
        "point-to-point send/recv (pipeline stages, or an all-to-all built of sends and receives)",
    ),
    (
        KernelFamily::CollectiveAllToAll,
        "all-to-all (expert or sequence parallelism)",
    ),
    (
        KernelFamily::CollectiveSharded,
        "all-gather/reduce-scatter (sharded parameters: FSDP/ZeRO)",
    ),
    (KernelFamily::CollectiveAllReduce, "all-reduce"),
    (KernelFamily::CollectiveBroadcast, "broadcast"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::trace::ProcessGroup;

    fn group(ranks: &[i64]) -> ProcessGroup {
        ProcessGroup {
            name: "1".to_owned(),
            desc: None,
            backend_config: Some("cuda:nccl".to_owned()),
            size: Some(ranks.len() as i64),
            ranks: ranks.to_vec(),
        }
    }

    fn world(n: i64, groups: Vec<ProcessGroup>) -> Distributed {
        Distributed {
            backend: Some("nccl".to_owned()),
            rank: Some(0),
            world_size: Some(n),
            process_groups: groups,
            ..Distributed::default()
        }
    }

    #[test]
    fn the_world_is_read_as_tp_when_every_group_spans_it() {
        let (tp, pp) = from_distributed(&world(4, vec![group(&[0, 1, 2, 3])]));
        let tp = tp.unwrap();
        assert_eq!((tp.value, tp.basis), (4, Basis::Read));
        assert!(pp.is_none());
        let (tp, _) = from_distributed(&world(1, vec![group(&[0])]));
        assert_eq!(tp.unwrap().value, 1);
    }

    #[test]
    fn consecutive_subgroups_are_tp_and_strided_ones_pp() {
        // 8 ranks as TP 4 × PP 2: TP groups {0..3}, {4..7}; PP groups {0,4}, {1,5}, ….
        let d = world(
            8,
            vec![
                group(&[0, 1, 2, 3, 4, 5, 6, 7]),
                group(&[0, 1, 2, 3]),
                group(&[4, 5, 6, 7]),
                group(&[0, 4]),
                group(&[1, 5]),
            ],
        );
        let (tp, pp) = from_distributed(&d);
        let (tp, pp) = (tp.unwrap(), pp.unwrap());
        assert_eq!((tp.value, tp.basis), (4, Basis::Inferred));
        assert_eq!((pp.value, pp.basis), (2, Basis::Inferred));
        // No world size: nothing read.
        let mut d = d;
        d.world_size = None;
        assert!(from_distributed(&d).0.is_none());
    }
}
