//! Steps on generated nsys exports checked against the generator's own arithmetic, and the `steps` output pinned on one.

mod generated {
    //! Steps on generated nsys exports (real 2026.2 DDL), checked against the generator's
    //! own schedule arithmetic, and on the real fastvideo export against SQL.

    use stepgate::categories::Categorizer;
    use stepgate::source::nsys;
    use stepgate::synth::workload::*;
    use stepgate::synth::Layout;
    use stepgate::timing::steps::{find_steps, StepOptions, StepSource};
    use stepgate::wire::steps::{FoundBy, StepKind, StepsReport};
    use stepgate::wire::synth::Expected;

    fn run(scn: &Scenario, opts: &StepOptions) -> (Expected, StepsReport) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("w.sqlite");
        let exp = build(scn, &p).unwrap();
        let t = nsys::load(&p).unwrap();
        let r = find_steps(&t, opts, &Categorizer::default()).unwrap();
        (exp, r)
    }

    /// Every expected step matched with the found one of the same rank and order.
    fn check(exp: &Expected, r: &StepsReport) {
        let with_gpu: Vec<_> = r.steps.iter().collect();
        assert_eq!(with_gpu.len(), exp.steps.len(), "step count");
        for e in &exp.steps {
            let s = r
                .steps
                .iter()
                .find(|s| s.pid == e.pid && s.cpu_start_ns == Some(e.cpu_start_ns))
                .unwrap_or_else(|| panic!("no step for rank {} at {}", e.rank, e.cpu_start_ns));
            let ctx = format!("rank {} step {}", e.rank, e.step);
            assert_eq!(s.cpu_end_ns, Some(e.cpu_end_ns), "{ctx} cpu end");
            assert_eq!(s.gpu_start_ns, e.gpu_start_ns, "{ctx} gpu start");
            assert_eq!(s.gpu_end_ns, e.gpu_end_ns, "{ctx} gpu end");
            assert_eq!(s.busy_ns, e.busy_ns, "{ctx} busy");
            assert_eq!(s.kernels, e.kernels, "{ctx} kernels");
            assert_eq!(s.graph_replays, e.graph_replays, "{ctx} graph replays");
            assert_eq!(s.launches, e.launches, "{ctx} launches");
            assert_eq!(s.launch_host_ns, e.launch_host_ns, "{ctx} launch host time");
            // Every named step, SGLang's step[…] included, is reported under its innermost
            // range's name (the outer one when not nested).
            if let Some(n) = &e.inner_name {
                assert_eq!(&s.name, n, "{ctx} name");
            }
        }
    }

    fn ks(n: usize) -> Vec<KernelSpec> {
        decode_kernels(n)
    }

    #[test]
    fn vllm_eager_node_graph_opaque_and_piecewise_steps() {
        let dec = vllm_execute_detailed(8, [0; 5], [8, 8, 8 * 1024, 8, 8 * 1024]);
        let pre = vllm_execute(2, 512, 0, 0);
        let mixed = vllm_execute(1, 100, 7, 7);
        let mut pw = ks(6);
        pw[3] = KernelSpec::eager("attention_eager_kernel", 7_000);
        let mut odd = StepSpec::new(Some(&dec), LaunchMode::Eager, ks(4));
        odd.launches_without_kernels = 2;
        odd.kernels_without_launch_after = 3;
        odd.memcpy_h2d_bytes = Some(1 << 20);
        let steps = vec![
            StepSpec::new(Some(&pre), LaunchMode::Eager, ks(10)),
            StepSpec::new(Some(&dec), LaunchMode::GraphNode, ks(16)),
            StepSpec::new(Some(&dec), LaunchMode::GraphOpaque, ks(16)),
            StepSpec::new(Some(&mixed), LaunchMode::Piecewise, pw),
            odd,
        ];
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, steps),
            &StepOptions::default(),
        );
        assert_eq!(r.method, FoundBy::Marker);
        check(&exp, &r);
        let kinds: Vec<StepKind> = r.steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            vec![
                StepKind::Prefill,
                StepKind::Decode,
                StepKind::Decode,
                StepKind::Mixed,
                StepKind::Decode
            ]
        );
        // The opaque replay asks for node-mode tracing.
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("--cuda-graph-trace=node")));
    }

    #[test]
    fn two_tp_ranks_align_and_name_the_slowest() {
        let name = sglang_step("DECODE", 16, None);
        let steps: Vec<StepSpec> = (0..4)
            .map(|_| StepSpec::new(Some(&name), LaunchMode::GraphNode, ks(24)))
            .collect();
        let mut scn = Scenario::new(Layout::Nsys2026_2, 2, steps);
        scn.rank_extra_ns = vec![0, 300];
        let (exp, r) = run(&scn, &StepOptions::default());
        check(&exp, &r);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.ranks.len(), 4);
        // Rank 1 runs every kernel 300 ns longer: it is the slowest in every step.
        let slow_pid = exp.steps.iter().find(|e| e.rank == 1).unwrap().pid;
        assert!(r.ranks.iter().all(|a| a.slowest_pid == slow_pid));
        // Periods: next GPU start − this GPU start, per rank.
        for rank in 0..2u32 {
            let e: Vec<_> = exp.steps.iter().filter(|e| e.rank == rank).collect();
            let s: Vec<_> = r.steps.iter().filter(|s| s.pid == e[0].pid).collect();
            for i in 0..e.len() - 1 {
                let want = e[i + 1].gpu_start_ns.unwrap() - e[i].gpu_start_ns.unwrap();
                assert_eq!(s[i].period_ns, Some(want));
                let idle = e[i + 1].gpu_start_ns.unwrap() - e[i].gpu_end_ns.unwrap();
                assert_eq!(s[i + 1].idle_before_ns, Some(idle));
            }
            assert_eq!(s.last().unwrap().period_ns, None);
        }
    }

    #[test]
    fn nested_sglang_in_execute_and_start_end_and_registered_ranges() {
        let outer = vllm_execute_detailed(8, [0; 5], [8, 8, 4096, 8, 4096]);
        let inner = sglang_step("DECODE", 8, None);
        let mut nested = StepSpec::new(None, LaunchMode::GraphNode, ks(8));
        nested.names = vec![outer, inner.clone()];
        let mut se = StepSpec::new(Some(&inner), LaunchMode::Eager, ks(5));
        se.nvtx = NvtxStyle::StartEnd;
        let mut reg = StepSpec::new(Some(&inner), LaunchMode::Eager, ks(5));
        reg.nvtx = NvtxStyle::Registered;
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, vec![nested, se, reg]),
            &StepOptions::default(),
        );
        check(&exp, &r);
        let first = &r.steps[0];
        assert_eq!(first.name, inner);
        // ΣN_KV comes from the outer execute_… annotation.
        assert_eq!(first.composition.as_ref().unwrap().sum_kv(), Some(4096));
    }

    #[test]
    fn old_layouts_and_graph_fallback() {
        for layout in [Layout::Nsys2022_2, Layout::Nsys2022_1, Layout::Nsys2020_5] {
            let mut scn = Scenario::new(
                layout,
                1,
                (0..3)
                    .map(|_| StepSpec::new(Some("step[DECODE bs=4]"), LaunchMode::Eager, ks(6)))
                    .collect(),
            );
            scn.backtrace_duplicates = layout != Layout::Nsys2020_5;
            let (exp, r) = run(&scn, &StepOptions::default());
            check(&exp, &r);
        }
        // No step ranges at all: auto falls back to one step per graph launch.
        let steps = (0..5)
            .map(|_| StepSpec::new(None, LaunchMode::GraphNode, ks(12)))
            .collect();
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, steps),
            &StepOptions::default(),
        );
        assert_eq!(r.method, FoundBy::Graphs);
        assert_eq!(r.found_by, FoundBy::Graphs);
        assert_eq!(r.steps.len(), 5);
        // One full graph per step: each launch one step, kind only guessed.
        assert!(r
            .steps
            .iter()
            .all(|s| s.kind == StepKind::Unknown && s.kind_guess == Some(StepKind::Decode)));
        for (s, e) in r.steps.iter().zip(&exp.steps) {
            assert_eq!(
                (s.gpu_start_ns, s.gpu_end_ns, s.busy_ns),
                (e.gpu_start_ns, e.gpu_end_ns, e.busy_ns)
            );
        }
        let opts = StepOptions {
            source: StepSource::Gaps,
            gap_threshold_ns: 100_000,
            ..Default::default()
        };
        // Host gaps of 500 µs between steps leave the GPU idle far longer than the threshold.
        let steps = (0..5)
            .map(|_| {
                let mut s = StepSpec::new(None, LaunchMode::Eager, ks(12));
                s.host_gap_before_ns = 500_000;
                s
            })
            .collect();
        let (exp, r) = run(&Scenario::new(Layout::Nsys2026_2, 1, steps), &opts);
        assert_eq!(r.steps.len(), 5);
        for (s, e) in r.steps.iter().zip(&exp.steps) {
            assert_eq!(
                (s.gpu_start_ns, s.busy_ns, s.launches),
                (e.gpu_start_ns, e.busy_ns, e.launches)
            );
        }
    }

    #[test]
    fn piecewise_graph_steps_without_markers_are_grouped_per_step() {
        // Each step: graph piece, eager attention, graph piece, eager, graph piece (3
        // different graphs per step, replayed again by the next step), no host sync.
        let steps: Vec<StepSpec> = (0..4)
            .map(|_| {
                let mut k = ks(8);
                k[2] = KernelSpec::eager("attention_eager_kernel", 7_000);
                k[5] = KernelSpec::eager("attention_eager_kernel", 7_000);
                let mut s = StepSpec::new(None, LaunchMode::Piecewise, k);
                s.host_gap_before_ns = 50_000;
                s
            })
            .collect();
        let (exp, r) = run(
            &Scenario::new(Layout::Nsys2026_2, 1, steps),
            &StepOptions::default(),
        );
        assert_eq!(r.found_by, FoundBy::Graphs);
        assert_eq!(r.method, FoundBy::Graphs);
        assert_eq!(r.steps.len(), 4, "one step per engine step, not per piece");
        for (s, e) in r.steps.iter().zip(&exp.steps) {
            assert_eq!(
                (
                    s.gpu_start_ns,
                    s.gpu_end_ns,
                    s.busy_ns,
                    s.kernels,
                    s.launches
                ),
                (
                    e.gpu_start_ns,
                    e.gpu_end_ns,
                    e.busy_ns,
                    e.kernels,
                    e.launches
                )
            );
            assert_eq!(s.name, "[3 CUDA-graph launches]");
            assert_eq!(s.kind, StepKind::Unknown);
            assert_eq!(s.kind_guess, None);
        }
    }

    #[test]
    fn fastvideo_fsdp_ranges_project_like_sql() {
        let path = crate::common::fixture("nsys/fastvideo_train_2gpu_nsys2026.2.sqlite");
        let t = nsys::load(&path).unwrap();
        let opts = StepOptions {
            source: StepSource::Regex(regex::Regex::new("^FSDP::").unwrap()),
            ..Default::default()
        };
        let r = find_steps(&t, &opts, &Categorizer::default()).unwrap();
        // Independent projection in SQL: outermost FSDP ranges → runtime calls (eventClass
        // 0/1) starting inside them on the same thread → ops with the same correlation id
        // in the same process.
        let db = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        // SQLite has no index on these tables: materialize the ops and calls with indexes in
        // the temp schema (the report itself stays read-only).
        db.execute_batch(
            "CREATE TEMP TABLE ops AS
               SELECT start, end, correlationId c, (globalPid >> 24) & 16777215 p FROM CUPTI_ACTIVITY_KIND_KERNEL
               UNION ALL SELECT start, end, correlationId, (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_MEMCPY
               UNION ALL SELECT start, end, correlationId, (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_MEMSET;
             CREATE INDEX temp.ops_cp ON ops(c, p);
             CREATE TEMP TABLE rt AS SELECT start, globalTid g, correlationId c FROM CUPTI_ACTIVITY_KIND_RUNTIME
               WHERE eventClass IN (0, 1);
             CREATE INDEX temp.rt_g ON rt(g, start);
             CREATE TEMP TABLE r AS
               SELECT n.start s, n.end e, n.globalTid g
               FROM NVTX_EVENTS n LEFT JOIN StringIds si ON si.id = n.textId
               WHERE n.eventType = 59 AND COALESCE(n.text, si.value) LIKE 'FSDP::%' AND n.end IS NOT NULL;
             CREATE INDEX temp.r_g ON r(g, s);",
        )
        .unwrap();
        let sql = "
            WITH outer_r AS (
              SELECT * FROM r a WHERE NOT EXISTS (
                SELECT 1 FROM r b WHERE b.g = a.g AND b.s <= a.s AND b.e >= a.e
                  AND (b.s < a.s OR b.e > a.e)))
            SELECT o.s, MIN(ops.start), MAX(ops.end), COUNT(ops.start)
            FROM outer_r o
            LEFT JOIN rt ON rt.g = o.g AND rt.start >= o.s AND rt.start <= o.e
            LEFT JOIN ops ON ops.c = rt.c AND ops.p = (rt.g >> 24) & 16777215
            GROUP BY o.s, o.g ORDER BY o.s, o.g";
        let mut st = db.prepare(sql).unwrap();
        let rows: Vec<(i64, Option<i64>, Option<i64>, i64)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows.len(), r.steps.len());
        let with_gpu = rows.iter().filter(|x| x.3 > 0).count();
        assert_eq!(with_gpu, r.steps.len() - r.steps_without_gpu_work);
        let mut found: Vec<(i64, Option<i64>, Option<i64>, u64)> = r
            .steps
            .iter()
            .map(|s| (s.cpu_start_ns.unwrap(), s.gpu_start_ns, s.gpu_end_ns, s.ops))
            .collect();
        found.sort();
        let mut want: Vec<(i64, Option<i64>, Option<i64>, u64)> = rows
            .into_iter()
            .map(|(s, a, b, n)| (s, a, b, n as u64))
            .collect();
        want.sort();
        assert_eq!(found, want);
    }
}

#[test]
fn steps_output_is_pinned() {
    let rel = "tests/fixtures/nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite";
    let at = |columns: &str, extra: &[&str]| {
        let mut args = vec!["steps", rel, "--model", "qwen3-8b", "--gpu", "mi300x"];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(crate::common::bin())
            .current_dir(crate::common::root())
            .env("COLUMNS", columns)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let go = |extra: &[&str]| at("120", extra);
    // As a user sees it: the answer first, fitted to 120 and to 80 columns.
    insta::assert_snapshot!("steps_sglang_table", go(&["--each"]));
    insta::assert_snapshot!("steps_sglang_table_80", at("80", &[]));
    insta::assert_snapshot!("steps_sglang_detail_120", at("120", &["--detail"]));
    insta::assert_snapshot!(
        "steps_sglang_markdown",
        go(&["--format", "markdown", "--each"])
    );
    let j: serde_json::Value = serde_json::from_str(&go(&["--format", "json"])).unwrap();
    let s = &j["steps"][0];
    // ΣN_KV = 32,785 comes from the enclosing execute_… range (read with sqlite3), the
    // name from the inner step[…]; the floor is the roofline's for exactly that batch.
    assert_eq!(s["name"], "step[DECODE bs=32]");
    assert_eq!(s["composition"]["generation"]["sk"], 32785);
    assert_eq!(s["kind"], "decode");
    use stepgate::roofline::floor::step_floor;
    use stepgate::wire::roofline::{FloorOptions, StepComposition};
    let comp = StepComposition {
        decode_requests: 32,
        sq: 32,
        sk: 32785,
        sqsq: 32,
        sqsk: 32785,
        decode_sq: 32,
        decode_sk: 32785,
        decode_sqsq: 32,
        decode_sqsk: 32785,
        ..Default::default()
    };
    let model = stepgate::roofline::presets::preset("qwen3-8b").unwrap();
    let gpu = stepgate::roofline::gpu::lookup("mi300x").unwrap();
    let want = step_floor(&model, &gpu, &comp, &FloorOptions::default()).floor_ns;
    let got = s["attribution"]["floor"]["floor_ns"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want, "{got} vs {want}");
    let wall = s["wall_ns"].as_f64().unwrap();
    assert!((s["attribution"]["floor"]["mbu"].as_f64().unwrap() - want / wall).abs() < 1e-12);
    insta::assert_json_snapshot!("steps_sglang_json", j);
}
