//! A manual visual check, not a test or a benchmark: render the gate markdown snapshot to
//! HTML with GitHub-like table styling so it can be screenshotted and looked at.
//!
//! `STEPGATE_HTML_OUT=/tmp/gate.html cargo bench --bench render_gate_html`, then
//! `chromium --headless --no-sandbox --disable-gpu --screenshot=/tmp/gate.png
//! --window-size=1200,1800 file:///tmp/gate.html`.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let snap_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/snapshots/it__gate__gate_markdown.snap");
    let snap = std::fs::read_to_string(&snap_path)?;
    // The body follows the second `---` line of the insta header.
    let md = snap
        .splitn(3, "---\n")
        .nth(2)
        .ok_or("snapshot has no insta header")?;
    let mut opts = pulldown_cmark::Options::empty();
    opts.insert(pulldown_cmark::Options::ENABLE_TABLES);
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new_ext(md, opts));
    let page = format!(
        "<!doctype html><meta charset=utf-8><style>body{{font-family:-apple-system,Segoe UI,\
         Helvetica,Arial,sans-serif;font-size:14px;max-width:1012px;margin:24px}}\
         table{{border-collapse:collapse;margin:8px 0}}th,td{{border:1px solid #d0d7de;\
         padding:6px 13px}}tr:nth-child(2n){{background:#f6f8fa}}code{{background:#eff1f3;\
         padding:2px 4px;border-radius:6px;font-size:85%}}blockquote{{color:#59636e;\
         border-left:4px solid #d0d7de;margin:0;padding:0 1em}}</style>{html}"
    );
    let out = std::env::var("STEPGATE_HTML_OUT").unwrap_or_else(|_| "/tmp/gate.html".into());
    std::fs::write(&out, page)?;
    println!("wrote {out}");
    Ok(())
}
