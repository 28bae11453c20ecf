//! Prefill or decode for steps no engine marker classifies, from the step's own content
//! (docs/method.md §3.3): the tokens it wrote against the sequences it attended
//! ([`super::tokens`]) first, then the attention kernel family it ran, the discovery
//! method's guess (one full CUDA-graph replay per step is a decode, only in a capture
//! with LLM evidence), and, where none says, which duration cluster of its series it
//! falls in. The result is a guess: it goes into `kind_guess` with its evidence in one
//! line, never into `kind`.

use crate::categories::families::KernelFamily;
use crate::wire::steps::{Step, StepKind};

use super::tokens::{self, StepCounts};

/// A long step must be at least this many times the longest short one for the two
/// duration clusters to count as prefill and decode.
pub(crate) const CLUSTER_RATIO: f64 = 3.0;

/// Idle time before a step, in medians of its series' periods, that makes it the first
/// step after idle (new requests arrive as a prefill).
const IDLE_PERIODS: f64 = 5.0;

/// The first decode-only attention kernel of a step (its short name), if any.
fn decode_kernel(step: &Step) -> Option<&str> {
    step.all_kernels
        .iter()
        .filter(|k| k.category.as_ref() == "attention")
        .find(|k| KernelFamily::AttentionDecode.matches(&k.name))
        .map(|k| k.short_name.as_ref())
}

/// What one step's attention kernels say: a kind (None for a training step) and why.
fn family(step: &Step) -> Option<(Option<StepKind>, String)> {
    let (mut dec, mut pre): (Option<&str>, Option<&str>) = (None, None);
    for k in step
        .all_kernels
        .iter()
        .filter(|k| k.category.as_ref() == "attention")
    {
        if KernelFamily::Backward.matches(&k.name) {
            return Some((
                None,
                format!(
                    "backward attention kernel {}: a training step, neither prefill nor decode",
                    k.short_name
                ),
            ));
        }
        if dec.is_none() && KernelFamily::AttentionDecode.matches(&k.name) {
            dec = Some(&k.short_name);
        }
        if pre.is_none() && KernelFamily::AttentionPrefill.matches(&k.name) {
            pre = Some(&k.short_name);
        }
    }
    match (dec, pre) {
        (Some(d), Some(p)) => Some((
            Some(StepKind::Mixed),
            format!("decode attention {d} and prefill attention {p} in one step"),
        )),
        (Some(d), None) => Some((
            Some(StepKind::Decode),
            format!("decode attention kernel {d}"),
        )),
        (None, Some(p)) => Some((
            Some(StepKind::Prefill),
            format!("prefill attention kernel {p}"),
        )),
        (None, None) => None,
    }
}

/// A step that runs a model forward: attention and GEMMs. Only these are clustered by
/// duration (a diffusion or copy-only step is neither prefill nor decode).
fn is_forward(step: &Step) -> bool {
    let has = |c: &str| step.all_kernels.iter().any(|k| k.category.as_ref() == c);
    has("attention") && has("gemm")
}

/// Per step of one series (indices into `steps`), the duration cluster it falls in,
/// when the busy times split into a short majority and a long minority at least
/// [`CLUSTER_RATIO`] apart.
fn clusters(steps: &[Step], members: &[usize]) -> Vec<(usize, StepKind, String)> {
    if members.len() < 3 {
        return Vec::new();
    }
    let mut busy: Vec<(i64, usize)> = members.iter().map(|&i| (steps[i].busy_ns, i)).collect();
    busy.sort_unstable();
    // The widest ratio between neighbours in busy order splits the clusters.
    let (mut cut, mut ratio) = (0, 0.0);
    for (k, w) in busy.windows(2).enumerate() {
        let r = w[1].0 as f64 / w[0].0.max(1) as f64;
        if r > ratio {
            (cut, ratio) = (k + 1, r);
        }
    }
    let (short, long) = busy.split_at(cut);
    if ratio < CLUSTER_RATIO || short.len() < long.len() {
        return Vec::new();
    }
    let median_short = short[short.len() / 2].0 as f64;
    let mut periods: Vec<i64> = members.iter().filter_map(|&i| steps[i].period_ns).collect();
    periods.sort_unstable();
    let median_period = periods.get(periods.len() / 2).copied();
    let mut out = Vec::with_capacity(busy.len());
    for &(b, i) in short {
        out.push((
            i,
            StepKind::Decode,
            format!(
                "short duration cluster (busy {:.1} ms; the long steps are ≥ {ratio:.1}× longer)",
                b as f64 / 1e6
            ),
        ));
    }
    for &(b, i) in long {
        let s = &steps[i];
        let after_idle = match (s.idle_before_ns, median_period) {
            (None, _) => ", the series' first step".to_owned(),
            (Some(idle), Some(p)) if idle as f64 > IDLE_PERIODS * p as f64 => {
                format!(", first after {:.1} ms idle", idle as f64 / 1e6)
            }
            _ => String::new(),
        };
        out.push((
            i,
            StepKind::Prefill,
            format!(
                "long duration cluster (busy {:.1} ms, {:.1}× the {:.1} ms median of the short steps{after_idle})",
                b as f64 / 1e6,
                b as f64 / median_short.max(1.0),
                median_short / 1e6
            ),
        ));
    }
    out
}

/// Whether anything in the capture says it runs an LLM: an attention kernel in a step, a
/// KV-cache write, or a model given to price it. Without any, no step gets an LLM kind.
pub(crate) fn llm_evidence(steps: &[Step], model_given: bool) -> bool {
    model_given
        || steps.iter().any(|s| {
            s.all_kernels
                .iter()
                .any(|k| k.category.as_ref() == "attention" || tokens::is_kv_write(&k.name))
        })
}

/// Infer the kind of every step whose kind is `unknown`: sets `kind_guess` and
/// `kind_evidence`. Evidence that disagrees leaves the kind unknown and says so. `counts`
/// (per step, same order, where the grids were read) decide before the kernel names; a
/// capture without `llm` evidence gets no LLM kind from how its steps were found.
pub(crate) fn infer(steps: &mut [Step], counts: Option<&[StepCounts]>, llm: bool) {
    let unknown: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].kind == StepKind::Unknown && steps[i].wall_ns.is_some())
        .collect();
    if unknown.is_empty() {
        return;
    }
    // Token evidence first, then names; the steps they leave open go to the duration
    // clusters.
    let mut open: Vec<usize> = Vec::new();
    // Why the counts left a step open, kept as its evidence when nothing else decides.
    let mut undecided: Vec<(usize, String)> = Vec::new();
    for &i in &unknown {
        let fam = family(&steps[i]);
        let attention = match &fam {
            Some((Some(k), why)) => Some((*k, why.as_str())),
            _ => None,
        };
        let reading = counts
            .and_then(|c| c.get(i))
            .and_then(|c| tokens::kind_of(c, decode_kernel(&steps[i]), attention));
        let counted = match reading {
            Some(tokens::Reading { kind: Some(k), why }) => Some((k, why)),
            Some(tokens::Reading { kind: None, why }) => {
                undecided.push((i, why));
                None
            }
            None => None,
        };
        if let Some((k, why)) = counted {
            let why = match family(&steps[i]) {
                Some((Some(f), fwhy)) if f != k => {
                    format!(
                        "{why}; the attention family alone would say {} ({fwhy})",
                        f.as_str()
                    )
                }
                _ => why,
            };
            set(&mut steps[i], Some(k), why);
            continue;
        }
        let from_discovery = steps[i].kind_guess.map(|g| {
            (
                Some(g),
                "one full CUDA-graph replay per step (full-graph decode)".to_owned(),
            )
        });
        if from_discovery.is_some() && !llm {
            set(
                &mut steps[i],
                None,
                "one full CUDA-graph replay per step, but nothing in the capture is an LLM (no attention kernel, no KV-cache write, no --model): no step kind".to_owned(),
            );
            continue;
        }
        match (family(&steps[i]), from_discovery) {
            (Some((k, why)), Some((g, how))) if k != g => {
                set(
                    &mut steps[i],
                    None,
                    format!("conflicting: {why}, but {how}"),
                );
            }
            (Some((k, why)), _) | (None, Some((k, why))) => set(&mut steps[i], k, why),
            (None, None) if is_forward(&steps[i]) => open.push(i),
            (None, None) => {}
        }
    }
    let mut series: Vec<usize> = open.iter().map(|&i| steps[i].series).collect();
    series.sort_unstable();
    series.dedup();
    for s in series {
        let members: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&i| steps[i].series == s)
            .collect();
        for (i, k, why) in clusters(steps, &members) {
            set(&mut steps[i], Some(k), why);
        }
    }
    // A step the counts left open and nothing after them decided: its neighbours' decodes
    // may still bound it (inferred, and said so); else unknown, with why.
    let mut inferred: Vec<(usize, String)> = Vec::new();
    for (i, why) in undecided {
        if steps[i].kind_guess.is_none() && steps[i].kind_evidence.is_none() {
            match counts.and_then(|c| from_neighbours(steps, c, i)) {
                Some(how) => inferred.push((i, how)),
                None => set(&mut steps[i], None, why),
            }
        }
    }
    for (i, how) in inferred {
        set(&mut steps[i], Some(StepKind::Prefill), how);
    }
}

/// The request count of step `j` where it is a decode (marked or inferred from its
/// counts) whose requests are counted.
fn decode_count<'c>(
    steps: &[Step],
    counts: &'c [StepCounts],
    j: usize,
) -> Option<&'c tokens::Count> {
    let s = &steps[j];
    let decode = s.kind == StepKind::Decode
        || (s.kind == StepKind::Unknown && s.kind_guess == Some(StepKind::Decode));
    decode
        .then(|| counts.get(j).and_then(tokens::decode_requests))
        .flatten()
}

/// A prefill inferred for step `i`, whose tokens the counts read but whose sequences they
/// do not, from the decodes beside it in its series: a decode batch grows only by requests
/// whose prompts were prefilled first, and shrinks only by requests that finish, so a
/// step that wrote more tokens than the decode before it ran requests (or than the one
/// after it, unless that many finished at once) wrote prompt tokens. None where no
/// neighbour is a decode of fewer requests than the step's tokens.
fn from_neighbours(steps: &[Step], counts: &[StepCounts], i: usize) -> Option<String> {
    let t = counts.get(i)?.tokens.as_ref()?;
    if counts[i].requests.is_some() {
        return None;
    }
    let same = |j: &usize| steps[*j].series == steps[i].series && steps[*j].pid == steps[i].pid;
    let before = (0..i).rev().find(same);
    let after = (i + 1..steps.len()).find(same);
    let prev = before.and_then(|j| decode_count(steps, counts, j));
    let next = after.and_then(|j| decode_count(steps, counts, j));
    let fewer = |c: &&tokens::Count| c.value < t.value;
    let mut parts: Vec<String> = Vec::new();
    if let Some(p) = prev.filter(fewer) {
        parts.push(format!(
            "the step before decodes {} request(s) ({}), and a decode batch grows only by requests prefilled first",
            p.value, p.evidence
        ));
    }
    if let Some(n) = next.filter(fewer) {
        parts.push(format!(
            "the step after decodes {} request(s) ({}), so a decode of {} would have {} requests finish at once",
            n.value,
            n.evidence,
            t.value,
            t.value - n.value
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "inferred from the neighbouring steps, not read: {} tokens written ({}) with no count of sequences; {}: a prefill of up to {} tokens (decodes of running requests beside it are not excluded)",
        t.value,
        t.evidence,
        parts.join("; "),
        t.value
    ))
}

fn set(step: &mut Step, kind: Option<StepKind>, evidence: String) {
    step.kind_guess = kind;
    step.kind_evidence = Some(evidence);
}

/// The prompts of every inferred prefill, and the sequences of every inferred mixed step,
/// whose counts say how many it ran (its `batch_guess`, which prices it with its tokens);
/// where none say, its evidence says how it is priced (a mixed step is then not).
pub(super) fn prompts_of_prefills(steps: &mut [Step], counts: &[StepCounts]) {
    for (s, c) in steps.iter_mut().zip(counts) {
        let inferred_prefill = s.kind == StepKind::Unknown
            && matches!(s.kind_guess, Some(StepKind::Prefill | StepKind::Mixed));
        if !inferred_prefill || s.batch_guess.is_some() || s.tokens_guess.is_none() {
            continue;
        }
        match &c.requests {
            Some(r) => {
                s.batch_guess = Some(r.value);
                s.batch_evidence = Some(format!(
                    "{} {} in this {} ({})",
                    r.value,
                    if s.kind_guess == Some(StepKind::Mixed) {
                        "sequence(s), prefill chunks and decodes,"
                    } else {
                        "prompt(s)"
                    },
                    if s.kind_guess == Some(StepKind::Mixed) {
                        "mixed step"
                    } else {
                        "prefill"
                    },
                    r.evidence
                ));
            }
            None => {
                let prefill = s.kind_guess == Some(StepKind::Prefill);
                if let Some(e) = s.kind_evidence.as_mut() {
                    e.push_str(if prefill {
                        "; its prompts are not counted: its floor takes the split of its tokens into prompts that costs least"
                    } else {
                        "; its sequences are not counted, so it is not priced"
                    });
                }
            }
        }
    }
}
