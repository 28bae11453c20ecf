//! Python spans and tails of the generator against an independent projection.

use super::*;

#[test]
fn generator_python_spans_and_tails_match_an_independent_projection() {
    // sample_tokens after each execute_model is the tail (vLLM >= 0.11.2); SGLang's
    // process_batch_result after run_batch is too.
    for (scn, step_frame, tail_frame) in [
        (
            Scenario::VllmV1PythonAsync,
            "vllm/v1/worker/gpu_worker.py(520): execute_model",
            "vllm/v1/worker/gpu_worker.py(497): sample_tokens",
        ),
        (
            Scenario::SglangPython,
            "sglang/srt/managers/scheduler.py(1378): run_batch",
            "sglang/srt/managers/scheduler.py(1501): process_batch_result",
        ),
    ] {
        let (_d, path, truth) = generate(scn, Format::Kineto);
        let files: Vec<PathBuf> = if path.is_dir() {
            let mut f: Vec<PathBuf> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            f.sort();
            f
        } else {
            vec![path.clone()]
        };
        assert_eq!(files.len(), truth.series.len(), "{}", scn.name());
        for (f, s) in files.iter().zip(&truth.series) {
            let v = read_trace(f);
            let body = python_span_busy(&v, step_frame);
            let tail = python_span_busy(&v, tail_frame);
            assert_eq!(body.len(), s.steps.len(), "{}", scn.name());
            for (b, st) in body.iter().zip(&s.steps) {
                assert_eq!((b.0, b.1), (st.busy_ns, st.kernels), "{}", scn.name());
            }
            // One tail frame per step that has GPU work after its span.
            let with_tail: Vec<_> = s.steps.iter().filter(|t| t.tail_ops > 0).collect();
            assert!(with_tail.len() + 1 >= s.steps.len(), "{}", scn.name());
            assert_eq!(tail.len(), with_tail.len(), "{}", scn.name());
            for (t, st) in tail.iter().zip(with_tail) {
                assert_eq!(
                    (t.0, t.1),
                    (st.tail_busy_ns, st.tail_kernels),
                    "{}",
                    scn.name()
                );
            }
        }
    }
}
