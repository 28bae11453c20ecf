//! docs/kernel-families.md checked against the code: every row of its table, categorized
//! by the built-in rules, gets the category and class the row says; and every kernel name
//! in the real LLM fixtures gets the class a reader gives it from the name alone (the
//! expected classes below are written from the names, not from the code's output).

use std::collections::BTreeSet;
use std::io::Read;

use serde_json::Value;
use stepgate::categories::{class_of, Categorizer};

use crate::common::{fixture, root};

/// The code's (category, class key) of one kernel name.
fn classify(c: &Categorizer, name: &str) -> (String, Option<&'static str>) {
    let cat = c.categorize(name).to_owned();
    let class = class_of(&cat).map(|k| k.key());
    (cat, class)
}

/// The rows of the table under `## The families`: (kernel name, category, class,
/// fixture).
fn doc_rows() -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string(root().join("docs/kernel-families.md")).unwrap();
    let at = text.find("## The families").unwrap();
    text[at..]
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 6, "{l}");
            let name = cells[1].trim_matches('`').to_owned();
            (
                name,
                cells[2].to_owned(),
                cells[3].to_owned(),
                cells[4].to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_split_k_reductions_of_the_table_are_the_ones_the_layer_map_folds() {
    let text = std::fs::read_to_string(root().join("docs/kernel-families.md")).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| split-K reduction"))
        .collect();
    assert_eq!(rows.len(), 3, "cuBLASLt, hipBLASLt and CUTLASS");
    for l in rows {
        let name = l.split('|').nth(2).unwrap().trim().trim_matches('`');
        assert!(
            stepgate::attribution::layers::is_split_k_reduction(name),
            "{name}"
        );
    }
    // Every other GEMM row of the table is a GEMM, not a reduction to fold.
    for l in text
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("| split-K"))
    {
        let cells: Vec<&str> = l.split('|').map(str::trim).collect();
        if cells.get(3) == Some(&"gemm") {
            let name = cells[2].trim_matches('`');
            assert!(
                !stepgate::attribution::layers::is_split_k_reduction(name),
                "{name}"
            );
        }
    }
}

#[test]
fn the_routed_expert_gemms_of_the_table_are_the_ones_the_layer_map_knows() {
    let text = std::fs::read_to_string(root().join("docs/kernel-families.md")).unwrap();
    let mut n = 0;
    for l in text.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = l.split('|').map(str::trim).collect();
        let (family, name) = (cells[1], cells.get(2).map(|c| c.trim_matches('`')));
        let Some(name) = name else { continue };
        let expert =
            family.starts_with("routed-expert GEMM") || family.contains("MoE expert GEMM (MXFP4)");
        if expert {
            n += 1;
        }
        // Only those rows: a router, a dense GEMM or a routing kernel is not an expert.
        if cells.get(3) == Some(&"gemm") || expert {
            assert_eq!(
                stepgate::attribution::layers::is_expert_gemm(name),
                expert,
                "{name}"
            );
        }
    }
    assert_eq!(
        n, 2,
        "vLLM/SGLang fused_moe_kernel and triton_kernels' _matmul_ogs"
    );
}

#[test]
fn every_row_of_the_family_table_is_what_the_code_says() {
    let c = Categorizer::default();
    let rows = doc_rows();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    for (name, cat, class, _) in &rows {
        let (got_cat, got_class) = classify(&c, name);
        assert_eq!(&got_cat, cat, "category of {name}");
        assert_eq!(got_class, Some(class.as_str()), "class of {name}");
    }
    // The fixture a row names holds that kernel name.
    for (name, _, _, fx) in rows.iter().filter(|r| r.3 != "—") {
        let names = kineto_or_nsys_names(fx);
        assert!(names.contains(name), "{fx} has no kernel {name}");
    }
    // Every class row of the doc's class table is a class of the code, in table order.
    let text = std::fs::read_to_string(root().join("docs/kernel-families.md")).unwrap();
    let keys: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect();
    let code: Vec<&str> = stepgate::wire::attribution::KernelClass::ALL
        .iter()
        .map(|k| k.key())
        .collect();
    assert_eq!(keys, code);
}

/// The kernel names of a fixture named by its file stem (Kineto `.json.gz` or nsys
/// `.sqlite`, demangled names).
fn kineto_or_nsys_names(stem: &str) -> BTreeSet<String> {
    let dir = fixture("kineto");
    let k = dir.join(format!("{stem}.json.gz"));
    if k.exists() {
        return kineto_kernel_names(&k);
    }
    let nsys = std::fs::read_dir(fixture("nsys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(stem))
        .unwrap_or_else(|| panic!("no fixture {stem}"));
    let db =
        rusqlite::Connection::open_with_flags(&nsys, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut st = db
        .prepare("SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName")
        .unwrap();
    let names = st
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names
}

fn kineto_kernel_names(path: &std::path::Path) -> BTreeSet<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let j: Value = serde_json::from_str(&text).unwrap();
    j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .filter_map(|e| e["name"].as_str().map(str::to_owned))
        .collect()
}

/// A reader's class of each kernel name of the LLM fixtures, from what the name says:
/// exactly one part of the name must match. `None`: in no class (rocprim's scan
/// trampoline and SGLang's two bookkeeping kernels do nothing an LLM byte model prices).
const BY_NAME: &[(&str, Option<&str>)] = &[
    // GEMMs: cuBLAS(Lt) nvjet and xmma, hipBLASLt Cijk_, CUTLASS SIMT, and the MoE expert
    // GEMMs (TensorRT-LLM bmm_, triton_kernels matmul_ogs).
    ("nvjet_", Some("weights")),
    ("sm90_xmma_gemm", Some("weights")),
    ("Cijk_", Some("weights")),
    ("cutlass_80_simt_sgemm", Some("weights")),
    ("bmm_", Some("weights")),
    ("_matmul_ogs_", Some("weights")),
    // Attention: reads the KV cache (FlashInfer's index build is part of it).
    ("fmhaSm100aKernel", Some("attention")),
    ("flash_fwd_kernel", Some("attention")),
    ("paged_attention_ll4mi", Some("attention")),
    ("kernel_unified_attention", Some("attention")),
    ("reduce_segments", Some("attention")),
    ("create_flashinfer_kv_indices", Some("attention")),
    // KV-cache writes.
    ("reshape_and_cache", Some("kv_write")),
    ("store_kvcache", Some("kv_write")),
    // Collectives.
    ("multimem_all_reduce", Some("communication")),
    ("ncclDevKernel_", Some("communication")),
    // Activation quantization.
    ("quantize_with_block_size", Some("quantize")),
    ("scaled_fp8_quant", Some("quantize")),
    // MoE routing and the combine after the experts.
    ("moe::dev::routing", Some("rest")),
    ("moe::dev::finalize", Some("rest")),
    ("_topk_forward", Some("rest")),
    ("_combined_routing", Some("rest")),
    ("_sum_bitmatrix_rows", Some("rest")),
    ("_finalize_matmul_scatter", Some("rest")),
    // Norms, rope, activations, copies, index ops, inductor pointwise, the argmax.
    ("rms_norm", Some("rest")),
    ("Rmsnorm2dFwd", Some("rest")),
    ("add_rmsnorm_quant", Some("rest")),
    ("rotary_embedding", Some("rest")),
    ("act_and_mul", Some("rest")),
    ("elementwise_kernel", Some("rest")),
    ("multi_tensor_apply", Some("rest")),
    ("vectorized_gather", Some("rest")),
    ("CatArrayBatchedCopy", Some("rest")),
    ("indexSelectLargeIndex", Some("rest")),
    ("at::native::reduce_kernel", Some("rest")),
    ("triton_poi_", Some("rest")),
    ("_copy_page_indices", Some("rest")),
    // Bookkeeping.
    ("trampoline_kernel", None),
    ("resolve_future_token_ids", None),
    ("clamp_position_kernel", None),
];

fn by_name(name: &str) -> Option<&'static str> {
    let hits: Vec<Option<&str>> = BY_NAME
        .iter()
        .filter(|(s, _)| name.contains(s))
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(hits.len(), 1, "{name} matched {} name parts", hits.len());
    hits[0]
}

#[test]
fn every_kernel_of_the_llm_fixtures_gets_the_class_its_name_says() {
    let c = Categorizer::default();
    // (fixture, the classes its kernels must fall in, by the names).
    let cases: [(&str, &[Option<&str>]); 4] = [
        (
            "vllm_b200_eager_prefill_rank0",
            &[
                Some("weights"),
                Some("attention"),
                Some("kv_write"),
                Some("communication"),
                Some("quantize"),
                Some("rest"),
            ],
        ),
        (
            "vllm_mi300x_decode_fullgraph_step",
            &[
                Some("weights"),
                Some("attention"),
                Some("kv_write"),
                Some("rest"),
            ],
        ),
        (
            "sglang_mi300x_qwen3-8b_decode_step",
            &[
                Some("weights"),
                Some("attention"),
                Some("kv_write"),
                Some("rest"),
                None,
            ],
        ),
        (
            "hf_qwen1.5-0.5b_h100_profilerstep",
            &[Some("weights"), Some("attention"), Some("rest")],
        ),
    ];
    for (fx, classes) in cases {
        let names = kineto_kernel_names(&fixture(&format!("kineto/{fx}.json.gz")));
        let mut seen = BTreeSet::new();
        for n in &names {
            let want = by_name(n);
            assert_eq!(classify(&c, n).1, want, "{fx}: {n}");
            seen.insert(want);
        }
        let classes: BTreeSet<Option<&str>> = classes.iter().copied().collect();
        assert_eq!(seen, classes, "{fx}");
    }
}
