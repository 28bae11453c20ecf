//! The operating point a capture ran at, read from the capture itself (docs/method.md
//! §3.3): tensor parallelism, the step kind of steps no marker classifies, the GPU, and
//! the batch and context of unnamed steps (the batch also per step, from its input
//! shapes or decode-attention grid: [`batch`], which the pipeline runs on a second read
//! when a step needs it). Every value is labelled: `input` (a flag),
//! `read` (a field of the report or its capture sidecar), `inferred` (with its evidence)
//! or `default`. A flag always wins; a flag that contradicts the capture gets a warning
//! naming both values.

pub mod batch;
pub mod context;
pub mod copies;
pub mod kind;
pub mod nccl_ranges;
pub mod parallel;
pub mod sidecar;
pub mod tokens;
pub mod training;

use std::path::Path;

use crate::exit::{Error, Result};
use crate::roofline::gpu;
use crate::timing::steps::Found;
use crate::trace::Trace;
use crate::wire::attribution::{Basis, OperatingPoint, Sourced};
use crate::wire::roofline::GpuSpec;

/// What the flags say (None: not given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Given {
    pub tp: Option<u32>,
    pub gpu: Option<String>,
    pub batch: Option<u64>,
    pub context: Option<u64>,
    /// A model is given to price the steps (LLM evidence of its own).
    pub model: bool,
}

/// Resolve the operating point of the steps `found` in `trace`: infer the kind of
/// unmarked steps into the steps themselves, then TP, GPU, batch and context, flag over
/// capture. Warnings (a flag against the capture) go into `found`'s warnings; the point
/// is returned (the pipeline puts it into the report). `counts` are the steps' token and request counts
/// ([`tokens::read`], same order as `found.steps`) where the launch grids were read; a
/// second read of the report (its NCCL ranges) runs on `find`'s threads and reports its
/// progress where `find` says.
pub fn resolve(
    trace: &Trace,
    found: &mut Found,
    given: &Given,
    counts: Option<&[tokens::StepCounts]>,
    find: &crate::timing::steps::StepOptions,
) -> Result<OperatingPoint> {
    if let Some(c) = counts {
        for (s, c) in found.steps.iter_mut().zip(c) {
            if let Some(t) = &c.tokens {
                s.tokens_guess = Some(t.value);
                s.tokens_evidence = Some(t.evidence.clone());
            }
        }
    }
    let llm = kind::llm_evidence(&found.steps, given.model);
    kind::infer(&mut found.steps, counts, llm);
    if let Some(c) = counts {
        kind::prompts_of_prefills(&mut found.steps, c);
    }
    let sidecar = sidecar::read_beside(Path::new(&trace.meta.path))?;
    let side = sidecar.as_ref().map(|(_, s)| s);
    let side_name = sidecar
        .as_ref()
        .and_then(|(p, _)| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let from_side = |v: Option<u64>, field: &str| {
        v.map(|v| Sourced {
            value: v,
            basis: Basis::Read,
            evidence: format!("{field} in {side_name}"),
        })
    };

    // What the ranks do decides before what the world size suggests: a world whose
    // collectives are gradient all-reduces or sharded gathers is data parallel, however
    // many all-reduces each step runs and whatever process groups it records.
    let dist = trace.meta.distributed.as_ref();
    let captured_tp = match from_side(side.and_then(|s| s.tp).map(u64::from), "tp") {
        Some(s) => Some(Sourced {
            value: s.value as u32,
            basis: s.basis,
            evidence: s.evidence,
        }),
        None => match training::data_parallel(trace, found, dist)? {
            Some(dp) => Some(dp),
            None => parallel::infer_tp(found, dist),
        },
    };
    let mut tp = flag_over(
        given.tp,
        captured_tp,
        "--tp",
        default_tp(),
        &mut found.meta.warnings,
    );
    if tp.basis == Basis::Default {
        // Unknown, not "nothing": the collectives the steps run are named beside it.
        let nvtx = nccl_ranges::read(trace, found, find)?;
        if let Some(seen) = parallel::collectives_seen(found, &nvtx) {
            tp.evidence = format!(
                "not given, and the steps' collectives are not tensor parallelism's all-reduces inside every layer: {seen}; priced at TP 1"
            );
        }
    }
    let pp = side
        .and_then(|s| s.pp)
        .map(|p| Sourced {
            value: p,
            basis: Basis::Read,
            evidence: format!("pp in {side_name}"),
        })
        .or_else(|| parallel::infer_pp(trace.meta.distributed.as_ref()));

    let gpu = resolve_gpu(given.gpu.as_deref(), trace, &mut found.meta.warnings)?;

    let drive = side.and_then(|s| s.drive);
    let side_batch = drive.map(|d| Sourced {
        value: d.concurrency,
        basis: Basis::Inferred,
        evidence: format!(
            "{} requests kept in flight by the capture (drive.concurrency in {side_name})",
            d.concurrency
        ),
    });
    let side_context = drive.and_then(|d| {
        let (p, o) = (d.prompt_tokens?, d.output_tokens.unwrap_or(0));
        Some(Sourced {
            value: p + o / 2,
            basis: Basis::Inferred,
            evidence: format!(
                "mean resident context prompt {p} + output {o}/2 of the capture's requests ({side_name})"
            ),
        })
    });
    let captured_batch = counts.and_then(|c| decode_batch(&found.steps, c));
    // The capture's inferred batch is left as it is: the copy bound only checks a flag.
    let batch = match given.batch {
        Some(b) => {
            let copies = copies::decode_copies(trace, &found.steps)?;
            Some(check_batch(
                b,
                captured_batch,
                copies::contradiction(b, &copies),
                &mut found.meta.warnings,
            ))
        }
        None => side_batch.or(captured_batch),
    };
    if let (Some(c), Some(counts)) = (given.context, counts) {
        let bounds: Vec<context::Bound> = counts
            .iter()
            .filter_map(|k| k.max_keys.as_ref())
            .map(|k| (k.value, k.evidence.clone()))
            .collect();
        found.meta.warnings.extend(context::check(c, bounds.iter()));
    }
    let context = given
        .context
        .map(|c| input(c, "--context"))
        .or(side_context);

    let point = OperatingPoint {
        tp,
        pp,
        gpu,
        batch,
        context,
        vendor: vendor(trace, given.gpu.as_deref()).map(str::to_owned),
        sidecar: sidecar.map(|(p, _)| p.display().to_string()),
    };
    Ok(point)
}

fn default_tp() -> Sourced<u32> {
    Sourced {
        value: 1,
        basis: Basis::Default,
        evidence: "not given, and nothing in the capture says: TP 1".to_owned(),
    }
}

fn input<T>(value: T, flag: &str) -> Sourced<T> {
    Sourced {
        value,
        basis: Basis::Input,
        evidence: flag.to_owned(),
    }
}

/// The flag when given (warning when the capture says otherwise), else the capture's
/// value, else the default.
fn flag_over<T: PartialEq + std::fmt::Display + Copy>(
    flag: Option<T>,
    captured: Option<Sourced<T>>,
    name: &str,
    default: Sourced<T>,
    warnings: &mut Vec<String>,
) -> Sourced<T> {
    match (flag, captured) {
        (Some(f), Some(c)) => {
            if f != c.value {
                warnings.push(format!(
                    "{name} {f} contradicts the capture ({} {}: {}): pricing at {name} {f}",
                    c.value,
                    c.basis.as_str(),
                    c.evidence
                ));
            }
            input(f, name)
        }
        (Some(f), None) => input(f, name),
        (None, Some(c)) => c,
        (None, None) => default,
    }
}

/// `--batch` over the capture: one warning at most, naming the grids' batch and the
/// copies' bound (`copy`, the evidence of [`copies::contradiction`]) where either
/// contradicts the flag.
fn check_batch(
    flag: u64,
    captured: Option<Sourced<u64>>,
    copy: Option<String>,
    warnings: &mut Vec<String>,
) -> Sourced<u64> {
    match (captured, copy) {
        // Both contradict it: one line with both pieces of evidence.
        (Some(mut c), Some(copy)) if c.value != flag => {
            c.evidence = format!("{}; and {copy}", c.evidence);
            flag_over(
                Some(flag),
                Some(c),
                "--batch",
                input(flag, "--batch"),
                warnings,
            )
        }
        (c, Some(copy)) => {
            // Where the grids agree with the flag, the line says so: the capture's own
            // evidence disagrees (a padded graph batch, or a copy that is not the tokens').
            let agree = c.map_or(String::new(), |c| {
                format!("; the grids agree with the flag: {}", c.evidence)
            });
            warnings.push(format!(
                "--batch {flag} contradicts the capture ({copy}{agree}): pricing at --batch {flag}"
            ));
            input(flag, "--batch")
        }
        (c, None) => flag_over(Some(flag), c, "--batch", input(flag, "--batch"), warnings),
    }
}

/// The batch the capture's decode steps ran, where their names do not count it: the
/// request count most of them show (their attention grid's sequences, else the tokens
/// they wrote, one per request), inferred, with how many decodes agree.
fn decode_batch(
    steps: &[crate::wire::steps::Step],
    counts: &[tokens::StepCounts],
) -> Option<Sourced<u64>> {
    let seen: Vec<&tokens::Count> = steps
        .iter()
        .zip(counts)
        .filter(|(s, _)| batch::wants_batch(s))
        .filter_map(|(_, c)| tokens::decode_requests(c))
        .collect();
    let t = batch::tally(seen.iter().map(|c| c.value));
    let &(value, n) = t.first()?;
    let eg = seen.iter().find(|c| c.value == value)?;
    Some(Sourced {
        value,
        basis: Basis::Inferred,
        evidence: format!(
            "{value} request(s) in {n} of {} unnamed decode steps; e.g. {}",
            seen.len(),
            eg.evidence
        ),
    })
}

/// Put the request count of its counts on every unnamed decode step that has no batch
/// guess yet (after [`batch::infer`], whose shapes and grids come first): in a decode,
/// the tokens it wrote.
/// A token count above `--batch`'s bound is not priced: it is named in `warnings`.
pub(crate) fn batch_from_tokens(
    steps: &mut [crate::wire::steps::Step],
    counts: &[tokens::StepCounts],
    warnings: &mut Vec<String>,
) {
    let max = crate::limits::MAX_BATCH;
    let mut over = None;
    for (s, c) in steps.iter_mut().zip(counts) {
        if s.batch_guess.is_some() || !batch::wants_batch(s) {
            continue;
        }
        if let Some(t) = &c.tokens {
            if t.value > max {
                over.get_or_insert((s.index, t.value));
                continue;
            }
            s.batch_guess = Some(t.value);
            s.batch_evidence = Some(format!(
                "{} (a decode writes one token per request)",
                t.evidence
            ));
        }
    }
    if let Some((index, n)) = over {
        warnings.push(format!(
            "step {index}: the KV-cache writes count {n} tokens, above --batch's bound of \
             {max}: not used as its batch; pass --batch"
        ));
    }
}

/// A GPU table entry by key, refusing a key the table does not have (wherever a GPU is
/// given, with or without a model to price).
pub(crate) fn gpu_by_key(key: &str) -> Result<GpuSpec> {
    gpu::lookup(key).ok_or_else(|| {
        Error::input(format!(
            "unknown GPU `{key}`; use one of {} (or pass --hbm-tb-s and --peak-tflops)",
            GpuSpec::keys().join(", ")
        ))
    })
}

/// A device without a name whose SM (CU) count and memory fit one preset: inferred, with
/// the properties as the evidence.
fn from_properties(trace: &Trace) -> Option<Sourced<String>> {
    trace.devices.iter().find_map(|d| {
        let (sms, mem) = (d.sm_count?, d.total_memory_bytes?);
        let g = gpu::from_properties(sms, mem)?;
        Some(Sourced {
            value: g.key.to_owned(),
            basis: Basis::Inferred,
            evidence: format!(
                "the report names no GPU, but its device properties ({sms} SMs/CUs, {:.1} GiB) fit only the {} preset",
                mem as f64 / (1u64 << 30) as f64,
                g.name
            ),
        })
    })
}

/// `--gpu` (checked against the table and against the GPU the report names), else the
/// report's GPU when the table has it.
fn resolve_gpu(
    flag: Option<&str>,
    trace: &Trace,
    warnings: &mut Vec<String>,
) -> Result<Option<Sourced<String>>> {
    let named = trace.devices.iter().find_map(|d| d.name.clone());
    let from_report = named.as_deref().and_then(gpu::from_report_name);
    let Some(key) = flag else {
        return Ok(match (from_report, named) {
            (Some(g), n) => Some(Sourced {
                value: g.key.to_owned(),
                basis: Basis::Read,
                evidence: format!("the report names the GPU {:?}", n.unwrap_or_default()),
            }),
            // A GPU the table has no preset for is still what the capture ran on: said,
            // with what pricing it needs.
            (None, Some(n)) if !n.trim().is_empty() => Some(Sourced {
                value: n.clone(),
                basis: Basis::Read,
                evidence: format!(
                    "the report names the GPU {n:?}, which no GPU preset matches: pass --gpu and --hbm-tb-s to price against it"
                ),
            }),
            (None, _) => from_properties(trace),
        });
    };
    let g = gpu_by_key(key)?;
    if let (Some(r), Some(n)) = (&from_report, &named) {
        if r.key != g.key {
            warnings.push(format!(
                "--gpu {key} ({}) contradicts the report, which names {n:?} ({}): pricing against {}",
                g.name, r.key, g.key
            ));
        }
    }
    Ok(Some(input(g.key.to_owned(), "--gpu")))
}

/// `nvidia` or `amd` for a device name; None when the name says neither.
fn vendor_of_name(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase();
    if n.contains("amd") || n.contains("instinct") || n.contains("radeon") {
        Some("amd")
    } else if n.contains("nvidia") || n.contains("tesla") || n.contains("geforce") {
        Some("nvidia")
    } else {
        None
    }
}

/// `nvidia` or `amd`: from the device names the report carries, else the `--gpu` given,
/// else the launch API the host called.
pub fn vendor(trace: &Trace, gpu_flag: Option<&str>) -> Option<&'static str> {
    let named = trace
        .devices
        .iter()
        .filter_map(|d| d.name.as_deref())
        .find_map(vendor_of_name);
    let flagged = gpu_flag
        .and_then(gpu::lookup)
        .and_then(|g| vendor_of_name(g.name));
    if let Some(v) = named.or(flagged) {
        return Some(v);
    }
    let launched = |prefix: &str| {
        trace
            .strings
            .iter()
            .any(|s| s.starts_with(prefix) && crate::trace::is_launch_call(s))
    };
    if launched("hip") {
        Some("amd")
    } else if launched("cu") {
        Some("nvidia")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grids(value: u64) -> Option<Sourced<u64>> {
        Some(Sourced {
            value,
            basis: Basis::Inferred,
            evidence: format!("{value} sequences in the grid"),
        })
    }

    #[test]
    fn a_batch_flag_gets_one_warning_whatever_contradicts_it() {
        let copy = || Some("copies at most 4 bytes".to_owned());
        let mut w = Vec::new();
        // Grids and copies both against the flag: one line, both pieces of evidence.
        let b = check_batch(32, grids(1), copy(), &mut w);
        assert_eq!(b.value, 32);
        assert_eq!(b.basis, Basis::Input);
        assert_eq!(
            w,
            [
                "--batch 32 contradicts the capture (1 inferred: 1 sequences in the grid; and \
              copies at most 4 bytes): pricing at --batch 32"
            ]
        );
        // The grids agree and the copies do not: said in the one line.
        w.clear();
        check_batch(32, grids(32), copy(), &mut w);
        assert_eq!(
            w,
            [
                "--batch 32 contradicts the capture (copies at most 4 bytes; the grids agree \
              with the flag: 32 sequences in the grid): pricing at --batch 32"
            ]
        );
        // The copies alone, the grids alone, neither.
        w.clear();
        check_batch(32, None, copy(), &mut w);
        assert_eq!(
            w,
            ["--batch 32 contradicts the capture (copies at most 4 bytes): pricing at --batch 32"]
        );
        w.clear();
        check_batch(32, grids(1), None, &mut w);
        assert_eq!(w.len(), 1);
        w.clear();
        check_batch(32, grids(32), None, &mut w);
        check_batch(32, None, None, &mut w);
        assert!(w.is_empty(), "{w:?}");
    }
}
