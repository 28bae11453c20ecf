//! The steps report's tally (`tally` in the JSON): the counts and sums the text prints
//! beside its tables, taken once where the report is built. Each is counted again here
//! from the report's own per-step rows, a second pass over the same document.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{fixture, run};

fn report(rel: &str) -> Value {
    let p = fixture(rel);
    let (code, out, err) = run(&["steps", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn sum(rows: &Value, key: &str) -> i64 {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].as_i64().unwrap())
        .sum()
}

#[test]
fn the_tally_counts_what_the_rows_hold() {
    for rel in [
        "nsys/saxpy_mpi_a100_nsys2022.2.sqlite",
        "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite",
        "nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite",
        // GPU time outside its steps.
        "kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz",
    ] {
        let j = report(rel);
        let t = &j["tally"];
        let steps = j["steps"].as_array().unwrap();
        // Steps per method: the report's own method first.
        let mut by: BTreeMap<String, u64> = BTreeMap::new();
        for s in steps {
            *by.entry(s["found_by"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        let got: BTreeMap<String, u64> = t["found_by"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["found_by"].as_str().unwrap().to_owned(),
                    m["steps"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, by, "{rel}");
        assert_eq!(t["found_by"][0]["found_by"], j["found_by"], "{rel}");
        // The tails.
        let tails: Vec<&Value> = steps.iter().filter(|s| s["tail_ops"] != 0).collect();
        if tails.is_empty() {
            assert!(t.get("tail").is_none(), "{rel}");
        } else {
            assert_eq!(t["tail"]["steps"], tails.len(), "{rel}");
            let ops: i64 = tails.iter().map(|s| s["tail_ops"].as_i64().unwrap()).sum();
            let busy: i64 = tails
                .iter()
                .map(|s| s["tail_busy_ns"].as_i64().unwrap())
                .sum();
            assert_eq!(t["tail"]["ops"], ops, "{rel}");
            assert_eq!(t["tail"]["busy_ns"], busy, "{rel}");
        }
        // GPU time outside steps, over the series.
        let o = &j["outside_steps"];
        assert_eq!(t["outside_before_ns"], sum(o, "before_ns"), "{rel}");
        assert_eq!(t["outside_between_ns"], sum(o, "between_ns"), "{rel}");
        assert_eq!(t["outside_after_ns"], sum(o, "after_ns"), "{rel}");
        // The slowest rank of each aligned step, most first.
        let mut slow: BTreeMap<i64, u64> = BTreeMap::new();
        for a in j["ranks"].as_array().unwrap() {
            *slow.entry(a["slowest_pid"].as_i64().unwrap()).or_default() += 1;
        }
        let got: Vec<(i64, u64)> = t["slowest_rank"]
            .as_array()
            .map(|v| {
                v.iter()
                    .map(|c| (c["pid"].as_i64().unwrap(), c["steps"].as_u64().unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "{rel}: {got:?}");
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, slow.into_iter().collect::<Vec<_>>(), "{rel}");
    }
}
