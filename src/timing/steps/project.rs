//! Projection: a step's host span → the GPU ops its thread (or its process) launched, in
//! the span and in its tail, each op claimed by one step only, then measured.
//!
//! The tail of a step is what its thread launched after the span ended and before the
//! next step's span started on that thread: vLLM samples after `execute_model` returns,
//! SGLang after `step[…]` closes, so that work belongs to the earlier step.

use crate::categories::Categorizer;
use crate::trace::OpKind;
use crate::wire::steps::{BatchComposition, FoundBy, HostCall, StepKind};

use super::candidate::{Candidate, Found, GapGroup, Items};
use super::index::{gpu_annotations, union_ns, Index};
use super::measure::{Measured, Measurer};
use crate::exit::Result;
use crate::timing::par;

/// Fewest steps worth a thread of their own (a step is a few hundred ops at most, tens of
/// microseconds: below this a thread's start costs about what it saves).
const MIN_CHUNK: usize = 64;

/// What the tail adds to a step.
#[derive(Default)]
pub(crate) struct Tail {
    pub busy: i64,
    pub kernels: u64,
    pub ops: u64,
}

/// Raw per-step record before series bookkeeping.
pub struct Raw {
    pub pid: i64,
    pub tid: Option<i64>,
    pub name: String,
    pub name_id: Option<u32>,
    /// The named NVTX domain of the step's range.
    pub domain: Option<String>,
    pub found_by: FoundBy,
    pub kind: StepKind,
    pub kind_guess: Option<StepKind>,
    pub composition: Option<BatchComposition>,
    pub cpu: Option<(i64, i64)>,
    pub launches: u64,
    pub launch_host_ns: i64,
    pub longest: Option<HostCall>,
    pub m: Measured,
    pub tail: Tail,
}

/// A step's ops before measuring.
struct Collected {
    raw: Raw,
    span: Vec<u32>,
    tail: Vec<u32>,
}

/// Projects every found step, marking which ops some step accounted for.
pub(crate) struct Projector<'i, 'a> {
    ix: &'i Index<'a>,
    cats: &'i Categorizer,
    /// Per op: accounted to some step (span or tail).
    pub claimed: Vec<bool>,
    /// Ops attributed by the time-window fallback.
    pub by_window: usize,
}

impl<'i, 'a> Projector<'i, 'a> {
    pub fn new(ix: &'i Index<'a>, cats: &'i Categorizer) -> Self {
        Projector {
            ix,
            cats,
            claimed: vec![false; ix.ops.start_ns.len()],
            by_window: 0,
        }
    }

    /// Every found step projected and measured, in discovery order. Collecting each
    /// step's ops and measuring them run in chunks of steps on the stage threads; the
    /// claims between them run in step order on one, so an op two steps reach goes to
    /// the earlier one at every thread count.
    pub(crate) fn project_all(&mut self, found: &Found) -> Result<Vec<Raw>> {
        let mut collected = match &found.items {
            Items::Spans(c) => self.spans(c, found.found_by)?,
            Items::Groups(g) => self.groups(g),
        };
        if !self.ix.trace.meta.format.capabilities().launch_links {
            self.window_fallback(&mut collected);
        }
        let (ix, cats) = (self.ix, self.cats);
        par::map_vec(collected, self.ix.workers, MIN_CHUNK, |chunk| {
            // Each chunk measures with its own name cache (the names' text is the same).
            let mut m = Measurer::new(ix, cats);
            chunk.into_iter().map(|c| measured(ix, &mut m, c)).collect()
        })
    }

    fn claim(&mut self, ops: &mut Vec<u32>) {
        ops.retain(|&i| !std::mem::replace(&mut self.claimed[i as usize], true));
    }

    fn spans(&mut self, cands: &[Candidate], found_by: FoundBy) -> Result<Vec<Collected>> {
        // Each span's tail ends where the next span on its thread starts.
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by_key(|&i| (cands[i].pid, cands[i].tid, cands[i].start));
        let mut tail_end = vec![i64::MAX; cands.len()];
        for w in order.windows(2) {
            let (a, b) = (&cands[w[0]], &cands[w[1]]);
            if (a.pid, a.tid) == (b.pid, b.tid) {
                tail_end[w[0]] = b.start;
            }
        }
        let this = &*self;
        let mut out = par::map_chunks(cands.len(), self.ix.workers, MIN_CHUNK, |r| {
            r.map(|k| {
                let (c, te) = (&cands[k], tail_end[k]);
                let mut col = this.span(c, found_by);
                let after = col.raw.cpu.map_or(c.end, |x| x.1).saturating_add(1);
                let te = if c.no_tail { after } else { te };
                for &ci in this.ix.calls_in(c.pid, c.tid, after, te.saturating_sub(1)) {
                    col.tail.extend_from_slice(this.ix.ops_of_call(ci as usize));
                }
                col
            })
            .collect()
        })?;
        for col in &mut out {
            self.claim(&mut col.span);
            self.claim(&mut col.tail);
        }
        Ok(out)
    }

    fn span(&self, c: &Candidate, found_by: FoundBy) -> Collected {
        let ix = self.ix;
        let calls = &ix.calls;
        let mut ops: Vec<u32> = Vec::new();
        let (mut launches, mut launch_host_ns) = (0u64, 0i64);
        let mut longest: Option<(usize, i64)> = None;
        // A single-launch graph step is that launch alone (not the driver calls nested
        // in it), as it always was.
        let in_span: Vec<u32> = match c.exact_call {
            Some(ci) => vec![ci],
            None if c.all_threads => ix
                .threads_of(c.pid)
                .into_iter()
                .flat_map(|tid| ix.calls_in(c.pid, tid, c.start, c.end).iter().copied())
                .collect(),
            None => ix.calls_in(c.pid, c.tid, c.start, c.end).to_vec(),
        };
        for ci in in_span {
            let ci = ci as usize;
            let dur = calls.end_ns[ci] - calls.start_ns[ci];
            if calls.is_launch(ci) {
                launches += 1;
                launch_host_ns += dur;
            } else if longest.is_none_or(|(_, d)| dur > d) {
                longest = Some((ci, dur));
            }
            ops.extend_from_slice(ix.ops_of_call(ci));
        }
        let (kind, composition) = match &c.parsed {
            Some(p) => (p.kind, Some(p.composition.clone())),
            None => (StepKind::Unknown, None),
        };
        let name = match (&c.label, c.name_id) {
            (Some(l), _) => l.clone(),
            (None, Some(id)) => ix.trace.name(id).to_owned(),
            (None, None) => String::new(),
        };
        Collected {
            raw: Raw {
                pid: c.pid,
                tid: Some(c.tid),
                name,
                name_id: c.name_id,
                domain: c.domain.clone(),
                found_by: c.found_by.unwrap_or(found_by),
                kind,
                kind_guess: c.kind_guess,
                composition,
                cpu: Some((c.start, c.end)),
                launches,
                launch_host_ns,
                longest: longest.map(|(ci, d)| HostCall {
                    name: ix.trace.name(calls.name_id[ci]).to_owned(),
                    start_ns: calls.start_ns[ci],
                    dur_ns: d,
                }),
                m: Measured::default(),
                tail: Tail::default(),
            },
            span: ops,
            tail: Vec::new(),
        }
    }

    fn groups(&mut self, groups: &[GapGroup]) -> Vec<Collected> {
        groups
            .iter()
            .map(|g| {
                let mut span = g.ops.clone();
                self.claim(&mut span);
                Collected {
                    raw: Raw {
                        pid: g.pid,
                        tid: None,
                        name: format!("[gap-split device {}]", g.device),
                        name_id: None,
                        domain: None,
                        found_by: FoundBy::Gaps,
                        kind: StepKind::Unknown,
                        kind_guess: None,
                        composition: None,
                        cpu: None,
                        launches: g.launches,
                        launch_host_ns: g.launch_host_ns,
                        longest: None,
                        m: Measured::default(),
                        tail: Tail::default(),
                    },
                    span,
                    tail: Vec::new(),
                }
            })
            .collect()
    }

    /// Kineto drops the launching call of ops it saw only on the GPU side (launched
    /// before the window, or lost): such an op joins the step whose GPU annotation span
    /// (else host span) on the same device contains its start. Labelled in the notes.
    fn window_fallback(&mut self, steps: &mut [Collected]) {
        let ix = self.ix;
        let o = &ix.ops;
        let launched = ix.launched();
        let orphans: Vec<u32> = (0..o.start_ns.len() as u32)
            .filter(|&i| !self.claimed[i as usize] && !launched[i as usize])
            .collect();
        if orphans.is_empty() {
            return;
        }
        let ann = gpu_annotations(ix.trace);
        for c in steps.iter_mut() {
            let Some(&first) = c.span.first() else {
                continue;
            };
            let dev = i64::from(o.device[first as usize]);
            let (lo, hi) = c.span.iter().fold((i64::MAX, i64::MIN), |(a, b), &i| {
                (a.min(o.start_ns[i as usize]), b.max(o.end_ns[i as usize]))
            });
            let window = c
                .raw
                .name_id
                .and_then(|id| ann.get(&(dev, id)))
                .and_then(|v| v.iter().find(|(a, b)| *a < hi && *b > lo).copied())
                .or(c.raw.cpu);
            let Some((ws, we)) = window else { continue };
            let before = c.span.len();
            for &i in &orphans {
                let i = i as usize;
                if !self.claimed[i]
                    && i64::from(o.device[i]) == dev
                    && o.start_ns[i] >= ws
                    && o.start_ns[i] < we
                {
                    self.claimed[i] = true;
                    c.span.push(i as u32);
                }
            }
            self.by_window += c.span.len() - before;
        }
    }
}

/// One step's ops measured: its span's, and what its tail adds.
fn measured(ix: &Index<'_>, m: &mut Measurer<'_, '_>, mut c: Collected) -> Raw {
    let mut raw = c.raw;
    raw.m = m.measure(&mut c.span);
    if !c.tail.is_empty() {
        let mut both = c.span.clone();
        both.extend_from_slice(&c.tail);
        let o = &ix.ops;
        raw.tail = Tail {
            busy: union_ns(&ix.ops, &mut both) - raw.m.busy,
            kernels: c
                .tail
                .iter()
                .filter(|&&i| o.kind[i as usize] == OpKind::Kernel as u32)
                .count() as u64,
            ops: c.tail.len() as u64,
        };
    }
    raw
}
