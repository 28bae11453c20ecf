//! An upper bound on the requests of each decode step from the largest copy it makes to
//! the host (docs/method.md §3.3): a decode returns at least one sampled token id per
//! request, and a token id is at least 4 bytes (int32; vLLM V1's sampler casts to int32,
//! other versions and SGLang copy int64), so a step whose largest device-to-host copy is
//! `b` bytes returned at most `b / 4` requests' tokens — if it copied its tokens at all.
//! The bound is one-sided and dtype-free: a wider id, speculative tokens or logprobs only
//! make the copy larger, so the bound only grows. A step with no device-to-host copy (its
//! tokens copied in a later step: async scheduling, overlap schedulers, multi-step) gives
//! no bound, and neither does one whose largest copy is under 4 bytes (too small to hold
//! one token id, so it is not the token copy). Only a `--batch` above the bound of every
//! bounded decode step is a contradiction.

use crate::exit::Result;
use crate::trace::{col, i64s, OpKind, Trace};
use crate::wire::steps::{Step, StepKind};

use super::batch;

/// The fewest bytes a sampled token id takes (int32).
pub(crate) const MIN_TOKEN_ID_BYTES: u64 = 4;

/// Whether a memcpy op's name says device to host. The trace model keeps a copy's
/// direction in its name, as nsys writes it (`[memcpy DtoH]`, also `[memcpy UVM DtoH]`):
/// the Kineto reader renames `Memcpy DtoH (Device -> Pinned)` so, the rocpd reader
/// `MEMORY_COPY_DEVICE_TO_HOST`.
pub(crate) fn is_device_to_host(name: &str) -> bool {
    name.contains("DtoH")
}

/// One device-to-host copy: where it ran, its size, its name.
struct ToHost<'t> {
    device: i64,
    pid: i64,
    start: i64,
    bytes: u64,
    name: &'t str,
}

/// The largest device-to-host copy of one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Largest {
    pub bytes: u64,
    pub name: String,
}

/// The trace's device-to-host copies with a positive size, in (device, start) order.
fn to_host_rows(trace: &Trace) -> Result<Vec<ToHost<'_>>> {
    let o = trace.ops_view()?;
    let bytes = i64s(&trace.ops, col::BYTES)?;
    // Looked up once per interned name: millions of rows, few names.
    let d2h: Vec<bool> = trace.strings.iter().map(|n| is_device_to_host(n)).collect();
    let mut rows: Vec<ToHost<'_>> = (0..o.start_ns.len())
        .filter(|&i| OpKind::from_u32(o.kind[i]) == OpKind::Memcpy)
        .filter(|&i| d2h.get(o.name_id[i] as usize).copied().unwrap_or(false))
        .filter_map(|i| {
            Some(ToHost {
                device: i64::from(o.device[i]),
                pid: i64::from(o.pid[i]),
                start: o.start_ns[i],
                bytes: u64::try_from(bytes[i]).ok().filter(|&b| b > 0)?,
                name: trace.name(o.name_id[i]),
            })
        })
        .collect();
    rows.sort_by_key(|r| (r.device, r.start));
    Ok(rows)
}

/// Per decode step of `steps` with GPU work, in order: its index and its largest
/// device-to-host copy in its GPU window (its device, its process), None where it made
/// none.
pub(crate) fn decode_copies(
    trace: &Trace,
    steps: &[Step],
) -> Result<Vec<(usize, Option<Largest>)>> {
    let rows = to_host_rows(trace)?;
    Ok(steps
        .iter()
        .filter(|s| s.kind_label().kind == StepKind::Decode)
        .filter_map(|s| {
            let (dev, gs, ge) = (s.device?, s.gpu_start_ns?, s.gpu_end_ns?);
            let top = batch::window(&rows, |r| (r.device, r.start), dev, gs, ge)
                .iter()
                .filter(|r| r.pid == s.pid)
                .max_by_key(|r| r.bytes)
                .map(|r| Largest {
                    bytes: r.bytes,
                    name: r.name.to_owned(),
                });
            Some((s.index, top))
        })
        .collect())
}

/// Why `--batch flag` cannot be what the capture ran, from the decodes' copies to the
/// host ([`decode_copies`]): the evidence for the warning, or None where the flag fits
/// (at or below the bound of some bounded decode), too few decodes are bounded (fewer
/// than 2, unless the capture holds only one decode), or none is.
pub(crate) fn contradiction(flag: u64, decodes: &[(usize, Option<Largest>)]) -> Option<String> {
    // A copy too small for one token id is not the token copy: no bound.
    let bounded: Vec<(usize, &Largest)> = decodes
        .iter()
        .filter_map(|(i, l)| Some((*i, l.as_ref().filter(|l| l.bytes >= MIN_TOKEN_ID_BYTES)?)))
        .collect();
    let enough = if decodes.len() == 1 { 1 } else { 2 };
    if bounded.len() < enough {
        return None;
    }
    // Above every step's bound is above the largest one (the first step that copies it).
    let &(step, top) = bounded
        .iter()
        .max_by_key(|(i, l)| (l.bytes, std::cmp::Reverse(*i)))?;
    let bound = top.bytes / MIN_TOKEN_ID_BYTES;
    if flag <= bound {
        return None;
    }
    let unbounded = decodes.len() - bounded.len();
    let rest = if unbounded > 0 {
        format!("; {unbounded} other decode step(s) copy no token id to the host and give no bound")
    } else {
        String::new()
    };
    let each = match bounded.len() {
        1 => "the one decode step copies".to_owned(),
        n => format!("each of the {n} decode steps copies"),
    };
    Some(format!(
        "{each} at most {} bytes to the host, room for at most {bound} sampled token id(s) \
         of ≥ {MIN_TOKEN_ID_BYTES} bytes, derived: the largest is {} of {} bytes in step \
         {step}, and a decode copies at least one token id per request{rest}",
        top.bytes, top.name, top.bytes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_to_host_as_each_source_names_it() {
        assert!(is_device_to_host("[memcpy DtoH]"));
        assert!(is_device_to_host("[memcpy UVM DtoH]"));
        assert!(!is_device_to_host("[memcpy HtoD]"));
        assert!(!is_device_to_host("[memcpy DtoD]"));
        assert!(!is_device_to_host("[memcpy PtoP]"));
    }

    fn copy(bytes: u64) -> Option<Largest> {
        Some(Largest {
            bytes,
            name: "[memcpy DtoH]".to_owned(),
        })
    }

    #[test]
    fn only_a_flag_above_every_bound_contradicts() {
        // Bounds 1, 2 and none: the flag must exceed 2.
        let d = [(0, copy(4)), (1, copy(8)), (2, None)];
        assert!(contradiction(2, &d).is_none());
        let w = contradiction(3, &d).unwrap();
        assert!(
            w.starts_with("each of the 2 decode steps copies at most 8 bytes to the host, room for at most 2 sampled token id(s)"),
            "{w}"
        );
        assert!(w.contains("[memcpy DtoH] of 8 bytes in step 1"), "{w}");
        assert!(
            w.ends_with("; 1 other decode step(s) copy no token id to the host and give no bound"),
            "{w}"
        );
        // A copy under 4 bytes holds no token id: no bound, so one bounded decode of three
        // is too few.
        assert!(contradiction(32, &[(0, copy(4)), (1, copy(1)), (2, None)]).is_none());
        // One decode in the capture: its bound suffices.
        assert!(contradiction(32, &[(0, copy(4))]).is_some());
        assert!(contradiction(32, &[(0, None), (1, None)]).is_none());
        assert!(contradiction(32, &[]).is_none());
    }
}
