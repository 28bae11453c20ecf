//! `--batch` checked against the size of each decode's copy to the host: a decode copies at
//! least one sampled token id of at least 4 bytes per request, so its largest
//! device-to-host copy of `b` bytes bounds its requests by `b / 4`. On generated captures
//! whose copies the generator plants (`synth::planted_point::PointCase::TokenCopy`), with
//! the bound derived here from the planted bytes, and on the real SGLang and vLLM MI300X
//! fixtures, whose copies are read from their JSON here.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{fixture, steps_json};
use stepgate::synth::planted_point::{self, PointCase};
use stepgate::synth::workload;

/// The fewest bytes of one sampled token id (int32).
const ID_BYTES: i64 = 4;

fn batch_warnings(j: &Value) -> Vec<String> {
    j["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap().to_owned())
        .filter(|w| w.starts_with("--batch"))
        .collect()
}

/// The one `--batch` warning of a report.
fn one_batch_warning(j: &Value) -> String {
    let w = batch_warnings(j);
    assert_eq!(w.len(), 1, "{w:?}");
    w.into_iter().next().unwrap()
}

/// `steps ARGS` warns nothing about `--batch`.
fn no_batch_warning(args: &[&str]) {
    let w = batch_warnings(&steps_json(args));
    assert!(w.is_empty(), "{args:?}: {w:?}");
}

fn write(dir: &Path, to_host: Option<i64>, steps: usize) -> PathBuf {
    let path = dir.join("copy.sqlite");
    let scn = planted_point::scenario(PointCase::TokenCopy { to_host }, steps);
    workload::build(&scn, &path).unwrap();
    path
}

#[test]
fn a_batch_above_what_every_decode_copies_to_the_host_is_a_contradiction() {
    let dir = tempfile::tempdir().unwrap();
    let (n, bytes) = (9, 4);
    let path = write(dir.path(), Some(bytes), n);
    let p = path.to_str().unwrap();

    let j = steps_json(&[p, "--batch", "32"]);
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), n);
    for s in steps {
        // FlashInfer's decode attention makes it a decode; no grid counts its requests.
        assert_eq!(s["kind_guess"], "decode", "{s}");
        assert!(s.get("tokens_guess").is_none(), "{s}");
    }
    // One int32 id of 4 bytes per step: room for 4 / 4 = 1 request.
    let room = bytes / ID_BYTES;
    let w = one_batch_warning(&j);
    let want = format!(
        "--batch 32 contradicts the capture (each of the {n} decode steps copies at most \
         {bytes} bytes to the host, room for at most {room} sampled token id(s) of ≥ 4 bytes, \
         derived: the largest is [memcpy DtoH] of {bytes} bytes in step "
    );
    assert!(w.starts_with(&want), "{}", w);
    assert!(
        w.ends_with(
            ", and a decode copies at least one token id per request): pricing at --batch 32"
        ),
        "{}",
        w
    );
    assert_eq!(j["operating_point"]["batch"]["value"], 32);
    assert_eq!(j["operating_point"]["batch"]["basis"], "input");

    // The batch the copies allow: no warning.
    no_batch_warning(&[p, "--batch", &room.to_string()]);
}

#[test]
fn eight_bytes_a_step_allow_two_requests_whatever_the_id_type() {
    // One int64 id, or two int32 ids: the bound is 8 / 4 = 2, never 1.
    let dir = tempfile::tempdir().unwrap();
    let (n, bytes) = (6, 8);
    let path = write(dir.path(), Some(bytes), n);
    let p = path.to_str().unwrap();
    let room = (bytes / ID_BYTES) as u64;
    assert_eq!(room, 2);
    no_batch_warning(&[p, "--batch", &room.to_string()]);
    let over = (room + 1).to_string();
    let j = steps_json(&[p, "--batch", &over]);
    let w = one_batch_warning(&j);
    assert!(
        w.contains(&format!(
            "copies at most {bytes} bytes to the host, room for at most {room} sampled token id(s)"
        )),
        "{}",
        w
    );
}

#[test]
fn decodes_without_a_copy_to_the_host_give_no_bound() {
    // Tokens copied in a later step (async scheduling) leave nothing to read: no evidence,
    // no warning, however large the flag.
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), None, 6);
    let j = steps_json(&[path.to_str().unwrap(), "--batch", "32"]);
    for s in j["steps"].as_array().unwrap() {
        assert_eq!(s["kind_guess"], "decode", "{s}");
    }
    assert!(batch_warnings(&j).is_empty(), "{:?}", batch_warnings(&j));
}

#[test]
fn grids_and_copies_that_both_contradict_the_flag_make_one_line() {
    // The KV-cache writes count 1 token per step and each step copies 4 bytes to the
    // host: both say one request, in one warning.
    let dir = tempfile::tempdir().unwrap();
    let n = 6;
    let mut scn = planted_point::scenario(PointCase::Batch1Decodes, n);
    for st in &mut scn.steps {
        st.memcpy_d2h_bytes = Some(ID_BYTES);
    }
    let path = dir.path().join("both.sqlite");
    workload::build(&scn, &path).unwrap();
    let j = steps_json(&[path.to_str().unwrap(), "--batch", "32"]);
    let w = one_batch_warning(&j);
    assert!(
        w.starts_with(&format!(
            "--batch 32 contradicts the capture (1 inferred: 1 request(s) in {n} of {n} unnamed decode steps"
        )),
        "{}",
        w
    );
    assert!(
        w.contains(&format!(
            "; and each of the {n} decode steps copies at most 4 bytes to the host, room for at most 1 sampled token id(s)"
        )),
        "{}",
        w
    );
}

/// The fixture's trace events.
fn events(rel: &str) -> Vec<Value> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(rel)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut j: Value = serde_json::from_str(&text).unwrap();
    j["traceEvents"].as_array_mut().unwrap().split_off(0)
}

/// The bytes of every device-to-host GPU copy among `events`.
fn to_host_bytes(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| e["cat"] == "gpu_memcpy")
        .filter(|e| e["name"].as_str().unwrap_or("").contains("DtoH"))
        .map(|e| e["args"]["bytes"].as_u64().unwrap())
        .collect()
}

#[test]
fn the_sglang_decode_copies_room_for_its_32_requests_and_no_more() {
    const SGLANG: &str = "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz";
    let ev = events(SGLANG);
    // One device-to-host copy in the capture: 256 bytes, 8 a token id for bs=32.
    let copies = to_host_bytes(&ev);
    assert_eq!(copies, [256], "{copies:?}");
    let room = copies[0] / ID_BYTES as u64;
    let bs: u64 = ev
        .iter()
        .find_map(|e| {
            let n = e["name"].as_str()?.strip_prefix("step[DECODE bs=")?;
            n.trim_end_matches(']').parse().ok()
        })
        .unwrap();
    assert_eq!(bs, 32);
    assert!(bs <= room);

    let f = fixture(SGLANG);
    let p = f.to_str().unwrap();
    no_batch_warning(&[p, "--batch", &bs.to_string()]);
    // The copy is found in the decode step: a flag above its room is named.
    let over = (room + 1).to_string();
    let j = steps_json(&[p, "--batch", &over]);
    let w = one_batch_warning(&j);
    assert!(
        w.starts_with(&format!(
            "--batch {over} contradicts the capture (the one decode step copies at most 256 bytes to the host, room for at most {room} sampled token id(s)"
        )),
        "{}",
        w
    );
    // Kineto's `Memcpy DtoH (Device -> Host)`, under the name nsys gives it.
    assert!(w.contains("[memcpy DtoH] of 256 bytes in step 0"), "{}", w);
}

#[test]
fn the_vllm_mi300x_decode_copies_nothing_to_the_host_so_gives_no_bound() {
    // Its step's copies are all device to device (the inputs staged in), none to the host:
    // vLLM copied the sampled ids outside this step, and no flag is contradicted.
    const VLLM: &str = "kineto/vllm_mi300x_decode_fullgraph_step.json.gz";
    let ev = events(VLLM);
    assert!(to_host_bytes(&ev).is_empty());
    assert!(ev.iter().any(|e| e["cat"] == "gpu_memcpy"));
    let f = fixture(VLLM);
    no_batch_warning(&[f.to_str().unwrap(), "--batch", "100000"]);
}
