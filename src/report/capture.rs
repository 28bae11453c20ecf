//! Rendering a capture summary: where the trace went and how the window was armed.

use crate::report::table::{Align, Table};
use crate::report::{fmt_int, to_json, Format};
use crate::wire::capture::Summary;

/// The summary as a two-column table.
pub fn table(s: &Summary) -> Table {
    let mut t = Table::new(&[("capture", Align::Left), ("value", Align::Left)]);
    let mut row = |k: &str, v: String| t.row(vec![k.to_owned(), v]);
    row("engine", format!("{} at {}", s.engine_name(), s.url));
    row(
        "ready",
        format!("GET {} after {} ms", s.ready_via, fmt_int(s.ready_after_ms)),
    );
    row(
        "POST /start_profile",
        s.start_profile_body
            .as_ref()
            .map(|b| b.to_string())
            .unwrap_or_else(|| "(no body)".into()),
    );
    row("stopped by", s.stopped_by.clone());
    if let Some(d) = s.drive {
        row(
            "driven requests",
            format!(
                "{} completed, {} failed",
                fmt_int(d.completed as i64),
                fmt_int(d.failed as i64)
            ),
        );
    }
    if let Some(p) = &s.operating_point {
        row(
            "load (as sent)",
            format!(
                "{} in flight, max_tokens {}, model {}",
                p.concurrency,
                p.max_tokens,
                p.model.as_deref().unwrap_or("(the server's)")
            ),
        );
    }
    if let Some(p) = &s.nsys_report {
        row("nsys report", p.display().to_string());
    }
    if let Some(p) = &s.sqlite {
        row("SQLite export", p.display().to_string());
    }
    for p in &s.traces {
        row("trace", p.display().to_string());
    }
    if let Some(n) = &s.trace_note {
        row("trace", n.clone());
    }
    for n in &s.notes {
        row("note", n.clone());
    }
    t
}

/// Render in the requested format.
pub fn render(s: &Summary, format: Format) -> String {
    match format {
        Format::Json => to_json(s),
        Format::Table => {
            let mut out = table(s).to_text();
            if let Some(p) = &s.sqlite {
                out.push_str(&format!("\nNext: stepgate steps {}\n", p.display()));
            }
            out
        }
        Format::Markdown => table(s).to_markdown(),
        Format::Csv => table(s).to_csv(),
    }
}

impl Summary {
    fn engine_name(&self) -> &'static str {
        self.engine.name()
    }
}
