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
    out.sort_by(|a, b| a.path.cmp(&b.path));
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

/// Every import cycle, one per strongly connected component: `a → b → a`.
fn cycles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    struct Tarjan<'a> {
        g: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a [String], usize>,
        low: BTreeMap<&'a [String], usize>,
        stack: Vec<&'a [String]>,
        sccs: Vec<Vec<&'a [String]>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a [String]) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in self.g.get(v).into_iter().flatten() {
                let w = w.as_slice();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    self.sccs.push(scc);
                }
            }
        }
    }
    let mut t = Tarjan {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        sccs: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_slice()) {
            t.visit(v);
        }
    }
    t.sccs
        .iter()
        .map(|scc| {
            // A shortest way back to the component's first module, inside the component.
            let start = *scc.iter().min().unwrap();
            let mut prev: BTreeMap<&[String], &[String]> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start]);
            let mut last = start;
            'bfs: while let Some(v) = queue.pop_front() {
                for w in g.get(v).into_iter().flatten() {
                    let w = w.as_slice();
                    if w == start {
                        last = v;
                        break 'bfs;
                    }
                    if scc.contains(&w) && !prev.contains_key(w) {
                        prev.insert(w, v);
                        queue.push_back(w);
                    }
                }
            }
            let mut path = vec![start, last];
            while let Some(&p) = prev.get(path.last().unwrap()) {
                path.push(p);
            }
            path.reverse();
            let shown: Vec<String> = path.iter().map(|m| show(m)).collect();
            let mut line = format!("import cycle: {}", shown.join(" → "));
            if scc.len() + 1 > path.len() {
                let mut all: Vec<String> = scc.iter().map(|m| show(m)).collect();
                all.sort();
                line.push_str(&format!(" (one cycle of {})", all.join(", ")));
            }
            line
        })
        .collect()
}

/// ARCHITECTURE.md's list of long files: path → why it is one concern.
fn long_file_list(md: &str) -> BTreeMap<String, String> {
    let item = Regex::new(r"^- `(?P<path>[^`]+)`:\s*(?P<why>.*)$").unwrap();
    md.lines()
        .skip_while(|l| l.trim() != LONG_FILES_HEADING)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| item.captures(l))
        .map(|c| (c["path"].to_owned(), c["why"].trim().to_owned()))
        .collect()
}

fn long_file_violations(files: &[Source], listed: &BTreeMap<String, String>) -> Vec<String> {
    let lines: BTreeMap<&str, usize> = files
        .iter()
        .map(|f| (f.path.as_str(), lines_without_tests(&f.text)))
        .collect();
    let mut out = Vec::new();
    for (&path, &n) in &lines {
        if n > MAX_LINES && !listed.contains_key(path) {
            out.push(format!(
                "{path} has {n} lines without its tests (more than {MAX_LINES}): split it by \
                 concern, or list it under \"{LONG_FILES_HEADING}\" in ARCHITECTURE.md with why it \
                 is one concern read top to bottom"
            ));
        }
    }
    for (path, why) in listed {
        match lines.get(path.as_str()) {
            None => out.push(format!(
                "ARCHITECTURE.md lists {path} as a long file, but there is no such file"
            )),
            Some(&n) if n <= MAX_LINES => out.push(format!(
                "ARCHITECTURE.md lists {path} as a long file, but it has {n} lines without its \
                 tests: take it off the list"
            )),
            Some(_) if why.is_empty() => out.push(format!(
                "ARCHITECTURE.md lists {path} without saying why it is one concern"
            )),
            Some(_) => {}
        }
    }
    out
}

fn doc_line_violations(files: &[Source]) -> Vec<String> {
    files
        .iter()
        .filter(|f| !f.text.lines().next().is_some_and(|l| l.starts_with("//!")))
        .map(|f| {
            format!(
                "{} does not open with a `//!` line saying what it is for",
                f.path
            )
        })
        .collect()
}

/// A comparison with a `SourceFormat` value outside `src/source/` and `src/wire/`: what a
/// format can say is `SourceFormat::capabilities`, asked instead (a `match` that names a
/// format's label is fine: the compiler points at it when a format is added).
fn format_comparison_violations(files: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        if f.path.starts_with("src/source/") || f.path.starts_with("src/wire/") {
            continue;
        }
        let code = without_tests(&code_only(&f.text));
        let flat: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
        for op in [
            "== SourceFormat::",
            "!= SourceFormat::",
            "matches!(",
            "if let SourceFormat::",
        ] {
            for (i, _) in flat.match_indices(op) {
                let tail = &flat[i..flat.len().min(i + 80)];
                if op != "matches!(" || tail.contains("SourceFormat::") {
                    out.push(format!(
                        "{}: compares formats ({tail:.40}…): ask capabilities()",
                        f.path
                    ));
                }
            }
        }
    }
    out
}

/// A `derive(… Serialize …)` or a `pub use crate::wire…` outside `src/wire/`.
fn wire_violations(files: &[Source]) -> Vec<String> {
    let derive = Regex::new(r"#\[derive\(([^)]*)\)\]").unwrap();
    let serialize = Regex::new(r"(^|[^\w])(serde::)?Serialize\b").unwrap();
    let mut out = Vec::new();
    for f in files.iter().filter(|f| !f.path.starts_with("src/wire/")) {
        let code = code_only(&f.text);
        let line = |pos: usize| code[..pos].matches('\n').count() + 1;
        for d in derive.captures_iter(&code) {
            if serialize.is_match(&d[1]) {
                out.push(format!(
                    "{}:{}: derives Serialize outside src/wire/: move the type into wire",
                    f.path,
                    line(d.get(0).unwrap().start())
                ));
            }
        }
        for (public, tree, range) in use_statements(&code) {
            let reexports_wire = use_leaves(&tree)
                .iter()
                .any(|l| l.len() > 1 && l[0] == "crate" && l[1] == "wire");
            if public && reexports_wire {
                out.push(format!(
                    "{}:{}: re-exports a wire type: use it as crate::wire::… where it is needed",
                    f.path,
                    line(range.start)
                ));
            }
        }
    }
    out
}

/// A `wire` module that depends on a module outside `wire` (only `exit` is allowed: the
/// error type of `StepsReport::join`).
fn wire_leaf_violations(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let in_wire = |m: &[String]| m.first().is_some_and(|s| s == "wire");
    let mut out = Vec::new();
    for (m, deps) in g.iter().filter(|(m, _)| in_wire(m)) {
        for d in deps
            .iter()
            .filter(|d| !in_wire(d) && *d != &["exit".to_owned()])
        {
            out.push(format!(
                "{} depends on {}: wire is a leaf of plain data (move what it names into wire, \
                 or the code that needs it out of wire)",
                show(m),
                show(d)
            ));
        }
    }
    out
}

/// The command layer (`cli`, `commands`, the binaries) is the top: no library module
/// depends on it, and no command depends on the parser that dispatches to it.
fn command_layer_violations(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
    let top = |m: &[String]| m.first().is_some_and(|s| s == "cli" || s == "commands");
    let mut out = Vec::new();
    for (m, deps) in g {
        for d in deps {
            let from_library = !top(m) && top(d);
            let command_to_parser =
                m.first().is_some_and(|s| s == "commands") && d.first().is_some_and(|s| s == "cli");
            if from_library || command_to_parser {
                out.push(format!(
                    "{} depends on {}: the command layer is the top (pass what a command needs \
                     in as an argument, or move the shared piece below the commands)",
                    show(m),
                    show(d)
                ));
            }
        }
    }
    out
}

/// A fixed-size array of the class count (`[0; 6]`, `[T; 5]`, the count before the
/// last class) in a file that names `KernelClass`: class-indexed arrays are sized by
/// `KernelClass::COUNT`, so a new class row cannot compile into an index panic.
fn class_array_violations(files: &[Source], count: usize) -> Vec<String> {
    let sized = Regex::new(&format!(r";\s*({}|{})\s*\]", count, count - 1)).unwrap();
    let mut out = Vec::new();
    for f in files {
        let code = code_only(&f.text);
        if !code.contains("KernelClass") {
            continue;
        }
        for m in sized.find_iter(&code) {
            out.push(format!(
                "{}:{}: a fixed-size array of the class count: size it by KernelClass::COUNT",
                f.path,
                code[..m.start()].matches('\n').count() + 1
            ));
        }
    }
    out
}

/// The two files a kernel class's rows live in: its data (`wire::class_table`) and its
/// behaviour (`attribution::class_rules`).
const CLASS_TABLES: [&str; 2] = ["src/wire/class_table.rs", "src/attribution/class_rules.rs"];

/// A match arm on a kernel class (`KernelClass::Weights =>`, `(KernelClass::Rest, _) if
/// x =>`) outside the class tables: what a class does is its row, so a new class is one
/// row and no match elsewhere needs an arm for it (`==` on one class stays fine).
fn class_match_violations(files: &[Source]) -> Vec<String> {
    let arm = Regex::new(r"KernelClass::[A-Z]\w*[^;{}\n]*=>").unwrap();
    let mut out = Vec::new();
    for f in files
        .iter()
        .filter(|f| !CLASS_TABLES.contains(&f.path.as_str()))
    {
        let code = without_tests(&code_only(&f.text));
        for m in arm.find_iter(&code) {
            out.push(format!(
                "{}:{}: a match arm on a kernel class: put what the class does in its row of \
                 src/attribution/class_rules.rs (or compare one class with ==)",
                f.path,
                code[..m.start()].matches('\n').count() + 1
            ));
        }
    }
    out
}

fn assert_none(what: &str, v: Vec<String>) {
    assert!(v.is_empty(), "{what}:\n{}", v.join("\n"));
}

#[test]
fn no_import_cycle_between_modules() {
    assert_none("import cycles", cycles(&graph(&sources())));
}

/// The graph folded onto top-level modules: `a::x → b::y` becomes `a → b`. Two modules can
/// reach each other through different submodules (`baseline::file → dataset::store`,
/// `dataset::history → baseline::stats`) with no cycle among the submodules; folded, that
/// is a circle, and the order ARCHITECTURE.md gives the top-level modules forbids it.
fn top_level(
    g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let head = |m: &[String]| m.first().map(|h| vec![h.clone()]).unwrap_or_default();
    let mut out: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (from, tos) in g {
        let f = head(from);
        let deps = out.entry(f.clone()).or_default();
        for t in tos {
            let t = head(t);
            if t != f && !t.is_empty() && !f.is_empty() {
                deps.insert(t);
            }
        }
    }
    out
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    assert_none(
        "top-level import cycles",
        cycles(&top_level(&graph(&sources()))),
    );
}

#[test]
fn a_top_level_circle_through_different_submodules_is_reported() {
    let files = crate_of(&[
        ("src/lib.rs", "pub mod a;\npub mod b;\n"),
        ("src/a/mod.rs", "//! a\npub mod x;\npub mod y;\n"),
        ("src/a/x.rs", "//! x\nuse crate::b::z::f;\n"),
        ("src/a/y.rs", "//! y\npub fn g() {}\n"),
        ("src/b/mod.rs", "//! b\npub mod z;\npub mod w;\n"),
        ("src/b/z.rs", "//! z\npub fn f() {}\n"),
        ("src/b/w.rs", "//! w\npub fn h() { crate::a::y::g() }\n"),
    ]);
    let g = graph(&files);
    assert!(cycles(&g).is_empty(), "no cycle among submodules");
    let found = cycles(&top_level(&g));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("a → b → a") || found[0].contains("b → a → b"),
        "{found:?}"
    );
}

#[test]
fn long_files_are_the_ones_architecture_md_lists() {
    let listed = long_file_list(&architecture_md());
    assert!(
        !listed.is_empty(),
        "ARCHITECTURE.md has no \"{LONG_FILES_HEADING}\" list"
    );
    assert_none("long files", long_file_violations(&sources(), &listed));
}

#[test]
fn every_file_opens_with_a_doc_line() {
    assert_none("files without a //! line", doc_line_violations(&sources()));
}

#[test]
fn serialized_types_live_in_wire_and_are_not_re_exported() {
    assert_none("wire", wire_violations(&sources()));
}

#[test]
fn no_format_comparison_outside_the_readers() {
    assert_none(
        "format comparisons",
        format_comparison_violations(&sources()),
    );
}

#[test]
fn a_format_comparison_is_reported() {
    let files = crate_of(&[
        (
            "src/source/mod.rs",
            "//! s\nfn f(x: F) -> bool { x == SourceFormat::Nsys }\n",
        ),
        (
            "src/timing/a.rs",
            "//! a\nfn f(x: F) -> bool {\n    x.format\n        == SourceFormat::Kineto\n}\n",
        ),
        (
            "src/timing/b.rs",
            "//! b\nfn f(x: F) -> bool { matches!(x, SourceFormat::Rocpd) }\n",
        ),
        (
            "src/timing/c.rs",
            "//! c\nfn f(x: F) -> bool { x.capabilities().launch_links }\n",
        ),
    ]);
    let v = format_comparison_violations(&files);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("src/timing/a.rs"), "{v:?}");
    assert!(v[1].starts_with("src/timing/b.rs"), "{v:?}");
}

#[test]
fn wire_depends_on_nothing_outside_it_but_exit() {
    assert_none("wire", wire_leaf_violations(&graph(&sources())));
}

#[test]
fn nothing_below_the_command_layer_imports_it() {
    assert_none(
        "command layer",
        command_layer_violations(&graph(&sources())),
    );
}

#[test]
fn a_library_module_importing_a_command_is_reported() {
    let files = vec![
        Source {
            path: "src/operating_point/sidecar.rs".into(),
            text: "use crate::commands::numbers::MAX_BATCH;".into(),
        },
        Source {
            path: "src/commands/man.rs".into(),
            text: "use crate::cli::Cli;".into(),
        },
        Source {
            path: "src/commands/numbers.rs".into(),
            text: "pub use crate::limits::MAX_BATCH;".into(),
        },
        Source {
            path: "src/cli.rs".into(),
            text: "use crate::commands::man;".into(),
        },
        Source {
            path: "src/limits.rs".into(),
            text: String::new(),
        },
    ];
    let v = command_layer_violations(&graph(&files));
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v.iter()
            .any(|l| l.starts_with("commands::man depends on cli")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|l| l.starts_with("operating_point::sidecar depends on commands")),
        "{v:?}"
    );
}

#[test]
fn class_arrays_are_sized_by_the_class_table() {
    let n = stepgate::wire::attribution::KernelClass::COUNT;
    assert_none("class arrays", class_array_violations(&sources(), n));
}

#[test]
fn what_a_class_does_is_its_row_not_a_match_arm() {
    assert_none("class match arms", class_match_violations(&sources()));
}

// The checks themselves, on small made-up crates: each must fail where it should.

#[test]
fn a_class_array_of_a_literal_size_is_reported() {
    let files = crate_of(&[
        (
            "src/a.rs",
            "//! a\nuse crate::wire::attribution::KernelClass;\nfn f() -> [i64; 6] { [0; KernelClass::COUNT] }\n",
        ),
        // A file that never names a class may size its arrays as it likes.
        ("src/b.rs", "//! b\nfn g() -> [u8; 6] { [0; 6] }\n"),
    ]);
    let v = class_array_violations(&files, 6);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("src/a.rs:3:"), "{}", v[0]);
}

#[test]
fn a_match_arm_on_a_class_outside_the_tables_is_reported() {
    let files = crate_of(&[
        (
            "src/a.rs",
            "//! a\nuse crate::wire::attribution::KernelClass;\nfn f(c: KernelClass) -> u8 {\n    match c {\n        KernelClass::Weights => 1,\n        _ => 0,\n    }\n}\n",
        ),
        (
            "src/b.rs",
            "//! b\nfn g(c: KernelClass, s: bool) -> u8 {\n    match (c, s) {\n        (KernelClass::Rest, true) if s => 1,\n        _ => 0,\n    }\n}\n",
        ),
        // One class compared, a `matches!` without arms, and the tables themselves: fine.
        (
            "src/c.rs",
            "//! c\nfn h(c: KernelClass) -> bool {\n    c == KernelClass::Attention || matches!(Some(c), Some(KernelClass::Rest) | None)\n}\n",
        ),
        (
            "src/attribution/class_rules.rs",
            "//! r\nfn r(c: KernelClass) -> u8 {\n    match c {\n        KernelClass::Weights => 1,\n        _ => 0,\n    }\n}\n",
        ),
        // A test module may match on classes.
        (
            "src/d.rs",
            "//! d\n#[cfg(test)]\nmod tests {\n    fn t(c: KernelClass) -> u8 {\n        match c {\n            KernelClass::Weights => 1,\n            _ => 0,\n        }\n    }\n}\n",
        ),
    ]);
    let v = class_match_violations(&files);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("src/a.rs:5:"), "{}", v[0]);
    assert!(v[1].starts_with("src/b.rs:4:"), "{}", v[1]);
}

fn crate_of(files: &[(&str, &str)]) -> Vec<Source> {
    files.iter().map(|(p, t)| src(p, t)).collect()
}

/// Where printing is allowed: the command layer, and below it only what must write as it
/// happens — `output` (the one writer of stdout and files), `phases` (profiling marks,
/// timed when they happen) and the nsys loader's terminal spinner.
const MAY_PRINT: [&str; 7] = [
    "src/commands/",
    "src/cli/",
    "src/main.rs",
    "src/bin/",
    "src/output/",
    "src/phases.rs",
    "src/source/nsys/progress.rs",
];

/// Library code that prints (`println!`, `eprintln!`, `print!`, `eprint!`, a handle on
/// stdout or stderr) outside [`MAY_PRINT`]: it returns what it has to say, and the command
/// layer prints it (tests excepted).
fn printing_violations(files: &[Source]) -> Vec<String> {
    let print = Regex::new(r"\b(e?println!|e?print!)|io::(stdout|stderr)\(\)").unwrap();
    let mut out = Vec::new();
    for f in files
        .iter()
        .filter(|f| !MAY_PRINT.iter().any(|p| f.path.starts_with(p)))
    {
        let code = without_tests(&code_only(&f.text));
        for m in print.find_iter(&code) {
            out.push(format!(
                "{}:{}: library code prints: return the lines and let the command print them",
                f.path,
                code[..m.start()].matches('\n').count() + 1
            ));
        }
    }
    out
}

#[test]
fn library_code_does_not_print() {
    assert_none("printing", printing_violations(&sources()));
}

#[test]
fn a_library_file_that_prints_is_reported() {
    let files = crate_of(&[
        (
            "src/dataset/store.rs",
            "fn f() {\n    eprintln!(\"x\");\n}\n",
        ),
        (
            "src/a.rs",
            "fn g() {\n\n    let _ = writeln!(std::io::stderr(), \"y\");\n}\n",
        ),
        ("src/commands/steps.rs", "fn h() { println!(\"ok\"); }\n"),
        (
            "src/b.rs",
            "// eprintln! in a comment\nconst S: &str = \"println!\";\n",
        ),
        (
            "src/c.rs",
            "#[cfg(test)]\nmod tests {\n    fn t() { eprintln!(\"in a test\"); }\n}\n",
        ),
    ]);
    let v = printing_violations(&files);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("src/dataset/store.rs:2:"), "{}", v[0]);
    assert!(v[1].starts_with("src/a.rs:3:"), "{}", v[1]);
}

#[test]
fn a_two_module_cycle_is_reported_and_named() {
    let files = crate_of(&[
        ("src/lib.rs", "//! root\npub mod a;\npub mod b;\n"),
        (
            "src/a.rs",
            "//! a\nuse crate::b::{self, B};\npub struct A;\n",
        ),
        (
            "src/b.rs",
            "//! b\npub struct B;\npub fn f() -> usize { std::mem::size_of::<crate::a::A>() }\n",
        ),
    ]);
    assert_eq!(cycles(&graph(&files)), vec!["import cycle: a → b → a"]);
}

#[test]
fn tests_comments_strings_and_children_make_no_edge() {
    let files = crate_of(&[
        ("src/lib.rs", "//! root\npub mod a;\npub mod b;\n"),
        (
            "src/a/mod.rs",
            "//! a: see crate::b\npub mod c;\nuse self::c::C; // crate::b::B\n\
             const S: &str = \"crate::b::B\";\nconst R: &str = r#\"use crate::b::B;\"#;\n\
             const BR: &[u8] = br#\"{\"#;\nconst Q: char = '\\'';\nconst O: char = '{';\n\
             #[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
        ),
        ("src/a/c.rs", "//! c\npub struct C;\n"),
        ("src/b.rs", "//! b\nuse crate::a::c::C;\npub struct B;\n"),
    ]);
    let g = graph(&files);
    assert!(g[&vec!["a".to_owned()]].is_empty(), "{g:?}");
    assert!(cycles(&g).is_empty());
}

#[test]
fn super_resolves_from_the_file_and_from_inline_modules() {
    let files = crate_of(&[
        ("src/lib.rs", "//! root\npub mod x;\n"),
        ("src/x/mod.rs", "//! x\npub mod y;\npub mod z;\n"),
        (
            "src/x/y.rs",
            "//! y\nuse super::z::{Z as Zed};\npub mod inner {\n    use super::super::w;\n}\n",
        ),
        ("src/x/z.rs", "//! z\npub struct Z;\n"),
        ("src/x/w.rs", "//! w\n"),
    ]);
    let g = graph(&files);
    let y = vec!["x".to_owned(), "y".to_owned()];
    let want: BTreeSet<Vec<String>> = [["x", "z"], ["x", "w"]]
        .iter()
        .map(|p| p.iter().map(|s| (*s).to_owned()).collect())
        .collect();
    assert_eq!(g[&y], want);
}

#[test]
fn a_long_file_fails_unless_listed_and_its_tests_do_not_count() {
    let body = "fn f() {}\n".repeat(MAX_LINES);
    let long = format!("//! long\n{body}");
    let short_with_tests = format!(
        "//! short\n{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "fn f() {}\n".repeat(10),
        "    fn g() {}\n".repeat(MAX_LINES)
    );
    let files = crate_of(&[("src/long.rs", &long), ("src/short.rs", &short_with_tests)]);
    let v = long_file_violations(&files, &BTreeMap::new());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("src/long.rs has 501 lines"), "{v:?}");

    let md = format!("# x\n\n{LONG_FILES_HEADING}\n- `src/long.rs`: one table.\n- `src/short.rs`: also.\n\n## Next\n- `src/other.rs`: not in the list.\n");
    let listed = long_file_list(&md);
    assert_eq!(listed.len(), 2);
    let v = long_file_violations(&files, &listed);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("src/short.rs") && v[0].contains("take it off"),
        "{v:?}"
    );
}

#[test]
fn a_file_without_a_doc_line_is_reported() {
    let files = crate_of(&[("src/a.rs", "//! a\n"), ("src/b.rs", "// b\nuse x;\n")]);
    assert_eq!(
        doc_line_violations(&files),
        vec!["src/b.rs does not open with a `//!` line saying what it is for"]
    );
}

#[test]
fn serialize_outside_wire_and_wire_re_exports_are_reported() {
    let files = crate_of(&[
        (
            "src/a.rs",
            "//! a\n#[derive(\n    Debug,\n    serde::Serialize,\n)]\npub struct A;\n\
             #[derive(Debug, Deserialize)]\npub struct In;\n\
             // #[derive(Serialize)]\n\
             pub use crate::wire::steps::{Step, StepsReport as Report};\n\
             use crate::wire::gate::Verdict;\n",
        ),
        (
            "src/wire/x.rs",
            "//! x\n#[derive(Serialize)]\npub struct X;\n",
        ),
    ]);
    let v = wire_violations(&files);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].starts_with("src/a.rs:2: derives Serialize"), "{v:?}");
    assert!(
        v[1].starts_with("src/a.rs:10: re-exports a wire type"),
        "{v:?}"
    );
}

#[test]
fn a_wire_module_naming_a_computing_module_is_reported() {
    let files = crate_of(&[
        (
            "src/lib.rs",
            "//! root\npub mod exit;\npub mod trace;\npub mod wire;\n",
        ),
        ("src/exit.rs", "//! exit\n"),
        ("src/trace.rs", "//! trace\npub enum SourceFormat {}\n"),
        ("src/wire/mod.rs", "//! wire\npub mod a;\npub mod b;\n"),
        (
            "src/wire/a.rs",
            "//! a\nuse super::b::B;\npub fn f() -> crate::exit::Error { todo!() }\n\
             pub struct A(crate::trace::SourceFormat);\n",
        ),
        ("src/wire/b.rs", "//! b\npub struct B;\n"),
    ]);
    assert_eq!(
        wire_leaf_violations(&graph(&files)),
        vec![
            "wire::a depends on trace: wire is a leaf of plain data (move what it names into \
             wire, or the code that needs it out of wire)"
        ]
    );
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
