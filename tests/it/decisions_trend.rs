//! `trend` shows the decisions on record: the run an `accept`/`reject` names carries it in
//! the JSON (whole), the text and markdown tables (shortened, escaped) and the HTML chart
//! (a marker with a tooltip), and a reason written by a PR's author breaks none of them.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

use crate::common::run as stepgate;
use crate::decisions::{gate_main, main_history, report};

/// A dataset of two main runs and a third, 25% slower run exported by a gate whose
/// comparison is then decided with `decide` (`accept` or `reject` and its flags). Returns
/// the dataset and the decided run's id.
fn decided_history(dir: &std::path::Path, decide: &[&str]) -> (String, String) {
    let ds = main_history(dir, 2);
    let cand = dir.join("slow.sqlite");
    report(&cand, 9, 1.25);
    let cmp = dir.join("cmp.json").display().to_string();
    let (code, out, err) = gate_main(
        &ds,
        cand.to_str().unwrap(),
        &["--export", &ds, "--label", "branch=main", "--json", &cmp],
    );
    assert_eq!(code, 1, "a 25% slower run is a regression: {out}{err}");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&cmp).unwrap()).unwrap();
    let run_id = c["source"]["candidate"]["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut args = vec![decide[0], &cmp, "--history", &ds];
    args.extend_from_slice(&decide[1..]);
    let (code, _, err) = stepgate(&args);
    assert_eq!(code, 0, "{err}");
    (ds, run_id)
}

fn trend(ds: &str, format: &str) -> String {
    let (code, out, err) = stepgate(&["trend", ds, "--format", format]);
    assert_eq!(code, 0, "{err}");
    out
}

/// The JSON points of the one series, and the one that names `run_id` (asserting the
/// others carry no decision).
fn points_with_decision(ds: &str, run_id: &str) -> (Vec<Value>, Value) {
    let t: Value = serde_json::from_str(&trend(ds, "json")).unwrap();
    assert_eq!(t["series"].as_array().unwrap().len(), 1, "{t}");
    let points = t["series"][0]["points"].as_array().unwrap().clone();
    assert_eq!(points.len(), 3, "two main runs and the decided one");
    let mut decided = points.iter().filter(|p| p["run_id"] == run_id);
    let d = decided.next().expect("the decided run is a point")["decision"].clone();
    assert!(decided.next().is_none());
    for p in points.iter().filter(|p| p["run_id"] != run_id) {
        assert!(p["decision"].is_null(), "an undecided run has none: {p}");
    }
    (points, d)
}

/// Pipes that separate markdown table cells: those not escaped by a backslash (an escaped
/// backslash before one does not escape it).
fn cell_pipes(line: &str) -> usize {
    let mut n = 0;
    let mut backslashes = 0;
    for c in line.chars() {
        match c {
            '\\' => backslashes += 1,
            '|' if backslashes % 2 == 0 => {
                n += 1;
                backslashes = 0;
            }
            _ => backslashes = 0,
        }
    }
    n
}

#[test]
fn an_accepted_run_carries_its_decision_in_json_and_the_text_table() {
    let dir = tempfile::tempdir().unwrap();
    let reason = "fp8 KV cache costs 25% step time, trades for 2x capacity";
    let (ds, run_id) = decided_history(
        dir.path(),
        &[
            "accept", "--reason", reason, "--by", "alice", "--commit", "abc1234",
        ],
    );
    let (_, d) = points_with_decision(&ds, &run_id);
    assert_eq!(d["outcome"], "accepted");
    assert_eq!(d["by"], "alice");
    assert_eq!(d["reason"], reason, "the JSON has the reason whole");
    assert_eq!(d["commit"], "abc1234");
    assert!(d["at"].as_str().unwrap().starts_with("20"), "{d}");

    // The text table: the decided run's row says who and why, the reason cut to 40
    // characters; no other row has a decision.
    let text = trend(&ds, "table");
    let header = text.lines().nth(1).unwrap();
    assert!(header.trim_end().ends_with("decision"), "{text}");
    let rows: Vec<&str> = text.lines().skip(3).collect();
    assert_eq!(rows.len(), 3, "{text}");
    let shown: String = reason.chars().take(39).collect();
    let cell = format!("accepted by alice: {shown}…");
    assert_eq!(cell.chars().count(), "accepted by alice: ".len() + 40);
    for row in rows {
        if row.contains(&run_id) {
            assert!(row.trim_end().ends_with(&cell), "{row}");
        } else {
            assert!(!row.contains("accepted"), "{row}");
        }
    }
    // CSV has the same column, shortened the same way.
    let csv = trend(&ds, "csv");
    assert!(csv.lines().next().unwrap().ends_with(",decision"), "{csv}");
    assert_eq!(csv.matches(&cell).count(), 1, "{csv}");
}

#[test]
fn a_hostile_reason_breaks_neither_the_markdown_table_nor_the_html_page() {
    let dir = tempfile::tempdir().unwrap();
    // Short enough to be shown whole (after its line break becomes a space).
    let reason = "a|b\n<script>x</script>[x](http://e)";
    let by = "eve|<b>";
    let (ds, run_id) = decided_history(dir.path(), &["reject", "--reason", reason, "--by", by]);
    let (_, d) = points_with_decision(&ds, &run_id);
    assert_eq!(d["outcome"], "rejected");
    assert_eq!(d["by"], by);
    assert_eq!(d["reason"], reason, "the JSON keeps the line break");
    let flat = "a|b <script>x</script>[x](http://e)";
    let cell = format!("rejected by {by}: {flat}");

    // Text: one line per run, the reason on the decided run's line.
    let text = trend(&ds, "table");
    assert_eq!(
        text.lines().count(),
        3 + 3,
        "heading, header, rule, 3 rows\n{text}"
    );
    let row = text.lines().find(|l| l.contains(&run_id)).unwrap();
    assert!(row.trim_end().ends_with(&cell), "{row}");

    // Markdown: every row has the header's cells, and the reason renders as its own
    // characters: no HTML, no link.
    let md = trend(&ds, "markdown");
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 2 + 3, "{md}");
    let pipes = cell_pipes(table[0]);
    assert_eq!(pipes, 12, "eleven columns: {}", table[0]);
    for l in &table {
        assert_eq!(cell_pipes(l), pipes, "{l}\n{md}");
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut cell_text = String::new();
    for ev in Parser::new_ext(&md, Options::ENABLE_TABLES) {
        match ev {
            Event::Html(h) | Event::InlineHtml(h) => panic!("raw HTML {h:?} in\n{md}"),
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) => panic!("a link in\n{md}"),
            Event::Start(Tag::TableHead | Tag::TableRow) => rows.push(Vec::new()),
            Event::Start(Tag::TableCell) => cell_text.clear(),
            Event::Text(t) | Event::Code(t) => cell_text.push_str(&t),
            Event::End(TagEnd::TableCell) => rows.last_mut().unwrap().push(cell_text.clone()),
            _ => {}
        }
    }
    assert_eq!(rows.len(), 4, "header and three runs");
    assert!(rows.iter().all(|r| r.len() == 11), "{rows:?}");
    assert_eq!(rows[0][10], "decision");
    let decided: Vec<&Vec<String>> = rows.iter().filter(|r| r[2] == run_id).collect();
    assert_eq!(decided.len(), 1, "{rows:?}");
    assert_eq!(decided[0][10], cell, "rendered as the same characters");
    assert_eq!(rows.iter().filter(|r| r[10].is_empty()).count(), 2);

    // HTML: the marker and the table hold the reason as text; the only script is the
    // page's own.
    let page_path = dir.path().join("trend.html");
    let (code, _, err) = stepgate(&["trend", &ds, "--html", page_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert_eq!(page.matches("<script").count(), 1, "the sort script alone");
    assert!(!page.contains("<b>"), "raw markup from --by");
    assert_eq!(
        page.matches("<g class=\"marker\">").count(),
        1,
        "one decision"
    );
    let escaped = "a|b &lt;script&gt;x&lt;/script&gt;[x](http://e)";
    let title = page
        .split("<g class=\"marker\"><title>")
        .nth(1)
        .and_then(|s| s.split("</title>").next())
        .unwrap();
    assert!(
        title.starts_with("rejected by eve|&lt;b&gt; at 20"),
        "{title}"
    );
    assert!(title.ends_with(&format!(": {escaped}")), "{title}");
    assert!(page.contains(">rejected</text>"), "the marker's label");
    assert!(
        page.contains("rejected (decision on record)"),
        "in the legend"
    );
    // The table's cell wraps (`<wbr>` after punctuation) and holds the same text.
    assert!(
        page.replace("<wbr>", "")
            .contains(&format!(">rejected by eve|&lt;b&gt;: {escaped}</td>")),
        "the page's table"
    );
}
