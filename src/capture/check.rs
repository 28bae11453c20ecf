//! What each engine needs under nsys, checked on the server command where it is visible
//! (ENGINES.md §1.2, §2.2): vLLM must run its CUDA profiler (its step ranges are NVTX only
//! then); SGLang's step span is never NVTX, and it starts the capture range on one GPU.

use serde_json::Value;

use super::Engine;
use crate::exit::{Error, Result};

/// vLLM's `--profiler-config.profiler` value in a command line, in any of the forms vLLM's
/// argument parser takes: `--profiler-config.profiler=cuda`, `--profiler-config.profiler cuda`,
/// or a JSON `--profiler-config '{"profiler": "cuda"}'` (`=` form too).
pub fn vllm_profiler(argv: &[String]) -> Option<String> {
    let mut it = argv.iter().peekable();
    while let Some(a) = it.next() {
        if let Some(v) = a.strip_prefix("--profiler-config.profiler=") {
            return Some(v.to_owned());
        }
        if a == "--profiler-config.profiler" {
            return it.peek().map(|s| s.to_string());
        }
        let json = if let Some(v) = a.strip_prefix("--profiler-config=") {
            Some(v.to_owned())
        } else if a == "--profiler-config" {
            it.peek().map(|s| s.to_string())
        } else {
            None
        };
        if let Some(j) = json {
            if let Ok(v) = serde_json::from_str::<Value>(&j) {
                return v["profiler"].as_str().map(str::to_owned);
            }
        }
    }
    None
}

/// Whether `SGLANG_ENABLE_NVTX_SCHEDULER=1` is set for the server: in the command (an `env`
/// prefix) or inherited from this process's environment (`env_value`).
pub fn sglang_nvtx_scheduler(argv: &[String], env_value: Option<&str>) -> bool {
    let on = |v: &str| matches!(v, "1" | "true" | "True" | "TRUE");
    argv.iter()
        .filter_map(|a| a.strip_prefix("SGLANG_ENABLE_NVTX_SCHEDULER="))
        .any(on)
        || env_value.is_some_and(on)
}

/// Check a server command that will run under nsys. Returns the notes to print; an error
/// (exit 4) when the command visibly cannot produce a capture.
pub fn check_server(
    engine: Engine,
    argv: &[String],
    nvtx_env: Option<&str>,
) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    match engine {
        Engine::Vllm => {
            let visible = argv.iter().any(|a| a.contains("vllm"));
            match vllm_profiler(argv) {
                Some(p) if p == "cuda" => notes.push(
                    "vLLM runs its CUDA profiler: /start_profile calls cudaProfilerStart, which opens \
                     the nsys capture range, and its execute_… step ranges are NVTX (default domain) \
                     only in this mode"
                        .into(),
                ),
                Some(p) => {
                    return Err(Error::environment(format!(
                        "the server command sets --profiler-config.profiler={p}; under nsys vLLM needs \
                         --profiler-config.profiler=cuda (only the CUDA profiler calls cudaProfilerStart, \
                         which opens the capture range)"
                    )))
                }
                None if visible => {
                    return Err(Error::environment(
                        "the vLLM server command has no --profiler-config.profiler=cuda: without it vLLM \
                         has no /start_profile and nsys captures nothing; add --profiler-config.profiler=cuda",
                    ))
                }
                None => notes.push(
                    "cannot see vLLM's flags in the server command: make sure it runs with \
                     --profiler-config.profiler=cuda"
                        .into(),
                ),
            }
        }
        Engine::Sglang => {
            if sglang_nvtx_scheduler(argv, nvtx_env) {
                notes.push(
                    "SGLANG_ENABLE_NVTX_SCHEDULER=1: scheduler.* stages are NVTX ranges (needs the \
                     `nvtx` Python package in the server's environment)"
                        .into(),
                );
            } else {
                notes.push(
                    "SGLang's step span is never NVTX: under nsys, steps come from \
                     SGLANG_ENABLE_NVTX_SCHEDULER=1 (needs the `nvtx` Python package) or from \
                     `stepgate steps --steps graphs`"
                        .into(),
                );
            }
            notes.push(
                "SGLang calls cudaProfilerStart on its first GPU only (gpu_id == base_gpu_id): with \
                 tensor parallelism the capture range is opened by that rank"
                    .into(),
            );
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn every_vllm_spelling() {
        assert_eq!(
            vllm_profiler(&v("vllm serve m --profiler-config.profiler=cuda")).as_deref(),
            Some("cuda")
        );
        assert_eq!(
            vllm_profiler(&v("vllm serve m --profiler-config.profiler torch")).as_deref(),
            Some("torch")
        );
        let json = vec![
            "vllm".into(),
            "--profiler-config".into(),
            r#"{"profiler": "cuda"}"#.into(),
        ];
        assert_eq!(vllm_profiler(&json).as_deref(), Some("cuda"));
        let eq = vec![
            "vllm".into(),
            r#"--profiler-config={"profiler":"proton"}"#.into(),
        ];
        assert_eq!(vllm_profiler(&eq).as_deref(), Some("proton"));
        assert_eq!(vllm_profiler(&v("vllm serve m")), None);
    }

    #[test]
    fn vllm_without_cuda_profiler_is_refused() {
        let e = check_server(Engine::Vllm, &v("vllm serve m"), None).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::ENVIRONMENT);
        let e = check_server(
            Engine::Vllm,
            &v("vllm serve m --profiler-config.profiler=torch"),
            None,
        )
        .unwrap_err();
        assert!(e.message.contains("profiler=cuda"));
        assert!(check_server(Engine::Vllm, &v("./launch.sh"), None).is_ok());
    }

    #[test]
    fn sglang_nvtx_from_env_or_command() {
        assert!(sglang_nvtx_scheduler(
            &v("env SGLANG_ENABLE_NVTX_SCHEDULER=1 python3"),
            None
        ));
        assert!(sglang_nvtx_scheduler(&v("python3"), Some("1")));
        assert!(!sglang_nvtx_scheduler(&v("python3"), Some("0")));
        let notes =
            check_server(Engine::Sglang, &v("python3 -m sglang.launch_server"), None).unwrap();
        assert!(notes.iter().any(|n| n.contains("steps --steps graphs")));
        assert!(notes.iter().any(|n| n.contains("first GPU only")));
    }
}
