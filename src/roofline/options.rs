//! Which model and GPU to price against, as plain options: what the command-line flags
//! convert into (once, validated), so resolving a model or GPU needs no argument parser.

use std::path::PathBuf;

use crate::exit::{Error, Result};
use crate::roofline::gpu;
use crate::roofline::hfconfig;
use crate::roofline::presets;
use crate::wire::roofline::{GpuSpec, ModelSpec, WeightDtype};

/// The preset priced when neither a preset nor a config is named (the seeds' operating
/// point: Llama-3-8B).
pub(crate) const DEFAULT_MODEL: &str = "llama-3-8b";

/// A model: a preset or a Hugging Face config.json, and overrides of its geometry.
/// Numbers are already checked (positive, finite, bounded) by whoever built this.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOptions {
    /// Preset key; ignored when `config` is given; neither: [`DEFAULT_MODEL`].
    pub preset: Option<String>,
    /// A Hugging Face config.json to read the geometry from.
    pub config: Option<PathBuf>,
    /// Weight storage (`bf16`, `fp8`, `int4-g128`, …), parsed by [`WeightDtype::parse`].
    pub weight_dtype: Option<String>,
    /// Bytes per KV-cache element.
    pub kv_dtype_bytes: Option<f64>,
    /// Layer count L.
    pub layers: Option<u64>,
    /// KV heads h_kv (at least 1).
    pub kv_heads: Option<u64>,
    /// Head dimension d_h (at least 1).
    pub head_dim: Option<u64>,
    /// Streamed weight bytes per step, replacing the count from the geometry.
    pub weights_bytes: Option<f64>,
    /// Streamed parameters for FLOPs (2·P per token).
    pub params_streamed: Option<f64>,
}

impl ModelOptions {
    /// Whether anything overrides the preset's or config's own values.
    pub(crate) fn overridden(&self) -> bool {
        self.weight_dtype.is_some() || self.kv_dtype_bytes.is_some() || self.raw()
    }

    /// Raw geometry overrides (not a dtype): the model's name says so.
    fn raw(&self) -> bool {
        self.weights_bytes.is_some()
            || self.params_streamed.is_some()
            || self.layers.is_some()
            || self.kv_heads.is_some()
            || self.head_dim.is_some()
    }

    /// The preset key in use when no config is given.
    pub(crate) fn preset_key(&self) -> &str {
        self.preset.as_deref().unwrap_or(DEFAULT_MODEL)
    }

    /// The model with every override applied.
    pub fn resolve(&self) -> Result<ModelSpec> {
        let mut m = match (&self.preset, &self.config) {
            (_, Some(p)) => hfconfig::load(p)?,
            (Some(n), None) => presets::preset(n).ok_or_else(|| {
                let keys: Vec<_> = presets::preset_keys().iter().map(|(k, _)| *k).collect();
                Error::input(format!(
                    "unknown model `{n}`{}; use one of {} or --model-config PATH",
                    crate::suggest::did_you_mean(n, keys.iter().copied()),
                    keys.join(", ")
                ))
            })?,
            (None, None) => presets::preset(DEFAULT_MODEL)
                .ok_or_else(|| Error::input(format!("built-in preset {DEFAULT_MODEL} missing")))?,
        };
        if let Some(w) = &self.weight_dtype {
            m.weight_dtype = WeightDtype::parse(w)?;
        }
        if let Some(b) = self.kv_dtype_bytes {
            m.kv_dtype_bytes = b;
        }
        if let Some(l) = self.layers {
            m.layers = l;
            m.swa_layers = m.swa_layers.min(l);
            if let Some(moe) = &mut m.moe {
                moe.moe_layers = moe.moe_layers.min(l);
            }
        }
        if let Some(h) = self.kv_heads {
            m.kv_heads = h;
        }
        if let Some(d) = self.head_dim {
            m.head_dim = d;
        }
        if let Some(w) = self.weights_bytes {
            m.overrides.weights_bytes = Some(w);
        }
        if let Some(p) = self.params_streamed {
            m.overrides.params_streamed = Some(p);
        }
        if self.raw() {
            m.name.push_str(" (raw overrides)");
        }
        Ok(m)
    }
}

/// A GPU: a preset key, and measured roofs that replace its datasheet ones.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuOptions {
    /// A key of the GPU table (`h100-sxm`, `mi300x`, …).
    pub key: String,
    /// HBM bandwidth, bytes/s.
    pub hbm_bytes_per_s: Option<f64>,
    /// Peak dense tensor FLOP/s (bf16 and fp8 alike).
    pub peak_flops_per_s: Option<f64>,
}

impl GpuOptions {
    /// The GPU with the given roofs applied.
    pub fn resolve(&self) -> Result<GpuSpec> {
        let mut g = gpu::lookup(&self.key).ok_or_else(|| {
            Error::input(format!(
                "unknown GPU `{}`{}; use one of {} (or pass --hbm-tb-s and --peak-tflops)",
                self.key,
                crate::suggest::did_you_mean(&self.key, GpuSpec::accepted_names()),
                GpuSpec::keys().join(", ")
            ))
        })?;
        if let Some(b) = self.hbm_bytes_per_s {
            g.hbm_bytes_per_s = b;
        }
        if let Some(p) = self.peak_flops_per_s {
            g.bf16_flops_per_s = p;
            g.fp8_flops_per_s = Some(p);
        }
        Ok(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_model_is_the_named_preset_untouched() {
        let o = ModelOptions::default();
        assert!(!o.overridden());
        let m = o.resolve().unwrap();
        assert_eq!(m.name, DEFAULT_MODEL);
        // Llama-3-8B: 32 layers, 8 KV heads of 128 (its config.json).
        assert_eq!((m.layers, m.kv_heads, m.head_dim), (32, 8, 128));
    }

    #[test]
    fn raw_overrides_apply_and_rename() {
        let o = ModelOptions {
            layers: Some(16),
            kv_dtype_bytes: Some(1.0),
            weights_bytes: Some(4e9),
            ..ModelOptions::default()
        };
        assert!(o.overridden());
        let m = o.resolve().unwrap();
        assert_eq!(m.layers, 16);
        assert_eq!(m.kv_dtype_bytes, 1.0);
        assert_eq!(m.overrides.weights_bytes, Some(4e9));
        assert_eq!(m.name, "llama-3-8b (raw overrides)");
        // A dtype alone is an override, not a raw one: the name stays.
        let o = ModelOptions {
            kv_dtype_bytes: Some(1.0),
            ..ModelOptions::default()
        };
        assert!(o.overridden());
        assert_eq!(o.resolve().unwrap().name, "llama-3-8b");
    }

    #[test]
    fn gpu_roofs_replace_the_datasheet() {
        let g = GpuOptions {
            key: "h100-sxm".to_owned(),
            hbm_bytes_per_s: Some(2e12),
            peak_flops_per_s: Some(5e14),
        }
        .resolve()
        .unwrap();
        assert_eq!(g.hbm_bytes_per_s, 2e12);
        assert_eq!((g.bf16_flops_per_s, g.fp8_flops_per_s), (5e14, Some(5e14)));
        let err = GpuOptions {
            key: "nope".to_owned(),
            hbm_bytes_per_s: None,
            peak_flops_per_s: None,
        }
        .resolve()
        .unwrap_err();
        assert!(err.to_string().contains("unknown GPU `nope`"), "{err}");
    }
}
