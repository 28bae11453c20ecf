//! A user's `--steps REGEX`: any host range whose name matches is a step (a range in a
//! named NVTX domain matches by its bare name or by `Domain:Name`, as nsys shows it). By default a
//! step is the matched range itself on its own thread (its tail runs to the next match);
//! `--steps-extent cycle` makes it the whole cycle from one match of the opener to the
//! next (a training loop's `Optimizer.step#…` span is a fraction of its iteration), and
//! `--steps-threads process` projects the calls of every thread of the process (autograd
//! launches backward from its own thread).

use regex::Regex;

use crate::exit::{Error, Result};
use crate::timing::steps::{Extent, StepOptions, Threads};
use crate::wire::steps::FoundBy;

use super::ranges::{host_ranges_in, matches_range};
use super::{cycle, outermost, Candidate, Found, Index};

pub(super) fn find(ix: &Index<'_>, re: &Regex, opts: &StepOptions) -> Result<Found> {
    let process = opts.threads.unwrap_or_default() == Threads::Process;
    let c: Vec<Candidate> = match opts.extent.unwrap_or_default() {
        Extent::Span => {
            let mut c = outermost(host_ranges_in(ix, |n, d| matches_range(re, n, d))?);
            for x in &mut c {
                x.all_threads = process;
            }
            c
        }
        Extent::Cycle => cycle::threads(ix, |n, d| matches_range(re, n, d))?
            .iter()
            .flat_map(|t| {
                cycle::loose_tiles(t)
                    .into_iter()
                    .map(move |(s, e)| Candidate {
                        label: Some(format!("[cycle of --steps {:?}]", re.as_str())),
                        all_threads: process,
                        no_tail: true,
                        ..Candidate::span(t.pid, t.tid, s, e)
                    })
            })
            .collect(),
    };
    if c.is_empty() {
        return Err(Error::input(format!(
            "no host range matches --steps {:?}; list range names with `stepgate analyze --format json` or try --steps auto",
            re.as_str()
        )));
    }
    let mut f = Found::spans(FoundBy::Regex, c);
    if opts.extent == Some(Extent::Cycle) {
        f.notes.push(format!(
            "--steps-extent cycle: each step runs from one match of the opener (the matched name PyTorch writes first in an iteration, else the one that recurs most) to the next; the last to the end of the last match after it{}",
            if process {
                ", with the calls of every thread of the process"
            } else {
                ""
            }
        ));
    }
    Ok(f)
}
