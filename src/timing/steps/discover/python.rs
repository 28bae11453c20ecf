//! Python-stack step functions (torch traces with `with_stack`, on by default in vLLM
//! and SGLang): the engine's per-step function, outermost per thread. Families in order
//! of preference; the first whose spans launch GPU work wins (SGLang's overlap scheduler
//! runs `run_batch` on one thread and launches from another):
//! vLLM V1 `vllm/v1/worker/gpu_worker.py(N): execute_model` (one per TP worker
//! process), else `gpu_model_runner.py(N): execute_model`; SGLang
//! `managers/scheduler.py(N): run_batch`, `_run_batch_inner`,
//! `managers/tp_worker.py(N): forward_batch_generation`,
//! `tp_worker_overlap_thread.py(N): forward_thread_func_` (≤ 0.5.2).

use crate::exit::Result;
use crate::trace::RangeKind;

use super::{outermost, Candidate, Found, Index};
use crate::timing::steps::StepOptions;
use crate::wire::steps::FoundBy;

/// What each family says about the engine, for the headline (index = family).
const ENGINE: [&str; 6] = [
    "vLLM V1 without step annotation",
    "vLLM V1 without step annotation",
    "SGLang without step[…] annotation",
    "SGLang without step[…] annotation",
    "SGLang without step[…] annotation",
    "SGLang ≤ 0.5.2 overlap thread, without step[…] annotation",
];

/// (file suffix before `.py(`, function) per family, in order of preference.
const FAMILIES: [(&str, &str); 6] = [
    ("gpu_worker", "execute_model"),
    ("gpu_model_runner", "execute_model"),
    ("scheduler", "run_batch"),
    ("scheduler", "_run_batch_inner"),
    ("tp_worker", "forward_batch_generation"),
    ("tp_worker_overlap_thread", "forward_thread_func_"),
];

/// Whether `name` is `…/<file>.py(<line>): <func>`.
fn is_family(name: &str, (file, func): (&str, &str)) -> bool {
    let Some(head) = name.strip_suffix(func).and_then(|h| h.strip_suffix("): ")) else {
        return false;
    };
    let Some(open) = head.rfind(".py(") else {
        return false;
    };
    let path = &head[..open];
    let line_ok = head[open + 4..].bytes().all(|b| b.is_ascii_digit());
    let base = path.rsplit('/').next().unwrap_or(path);
    line_ok && base == file
}

pub(super) fn find(ix: &Index<'_>, _: &StepOptions) -> Result<Option<Found>> {
    let r = ix.trace.ranges_view()?;
    let py: Vec<usize> = (0..r.start_ns.len())
        .filter(|&i| r.kind[i] == RangeKind::PythonStack as u32)
        .collect();
    if py.is_empty() {
        return Ok(None);
    }
    for (fi, fam) in FAMILIES.into_iter().enumerate() {
        let c: Vec<Candidate> = py
            .iter()
            .filter(|&&i| is_family(ix.trace.name(r.name_id[i]), fam))
            .map(|&i| {
                Candidate::range(
                    i64::from(r.pid[i]),
                    r.tid[i],
                    r.start_ns[i],
                    r.end_ns[i],
                    r.name_id[i],
                )
            })
            .collect();
        if c.is_empty() {
            continue;
        }
        let c = outermost(c);
        let launches: usize = c
            .iter()
            .map(|c| {
                ix.calls_in(c.pid, c.tid, c.start, c.end)
                    .iter()
                    .filter(|&&ci| ix.calls.is_launch(ci as usize))
                    .count()
            })
            .sum();
        if launches == 0 {
            continue;
        }
        let mut f = Found::spans(FoundBy::Python, c);
        f.detail = Some(ENGINE[fi]);
        f.notes.push(format!(
            "steps are the python-stack spans of {}.py {} (outermost per thread): a heuristic, the engine wrote no step marker",
            fam.0, fam.1
        ));
        return Ok(Some(f));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_names() {
        let f = FAMILIES[0];
        assert!(is_family(
            "vllm/v1/worker/gpu_worker.py(263): execute_model",
            f
        ));
        assert!(!is_family(
            "vllm/v1/worker/gpu_model_runner.py(1002): execute_model",
            f
        ));
        assert!(is_family(
            "vllm/v1/worker/gpu_model_runner.py(1002): execute_model",
            FAMILIES[1]
        ));
        assert!(is_family(
            "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py(2270): _run_batch_inner",
            FAMILIES[3]
        ));
        assert!(!is_family("x/scheduler.py(12): run_batch_x", FAMILIES[2]));
        assert!(!is_family("x/scheduler.py(1a): run_batch", FAMILIES[2]));
    }
}
