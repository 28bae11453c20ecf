//! An upper bound on each decode step's context from its own launch grid, which a
//! `--context` flag must not exceed: vLLM's paged attention v2 launches `dim3 grid(num_heads,
//! num_seqs, max_num_partitions)` with `max_num_partitions = DIVIDE_ROUND_UP(max_seq_len,
//! PARTITION_SIZE)` (`csrc/attention/paged_attention_v2.cu`), so grid z × PARTITION_SIZE
//! keys bound the step's longest request, and the mean context lies below it. Its
//! PARTITION_SIZE is the kernel's last template argument (`…, false, 512>(…)`).

use crate::categories::families::KernelFamily;
use crate::exit::Result;
use crate::trace::Trace;
use crate::wire::steps::Step;

use super::batch;

/// A bound in keys with its line of evidence.
pub type Bound = (u64, String);

/// The partition size a paged-attention-v2 kernel's name carries, if it is one.
pub(crate) fn partition_size(name: &str) -> Option<u64> {
    // The v2 decode kernel, not its reduce: that grid has no partition axis.
    if !KernelFamily::PagedAttentionV2Partitions.matches(name) {
        return None;
    }
    let args = &name[..name.find(">(")?];
    let last = args.rsplit(',').next()?.trim();
    last.parse::<u64>()
        .ok()
        .filter(|p| p.is_power_of_two() && (16..=8192).contains(p))
}

/// Per step (same order), the most keys its v2 attention grid allows a request, with the
/// evidence; None where the step ran no such kernel.
pub fn bounds(evidence: &Trace, steps: &[Step]) -> Result<Vec<Option<Bound>>> {
    // Keys a request can hold: grid z (partitions) × the partition size.
    let rows = batch::counted_launches(evidence, partition_size, |size, grid| {
        u64::from(grid[2]) * size
    })?;
    Ok(steps
        .iter()
        .map(|s| {
            let (dev, gs, ge) = (s.device?, s.gpu_start_ns?, s.gpu_end_ns?);
            let mine = batch::window(&rows, |r| (r.device, r.start), dev, gs, ge);
            let top = mine
                .iter()
                .filter(|r| r.pid == s.pid)
                .max_by_key(|r| r.value)?;
            let size = partition_size(top.name)?;
            Some((
                top.value,
                format!(
                    "{} launches {} partition(s) of {size} keys (grid z)",
                    batch::short(top.name),
                    top.value / size
                ),
            ))
        })
        .collect())
}

/// The warning for a `--context` above every step's bound (the largest bound, so the flag
/// exceeds what any step could hold), or None.
pub fn check<'b>(flag: u64, bounds: impl Iterator<Item = &'b Bound>) -> Option<String> {
    let seen: Vec<&Bound> = bounds.collect();
    let top = seen.iter().max_by_key(|b| b.0)?;
    (flag > top.0).then(|| {
        format!(
            "--context {flag} contradicts the capture (at most {} keys per request in all {} steps with a read grid: {}): pricing at --context {flag}",
            top.0,
            seen.len(),
            top.1
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_size_is_the_v2_kernels_last_template_argument() {
        let v2 = "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, int)";
        assert_eq!(partition_size(v2), Some(512));
        let reduce = "void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>(__nv_bfloat16*, float const*)";
        assert_eq!(partition_size(reduce), None);
        assert_eq!(
            partition_size("void vllm::paged_attention_v1_kernel<x, 512>(y)"),
            None
        );
        assert_eq!(partition_size("paged_attention_v2_kernel"), None);
    }

    #[test]
    fn a_context_above_every_bound_is_a_contradiction() {
        let c = |v: u64| Some((v, format!("{v} keys")));
        let b = [c(1024), None, c(512)];
        assert!(check(1024, b.iter().flatten()).is_none());
        let w = check(4096, b.iter().flatten()).unwrap();
        assert!(w.starts_with("--context 4096 contradicts the capture (at most 1024 keys per request in all 2 steps"), "{w}");
        assert!(check(4096, [None::<Bound>].iter().flatten()).is_none());
    }
}
