//! Unit tests of the capture configuration: each engine's body, flags that cannot work, bounds, and the inputs checked first.

use super::*;

fn cfg(engine: Engine) -> Config {
    Config {
        engine,
        url: "http://127.0.0.1:1".into(),
        num_steps: 5,
        start_step: None,
        activities: None,
        by_stage: false,
        detailed_annotations: false,
        drive: None,
        warmup: Duration::ZERO,
        hold: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        ready_timeout: Duration::from_secs(1),
        trace_dir: None,
        trace_wait: Duration::ZERO,
        nsys: None,
        inputs: Vec::new(),
    }
}

fn nsys(server: &[&str]) -> Option<NsysConfig> {
    Some(NsysConfig {
        program: "nsys".into(),
        out: "r".into(),
        server: server.iter().map(|s| (*s).to_owned()).collect(),
        shutdown_grace: Duration::from_secs(1),
        export_timeout: Duration::from_secs(1),
    })
}

#[test]
fn vllm_body_maps_steps_to_iterations() {
    let mut c = cfg(Engine::Vllm);
    c.start_step = Some(3);
    assert_eq!(
        c.start_body(),
        Some(json!({"max_iterations": 5, "delay_iterations": 3}))
    );
    c.num_steps = 0;
    c.start_step = None;
    assert_eq!(c.start_body(), None);
    assert!(!c.auto_stop());
}

#[test]
fn sglang_body_and_nsys_activities() {
    let mut c = cfg(Engine::Sglang);
    c.by_stage = true;
    c.detailed_annotations = true;
    c.trace_dir = Some("/t".into());
    assert_eq!(
        c.start_body(),
        Some(
            json!({"num_steps": 5, "activities": ["CPU", "GPU"], "profile_by_stage": true,
                        "detailed_annotations": true, "output_dir": "/t"})
        )
    );
    assert!(c.auto_stop());
    c.nsys = nsys(&[]);
    assert_eq!(
        c.start_body().unwrap()["activities"],
        json!(["CUDA_PROFILER"])
    );
    c.activities = Some(vec!["CPU".into()]);
    assert_eq!(c.validate().unwrap_err().exit_code(), crate::exit::INPUT);
    c.activities = Some(vec!["CUDA_PROFILER".into(), "GPUS".into()]);
    let m = c.validate().unwrap_err().message;
    assert!(m.contains("\"GPUS\"") && m.contains("CPU,GPU,MEM"), "{m}");
}

#[test]
fn flags_that_cannot_work() {
    let mut c = cfg(Engine::Vllm);
    c.by_stage = true;
    assert!(c.validate().is_err());
    let mut c = cfg(Engine::Sglang);
    c.by_stage = true;
    c.num_steps = 0;
    assert!(c.validate().unwrap_err().message.contains("--num-steps"));
}

#[test]
fn trtllm_range_and_what_it_needs() {
    let mut c = cfg(Engine::Trtllm);
    // No nsys: nothing can open the capture range.
    let e = c.validate().unwrap_err();
    assert_eq!(e.exit_code(), crate::exit::INPUT);
    assert!(e.message.contains("--nsys-out"), "{}", e.message);
    c.nsys = nsys(&["trtllm-serve", "m"]);
    assert!(c.validate().is_ok());
    // 5 steps from the default first iteration: both ends profiled.
    assert_eq!(c.tllm_range().as_deref(), Some("10-14"));
    c.start_step = Some(100);
    c.num_steps = 51;
    assert_eq!(c.tllm_range().as_deref(), Some("100-150"));
    assert_eq!(c.start_body(), None);
    assert!(!c.auto_stop());
    // The last iteration must fit: u32::MAX itself does, one past it does not.
    c.start_step = Some(u32::MAX - 1);
    c.num_steps = 2;
    assert_eq!(
        c.tllm_range(),
        Some(format!("{}-{}", u32::MAX - 1, u32::MAX))
    );
    c.num_steps = 3;
    assert_eq!(c.tllm_range(), None);
    assert!(c.validate().unwrap_err().message.contains("4294967295"));
    c.start_step = None;
    c.num_steps = 0;
    assert_eq!(c.tllm_range(), None);
    assert!(c.validate().unwrap_err().message.contains("--num-steps"));
    // Never for the other engines.
    let mut v = cfg(Engine::Vllm);
    v.start_step = Some(3);
    assert_eq!(v.tllm_range(), None);
}

#[test]
fn seconds_are_finite_non_negative_and_bounded() {
    assert_eq!(seconds("--hold", 2.5).unwrap(), Duration::from_millis(2500));
    assert_eq!(seconds("--hold", 0.0).unwrap(), Duration::ZERO);
    assert_eq!(
        seconds("--hold", MAX_SECONDS).unwrap(),
        Duration::from_secs(7 * 86_400)
    );
    for (v, says) in [
        (-1.0, "cannot be negative"),
        (f64::NAN, "finite"),
        (f64::INFINITY, "finite"),
        (1e30, "7 days"),
        (MAX_SECONDS + 1.0, "7 days"),
    ] {
        let e = seconds("--timeout", v).unwrap_err();
        assert_eq!(e.exit_code(), crate::exit::INPUT);
        assert!(
            e.message.starts_with("--timeout ") && e.message.contains(says),
            "{v}: {}",
            e.message
        );
    }
}

#[test]
fn counts_name_their_flag() {
    assert_eq!(count("--concurrency", 8, 1, MAX_CONCURRENCY).unwrap(), 8);
    let e = count("--concurrency", 0, 1, MAX_CONCURRENCY).unwrap_err();
    assert_eq!(e.message, "--concurrency 0: give at least 1");
    let e = count("--num-steps", -1, 0, u32::MAX).unwrap_err();
    assert_eq!(e.message, "--num-steps -1: give at least 0");
    let e = count("--num-steps", 1 << 40, 0, u32::MAX).unwrap_err();
    assert!(e.message.contains("beyond the 4294967295"), "{}", e.message);
}

#[test]
fn zeros_that_mean_nothing_are_refused_and_the_others_said() {
    let mut c = cfg(Engine::Vllm);
    c.timeout = Duration::ZERO;
    assert!(c.validate().unwrap_err().message.starts_with("--timeout 0"));
    let mut c = cfg(Engine::Vllm);
    c.drive = Some(DriveConfig {
        concurrency: 1,
        max_tokens: 0,
        model: None,
    });
    assert!(c
        .validate()
        .unwrap_err()
        .message
        .starts_with("--max-tokens 0"));
    let mut c = cfg(Engine::Vllm);
    c.nsys = nsys(&[]);
    c.nsys.as_mut().unwrap().shutdown_grace = Duration::ZERO;
    assert!(c
        .validate()
        .unwrap_err()
        .message
        .starts_with("--shutdown-grace 0"));
    let mut c = cfg(Engine::Trtllm);
    c.nsys = nsys(&["trtllm-serve", "m"]);
    c.hold = Duration::ZERO;
    assert!(c.validate().unwrap_err().message.starts_with("--hold 0"));
    // Zeros with a meaning pass, and say what they mean.
    let mut c = cfg(Engine::Vllm);
    c.hold = Duration::ZERO;
    c.ready_timeout = Duration::ZERO;
    assert!(c.validate().is_ok());
    let notes = c.zero_notes().join("\n");
    assert!(notes.contains("--hold 0") && notes.contains("--ready-timeout 0"));
}

#[test]
fn missing_inputs_and_bad_urls_are_found_first() {
    let mut c = cfg(Engine::Vllm);
    c.inputs.push(("--baseline", "/nonexistent/b.json".into()));
    let e = c.validate().unwrap_err();
    assert!(
        e.message.starts_with("--baseline /nonexistent/b.json"),
        "{}",
        e.message
    );
    let mut c = cfg(Engine::Vllm);
    c.url = "http://localhost:99999".into();
    let e = c.validate().unwrap_err();
    assert_eq!(e.exit_code(), crate::exit::INPUT);
    assert!(e.message.contains("invalid port"), "{}", e.message);
}
