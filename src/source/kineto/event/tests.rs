//! Unit tests of reading one Kineto event: categories kept and skipped, kernel fields, the 2021 layout, malformed events.

use super::*;

#[test]
fn skips_cpu_ops_at_the_category() {
    // `args` after `cat` is never read: a broken payload there does not matter.
    let e = br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"#;
    assert!(matches!(parse(e, Keep::default()), Ok(None)));
    let e = br#"{"ph": "f", "id": 3, "cat": "ac2g"}"#;
    assert!(matches!(parse(e, Keep::default()), Ok(None)));
}

#[test]
fn kernel_fields_and_merged_pid() {
    let e = br#"{"ph": "X", "cat": "kernel", "name": "k", "pid": "[TP01-DP00] 9", "tid": 3,
            "ts": 4909914679584.875, "dur": 6.649,
            "args": {"device": 9, "stream": 3, "correlation": 92158, "grid": [1, 1, 1]}}"#;
    let ev = parse(e, Keep::default()).unwrap().unwrap();
    assert_eq!(ev.class(), Class::Kernel);
    assert_eq!(ev.pid.num, Some(9));
    assert_eq!(ev.pid.label, Some(&b"[TP01-DP00]"[..]));
    assert_eq!(ev.tid.num, Some(3));
    assert_eq!(ev.ts, Some(&b"4909914679584.875"[..]));
    let a = parse_args(ev.args, false);
    assert_eq!(
        (a.device, a.stream, a.correlation, a.graph_id),
        (9, 3, 92158, -1)
    );
    assert_eq!(a.launch, Launch::default());
    assert_eq!(
        parse_args(Some(br#"{"correlation": 0}"#), false).correlation,
        -1
    );
    assert_eq!(
        parse_args(Some(br#"{"correlation": 7}"#), false).correlation,
        7
    );
    let a = parse_args(ev.args, true);
    assert_eq!(a.launch.grid, [1, 1, 1]);
    assert_eq!(a.launch.block, [0, 0, 0]);
}

#[test]
fn python_functions_only_for_step_functions() {
    let e = br#"{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1750): _call_impl", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"#;
    assert!(matches!(parse(e, Keep::default()), Ok(None)));
    let e = br#"{"ph": "X", "cat": "python_function", "name": "vllm/v1/worker/gpu_worker.py(263): execute_model", "pid": 1, "tid": 2, "ts": 1, "dur": 1}"#;
    let ev = parse(e, Keep::default()).unwrap().unwrap();
    assert_eq!(ev.class(), Class::Python);
    assert_eq!(ev.tid.num, Some(2));
    // Name first, category after.
    let e = br#"{"name": "a.py(3): helper", "ph": "X", "cat": "python_function", "ts": 1}"#;
    assert!(matches!(parse(e, Keep::default()), Ok(None)));
    let e = br#"{"name": "x/scheduler.py(3): run_batch", "ph": "X", "cat": "python_function", "ts": 1}"#;
    assert_eq!(
        parse(e, Keep::default()).unwrap().unwrap().class(),
        Class::Python
    );
}

#[test]
fn string_ids_of_the_2021_layout() {
    let id = |t: &[u8]| parse_id(Cur::new(t).value().unwrap()).num;
    assert_eq!(id(br#""5555""#), Some(5555));
    assert_eq!(id(br#""stream 7""#), Some(7));
    assert_eq!(id(br#""2248185664""#), Some(2_248_185_664));
    assert_eq!(id(br#""Spans""#), None);
}

#[test]
fn operators_and_record_functions_of_the_2021_layout() {
    let op = |name: &str, args: &str| {
        let e = format!(
            r#"{{"ph": "X", "cat": "Operator", "name": "{name}", "pid": 1, "tid": "1", "ts": 1, "dur": 1, "args": {{{args}}}}}"#
        );
        let ev = parse(e.as_bytes(), Keep::default()).unwrap().unwrap();
        assert_eq!(ev.class(), Class::Operator);
        is_record_function(&ev)
    };
    // The ranges of the bundled traces: no inputs, or an empty list of them.
    assert!(op("ProfilerStep#5", r#""Device": 1, "External id": 9"#));
    assert!(op(
        "Optimizer.step#SGD.step",
        r#""Input dims": [], "Device": 0"#
    ));
    assert!(op("my_range", ""));
    // Operators: qualified, autograd nodes, autograd's own detach, inputs, seq nr.
    assert!(!op("aten::empty", ""));
    assert!(!op("torch::autograd::AccumulateGrad", ""));
    assert!(!op("CudnnConvolutionBackward", ""));
    assert!(!op("ReluBackward1", ""));
    assert!(!op("detach_", ""));
    assert!(!op("custom_op", r#""Input Dims": [[], [1]]"#));
    assert!(!op("custom_op", r#""Sequence number": 4"#));
}

#[test]
fn launch_dimensions() {
    assert_eq!(dims3(b"[128, 4, 1]"), [128, 4, 1]);
    assert_eq!(dims3(b"[7]"), [7, 0, 0]);
    assert_eq!(dims3(b"[-1, 4294967296, 2.5, 3]"), [0, 0, 0]);
    assert_eq!(dims3(b"[]"), [0, 0, 0]);
}

#[test]
fn cpu_ops_only_when_kept() {
    let e = br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2,
            "ts": 1, "dur": 2, "args": {"External id": 4, "Input Dims": [[32, 4096], [4096, 4096]]}}"#;
    assert!(matches!(parse(e, Keep::default()), Ok(None)));
    let keep = Keep {
        cpu_ops: true,
        ..Keep::default()
    };
    let ev = parse(e, keep).unwrap().unwrap();
    assert_eq!(ev.class(), Class::CpuOp);
    assert_eq!(
        input_dims(ev.args),
        Some(&b"[[32, 4096], [4096, 4096]]"[..])
    );
    assert_eq!(input_dims(Some(br#"{"External id": 4}"#)), None);
}

#[test]
fn python_frames_beside_the_step_functions_only_when_kept() {
    let frame = br#"{"ph": "X", "cat": "python_function", "name": "runner.py(50): _prepare_inputs",
            "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#;
    let step =
        br#"{"ph": "X", "cat": "python_function", "name": "gpu_worker.py(263): execute_model",
            "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#;
    assert!(matches!(parse(frame, Keep::default()), Ok(None)));
    assert!(parse(step, Keep::default()).unwrap().is_some());
    let keep = Keep {
        python_frames_min_ns: Some(1_000),
        ..Keep::default()
    };
    let ev = parse(frame, keep).unwrap().unwrap();
    assert_eq!(ev.class(), Class::Python);
    assert_eq!(ev.dur, Some(&b"2"[..]));
}

#[test]
fn malformed_event() {
    assert!(parse(br#"{"ph" "X"}"#, Keep::default()).is_err());
}
