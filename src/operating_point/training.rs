//! Data parallelism read from what a training rank does (docs/method.md §3.3): DDP's
//! gradient all-reduces during the backward pass (from the autograd engine's thread), its
//! parameter and buffer broadcasts before the forward, and FSDP's all-gathers and
//! reduce-scatters of shards. A world of several ranks that does this is TP 1, inferred.

use std::collections::{HashMap, HashSet};

use crate::categories::families::KernelFamily;
use crate::categories::{builtin, COMMUNICATION};
use crate::exit::Result;
use crate::timing::steps::Found;
use crate::trace::{OpKind, Trace};
use crate::wire::attribution::{Basis, Sourced};
use crate::wire::trace::Distributed;

/// The collectives data parallelism runs: all-reduce (DDP's gradient buckets), all-gather
/// and reduce-scatter (FSDP's per-unit parameter gathers and gradient reductions), and
/// RCCL's `ncclDevKernel_Generic`, which runs them all under one name. A kernel is one only
/// where the built-in categories call it a collective (an inductor kernel named after the
/// `all_reduce` it fuses is elementwise, not a collective).
fn is_gradient_collective(name: &str) -> bool {
    is_communication(name) && runs_data_parallel(name)
}

/// Whether the built-in categories call `name` communication (the one family test first:
/// no other name can be, and most names are not).
fn is_communication(name: &str) -> bool {
    KernelFamily::Collective.matches(name) && builtin(name) == COMMUNICATION
}

fn runs_data_parallel(name: &str) -> bool {
    KernelFamily::CollectiveAllReduce.matches(name)
        || KernelFamily::CollectiveSharded.matches(name)
        || KernelFamily::CollectiveGeneric.matches(name)
}

/// A kernel name's row class: FSDP's collectives (sharded parameters gathered, gradients
/// reduce-scattered), the other data-parallel collectives, the other communication
/// kernels (broadcasts, send/recv, all-to-all: neither compute nor counted), backward
/// kernels, and the rest.
fn row_class(name: &str) -> u8 {
    let collective = is_communication(name);
    if collective && KernelFamily::CollectiveSharded.matches(name) {
        SHARD
    } else if collective && runs_data_parallel(name) {
        GRADIENT
    } else if collective || KernelFamily::CollectiveBroadcast.matches(name) {
        OTHER
    } else if KernelFamily::Backward.matches(name) {
        BACKWARD
    } else {
        COMPUTE
    }
}

/// DDP broadcasts its parameters and buffers before the forward runs: collectives from the
/// step's own thread that come within this fraction of the kernels before the backward
/// are that sync. Tensor parallelism's forward all-reduces follow every layer, so they
/// run through the whole forward and some fall after it.
const LEADING_FRACTION: f64 = 0.1;

// Row classes, by kernel name.
const COMPUTE: u8 = 0;
const BACKWARD: u8 = 1;
const GRADIENT: u8 = 2;
const SHARD: u8 = 3;
const OTHER: u8 = 4;

/// What one step's collectives and backward kernels show.
#[derive(Debug, Default)]
struct StepCollectives {
    /// Collectives besides the leading sync.
    collectives: usize,
    after_backward: usize,
    sharded: usize,
    /// Launched from a host thread other than the step's (DDP's reducer hooks run on the
    /// autograd engine's thread during backward).
    other_thread: usize,
    /// Collectives from the step's thread before the forward (DDP's broadcasts).
    leading: usize,
    /// Kernels before the step's first backward kernel.
    forward_kernels: usize,
}

/// The host thread that launched each of `wanted` (pid, correlation id), where a launch
/// call with that id is in the trace.
fn launch_threads(trace: &Trace, wanted: &HashSet<(i64, i32)>) -> Result<HashMap<(i64, i32), i64>> {
    let c = trace.calls_view()?;
    let mut out = HashMap::new();
    for i in 0..c.start_ns.len() {
        let key = (i64::from(c.pid[i]), c.correlation_id[i]);
        if c.correlation_id[i] >= 0 && wanted.contains(&key) {
            out.insert(key, c.tid[i]);
        }
    }
    Ok(out)
}

/// A kernel row: (device, start, pid, class, correlation id).
type Row = (i64, i64, i64, u8, i32);

/// One step's collectives, against its backward kernels and launching threads.
fn step_collectives(
    rows: &[Row],
    threads: &HashMap<(i64, i32), i64>,
    step_tid: Option<i64>,
) -> StepCollectives {
    let first_backward = rows.iter().filter(|r| r.3 == BACKWARD).map(|r| r.1).min();
    let mut c = StepCollectives::default();
    let Some(fb) = first_backward else {
        c.collectives = rows
            .iter()
            .filter(|r| r.3 == GRADIENT || r.3 == SHARD)
            .count();
        return c;
    };
    let forward: Vec<&Row> = rows.iter().filter(|r| r.1 < fb).collect();
    c.forward_kernels = forward.len();
    let leading_limit = (forward.len() as f64 * LEADING_FRACTION).ceil() as usize;
    let from_other = |r: &Row| {
        let launcher = threads.get(&(r.2, r.4));
        step_tid
            .zip(launcher)
            .is_some_and(|(step_tid, &t)| t != step_tid)
    };
    for (i, r) in rows.iter().enumerate() {
        if r.3 != GRADIENT && r.3 != SHARD {
            continue;
        }
        let other = from_other(r);
        if r.3 == GRADIENT && r.1 < fb && !other && i < leading_limit {
            c.leading += 1;
            continue;
        }
        c.collectives += 1;
        c.sharded += usize::from(r.3 == SHARD);
        c.after_backward += usize::from(r.1 >= fb);
        c.other_thread += usize::from(other);
    }
    c
}

/// For a world of several ranks that no TP reading took: TP 1, inferred, where the steps'
/// collectives are those of data parallelism (every step with collectives runs a backward
/// pass; FSDP where they include all-gathers or reduce-scatters, DDP where they are
/// all-reduces that all start after the step's first backward kernel or are launched from
/// the autograd thread, besides a parameter sync from the step's thread before the
/// forward). The evidence names DP/FSDP and the world size, which per-GPU bytes are not
/// divided by.
pub(crate) fn data_parallel(
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
    let class: Vec<u8> = trace.strings.iter().map(|n| row_class(n)).collect();
    let o = trace.ops_view()?;
    let mut rows: Vec<Row> = (0..o.start_ns.len())
        .filter(|&i| OpKind::from_u32(o.kind[i]) == OpKind::Kernel)
        .filter_map(|i| {
            let c = *class.get(o.name_id[i] as usize)?;
            (c != OTHER).then_some((
                i64::from(o.device[i]),
                o.start_ns[i],
                i64::from(o.pid[i]),
                c,
                o.correlation_id[i],
            ))
        })
        .collect();
    rows.sort_unstable();
    let wanted: HashSet<(i64, i32)> = rows
        .iter()
        .filter(|r| (r.3 == GRADIENT || r.3 == SHARD) && r.4 >= 0)
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
        let mine: Vec<Row> = rows[lo..hi.max(lo)]
            .iter()
            .filter(|r| r.2 == s.pid)
            .copied()
            .collect();
        let c = step_collectives(&mine, &threads, s.tid);
        if c.collectives > 0 || c.leading > 0 {
            if c.forward_kernels == 0 && !mine.iter().any(|r| r.3 == BACKWARD) {
                // Collectives in a step with no backward pass: not a training step's.
                return Ok(None);
            }
            per_step.push(c);
        }
    }
    Ok(explain(world, found, &per_step).map(|why| Sourced {
        value: 1,
        basis: Basis::Inferred,
        evidence: format!(
            "distributedInfo.world_size = {world}, but the ranks are data parallel, not tensor parallel: {why}; per-GPU bytes are not divided by the {world} ranks"
        ),
    }))
}

/// The sentence that says which data parallelism the steps show, or None when they do
/// not show one.
fn explain(world: i64, found: &Found, per_step: &[StepCollectives]) -> Option<String> {
    let total: usize = per_step.iter().map(|c| c.collectives).sum();
    if total == 0 {
        return None;
    }
    let steps = per_step.len();
    let sharded: usize = per_step.iter().map(|c| c.sharded).sum();
    let name = found
        .steps
        .iter()
        .flat_map(|s| &s.all_kernels)
        .find(|k| is_gradient_collective(&k.name))
        .map(|k| k.short_name.to_string())
        .unwrap_or_default();
    let leading: usize = per_step.iter().map(|c| c.leading).sum();
    let sync = if leading > 0 {
        let most = per_step
            .iter()
            .map(|c| c.forward_kernels)
            .max()
            .unwrap_or(0);
        format!(
            "; the other {leading} collective(s) are launched from the step's own thread among the first {}% of the (at most {most}) kernels before its backward: DDP's parameter and buffer broadcast before the forward",
            (LEADING_FRACTION * 100.0) as u32
        )
    } else {
        String::new()
    };
    let other: usize = per_step.iter().map(|c| c.other_thread).sum();
    // RCCL's Generic kernel runs every collective: the kind is inferred from when and
    // where it runs, not read.
    let what = if KernelFamily::CollectiveGeneric.matches(&name) {
        "collective(s) of unstated kind"
    } else {
        "all-reduce(s)"
    };
    if sharded > 0 {
        Some(format!(
            "FSDP {world}: {sharded} of {total} collectives in {steps} training step(s) are all-gathers or reduce-scatters (sharded parameters and gradients, e.g. {name})"
        ))
    } else if per_step.iter().all(|c| c.after_backward == c.collectives) {
        let thread = if other == total {
            ", each launched from a host thread other than the step's (the autograd engine's)"
        } else {
            ""
        };
        Some(format!(
            "DP {world} (DDP): {total} {what} in {steps} training step(s) (e.g. {name}), every one after the step's first backward kernel{thread}: gradient buckets{sync}"
        ))
    } else if other == total {
        Some(format!(
            "DP {world} (DDP): {total} {what} in {steps} training step(s) (e.g. {name}), every one launched from a host thread other than the step's (the autograd engine's, as DDP's gradient hooks are) during a backward pass{sync}"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_rows_are_classed_by_the_built_in_categories_and_the_collective_families() {
        let cases = [
            // NCCL's ops by name (src/device/generate.py): DDP's all-reduce, FSDP's
            // all-gather, and a send/recv that is neither.
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                GRADIENT,
            ),
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                SHARD,
            ),
            (
                "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
                OTHER,
            ),
            // RCCL runs every collective as one kernel.
            (
                "ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)",
                GRADIENT,
            ),
            // An inductor pointwise kernel named after the all_reduce of the TP embedding
            // mask it precedes is compute (category elementwise), not a gradient bucket.
            (
                "triton_poi_fused_all_reduce_embedding_ge_lt_masked_fill_mul_sub_0",
                COMPUTE,
            ),
            // FlashAttention-2's combine is attention, though `combine_kernel` is a
            // collective word.
            (
                "void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128> >(Flash_fwd_params)",
                COMPUTE,
            ),
            (
                "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128> >(Flash_bwd_params)",
                BACKWARD,
            ),
        ];
        for (name, want) in cases {
            assert_eq!(row_class(name), want, "{name}");
        }
    }
}
