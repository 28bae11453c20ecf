//! One time origin for every file: each file's own base, shifted onto the smallest, with
//! the bounds that keep every later subtraction of times from overflowing.

use std::path::Path;

use super::Collector;
use crate::exit::{Error, Result};

/// Largest `ts` accepted, ns (2^62 ≈ year 2116 as an epoch time); larger is damage.
pub(super) const MAX_ABS_TS_NS: i64 = 1 << 62;
/// Largest `dur` accepted, ns (2^55 ≈ 417 days); longer is damage.
pub(super) const MAX_DUR_NS: i64 = 1 << 55;
/// Earliest `ts` accepted, ns: 417 days before the file's time base. Together with the
/// bounds above, any two times differ by less than 2^63, so no later subtraction or
/// small addition can overflow.
pub(super) const MIN_TS_NS: i64 = -MAX_DUR_NS;
/// Latest time after ranks are shifted onto one base.
const MAX_END_NS: i64 = MAX_ABS_TS_NS + MAX_DUR_NS;
/// Ranks whose time bases differ by more than this (ns, one hour) are not one capture.
const MAX_BASE_SPREAD_NS: i64 = 3_600_000_000_000;

impl Collector {
    /// One origin for all files: each file's own time base (`baseTimeNanoseconds`, or 0
    /// for the old absolute-epoch layout), and the smallest base is the trace's origin
    /// (docs/kineto-format.md §8: "align ranks on absolute ns"). A single file keeps its own times.
    ///
    /// A base outside 0..=2^62 ns is not a time: it is ignored (with a warning), so the
    /// shift below can never overflow; a shifted time that would is an error.
    pub(super) fn align_times(&mut self, path: &Path) -> Result<Option<i64>> {
        let mut bases: Vec<i64> = Vec::with_capacity(self.files.len());
        for i in 0..self.files.len() {
            let b = match self.files[i].header.base_time_ns {
                Some(b) if !(0..=MAX_ABS_TS_NS).contains(&b) => {
                    let name = self.slot_name[self.files[i].base_slot as usize].clone();
                    self.warnings.push(format!(
                        "{name}: baseTimeNanoseconds {b} is not a plausible time; ignored \
                         (its times are taken as they are)"
                    ));
                    0
                }
                b => {
                    if let Some(raw) = &self.files[i].header.base_time_unreadable {
                        let name = self.slot_name[self.files[i].base_slot as usize].clone();
                        // Shown escaped: the text is the file's, not ours.
                        let raw: String =
                            raw.chars().take(40).flat_map(char::escape_debug).collect();
                        self.warnings.push(format!(
                            "{name}: baseTimeNanoseconds {raw} is not an integer number of \
                             nanoseconds; ignored (its times are taken as they are)"
                        ));
                    }
                    b.unwrap_or(0)
                }
            };
            bases.push(b);
        }
        let kept: Vec<i64> = self
            .files
            .iter()
            .zip(&bases)
            .filter(|(f, _)| f.has_ops())
            .map(|(_, b)| *b)
            .collect();
        let Some(origin) = kept.iter().copied().min() else {
            return Ok(None);
        };
        let spread = kept.iter().copied().max().unwrap_or(origin) - origin;
        if spread > MAX_BASE_SPREAD_NS {
            self.warnings.push(format!(
                "the ranks' time bases (baseTimeNanoseconds) lie {:.0} s apart: these \
                 traces are not from one capture, or a clock was wrong; times across \
                 ranks are not comparable",
                spread as f64 / 1e9
            ));
        }
        let overflow = || {
            Error::input(format!(
                "{}: shifting the ranks onto one time base overflows (baseTimeNanoseconds \
                 and ts too far apart): pass the ranks one at a time",
                path.display()
            ))
        };
        for (f, base) in self.files.iter().zip(bases) {
            let shift = base - origin;
            if shift == 0 {
                continue;
            }
            let [(o0, o1), (c0, c1), (r0, r1), (s0, s1)] = f.rows;
            let ok = shift_rows(
                &mut self.ops.start_ns[o0..o1],
                &mut self.ops.end_ns[o0..o1],
                shift,
            ) && shift_rows(
                &mut self.calls.start_ns[c0..c1],
                &mut self.calls.end_ns[c0..c1],
                shift,
            ) && shift_rows(
                &mut self.ranges.start_ns[r0..r1],
                &mut self.ranges.end_ns[r0..r1],
                shift,
            ) && shift_rows(
                &mut self.shapes.start_ns[s0..s1],
                &mut self.shapes.end_ns[s0..s1],
                shift,
            );
            if !ok {
                return Err(overflow());
            }
        }
        Ok(Some(origin))
    }
}

/// Add `shift` to every time; false if one would overflow.
fn shift_rows(start: &mut [i64], end: &mut [i64], shift: i64) -> bool {
    for v in start.iter_mut().chain(end.iter_mut()) {
        match v.checked_add(shift).filter(|x| *x <= MAX_END_NS) {
            Some(x) => *v = x,
            None => return false,
        }
    }
    true
}
