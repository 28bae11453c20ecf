//! Kineto text and dataset parquet mutations: the mutators and the Kineto run.

use super::*;

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
pub(super) fn dataset(dir: &Path) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
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
pub(super) fn parquet_mutation(rng: &mut Rng, path: &Path, other: &Path) -> String {
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
pub(super) fn exercise_dataset(ds: &Path) -> Result<bool, String> {
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
            Metric::Step("wall_ns"),
            Metric::Step("mbu"),
            Metric::Kernel(stepgate::synth::workload::decode_kernels(8)[6].name.clone()),
            Metric::Category("gemm".into()),
        ] {
            let wall = metric == Metric::Step("wall_ns");
            let q = TrendQuery {
                metric,
                filter: stepgate::dataset::Filter::default(),
                by: vec!["kind".into()],
                since_ns: None,
                last: None,
                window: 2,
                store: stepgate::store::StoreConfig::default(),
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
                store: stepgate::store::StoreConfig::default(),
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
