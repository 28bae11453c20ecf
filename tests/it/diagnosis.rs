//! Diagnosis from the capture alone: the per-class attribution checked against a second
//! computation written here (bytes from the model card by hand, times from the raw rows of
//! the fixture by an elementary-interval sweep), the waterfall's exactness on every
//! fixture, and generated captures with one planted cause each.

mod layers;
mod pricing;

pub(crate) use layers::slower_attention;

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, run, steps_json};

/// The five classes in the order of the JSON's `class` values, and "no class".
const CLASSES: [&str; 5] = ["weights", "attention", "kv_write", "communication", "rest"];

/// Every GPU op of a fixture: (name, start ns, end ns).
type Ops = Vec<(String, i64, i64)>;

/// Kineto `ts`/`dur` (µs with three decimals) to ns, exactly: the integer part and the
/// fraction are converted apart, so the f64 rounding of the full number never reaches a
/// whole nanosecond.
fn us_to_ns(v: &Value) -> i64 {
    let x = v.as_f64().unwrap();
    let whole = x.trunc();
    whole as i64 * 1000 + ((x - whole) * 1000.0).round() as i64
}

fn kineto_ops(path: &Path) -> (Ops, String) {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let j: Value = serde_json::from_str(&text).unwrap();
    let mut ops = Vec::new();
    let mut annotation = String::new();
    for e in j["traceEvents"].as_array().unwrap() {
        let cat = e["cat"].as_str().unwrap_or("");
        let name = e["name"].as_str().unwrap_or("").to_owned();
        if cat == "user_annotation" && name.starts_with("execute_") {
            annotation = name;
        } else if matches!(cat, "kernel" | "gpu_memcpy" | "gpu_memset") {
            let s = us_to_ns(&e["ts"]);
            ops.push((name, s, s + us_to_ns(&e["dur"])));
        }
    }
    (ops, annotation)
}

fn nsys_ops(path: &Path) -> (Ops, String) {
    let db =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut ops: Ops = Vec::new();
    for sql in [
        "SELECT s.value, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName",
        "SELECT 'Memcpy', start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY",
        "SELECT 'Memset', start, end FROM CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        let mut st = db.prepare(sql).unwrap();
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        ops.extend(rows.map(Result::unwrap));
    }
    let annotation: String = db
        .query_row(
            "SELECT text FROM NVTX_EVENTS WHERE text LIKE 'execute_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (ops, annotation)
}

/// The class of each kernel of the SGLang Qwen3-8B MI300X decode step, by hand from its
/// names: hipBLASLt `Cijk_` GEMMs stream the weights; the paged attention kernels (and
/// the FlashInfer index build) read the KV cache; `store_kvcache` writes it; the three
/// bookkeeping kernels are in no class; norms, rope, activation, copies, the argmax and
/// the memcpys are the rest.
fn sglang_class(name: &str) -> Option<usize> {
    let any = |subs: &[&str]| subs.iter().any(|s| name.contains(s));
    let by: [(bool, Option<usize>); 5] = [
        (name.starts_with("Cijk_"), Some(0)),
        (
            any(&["paged_attention", "create_flashinfer_kv_indices"]),
            Some(1),
        ),
        (any(&["store_kvcache"]), Some(2)),
        (
            any(&[
                "clamp_position_kernel",
                "resolve_future_token_ids",
                "trampoline_kernel",
            ]),
            None,
        ),
        (
            any(&[
                "add_rmsnorm",
                "act_and_mul",
                "rotary_embedding",
                "elementwise_kernel",
                "multi_tensor_apply",
                "at::native::reduce_kernel",
                "vectorized_",
                "Memcpy",
            ]),
            Some(4),
        ),
    ];
    let hits: Vec<Option<usize>> = by.iter().filter(|(m, _)| *m).map(|(_, c)| *c).collect();
    assert_eq!(hits.len(), 1, "{name} matched {} hand classes", hits.len());
    hits[0]
}

/// Exclusive time per class (and of "no class") by an elementary-interval sweep: every
/// piece between two consecutive op boundaries goes to the first op, in (start, end,
/// name) order, that covers it. Also the union of all ops and their span.
fn exclusive(ops: &Ops, class: &dyn Fn(&str) -> Option<usize>) -> ([i64; 5], i64, i64, i64) {
    let mut cuts: Vec<i64> = ops.iter().flat_map(|o| [o.1, o.2]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut order: Vec<&(String, i64, i64)> = ops.iter().collect();
    order.sort_by(|a, b| (a.1, a.2, &a.0).cmp(&(b.1, b.2, &b.0)));
    let (mut per, mut none, mut union) = ([0i64; 5], 0i64, 0i64);
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        if let Some(o) = order.iter().find(|o| o.1 <= a && o.2 >= b) {
            union += b - a;
            match class(&o.0) {
                Some(c) => per[c] += b - a,
                None => none += b - a,
            }
        }
    }
    let span = cuts.last().unwrap() - cuts.first().unwrap();
    (per, none, union, span)
}

/// The number after `key` in an annotation such as `…_generation_32(sq32sk32785…)`.
fn field(annotation: &str, key: &str) -> u64 {
    let g = &annotation[annotation.find("generation_").unwrap()..];
    let at = g.find(key).unwrap() + key.len();
    g[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

fn class<'a>(step: &'a Value, key: &str) -> Option<&'a Value> {
    step["attribution"]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == key)
}

/// Qwen/Qwen3-8B `config.json` (huggingface.co/Qwen/Qwen3-8B): hidden_size 4096,
/// num_hidden_layers 36, num_attention_heads 32, num_key_value_heads 8, head_dim 128,
/// intermediate_size 12288, vocab_size 151936, tie_word_embeddings false, bf16; Qwen3 has
/// per-head q_norm and k_norm (head_dim each) beside the two RMSNorms of every layer.
struct Qwen3_8b;
impl Qwen3_8b {
    const L: u64 = 36;
    const D: u64 = 4096;
    const H: u64 = 32;
    const KV: u64 = 8;
    const DH: u64 = 128;
    const FFN: u64 = 12288;
    const VOCAB: u64 = 151_936;
    /// Weight bytes the GEMMs stream: q, k, v, o and the SwiGLU MLP per layer, lm_head.
    fn gemm_bytes() -> u64 {
        let per_layer = Self::D * (Self::H + 2 * Self::KV) * Self::DH
            + Self::H * Self::DH * Self::D
            + 3 * Self::D * Self::FFN;
        (Self::L * per_layer + Self::VOCAB * Self::D) * 2
    }
    /// The 2-byte norm weights: two RMSNorms and q/k norms per layer, the final norm.
    fn norm_bytes() -> u64 {
        (Self::L * (2 * Self::D + 2 * Self::DH) + Self::D) * 2
    }
    /// K and V of every layer, per token.
    fn kv_cell() -> u64 {
        2 * Self::L * Self::KV * Self::DH * 2
    }
}

/// AMD Instinct MI300X data sheet: 5.3 TB/s peak HBM3 bandwidth.
const MI300X_BYTES_PER_S: f64 = 5.3e12;

fn check_sglang_step(j: &Value, ops: &Ops, annotation: &str) {
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    let s = &steps[0];
    // Every op of the fixture belongs to its one step, so the raw rows are the step's.
    assert_eq!(s["ops"].as_u64().unwrap(), ops.len() as u64);
    let (per, none, union, span) = exclusive(ops, &sglang_class);
    let sk = field(annotation, "sk");
    let sq = field(annotation, "sq");
    assert_eq!((sq, sk), (32, 32_785), "{annotation}");
    let bytes = [
        Qwen3_8b::gemm_bytes(),
        Qwen3_8b::kv_cell() * sk,
        Qwen3_8b::kv_cell() * sq,
        0,
        Qwen3_8b::norm_bytes(),
    ];
    for (i, key) in CLASSES.iter().enumerate() {
        let Some(c) = class(s, key) else {
            assert_eq!((per[i], bytes[i]), (0, 0), "{key} missing");
            continue;
        };
        assert_eq!(c["time_ns"].as_i64().unwrap(), per[i], "{key} time");
        assert_eq!(c["bytes"].as_f64().unwrap(), bytes[i] as f64, "{key} bytes");
        let floor = (bytes[i] as f64 / MI300X_BYTES_PER_S * 1e9).round() as i64;
        assert_eq!(c["floor_ns"].as_i64().unwrap(), floor, "{key} floor");
        assert_eq!(
            c["excess_ns"].as_i64().unwrap(),
            per[i] - floor,
            "{key} excess"
        );
        let achieved = bytes[i] as f64 / (per[i] as f64 / 1e9);
        let got = c["achieved_bytes_per_s"].as_f64().unwrap();
        assert!(
            (got - achieved).abs() <= 1e-9 * achieved,
            "{key}: {got} vs {achieved}"
        );
        let frac = c["roof_fraction"].as_f64().unwrap();
        assert!(
            (frac - achieved / MI300X_BYTES_PER_S).abs() < 1e-12,
            "{key}"
        );
    }
    // The waterfall, exact: floors + excess + no class + gap = wall, each from the rows.
    let w = &s["attribution"]["waterfall"];
    let f = |k: &str| w[k].as_i64().unwrap();
    assert_eq!(f("wall_ns"), span);
    assert_eq!(f("gap_ns"), span - union);
    assert_eq!(f("unclassified_ns"), none);
    assert_eq!(
        f("floor_ns") + f("excess_ns") + f("unpriced_ns") + f("unclassified_ns") + f("gap_ns"),
        f("wall_ns")
    );
    assert_eq!(f("floor_ns") + f("excess_ns"), per.iter().sum::<i64>());
    // The group is this one step.
    let g = &j["groups"][0];
    assert_eq!(
        (g["group"].as_str(), g["steps"].as_u64()),
        (Some("decode"), Some(1))
    );
    assert_eq!(&g["waterfall"], w);
}

#[test]
fn sglang_decode_classes_match_the_model_card_and_the_raw_rows() {
    let path = fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let (ops, annotation) = kineto_ops(&path);
    let j = steps_json(&[
        path.to_str().unwrap(),
        "--model",
        "qwen3-8b",
        "--gpu",
        "mi300x",
    ]);
    check_sglang_step(&j, &ops, &annotation);
    let path = fixture("nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite");
    let (ops, annotation) = nsys_ops(&path);
    let j = steps_json(&[
        path.to_str().unwrap(),
        "--model",
        "qwen3-8b",
        "--gpu",
        "mi300x",
    ]);
    check_sglang_step(&j, &ops, &annotation);
}

use stepgate::synth::planted::{self, Cause, Dense, Speeds};
use stepgate::synth::workload::{self, Scenario};

/// Write the planted scenario into `dir`; returns its path and the scenario (the truth).
pub(crate) fn planted_report(
    dir: &Path,
    cause: Cause,
    steps: usize,
) -> (std::path::PathBuf, Scenario) {
    let scn = planted::scenario(cause, steps);
    let path = dir.join("planted.sqlite");
    workload::build(&scn, &path).unwrap();
    (path, scn)
}

/// Σ planted duration of the kernels named `name` in one step of the scenario.
pub(crate) fn planted_ns(scn: &Scenario, step: usize, name: &str) -> i64 {
    scn.steps[step]
        .kernels
        .iter()
        .filter(|k| k.name == name)
        .map(|k| k.duration_ns)
        .sum()
}

const H100_BYTES_PER_S: f64 = 3.35e12;

/// FlashAttention-2's decode kernel (its launcher's grid: one block per batch × head).
const FA2: &str = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false>(Flash_fwd_params)";

/// `scn` with its FlashAttention-3 kernels renamed to FA2's (same durations).
fn as_fa2(mut scn: Scenario) -> Scenario {
    for st in &mut scn.steps {
        for k in &mut st.kernels {
            if k.name == planted::ATTENTION {
                k.name = FA2.to_owned();
            }
        }
    }
    scn
}

#[test]
fn slow_attention_at_small_batch_is_shape_4_with_the_grid_numbers() {
    let dir = tempfile::tempdir().unwrap();
    // The planted decode runs FA3; the grid reading is FA2's, so its kernels are
    // renamed (the durations, and so every number below, are the planted ones).
    let (_, scn) = planted_report(dir.path(), Cause::SlowAttentionSmallBatch, 4);
    let scn = as_fa2(scn);
    let path = dir.path().join("fa2.sqlite");
    workload::build(&scn, &path).unwrap();
    let j = steps_json(&[path.to_str().unwrap(), "--model", "llama-3-8b"]);
    // Llama-3-8B decode at B = 4, s = 4,096: K and V of 32 layers × 8 heads × 128 × 2 B,
    // for 4 × 4,096 keys.
    let kv_read: u64 = 2 * 32 * 8 * 128 * 2 * 4 * 4096;
    for s in j["steps"].as_array().unwrap() {
        let a = class(s, "attention").unwrap();
        assert_eq!(a["bytes"].as_f64().unwrap(), kv_read as f64);
        assert_eq!(a["time_ns"].as_i64().unwrap(), planted_ns(&scn, 0, FA2));
        assert_eq!(a["shape"], "under-utilized");
        // Planted at half the roof: the floor is half the time (to the rounding of 32
        // planted durations).
        let frac = a["roof_fraction"].as_f64().unwrap();
        assert!((frac - 0.5).abs() < 1e-6, "{frac}");
        let act = a["action"].as_str().unwrap();
        // FA2's decode grid: B × heads = 4 × 32 = 128 blocks, under the H100's 132 SMs.
        assert!(
            act.contains("4 × 32 = 128 blocks) on 132 SMs, under-filled"),
            "{act}"
        );
        let w = class(s, "weights").unwrap();
        assert_eq!(w["shape"], "at-roof");
        assert!((w["roof_fraction"].as_f64().unwrap() - 0.95).abs() < 1e-3);
    }
    // The same slow kernel at B = 64 fills the SMs (2,048 blocks): the action says so
    // rather than blaming the grid.
    let mut scn = scn;
    let sp = Speeds {
        attention_of_roof: 0.5,
        ..Speeds::default()
    };
    for st in &mut scn.steps {
        st.kernels = planted::step_kernels(&Dense::LLAMA_3_8B, 1, 64, 1, 4096, &sp);
        for k in &mut st.kernels {
            if k.name == planted::ATTENTION {
                k.name = FA2.to_owned();
            }
        }
        st.names = vec![workload::vllm_execute_detailed(
            64,
            [0; 5],
            [64, 64, 64 * 4096, 64, 64 * 4096],
        )];
    }
    let p = dir.path().join("b64.sqlite");
    workload::build(&scn, &p).unwrap();
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-8b"]);
    let a = class(&j["steps"][0], "attention").unwrap();
    assert_eq!(a["shape"], "under-utilized");
    let act = a["action"].as_str().unwrap();
    assert!(
        act.contains("64 × 32 = 2048 blocks) fills the 132 SMs"),
        "{act}"
    );
}

#[test]
fn the_steps_page_draws_each_group_floor_against_its_measurement_by_class() {
    let dir = tempfile::tempdir().unwrap();
    let (path, scn) = planted_report(dir.path(), Cause::SlowAttentionSmallBatch, 4);
    let html = dir.path().join("steps.html");
    let (code, _, err) = run(&[
        "steps",
        path.to_str().unwrap(),
        "--model",
        "llama-3-8b",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("Floor and measurement per kernel class")
        .expect("the class section");
    let section = &page[at..];
    assert!(section.contains("<svg"), "a chart");
    assert!(section.contains("decode: floor (derived)") && section.contains("decode: measured"));
    // The class table carries the planted attention time and half the roof (planted at
    // 50% of β).
    let att = stepgate::report::fmt_us(planted_ns(&scn, 0, planted::ATTENTION) as f64);
    assert!(section.contains(&format!(">{att}<")), "attention {att} µs");
    assert!(section.contains(">50.0%<"), "attention at half the roof");
    assert!(section.contains("= wall "), "the exact waterfall line");
}
