//! Reading and writing baseline files: atomic writes, and one clear line for every way a
//! file can be wrong (missing, truncated, foreign, newer, malformed).

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use crate::baseline::model::bounds;
use crate::exit::{Error, Result};
use crate::store::StoreConfig;
use crate::wire::baseline::{Baseline, FORMAT, SCHEMA_VERSION};

const RERECORD: &str = "re-record it with `stepgate baseline record REPORT -o FILE`";

/// Write `baseline` to `path` through [`crate::output`]: a `.stepgate-*.tmp` file in the
/// same directory, synced, then renamed over the target, so a crash never leaves a
/// half-written baseline and a device node or FIFO at the path is never replaced.
/// Missing parent directories are created; a baseline that [`validate`] refuses is not
/// written.
pub fn write_baseline(path: &Path, store: &StoreConfig, baseline: &Baseline) -> Result<()> {
    // What gate would refuse is never written (the builder keeps samples in bounds, so
    // this failing is a bug, said as such rather than left for the next gate to find).
    validate(baseline, &path.display().to_string())
        .map_err(|e| Error::input(format!("internal: refusing to write {e}")))?;
    let mut bytes = serde_json::to_vec(baseline)
        .map_err(|e| Error::input(format!("cannot write baseline {}: {e}", path.display())))?;
    bytes.push(b'\n');
    if let Some((store, name)) = remote(path, store)? {
        // One whole-object put: a reader sees the old baseline or the new one.
        return store.put(&name, bytes, false).map(|_| ());
    }
    crate::output::create_parent(path)?;
    crate::output::write_atomic(path, &bytes)
}

/// The store and object name of a baseline given as a URL (`s3://bucket/dir/base.json`),
/// through the same storage seam as the run history; `None` for a local path.
fn remote(path: &Path, config: &StoreConfig) -> Result<Option<(crate::store::Store, String)>> {
    if !crate::store::Location::is_remote(path) {
        return Ok(None);
    }
    let s = path.to_string_lossy();
    let (dir, name) = s.rsplit_once('/').unwrap_or((&s, ""));
    if name.is_empty() || dir.ends_with(':') || dir.ends_with(":/") {
        return Err(Error::usage(format!(
            "{s}: name the baseline object (s3://bucket/dir/base.json)"
        )));
    }
    let store = crate::store::Store::open(Path::new(dir), config)?;
    Ok(Some((store, name.to_owned())))
}

/// Read and check a baseline file.
pub fn read_baseline(path: &Path, store: &StoreConfig) -> Result<Baseline> {
    if let Some((store, name)) = remote(path, store)? {
        let bytes = store.get(&name)?.ok_or_else(|| {
            Error::input(format!(
                "baseline {} does not exist; record one with `stepgate baseline record REPORT -o {}`",
                path.display(),
                path.display()
            ))
        })?;
        return parse_baseline(&bytes, &path.display().to_string());
    }
    let bytes = std::fs::read(path).map_err(|e| {
        Error::input(format!(
            "cannot read baseline {}: {e}; record one with `stepgate baseline record REPORT -o FILE`",
            path.display()
        ))
    })?;
    parse_baseline(&bytes, &path.display().to_string())
}

/// The two fields that say whether a JSON document is a baseline this build can read.
#[derive(Deserialize)]
struct Header {
    format: Option<serde_json::Value>,
    schema_version: Option<serde_json::Value>,
}

/// Parse baseline bytes; `name` is how errors refer to the file.
pub(crate) fn parse_baseline(bytes: &[u8], name: &str) -> Result<Baseline> {
    // First pass reads only the header (serde skips the rest without building it), so a
    // foreign or newer file is named as such instead of as "missing field samples".
    let header: Header = match serde_json::from_slice(bytes) {
        Ok(h) => h,
        Err(e) if e.is_eof() => {
            return Err(Error::input(format!(
            "baseline {name} is truncated (ends at line {} column {}: half-written?); {RERECORD}",
            e.line(),
            e.column()
        )))
        }
        Err(e) if e.is_syntax() => {
            return Err(Error::input(format!(
                "baseline {name} is not valid JSON ({e}); {RERECORD}"
            )))
        }
        Err(_) => {
            return Err(Error::input(format!(
                "{name} is not a stepgate baseline (not a JSON object); pass a file written by \
                 `stepgate baseline record`"
            )))
        }
    };
    if header.format.as_ref().and_then(|v| v.as_str()) != Some(FORMAT) {
        return Err(Error::input(format!(
            "{name} is not a stepgate baseline (no \"format\": \"{FORMAT}\"); pass a file \
             written by `stepgate baseline record`"
        )));
    }
    match header.schema_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if v > u64::from(SCHEMA_VERSION) => {
            return Err(Error::input(format!(
                "baseline {name} has schema_version {v}, newer than this stepgate reads \
                 ({SCHEMA_VERSION}); upgrade stepgate or {RERECORD}"
            )))
        }
        Some(v) if v >= 1 => {}
        _ => {
            return Err(Error::input(format!(
                "baseline {name} has no valid schema_version; {RERECORD}"
            )))
        }
    }
    let b: Baseline = serde_json::from_slice(bytes)
        .map_err(|e| Error::input(format!("baseline {name} is malformed ({e}); {RERECORD}")))?;
    validate(&b, name)?;
    Ok(b)
}

/// Checks serde cannot express: every group holds step metrics, every kernel and
/// category has one sample per step, and every number lies in [`bounds`] (a hand-edited
/// or corrupted file with 1e308, a negative time or a mean context of −1e300 must not
/// decide a gate). The same check runs before a baseline is written, so `record` never
/// writes a file `gate` refuses.
pub fn validate(b: &Baseline, name: &str) -> Result<()> {
    for g in &b.samples.groups {
        let n = g.steps();
        let label = g.label();
        if g.metrics.is_empty() || n == 0 {
            return Err(Error::input(format!(
                "baseline {name} is malformed: group {label} has no step metrics (no samples \
                 to compare, so no gate can pass on it); {RERECORD}"
            )));
        }
        let bad = |what: &str, len: usize| {
            Error::input(format!(
                "baseline {name} is malformed: group {label} has {n} steps but {what} has {len} \
                 samples; {RERECORD}"
            ))
        };
        let check = |field: &str, v: &[f64], range: bounds::Range| -> Result<()> {
            match v.iter().position(|x| !range.holds(*x)) {
                Some(i) => Err(Error::input(format!(
                    "baseline {name} is malformed: group {label} {field} sample {i} is {} (must \
                     be {}); {RERECORD}",
                    bounds::show(v[i]),
                    range.what
                ))),
                None => Ok(()),
            }
        };
        if let Some(c) = g.mean_context {
            if !bounds::CONTEXT.holds(c) {
                return Err(Error::input(format!(
                    "baseline {name} is malformed: group {label} mean_context is {} (must be \
                     {}); {RERECORD}",
                    bounds::show(c),
                    bounds::CONTEXT.what
                )));
            }
        }
        for (m, v) in &g.metrics {
            check(
                &format!("metric {m}"),
                v,
                crate::baseline::metrics::of_metric(m),
            )?;
        }
        for (k, s) in &g.kernels {
            if s.exclusive_ns.len() != n || s.instances.len() != n {
                return Err(bad(&format!("kernel {k}"), s.exclusive_ns.len()));
            }
            check(
                &format!("kernel {k} exclusive_ns"),
                &s.exclusive_ns,
                bounds::TIME,
            )?;
            check(
                &format!("kernel {k} instances"),
                &s.instances,
                bounds::COUNT,
            )?;
        }
        for (c, s) in &g.categories {
            if s.len() != n {
                return Err(bad(&format!("category {c}"), s.len()));
            }
            check(&format!("category {c}"), s, bounds::TIME)?;
        }
    }
    Ok(())
}

/// Whether `path` looks like a baseline file (a `.json` whose first bytes carry the format
/// tag) rather than a profiler report. Reads at most 512 bytes.
pub fn is_baseline_file(path: &Path) -> bool {
    if path.extension().and_then(|e| e.to_str()) != Some("json") {
        return false;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(512);
    if f.take(512).read_to_end(&mut head).is_err() {
        return false;
    }
    let head = String::from_utf8_lossy(&head);
    head.contains(&format!("\"{FORMAT}\""))
}

/// One side of a comparison: a baseline file as is, anything else through `from_report`
/// (step finding, which only the commands know how to configure).
pub fn load_side(
    path: &Path,
    store: &StoreConfig,
    from_report: &dyn Fn(&Path) -> Result<Baseline>,
) -> Result<Baseline> {
    if is_baseline_file(path) {
        read_baseline(path, store)
    } else {
        from_report(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::baseline::{BaselineMeta, SampleSet};

    fn sample() -> Baseline {
        Baseline::new(
            BaselineMeta {
                source_format: "synthetic".into(),
                created_by: "test".into(),
                ..BaselineMeta::default()
            },
            SampleSet::default(),
        )
    }

    #[test]
    fn round_trip_and_sniff() {
        let _l = crate::output::TEST_WRITE_LOCK
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("b.json");
        write_baseline(&p, &StoreConfig::default(), &sample()).unwrap();
        assert!(is_baseline_file(&p));
        assert_eq!(
            read_baseline(&p, &StoreConfig::default()).unwrap(),
            sample()
        );
        // Only the target is left behind: no temp files.
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    /// A baseline with one decode group of three steps and one kernel, as JSON to edit.
    fn one_group() -> serde_json::Value {
        use crate::wire::baseline::{metric, Group, KernelSamples};
        let mut g = Group::new("decode", Some(32));
        g.mean_context = Some(2048.0);
        g.metrics
            .insert(metric::WALL_NS.into(), vec![1000.0, 1100.0, 1050.0]);
        g.metrics
            .insert(metric::GAP_FRACTION.into(), vec![0.1, 0.2, 0.15]);
        g.kernels.insert(
            "gemm".into(),
            KernelSamples {
                short_name: "gemm".into(),
                category: "gemm".into(),
                exclusive_ns: vec![500.0, 510.0, 505.0],
                instances: vec![1.0, 1.0, 1.0],
            },
        );
        let mut b = sample();
        b.samples.groups.push(g);
        serde_json::to_value(&b).unwrap()
    }

    fn parse_value(v: &serde_json::Value) -> Result<Baseline> {
        parse_baseline(&serde_json::to_vec(v).unwrap(), "b.json")
    }

    #[test]
    fn absurd_samples_and_empty_groups_are_refused_naming_the_field() {
        let ok = one_group();
        assert!(parse_value(&ok).is_ok());
        let g = "/samples/groups/0";
        let cases: [(&str, serde_json::Value, &str); 7] = [
            (
                "/metrics/wall_ns/1",
                1e308.into(),
                "metric wall_ns sample 1 is 1e308",
            ),
            (
                "/metrics/wall_ns/2",
                (-5.0).into(),
                "metric wall_ns sample 2 is -5",
            ),
            (
                "/metrics/gap_fraction/0",
                1.5.into(),
                "metric gap_fraction sample 0 is 1.5",
            ),
            ("/mean_context", (-1e300).into(), "mean_context is -1e300"),
            (
                "/kernels/gemm/exclusive_ns/0",
                (-1.0).into(),
                "kernel gemm exclusive_ns sample 0 is -1",
            ),
            (
                "/kernels/gemm/instances/2",
                1e300.into(),
                "kernel gemm instances sample 2 is 1e300",
            ),
            ("/metrics", serde_json::json!({}), "has no step metrics"),
        ];
        for (ptr, v, want) in cases {
            let mut b = ok.clone();
            *b.pointer_mut(&format!("{g}{ptr}")).unwrap() = v;
            let e = parse_value(&b).unwrap_err();
            assert_eq!(e.exit_code(), crate::exit::INPUT);
            assert!(e.message.contains(want), "{ptr}: {}", e.message);
            assert!(e.message.contains("group decode bs=32"), "{}", e.message);
        }
    }

    #[test]
    fn each_kind_of_bad_file_says_what_it_is() {
        let full = serde_json::to_vec(&sample()).unwrap();
        let e = parse_baseline(&full[..full.len() / 2], "x").unwrap_err();
        assert!(e.message.contains("truncated"), "{}", e.message);
        let e = parse_baseline(br#"{"traceEvents": []}"#, "x").unwrap_err();
        assert!(
            e.message.contains("not a stepgate baseline"),
            "{}",
            e.message
        );
        let e = parse_baseline(b"[1,2]", "x").unwrap_err();
        assert!(
            e.message.contains("not a stepgate baseline"),
            "{}",
            e.message
        );
        let e = parse_baseline(b"{nope", "x").unwrap_err();
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
        let newer = String::from_utf8(full.clone())
            .unwrap()
            .replace("\"schema_version\":1", "\"schema_version\":99");
        let e = parse_baseline(newer.as_bytes(), "x").unwrap_err();
        assert!(e.message.contains("newer"), "{}", e.message);
        let e = parse_baseline(br#"{"format":"stepgate-baseline","schema_version":1}"#, "x")
            .unwrap_err();
        assert!(e.message.contains("malformed"), "{}", e.message);
    }
}
