//! Rendering the built-in GPU and model presets (`stepgate presets`): the cited GPU peaks
//! and the model geometries as tables (text, markdown, CSV) or JSON, each number labelled
//! with where it comes from.

use crate::report::floor::weight_dtype_name;
use crate::report::table::{Align, Table};
use crate::report::{group_thousands, to_json, Format};
use crate::wire::presets::{ModelPreset, Presets};
use crate::wire::roofline::GpuSpec;

/// Version of the `presets --format json` document (docs/schema/README.md).
pub const SCHEMA_VERSION: u32 = 1;

const GPU_TITLE: &str =
    "GPU presets (--gpu): vendor datasheet peaks, cited; dense tensor rates (no 2:4 sparsity)";
const MODEL_TITLE: &str = "Model presets (--model): geometry read from each checkpoint's \
published config.json; parameter counts and KV bytes derived from it";

/// The GPU table.
pub(crate) fn gpu_table(gpus: &[GpuSpec]) -> Table {
    let mut t = Table::new(&[
        ("gpu", Align::Left),
        ("name", Align::Left),
        ("HBM TB/s", Align::Right),
        ("bf16 TFLOP/s", Align::Right),
        ("fp8 TFLOP/s", Align::Right),
        ("SMs/CUs", Align::Right),
        ("memory GB", Align::Right),
        ("source", Align::Left),
    ]);
    for g in gpus {
        t.row(vec![
            g.key.to_owned(),
            g.name.to_owned(),
            format!("{:.3}", g.hbm_bytes_per_s / 1e12),
            group_thousands(&format!("{:.1}", g.bf16_flops_per_s / 1e12)),
            g.fp8_flops_per_s.map_or_else(
                || "–".to_owned(),
                |f| group_thousands(&format!("{:.1}", f / 1e12)),
            ),
            g.sm_count.to_string(),
            format!("{:.0}", g.memory_bytes / 1e9),
            g.source.to_owned(),
        ]);
    }
    t
}

/// The model table.
pub(crate) fn model_table(models: &[ModelPreset]) -> Table {
    let mut t = Table::new(&[
        ("model", Align::Left),
        ("layers", Align::Right),
        ("d_model", Align::Right),
        ("heads", Align::Right),
        ("kv heads", Align::Right),
        ("head dim", Align::Right),
        ("attention", Align::Left),
        ("experts (top-k)", Align::Right),
        ("params B", Align::Right),
        ("active B", Align::Right),
        ("KV KiB/token", Align::Right),
        ("weights", Align::Left),
        ("config.json of", Align::Left),
    ]);
    for m in models {
        let experts = match (m.experts, m.experts_per_token) {
            (Some(e), Some(k)) => format!("{e} ({k})"),
            _ => "–".to_owned(),
        };
        t.row(vec![
            m.key.clone(),
            m.layers.to_string(),
            group_thousands(&m.hidden.to_string()),
            m.heads.to_string(),
            m.kv_heads.to_string(),
            m.head_dim.to_string(),
            m.attention.to_owned(),
            experts,
            group_thousands(&format!("{:.2}", m.params_total as f64 / 1e9)),
            group_thousands(&format!("{:.2}", m.params_active as f64 / 1e9)),
            format!("{:.1}", m.kv_bytes_per_token / 1024.0),
            weight_dtype_name(m.weight_dtype),
            m.origin.clone(),
        ]);
    }
    t
}

/// Render in the requested format. CSV holds one table: the caller asks for one kind.
pub fn render(p: &Presets, format: Format, fit: crate::report::fit::Fit) -> String {
    let tables: Vec<(&str, Table)> = [
        p.gpus.as_deref().map(|g| (GPU_TITLE, gpu_table(g))),
        p.models.as_deref().map(|m| (MODEL_TITLE, model_table(m))),
    ]
    .into_iter()
    .flatten()
    .collect();
    match format {
        Format::Json => to_json(p),
        Format::Csv => tables.iter().map(|(_, t)| t.to_csv()).collect(),
        Format::Table => tables
            .iter()
            .map(|(title, t)| format!("{}\n\n{}", fit.wrap(title, 2), t.to_text_fit(fit)))
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Markdown => tables
            .iter()
            .map(|(title, t)| format!("{title}\n\n{}", t.to_markdown()))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}
