//! Rendering of `stepgate capacity`: the six steps, each row labelled input, cited or
//! derived, followed by the source's caveats.

use super::table::{Align, Table};
use super::{fmt_pct, group_thousands, to_json, Format};
use crate::wire::capacity::{CapacityDocument, CapacityInputs, CapacityPlan, CAVEATS};
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
    row("in", "model", c.model.clone(), "input");
    row("in", "GPU", c.gpu.clone(), "input");
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
        "mean context in + out/2",
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
        "step bytes W+B·s̄·k (no KV write)",
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
        "prefill FLOPs 2PS + causal attn",
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
        "service time S per request",
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
    match &p.fixed_batch {
        Some(f) => {
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
                format!("${:.4} per M out tokens", f.usd_per_million_output_tokens),
                "derived",
            );
        }
        None => row("5", "M/M/1 screen", NO_SOLUTION.into(), "derived"),
    }
    if let (Some(itl), None) = (i.itl_target_s, &p.fluid) {
        row("6", "ITL target", ms(itl * 1e9), "input");
        let step6 = match &p.unsolved {
            Some(u) if u.step == 6 => NO_SOLUTION,
            _ => "not solved (step 5 has none)",
        };
        row("6", "fluid root", step6.into(), "derived");
    }
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
            format!("${:.4} per M out tokens", fl.usd_per_million_output_tokens),
            "derived",
        );
        if let (Some(l), Some(b)) = (fl.lower_root_lambda_rps, fl.lower_root_batch) {
            row(
                "6",
                "other (low-load) root, unused",
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

/// The marker of a step without a solution; the reason follows the table.
const NO_SOLUTION: &str = "no solution, see below";

/// The widest line of the text output (a model path the user typed aside).
pub(crate) const WIDTH: usize = 80;

/// Words of `text` on lines of at most `width` columns, the first prefixed by `first`,
/// the rest by `rest` (a word longer than a line stays whole).
fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_owned();
    let mut empty = true;
    for w in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + w.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_owned();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(w);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The first line: the operating point, or which step has no solution.
fn headline(c: &Context, p: &CapacityPlan) -> String {
    let i = &c.inputs;
    let per = format!("{}-GPU replica", i.gpus_per_replica);
    let what = match (&p.unsolved, &p.fluid, &p.fixed_batch) {
        (Some(u), _, _) => format!(
            "step {} ({}) has no solution; steps 1–{} are priced below.",
            u.step,
            u.name,
            u.step - 1
        ),
        (None, Some(f), _) => format!(
            "{} req/s per {per} at a {} ms ITL and {} ms p99 TTFT{}, ${:.4} per M output tokens.",
            num(f.lambda_rps, 2),
            num(f.itl_target_ns / 1e6, 0),
            num(i.ttft_p99_target_s * 1e3, 0),
            f.replicas
                .map(|r| format!(
                    "; {r} replicas for {} req/s",
                    num(i.fleet_rps.unwrap_or(0.0), 1)
                ))
                .unwrap_or_default(),
            f.usd_per_million_output_tokens
        ),
        (None, None, Some(s)) => format!(
            "{} req/s per {per} at a {} ms p99 TTFT (M/M/1 screen).",
            num(s.lambda_rps, 2),
            num(i.ttft_p99_target_s * 1e3, 0)
        ),
        (None, None, None) => String::new(),
    };
    wrap(
        &format!("Capacity: {what} A derived screening model, nothing measured."),
        WIDTH,
        "",
        "",
    )
}

/// The step without a solution: why, and what would give it one.
fn unsolved_text(p: &CapacityPlan, bullet: &str) -> String {
    let Some(u) = &p.unsolved else {
        return String::new();
    };
    let mut out = wrap(
        &format!(
            "Step {} ({}) has no solution: {}.",
            u.step, u.name, u.reason
        ),
        WIDTH,
        "",
        "",
    );
    if !u.changes.is_empty() {
        out.push_str("It would have one with any of:\n");
        for ch in &u.changes {
            out.push_str(&wrap(ch, WIDTH, bullet, "  "));
        }
    }
    out.push('\n');
    out
}

fn caveats() -> String {
    CAVEATS.iter().map(|c| wrap(c, WIDTH, "- ", "  ")).collect()
}

/// Version of the `capacity --format json` document (docs/schema/README.md).
pub const SCHEMA_VERSION: u32 = 1;

/// Render the capacity plan.
pub fn render(c: &Context, p: &CapacityPlan, source: &ModelSource, fmt: Format) -> String {
    match fmt {
        Format::Table => format!(
            "{}\n{}{}\nCaveats:\n{}",
            headline(c, p),
            unsolved_text(p, "- "),
            table(c, p).to_text(),
            caveats()
        ),
        Format::Markdown => format!(
            "### stepgate capacity (derived screening model)\n\n{}\n{}{}\n**Caveats**\n\n{}",
            headline(c, p),
            unsolved_text(p, "- "),
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
