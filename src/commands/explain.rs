//! `stepgate explain [TERM]`: what a word of stepgate's outputs means (β, MBU, "of roof",
//! shape 2/4, …), from the one glossary the renderers quote ([`crate::glossary`]).

use crate::exit::{Error, Result, OK};
use crate::glossary::{entry, GLOSSARY};

const EXAMPLE: &str = "Examples:
  stepgate explain            every term, one line each
  stepgate explain MBU
  stepgate explain 'of roof'
  stepgate explain beta       (ASCII spellings of β, π, ρ, λ work too)
  stepgate explain one-long-stall   (a verdict rule: the JSON's verdict.rule)";

/// The width `explain` wraps its text to.
const WIDTH: usize = 80;

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// The term (any case; several words in quotes). Without one: every term.
    #[arg(value_name = "TERM", num_args = 0.., trailing_var_arg = true)]
    pub term: Vec<String>,
}

/// `text` on lines of at most `width` columns, continuation lines indented by `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.trim().is_empty() && line.chars().count() + 1 + w.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_owned();
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// `s` in at most `width` characters, cut with "…" at the end.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

pub fn run(args: &Args) -> Result<u8> {
    let text = if args.term.is_empty() {
        let mut out = String::from("Terms (stepgate explain TERM for one):\n");
        for e in GLOSSARY {
            // The gloss up to its first colon or full stop, cut to one line.
            let end = [": ", ". "]
                .iter()
                .filter_map(|p| e.meaning.find(p))
                .min()
                .unwrap_or(e.meaning.len());
            let gloss = e.meaning[..end].trim_end_matches('.');
            let line = format!("  {:<16} {gloss}", e.term);
            out.push_str(&cut(&line, WIDTH));
            out.push('\n');
        }
        out
    } else {
        let want = args.term.join(" ");
        // A verdict's rule id (the JSON's `verdict.rule`) is explained by its condition.
        if let Some(when) = crate::attribution::verdict::rule_when(want.trim()) {
            let text = wrap(
                &format!("{} (a verdict rule): fires when {when}", want.trim()),
                WIDTH,
                "  ",
            );
            crate::commands::stdout::print(&format!("{text}see: docs/verdict-rules.md\n"))?;
            return Ok(crate::exit::OK);
        }
        let e = entry(&want).ok_or_else(|| {
            Error::usage(format!(
                "explain: no term {want:?} in the glossary or the verdict rules; `stepgate \
                 explain` lists every term"
            ))
        })?;
        let mut out = wrap(&format!("{}: {}", e.term, e.meaning), WIDTH, "  ");
        if !e.aliases.is_empty() {
            out.push_str(&wrap(
                &format!("also written: {}", e.aliases.join(", ")),
                WIDTH,
                "  ",
            ));
        }
        if !e.see.is_empty() {
            out.push_str(&format!("see: {}\n", e.see));
        }
        out
    };
    crate::commands::stdout::print(&text)?;
    Ok(OK)
}
