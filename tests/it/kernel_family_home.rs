//! Kernel-name patterns have one home, `src/categories/families.rs`: a pattern literal
//! (a name fragment such as `"flash_fwd_kernel"`, a regex such as `r"(?i)all_?reduce"`) or a
//! regex compiled from a literal anywhere else in `src/` fails here, so a classifier asks
//! the family table instead of holding a private copy that drifts from it.

use std::path::Path;

use regex::Regex;
use stepgate::categories::CATEGORIES;

/// Words of kernel names: a literal that holds one and no space is a name pattern (a
/// sentence of an error or a note has spaces).
const KERNEL_WORDS: &[&str] = &[
    "nccl",
    "rccl",
    "gemm",
    "flash",
    "cutlass",
    "cublas",
    "reshape_and_cache",
    "concat_and_cache",
    "kvcache",
    "all_reduce",
    "allreduce",
    "all_?reduce",
    "all_gather",
    "allgather",
    "reduce_scatter",
    "cross_device_reduce",
    "fused_moe",
    "topk",
    "paged_attention",
    "fmha",
    "xqa",
    "splitkv",
    "nvjet",
    "marlin",
    "matmul_ogs",
    "splitkreduce",
    "batchdecode",
    "batchprefill",
    "_fwd_kernel",
    "sendrecv",
    "backward",
    "bwd",
];

/// Literals with a kernel word that are not kernel-name patterns, with why.
const NOT_KERNEL_NAMES: &[(&str, &str)] = &[
    // Model types and quantization methods of a model's config.json.
    ("src/roofline/hfconfig/", ""),
    ("src/roofline/presets.rs", ""),
    // Kineto's header key and autograd's `…Backward` event suffix.
    ("src/source/kineto/header.rs", "nccl_version"),
    ("src/source/kineto/event.rs", "Backward"),
    // A process group's backend (`cuda:nccl`), not a kernel.
    ("src/operating_point/parallel.rs", "nccl"),
    // The attention family's label in the advice, and a verdict rule's id.
    ("src/attribution/attention.rs", "FlashInfer"),
    ("src/attribution/verdict", "gemms-below-roof"),
];

/// The one file that holds patterns.
const HOME: &str = "src/categories/families.rs";

fn literal() -> Regex {
    Regex::new(r##"r#*"([^"]*)"|"((?:[^"\\]|\\.)*)""##).unwrap()
}

/// Kernel-name pattern literals and regexes compiled from literals in one file's code (its
/// test module and comment lines left out).
fn patterns(path: &str, text: &str) -> Vec<String> {
    if path == HOME || path.starts_with("src/synth/") {
        return Vec::new();
    }
    let tests = Regex::new(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s+\w+\s*\{").unwrap();
    let code = &text[..tests.find(text).map_or(text.len(), |m| m.start())];
    let compiled = Regex::new(r#"Regex(Set)?::new\(\s*(r#*"|"|\[)"#).unwrap();
    let lit = literal();
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let l = line.trim_start();
        if l.starts_with("//") {
            continue;
        }
        let at = |what: &str| format!("{path}:{}: {what}: {}", i + 1, l);
        if compiled.is_match(l) && KERNEL_WORDS.iter().any(|w| l.to_lowercase().contains(w)) {
            out.push(at("a kernel-name regex outside the family table"));
            continue;
        }
        for c in lit.captures_iter(l) {
            let v = c.get(1).or(c.get(2)).map_or("", |m| m.as_str());
            let lower = v.to_lowercase();
            let named = KERNEL_WORDS.iter().any(|w| lower.contains(w));
            let exempt = CATEGORIES.contains(&v)
                || NOT_KERNEL_NAMES
                    .iter()
                    .any(|(p, s)| path.starts_with(p) && (s.is_empty() || v == *s));
            if named && !v.contains(char::is_whitespace) && !exempt {
                out.push(at("a kernel-name pattern outside the family table"));
                break;
            }
        }
    }
    out
}

#[test]
fn kernel_name_patterns_live_in_the_family_table_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    crate::common::rust_files(&root.join("src"), &mut files);
    let home = files
        .iter()
        .find(|f| f.0 == HOME)
        .expect("the family table");
    // The scan would find the table's own patterns: it is the one place they are.
    let inside = patterns("src/categories/elsewhere.rs", &home.1);
    assert!(inside.len() > 20, "{}", inside.len());
    let v: Vec<String> = files.iter().flat_map(|(p, t)| patterns(p, t)).collect();
    assert!(v.is_empty(), "{}", v.join("\n"));
}

#[test]
fn a_pattern_planted_outside_the_table_is_reported() {
    // Each the way a classifier held its own pattern before the table.
    let planted = [
        r#"            if n.contains("flash_fwd_kernel") || n.contains("flash_fwd_sm90") {"#,
        r#"    Regex::new(r"(?i)all_?reduce|cross_device_reduce|allreduce").expect("static")"#,
        r#"        r"(?i)paged_attention_v[12]","#,
        r#"    "reshape_and_cache_kernel","#,
        r#"    let what = if name.contains("ncclDevKernel_Generic") {"#,
        r#"static B: LazyLock<RegexSet> = LazyLock::new(|| RegexSet::new([r"(?i)bwd|backward"]).unwrap());"#,
    ];
    for p in planted {
        assert_eq!(patterns("src/operating_point/x.rs", p).len(), 1, "{p}");
    }
    // A sentence, a category name, a comment, a test module and the table itself are not.
    let sentence = r#"    format!("backward attention kernel {}: a training step")"#;
    assert!(patterns("src/operating_point/x.rs", sentence).is_empty());
    assert!(patterns("src/operating_point/kind.rs", r#"    has("gemm")"#).is_empty());
    assert!(patterns("src/a.rs", r#"// n.contains("flash_fwd_kernel")"#).is_empty());
    let test_module = "#[cfg(test)]\nmod tests {\n    f(\"flash_fwd_kernel\");";
    assert!(patterns("src/a.rs", test_module).is_empty());
    assert!(patterns(HOME, r#"    row(F::Gemm, "gemm", r"(?i)gemm|cublas", "")"#).is_empty());
    // An exempt literal is exempt in its own file only.
    let backend = r#"    .is_some_and(|b| b.contains("nccl"))"#;
    assert!(patterns("src/operating_point/parallel.rs", backend).is_empty());
    assert_eq!(patterns("src/operating_point/kind.rs", backend).len(), 1);
}
