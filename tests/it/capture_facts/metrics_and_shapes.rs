//! GPU metrics mapped through the PerfWorks id, unreadable metric rows, and the shapes and token counts read from CPU ops.

use super::*;

#[test]
fn metrics_targets_map_to_devices_through_the_perfworks_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = metrics_report(dir.path(), Layout::Nsys2026_2);
    // PerfWorks numbers the GPUs the other way round: target 0 is device 1.
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("UPDATE TARGET_INFO_GPU SET pwGpuId = 1 - id")
        .unwrap();
    drop(conn);
    let t = load(&path, &with_metrics());
    let busy: Vec<i64> = t
        .gpu_metrics
        .iter()
        .filter(|s| s.metric == GpuMetric::DramRead && s.mean_in(0, 6_000_000) > Some(0.0))
        .map(|s| s.device)
        .collect();
    assert_eq!(busy, vec![1]);
    assert!(t.gpu_metrics.iter().all(|s| !s.device_inferred));

    // No TARGET_INFO_GPU row to map through: the low byte is taken, and said to be.
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("DELETE FROM TARGET_INFO_GPU").unwrap();
    drop(conn);
    let t = load(&path, &with_metrics());
    assert!(t.gpu_metrics.iter().all(|s| s.device_inferred));
    let read: Vec<(i64, bool)> = t
        .gpu_metrics
        .iter()
        .filter(|s| s.metric == GpuMetric::DramRead)
        .map(|s| (s.device, s.mean_in(0, 6_000_000) > Some(0.0)))
        .collect();
    assert_eq!(read, vec![(0, true), (1, false)]);
    let notes = t
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("(inferred)"))
        .count();
    assert_eq!(notes, 2, "{:?}", t.meta.warnings);
}

#[test]
fn unreadable_metric_rows_are_left_out_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = metrics_report(dir.path(), Layout::Nsys2026_2);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "UPDATE GPU_METRICS SET value = 'x' WHERE metricId = 4 AND timestamp = 1500000;
         UPDATE GPU_METRICS SET timestamp = 'z' WHERE metricId = 5 AND timestamp = 0;
         UPDATE GPU_METRICS SET value = 'y' WHERE metricId = 0;",
    )
    .unwrap();
    // The damaged rows of the four metrics read (the clock, metric 0, is never read, so
    // its damage does not count), the SQL way.
    let bad: i64 = conn
        .query_row(
            "SELECT count(*) FROM GPU_METRICS WHERE metricId IN (1, 2, 4, 5) AND \
             (typeof(value) NOT IN ('integer', 'real') OR typeof(timestamp) != 'integer')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    drop(conn);
    assert_eq!(bad, 4, "two rows per metric: both GPUs");
    let t = load(&path, &with_metrics());
    let w: Vec<_> = t
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("GPU_METRICS"))
        .collect();
    assert_eq!(w.len(), 1);
    assert!(
        w[0].starts_with(&format!("{bad} GPU_METRICS row(s)")),
        "{}",
        w[0]
    );
    assert_eq!(t.gpu_metrics[0].mean_in(1_000_000, 3_000_000), Some(92.0));
}

#[test]
fn exports_without_gpu_metrics_read_none() {
    for f in [FASTVIDEO, SAXPY] {
        assert!(
            load(&fixture(f), &with_metrics()).gpu_metrics.is_empty(),
            "{f}"
        );
    }
}

// --- input shapes ----------------------------------------------------------------

/// µs (as a JSON number, base-relative) → ns.
fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap() * 1000.0).round() as i64
}

#[test]
fn shapes_are_the_cpu_ops_input_dims() {
    for f in [B200, QWEN] {
        let doc = json(f);
        // (start, end, name, dims text, first dim of the first input), in file order.
        let expected: Vec<(i64, i64, String, String, i64)> = events(&doc)
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "cpu_op")
            .filter(|e| e["args"].get("Input Dims").is_some())
            .map(|e| {
                let d = &e["args"]["Input Dims"];
                let first = d[0][0].as_i64().unwrap_or(-1);
                let s = ns(&e["ts"]);
                (
                    s,
                    s + ns(&e["dur"]),
                    e["name"].as_str().unwrap().to_owned(),
                    serde_json::to_string(d).unwrap(),
                    first,
                )
            })
            .collect();
        assert!(expected.len() > 1000, "{f}: {}", expected.len());
        let off = load(&fixture(f), &LoadOptions::all());
        assert_eq!(off.shapes.height(), 0, "{f}: shapes only when asked");
        let t = load(
            &fixture(f),
            &LoadOptions {
                shapes: true,
                ..LoadOptions::all()
            },
        );
        let v = t.shapes_view().unwrap();
        let got: Vec<(i64, i64, String, String, i64)> = (0..v.pid.len())
            .map(|i| {
                (
                    v.start_ns[i],
                    v.end_ns[i],
                    t.name(v.name_id[i]).to_owned(),
                    t.name(v.dims_id[i]).to_owned(),
                    v.first_dim[i],
                )
            })
            .collect();
        assert_eq!(
            got.len(),
            expected.len(),
            "{f}: {:?} {:?}",
            got.first(),
            expected.first()
        );
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g, e, "{f}");
        }
        // The rest of the trace is the same with or without shapes (name ids aside: the
        // operators' names are interned among the kernels').
        assert_eq!(op_rows(&off), op_rows(&t), "{f}");
        assert_eq!(off.ranges.height(), t.ranges.height(), "{f}");
    }
}

fn op_rows(t: &Trace) -> Vec<(i64, i64, i64, String)> {
    let v = t.ops_view().unwrap();
    (0..v.start_ns.len())
        .map(|i| {
            (
                i64::from(v.device[i]),
                v.start_ns[i],
                i64::from(v.correlation_id[i]),
                t.name(v.name_id[i]).to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_first_linear_layer_gives_the_token_count() {
    // vLLM B200 prefill of 888 tokens (the step's name says so): its first linear layer's
    // activation is [888, 2880] (read from the JSON by hand).
    let t = load(
        &fixture(B200),
        &LoadOptions {
            shapes: true,
            ..LoadOptions::all()
        },
    );
    let v = t.shapes_view().unwrap();
    let first_linear = (0..v.pid.len())
        .filter(|&i| t.name(v.name_id[i]) == "aten::linear")
        .min_by_key(|&i| v.start_ns[i])
        .unwrap();
    assert_eq!(v.first_dim[first_linear], 888);
    assert!(t
        .name(v.dims_id[first_linear])
        .starts_with("[[888,2880],[640,2880]"));
}
