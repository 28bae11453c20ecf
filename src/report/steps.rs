//! Rendering of `steps`: per-kind summary first (readable at 10,000 steps), shapes and
//! the run's diagnosis, then per-step rows only with `--each`.

use crate::report::fit::Fit;
use crate::report::markup::{Markup, Text};
use crate::report::table::{Align, Table};
use crate::report::{fmt_int, fmt_pct, fmt_us, to_json, Format};
use crate::wire::steps::{Spread, Step, StepKind, StepsReport};

/// What a steps rendering shows besides the summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// One row per step after the summary.
    pub each: bool,
    /// Step names in full instead of cut to 48 characters.
    pub wide: bool,
    /// The diagnosis, per-class tables, layers and spread after the answer (text; markdown
    /// always has them, folded).
    pub detail: bool,
    /// The terminal's width (text only).
    pub fit: Fit,
}

/// Render a steps report.
pub fn render(path: &str, r: &StepsReport, format: Format, o: &Options) -> String {
    match format {
        Format::Json => to_json(r),
        Format::Csv => steps_table(&r.steps, true, true).to_csv(),
        Format::Table => text(path, r, o),
        Format::Markdown => markdown(path, r, o),
    }
}

fn sp(s: &Option<Spread>) -> [String; 3] {
    match s {
        Some(s) => [fmt_us(s.median), fmt_us(s.p10), fmt_us(s.p90)],
        None => ["–".into(), "–".into(), "–".into()],
    }
}

/// The per-kind summary table (µs; launches as counts).
pub(crate) fn summary_table(r: &StepsReport) -> Table {
    let mut t = Table::new(&[
        ("kind", Align::Left),
        ("steps", Align::Right),
        ("wall p50", Align::Right),
        ("p10", Align::Right),
        ("p90", Align::Right),
        ("period p50", Align::Right),
        ("busy p50", Align::Right),
        ("gap p50", Align::Right),
        ("gap p90", Align::Right),
        ("launches p50", Align::Right),
    ]);
    for k in &r.summary {
        let [w50, w10, w90] = sp(&k.wall_ns);
        let [p50, _, _] = sp(&k.period_ns);
        let [b50, _, _] = sp(&k.busy_ns);
        let [g50, _, g90] = sp(&k.gap_ns);
        let l50 = k
            .launches
            .map(|l| format!("{:.0}", l.median))
            .unwrap_or_else(|| "–".into());
        let kind = match k.kind_guess {
            Some(g) => format!("{} (inferred)", g.as_str()),
            None => k.kind.as_str().to_owned(),
        };
        t.row(vec![
            kind,
            fmt_int(k.count as i64),
            w50,
            w10,
            w90,
            p50,
            b50,
            g50,
            g90,
            l50,
        ]);
    }
    t
}

fn opt_us(v: Option<i64>) -> String {
    v.map(|x| fmt_us(x as f64)).unwrap_or_else(|| "–".into())
}

/// One row per step; `raw` gives integer ns for CSV instead of formatted µs, `wide` the
/// step names uncut. A kind that is only inferred shows as `decode (inferred)` (CSV: its
/// own `kind_guess` column), and `found by` says which discovery method drew the step's
/// boundary.
pub(crate) fn steps_table(steps: &[Step], raw: bool, wide: bool) -> Table {
    let unit = |ns: &'static str, us: &'static str| if raw { ns } else { us };
    let mut cols = vec![
        ("series", Align::Right),
        ("index", Align::Right),
        ("device", Align::Right),
        ("kind", Align::Left),
    ];
    if raw {
        cols.push(("kind_guess", Align::Left));
    }
    cols.extend([
        (unit("found_by", "found by"), Align::Left),
        ("name", Align::Wrap),
        (unit("wall_ns", "wall µs"), Align::Right),
        (unit("busy_ns", "busy µs"), Align::Right),
        (unit("gap_ns", "gap µs"), Align::Right),
        (unit("tail_busy_ns", "tail µs"), Align::Right),
        ("kernels", Align::Right),
        ("launches", Align::Right),
        (unit("floor_ns", "floor µs (derived)"), Align::Right),
        ("mbu", Align::Right),
        ("shape", Align::Left),
    ]);
    let mut t = Table::new(&cols);
    let missing = || if raw { String::new() } else { "–".into() };
    for s in steps {
        let f = s.attribution.as_ref().and_then(|a| a.floor.as_ref());
        let num = |v: Option<i64>| {
            if raw {
                v.map(|x| x.to_string()).unwrap_or_default()
            } else {
                opt_us(v)
            }
        };
        let mut row = vec![
            s.series.to_string(),
            s.index.to_string(),
            s.device
                .map(|d| d.to_string())
                .unwrap_or_else(|| "–".into()),
        ];
        match (raw, s.kind_guess) {
            (true, g) => {
                row.push(s.kind.as_str().to_owned());
                row.push(g.map(|g| g.as_str().to_owned()).unwrap_or_default());
            }
            (false, Some(g)) if s.kind == StepKind::Unknown => {
                row.push(format!("{} (inferred)", g.as_str()));
            }
            (false, _) => row.push(s.kind.as_str().to_owned()),
        }
        row.extend([
            s.found_by.as_str().to_owned(),
            if wide {
                s.name.clone()
            } else {
                crate::report::fit::shorten_middle(&s.name, 48)
            },
            num(s.wall_ns),
            num(Some(s.busy_ns)),
            num(s.gap_ns),
            num(Some(s.tail_busy_ns)),
            s.kernels.to_string(),
            s.launches.to_string(),
            match (f, raw) {
                (Some(f), true) => format!("{:.1}", f.floor_ns),
                (Some(f), false) => fmt_us(f.floor_ns),
                (None, _) => missing(),
            },
            f.map(|f| match (raw, f.below_floor) {
                (true, _) => format!("{:.4}", f.mbu),
                // Above 100%: the floor is wrong, not a result (the shape says so).
                (false, true) => "–".to_owned(),
                (false, false) => fmt_pct(f.mbu),
            })
            .unwrap_or_else(missing),
            s.attribution
                .as_ref()
                .map(|a| a.shape.as_str().to_owned())
                .unwrap_or_default(),
        ]);
        t.row(row);
    }
    if raw {
        crate::report::classes::append_class_columns(&mut t, steps);
    }
    t
}

/// The first line: how many steps, and how they were found (heuristics say so).
pub(crate) fn headline(path: &str, r: &StepsReport) -> String {
    let total = r.steps.len();
    // Steps found by another method than the report's (SGLang under nsys: decodes split
    // at graph replays among sync steps) are counted per method (the report's tally).
    let by = &r.tally.found_by;
    let how = if by.len() > 1 {
        let mut heuristic = false;
        let parts: Vec<String> = by
            .iter()
            .map(|m| {
                let (f, n) = (m.found_by, m.steps);
                let d = f.describe_for(r.found_by_engine.as_deref());
                let d = match d.strip_suffix(" (heuristic)") {
                    Some(x) => {
                        heuristic = true;
                        x.to_owned()
                    }
                    None => d,
                };
                format!("{d} ({n})")
            })
            .collect();
        let h = if heuristic { " (heuristic)" } else { "" };
        format!("{}{h}", parts.join(" and "))
    } else {
        r.found_by.describe_for(r.found_by_engine.as_deref())
    };
    format!(
        "{path}: {total} steps by {how} on {} rank(s); {} without GPU work",
        r.series.len(),
        r.steps_without_gpu_work
    )
}

/// Lines after the headline: what would make the steps exact, then warnings.
pub(crate) fn hint_and_warnings(r: &StepsReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(h) = &r.exact_steps_hint {
        out.push(format!(
            "note: steps are a heuristic here; exact steps: {h}"
        ));
    }
    for w in &r.warnings {
        out.push(format!("warning: {w}"));
    }
    out
}

/// Tail and outside-steps totals, only where there is any.
fn accounting_lines(r: &StepsReport) -> Vec<String> {
    let mut out = Vec::new();
    let t = &r.tally;
    if let Some(tail) = &t.tail {
        out.push(format!(
            "tail: {} step(s) launched {} op(s) after their span ({} µs busy, measured), accounted to the step (tail_busy_ns)",
            tail.steps,
            tail.ops,
            fmt_us(tail.busy_ns as f64)
        ));
    }
    out.extend(exposed_comm_line(r));
    let (b, m, a) = (
        t.outside_before_ns,
        t.outside_between_ns,
        t.outside_after_ns,
    );
    if (b, m, a) != (0, 0, 0) {
        out.push(format!(
            "outside steps (busy, measured): {} µs before the first step, {} µs between steps, {} µs after the last",
            fmt_us(b as f64),
            fmt_us(m as f64),
            fmt_us(a as f64)
        ));
    }
    out
}

/// Exposed communication over the steps that communicate: the medians of the step's
/// exposed time and of its share of busy (the gate's `exposed_comm_ns`), as the pipeline
/// took them.
fn exposed_comm_line(r: &StepsReport) -> Option<String> {
    let c = r.medians.as_ref()?.exposed_comm.as_ref()?;
    let share = c
        .share_of_busy
        .map(|x| format!(", {:.0}% of busy", 100.0 * x))
        .unwrap_or_default();
    Some(format!(
        "exposed communication (median of {} step(s) that communicate, measured): {} µs per step{share}: collective time no other op of the step hides (exposed_comm_ns)",
        c.steps,
        fmt_us(c.ns),
    ))
}

fn diagnosis_lines(r: &StepsReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = &r.launch_cost {
        out.push(format!(
            "launch cost: {:.3} µs per launch [{}]",
            c.per_launch_ns / 1e3,
            c.source
        ));
    }
    let medians = r.medians.as_ref();
    if let Some(l) = medians.and_then(|m| m.launch.as_ref()) {
        let ratio = l
            .host_to_gap_ratio
            .map(|x| {
                format!("{x:.2}x the gap (>1: the host runs ahead; <1: look for a synchronize)")
            })
            .unwrap_or_else(|| "no gap".to_owned());
        out.push(format!(
            "launches per step (median): host time in launch calls {} µs (measured), driver floor {} µs (derived), framework above it {} µs; host launch time is {ratio}",
            fmt_us(l.host_ns),
            fmt_us(l.driver_floor_ns),
            fmt_us(l.framework_ns),
        ));
    }
    if !r.shapes.is_empty() {
        let parts: Vec<String> = r
            .shapes
            .iter()
            .map(|s| format!("{} {}", s.shape.as_str(), s.steps))
            .collect();
        out.push(format!("shapes: {}", parts.join(", ")));
        let run = r.shapes[0].shape;
        // The run line is the verdict table's (attribution::verdict): the first rule that
        // fires on the capture.
        if let Some(v) = &r.verdict {
            out.push(format!("run: {} — {}", run.as_str(), v.line));
            if !v.held_back.is_empty() {
                out.push(format!(
                    "held back (the trace shows it already runs or cannot help): {}",
                    v.held_back.join("; ")
                ));
            }
        }
    }
    if let Some(f) = medians.and_then(|m| m.floor.as_ref()) {
        if let (Some(mbu), Some(busy)) = (f.mbu, f.floor_over_busy) {
            // A mostly idle step's MBU measures the host, not the kernels: say so first.
            let lead = match f.idle_share {
                Some(x) if x >= 0.8 => format!(
                    "the GPU is idle {} of the median step's wall (measured), so MBU measures the host, not the kernels; ",
                    fmt_pct(x)
                ),
                _ => String::new(),
            };
            out.push(format!(
                "floor (derived per step from its batch): {lead}median MBU (floor/wall, derived) {}, floor/busy (derived) {} over {} steps",
                fmt_pct(mbu),
                fmt_pct(busy),
                f.steps
            ));
        }
        if f.below_floor_steps > 0 {
            let with = if f.plausible_with.is_empty() {
                String::new()
            } else {
                format!(" (plausible with {})", f.plausible_with.join(" or "))
            };
            out.push(format!(
                "warning: {} step(s) measured below their floor, so no MBU is given for them: the byte model is wrong, not the machine{with}",
                f.below_floor_steps
            ));
        }
    }
    if r.ranks.len() > 1 {
        let parts: Vec<String> = r
            .tally
            .slowest_rank
            .iter()
            .map(|c| format!("pid {} in {}", c.pid, c.steps))
            .collect();
        out.push(format!(
            "slowest rank per aligned step: {}",
            parts.join(", ")
        ));
    }
    out
}

/// The steps document, walked once: the answer (verdict, next action, where the wall
/// goes, the other actions ranked), the step-group table, the capture's notes; then the
/// detail (diagnosis, per-class tables, layers, spread), in text only with `--detail`.
fn walk<M: Markup>(m: &mut M, path: &str, r: &StepsReport, o: &Options, long: bool) {
    let head = headline(path, r);
    m.title(&if long {
        head
    } else {
        format!("stepgate steps: {head}")
    });
    let detail = o.detail || long;
    crate::report::answer::walk(m, r, detail);
    m.heading("measured, µs:");
    m.table(&summary_table(r));
    for l in hint_and_warnings(r) {
        match l.strip_prefix("warning: ") {
            Some(w) => m.warning(w),
            None => m.line(&l),
        }
    }
    for n in &r.notes {
        m.note(n);
    }
    if detail {
        m.open_detail("diagnosis");
        for l in crate::report::classes::point_lines(r)
            .into_iter()
            .chain(accounting_lines(r))
            .chain(diagnosis_lines(r))
        {
            m.line(&l);
        }
        crate::report::classes::walk_groups(m, &r.groups);
        crate::report::spread::walk_groups(m, &r.class_spread);
        m.close_detail();
    }
    if o.each {
        m.open_detail("every step");
        m.table(&steps_table(&r.steps, false, o.wide || !long));
        m.close_detail();
    }
    let more: Vec<&str> = [
        (
            !detail,
            "--detail for the diagnosis, per-class tables and layers",
        ),
        (!o.each && r.steps.len() > 1, "--each for one row per step"),
    ]
    .iter()
    .filter(|x| x.0)
    .map(|x| x.1)
    .collect();
    if !more.is_empty() && !long {
        m.hint(&format!("({})", more.join("; ")));
    }
}

fn text(path: &str, r: &StepsReport, o: &Options) -> String {
    let mut m = Text::new(o.fit);
    walk(&mut m, path, r, o, false);
    m.finish()
}

fn markdown(path: &str, r: &StepsReport, o: &Options) -> String {
    let mut m = crate::report::markup::Markdown::with_heading("stepgate steps");
    walk(&mut m, path, r, o, true);
    m.finish()
}
