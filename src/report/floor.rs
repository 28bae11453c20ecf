//! Rendering of `stepgate floor`: one row per quantity, each labelled derived, cited or
//! input, in table, markdown, CSV or JSON.

use serde::Serialize;

use super::table::{Align, Table};
use super::{fmt_pct, group_thousands, to_json, Format};
use crate::wire::attribution::Bound;
use crate::wire::floor::{ConfigFields, FloorDocument, FloorReport, ModelGeometry};
use crate::wire::meta::{ModelSource, Tool};
use crate::wire::roofline::WeightDtype;

impl ConfigFields {
    /// The fields of a resolved model.
    pub fn of(m: &crate::wire::roofline::ModelSpec) -> Self {
        let moe = m.moe.as_ref();
        let mla = m.mla.as_ref();
        ConfigFields {
            hidden_size: m.hidden,
            num_hidden_layers: m.layers,
            num_attention_heads: m.heads,
            num_key_value_heads: m.kv_heads,
            head_dim: m.head_dim,
            intermediate_size: m.intermediate,
            vocab_size: m.vocab,
            tie_word_embeddings: m.tie_word_embeddings,
            attention_bias: m.attention_bias,
            qk_norm: m.qk_norm,
            sliding_window: m.sliding_window,
            num_experts: moe.map(|e| e.num_experts),
            num_experts_per_tok: moe.map(|e| e.top_k),
            moe_intermediate_size: moe.map(|e| e.moe_intermediate),
            n_shared_experts: moe.and_then(|e| e.shared_experts),
            shared_expert_intermediate_size: moe
                .filter(|e| e.shared_experts.is_none() && e.shared_intermediate > 0)
                .map(|e| e.shared_intermediate),
            kv_lora_rank: mla.map(|x| x.kv_lora_rank),
            q_lora_rank: mla.and_then(|x| x.q_lora_rank),
            qk_nope_head_dim: mla.map(|x| x.qk_nope_head_dim),
            qk_rope_head_dim: mla.map(|x| x.qk_rope_head_dim),
            v_head_dim: mla.map(|x| x.v_head_dim),
        }
    }
}

/// `bf16`, `int4-g128`, … as the `--weight-dtype` flag spells them.
pub(crate) fn weight_dtype_name(d: WeightDtype) -> String {
    match d {
        WeightDtype::Bf16 => "bf16".into(),
        WeightDtype::Fp16 => "fp16".into(),
        WeightDtype::Fp32 => "fp32".into(),
        WeightDtype::Fp8 => "fp8".into(),
        WeightDtype::Int8 => "int8".into(),
        WeightDtype::Int4 { group } => format!("int4-g{group}"),
        WeightDtype::Mxfp4 => "mxfp4".into(),
    }
}

/// Bytes as decimal GB with `d` decimals.
fn gb(bytes: f64, d: usize) -> String {
    group_thousands(&format!("{:.*}", d, bytes / 1e9))
}

fn ms(ns: f64) -> String {
    format!("{} ms", group_thousands(&format!("{:.3}", ns / 1e6)))
}

fn sci(v: f64) -> String {
    format!("{v:.4e}")
}

fn bound(b: Bound) -> &'static str {
    match b {
        Bound::Memory => "memory-bound",
        Bound::Compute => "compute-bound",
    }
}

/// The rows: (quantity, value, basis).
fn rows(r: &FloorReport) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = Vec::new();
    let mut row = |q: &str, val: String, basis: &str| v.push((q.into(), val, basis.into()));
    row("model", r.model.clone(), "input");
    row("GPU", format!("{} ({})", r.gpu, r.gpu_name), "cited");
    row(
        "HBM bandwidth β",
        format!("{:.3} TB/s", r.hbm_bytes_per_s / 1e12),
        r.hbm_basis,
    );
    row(
        "peak tensor π (dense)",
        format!("{:.1} TFLOP/s", r.peak_flops_per_s / 1e12),
        r.peak_basis,
    );
    row(
        "batch B × context s",
        format!(
            "{} × {} (TP {}, PP {})",
            r.batch,
            group_thousands(&r.context.to_string()),
            r.tp,
            r.pp
        ),
        "input",
    );
    row(
        "KV cell k",
        format!(
            "{} B ({:.1} KiB/token)",
            group_thousands(&format!("{:.0}", r.kv_cell_bytes)),
            r.kv_cell_bytes / 1024.0
        ),
        "derived",
    );
    if let (Some(routing), Some(e)) = (r.moe_routing, r.experts_touched) {
        row(
            "experts streamed per MoE layer",
            format!("{e:.2} ({})", serde_plain(&routing)),
            "derived",
        );
    }
    row(
        "weights streamed",
        format!(
            "{} GB ({})",
            gb(r.weights_bytes, 2),
            fmt_pct(r.weights_share)
        ),
        "derived",
    );
    row(
        "KV read = k·B·s",
        format!(
            "{} GB ({})",
            gb(r.kv_read_bytes, 3),
            fmt_pct(r.kv_read_share)
        ),
        "derived",
    );
    row(
        "KV write = k·B",
        format!(
            "{} GB ({:.2}%)",
            gb(r.kv_write_bytes, 4),
            r.kv_write_share * 100.0
        ),
        "derived",
    );
    row(
        "total compulsory traffic Q",
        format!("{} GB", gb(r.total_bytes, 2)),
        "derived",
    );
    row("memory floor Q/β", ms(r.memory_floor_ns), "derived");
    row("compute floor F/π", ms(r.compute_floor_ns), "derived");
    row(
        "STEP FLOOR max(Q/β, F/π)",
        format!("{} ({})", ms(r.floor_ns), bound(r.bound)),
        "derived",
    );
    row(
        "chapter floor (no KV write)",
        ms(r.chapter_floor_ns),
        "derived",
    );
    row(
        "decode ceiling",
        format!(
            "{} tok/s",
            group_thousands(&format!("{:.0}", r.decode_tokens_per_s))
        ),
        "derived",
    );
    row(
        "FLOPs per step F",
        format!(
            "{} (attention {})",
            sci(r.flops),
            fmt_pct(r.attention_flops_share)
        ),
        "derived",
    );
    row(
        "arithmetic intensity I = F/Q",
        format!("{:.2} FLOP/B", r.intensity_flop_per_byte),
        "derived",
    );
    row(
        "ridge point π/β",
        format!("{:.2} FLOP/B", r.ridge_flop_per_byte),
        "derived",
    );
    row(
        "attainable min(π, β·I)",
        format!("{:.1} TFLOP/s", r.attainable_flops_per_s / 1e12),
        "derived",
    );
    row("best attainable MFU", fmt_pct(r.best_mfu), "derived");
    if let Some(m) = &r.mla {
        row(
            "MLA attention core (absorbed 576/512)",
            sci(m.attention_flops),
            "derived",
        );
        row(
            "MLA attention core as vLLM bills it (192/128)",
            format!(
                "{} (×{:.2} under)",
                sci(m.vllm_attention_flops),
                m.attention_ratio
            ),
            "derived",
        );
        row(
            "step FLOPs vLLM reports / corrected",
            format!(
                "{} / {} (corrected is ×{:.2})",
                sci(m.vllm_reported_flops),
                sci(m.corrected_flops),
                m.ratio
            ),
            "derived",
        );
    }
    row("kernel launches per step", r.launches.to_string(), "input");
    row(
        "per-launch cost",
        format!("{:.3} µs", r.launch_cost_ns / 1e3),
        if r.launch_cost_basis == "cited" {
            "cited (arXiv:2504.11750 Table V)"
        } else {
            "input (measured)"
        },
    );
    row(
        "launch budget",
        format!(
            "{} ({} of the floor)",
            ms(r.launch_budget_ns),
            fmt_pct(r.launch_share_of_floor)
        ),
        "derived",
    );
    row(
        "FA2 decode grid B × heads/GPU",
        format!(
            "{} blocks on {} SMs{}",
            crate::report::fmt_int(r.decode_grid_blocks as i64),
            r.sm_count,
            if r.grid_underfills_sms {
                " (under-filled: one partial wave)"
            } else {
                ""
            }
        ),
        "derived",
    );
    v
}

fn serde_plain<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|x| x.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn table(r: &FloorReport) -> Table {
    let mut t = Table::new(&[
        ("quantity", Align::Left),
        ("value", Align::Right),
        ("basis", Align::Left),
    ]);
    for (q, v, b) in rows(r) {
        t.row(vec![q, v, b]);
    }
    t
}

const NOTE: &str = "Floor definition: reference (docs/method.md §3.1), KV write of the new token included; \
the chapter's variant without it is the 'chapter floor' row. Arithmetic only: nothing here is measured.";

/// Version of the `floor --format json` document (docs/schema/README.md).
pub const SCHEMA_VERSION: u32 = 1;

/// Render the floor report.
pub fn render(
    r: &FloorReport,
    model: &ModelGeometry,
    source: &ModelSource,
    fmt: Format,
    fit: crate::report::fit::Fit,
) -> String {
    match fmt {
        Format::Table => format!(
            "Derived floor: arithmetic only, nothing measured\n\n{}\n{}\n{}\n",
            table(r).to_text_fit(fit),
            fit.wrap(NOTE, 0),
            fit.wrap(&format!("GPU peaks: {}.", r.gpu_source), 2)
        ),
        Format::Markdown => format!(
            "### stepgate floor (derived, nothing measured)\n\n{}\n{NOTE}\nGPU peaks: {}.\n",
            table(r).to_markdown(),
            r.gpu_source
        ),
        Format::Csv => table(r).to_csv(),
        Format::Json => to_json(&FloorDocument {
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            source,
            kind: "floor",
            model,
            report: r,
            basis: rows(r).into_iter().map(|(q, _, b)| (q, b)).collect(),
        }),
    }
}
