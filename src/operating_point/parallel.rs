//! The tensor-parallel degree a capture ran at, from what it records (docs/method.md
//! §3.3): the rank count custom all-reduce kernels carry in their template (vLLM and
//! SGLang `cross_device_reduce_{1,2}stage<T, N>`, TensorRT-LLM
//! `{one,two}ShotAllReduceKernel<T, RANKS_PER_NODE>`), else the number of ranks in the
//! capture that run the same steps with collectives between them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::wire::attribution::{Basis, Sourced};
use crate::wire::steps::StepsReport;

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

/// The TP degree of the steps' collectives, with its evidence; None when nothing in the
/// capture says.
pub fn infer_tp(report: &StepsReport) -> Option<Sourced<u32>> {
    from_templates(report).or_else(|| from_ranks(report))
}

/// Rank counts read off collective kernel templates, most frequent first.
fn from_templates(report: &StepsReport) -> Option<Sourced<u32>> {
    let mut counts: BTreeMap<u32, (u64, String)> = BTreeMap::new();
    let mut seen: Vec<*const u8> = Vec::new();
    for k in report
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .filter(|k| k.category.as_ref() == "communication")
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

/// Several ranks, each on its own device, with the same number of steps and all-reduce
/// kernels inside every one of them: tensor parallel across them.
fn from_ranks(report: &StepsReport) -> Option<Sourced<u32>> {
    let with_gpu: Vec<usize> = report
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| s.device.is_some() && s.steps > 0)
        .map(|(i, _)| i)
        .collect();
    let mut devices: Vec<i64> = with_gpu
        .iter()
        .filter_map(|&i| report.series[i].device)
        .collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.len() < 2 || devices.len() != with_gpu.len() {
        return None;
    }
    let same_steps = with_gpu
        .windows(2)
        .all(|w| report.series[w[0]].steps == report.series[w[1]].steps);
    let all_reduces = |s: &crate::wire::steps::Step| -> u64 {
        s.all_kernels
            .iter()
            .filter(|k| k.category.as_ref() == "communication" && ALL_REDUCE.is_match(&k.name))
            .map(|k| k.instances)
            .sum()
    };
    let tp_like = report
        .steps
        .iter()
        .filter(|s| s.wall_ns.is_some())
        .all(|s| all_reduces(s) >= MIN_ALL_REDUCES_PER_STEP);
    if !(same_steps && tp_like) {
        return None;
    }
    let n = with_gpu.len() as u32;
    Some(Sourced {
        value: n,
        basis: Basis::Inferred,
        evidence: format!(
            "{n} ranks on {n} devices run the same {} steps, each with all-reduces inside",
            report.series[with_gpu[0]].steps
        ),
    })
}
