//! `capture`: arm the engine's own profiler over HTTP (vLLM or SGLang), optionally around
//! `nsys profile -c cudaProfilerApi`, so the trace holds the steps asked for and nothing of
//! start-up (seed 000 "Nsight Systems on a live server"; docs/ENGINES.md §1.5, §2.3, §2.4).

pub mod check;
pub mod drive;
pub mod engine;
pub mod flow;
pub mod interrupt;
pub mod nsys;

/// Which engine is listening.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Vllm,
    Sglang,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
        }
    }
}
