//! `stepgate presets`: the GPU and model presets `--gpu` and `--model` accept, with their
//! key numbers and where each comes from.

use crate::exit::{Error, Result, OK};
use crate::report::presets::render;
use crate::report::Format;
use crate::roofline::gpu::GPUS;
use crate::roofline::presets;
use crate::wire::presets::{ModelPreset, Presets};
use crate::wire::roofline::ModelSpec;

const EXAMPLE: &str = "Examples:
  stepgate presets
  stepgate presets gpus --format csv > gpus.csv
  stepgate presets models --format json";

/// Which table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// The GPU table (`--gpu`).
    #[value(alias = "gpu")]
    Gpus,
    /// The model table (`--model`).
    #[value(alias = "model")]
    Models,
}

#[derive(Debug, clap::Args)]
#[command(after_help = EXAMPLE)]
pub struct Args {
    /// Only this table (CSV needs one: it holds one table).
    #[arg(value_enum)]
    pub kind: Option<Kind>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// `mha`, `gqa`, `mqa` or `mla`.
fn attention(m: &ModelSpec) -> &'static str {
    match (&m.mla, m.kv_heads) {
        (Some(_), _) => "mla",
        (None, 1) => "mqa",
        (None, kv) if kv == m.heads => "mha",
        (None, _) => "gqa",
    }
}

/// A model preset's row: its geometry and the counts derived from it.
fn model_row(key: &str, origin: &str) -> Result<ModelPreset> {
    let m = presets::preset(key)
        .ok_or_else(|| Error::input(format!("built-in preset {key} missing")))?;
    let p = m.params();
    // The experts a token does not pick are the only weights it leaves untouched.
    let idle = m.moe.as_ref().map_or(0, |e| {
        (e.num_experts - e.top_k.min(e.num_experts)) * p.one_expert * e.moe_layers
    });
    Ok(ModelPreset {
        key: key.to_owned(),
        origin: origin.to_owned(),
        layers: m.layers,
        hidden: m.hidden,
        heads: m.heads,
        kv_heads: m.kv_heads,
        head_dim: m
            .mla
            .as_ref()
            .map_or(m.head_dim, |a| a.unabsorbed_widths().0),
        vocab: m.vocab,
        attention: attention(&m),
        experts: m.moe.as_ref().map(|e| e.num_experts),
        experts_per_token: m.moe.as_ref().map(|e| e.top_k),
        sliding_window: m.sliding_window,
        weight_dtype: m.weight_dtype,
        params_total: p.total,
        params_active: p.total - idle,
        kv_bytes_per_token: m.kv_cell_bytes(1, 1),
    })
}

/// Every preset of the kinds asked for, in table order.
pub fn presets(kind: Option<Kind>) -> Result<Presets> {
    let want = |k| kind.is_none_or(|w| w == k);
    Ok(Presets {
        schema_version: crate::report::presets::SCHEMA_VERSION,
        tool: crate::wire::meta::Tool::current(),
        gpus: want(Kind::Gpus).then(|| GPUS.to_vec()),
        models: if want(Kind::Models) {
            Some(
                presets::preset_keys()
                    .into_iter()
                    .map(|(k, origin)| model_row(k, origin))
                    .collect::<Result<_>>()?,
            )
        } else {
            None
        },
    })
}

pub fn run(args: &Args) -> Result<u8> {
    if args.format == Format::Csv && args.kind.is_none() {
        return Err(Error::input(
            "--format csv holds one table: name it, `stepgate presets gpus --format csv` or `stepgate presets models --format csv`",
        ));
    }
    crate::commands::stdout::print(&render(
        &presets(args.kind)?,
        args.format,
        crate::report::fit::Fit::terminal(false, crate::commands::stdout_columns),
    ))?;
    Ok(OK)
}
