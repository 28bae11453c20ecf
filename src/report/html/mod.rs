//! Self-contained HTML reports (`--html FILE` on steps, gate, diff, analyze): one file with
//! inline CSS and inline SVG charts, readable in light and dark mode and on paper, with
//! every charted number also in a table on the page. A few lines of script sort tables
//! when a header is clicked; nothing else needs script and nothing is fetched.

pub mod analyze;
pub mod classes;
pub mod gate;
pub mod steps;
pub mod trend;

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::report::table::{Align, Table};

/// Text escaped for HTML element content or a quoted attribute value, as the templates
/// escape a spliced string (a test finds a capture's text on a page with it).
pub fn esc(s: &str) -> String {
    crate::report::escape::html(s)
}

const CSS: &str = r#"
:root { color-scheme: light dark; --fg:#1b1b1b; --bg:#ffffff; --muted:#5c5c5c; --line:#d9d9d9;
  --head:#f3f3f3; --pass:#0a7a3d; --fail:#b3261e; --warn:#8a5a00; }
@media (prefers-color-scheme: dark) {
  :root { --fg:#e8e8e8; --bg:#151515; --muted:#a8a8a8; --line:#3a3a3a; --head:#232323;
    --pass:#5fd08b; --fail:#ff8a80; --warn:#f0c05a; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1180px; padding: 24px 28px 48px; background: var(--bg);
  color: var(--fg); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.5em; margin: 0 0 4px; }
h2 { font-size: 1.2em; margin: 32px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 1.05em; margin: 22px 0 6px; }
p, li { max-width: 95ch; }
.muted { color: var(--muted); }
.verdict { font-size: 1.15em; font-weight: 600; margin: 10px 0; }
.pass { color: var(--pass); } .fail { color: var(--fail); } .warn { color: var(--warn); }
figure.chart { margin: 12px 0 6px; padding: 8px; background: #ffffff; border: 1px solid var(--line);
  border-radius: 6px; overflow-x: auto; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figcaption { color: #444444; font-size: .9em; padding: 4px 6px 0; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: .9em; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: 3px 6px; vertical-align: top; }
td.nw { white-space: nowrap; } td.long { overflow-wrap: anywhere; min-width: 28ch; }
td.name { overflow-wrap: anywhere; min-width: 22ch; max-width: 56ch; }
div.table { max-width: 100%; overflow-x: auto; }
.mark { font-weight: 700; }
.table-title { margin: 16px 0 0; }
th { background: var(--head); text-align: left; cursor: pointer; user-select: none; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td code, li code { font-size: .95em; word-break: break-all; }
details { margin: 6px 0 14px; }
.note { border-left: 3px solid var(--warn); padding: 2px 10px; margin: 8px 0; }
@media print {
  :root { --fg:#000; --bg:#fff; --muted:#444; --line:#999; --head:#eee; }
  body { max-width: none; padding: 0; font-size: 11pt; }
  figure.chart, table { break-inside: avoid; }
  th { cursor: auto; }
  details > * { display: block; }
  div.table { overflow: visible; }
}
"#;

/// Click a header to sort its table (numbers by value, text alphabetically).
const SORT_JS: &str = r#"
document.querySelectorAll('table.sortable th').forEach(function (th, _) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0];
    var i = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute('data-dir') !== 'asc';
    th.setAttribute('data-dir', asc ? 'asc' : 'desc');
    var num = function (s) { var v = parseFloat(s.replace(/[,%+µs ]/g, '').replace('\u2212', '-')); return isNaN(v) ? null : v; };
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[i].textContent, y = b.cells[i].textContent, nx = num(x), ny = num(y);
      var c = (nx !== null && ny !== null) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"#;

/// The whole page around `body`.
pub fn page(title: &str, body: Markup) -> String {
    let version = env!("CARGO_PKG_VERSION");
    html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content={ "stepgate " (version) };
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body {
                (body)
                p.muted {
                    "Made by stepgate " (version) ". Charts are inline SVG; every charted \
                     number is in a table on this page."
                }
                script { (PreEscaped(SORT_JS)) }
            }
        }
        "\n"
    }
    .into_string()
}

/// The marks of the terminal and markdown renderings (emoji), and what a page shows
/// instead: a text symbol every sans-serif font has (a browser without an emoji font shows
/// emoji as boxes), coloured by the class that says what it means.
pub const MARKS: [(&str, &str, &str); 3] = [
    ("❌", "✗", "fail"),
    ("✅", "✓", "pass"),
    ("⚠️", "⚠\u{FE0E}", "warn"),
];

/// Text as HTML: escaped, with the emoji marks as coloured symbols ([`MARKS`]).
pub fn marks(s: &str) -> Markup {
    // The text cut at each mark: (text before it, the mark's symbol and class).
    let mut parts: Vec<(&str, Option<(&str, &str)>)> = Vec::new();
    let mut rest = s;
    while let Some((at, (emoji, symbol, class))) = MARKS
        .iter()
        .filter_map(|m| rest.find(m.0).map(|at| (at, *m)))
        .min_by_key(|(at, _)| *at)
    {
        parts.push((&rest[..at], Some((symbol, class))));
        rest = &rest[at + emoji.len()..];
    }
    parts.push((rest, None));
    html! {
        @for (text, mark) in parts {
            (text)
            @if let Some((symbol, class)) = mark {
                span class={ "mark " (class) } { (symbol) }
            }
        }
    }
}

/// A kernel name as HTML: escaped, with line-break opportunities after the punctuation of
/// templates and identifiers (`_ , < ( :`), so a long name wraps between its parts rather
/// than inside a word.
pub fn name(s: &str) -> Markup {
    const BREAKS: [char; 5] = ['_', ',', '<', '(', ':'];
    let parts: Vec<&str> = s.split_inclusive(BREAKS).collect();
    html! {
        @for p in parts {
            (p)
            @if p.ends_with(BREAKS) { wbr; }
        }
    }
}

/// A report table as a sortable HTML table, in a box that scrolls rather than lets a
/// table run out of the page.
pub fn table(t: &Table, caption: Option<&str>) -> Markup {
    let num = |a: &Align| (*a == Align::Right).then_some("num");
    html! {
        div.table {
            table.sortable {
                @if let Some(c) = caption { caption.muted { (c) } }
                thead { tr { @for (h, a) in t.headers.iter().zip(&t.align) {
                    th class=[num(a)] { (h) }
                } } }
                tbody { @for r in &t.rows { tr { @for (c, a) in r.iter().zip(&t.align) {
                    // Short text stays on one line; names and long text wrap.
                    @match (a, c.chars().count()) {
                        (Align::Right, _) => { td.num { (marks(c)) } }
                        (Align::Wrap, _) => { td.name { (name(c)) } }
                        (_, n) if n > 64 => { td.long { (marks(c)) } }
                        _ => { td.nw { (marks(c)) } }
                    }
                } } } }
            }
        }
        "\n"
    }
}

/// Labels and the full names behind them, folded under `title`; nothing when every name
/// is its own label.
pub(crate) fn full_names(title: &str, names: &[(&str, &str)]) -> Markup {
    html! {
        @if !names.is_empty() {
            details {
                summary { (title) }
                ul { @for (label, full) in names { li { code { (label) } ": " code { (full) } } } }
            }
            "\n"
        }
    }
}

/// A chart in a figure; a chart that failed to draw becomes a visible note instead. The
/// SVG is plotters' (its text escaped by it) with our markers ([`crate::report::charts`],
/// labels spliced into a maud template too).
pub fn figure(svg: Result<String, String>, caption: &str) -> Markup {
    html! {
        @match svg {
            Ok(svg) => { figure.chart { (PreEscaped(svg)) figcaption { (caption) } } }
            Err(e) => { p.note { (e) } }
        }
        "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            crate::report::escape::html("a<b> & \"c\""),
            "a&lt;b&gt; &amp; &quot;c&quot;"
        );
        let mut t = Table::new(&[("k", Align::Left), ("µs", Align::Right)]);
        t.row(vec!["f<int>".into(), "1.0".into()]);
        let h = table(&t, None).into_string();
        assert!(h.contains("<td class=\"nw\">f&lt;int&gt;</td><td class=\"num\">1.0</td>"));
        assert!(h.contains("<th>k</th><th class=\"num\">µs</th>"), "{h}");
    }

    #[test]
    fn verdict_marks_become_coloured_symbols() {
        assert_eq!(
            marks("❌ regression & <x>").into_string(),
            "<span class=\"mark fail\">✗</span> regression &amp; &lt;x&gt;"
        );
        assert_eq!(
            marks("⚠️ a ✅ b").into_string(),
            "<span class=\"mark warn\">⚠\u{FE0E}</span> a <span class=\"mark pass\">✓</span> b"
        );
        let mut t = Table::new(&[("kernel", Align::Wrap), ("verdict", Align::Left)]);
        t.row(vec!["k".into(), "❌ regression".into()]);
        let h = table(&t, None).into_string();
        assert!(h.contains("<td class=\"name\">k</td>"), "{h}");
        assert_eq!(name("a_b<c>").into_string(), "a_<wbr>b&lt;<wbr>c&gt;");
        assert!(
            h.contains("<span class=\"mark fail\">✗</span> regression"),
            "{h}"
        );
    }
}
