//! The rule checkers (cycles, long files, doc lines, format comparisons, wire, command layer, class tables) and the tests that run them over `src/`.

use super::*;

/// Every import cycle, one per strongly connected component: `a → b → a`.
pub(super) fn cycles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<String> {
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
pub(super) fn long_file_list(md: &str) -> BTreeMap<String, String> {
    let item = Regex::new(r"^- `(?P<path>[^`]+)`:\s*(?P<why>.*)$").unwrap();
    md.lines()
        .skip_while(|l| l.trim() != LONG_FILES_HEADING)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| item.captures(l))
        .map(|c| (c["path"].to_owned(), c["why"].trim().to_owned()))
        .collect()
}

pub(super) fn long_file_violations(
    files: &[Source],
    listed: &BTreeMap<String, String>,
) -> Vec<String> {
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

pub(super) fn doc_line_violations(files: &[Source]) -> Vec<String> {
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
pub(super) fn wire_violations(files: &[Source]) -> Vec<String> {
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
pub(super) fn wire_leaf_violations(
    g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<String> {
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
pub(super) fn command_layer_violations(
    g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<String> {
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
pub(super) fn class_array_violations(files: &[Source], count: usize) -> Vec<String> {
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
pub(super) fn class_match_violations(files: &[Source]) -> Vec<String> {
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

pub(super) fn assert_none(what: &str, v: Vec<String>) {
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
    let md = architecture_md();
    assert!(
        md.lines().any(|l| l.trim() == LONG_FILES_HEADING),
        "ARCHITECTURE.md has no \"{LONG_FILES_HEADING}\" section"
    );
    let listed = long_file_list(&md);
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
