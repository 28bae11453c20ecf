//! Self-contained HTML reports (`--html FILE` on steps, gate, diff, analyze): one file with
//! inline CSS and inline SVG charts, readable in light and dark mode and on paper, with
//! every charted number also in a table on the page. A few lines of script sort tables
//! when a header is clicked; nothing else needs script and nothing is fetched.

pub mod analyze;
pub mod classes;
pub mod gate;
pub mod steps;
pub mod trend;

use crate::report::table::{Align, Table};

/// Escape text for HTML element content and attribute values.
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

/// The whole page around `body` (already HTML).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"stepgate {}\">\n<title>{}</title>\n<style>{CSS}</style>\n\
         </head>\n<body>\n{body}\n<p class=\"muted\">Made by stepgate {}. Charts are inline SVG; \
         every charted number is in a table on this page.</p>\n<script>{SORT_JS}</script>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title),
        env!("CARGO_PKG_VERSION"),
    )
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
pub fn marks(s: &str) -> String {
    let mut out = esc(s);
    for (emoji, symbol, class) in MARKS {
        if out.contains(emoji) {
            out = out.replace(
                emoji,
                &format!("<span class=\"mark {class}\">{symbol}</span>"),
            );
        }
    }
    out
}

/// A kernel name as HTML: escaped, with line-break opportunities after the punctuation of
/// templates and identifiers (`_ , < ( :`), so a long name wraps between its parts rather
/// than inside a word.
pub fn name(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for c in s.chars() {
        crate::report::escape::push_html(&mut out, c);
        if matches!(c, '_' | ',' | '<' | '(' | ':') {
            out.push_str("<wbr>");
        }
    }
    out
}

/// A report table as a sortable HTML table, in a box that scrolls rather than lets a
/// table run out of the page.
pub fn table(t: &Table, caption: Option<&str>) -> String {
    let mut s = String::from("<div class=\"table\"><table class=\"sortable\">");
    if let Some(c) = caption {
        s.push_str(&format!("<caption class=\"muted\">{}</caption>", esc(c)));
    }
    s.push_str("<thead><tr>");
    for (h, a) in t.headers.iter().zip(&t.align) {
        let cls = if *a == Align::Right {
            " class=\"num\""
        } else {
            ""
        };
        s.push_str(&format!("<th{cls}>{}</th>", esc(h)));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        s.push_str("<tr>");
        for (c, a) in r.iter().zip(&t.align) {
            // Short text stays on one line; names and long text wrap.
            match (a, c.chars().count()) {
                (Align::Right, _) => s.push_str(&format!("<td class=\"num\">{}</td>", marks(c))),
                (Align::Wrap, _) => s.push_str(&format!("<td class=\"name\">{}</td>", name(c))),
                (_, n) if n > 64 => s.push_str(&format!("<td class=\"long\">{}</td>", marks(c))),
                _ => s.push_str(&format!("<td class=\"nw\">{}</td>", marks(c))),
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>\n");
    s
}

/// Labels and the full names behind them, folded under `title`; nothing when every name
/// is its own label.
pub(crate) fn full_names(title: &str, names: &[(&str, &str)]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let mut s = format!("<details><summary>{}</summary><ul>\n", esc(title));
    for (label, full) in names {
        s.push_str(&format!(
            "<li><code>{}</code>: <code>{}</code></li>\n",
            esc(label),
            esc(full)
        ));
    }
    s.push_str("</ul></details>\n");
    s
}

/// A chart in a figure; a chart that failed to draw becomes a visible note instead.
pub fn figure(svg: Result<String, String>, caption: &str) -> String {
    match svg {
        Ok(svg) => format!(
            "<figure class=\"chart\">{svg}<figcaption>{}</figcaption></figure>\n",
            esc(caption)
        ),
        Err(e) => format!("<p class=\"note\">{}</p>\n", esc(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b> & \"c\""), "a&lt;b&gt; &amp; &quot;c&quot;");
        let mut t = Table::new(&[("k", Align::Left), ("µs", Align::Right)]);
        t.row(vec!["f<int>".into(), "1.0".into()]);
        let h = table(&t, None);
        assert!(h.contains("<td class=\"nw\">f&lt;int&gt;</td><td class=\"num\">1.0</td>"));
    }

    #[test]
    fn verdict_marks_become_coloured_symbols() {
        assert_eq!(
            marks("❌ regression & <x>"),
            "<span class=\"mark fail\">✗</span> regression &amp; &lt;x&gt;"
        );
        assert_eq!(
            marks("⚠️ a ✅ b"),
            "<span class=\"mark warn\">⚠\u{FE0E}</span> a <span class=\"mark pass\">✓</span> b"
        );
        let mut t = Table::new(&[("kernel", Align::Wrap), ("verdict", Align::Left)]);
        t.row(vec!["k".into(), "❌ regression".into()]);
        let h = table(&t, None);
        assert!(h.contains("<td class=\"name\">k</td>"), "{h}");
        assert_eq!(name("a_b<c>"), "a_<wbr>b&lt;<wbr>c&gt;");
        assert!(
            h.contains("<span class=\"mark fail\">✗</span> regression"),
            "{h}"
        );
    }
}
