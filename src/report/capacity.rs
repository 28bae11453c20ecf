//! Rendering of `stepgate capacity`: the six steps, each row labelled input, cited or
//! derived, followed by the source's caveats.

use super::table::{Align, Table};
use super::{fmt_pct, group_thousands, to_json, Format};
use crate::roofline::capacity::{CapacityInputs, CAVEATS};
use crate::wire::capacity::{CapacityDocument, CapacityPlan};
use crate::wire::meta::{ModelSource, Tool};

/// What the plan was computed for (labels and inputs; nothing computed here).
#[derive(Debug, Clone)]
pub struct Context {
    pub model: String,
    pub gpu: String,
    pub gpu_source: String,
    pub hbm_basis: &'static str,
    pub peak_basis: &'static str,
    pub kv_pool_basis: &'static str,
    pub inputs: CapacityInputs,
}

fn ms(ns: f64) -> String {
    format!("{} ms", group_thousands(&format!("{:.3}", ns / 1e6)))
}

fn num(v: f64, d: usize) -> String {
    group_thousands(&format!("{v:.d$}"))
}

fn rows(c: &Context, p: &CapacityPlan) -> Vec<[String; 4]> {
    let i = &c.inputs;
    let mut v: Vec<[String; 4]> = Vec::new();
    let mut row = |step: &str, q: &str, val: String, basis: &str| {
        v.push([step.into(), q.into(), val, basis.into()]);
    };
    row(
        "in",
        "model / GPU",
        format!("{} / {}", c.model, c.gpu),
        "input",
    );
    row(
        "in",
        "HBM β / peak π",
        format!(
            "{:.3} TB/s / {:.1} TFLOP/s",
            i.hbm_bytes_per_s / 1e12,
            i.peak_flops_per_s / 1e12
        ),
        if c.hbm_basis == "input" || c.peak_basis == "input" {
            "input"
        } else {
            "cited"
        },
    );
    row(
        "in",
        "request (input / output tokens)",
        format!("{} / {}", num(i.input_tokens, 0), num(i.output_tokens, 0)),
        "input",
    );
    row(
        "1",
        "KV pool",
        format!("{} tokens", num(p.kv_pool_tokens, 0)),
        c.kv_pool_basis,
    );
    row(
        "1",
        "KV cell k",
        format!("{} B", num(i.kv_cell_bytes, 0)),
        "derived",
    );
    row(
        "1",
        "mean resident context in + out/2",
        num(p.mean_context, 1),
        "derived",
    );
    row(
        "1",
        "B_max = ⌊pool / context⌋",
        p.b_max.to_string(),
        "derived",
    );
    row(
        "2",
        "batch priced B",
        num(p.batch, 0),
        if i.batch.is_some() {
            "input"
        } else {
            "derived"
        },
    );
    row(
        "2",
        "step bytes W + B·s̄·k (no KV write)",
        format!("{} GB", num(p.step_bytes / 1e9, 2)),
        "derived",
    );
    row("2", "step time", ms(p.step_ns), "derived");
    row(
        "2",
        "decode throughput",
        format!("{} tok/s", num(p.decode_tokens_per_s, 0)),
        "derived",
    );
    row(
        "3",
        "prefill FLOPs 2PS + causal attention",
        format!("{:.4e}", p.prefill_flops),
        "derived",
    );
    row(
        "3",
        "prefill MFU (softest input)",
        fmt_pct(i.prefill_mfu),
        "input",
    );
    row("3", "prefill time", ms(p.prefill_ns), "derived");
    row(
        "4",
        "decode share out / tok/s",
        ms(p.decode_share_ns),
        "derived",
    );
    row(
        "4",
        "GPU service time S per request",
        ms(p.service_ns),
        "derived",
    );
    row(
        "4",
        "prefill / decode share of S",
        format!(
            "{} / {}",
            fmt_pct(p.prefill_fraction),
            fmt_pct(p.decode_fraction)
        ),
        "derived",
    );
    row(
        "4",
        "saturation 1/S",
        format!("{} req/s", num(p.saturation_rps, 3)),
        "derived",
    );
    row(
        "5",
        "p99 TTFT target",
        ms(i.ttft_p99_target_s * 1e9),
        "input",
    );
    let f = &p.fixed_batch;
    row(
        "5",
        "M/M/1 screen at B: ρ",
        format!("{:.4}", f.rho),
        "derived",
    );
    row(
        "5",
        "M/M/1 screen at B: λ",
        format!("{} req/s", num(f.lambda_rps, 4)),
        "derived",
    );
    if let Some(r) = f.replicas {
        row("5", "M/M/1 screen: replicas", r.to_string(), "derived");
    }
    row(
        "5",
        "M/M/1 screen: cost",
        format!(
            "${:.4} per M output tokens",
            f.usd_per_million_output_tokens
        ),
        "derived",
    );
    if let Some(fl) = &p.fluid {
        row("6", "ITL target", ms(fl.itl_target_ns), "input");
        row(
            "6",
            "fluid root (higher load): λ",
            format!("{} req/s", num(fl.lambda_rps, 4)),
            "derived",
        );
        row("6", "fluid root: live batch B", num(fl.batch, 2), "derived");
        row(
            "6",
            "fluid root: service S(B)",
            ms(fl.service_ns),
            "derived",
        );
        row("6", "fluid root: ρ", format!("{:.4}", fl.rho), "derived");
        if let Some(r) = fl.replicas {
            row(
                "6",
                "fluid root: replicas",
                format!("{r} for {} req/s", num(i.fleet_rps.unwrap_or(0.0), 1)),
                "derived",
            );
        }
        row(
            "6",
            "fluid root: cost",
            format!(
                "${:.4} per M output tokens",
                fl.usd_per_million_output_tokens
            ),
            "derived",
        );
        if let (Some(l), Some(b)) = (fl.lower_root_lambda_rps, fl.lower_root_batch) {
            row(
                "6",
                "other (low-load) root, not used",
                format!("λ {} req/s, B {}", num(l, 4), num(b, 2)),
                "derived",
            );
        }
    }
    row(
        "in",
        "GPU-hour price (illustrative)",
        format!(
            "${:.2} × {} GPU",
            i.price_usd_per_gpu_hour, i.gpus_per_replica
        ),
        "input",
    );
    v
}

fn table(c: &Context, p: &CapacityPlan) -> Table {
    let mut t = Table::new(&[
        ("step", Align::Left),
        ("quantity", Align::Left),
        ("value", Align::Right),
        ("basis", Align::Left),
    ]);
    for r in rows(c, p) {
        t.row(r.to_vec());
    }
    t
}

fn caveats() -> String {
    CAVEATS.iter().map(|c| format!("- {c}\n")).collect()
}

/// Version of the `capacity --format json` document (docs/schema/README.md).
pub const SCHEMA_VERSION: u32 = 1;

/// Render the capacity plan.
pub fn render(c: &Context, p: &CapacityPlan, source: &ModelSource, fmt: Format) -> String {
    match fmt {
        Format::Table => format!(
            "Capacity plan: derived screening model, nothing measured\n\n{}\nCaveats:\n{}",
            table(c, p).to_text(),
            caveats()
        ),
        Format::Markdown => format!(
            "### stepgate capacity (derived screening model)\n\n{}\n**Caveats**\n\n{}",
            table(c, p).to_markdown(),
            caveats()
        ),
        Format::Csv => table(c, p).to_csv(),
        Format::Json => to_json(&CapacityDocument {
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            source,
            kind: "capacity",
            model: &c.model,
            gpu: &c.gpu,
            gpu_source: &c.gpu_source,
            step_pricing: "chapter bytes: weights + KV read, no KV write",
            plan: p,
            basis: rows(c, p).into_iter().map(|[_, q, _, b]| (q, b)).collect(),
            caveats: CAVEATS,
        }),
    }
}
