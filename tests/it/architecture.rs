//! The structural rules of ARCHITECTURE.md, checked on `src/` itself: no import cycle
//! between modules, no file over 500 lines that ARCHITECTURE.md does not list as one
//! concern, a `//!` line opening every file, and every serialized type in `wire`, a leaf
//! module, with no re-export of it elsewhere.
//!
//! The parser is deliberately small: it knows how this crate writes paths (`use` trees
//! rooted at `crate`, `super` or `self`, and inline `crate::…`/`super::…` paths), drops
//! comments, string contents and `#[cfg(test)] mod … { … }` blocks, and treats each file as
//! one module. Each check is a function over in-memory files, so the tests at the end can
//! show that it fails where it should.

mod planted;
mod rules;
use planted::crate_of;
use rules::{
    assert_none, class_array_violations, class_match_violations, command_layer_violations, cycles,
    doc_line_violations, long_file_list, long_file_violations, wire_leaf_violations,
    wire_violations,
};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;

/// Files longer than this (counted without their test module) must be listed in
/// ARCHITECTURE.md.
const MAX_LINES: usize = 500;

/// The ARCHITECTURE.md heading whose bullet list is the long-file allowlist.
const LONG_FILES_HEADING: &str = "## Files over 500 lines";

/// One source file: its path from the crate root (`src/a/b.rs`) and its text.
struct Source {
    path: String,
    text: String,
}

fn src(path: &str, text: &str) -> Source {
    Source {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// Every `.rs` file under `src/`, in path order.
fn sources() -> Vec<Source> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<Source>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap();
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(Source {
                    path: rel.join("/"),
                    text: std::fs::read_to_string(&path).unwrap(),
                });
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    walk(&root.join("src"), root, &mut out);
    // A module's tests moved to a file of their own (`#[cfg(test)] mod tests;`) are test
    // code, as a `#[cfg(test)] mod tests { … }` block is: left out like one.
    let tests = test_module_files(&out);
    out.retain(|s| !tests.contains(&s.path));
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The files of modules declared `#[cfg(test)] mod NAME;`: `DIR/NAME.rs` beside a
/// `mod.rs`, `lib.rs` or `main.rs`, else `FILE_STEM/NAME.rs`.
fn test_module_files(sources: &[Source]) -> std::collections::BTreeSet<String> {
    let decl = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    let mut out = std::collections::BTreeSet::new();
    for s in sources {
        for c in decl.captures_iter(&s.text) {
            let name = &c[3];
            let (dir, file) = s.path.rsplit_once('/').unwrap_or(("", &s.path));
            let base = match file {
                "mod.rs" | "lib.rs" | "main.rs" => dir.to_owned(),
                f => format!("{dir}/{}", f.trim_end_matches(".rs")),
            };
            out.insert(format!("{base}/{name}.rs"));
        }
    }
    out
}

fn architecture_md() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md")).unwrap()
}

/// The library module a file is: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`, `src/lib.rs`
/// the crate root. `src/main.rs` and `src/bin/*` are other crates: None.
fn module_of(path: &str) -> Option<Vec<String>> {
    let rel = path.strip_prefix("src/")?.strip_suffix(".rs")?;
    if rel == "main" || rel.starts_with("bin/") {
        return None;
    }
    if rel == "lib" {
        return Some(Vec::new());
    }
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    Some(parts)
}

fn show(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// At the `r` of a raw string (`r"`, `r#"`, also after `b`), the number of its hashes.
fn raw_string_at(c: &[char], i: usize) -> Option<usize> {
    let starts_token = |j: usize| j == 0 || !is_ident(c[j - 1]);
    if c[i] != 'r' || !(starts_token(i) || (i > 0 && c[i - 1] == 'b' && starts_token(i - 1))) {
        return None;
    }
    let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
    (c.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// The code of a file with comments removed and the contents of string and char literals
/// blanked: every removed character becomes a space, newlines stay, so line numbers and
/// braces are those of the code alone.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_at(&c, i) {
            // A raw string: r"…", r#"…"#, br#"…"#; it ends at a quote and as many hashes.
            let open = i + 1 + hashes;
            out.extend(&c[i..=open]);
            i = open + 1;
            while i < c.len() {
                if c[i] == '"'
                    && c[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == '#')
                        .count()
                        == hashes
                {
                    out.extend(&c[i..=i + hashes]);
                    i += hashes + 1;
                    break;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{1F600}'), else a lifetime ('a), left as code.
            let end = if next == Some('\\') {
                // The escape's first character may itself be a quote: '\''.
                c.get(i + 3..)
                    .and_then(|rest| rest.iter().position(|&x| x == '\''))
                    .map(|p| i + 3 + p)
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    out.push('\'');
                    (i + 1..e).for_each(|_| out.push(' '));
                    out.push('\'');
                    i = e + 1;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The index just past the `}` that closes the `{` at `open` (the code has no comments or
/// string contents left to confuse the count).
fn closing_brace(code: &str, open: usize) -> usize {
    let mut depth = 0;
    for (i, b) in code.bytes().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Byte ranges of the `#[cfg(test)] mod NAME { … }` blocks.
fn test_blocks(code: &str) -> Vec<(usize, usize)> {
    let re = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{").unwrap();
    re.find_iter(code)
        .map(|m| (m.start(), closing_brace(code, m.end() - 1)))
        .collect()
}

/// The code without its test blocks (blanked, newlines kept).
fn without_tests(code: &str) -> String {
    let mut out = code.to_owned();
    for (a, b) in test_blocks(code) {
        let blanked: String = code[a..b]
            .chars()
            .map(|ch| if ch == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(a..b, &blanked);
    }
    out
}

/// Lines of a file, its test blocks not counted.
fn lines_without_tests(text: &str) -> usize {
    let code = code_only(text);
    let test_lines: usize = test_blocks(&code)
        .iter()
        .map(|&(a, b)| code[a..b].matches('\n').count() + 1)
        .sum();
    text.lines().count() - test_lines
}

/// The leaves of a `use` tree: `a::{b, c::{d, e as f}, self}` → a::b, a::c::d, a::c::e, a.
fn use_leaves(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    expand(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        let mut parts = Vec::new();
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&inner[start..]);
        let len = prefix.len();
        prefix.extend(head);
        for p in parts.into_iter().filter(|p| !p.is_empty()) {
            expand(p, prefix, out);
        }
        prefix.truncate(len);
    } else {
        // A leaf: `path`, `path@alias` (see `use_statements`), `self` or `*`.
        let path = tree.split('@').next().unwrap_or(tree);
        let mut leaf = prefix.clone();
        leaf.extend(
            path.split("::")
                .filter(|s| !s.is_empty() && *s != "self" && *s != "*")
                .map(str::to_owned),
        );
        out.push(leaf);
    }
}

/// Every `use` statement in the code: whether it is `pub` (of any scope), its tree with
/// each ` as ` written `@` (the tree loses its spaces), and where it is.
fn use_statements(code: &str) -> Vec<(bool, String, std::ops::Range<usize>)> {
    let re = Regex::new(r"(?P<vis>\bpub(\s*\([^)]*\))?\s+)?\buse\s+(?P<tree>[^;]+);").unwrap();
    let alias = Regex::new(r"\s+as\s+").unwrap();
    re.captures_iter(code)
        .map(|c| {
            let tree = alias.replace_all(&c["tree"], "@").into_owned();
            (c.name("vis").is_some(), tree, c.get(0).unwrap().range())
        })
        .collect()
}

/// The module a path names from `ctx`: `crate::…` from the root, `super::`/`self::` from
/// `ctx`; None for other roots (std, other crates, a child by its bare name).
fn absolute(segs: &[String], ctx: &[String]) -> Option<Vec<String>> {
    let first = segs.first()?;
    let mut base = match first.as_str() {
        "crate" => return Some(segs[1..].to_vec()),
        "super" | "self" => ctx.to_vec(),
        _ => return None,
    };
    let mut rest = segs;
    while let Some(s) = rest.first() {
        match s.as_str() {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module dependency graph: each library module and the modules it names outside its
/// tests (the deepest module that prefixes each path), leaving out itself and its own
/// descendants (declaring or organising children is not a dependency).
fn graph(files: &[Source]) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let modules: BTreeSet<Vec<String>> = files.iter().filter_map(|f| module_of(&f.path)).collect();
    let inline_mod = Regex::new(r"\bmod\s+(\w+)\s*\{").unwrap();
    let inline_path = Regex::new(r"(?:^|[^\w:])((?:crate|super|self)(?:::\w+)+)").unwrap();
    let mut g = BTreeMap::new();
    for f in files {
        let Some(m) = module_of(&f.path) else {
            continue;
        };
        let code = without_tests(&code_only(&f.text));
        // Inline modules (`mod bounds { … }`) shift what `super` and `self` mean inside.
        let inner: Vec<(usize, usize, String)> = inline_mod
            .captures_iter(&code)
            .map(|c| {
                let whole = c.get(0).unwrap();
                (
                    whole.start(),
                    closing_brace(&code, whole.end() - 1),
                    c[1].to_owned(),
                )
            })
            .collect();
        let ctx = |pos: usize| {
            let mut ctx = m.clone();
            ctx.extend(
                inner
                    .iter()
                    .filter(|(a, b, _)| *a <= pos && pos < *b)
                    .map(|(_, _, n)| n.clone()),
            );
            ctx
        };
        let mut named = Vec::new();
        let mut rest = code.clone();
        for (_, tree, range) in use_statements(&code) {
            let at = ctx(range.start);
            for leaf in use_leaves(&tree) {
                named.extend(absolute(&leaf, &at));
            }
            rest.replace_range(range.clone(), &" ".repeat(range.len()));
        }
        for c in inline_path.captures_iter(&rest) {
            let p = c.get(1).unwrap();
            let segs: Vec<String> = p.as_str().split("::").map(str::to_owned).collect();
            named.extend(absolute(&segs, &ctx(p.start())));
        }
        let deps: &mut BTreeSet<Vec<String>> = g.entry(m.clone()).or_default();
        for path in named {
            let target = (0..=path.len())
                .rev()
                .map(|i| path[..i].to_vec())
                .find(|p| modules.contains(p));
            if let Some(t) = target {
                if !t.starts_with(&m) {
                    deps.insert(t);
                }
            }
        }
    }
    g
}

#[test]
fn use_trees_expand_to_their_leaves() {
    let leaves = use_leaves("crate::a::{b, c::{d, e@f}, self}");
    let want: Vec<Vec<String>> = [
        vec!["crate", "a", "b"],
        vec!["crate", "a", "c", "d"],
        vec!["crate", "a", "c", "e"],
        vec!["crate", "a"],
    ]
    .iter()
    .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
    .collect();
    assert_eq!(leaves, want);
}
