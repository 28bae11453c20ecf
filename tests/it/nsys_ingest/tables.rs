//! What each nsys table reads as: fixture counts and names, correlation on pid, old layouts, NVTX text ids, load options, node mode, generated layouts, schema warnings and bad inputs.

use super::*;

#[test]
fn fixture_counts_and_names() {
    let db = fixture("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    // tests/fixtures/README.md: 3442 kernels / 5796 runtime / 904 memcpy / 22 memset.
    assert_eq!(t.ops.height(), 3442 + 904 + 22);
    assert_eq!(t.calls.height(), 5796);
    assert_eq!(range_names(&t), range_names_sql(&db, ""));
    // No TARGET_INFO_GPU: devices are the ids the ops carry.
    let ids: Vec<i64> = t.devices.iter().map(|d| d.id).collect();
    assert_eq!(
        ids.len() as i64,
        sql_i64(
            &db,
            "SELECT count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL"
        )
    );
    assert!(t.devices.iter().all(|d| d.name.is_none()));
    assert_eq!(t.meta.tool_version.as_deref(), Some("2026.2.1.210"));
    assert_eq!(t.meta.schema_version.as_deref(), Some("3.25.0"));
    assert_eq!(t.meta.cuda_graph_trace_mode.as_deref(), Some("Graph"));
    assert!(t.meta.warnings.is_empty(), "{:?}", t.meta.warnings);
    assert!(t.meta.process_names.contains(&(466, "python3".to_owned())));

    // Memcpy names by copyKind, counted by SQL.
    let v = t.ops_view().unwrap();
    for (kind, label) in [
        (1, "[memcpy HtoD]"),
        (2, "[memcpy DtoH]"),
        (8, "[memcpy DtoD]"),
    ] {
        let n = v.name_id.iter().filter(|&&n| t.name(n) == label).count() as i64;
        let want = sql_i64(
            &db,
            &format!("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = {kind}"),
        );
        assert_eq!(n, want, "{label}");
    }
    let memsets = v
        .name_id
        .iter()
        .filter(|&&n| t.name(n) == "[memset]")
        .count();
    assert_eq!(memsets, 22);

    // Kernel identity = demangled name, short form = shortName: check one row by SQL.
    let (dm, sn): (String, String) = ro(&db)
        .query_row(
            "SELECT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName \
             ORDER BY k.start, k.end LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let first_kernel = (0..v.kind.len())
        .find(|&i| v.kind[i] == OpKind::Kernel as u32)
        .unwrap();
    assert_eq!(t.name(v.name_id[first_kernel]), dm);
    assert_eq!(t.name(v.short_id(first_kernel)), sn);
}

/// Kernels whose (pid, correlationId) has no loaded call.
pub(super) fn kernels_without_launch(t: &Trace) -> usize {
    let c = t.calls_view().unwrap();
    let calls: HashSet<(i64, i64)> = c
        .pid
        .iter()
        .zip(c.correlation_id)
        .map(|(&p, &k)| (i64::from(p), i64::from(k)))
        .collect();
    let v = t.ops_view().unwrap();
    (0..v.kind.len())
        .filter(|&i| v.kind[i] == OpKind::Kernel as u32)
        .filter(|&i| !calls.contains(&(i64::from(v.pid[i]), i64::from(v.correlation_id[i]))))
        .count()
}

#[test]
fn correlation_joins_on_pid_too() {
    let by_pid = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (\
        SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId \
        AND r.eventClass IN (0, 1) AND (r.globalTid >> 24) = (k.globalPid >> 24))";
    let by_corr = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (\
        SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId)";
    // fixtures/README.md: 1810 (1799 with the wrong join) and 24 (23).
    for (f, right, wrong) in [
        ("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite", 1810, 1799),
        ("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite", 24, 23),
    ] {
        let db = fixture(f);
        assert_eq!(sql_i64(&db, by_pid), right);
        assert_eq!(sql_i64(&db, by_corr), wrong);
        let t = nsys::load(&db).unwrap();
        assert_eq!(kernels_without_launch(&t), right as usize, "{f}");
    }
}

#[test]
fn saxpy_2022_drops_backtrace_duplicates_and_reads_old_tables() {
    let db = fixture("nsys/saxpy_mpi_a100_nsys2022.2.sqlite");
    let t = nsys::load(&db).unwrap();
    // 95 runtime rows = 56 runtime + 1 driver + 38 backtrace (eventClass 67) duplicates.
    assert_eq!(
        sql_i64(&db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
        95
    );
    let real = sql_i64(
        &db,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)",
    );
    assert_eq!(real, 57);
    assert_eq!(t.calls.height() as i64, real);
    // Every launch call once: launches by SQL name match on the class 0/1 rows.
    let launches = sql_i64(
        &db,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
         WHERE r.eventClass IN (0, 1) AND (s.value LIKE 'cudaLaunchKernel%' OR \
         s.value LIKE 'cuLaunchKernel%' OR s.value LIKE 'cudaGraphLaunch%')",
    );
    let c = t.calls_view().unwrap();
    assert_eq!(
        (0..c.name_id.len()).filter(|&i| c.is_launch(i)).count() as i64,
        launches
    );
    assert!(launches >= 5);
    // NVTX: 22 push/pop ranges, 5 named by text and 17 by textId (MPI domain).
    assert_eq!(t.ranges.height(), 22);
    assert_eq!(range_names(&t), range_names_sql(&db, ""));
    // TARGET_INFO_GPU with `id`, and the old export-metadata table.
    assert_eq!(t.devices.len(), 1);
    let d = &t.devices[0];
    assert_eq!(d.name.as_deref(), Some("NVIDIA A100-SXM4-40GB"));
    assert_eq!(d.memory_bandwidth_bytes_per_s, Some(1_555_200_000_000.0));
    assert_eq!(d.sm_count, Some(108));
    assert_eq!(d.total_memory_bytes, Some(42_297_524_224));
    assert_eq!(t.meta.tool_version.as_deref(), Some("2022.2.1.31"));
    assert_eq!(t.meta.schema_version.as_deref(), Some("2.9.1"));
    assert_eq!(t.meta.cuda_graph_trace_mode, None);
}

#[test]
fn train_nvtx_mixes_text_and_text_id() {
    let db = fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    assert_eq!(range_names(&t), range_names_sql(&db, ""));
    let v = t.ranges_view().unwrap();
    // docs/nsys-format.md §4: 18656 text ranges in domain 0, 462 textId (NCCL) ranges in domain 1.
    let dom1 = v.domain_id.iter().filter(|&&d| d == 1).count();
    assert_eq!(dom1, 462);
    assert_eq!(v.domain_id.len(), 18656 + 462);
    let nccl = (0..v.name_id.len())
        .filter(|&i| v.domain_id[i] == 1 && t.name(v.name_id[i]).starts_with("nccl"))
        .count();
    assert_eq!(nccl, 462);
}

#[test]
fn load_options_limit_what_is_read() {
    let db = fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
    let t = nsys::load_with(&db, &LoadOptions::ops_only()).unwrap();
    assert_eq!(t.calls.height(), 0);
    assert_eq!(t.ranges.height(), 0);
    assert_eq!(
        per_device(&t, OpKind::Kernel),
        per_device_sql(&db, "CUPTI_ACTIVITY_KIND_KERNEL")
    );
    let opts = LoadOptions {
        range_filter: Some(regex::Regex::new(r"^FSDP::").unwrap()),
        ..LoadOptions::all()
    };
    let t = nsys::load_with(&db, &opts).unwrap();
    assert_eq!(
        range_names(&t),
        range_names_sql(
            &db,
            "AND COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) GLOB 'FSDP::*'"
        )
    );
    assert_eq!(t.ranges.height(), 68);
    assert_eq!(
        t.calls.height() as i64,
        sql_i64(
            &db,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0,1)"
        )
    );
}

#[test]
fn converted_sglang_file_is_node_mode() {
    let db = fixture("nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite");
    let t = nsys::load(&db).unwrap();
    assert_eq!(t.meta.cuda_graph_trace_mode.as_deref(), Some("Node"));
    let v = t.ops_view().unwrap();
    let in_graph = v.graph_id.iter().filter(|&&g| g >= 0).count() as i64;
    assert_eq!(
        in_graph,
        sql_i64(
            &db,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphId IS NOT NULL"
        )
    );
    assert_eq!(in_graph, 544);
}

/// Eager, node-graph, opaque-graph and piecewise steps on two ranks, with a memcpy,
/// launches without kernels and kernels without launches.
pub(super) fn mixed_scenario(layout: Layout) -> Scenario {
    let ks = |n: usize| workload::decode_kernels(n);
    let mut steps = vec![
        StepSpec::new(
            Some(&workload::vllm_execute(1, 512, 0, 0)),
            LaunchMode::Eager,
            ks(6),
        ),
        StepSpec::new(
            Some(&workload::vllm_execute(0, 0, 8, 8)),
            LaunchMode::GraphNode,
            ks(10),
        ),
        StepSpec::new(
            Some(&workload::sglang_step("DECODE", 8, None)),
            LaunchMode::Piecewise,
            vec![
                KernelSpec::new("gemm_a", 5_000),
                KernelSpec::new("gemm_b", 6_000),
                KernelSpec::eager("flash_attn_decode", 9_000),
                KernelSpec::new("gemm_c", 4_000),
            ],
        ),
        StepSpec::new(None, LaunchMode::Eager, ks(3)),
    ];
    steps[0].memcpy_h2d_bytes = Some(1 << 20);
    steps[1].launches_without_kernels = 2;
    steps[1].kernels_without_launch_after = 3;
    steps[2].nvtx = NvtxStyle::Registered;
    steps[3].nvtx = NvtxStyle::StartEnd;
    if layout == Layout::Nsys2026_2 {
        steps.push(StepSpec::new(
            Some(&workload::sglang_step("DECODE", 8, None)),
            LaunchMode::GraphOpaque,
            ks(12),
        ));
    }
    let mut s = Scenario::new(layout, 2, steps);
    s.rank_extra_ns = vec![0, 700];
    s.backtrace_duplicates = layout != Layout::Nsys2026_2;
    s
}

#[test]
fn generated_layouts_load_with_expected_values() {
    let dir = tempdir();
    for layout in [Layout::Nsys2020_5, Layout::Nsys2022_1, Layout::Nsys2026_2] {
        let p = dir.path().join(format!("{layout:?}.sqlite"));
        let exp = workload::build(&mixed_scenario(layout), &p).unwrap();
        // The generator's own arithmetic, checked by SQL on what it wrote.
        for d in &exp.devices {
            let (n, sum) = per_device_sql(&p, "CUPTI_ACTIVITY_KIND_KERNEL")[&d.device];
            assert_eq!((n as u64, sum), (d.kernels, d.kernel_sum_ns), "{layout:?}");
        }
        let t = nsys::load(&p).unwrap();
        let kernels = per_device(&t, OpKind::Kernel);
        for d in &exp.devices {
            assert_eq!(kernels[&d.device], (d.kernels as i64, d.kernel_sum_ns));
            // Sequential ops on one stream: busy = Σ op durations, window = first..last.
            let v = t.ops_view().unwrap();
            let idx: Vec<usize> = (0..v.device.len())
                .filter(|&i| i64::from(v.device[i]) == d.device)
                .collect();
            assert_eq!(idx.len() as u64, d.ops);
            let busy: i64 = idx.iter().map(|&i| v.end_ns[i] - v.start_ns[i]).sum();
            assert_eq!(busy, d.busy_ns);
            let first = idx.iter().map(|&i| v.start_ns[i]).min();
            let last = idx.iter().map(|&i| v.end_ns[i]).max();
            assert_eq!(
                (first, last),
                (Some(d.window_start_ns), Some(d.window_end_ns))
            );
        }
        assert_eq!(
            kernels_without_launch(&t),
            6,
            "{layout:?}: 3 orphans per rank"
        );
        // Backtrace duplicates (2022/2020 layouts) never reach the calls frame.
        let launches: u64 = exp.steps.iter().map(|s| s.launches).sum::<u64>()
            + exp.steps.iter().map(|s| s.memcpys).sum::<u64>();
        assert_eq!(t.calls.height() as u64, launches, "{layout:?}");
        // Devices: named from TARGET_INFO_GPU (deviceId column in 2020.5).
        assert_eq!(t.devices.len(), 2);
        assert_eq!(t.devices[1].name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        // Ranges: named steps (nested none here), registered and start/end forms.
        let named = exp.steps.iter().filter(|s| s.name.is_some()).count();
        assert_eq!(t.ranges.height(), named, "{layout:?}");
        let (tool, schema) = (t.meta.tool_version.clone(), t.meta.schema_version.clone());
        match layout {
            Layout::Nsys2020_5 => assert_eq!((tool, schema), (None, None)),
            Layout::Nsys2022_1 => assert_eq!(
                (tool.as_deref(), schema.as_deref()),
                (Some("2022.1.3.3"), Some("2.9.1"))
            ),
            _ => {
                assert_eq!(schema.as_deref(), Some("3.25.0"));
                assert_eq!(t.meta.cuda_graph_trace_mode.as_deref(), Some("Graph"));
                let v = t.ops_view().unwrap();
                let graphs: Vec<usize> = (0..v.kind.len())
                    .filter(|&i| v.kind[i] == OpKind::Graph as u32)
                    .collect();
                assert_eq!(graphs.len(), 2, "one opaque replay per rank");
                assert!(graphs
                    .iter()
                    .all(|&i| t.name(v.name_id[i]) == "[cuda graph 1]"));
                assert!(graphs.iter().all(|&i| v.graph_id[i] == 1));
            }
        }
        // Node-mode replays (kernels with a graph node id in the export; the trace does not
        // keep node ids) share their launch's correlation id.
        let node_corrs: HashSet<i64> = ro(&p)
            .prepare(
                "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL \
                 WHERE graphNodeId IS NOT NULL AND deviceId = 0",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let v = t.ops_view().unwrap();
        let node: Vec<usize> = (0..v.kind.len())
            .filter(|&i| v.device[i] == 0 && node_corrs.contains(&i64::from(v.correlation_id[i])))
            .collect();
        assert_eq!(
            node.len(),
            10 + 3,
            "{layout:?}: node-mode + piecewise graph kernels"
        );
        let corrs: HashSet<i64> = node
            .iter()
            .map(|&i| i64::from(v.correlation_id[i]))
            .collect();
        // Step 1 is one graph launch; step 2's piecewise graphs are two (gemm_a+gemm_b, then
        // gemm_c after the eager attention kernel).
        assert_eq!(corrs.len(), 3);
    }
}

#[test]
fn timestamps_not_collected_and_newer_schema_warn() {
    let dir = tempdir();
    let p = dir.path().join("w.sqlite");
    let mut w = NsysWriter::create(&p, Layout::Nsys2026_2).unwrap();
    w.set_export_meta("EXPORT_SCHEMA_VERSION", "3.27.1")
        .unwrap();
    let name = w.string("k").unwrap();
    for (s, e) in [(100, 200), (0, 0), (300, 450), (0, 0)] {
        w.kernel(&KernelRec {
            start_ns: s,
            end_ns: e,
            device: 0,
            stream: 7,
            pid: 5,
            correlation_id: None,
            demangled_name: name,
            short_name: name,
            graph_node_id: None,
            graph_id: None,
            grid: None,
        })
        .unwrap();
    }
    w.finish().unwrap();
    let t = nsys::load(&p).unwrap();
    assert_eq!(t.ops.height(), 2);
    let v = t.ops_view().unwrap();
    assert_eq!(v.correlation_id, &[-1, -1]);
    assert_eq!(v.graph_id, &[-1, -1]);
    assert_eq!(v.pid, &[5, 5]);
    assert_eq!(t.meta.warnings.len(), 2, "{:?}", t.meta.warnings);
    assert!(t.meta.warnings.iter().any(|w| w.contains("3.27.1")));
    assert!(t
        .meta
        .warnings
        .iter()
        .any(|w| w.starts_with("2 kernel rows")));
}

pub(super) fn assert_input_error(p: &Path, what: &str) -> String {
    match nsys::load(p) {
        Ok(_) => panic!("{what}: loaded"),
        Err(e) => {
            assert_eq!(e.exit_code(), 2, "{what}: {e}");
            let m = e.to_string();
            assert!(!m.contains('\n'), "{what}: one line: {m}");
            m
        }
    }
}

#[test]
fn bad_inputs_get_one_line_and_exit_2() {
    let dir = tempdir();
    let d = dir.path();
    assert!(assert_input_error(&d.join("missing.sqlite"), "missing").contains("cannot read"));
    assert!(assert_input_error(d, "dir").contains("directory"));
    std::fs::write(d.join("empty.sqlite"), b"").unwrap();
    assert!(assert_input_error(&d.join("empty.sqlite"), "empty").contains("not an SQLite"));
    std::fs::write(d.join("json.sqlite"), b"{\"traceEvents\": []}").unwrap();
    assert!(assert_input_error(&d.join("json.sqlite"), "json").contains("not an SQLite"));
    let other = d.join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    assert!(assert_input_error(&other, "other").contains("not an Nsight Systems export"));
    // An export with only host activity.
    let host = d.join("host.sqlite");
    let mut w = NsysWriter::create(&host, Layout::Nsys2026_2).unwrap();
    let n = w.string("cudaMalloc_v3020").unwrap();
    w.call(&CallRec {
        start_ns: 1,
        end_ns: 2,
        event_class: 0,
        pid: 1,
        tid: 1,
        correlation_id: Some(1),
        name: n,
    })
    .unwrap();
    w.nvtx(&NvtxRec {
        start_ns: 0,
        end_ns: Some(5),
        event_type: 59,
        pid: 1,
        tid: 1,
        name: NvtxName::Text("x"),
        domain_id: None,
    })
    .unwrap();
    w.finish().unwrap();
    assert!(assert_input_error(&host, "host only").contains("captured with -t cuda"));
}
