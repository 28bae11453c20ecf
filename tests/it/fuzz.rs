//! A seeded mutation pass over the bundled reports and over Parquet datasets: damaged
//! SQLite rows and damaged Kineto JSON go through loading, analysis, step finding and
//! rendering; damaged `runs`, `steps` and `step_kernels` files go through `trend` and
//! `gate --history`'s baseline. Nothing may panic, and every failure must be an `Error`
//! with a one-line message and an input/environment exit (for a dataset, naming a file).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rusqlite::Connection;
use stepgate::attribution::attribute_all;
use stepgate::categories::Categorizer;
use stepgate::report::Format;
use stepgate::source;
use stepgate::timing::steps::{find_steps, StepOptions, StepSource};
use stepgate::wire::attribution::LaunchCost;

use crate::common::{fixture, gunzip};

/// Cases per fixture scale by `STEPGATE_FUZZ_SCALE` (default 1) and the seed mixes in
/// `STEPGATE_FUZZ_SEED` (default 0), for longer local hunts; CI runs the defaults.
fn knobs() -> (usize, u64) {
    let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    (
        var("STEPGATE_FUZZ_SCALE").unwrap_or(1).max(1) as usize,
        var("STEPGATE_FUZZ_SEED").unwrap_or(0),
    )
}

/// xorshift64*: small, seeded, no dependency (the cases must be the same on every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// Load `path` and run everything downstream of the reader; `Err(text)` for a panic or a
/// badly formed error, `Ok(true)` when the report loaded.
fn exercise(path: &Path) -> Result<bool, String> {
    let run = catch_unwind(AssertUnwindSafe(|| -> Result<bool, String> {
        let t = match source::load(path) {
            Ok(t) => t,
            Err(e) => return check_error(&e).map(|_| false),
        };
        let cats = Categorizer::default();
        match stepgate::pipeline::analyze::analyze_trace(&t, &cats, None) {
            Ok(a) => {
                for f in [Format::Table, Format::Json, Format::Markdown] {
                    let _ = stepgate::report::analyze::render(
                        &a,
                        f,
                        &stepgate::report::analyze::Options {
                            top: 5,
                            wide: false,
                            fit: stepgate::report::fit::Fit::columns(80),
                        },
                    );
                }
            }
            Err(e) => check_error(&e)?,
        }
        for source in [StepSource::Auto, StepSource::Gaps, StepSource::Graphs] {
            let opts = StepOptions {
                source,
                gap_threshold_ns: 100_000,
                top_kernels: 3,
                ..Default::default()
            };
            match find_steps(&t, &opts, &cats) {
                Ok(r) => {
                    let a = attribute_all(
                        &r.steps,
                        &|_| None,
                        &LaunchCost::default(),
                        stepgate::attribution::NSIGHT_COMPUTE,
                    );
                    let r = r.join(a).map_err(|e| format!("join: {}", e.message))?;
                    for f in [Format::Table, Format::Json, Format::Markdown] {
                        let _ = stepgate::report::steps::render(
                            "r",
                            &r,
                            f,
                            &stepgate::report::steps::Options {
                                each: true,
                                wide: false,
                                detail: true,
                                fit: stepgate::report::fit::Fit::columns(80),
                            },
                        );
                    }
                }
                Err(e) => check_error(&e)?,
            }
        }
        Ok(true)
    }));
    match run {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panic: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

fn check_error(e: &stepgate::exit::Error) -> Result<(), String> {
    let m = &e.message;
    if m.contains('\n') || m.is_empty() {
        return Err(format!("not one line: {m:?}"));
    }
    // A loader thread's panic is turned into an error: still a panic for this pass.
    if m.contains("panicked") || m.contains("internal error") {
        return Err(format!("hidden panic: {m}"));
    }
    if !matches!(e.exit_code(), 2 | 4) {
        return Err(format!("exit {}: {m}", e.exit_code()));
    }
    Ok(())
}

// ---------------------------------------------------------------- SQLite

const TABLES: &[&str] = &[
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "NVTX_EVENTS",
    "StringIds",
    "ENUM_CUDA_MEMCPY_OPER",
    "TARGET_INFO_GPU",
    "PROCESSES",
    "META_DATA_CAPTURE",
];

const COLUMNS: &[&str] = &[
    "start",
    "start",
    "end",
    "end",
    "correlationId",
    "correlationId",
    "deviceId",
    "streamId",
    "globalPid",
    "globalTid",
    "demangledName",
    "shortName",
    "nameId",
    "textId",
    "text",
    "copyKind",
    "bytes",
    "eventType",
    "eventClass",
    "value",
    "id",
    "name",
    "pid",
    "memoryBandwidth",
    "graphNodeId",
    "graphId",
    "domainId",
];

const VALUES: &[&str] = &[
    "NULL",
    "'abc'",
    "''",
    "'é€😀'",
    "X'00FF'",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775000",
    "-1",
    "0",
    "1",
    "1e308",
    "-1e308",
    "1e999",
    "0.5",
    "4294967296",
    "8589934592",
    "'CUDA_MEMCPY_KIND_éAB'",
    "'cudaLaunchKernel_v7000'",
    "'execute_context_1(9223372036854775807)_generation_18446744073709551616(1)'",
    "'step[PREFILL bs=99999999999999999999]'",
    "char(13, 10, 27, 0) || 'x'",
    "printf('%.5000c', 'y')",
];

/// One SQL mutation on a random table/column/row subset (a failing one is skipped: the
/// column may not exist, or a constraint may refuse the value).
fn sql_mutation(rng: &mut Rng) -> String {
    let table = rng.pick(TABLES);
    let col = rng.pick(COLUMNS);
    let m = 1 + rng.below(7);
    let r = rng.below(m);
    let filter = format!("WHERE rowid % {m} = {r}");
    match rng.below(10) {
        // Unconstrained copy of the table, so NULLs can be stored.
        0 => format!(
            "CREATE TABLE fz AS SELECT * FROM {table}; DROP TABLE {table}; \
             ALTER TABLE fz RENAME TO {table};"
        ),
        // Swapped start/end.
        1 => format!("UPDATE {table} SET start = end, end = start {filter};"),
        // Every row one correlation id.
        2 => format!("UPDATE {table} SET correlationId = 7;"),
        // Duplicated rows.
        3 => format!("INSERT INTO {table} SELECT * FROM {table} {filter};"),
        // Deleted rows.
        4 => format!("DELETE FROM {table} {filter};"),
        // Arithmetic on a column (overflows go to real in SQLite).
        5 => format!("UPDATE {table} SET {col} = {col} * 1000000007 {filter};"),
        _ => format!("UPDATE {table} SET {col} = {} {filter};", rng.pick(VALUES)),
    }
}

#[test]
fn sqlite_reports_with_mutated_rows_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("m.sqlite");
    let (scale, seed) = knobs();
    let mut rng = Rng(0x005e_ed0f_5e1f ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut failures = Vec::new();
    let mut loaded = 0;
    // The small exports carry most cases; each layout is covered.
    let plan = [
        ("nsys/sglang_decode_mi300x_converted_nsys2026.2.sqlite", 80),
        ("nsys/saxpy_mpi_a100_nsys2022.2.sqlite", 12),
        ("nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite", 4),
    ];
    for (f, cases) in plan {
        let pristine = std::fs::read(fixture(f)).unwrap();
        for case in 0..cases * scale {
            std::fs::write(&p, &pristine).unwrap();
            let conn = Connection::open(&p).unwrap();
            let mut applied = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let sql = sql_mutation(&mut rng);
                if conn.execute_batch(&sql).is_ok() {
                    applied.push(sql);
                }
            }
            drop(conn);
            match exercise(&p) {
                Ok(ok) => loaded += usize::from(ok),
                Err(e) => failures.push(format!("{f} case {case} {applied:?}: {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The pass must reach the analysis, not only the readers' refusals.
    assert!(loaded > 50, "only {loaded} mutated exports loaded");
}

// ---------------------------------------------------------------- Kineto JSON

const NUMBERS: &[&str] = &[
    "NaN",
    "Infinity",
    "-Infinity",
    "1e308",
    "-1e308",
    "-1",
    "0",
    "9223372036854775808",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "8589934592",
    "4611686018427387",
    "-4611686018427387",
    "36028797018963.968",
    "-36028797018963.968",
    "1.5e-300",
    "-0",
    "\"12\"",
    "null",
    "true",
    "[]",
    "{}",
    "1e",
    "--1",
    "0x10",
];

const STRINGS: &[&str] = &[
    "\"\"",
    "\"\\u0000\\r\\n\\u001b[31m\"",
    "\"\\ud800\"",
    "\"é€😀\"",
    "\"\\\"",
    "\"execute_context_1(9223372036854775807)_generation_1(1)\"",
    "\"step[DECODE bs=18446744073709551616]\"",
    "\"cudaLaunchKernel\"",
    "\"[TP99999999999-DP00] 1\"",
    "7",
    "null",
];

/// Byte ranges of number tokens and string tokens (outside strings), found by a plain
/// scan: the mutations need positions, not a parse.
/// `(start, end)` byte spans.
type Spans = Vec<(usize, usize)>;

fn tokens(text: &[u8]) -> (Spans, Spans) {
    let (mut nums, mut strs) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                let s = i;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                strs.push((s, i.min(text.len())));
            }
            b'-' | b'0'..=b'9' => {
                let s = i;
                while i < text.len()
                    && matches!(text[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                nums.push((s, i));
            }
            _ => i += 1,
        }
    }
    (nums, strs)
}

fn splice(text: &[u8], (s, e): (usize, usize), with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + with.len());
    out.extend_from_slice(&text[..s]);
    out.extend_from_slice(with);
    out.extend_from_slice(&text[e..]);
    out
}

/// One mutation of a trace's text.
fn json_mutation(rng: &mut Rng, text: &[u8]) -> (String, Vec<u8>) {
    let (nums, strs) = tokens(text);
    match rng.below(12) {
        0 => {
            let at = rng.below(text.len());
            (format!("truncate at {at}"), text[..at].to_vec())
        }
        1 => {
            let mut t = text.to_vec();
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(t.len());
                t[i] ^= 1 << rng.below(8);
            }
            ("flip bits".into(), t)
        }
        2..=5 => {
            // Several numbers at once, so kernels, calls and header fields all get hit.
            let mut t = text.to_vec();
            let mut what = Vec::new();
            let mut picks: Vec<usize> = (0..1 + rng.below(6))
                .map(|_| rng.below(nums.len()))
                .collect();
            picks.sort_unstable();
            picks.dedup();
            for &k in picks.iter().rev() {
                let v = rng.pick(NUMBERS);
                t = splice(&t, nums[k], v.as_bytes());
                what.push(*v);
            }
            (format!("numbers → {what:?}"), t)
        }
        6 | 7 => {
            let k = rng.below(strs.len());
            let v = rng.pick(STRINGS);
            (
                format!("string {k} → {v}"),
                splice(text, strs[k], v.as_bytes()),
            )
        }
        8 => {
            // Drop one member (`"key": value,`) by cutting from a key to the next comma.
            let k = rng.below(strs.len());
            let (s, _) = strs[k];
            let e = text[s..]
                .iter()
                .position(|&b| b == b',')
                .map_or(text.len(), |p| s + p + 1);
            ("drop a member".into(), splice(text, (s, e), b""))
        }
        9 => {
            let (from, to): (&[u8], &[u8]) = *rng.pick(&[
                (
                    &b"\"traceEvents\": ["[..],
                    &b"\"traceEvents\": {\"x\": ["[..],
                ),
                (
                    &b"\"traceEvents\": ["[..],
                    &b"\"traceEvents\": 5, \"y\": ["[..],
                ),
                (
                    &b"\"baseTimeNanoseconds\": "[..],
                    &b"\"baseTimeNanoseconds\": -9000000000000000000"[..],
                ),
                (
                    &b"\"baseTimeNanoseconds\": "[..],
                    &b"\"baseTimeNanoseconds\": 9e18, \"z\": "[..],
                ),
                (
                    &b"\"args\": {"[..],
                    &b"\"args\": {\"device\": 4294967296, "[..],
                ),
                (&b"\"args\": {"[..], &b"\"args\": {\"device\": -5, "[..]),
                (&b"\"pid\": "[..], &b"\"pid\": 8589934592, \"q\": "[..]),
                (&b"\"ph\": \"X\""[..], &b"\"ph\": \"X\", \"ph\": 1"[..]),
                (&b"\"cat\": \"kernel\""[..], &b"\"cat\": [\"kernel\"]"[..]),
            ]);
            let mut t = text.to_vec();
            if let Some(at) = t.windows(from.len()).position(|w| w == from) {
                t = splice(&t, (at, at + from.len()), to);
            }
            (format!("replace {:?}", String::from_utf8_lossy(from)), t)
        }
        10 => {
            let mut t = vec![0xef, 0xbb, 0xbf];
            t.extend_from_slice(text);
            ("BOM".into(), t)
        }
        _ => {
            // A structural byte removed.
            let cands: Vec<usize> = (0..text.len())
                .filter(|&i| matches!(text[i], b'{' | b'}' | b'[' | b']' | b':' | b','))
                .take(4000)
                .collect();
            let i = *rng.pick(&cands);
            (
                "drop a structural byte".into(),
                splice(text, (i, i + 1), b""),
            )
        }
    }
}

#[test]
fn kineto_traces_with_mutated_text_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("m.json");
    let (scale, seed) = knobs();
    let mut rng = Rng(0x0bad_cafe_f00d ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut failures = Vec::new();
    let mut loaded = 0;
    for f in [
        "kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz",
        "kineto/vllm_mi300x_decode_fullgraph_step.json.gz",
    ] {
        let text = gunzip(&fixture(f));
        for case in 0..80 * scale {
            let (mut what, mut t) = json_mutation(&mut rng, &text);
            if rng.below(3) == 0 {
                let (w2, t2) = json_mutation(&mut rng, &t);
                what = format!("{what}; {w2}");
                t = t2;
            }
            std::fs::write(&p, &t).unwrap();
            match exercise(&p) {
                Ok(ok) => loaded += usize::from(ok),
                Err(e) => failures.push(format!("{f} case {case} ({what}): {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(loaded > 60, "only {loaded} mutated traces loaded");
}

// ---------------------------------------------------------------- Parquet datasets

/// Three small runs exported by the binary: the dataset every mutation starts from.
fn dataset(dir: &Path) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let ds = dir.join("pristine");
    for i in 0..3u64 {
        let r = dir.join(format!("r{i}.sqlite"));
        crate::common::jittered_decode_report(&r, 8, 10, i, "NVIDIA H100 80GB HBM3", &|_| 1.0);
        let (code, _, err) = crate::common::run(&[
            "export",
            r.to_str().unwrap(),
            "-o",
            ds.to_str().unwrap(),
            "--label",
            &format!("n={i}"),
            // Priced, so the MBU column holds values to damage.
            "--model",
            "llama-3-8b",
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let mut files = Vec::new();
    for t in ["runs", "steps", "step_kernels"] {
        files.extend(stepgate::dataset::layout::table_files(&ds, t));
    }
    (ds, files)
}

/// One mutation of one Parquet file: its bytes, or one column rewritten through polars.
fn parquet_mutation(rng: &mut Rng, path: &Path, other: &Path) -> String {
    use polars::prelude::*;
    let bytes = std::fs::read(path).unwrap();
    if bytes.is_empty() {
        return "already empty".into();
    }
    let write = |b: &[u8]| std::fs::write(path, b).unwrap();
    match rng.below(12) {
        0 => {
            let at = rng.below(bytes.len());
            write(&bytes[..at]);
            format!("truncate at {at}")
        }
        1 => {
            let mut b = bytes.clone();
            for _ in 0..1 + rng.below(16) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            write(&b);
            "flip bits".into()
        }
        2 => {
            write(b"");
            "zero bytes".into()
        }
        3 => {
            std::fs::copy(other, path).unwrap();
            format!("replaced by {}", other.display())
        }
        _ => {
            let Ok(mut df) = ParquetReader::new(std::io::Cursor::new(bytes)).finish() else {
                return "unreadable".into();
            };
            let names: Vec<String> = df
                .get_column_names()
                .iter()
                .map(|n| n.to_string())
                .collect();
            let name = rng.pick(&names).clone();
            let n = df.height();
            let c = df.column(&name).unwrap().clone();
            let what = rng.below(10);
            let new: Option<Column> = match (what, c.dtype()) {
                (0, _) => {
                    let _ = df.drop_in_place(&name);
                    None
                }
                (1, _) => Some(Column::full_null(name.as_str().into(), n, c.dtype())),
                (2, DataType::Int64 | DataType::Int32) => {
                    let v = c.cast(&DataType::Int64).unwrap();
                    let v = v.i64().unwrap();
                    let k = *rng.pick(&[-1i64, 1_000_000_000_000, i64::MAX, i64::MIN, 0]);
                    Some(Column::new(
                        name.as_str().into(),
                        (0..n)
                            .map(|i| v.get(i).map(|x| x.saturating_mul(k)))
                            .collect::<Vec<_>>(),
                    ))
                }
                (3, DataType::Float64) => {
                    let k = *rng.pick(&[f64::NAN, f64::INFINITY, -1e300, 1e300, -1.0]);
                    Some(Column::new(name.as_str().into(), vec![Some(k); n]))
                }
                (4, _) => Some(c.cast(&DataType::Float64).unwrap_or(c.clone())),
                (5, _) => Some(c.cast(&DataType::String).unwrap_or(c.clone())),
                (6, _) => {
                    let v = *rng.pick(&["", "{not json", "[1]", "{\"a\":1}", "run-x"]);
                    Some(Column::new(name.as_str().into(), vec![v; n]))
                }
                (7, _) => {
                    let half = df.slice(0, n / 2);
                    df = half;
                    None
                }
                (8, _) => {
                    let copy = df.clone();
                    let _ = df.vstack_mut(&copy);
                    None
                }
                _ => Some(Column::new(
                    name.as_str().into(),
                    vec![*rng.pick(&[2i32, 0, -1, 99]); n],
                )),
            };
            if let Some(c) = new {
                if df.with_column(c).is_err() {
                    return "no change".into();
                }
            }
            let f = std::fs::File::create(path).unwrap();
            ParquetWriter::new(f).finish(&mut df).unwrap();
            format!("column {name}: mutation {what}")
        }
    }
}

/// trend (every metric kind) and gate --history's baseline over a mutated dataset:
/// `Err(text)` for a panic, a badly formed error, an error naming no file of the dataset,
/// a negative or non-finite median, or a history baseline a baseline file would refuse;
/// `Ok(true)` when the wall-time trend was drawn.
fn exercise_dataset(ds: &Path) -> Result<bool, String> {
    use stepgate::baseline::Policy;
    use stepgate::dataset::trend::{trend, Metric, TrendQuery};
    let named = |e: &stepgate::exit::Error| -> Result<(), String> {
        check_error(e)?;
        if !e.message.contains(ds.to_str().unwrap()) {
            return Err(format!("names no file of the dataset: {}", e.message));
        }
        Ok(())
    };
    let run = catch_unwind(AssertUnwindSafe(|| -> Result<bool, String> {
        let policy = Policy::default();
        let mut drawn = false;
        for metric in [
            Metric::WallNs,
            Metric::Mbu,
            Metric::Kernel(stepgate::synth::workload::decode_kernels(8)[6].name.clone()),
            Metric::Category("gemm".into()),
        ] {
            let wall = metric == Metric::WallNs;
            let q = TrendQuery {
                metric,
                filter: stepgate::dataset::Filter::default(),
                by: vec!["kind".into()],
                since_ns: None,
                last: None,
                window: 2,
            };
            match trend(ds, &q, &policy) {
                Ok(t) => {
                    drawn |= wall;
                    for w in &t.warnings {
                        if w.contains('\n') {
                            return Err(format!("warning not one line: {w:?}"));
                        }
                    }
                    for p in t.series.iter().flat_map(|s| &s.points) {
                        if !(p.median.is_finite() && p.median >= 0.0 && p.p10 >= 0.0) {
                            return Err(format!("median {} p10 {}", p.median, p.p10));
                        }
                    }
                    for f in [Format::Table, Format::Json, Format::Markdown, Format::Csv] {
                        let _ = stepgate::report::trend::render(
                            &t,
                            f,
                            stepgate::report::fit::Fit::columns(80),
                        );
                    }
                }
                Err(e) => named(&e)?,
            }
        }
        for mode in [
            stepgate::dataset::HistoryMode::Steps,
            stepgate::dataset::HistoryMode::Runs,
        ] {
            let q = stepgate::dataset::HistoryQuery {
                filter: stepgate::dataset::Filter::default(),
                last: 20,
                mode,
                min_runs: 1,
                gpu: None,
                model: None,
                candidate: None,
                classes: true,
                metrics: stepgate::baseline::metrics::Metrics::default(),
            };
            match stepgate::dataset::history_baseline(ds, &q) {
                Ok(h) => {
                    if let Err(e) = stepgate::baseline::file::validate(&h.baseline, "history") {
                        return Err(format!(
                            "history a baseline file would refuse: {}",
                            e.message
                        ));
                    }
                }
                Err(e) => named(&e)?,
            }
        }
        Ok(drawn)
    }));
    match run {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panic: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

#[test]
fn datasets_with_mutated_parquet_files_never_panic_and_name_the_file() {
    let d = tempfile::tempdir().unwrap();
    let (pristine, files) = dataset(d.path());
    let (scale, seed) = knobs();
    let mut rng = Rng(0x0da7_a5e7_f11e ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut failures = Vec::new();
    let mut read = 0;
    for case in 0..60 * scale {
        let ds = d.path().join(format!("case{case}"));
        crate::common::copy_dir(&pristine, &ds);
        let mut what = Vec::new();
        for _ in 0..1 + rng.below(2) {
            let f = rng.pick(&files);
            let other = rng.pick(&files);
            let rel = f.strip_prefix(&pristine).unwrap();
            let m = parquet_mutation(&mut rng, &ds.join(rel), other);
            what.push(format!("{}: {m}", rel.display()));
        }
        match exercise_dataset(&ds) {
            Ok(drawn) => read += usize::from(drawn),
            Err(e) => failures.push(format!("case {case} {what:?}: {e}")),
        }
        std::fs::remove_dir_all(&ds).unwrap();
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The pass must reach the trend, not only the readers' refusals.
    assert!(read > 15, "only {read} mutated datasets were drawn");
}
