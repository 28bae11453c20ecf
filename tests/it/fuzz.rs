//! A seeded mutation pass over the bundled reports and over Parquet datasets: damaged
//! SQLite rows and damaged Kineto JSON go through loading, analysis, step finding and
//! rendering; damaged `runs`, `steps` and `step_kernels` files go through `trend` and
//! `gate --history`'s baseline. Nothing may panic, and every failure must be an `Error`
//! with a one-line message and an input/environment exit (for a dataset, naming a file).

mod mutations;
use mutations::{dataset, exercise_dataset, parquet_mutation};

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use rusqlite::Connection;
use stepgate::attribution::attribute_all;
use stepgate::categories::Categorizer;
use stepgate::report::Format;
use stepgate::source;
use stepgate::timing::steps::{find, Found, Stages, StepOptions, StepSource};
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
            match find(&t, &opts, &cats) {
                Ok(f) => {
                    let a = attribute_all(
                        &f.steps,
                        &|_| None,
                        &LaunchCost::default(),
                        stepgate::attribution::NSIGHT_COMPUTE,
                    );
                    let steps = stepgate::pipeline::steps::attach(f.steps, a.steps)
                        .map_err(|e| format!("join: {}", e.message))?;
                    let r = Found { steps, ..f }.into_report(Stages {
                        launch_cost: Some(a.launch_cost),
                        shapes: a.shapes,
                        groups: a.groups,
                        ..Stages::default()
                    });
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
