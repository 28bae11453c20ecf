//! What the diagnosis reads from a capture besides the timeline: the distributed run
//! (Kineto `distributedInfo`), kernel launch geometry (both formats), measured GPU
//! metrics (nsys `GPU_METRICS`) and operator input shapes (Kineto `record_shapes`). Each
//! is checked against the raw rows: serde_json over the trace, rusqlite over the export,
//! or the values the generator was told to plant.

mod metrics_and_shapes;

use std::io::Read;
use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;
use stepgate::source::{self, LoadOptions};
use stepgate::synth::writer::{CallRec, GpuMetricsRec, GpuRec, KernelRec, ThroughputWindow};
use stepgate::synth::{Layout, NsysWriter};
use stepgate::trace::{GpuMetric, Launch, OpKind, Trace};

use crate::common::fixture;

const B200: &str = "kineto/vllm_b200_eager_prefill_rank0.json.gz";
const VLLM_MI300X: &str = "kineto/vllm_mi300x_decode_fullgraph_step.json.gz";
const SGLANG: &str = "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz";
const HTA_V100: &str = "kineto/hta_v100_ns_resolution_rank-0.pt.trace.json.gz";
const HTA_DDP: &str = "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz";
const QWEN: &str = "kineto/hf_qwen1.5-0.5b_h100_profilerstep.json.gz";
const FASTVIDEO: &str = "nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite";
const SAXPY: &str = "nsys/saxpy_mpi_a100_nsys2022.2.sqlite";

fn json(rel: &str) -> Value {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(rel)).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().unwrap()
}

fn load(path: &Path, opts: &LoadOptions) -> Trace {
    source::load_with(path, opts).unwrap()
}

// --- distributedInfo -------------------------------------------------------------

#[test]
fn distributed_info_is_read_field_by_field() {
    for f in [B200, VLLM_MI300X, SGLANG, HTA_V100, HTA_DDP] {
        let raw = &json(f)["distributedInfo"];
        let d = load(&fixture(f), &LoadOptions::all())
            .meta
            .distributed
            .unwrap_or_else(|| panic!("{f}: distributedInfo"));
        assert_eq!(d.backend.as_deref(), raw["backend"].as_str(), "{f}");
        assert_eq!(d.rank, raw["rank"].as_i64(), "{f}");
        assert_eq!(d.ranks, vec![raw["rank"].as_i64().unwrap()], "{f}");
        assert_eq!(d.world_size, raw["world_size"].as_i64(), "{f}");
        assert_eq!(
            d.nccl_version.as_deref(),
            raw["nccl_version"].as_str(),
            "{f}"
        );
        assert_eq!(d.pg_count, raw["pg_count"].as_i64(), "{f}");
        let groups = raw["pg_config"].as_array().unwrap();
        assert_eq!(d.process_groups.len(), groups.len(), "{f}");
        for (g, r) in d.process_groups.iter().zip(groups) {
            assert_eq!(Some(g.name.as_str()), r["pg_name"].as_str(), "{f}");
            assert_eq!(g.desc.as_deref(), r["pg_desc"].as_str(), "{f}");
            assert_eq!(g.backend_config.as_deref(), r["backend_config"].as_str());
            assert_eq!(g.size, r["pg_size"].as_i64(), "{f}");
            let ranks: Vec<i64> = r["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect();
            assert_eq!(g.ranks, ranks, "{f}");
        }
    }
    // The figures the issue names, by hand from the files.
    let b200 = load(&fixture(B200), &LoadOptions::all())
        .meta
        .distributed
        .unwrap();
    assert_eq!((b200.world_size, b200.process_groups.len()), (Some(8), 15));
    assert_eq!(b200.pg_count, Some(71));
    let ddp = load(&fixture(HTA_DDP), &LoadOptions::all())
        .meta
        .distributed
        .unwrap();
    assert_eq!(ddp.world_size, Some(2));
    assert_eq!(ddp.process_groups[0].ranks, vec![0, 1]);
    // No distributedInfo, no Distributed; nsys never states one.
    assert!(load(&fixture(QWEN), &LoadOptions::all())
        .meta
        .distributed
        .is_none());
    assert!(load(&fixture(FASTVIDEO), &LoadOptions::all())
        .meta
        .distributed
        .is_none());
}

/// `doc` as rank `rank` of `world`: distributedInfo rewritten, everything else kept.
fn as_rank(doc: &Value, rank: i64, world: i64) -> Vec<u8> {
    let mut d = doc.clone();
    d["distributedInfo"]["rank"] = rank.into();
    d["distributedInfo"]["world_size"] = world.into();
    serde_json::to_vec(&d).unwrap()
}

#[test]
fn a_directory_of_ranks_lists_every_rank_and_flags_a_mismatch() {
    let doc = json(SGLANG);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("0-TP-0.trace.json"), as_rank(&doc, 0, 2)).unwrap();
    std::fs::write(dir.path().join("0-TP-1.trace.json"), as_rank(&doc, 1, 2)).unwrap();
    let t = load(dir.path(), &LoadOptions::all());
    let d = t.meta.distributed.unwrap();
    assert_eq!(
        (d.rank, d.world_size, d.ranks),
        (Some(0), Some(2), vec![0, 1])
    );
    assert!(!t
        .meta
        .warnings
        .iter()
        .any(|w| w.contains("distributedInfo")));

    std::fs::write(dir.path().join("0-TP-1.trace.json"), as_rank(&doc, 1, 4)).unwrap();
    let t = load(dir.path(), &LoadOptions::all());
    let w: Vec<_> = t
        .meta
        .warnings
        .iter()
        .filter(|w| w.contains("distributedInfo"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", t.meta.warnings);
    assert!(
        w[0].contains("world size 4") && w[0].contains("world size 2"),
        "{}",
        w[0]
    );
}

// --- launch geometry -------------------------------------------------------------

fn launches(t: &Trace) -> Vec<Launch> {
    let g = t.geometry_view().unwrap().expect("geometry was asked for");
    (0..g.grid_x.len()).map(|i| g.launch(i)).collect()
}

fn geometry() -> LoadOptions {
    LoadOptions {
        geometry: true,
        ..LoadOptions::all()
    }
}

#[test]
fn geometry_off_adds_no_columns() {
    for f in [FASTVIDEO, B200] {
        let t = load(&fixture(f), &LoadOptions::all());
        assert!(t.geometry_view().unwrap().is_none(), "{f}");
        assert_eq!(t.ops.width(), 10, "{f}");
        let on = load(&fixture(f), &geometry());
        assert_eq!(on.ops.width(), 16, "{f}");
        // The other columns do not change.
        let names: Vec<String> = t
            .ops
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert!(t.ops.equals_missing(&on.ops.select(names).unwrap()), "{f}");
    }
}

/// (grid, block) of every kernel row of an export, in rowid order, the plain SQL way.
fn sql_geometry(db: &Path) -> Vec<Launch> {
    let conn = Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL \
             WHERE NOT (start = 0 AND end = 0) ORDER BY rowid",
        )
        .unwrap();
    st.query_map([], |r| {
        let d = |i| r.get::<_, i64>(i).map(|v| v as u32);
        Ok(Launch {
            grid: [d(0)?, d(1)?, d(2)?],
            block: [d(3)?, d(4)?, d(5)?],
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn nsys_geometry_is_the_kernel_table_row_by_row() {
    for f in [
        FASTVIDEO,
        SAXPY,
        "nsys/fastvideo_train_2gpu_nsys2026.2.sqlite",
    ] {
        let db = fixture(f);
        let t = load(&db, &geometry());
        let v = t.ops_view().unwrap();
        let all = launches(&t);
        let kernels: Vec<Launch> = (0..all.len())
            .filter(|&i| v.kind[i] == OpKind::Kernel as u32)
            .map(|i| all[i])
            .collect();
        let expected = sql_geometry(&db);
        assert!(!expected.is_empty(), "{f}");
        assert_eq!(kernels, expected, "{f}");
        // Copies and fills have none.
        assert!((0..all.len())
            .filter(|&i| v.kind[i] != OpKind::Kernel as u32)
            .all(|i| all[i] == Launch::default()));
    }
}

/// `[x, y, z]` → dims (0 where missing).
fn dims(v: &Value) -> [u32; 3] {
    let mut out = [0; 3];
    for (k, d) in v.as_array().into_iter().flatten().take(3).enumerate() {
        out[k] = d.as_u64().unwrap_or(0) as u32;
    }
    out
}

#[test]
fn kineto_geometry_is_args_grid_and_block_in_file_order() {
    // CUDA (every kernel has them) and ROCm graph replays (only 11 of 555 do).
    for f in [B200, SGLANG, QWEN] {
        let doc = json(f);
        let expected: Vec<Launch> = events(&doc)
            .iter()
            .filter(|e| {
                e["ph"] == "X"
                    && matches!(
                        e["cat"].as_str(),
                        Some("kernel" | "gpu_memcpy" | "gpu_memset")
                    )
            })
            .map(|e| {
                if e["cat"] == "kernel" {
                    Launch {
                        grid: dims(&e["args"]["grid"]),
                        block: dims(&e["args"]["block"]),
                    }
                } else {
                    Launch::default()
                }
            })
            .collect();
        let t = load(&fixture(f), &geometry());
        assert_eq!(launches(&t), expected, "{f}");
        assert!(
            expected.iter().any(|l| l.grid[0] > 1 && l.block[0] > 1),
            "{f}"
        );
    }
}

// --- GPU metrics -----------------------------------------------------------------

const STEP: i64 = 100_000; // 10 kHz, nsys's default

/// Two GPUs with a kernel each (and its launch), GPU metrics on both: GPU 0 at 92 % read
/// / 6 % write over [1 ms, 3 ms) ("GEMMs at the roof") and 30 % read over [4 ms, 5 ms);
/// GPU 1 idle but sampled. Returns the export's path.
pub fn metrics_report(dir: &Path, layout: Layout) -> std::path::PathBuf {
    let path = dir.join(format!("metrics-{layout:?}.sqlite"));
    let mut w = NsysWriter::create(&path, layout).unwrap();
    let name = w.string("gemm_kernel").unwrap();
    let launch = w.string("cudaLaunchKernel_v7000").unwrap();
    for id in [0, 1] {
        w.call(&CallRec {
            start_ns: 900_000,
            end_ns: 905_000,
            pid: 100,
            tid: 100,
            correlation_id: Some(1 + id),
            name: launch,
            ..CallRec::default()
        })
        .unwrap();
        w.gpu(&GpuRec {
            id,
            name: "NVIDIA H100 80GB HBM3".into(),
            memory_bandwidth_bytes_per_s: 3_352_320_000_000,
            sm_count: 132,
            total_memory_bytes: 85_029_158_912,
        })
        .unwrap();
        w.kernel(&KernelRec {
            start_ns: 1_000_000,
            end_ns: 3_000_000,
            device: id,
            stream: 7,
            pid: 100,
            correlation_id: Some(1 + id),
            demangled_name: name,
            short_name: name,
            ..KernelRec::default()
        })
        .unwrap();
    }
    let windows = [
        ThroughputWindow {
            start_ns: 1_000_000,
            end_ns: 3_000_000,
            dram_read_pct: 92.0,
            dram_write_pct: 6.0,
            sm_active_pct: 99.0,
            sm_issue_pct: 41.0,
        },
        ThroughputWindow {
            start_ns: 4_000_000,
            end_ns: 5_000_000,
            dram_read_pct: 30.0,
            dram_write_pct: 2.0,
            sm_active_pct: 60.0,
            sm_issue_pct: 12.0,
        },
    ];
    for (pw, windows) in [(0, &windows[..]), (1, &[][..])] {
        w.gpu_metrics(&GpuMetricsRec {
            pw_gpu_id: pw,
            start_ns: 0,
            end_ns: 6_000_000,
            interval_ns: STEP,
            windows,
        })
        .unwrap();
    }
    w.finish().unwrap();
    path
}

fn with_metrics() -> LoadOptions {
    LoadOptions {
        gpu_metrics: true,
        ..LoadOptions::ops_only()
    }
}

#[test]
fn planted_dram_throughput_reads_back_per_gpu_and_window() {
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Nsys2026_2, Layout::Nsys2022_2] {
        let path = metrics_report(dir.path(), layout);
        assert!(load(&path, &LoadOptions::all()).gpu_metrics.is_empty());
        let t = load(&path, &with_metrics());
        // Four series per GPU (the clock and tensor counters are not read).
        let got: Vec<(i64, GpuMetric)> =
            t.gpu_metrics.iter().map(|s| (s.device, s.metric)).collect();
        use GpuMetric::*;
        assert_eq!(
            got,
            vec![
                (0, DramRead),
                (0, DramWrite),
                (0, SmActive),
                (0, SmIssue),
                (1, DramRead),
                (1, DramWrite),
                (1, SmActive),
                (1, SmIssue)
            ]
        );
        // The raw rows, counted by SQL: 60 samples per metric and GPU.
        let conn = Connection::open(&path).unwrap();
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM GPU_METRICS WHERE metricId = 4",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let read0 = &t.gpu_metrics[0];
        assert_eq!(2 * read0.samples.len() as i64, n);
        assert_eq!(read0.name, "DRAM Read Bandwidth [Throughput %]");
        assert_eq!(read0.unit, "Throughput %");
        assert!(!read0.device_inferred);
        assert_eq!(read0.interval_ns(), Some(STEP));
        assert!(read0.samples.is_sorted_by_key(|s| s.0));
        // Window means equal what was planted; outside the windows the GPU read nothing.
        assert_eq!(read0.mean_in(1_000_000, 3_000_000), Some(92.0));
        assert_eq!(read0.mean_in(4_000_000, 5_000_000), Some(30.0));
        assert_eq!(read0.mean_in(3_000_000, 4_000_000), Some(0.0));
        assert_eq!(t.gpu_metrics[1].mean_in(1_000_000, 3_000_000), Some(6.0));
        assert_eq!(t.gpu_metrics[3].mean_in(4_000_000, 5_000_000), Some(12.0));
        assert_eq!(t.gpu_metrics[4].mean_in(0, 6_000_000), Some(0.0));
        // [0.9 ms, 1.1 ms): samples at 0.9 (idle) and 1.0 ms (92 %).
        assert_eq!(read0.mean_in(900_000, 1_100_000), Some(46.0));
        assert_eq!(read0.mean_in(6_000_000, 7_000_000), None);
    }
}

#[test]
fn everything_reads_every_extra_the_format_has() {
    let t = load(&fixture(B200), &LoadOptions::everything());
    assert!(t.geometry_view().unwrap().is_some());
    assert!(t.shapes.height() > 0);
    assert!(t.gpu_metrics.is_empty(), "Kineto records no GPU metrics");
    let dir = tempfile::tempdir().unwrap();
    let t = load(
        &metrics_report(dir.path(), Layout::Nsys2026_2),
        &LoadOptions::everything(),
    );
    assert_eq!(launches(&t).len(), 2);
    assert_eq!(t.gpu_metrics.len(), 8);
    assert_eq!(t.shapes.height(), 0, "nsys records no shapes");
    assert_eq!(t.calls.height(), 2);
}
