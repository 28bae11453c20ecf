//! Rendering a `policy check`: one row per rule, what it selects, the dead ones marked.

use crate::report::table::{Align, Table};
use crate::report::{to_json, Format};
use crate::wire::policy::{PolicyCheck, RuleCheck};

/// A threshold as the policy file writes it: rel as a percentage, abs in its unit.
fn threshold(r: &RuleCheck) -> String {
    let abs = if r.kind == "metric" && !crate::wire::baseline::metric::in_ns(&r.rule) {
        format!("{}", r.abs)
    } else {
        format!("{:.1} µs", r.abs / 1e3)
    };
    format!(
        "{:.1}% & {abs}{}",
        r.rel * 100.0,
        if r.gate { "" } else { " (report only)" }
    )
}

/// The rules as one table.
pub fn table(c: &PolicyCheck) -> Table {
    let mut t = Table::new(&[
        ("kind", Align::Left),
        ("rule", Align::Left),
        ("threshold", Align::Left),
        ("selects", Align::Right),
        ("what", Align::Left),
    ]);
    for r in &c.rules {
        let what = if r.dead {
            format!(
                "DEAD: {}",
                if r.detail.is_empty() {
                    "selects nothing"
                } else {
                    &r.detail
                }
            )
        } else if r.selects == 0 && r.detail.is_empty() {
            "nothing (optional)".to_owned()
        } else {
            r.detail.clone()
        };
        t.row(vec![
            r.kind.clone(),
            r.rule.clone(),
            threshold(r),
            r.selects.to_string(),
            what,
        ]);
    }
    t
}

fn verdict(c: &PolicyCheck) -> String {
    if c.dead == 0 {
        let idle = c.rules.iter().filter(|r| r.selects == 0).count();
        format!(
            "no dead rule on {} ({} group(s): {}){}",
            c.against,
            c.groups.len(),
            c.groups.join(", "),
            if idle > 0 {
                format!("; {idle} select nothing here, as allowed (optional, absent on this side, or without samples)")
            } else {
                String::new()
            }
        )
    } else {
        format!(
            "{} rule(s) select nothing on {}: fix the selector or mark a kernel rule `optional = true`",
            c.dead, c.against
        )
    }
}

/// Render in the requested format.
pub fn render(c: &PolicyCheck, format: Format) -> String {
    match format {
        Format::Json => to_json(c),
        Format::Table => format!(
            "stepgate policy check: {} against {}\n\n{}\n{}\n",
            c.policy,
            c.against,
            table(c).to_text(),
            verdict(c)
        ),
        Format::Markdown => format!(
            "{}\n{}\n",
            table(c).to_markdown(),
            crate::report::escape::md_text(&verdict(c))
        ),
        Format::Csv => table(c).to_csv(),
    }
}
