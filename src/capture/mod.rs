//! `capture`: arm the engine's own profiler over HTTP (vLLM or SGLang), optionally around
//! `nsys profile -c cudaProfilerApi`, or (TensorRT-LLM, which has no HTTP control) run the
//! server under nsys with the iteration range it profiles set in its environment, so the
//! trace holds the steps asked for and nothing of start-up (docs/capture.md, docs/steps.md).

pub mod check;
pub mod config;
pub mod drive;
pub mod engine;
pub mod flow;
pub use crate::interrupt;
pub mod nsys;
pub mod server;
pub mod traces;
pub mod watch;

use crate::wire::capture::Engine;

impl Engine {
    /// The engine as `--engine` and the JSON spell it (`vllm`, `sglang`, `trtllm`).
    pub fn key(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Trtllm => "trtllm",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Trtllm => "TensorRT-LLM",
        }
    }
}
