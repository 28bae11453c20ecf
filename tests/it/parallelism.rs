//! Parallelism from what the ranks do: DDP read as data parallel on the MI300X (RCCL,
//! every collective `ncclDevKernel_Generic`) capture (the A100 one is in item_rules.rs), and on synthetic ranks of
//! every parallelism (`synth::training`) the one their collectives show, or unknown with
//! the collectives named. The counts are derived by hand: per step, from python3 over the
//! fixtures' JSON (kernels in each ProfilerStep's GPU window, their launching thread via
//! the `cuda_runtime` event of the same correlation id), or from the generator's layout.

use serde_json::Value;

use crate::common::{fixture, steps_json};
use stepgate::synth::training::{self, Parallel};

fn tp_of(j: &Value) -> (u64, String, String) {
    let tp = &j["operating_point"]["tp"];
    (
        tp["value"].as_u64().unwrap(),
        tp["basis"].as_str().unwrap().to_owned(),
        tp["evidence"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn the_mi300x_ddp_rank_is_data_parallel_with_its_broadcasts_named_as_the_sync() {
    // python3: per ProfilerStep#15..17, two ncclDevKernel_Generic launched from thread 542
    // (the step's) at kernel positions 2 and 3 of the 218 before the first backward kernel
    // (CPU ops nccl:broadcast of 9,600 and 20 elements), and two launched from thread 639
    // (pt_autograd_0) after it (nccl:all_reduce of 2,873,320 and 8,816,192 elements).
    let p = fixture("kineto/tracelens_mi300x_ddp_rank0_of8_actckpt_profilerstep.json.gz");
    let (v, basis, why) = tp_of(&steps_json(&[p.to_str().unwrap()]));
    assert_eq!((v, basis.as_str()), (1, "inferred"), "{why}");
    assert!(
        why.contains("DP 8 (DDP): 6 collective(s) of unstated kind in 3 training step(s)"),
        "{why}"
    );
    assert!(
        why.contains("each launched from a host thread other than the step's"),
        "{why}"
    );
    assert!(
        why.contains("the other 6 collective(s) are launched from the step's own thread among the first 10% of the (at most 218) kernels before its backward"),
        "{why}"
    );
}

const WORLD: i64 = 4;
const STEPS: usize = 4;
const LAYERS: usize = 6;

fn synth(p: Parallel) -> (training::Truth, (u64, String, String)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank0.json");
    let truth = training::write(&path, p, WORLD, STEPS, LAYERS).unwrap();
    let j = steps_json(&[path.to_str().unwrap()]);
    assert_eq!(j["steps"].as_array().unwrap().len(), STEPS);
    (truth, tp_of(&j))
}

#[test]
fn synthetic_ddp_on_rccl_is_data_parallel() {
    let (t, (v, basis, why)) = synth(Parallel::DdpRccl);
    // Two broadcasts, 2·6 forward kernels, two gradient buckets per step.
    assert_eq!(
        (t.leading, t.collectives, t.forward_kernels),
        (2, 2, 2 + 2 * LAYERS)
    );
    assert_eq!((v, basis.as_str()), (1, "inferred"), "{why}");
    assert!(
        why.contains("DP 4 (DDP): 8 collective(s) of unstated kind in 4 training step(s)"),
        "{why}"
    );
    assert!(why.contains("the other 8 collective(s)"), "{why}");
    assert!(why.contains("(at most 14) kernels"), "{why}");
}

#[test]
fn tensor_parallel_training_is_not_taken_for_ddp() {
    // NCCL: 6 forward + 6 backward all-reduces per step (≥ 8): TP over the world, read.
    let (_, (v, basis, why)) = synth(Parallel::TpNccl);
    assert_eq!((v, basis.as_str()), (4, "read"), "{why}");
    // RCCL: the same all-reduces as Generic kernels; forward ones from the step's thread
    // through the whole forward, so not DDP's sync; TP unknown, the collectives named.
    let (t, (v, basis, why)) = synth(Parallel::TpRccl);
    assert_eq!(t.collectives, 2 * LAYERS);
    assert_eq!((v, basis.as_str()), (1, "default"), "{why}");
    assert!(!why.contains("data parallel"), "{why}");
    assert!(
        why.contains("48 collective(s) whose name does not say their kind"),
        "{why}"
    );
}

#[test]
fn fsdp_is_read_from_its_gathers_and_scatters() {
    let (t, (v, basis, why)) = synth(Parallel::Fsdp);
    assert_eq!(t.collectives, 2 * LAYERS);
    assert_eq!((v, basis.as_str()), (1, "inferred"), "{why}");
    assert!(
        why.contains(
            "FSDP 4: 48 of 48 collectives in 4 training step(s) are all-gathers or reduce-scatters"
        ),
        "{why}"
    );
}

#[test]
fn pipeline_and_expert_parallelism_stay_unknown_with_their_collectives_named() {
    let (_, (v, basis, why)) = synth(Parallel::Pipeline);
    assert_eq!((v, basis.as_str()), (1, "default"), "{why}");
    // One send after the forward, one receive before the backward, per step.
    assert!(
        why.contains("8 point-to-point send/recv (pipeline stages"),
        "{why}"
    );
    let (_, (v, basis, why)) = synth(Parallel::Expert);
    assert_eq!((v, basis.as_str()), (1, "default"), "{why}");
    // A dispatch and a combine around each of 6 MoE layers, 4 steps.
    assert!(
        why.contains("48 all-to-all (expert or sequence parallelism)"),
        "{why}"
    );
    assert!(!why.contains("data parallel"), "{why}");
}
