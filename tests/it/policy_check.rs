//! `stepgate policy check`: every rule of a policy with what it selects on the example
//! baseline; the counts are recomputed here from the baseline file itself.

use serde_json::Value;

use crate::common;

const BASELINE: &str = "baselines/example-h100-vllm-decode.json";

fn check(policy: &std::path::Path) -> (i32, Value) {
    let b = common::root().join(BASELINE);
    let (code, out, err) = common::run(&[
        "policy",
        "check",
        policy.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    (code, v)
}

fn rule<'a>(c: &'a Value, kind: &str, name: &str) -> &'a Value {
    c["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == kind && r["rule"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}: {c}"))
}

/// Kernel names of the example baseline containing `part`, read from the file.
fn kernels_with(part: &str) -> usize {
    let text = std::fs::read_to_string(common::root().join(BASELINE)).unwrap();
    let b: Value = serde_json::from_str(&text).unwrap();
    let mut names: Vec<&str> = b["samples"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["kernels"].as_object().unwrap().keys().map(String::as_str))
        .filter(|n| n.contains(part))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

#[test]
fn the_example_policy_has_no_dead_rule_on_the_example_baseline() {
    let (code, c) = check(&common::root().join("examples/policy.toml"));
    assert_eq!(code, 0, "{c}");
    crate::schema::assert_stamped("policy-check", &c, stepgate::wire::policy::SCHEMA_VERSION);
    assert_eq!(c["dead"], 0);
    assert_eq!(c["groups"], serde_json::json!(["decode bs=32"]));
    // Single GPU: the optional all-reduce rule selects nothing, and may.
    let nccl = rule(&c, "kernel", "re:^ncclDevKernel_");
    assert_eq!(
        (nccl["selects"].as_u64(), nccl["optional"].as_bool()),
        (Some(0), Some(true))
    );
    // A known category absent here is said, not dead.
    let comm = rule(&c, "category", "communication");
    assert_eq!(
        (comm["selects"].as_u64(), comm["dead"].as_bool()),
        (Some(0), Some(false))
    );
    // The policy file's own threshold (rel 0.15), not the category default.
    assert_eq!(comm["rel"].as_f64(), Some(0.15));
    assert_eq!(rule(&c, "metric", "wall_ns")["selects"], 1);
    // No model: MBU has no samples, which is not the policy's fault.
    let mbu = rule(&c, "metric", "mbu");
    assert_eq!(mbu["selects"], 0);
    assert_eq!(mbu["dead"], false);
}

#[test]
fn a_typo_in_a_kernel_or_category_rule_is_dead_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("policy.toml");
    std::fs::write(
        &p,
        "[[kernel]]\nname = \"flash_atten\"\nrel = 0.2\n\n\
         [[kernel]]\nname = \"xmma_gemm\"\nrel = 0.2\n\n\
         [[category]]\nname = \"comunication\"\nrel = 0.2\n",
    )
    .unwrap();
    let (code, c) = check(&p);
    assert_eq!(code, 1, "{c}");
    assert_eq!(c["dead"], 2);
    let typo = rule(&c, "kernel", "flash_atten");
    assert_eq!(
        (typo["selects"].as_u64(), typo["dead"].as_bool()),
        (Some(0), Some(true))
    );
    let gemm = rule(&c, "kernel", "xmma_gemm");
    assert_eq!(
        gemm["selects"].as_u64(),
        Some(kernels_with("xmma_gemm") as u64)
    );
    assert_eq!(kernels_with("xmma_gemm"), 3);
    assert_eq!(gemm["dead"], false);
    let cat = rule(&c, "category", "comunication");
    assert_eq!(cat["dead"], true);
    assert!(
        cat["detail"]
            .as_str()
            .unwrap()
            .starts_with("no such category"),
        "{cat}"
    );
}
