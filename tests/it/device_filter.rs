//! `analyze --device N` summarises only device N: its steps, the kind summary built from
//! them, and no cross-rank alignment — checked against the same report analysed whole.

use serde_json::Value;

use crate::common;

fn analyze(args: &[&str]) -> Value {
    let (code, out, err) = common::run(args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn analyze_device_summarises_only_that_devices_steps() {
    let p = common::fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
    let p = p.to_str().unwrap();
    let all = analyze(&["analyze", p, "--format", "json"]);
    let one = analyze(&["analyze", p, "--device", "1", "--format", "json"]);
    let steps_all = all["steps"]["steps"].as_array().unwrap();
    let of_1: Vec<&Value> = steps_all.iter().filter(|s| s["device"] == 1).collect();
    assert!(
        !of_1.is_empty() && of_1.len() < steps_all.len(),
        "two devices with steps"
    );
    let steps_one = one["steps"]["steps"].as_array().unwrap();
    assert_eq!(steps_one.len(), of_1.len());
    assert!(steps_one.iter().all(|s| s["device"] == 1));
    // The same steps, measured the same.
    for (a, b) in steps_one.iter().zip(&of_1) {
        assert_eq!(a["busy_ns"], b["busy_ns"]);
        assert_eq!(a["wall_ns"], b["wall_ns"]);
    }
    // The kind summary counts device 1's steps only, and its median wall is theirs.
    let summary_steps: u64 = one["steps"]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    assert_eq!(summary_steps, of_1.len() as u64);
    let mut walls: Vec<i64> = of_1.iter().filter_map(|s| s["wall_ns"].as_i64()).collect();
    walls.sort_unstable();
    if one["steps"]["summary"].as_array().unwrap().len() == 1 {
        let med = &one["steps"]["summary"][0]["wall_ns"]["median"];
        let n = walls.len();
        let want = if n % 2 == 1 {
            walls[n / 2] as f64
        } else {
            (walls[n / 2 - 1] + walls[n / 2]) as f64 / 2.0
        };
        assert_eq!(med.as_f64(), Some(want), "{}", one["steps"]["summary"][0]);
    }
    assert_eq!(one["steps"]["ranks"].as_array().map_or(0, Vec::len), 0);
    assert_eq!(one["devices"].as_array().unwrap().len(), 1);
}
