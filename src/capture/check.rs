//! What each engine needs under nsys, checked on the server command where it is visible
//! (docs/capture.md, docs/steps.md): vLLM must run its CUDA profiler (its step ranges are NVTX only
//! then); SGLang's step span is never NVTX, and it starts the capture range on one GPU.

use serde_json::Value;

use crate::exit::{Error, Result};
use crate::wire::capture::Engine;

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
            return it.peek().map(|s| (*s).clone());
        }
        let json = if let Some(v) = a.strip_prefix("--profiler-config=") {
            Some(v.to_owned())
        } else if a == "--profiler-config" {
            it.peek().map(|s| (*s).clone())
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

/// Whether an environment switch is on: `NAME=1` (or true) as an `env` prefix in the
/// command, else the value this process passes down (`env_value`). The command wins, as
/// `env NAME=… prog` does.
fn switch_on(argv: &[String], name: &str, env_value: Option<&str>) -> bool {
    let on = |v: &str| matches!(v, "1" | "true" | "True" | "TRUE");
    let prefix = format!("{name}=");
    match argv.iter().rev().find_map(|a| a.strip_prefix(&prefix)) {
        Some(v) => on(v),
        None => env_value.is_some_and(on),
    }
}

/// Whether `SGLANG_ENABLE_NVTX_SCHEDULER=1` is set for the server: in the command (an `env`
/// prefix) or inherited from this process's environment (`env_value`).
pub(crate) fn sglang_nvtx_scheduler(argv: &[String], env_value: Option<&str>) -> bool {
    switch_on(argv, "SGLANG_ENABLE_NVTX_SCHEDULER", env_value)
}

/// The environment variables of this process that decide what a server started under nsys
/// will do (it inherits them).
#[derive(Debug, Clone, Default)]
pub struct ServerEnv {
    pub sglang_nvtx_scheduler: Option<String>,
    pub vllm_torch_cuda_profile: Option<String>,
    pub tllm_profile_start_stop: Option<String>,
}

impl ServerEnv {
    pub(crate) fn from_process() -> Self {
        ServerEnv {
            sglang_nvtx_scheduler: std::env::var("SGLANG_ENABLE_NVTX_SCHEDULER").ok(),
            vllm_torch_cuda_profile: std::env::var("VLLM_TORCH_CUDA_PROFILE").ok(),
            tllm_profile_start_stop: std::env::var("TLLM_PROFILE_START_STOP").ok(),
        }
    }
}

/// What to do on a vLLM that has no CUDA-profiler mode, or was not started in it.
const VLLM_CUDA_SWITCHES: &str = "vLLM >= 0.13 needs --profiler-config.profiler=cuda; vLLM 0.12 \
     needs VLLM_TORCH_CUDA_PROFILE=1 (exported, or as `env VLLM_TORCH_CUDA_PROFILE=1 vllm serve …`); \
     vLLM before 0.12 has no CUDA-profiler mode: capture a torch-profiler trace instead (start the \
     server with VLLM_TORCH_PROFILER_DIR=DIR and run `stepgate capture --engine vllm --trace-dir DIR` \
     without --nsys-out)";

/// `TLLM_PROFILE_START_STOP` as given in the server command (`env TLLM_PROFILE_START_STOP=A-B …`).
pub(crate) fn tllm_range_in_command(argv: &[String]) -> Option<String> {
    argv.iter()
        .rev()
        .find_map(|a| a.strip_prefix("TLLM_PROFILE_START_STOP="))
        .map(str::to_owned)
}

/// Check a server command that will run under nsys. Returns the notes to print; an error
/// (exit 4) when the command visibly cannot produce a capture.
pub(crate) fn check_server(
    engine: Engine,
    argv: &[String],
    env: &ServerEnv,
) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    match engine {
        Engine::Vllm => {
            let visible = argv.iter().any(|a| a.contains("vllm"));
            let cuda_env = switch_on(
                argv,
                "VLLM_TORCH_CUDA_PROFILE",
                env.vllm_torch_cuda_profile.as_deref(),
            );
            match vllm_profiler(argv) {
                Some(p) if p == "cuda" => notes.push(
                    "vLLM (>= 0.13) runs its CUDA profiler: /start_profile calls cudaProfilerStart, \
                     which opens the nsys capture range, and its execute_… step ranges are NVTX \
                     (default domain) only in this mode"
                        .into(),
                ),
                Some(p) => {
                    return Err(Error::environment(format!(
                        "the server command sets --profiler-config.profiler={p}; under nsys vLLM must \
                         run its CUDA profiler (only it calls cudaProfilerStart, which opens the capture \
                         range): {VLLM_CUDA_SWITCHES}"
                    )))
                }
                None if cuda_env => notes.push(
                    "VLLM_TORCH_CUDA_PROFILE=1: vLLM 0.12's CUDA-profiler switch (/start_profile calls \
                     cudaProfilerStart; execute_new_… step ranges are NVTX in this mode). vLLM >= 0.13 \
                     takes --profiler-config.profiler=cuda instead, and newer versions no longer read \
                     the variable"
                        .into(),
                ),
                None if visible => {
                    return Err(Error::environment(format!(
                        "the vLLM server command enables no CUDA profiler, so vLLM has no \
                         /start_profile and nsys captures nothing: {VLLM_CUDA_SWITCHES}"
                    )))
                }
                None => notes.push(format!(
                    "cannot see vLLM's flags in the server command: make sure it runs its CUDA \
                     profiler ({VLLM_CUDA_SWITCHES})"
                )),
            }
        }
        Engine::Sglang => {
            if sglang_nvtx_scheduler(argv, env.sglang_nvtx_scheduler.as_deref()) {
                notes.push(
                    "SGLANG_ENABLE_NVTX_SCHEDULER=1: scheduler.* stages are NVTX ranges (needs the \
                     `nvtx` Python package in the server's environment)"
                        .into(),
                );
            } else {
                notes.push(
                    "SGLang's step span is never NVTX: under nsys, steps come from \
                     SGLANG_ENABLE_NVTX_SCHEDULER=1 (SGLang >= 0.5.15; needs the `nvtx` Python \
                     package) or from `stepgate steps --steps graphs`"
                        .into(),
                );
            }
            notes.push(
                "SGLang calls cudaProfilerStart on its first GPU only (gpu_id == base_gpu_id): with \
                 tensor parallelism the capture range is opened by that rank"
                    .into(),
            );
        }
        Engine::Trtllm => {
            notes.push(
                "TensorRT-LLM has no HTTP profiler control: its PyExecutor calls cudaProfilerStart \
                 and cudaProfilerStop at the iterations TLLM_PROFILE_START_STOP=A-B names, and its \
                 `[Executor] _forward_step` NVTX ranges (domain TensorRT-LLM) are always on"
                    .into(),
            );
            if let Some(r) = tllm_range_in_command(argv) {
                notes.push(format!(
                    "the server command sets TLLM_PROFILE_START_STOP={r}: it wins over --start-step/--num-steps"
                ));
            }
            notes.push(
                "TensorRT-LLM iterates only while requests are in flight: use --drive (or send load \
                 yourself during --hold) or the capture range never opens"
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
        let none = ServerEnv::default();
        let e = check_server(Engine::Vllm, &v("vllm serve m"), &none).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::ENVIRONMENT);
        let e = check_server(
            Engine::Vllm,
            &v("vllm serve m --profiler-config.profiler=torch"),
            &none,
        )
        .unwrap_err();
        assert!(e.message.contains("profiler=cuda"));
        assert!(check_server(Engine::Vllm, &v("./launch.sh"), &none).is_ok());
    }

    #[test]
    fn sglang_nvtx_from_env_or_command() {
        assert!(sglang_nvtx_scheduler(
            &v("env SGLANG_ENABLE_NVTX_SCHEDULER=1 python3"),
            None
        ));
        assert!(sglang_nvtx_scheduler(&v("python3"), Some("1")));
        assert!(!sglang_nvtx_scheduler(&v("python3"), Some("0")));
        let notes = check_server(
            Engine::Sglang,
            &v("python3 -m sglang.launch_server"),
            &ServerEnv::default(),
        )
        .unwrap();
        assert!(notes.iter().any(|n| n.contains("steps --steps graphs")));
        assert!(notes.iter().any(|n| n.contains("first GPU only")));
    }

    #[test]
    fn every_vllm_version_has_its_switch_named() {
        let none = ServerEnv::default();
        // No switch: the refusal names each version's switch and the pre-0.12 way out.
        let m = check_server(Engine::Vllm, &v("vllm serve m"), &none)
            .unwrap_err()
            .message;
        for want in [
            ">= 0.13",
            "--profiler-config.profiler=cuda",
            "0.12",
            "VLLM_TORCH_CUDA_PROFILE=1",
            "before 0.12 has no CUDA-profiler mode",
            "--trace-dir",
        ] {
            assert!(m.contains(want), "{want}: {m}");
        }
        // vLLM 0.12: the variable in the command, or inherited.
        let n = check_server(
            Engine::Vllm,
            &v("env VLLM_TORCH_CUDA_PROFILE=1 vllm serve m"),
            &none,
        )
        .unwrap();
        assert!(n[0].contains("vLLM 0.12"), "{n:?}");
        let inherited = ServerEnv {
            vllm_torch_cuda_profile: Some("1".into()),
            ..ServerEnv::default()
        };
        assert!(check_server(Engine::Vllm, &v("vllm serve m"), &inherited).is_ok());
        // The command's own value wins over the inherited one.
        assert!(check_server(
            Engine::Vllm,
            &v("env VLLM_TORCH_CUDA_PROFILE=0 vllm serve m"),
            &inherited
        )
        .is_err());
        // An explicit non-CUDA profiler is refused even with the variable set.
        assert!(check_server(
            Engine::Vllm,
            &v("vllm serve m --profiler-config.profiler=torch"),
            &inherited
        )
        .is_err());
    }

    #[test]
    fn trtllm_notes_and_range_from_the_command() {
        let n = check_server(
            Engine::Trtllm,
            &v("env TLLM_PROFILE_START_STOP=5-9 trtllm-serve m"),
            &ServerEnv::default(),
        )
        .unwrap();
        assert!(
            n.iter().any(|x| x.contains("TLLM_PROFILE_START_STOP=5-9")),
            "{n:?}"
        );
        assert!(n.iter().any(|x| x.contains("--drive")), "{n:?}");
        assert_eq!(tllm_range_in_command(&v("trtllm-serve m")), None);
    }
}
