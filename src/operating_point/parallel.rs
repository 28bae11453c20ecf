//! The tensor- and pipeline-parallel degrees a capture ran at, from what it records
//! (docs/method.md §3.3): Kineto's `distributedInfo` (world size and process groups,
//! read), else the rank count custom all-reduce kernels carry in their template (vLLM and
//! SGLang `cross_device_reduce_{1,2}stage<T, N>`, TensorRT-LLM
//! `{one,two}ShotAllReduceKernel<T, RANKS_PER_NODE>`), else the number of ranks in the
//! capture that run the same steps with all-reduces inside them. A world whose
//! collectives are data parallel (DDP's gradient all-reduces after the backward starts,
//! FSDP's all-gathers and reduce-scatters) is said so, and is TP 1 ([`data_parallel`]).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::exit::Result;
use crate::timing::steps::Found;
use crate::trace::{OpKind, Trace};
use crate::wire::attribution::{Basis, Sourced};
use crate::wire::trace::Distributed;

/// Custom all-reduce kernels whose second template argument is the rank count
/// (`template <typename T, int ngpus>` in vLLM `csrc/custom_all_reduce.cuh`;
/// `template <typename T, int RANKS_PER_NODE, …>` in TensorRT-LLM
/// `customAllReduceKernels.cu`).
static RANKS_IN_TEMPLATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(cross_device_reduce_[12]stage|(?:one|two)ShotAllReduceKernel)<[^,<>]+,\s*(\d+)\s*[,>]",
    )
    .expect("static pattern")
});

/// The TP degree the capture states or implies, with its evidence (the trace's
/// `distributedInfo` first, the kernels' own evidence after it); None when nothing says.
pub fn infer_tp(found: &Found, distributed: Option<&Distributed>) -> Option<Sourced<u32>> {
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
pub fn infer_pp(distributed: Option<&Distributed>) -> Option<Sourced<u32>> {
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
        if let Some(c) = RANKS_IN_TEMPLATE.captures(&k.name) {
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

/// All-reduce kernels (not send/recv, which pipeline parallelism runs).
static ALL_REDUCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)all_?reduce|cross_device_reduce|allreduce").expect("static pattern")
});

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
                    && ALL_REDUCE.is_match(&k.name)
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

/// The collectives data parallelism runs: all-reduce (DDP's gradient buckets), all-gather
/// and reduce-scatter (FSDP's per-unit parameter gathers and gradient reductions), and
/// RCCL's `ncclDevKernel_Generic`, which runs them all under one name. Broadcasts (DDP's
/// buffers before the forward) are not counted.
static COLLECTIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)all_?reduce|allreduce|all_?gather|allgather|reduce_?scatter|reducescatter|ncclDevKernel_Generic")
        .expect("static pattern")
});

/// FSDP's collectives (sharded parameters gathered, gradients reduce-scattered).
static SHARDED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)all_?gather|allgather|reduce_?scatter|reducescatter").expect("static pattern")
});

/// Kernels only a backward pass runs (autograd's `…_backward_…`, cuDNN/MIOpen `wgrad`/`dgrad`,
/// `bwd` GEMMs and convolutions).
static BACKWARD_KERNEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)backward|bwd|wgrad|dgrad").expect("static pattern"));

/// What one step's collectives and backward kernels show.
#[derive(Debug, Default)]
struct StepCollectives {
    collectives: usize,
    after_backward: usize,
    sharded: usize,
    /// Launched from a host thread other than the step's (DDP's reducer hooks run on the
    /// autograd engine's thread during backward).
    other_thread: usize,
}

/// The host thread that launched each of `wanted` (pid, correlation id), where a launch
/// call with that id is in the trace.
fn launch_threads(
    trace: &Trace,
    wanted: &std::collections::HashSet<(i64, i32)>,
) -> Result<std::collections::HashMap<(i64, i32), i64>> {
    let c = trace.calls_view()?;
    let mut out = std::collections::HashMap::new();
    for i in 0..c.start_ns.len() {
        let key = (i64::from(c.pid[i]), c.correlation_id[i]);
        if c.correlation_id[i] >= 0 && wanted.contains(&key) {
            out.insert(key, c.tid[i]);
        }
    }
    Ok(out)
}

/// For a world of several ranks that no TP reading took: TP 1, inferred, where the steps'
/// collectives are those of data parallelism (every step with collectives runs a backward
/// pass; FSDP where they include all-gathers or reduce-scatters, DDP where they are
/// all-reduces that all start after the step's first backward kernel). The evidence names
/// DP/FSDP and the world size, which per-GPU bytes are not divided by.
pub fn data_parallel(
    trace: &Trace,
    found: &Found,
    distributed: Option<&Distributed>,
) -> Result<Option<Sourced<u32>>> {
    let Some(world) = distributed
        .and_then(|d| d.world_size)
        .filter(|&n| (2..=1 << 16).contains(&n))
    else {
        return Ok(None);
    };
    // 0: neither, 1: backward kernel, 2: collective, 3: sharded collective.
    let class: Vec<u8> = trace
        .strings
        .iter()
        .map(|n| {
            if SHARDED.is_match(n) {
                3
            } else if COLLECTIVE.is_match(n) {
                2
            } else {
                u8::from(BACKWARD_KERNEL.is_match(n))
            }
        })
        .collect();
    let o = trace.ops_view()?;
    let mut rows: Vec<(i64, i64, i64, u8, i32)> = (0..o.start_ns.len())
        .filter(|&i| OpKind::from_u32(o.kind[i]) == OpKind::Kernel)
        .filter_map(|i| {
            let c = *class.get(o.name_id[i] as usize)?;
            (c > 0).then_some((
                i64::from(o.device[i]),
                o.start_ns[i],
                i64::from(o.pid[i]),
                c,
                o.correlation_id[i],
            ))
        })
        .collect();
    rows.sort_unstable();
    let wanted: std::collections::HashSet<(i64, i32)> = rows
        .iter()
        .filter(|r| r.3 >= 2 && r.4 >= 0)
        .map(|r| (r.2, r.4))
        .collect();
    let threads = launch_threads(trace, &wanted)?;
    let mut per_step: Vec<StepCollectives> = Vec::new();
    for s in &found.steps {
        let (Some(dev), Some(gs), Some(ge)) = (s.device, s.gpu_start_ns, s.gpu_end_ns) else {
            continue;
        };
        let lo = rows.partition_point(|r| (r.0, r.1) < (dev, gs));
        let hi = rows.partition_point(|r| (r.0, r.1) <= (dev, ge));
        let mine = rows[lo..hi.max(lo)].iter().filter(|r| r.2 == s.pid);
        let first_backward = mine.clone().filter(|r| r.3 == 1).map(|r| r.1).min();
        let mut c = StepCollectives::default();
        for r in mine.filter(|r| r.3 >= 2) {
            c.collectives += 1;
            c.sharded += usize::from(r.3 == 3);
            c.after_backward += usize::from(first_backward.is_some_and(|b| r.1 >= b));
            let launcher = threads.get(&(r.2, r.4));
            c.other_thread += usize::from(
                s.tid
                    .zip(launcher)
                    .is_some_and(|(step_tid, &t)| t != step_tid),
            );
        }
        if c.collectives > 0 {
            if first_backward.is_none() {
                // Collectives in a step with no backward pass: not a training step's.
                return Ok(None);
            }
            per_step.push(c);
        }
    }
    if per_step.is_empty() {
        return Ok(None);
    }
    let total: usize = per_step.iter().map(|c| c.collectives).sum();
    let steps = per_step.len();
    let sharded: usize = per_step.iter().map(|c| c.sharded).sum();
    let name = found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .find(|k| COLLECTIVE.is_match(&k.name))
        .map(|k| k.short_name.to_string())
        .unwrap_or_default();
    let why = if sharded > 0 {
        format!(
            "FSDP {world}: {sharded} of {total} collectives in {steps} training step(s) are all-gathers or reduce-scatters (sharded parameters and gradients, e.g. {name})"
        )
    } else if per_step.iter().all(|c| c.after_backward == c.collectives) {
        let other: usize = per_step.iter().map(|c| c.other_thread).sum();
        let thread = if other == total {
            ", each launched from a host thread other than the step's (the autograd engine's)"
        } else {
            ""
        };
        format!(
            "DP {world} (DDP): {total} all-reduce(s) in {steps} training step(s) (e.g. {name}), every one after the step's first backward kernel{thread}: gradient buckets"
        )
    } else if per_step.iter().all(|c| c.other_thread == c.collectives) {
        format!(
            "DP {world} (DDP): {total} all-reduce(s) in {steps} training step(s) (e.g. {name}), every one launched from a host thread other than the step's (the autograd engine's, as DDP's gradient hooks are) during a backward pass"
        )
    } else {
        return Ok(None);
    };
    Ok(Some(Sourced {
        value: 1,
        basis: Basis::Inferred,
        evidence: format!(
            "distributedInfo.world_size = {world}, but the ranks are data parallel, not tensor parallel: {why}; per-GPU bytes are not divided by the {world} ranks"
        ),
    }))
}

/// What the steps' collectives are, by kind, for a TP no reading took: each kind with its
/// launches and what it is the sign of, so "TP 1" says what it is set beside. None when
/// the steps run no collective.
pub fn collectives_seen(found: &Found) -> Option<String> {
    let kinds: &[(Regex, &str)] = &COLLECTIVE_KINDS;
    let mut counts: Vec<(u64, &str, String)> = Vec::new();
    for k in found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .filter(|k| k.category.as_ref() == crate::categories::COMMUNICATION)
    {
        let what = kinds.iter().find(|(re, _)| re.is_match(&k.name)).map_or(
            "collective(s) whose name does not say their kind",
            |(_, w)| *w,
        );
        match counts.iter_mut().find(|c| c.1 == what) {
            Some(c) => c.0 += k.instances,
            None => counts.push((k.instances, what, k.short_name.to_string())),
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
static COLLECTIVE_KINDS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    const KINDS: [(&str, &str); 5] = [
        (
            r"(?i)send_?recv|sendrecv|\bsend\b|\brecv\b",
            "point-to-point send/recv (pipeline stages, or an all-to-all built of sends and receives)",
        ),
        (
            r"(?i)all_?to_?all|alltoall",
            "all-to-all (expert or sequence parallelism)",
        ),
        (
            r"(?i)all_?gather|allgather|reduce_?scatter|reducescatter",
            "all-gather/reduce-scatter (sharded parameters: FSDP/ZeRO)",
        ),
        (r"(?i)all_?reduce|allreduce|cross_device_reduce", "all-reduce"),
        (r"(?i)broadcast", "broadcast"),
    ];
    KINDS
        .iter()
        .map(|(re, what)| (Regex::new(re).expect("static pattern"), *what))
        .collect()
});

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
