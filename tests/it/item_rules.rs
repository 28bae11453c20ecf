//! The advice rules per item type, on real captures: one row per (rule, item type,
//! fixture), each with facts derived by hand from the fixture's JSON (python3 over the
//! trace events, the derivation in each row's comment), and the parallelism read from
//! what the ranks do. Only a kernel is sent to a kernel profiler; a collective gets its
//! message size, overlap and the other ranks; the idle time its pattern.

use serde_json::Value;

use crate::common::{fixture, steps_json};

/// One row: a fixture, the shape every step must get, the percentage its action must
/// start with (within `tolerance` points of the hand-derived share), and what the action
/// must and must not say.
struct Row {
    rule: &'static str,
    item: &'static str,
    fixture: &'static str,
    shape: &'static str,
    /// Per step: the share (in %) derived by hand.
    shares: &'static [f64],
    tolerance: f64,
    says: &'static str,
    never: &'static [&'static str],
}

const ROWS: &[Row] = &[
    // tracelens_mi300x_ddp_rank0_of8: per ProfilerStep#15..17, ncclDevKernel_Generic's
    // durations over the union of the step's kernels (launched inside the step's range)
    // are 86.6%, 86.9%, 86.2%; exclusive time splits the overlap with compute, so the
    // measured share is at most that (84% measured).
    Row {
        rule: "collective",
        item: "ncclDevKernel_Generic (an RCCL collective)",
        fixture: "kineto/tracelens_mi300x_ddp_rank0_of8_actckpt_profilerstep.json.gz",
        shape: "one-collective-dominant",
        shares: &[86.6, 86.9, 86.2],
        tolerance: 3.0,
        says: "a collective, whose time is its message size over the link plus the wait for the other ranks",
        never: &["rocprof-compute", "Nsight Compute", "take it to"],
    },
    // hta_a100_ddp_rank0_of2: per ProfilerStep#4..6, 1 − union(ops) / (last op end −
    // first op start) over the 1,258 kernels, copies and memsets launched in each step:
    // 77.1%, 76.7%, 73.3% idle.
    Row {
        rule: "gap: host stall",
        item: "the idle time between the step's kernels",
        fixture: "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz",
        shape: "host-stall",
        shares: &[77.1, 76.7, 73.3],
        tolerance: 1.0,
        says: "launches explain little of it: look for a synchronize, a blocking copy or the scheduler",
        never: &["Nsight Compute", "take it to"],
    },
];

/// The leading percentage of an action ("X is 84% of busy time", "gap is 77% of wall").
fn leading_pct(action: &str) -> f64 {
    let head = &action[..action.find('%').expect("a percentage")];
    let num: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    num.parse().unwrap()
}

#[test]
fn each_item_type_gets_its_own_rule_on_real_captures() {
    for r in ROWS {
        let j = steps_json(&[fixture(r.fixture).to_str().unwrap()]);
        let steps = j["steps"].as_array().unwrap();
        assert_eq!(steps.len(), r.shares.len(), "{}: {}", r.rule, r.fixture);
        for (s, &want) in steps.iter().zip(r.shares) {
            let a = &s["attribution"];
            let action = a["action"].as_str().unwrap();
            assert_eq!(a["shape"], r.shape, "{} ({}): {action}", r.rule, r.item);
            let got = leading_pct(action);
            assert!(
                got <= want + 0.5 && got >= want - r.tolerance,
                "{}: {got}% vs {want}% by hand: {action}",
                r.rule
            );
            assert!(action.contains(r.says), "{}: {action}", r.rule);
            for n in r.never {
                assert!(!action.contains(n), "{}: says {n:?}: {action}", r.rule);
            }
        }
    }
}

#[test]
fn the_run_verdict_holds_the_kernel_profiler_back_from_a_collective() {
    let j = steps_json(&[fixture(ROWS[0].fixture).to_str().unwrap()]);
    let v: &Value = &j["verdict"];
    let line = v["line"].as_str().unwrap();
    assert!(
        line.starts_with("ncclDevKernel_Generic is ") && line.contains("a collective"),
        "{line}"
    );
    assert!(!line.contains("take it to"), "{line}");
    assert_eq!(
        v["held_back"],
        serde_json::json!(["rocprof-compute for ncclDevKernel_Generic (a collective)"])
    );
}

#[test]
fn a_ddp_rank_is_data_parallel_not_tensor_parallel() {
    // hta_a100_ddp_rank0_of2: distributedInfo world_size 2, one NCCL group of both ranks
    // (which alone reads as TP 2); per ProfilerStep#4..6, 5 ncclKernel_AllReduce kernels
    // (15 in all), each starting after the step's first wgrad/dgrad/backward kernel and
    // launched from thread 2919752, while the steps' range is on thread 2910249.
    let j = steps_json(&[
        fixture("kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz")
            .to_str()
            .unwrap(),
    ]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(tp["value"], 1);
    assert_eq!(tp["basis"], "inferred");
    let why = tp["evidence"].as_str().unwrap();
    assert!(
        why.contains("DP 2 (DDP): 15 all-reduce(s) in 3 training step(s)"),
        "{why}"
    );
    assert!(
        why.contains("each launched from a host thread other than the step's"),
        "{why}"
    );
    assert!(!why.contains("every NCCL process group spans"), "{why}");
}

#[test]
fn collectives_that_are_not_tensor_parallel_are_named_beside_an_unknown_tp_by_their_nvtx_range() {
    // fastvideo_train_2gpu: the only NCCL kernels are 66 ncclDevKernel_SendRecv (33 per
    // GPU, under ncclGroupStart/ncclSend/ncclRecv ranges), no all-reduce: not TP.
    let j = steps_json(&[fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite")
        .to_str()
        .unwrap()]);
    let tp = &j["operating_point"]["tp"];
    assert_eq!(tp["value"], 1);
    assert_eq!(tp["basis"], "default");
    let why = tp["evidence"].as_str().unwrap();
    // Each of those launches lies in a PyTorch c10d `nccl:all_to_all, op_id = N` NVTX
    // range on its launching thread, so they are an all-to-all, not pipeline send/recv.
    // By hand (sqlite3): 66 ncclDevKernel_SendRecv kernels, 64 of them with a
    // cudaLaunchKernel of the same correlationId, all 64 inside an `nccl:all_to_all`
    // range of that call's globalTid (start ≤ call start ≤ end); the steps hold 64.
    assert!(
        why.contains("64 all-to-all (expert or sequence parallelism) (e.g. ncclDevKernel_SendRecv, launched inside the NVTX range nccl:all_to_all: 64 of its 64 recorded launches)"),
        "{why}"
    );
    assert!(!why.contains("point-to-point send/recv"), "{why}");
}
