//! Diagnosis from the capture alone: the per-class attribution checked against a second
//! computation written here (bytes from the model card by hand, times from the raw rows of
//! the fixture by an elementary-interval sweep), the waterfall's exactness on every
//! fixture, and generated captures with one planted cause each.

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
fn gemms_at_the_roof_are_shape_2_and_slow_gemms_shape_4() {
    let dir = tempfile::tempdir().unwrap();
    let (path, scn) = planted_report(dir.path(), Cause::GemmsAtRoof, 3);
    let j = steps_json(&[path.to_str().unwrap(), "--model", "llama-3-8b"]);
    // Llama-3-8B's GEMMs stream every linear weight and lm_head: 7,504,924,672 streamed
    // parameters minus the 266,240 norm weights, at 2 bytes.
    let gemm_bytes = (7_504_924_672u64 - 266_240) * 2;
    let gemm_ns: i64 = [
        planted::GEMM_QKV,
        planted::GEMM_O,
        planted::GEMM_GATE_UP,
        planted::GEMM_DOWN,
        planted::GEMM_LM_HEAD,
    ]
    .iter()
    .map(|n| planted_ns(&scn, 0, n))
    .sum();
    for s in j["steps"].as_array().unwrap() {
        let w = class(s, "weights").unwrap();
        assert_eq!(w["bytes"].as_f64().unwrap(), gemm_bytes as f64);
        assert_eq!(w["time_ns"].as_i64().unwrap(), gemm_ns);
        assert_eq!(w["shape"], "at-roof");
        assert!(w["action"]
            .as_str()
            .unwrap()
            .contains("only fewer bytes help"));
        let floor = (gemm_bytes as f64 / H100_BYTES_PER_S * 1e9).round() as i64;
        assert_eq!(w["floor_ns"].as_i64().unwrap(), floor);
    }
    // The same GEMMs at 40% of the roof: shape 4.
    let mut scn = scn;
    let sp = Speeds {
        gemm_of_roof: 0.4,
        ..Speeds::default()
    };
    for st in &mut scn.steps {
        st.kernels = planted::step_kernels(&Dense::LLAMA_3_8B, 1, 32, 1, 2048, &sp);
    }
    let p = dir.path().join("slow.sqlite");
    workload::build(&scn, &p).unwrap();
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-8b"]);
    let w = class(&j["steps"][0], "weights").unwrap();
    assert_eq!(w["shape"], "under-utilized");
    assert!((w["roof_fraction"].as_f64().unwrap() - 0.4).abs() < 1e-3);
}

/// Llama-3-70B decode floor on one of 4 H100s at B = 32, s = 1,010, by hand from
/// meta-llama/Meta-Llama-3-70B `config.json` (hidden 8192, 80 layers, 64 heads, 8 KV
/// heads of 128, intermediate 28672, vocab 128256, untied): linear layers and lm_head
/// split 4 ways, the norms whole on every GPU, 2 of the 8 KV heads per GPU.
fn llama70b_tp4_floor_ns(batch: u64, context: u64) -> f64 {
    let (l, d, h, kv, dh, ffn, v) = (80u64, 8192u64, 64u64, 8u64, 128u64, 28672u64, 128_256u64);
    let linear = l * (d * (h + 2 * kv) * dh + h * dh * d + 3 * d * ffn);
    let norms = l * 2 * d + d;
    let weights = (linear + v * d) as f64 * 2.0 / 4.0 + norms as f64 * 2.0;
    let cell = (2 * l * (kv / 4) * dh * 2) as f64;
    let kv_bytes = cell * (batch * context + batch) as f64;
    (weights + kv_bytes) / H100_BYTES_PER_S * 1e9
}

#[test]
fn a_tp4_capture_is_priced_at_tp_4_without_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = planted_report(dir.path(), Cause::Tp4, 3);
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--model", "llama-3-70b"]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(
        (tp["value"].as_u64(), tp["basis"].as_str()),
        (Some(4), Some("inferred"))
    );
    assert!(tp["evidence"]
        .as_str()
        .unwrap()
        .contains("cross_device_reduce_1stage"));
    let want = llama70b_tp4_floor_ns(32, 1010);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    for s in steps {
        let f = &s["attribution"]["floor"];
        let got = f["floor_ns"].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
        assert_eq!(f["below_floor"], false);
        assert!(f["mbu"].as_f64().unwrap() <= 1.0);
        // Two all-reduces per layer of 32 tokens × 8192 × 2 B, 2·3/4 of each on the wire,
        // over NVLink's 450 GB/s each way.
        let c = class(s, "communication").unwrap();
        let bytes = 2.0 * 80.0 * 32.0 * 8192.0 * 2.0 * 1.5;
        assert_eq!(c["bytes"].as_f64().unwrap(), bytes);
        assert_eq!(
            c["floor_ns"].as_i64().unwrap(),
            (bytes / 450e9 * 1e9).round() as i64
        );
    }
    // The flag wins, with a warning naming both values; the undercut floor names the TP
    // that would make it plausible.
    let j = steps_json(&[p, "--model", "llama-3-70b", "--tp", "1"]);
    let warnings = j["warnings"].to_string();
    assert!(
        warnings.contains("--tp 1 contradicts the capture (4 inferred"),
        "{warnings}"
    );
    for s in j["steps"].as_array().unwrap() {
        let a = &s["attribution"];
        assert_eq!(a["floor"]["below_floor"], true);
        let with: Vec<&str> = a["plausible_with"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(with.contains(&"--tp 4"), "{with:?}");
        assert!(!with.contains(&"--tp 2"), "TP 2 still undercut: {with:?}");
    }
    let (_, text, _) = run(&["steps", p, "--model", "llama-3-70b", "--tp", "1"]);
    assert!(
        !text.contains("MBU) 3"),
        "an MBU above 100% printed:\n{text}"
    );
    // Nor does a baseline keep it, so a gate never compares MBUs above 100%.
    let b = dir.path().join("b.json");
    let (code, _, err) = run(&[
        "baseline",
        "record",
        p,
        "-o",
        b.to_str().unwrap(),
        "--model",
        "llama-3-70b",
        "--tp",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    for g in b["samples"]["groups"].as_array().unwrap() {
        assert!(g["metrics"].get("mbu").is_none(), "{g:.300}");
    }
}

#[test]
fn a_prefill_among_unmarked_decodes_is_its_own_inferred_group() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = planted_report(dir.path(), Cause::PrefillAmongDecodes, 12);
    let p = path.to_str().unwrap();
    let j = steps_json(&[
        p,
        "--model",
        "llama-3-8b",
        "--batch",
        "32",
        "--context",
        "1010",
    ]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    for s in steps {
        let i = s["index"].as_u64().unwrap();
        let want = if i == 0 || i == 6 {
            "prefill"
        } else {
            "decode"
        };
        assert_eq!(
            s["kind"], "unknown",
            "step {i}: the guess stays beside the kind"
        );
        assert_eq!(s["kind_guess"], want, "step {i}");
        assert!(s["kind_evidence"]
            .as_str()
            .unwrap()
            .contains("duration cluster"));
        // A prefill is never priced as the decode --batch/--context describe: it is
        // priced as a prefill of the tokens its KV-cache writes count, which FLOPs bind.
        let f = &s["attribution"]["floor"];
        assert!(!f.is_null(), "step {i}");
        if want == "prefill" {
            assert!(
                s["tokens_guess"].as_u64().is_some_and(|t| t > 32),
                "step {i}"
            );
            assert_eq!(f["bound"], "compute", "step {i}: {f}");
        } else {
            assert_eq!(f["bound"], "memory", "step {i}: {f}");
        }
    }
    let groups: Vec<(&str, u64)> = j["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["group"].as_str().unwrap(), g["steps"].as_u64().unwrap()))
        .collect();
    // The prefills are priced from their tokens: a group of their own.
    assert_eq!(
        groups,
        vec![("decode (inferred)", 10), ("prefill (inferred)", 2)]
    );
    let notes = j["notes"].to_string();
    assert!(!notes.contains("have no floor"), "{notes}");
    let summary: Vec<(&str, &str, u64)> = j["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["kind"].as_str().unwrap(),
                k["kind_guess"].as_str().unwrap(),
                k["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![("unknown", "decode", 10), ("unknown", "prefill", 2)]
    );
    for (kind, n) in [("decode", 10), ("prefill", 2), ("unknown", 0)] {
        let j = steps_json(&[p, "--kind", kind]);
        assert_eq!(j["steps"].as_array().unwrap().len(), n, "--kind {kind}");
    }
    // The baseline keeps the two apart and marks both as inferred.
    let base = dir.path().join("base.json");
    let (code, _, err) = run(&["baseline", "record", p, "-o", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    let text = b.to_string();
    assert!(text.contains("\"decode (inferred)\""), "{text:.400}");
    assert!(text.contains("\"prefill (inferred)\""), "{text:.400}");
}

#[test]
fn the_capture_sidecar_gives_unnamed_decodes_their_batch_and_context() {
    use stepgate::operating_point::sidecar::write_beside;
    use stepgate::wire::capture::{CaptureSidecar, Drive};
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = planted_report(dir.path(), Cause::PrefillAmongDecodes, 12);
    let p = path.to_str().unwrap();
    let flags = steps_json(&[
        p,
        "--model",
        "llama-3-8b",
        "--batch",
        "32",
        "--context",
        "1010",
    ]);
    let side = CaptureSidecar {
        engine: Some("vllm".to_owned()),
        drive: Some(Drive {
            concurrency: 32,
            prompt_tokens: Some(1000),
            output_tokens: Some(20),
        }),
        ..CaptureSidecar::new()
    };
    write_beside(&path, &side).unwrap();
    let j = steps_json(&[p, "--model", "llama-3-8b"]);
    let op = &j["operating_point"];
    assert_eq!(op["batch"]["value"], 32);
    assert_eq!(op["batch"]["basis"], "inferred");
    assert!(op["batch"]["evidence"]
        .as_str()
        .unwrap()
        .contains("drive.concurrency"));
    // Mean resident context: prompt 1,000 + output 20 / 2.
    assert_eq!(op["context"]["value"], 1010);
    for (a, b) in j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .zip(flags["steps"].as_array().unwrap())
    {
        assert_eq!(a["attribution"]["floor"], b["attribution"]["floor"]);
    }
    // A flag still wins over the sidecar.
    let j = steps_json(&[p, "--model", "llama-3-8b", "--batch", "8"]);
    assert_eq!(j["operating_point"]["batch"]["basis"], "input");
}

#[test]
fn the_class_waterfall_is_exact_on_every_fixture() {
    let mut checked = 0;
    for rel in [
        "kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz",
        "kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz",
        "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz",
        "kineto/vllm_b200_eager_prefill_rank0.json.gz",
        "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
        "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
        "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
        "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
        "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
    ] {
        let path = fixture(rel);
        // A decode composition for every unnamed step, so every step with GPU work that
        // is not an inferred prefill is priced.
        let j = steps_json(&[
            path.to_str().unwrap(),
            "--model",
            "qwen3-8b",
            "--gpu",
            "h100-sxm",
            "--batch",
            "1",
            "--context",
            "1",
        ]);
        for s in j["steps"].as_array().unwrap() {
            let a = &s["attribution"];
            let Some(w) = a.get("waterfall").filter(|w| !w.is_null()) else {
                continue;
            };
            let f = |k: &str| w[k].as_i64().unwrap();
            assert_eq!(f("wall_ns"), s["wall_ns"].as_i64().unwrap(), "{rel}");
            assert_eq!(f("gap_ns"), s["gap_ns"].as_i64().unwrap(), "{rel}");
            assert_eq!(
                f("floor_ns")
                    + f("excess_ns")
                    + f("unpriced_ns")
                    + f("unclassified_ns")
                    + f("gap_ns"),
                f("wall_ns"),
                "{rel}"
            );
            let class_time: i64 = a["classes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["time_ns"].as_i64().unwrap())
                .sum();
            assert_eq!(
                class_time + f("unclassified_ns"),
                s["busy_ns"].as_i64().unwrap(),
                "{rel}: the classes tile busy"
            );
            checked += 1;
        }
    }
    assert!(checked >= 9, "{checked} steps checked");
}

#[test]
fn a_gpu_flag_against_the_report_warns_and_an_unknown_gpu_is_refused() {
    let path = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let p = path.to_str().unwrap();
    let j = steps_json(&[p, "--gpu", "b200"]);
    let w = j["warnings"].to_string();
    assert!(
        w.contains("--gpu b200 (NVIDIA B200 180GB) contradicts the report, which names \\\"NVIDIA A100-SXM4-40GB\\\" (a100-40gb)"),
        "{w}"
    );
    // Without --model too: an unknown GPU is an error, not a silent no-op.
    let (code, _, err) = run(&["steps", p, "--gpu", "h1000"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown GPU `h1000`"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn dram_counters_decide_the_shape_where_a_report_has_them() {
    // GEMMs timed at 97% of the byte model's roof, but the counters (written by the
    // generator from the documented GPU_METRICS schema: no bundled capture has them) say
    // DRAM ran at 45% while they ran: the counter decides, and says both numbers.
    let dir = tempfile::tempdir().unwrap();
    let mut scn = planted::scenario(Cause::GemmsAtRoof, 2);
    scn.counters = Some(workload::Counters {
        interval_ns: 1_000,
        dram_read_pct: vec![
            ("nvjet".to_owned(), 45.0),
            ("FlashAttnFwdSm90".to_owned(), 85.0),
        ],
    });
    let path = dir.path().join("counters.sqlite");
    workload::build(&scn, &path).unwrap();
    let j = steps_json(&[path.to_str().unwrap(), "--model", "llama-3-8b"]);
    let g = &j["groups"][0];
    let by = |k: &str| {
        g["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == k)
            .unwrap()
    };
    let w = by("weights");
    let m = w["measured_dram_of_peak"].as_f64().unwrap();
    assert!((m - 0.45).abs() < 0.02, "weights measured {m}");
    assert!((w["roof_fraction"].as_f64().unwrap() - 0.97).abs() < 1e-3);
    assert_eq!(
        w["shape"], "under-utilized",
        "the counter, not the byte model"
    );
    let act = w["action"].as_str().unwrap();
    let says = format!(
        "measured {:.0}% of peak (the byte model says 97%)",
        m * 100.0
    );
    assert!(act.contains(&says), "{act}");
    assert_eq!(
        w["measured_dram_bytes_per_s"].as_f64().unwrap(),
        m * H100_BYTES_PER_S
    );
    let a = by("attention");
    assert!((a["measured_dram_of_peak"].as_f64().unwrap() - 0.85).abs() < 0.02);
    assert_eq!(a["shape"], "at-roof");
    // Per step: the span's mean, idle gaps at 0%: Σ duration × % over the wall, by hand
    // from the planted schedule.
    let s = &j["steps"][0];
    let wall = s["wall_ns"].as_f64().unwrap();
    let planted_sum: f64 = scn.steps[0]
        .kernels
        .iter()
        .map(|k| {
            let pct = if k.name.contains("nvjet") {
                0.45
            } else if k.name.contains("FlashAttnFwdSm90") {
                0.85
            } else {
                0.0
            };
            k.duration_ns as f64 * pct
        })
        .sum();
    let step_m = s["attribution"]["measured_dram_of_peak"].as_f64().unwrap();
    assert!(
        (step_m - planted_sum / wall).abs() < 0.02,
        "{step_m} vs {}",
        planted_sum / wall
    );
    // Without counters there is no measured field at all (never a made-up one).
    let (p2, _) = planted_report(dir.path(), Cause::GemmsAtRoof, 1);
    let j = steps_json(&[p2.to_str().unwrap(), "--model", "llama-3-8b"]);
    assert!(j["groups"][0]["classes"][0]
        .get("measured_dram_of_peak")
        .is_none());
    assert!(j["steps"][0]["attribution"]
        .get("measured_dram_of_peak")
        .is_none());
}

#[test]
fn the_decode_layer_maps_its_gemms_to_the_model_layers() {
    // SGLang Qwen3-8B decode: 36 layers; per layer by hand from config.json, bf16:
    // o 32·128·4096, gate_up 2·4096·12288, down 12288·4096, qkv 4096·48·128 weights;
    // lm_head 151936·4096.
    let path = fixture("kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz");
    let j = steps_json(&[
        path.to_str().unwrap(),
        "--model",
        "qwen3-8b",
        "--gpu",
        "mi300x",
    ]);
    let l = &j["groups"][0]["layers"];
    assert!(l["ambiguous"].is_null(), "{}", l["ambiguous"]);
    assert_eq!(
        (l["repeats"].as_u64(), l["layers"].as_u64()),
        (Some(36), Some(36))
    );
    let want: [(&str, u64, &str); 5] = [
        ("o", 32 * 128 * 4096 * 2, "MT16x32x512"),
        ("gate_up", 2 * 4096 * 12288 * 2, "MT256x32x64"),
        ("down", 12288 * 4096 * 2, "MT32x32x256"),
        ("qkv", 4096 * 48 * 128 * 2, "MT64x32x256"),
        ("lm_head", 151_936 * 4096 * 2, "MT256x48x64"),
    ];
    let (ops, _) = kineto_ops(&path);
    let rows = l["gemms"].as_array().unwrap();
    assert_eq!(rows.len(), want.len());
    for (r, (role, bytes, tile)) in rows.iter().zip(want) {
        assert_eq!(r["role"], role);
        assert!(
            r["kernel"].as_str().unwrap().contains(tile),
            "{role}: {}",
            r["kernel"]
        );
        assert_eq!(r["bytes"].as_f64().unwrap(), bytes as f64, "{role}");
        // Per layer: that kernel's summed raw durations over its instances (no two of
        // these GEMMs overlap anything in this trace).
        let (n, sum) = ops
            .iter()
            .filter(|o| o.0.contains(tile))
            .fold((0, 0), |(n, s), o| (n + 1, s + o.2 - o.1));
        let per = sum as f64 / n as f64;
        let got = r["time_ns"].as_f64().unwrap();
        // The mean over the 35 full layer periods, against the mean over all instances.
        assert!((got - per).abs() < 0.05 * per, "{role}: {got} vs {per}");
        let achieved = r["achieved_bytes_per_s"].as_f64().unwrap();
        assert!((achieved - bytes as f64 / (got / 1e9)).abs() < 1e-6 * achieved);
    }
    // The planted TP-4 capture: the same roles at 1/4 of Llama-3-70B's matrices, all at
    // the planted 90% of the roof.
    let dir = tempfile::tempdir().unwrap();
    let (p, _) = planted_report(dir.path(), Cause::Tp4, 1);
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-70b"]);
    let l = &j["groups"][0]["layers"];
    assert!(l["ambiguous"].is_null(), "{}", l["ambiguous"]);
    for (r, (role, bytes)) in l["gemms"].as_array().unwrap().iter().zip([
        ("o", 64u64 * 128 * 8192 * 2 / 4),
        ("gate_up", 2 * 8192 * 28672 * 2 / 4),
        ("down", 28672 * 8192 * 2 / 4),
        ("qkv", 8192 * 80 * 128 * 2 / 4),
        ("lm_head", 128_256 * 8192 * 2 / 4),
    ]) {
        assert_eq!(r["role"], role);
        assert_eq!(r["bytes"].as_f64().unwrap(), bytes as f64, "{role}");
        assert!(
            (r["roof_fraction"].as_f64().unwrap() - 0.9).abs() < 1e-3,
            "{role}"
        );
    }
    // A model whose layers do not fit the trace: said, not guessed.
    let j = steps_json(&[p.to_str().unwrap(), "--model", "llama-3-8b", "--tp", "4"]);
    let why = j["groups"][0]["layers"]["ambiguous"].as_str().unwrap();
    assert!(why.contains("once per layer"), "{why}");
}

#[test]
fn distributed_info_is_read_as_tp_only_for_tp_like_steps() {
    // vLLM on 8 B200s: distributedInfo.world_size = 8, every NCCL group spans all 8, and
    // every layer all-reduces: TP 8, read.
    let j = steps_json(&[fixture("kineto/vllm_b200_eager_prefill_rank0.json.gz")
        .to_str()
        .unwrap()]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(
        (tp["value"].as_u64(), tp["basis"].as_str()),
        (Some(8), Some("read"))
    );
    assert!(tp["evidence"].as_str().unwrap().contains("world_size = 8"));
    // DDP training on 2 A100s states world_size = 2 too, but its steps hold a few bucket
    // all-reduces, not two per layer: data parallel, so TP is not taken from it (TP 1,
    // inferred, the evidence saying DP).
    let j = steps_json(&[
        fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz")
            .to_str()
            .unwrap(),
    ]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(
        (tp["value"].as_u64(), tp["basis"].as_str()),
        (Some(1), Some("inferred"))
    );
    assert!(tp["evidence"].as_str().unwrap().contains("data parallel"));
}

/// Baseline (attention at 80% of the roof) recorded with a model, and a candidate whose
/// attention runs at the planted 50%: the attention excess grows by exactly the planted
/// time, as the class waterfall test derives.
pub(crate) fn slower_attention(dir: &std::path::Path) -> (String, String, f64) {
    let (cand, slow) = planted_report(dir, Cause::SlowAttentionSmallBatch, 12);
    let mut fast = slow.clone();
    let sp = Speeds {
        gemm_of_roof: 0.95,
        ..Speeds::default()
    };
    for st in &mut fast.steps {
        st.kernels = planted::step_kernels(&Dense::LLAMA_3_8B, 1, 4, 1, 4096, &sp);
    }
    let base = dir.join("base.sqlite");
    workload::build(&fast, &base).unwrap();
    let want = (planted_ns(&slow, 0, planted::ATTENTION) - planted_ns(&fast, 0, planted::ATTENTION))
        as f64;
    (
        base.to_str().unwrap().to_owned(),
        cand.to_str().unwrap().to_owned(),
        want,
    )
}

#[test]
fn the_gate_shows_the_change_of_each_class_excess_beside_the_kernel_waterfall() {
    // Baseline: attention at its default 80% of the roof; candidate: the planted 50%.
    // Same model, batch and context, so every class floor is the same on both sides and
    // the change of the attention excess is the change of its planted time.
    let dir = tempfile::tempdir().unwrap();
    let (base, cand, want) = slower_attention(dir.path());
    // The gate reads the classes from a recorded baseline file; diff from two reports.
    let (b, c) = (base.as_str(), cand.as_str());
    let bj = dir.path().join("base.json");
    let bj = bj.to_str().unwrap();
    let (code, _, err) = run(&["baseline", "record", b, "-o", bj, "--model", "llama-3-8b"]);
    assert_eq!(code, 0, "{err}");
    let (_, out, err) = run(&[
        "gate",
        c,
        "--baseline",
        bj,
        "--model",
        "llama-3-8b",
        "--format",
        "json",
    ]);
    let j: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let g = &j["groups"][0];
    let rows = g["class_excess"].as_array().expect("class rows");
    let row = |k: &str| rows.iter().find(|r| r["class"] == k).unwrap();
    let att = row("attention");
    assert!(want > 0.0);
    let got = att["delta_excess_ns"].as_f64().unwrap();
    assert!((got - want).abs() < 1.0, "{got} vs {want}");
    assert_eq!(att["baseline_floor_ns"], att["candidate_floor_ns"]);
    // The GEMMs did not move.
    assert!(row("weights")["delta_excess_ns"].as_f64().unwrap().abs() < 1.0);
    // The text and markdown documents carry the same rows.
    for f in ["table", "markdown"] {
        let (_, out, _) = run(&["diff", b, c, "--model", "llama-3-8b", "--format", f]);
        assert!(out.to_lowercase().contains("excess per class"), "{out}");
        assert!(
            out.contains(&format!("+{}", stepgate::report::fmt_us(want))),
            "{f}:\n{out}"
        );
    }
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
