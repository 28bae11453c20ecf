//! Each rule fails on a planted violation: the checkers are tested on small made-up sources.

use super::*;

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

pub(super) fn crate_of(files: &[(&str, &str)]) -> Vec<Source> {
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
