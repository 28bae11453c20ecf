//! What `capture` writes: its JSON summary (engine, readiness, the load it drove, the
//! files it produced) and the capture sidecar beside the report, which `steps` and `gate`
//! read back for the operating point (`operating_point::sidecar`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which engine is listening.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Vllm,
    Sglang,
    /// TensorRT-LLM (`trtllm-serve`, PyTorch backend): profiled iterations come from
    /// `TLLM_PROFILE_START_STOP`, never from HTTP.
    Trtllm,
}

/// Counts at the time of asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DriveCounts {
    pub completed: u64,
    pub failed: u64,
}

/// The load a driven capture ran at: what the steps in its trace were serving.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OperatingPoint {
    /// Requests kept in flight (`--concurrency`).
    pub concurrency: u32,
    /// The prompt of every request, as sent (its token count is the engine's tokenizer's).
    pub prompt: String,
    /// Tokens each request asked for (`--max-tokens`); a request may stop earlier at EOS.
    pub max_tokens: u32,
    /// The model each request named (`--model`, or vLLM's and TensorRT-LLM's first of
    /// `GET /v1/models`); SGLang serves one model and is sent none.
    pub model: Option<String>,
}

/// What happened, for the report.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub schema_version: u32,
    pub tool: super::meta::Tool,
    pub engine: Engine,
    pub url: String,
    pub ready_via: String,
    pub ready_after_ms: i64,
    pub start_profile_body: Option<Value>,
    pub stopped_by: String,
    pub drive: Option<DriveCounts>,
    /// With `--drive`: the load the capture ran at.
    pub operating_point: Option<OperatingPoint>,
    pub nsys_report: Option<PathBuf>,
    pub sqlite: Option<PathBuf>,
    pub traces: Vec<PathBuf>,
    pub trace_note: Option<String>,
    pub notes: Vec<String>,
}

/// What the capture knew about the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureSidecar {
    pub schema: String,
    pub schema_version: u32,
    /// `vllm`, `sglang` or `trtllm`.
    #[serde(default)]
    pub engine: Option<String>,
    /// The served model, as the engine was asked for it.
    #[serde(default)]
    pub model: Option<String>,
    /// Tensor- and pipeline-parallel degrees the server was started with.
    #[serde(default)]
    pub tp: Option<u32>,
    #[serde(default)]
    pub pp: Option<u32>,
    /// The load `capture --drive` kept in flight while the profiler ran.
    #[serde(default)]
    pub drive: Option<Drive>,
}

/// The load driven during the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drive {
    /// Requests kept in flight.
    pub concurrency: u64,
    /// Prompt tokens per request, where known.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Output tokens per request (`max_tokens`).
    #[serde(default)]
    pub output_tokens: Option<u64>,
}
