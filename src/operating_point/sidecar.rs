//! The capture sidecar: what `stepgate capture` knew about the run it recorded (engine,
//! parallelism, the load it drove) written beside the report it produced, so `steps` and
//! `gate` read the operating point the trace itself does not state (docs/capture.md).
//!
//! The file is `BASE.capture.json` next to `BASE.sqlite` / `BASE.nsys-rep` /
//! `BASE.json[.gz]`, or `capture.json` inside a directory of per-rank traces. A versioned
//! JSON object: `schema` is always [`SCHEMA`], `schema_version` [`SCHEMA_VERSION`]; a
//! reader refuses a newer version rather than misread it, and ignores fields it does not
//! know within its own version.

use std::path::{Path, PathBuf};

use crate::exit::{Error, Result};
use crate::limits::{MAX_BATCH, MAX_CONTEXT, MAX_PARALLEL};
use crate::wire::capture::CaptureSidecar;

/// The `schema` value of every sidecar.
pub(crate) const SCHEMA: &str = "stepgate.capture";
/// The most bytes of a sidecar read (it holds a few hundred).
pub(crate) const MAX_BYTES: u64 = 1 << 20;

/// The version this build writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

impl CaptureSidecar {
    /// An empty sidecar of the current version.
    pub fn new() -> Self {
        CaptureSidecar {
            schema: SCHEMA.to_owned(),
            schema_version: SCHEMA_VERSION,
            engine: None,
            model: None,
            tp: None,
            pp: None,
            drive: None,
        }
    }

    /// Refuse numbers no run can have, naming the field.
    fn check(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, v: u64, max: u64| {
            Error::input(format!(
                "{}: `{field}` is {v}, outside 1..={max}: fix or remove the capture sidecar",
                path.display()
            ))
        };
        for (f, v) in [("tp", self.tp), ("pp", self.pp)] {
            if let Some(v) = v.map(u64::from).filter(|&v| v == 0 || v > MAX_PARALLEL) {
                return Err(bad(f, v, MAX_PARALLEL));
            }
        }
        if let Some(d) = &self.drive {
            if d.concurrency == 0 || d.concurrency > MAX_BATCH {
                return Err(bad("drive.concurrency", d.concurrency, MAX_BATCH));
            }
            for (f, v) in [
                ("drive.prompt_tokens", d.prompt_tokens),
                ("drive.output_tokens", d.output_tokens),
            ] {
                if let Some(v) = v.filter(|&v| v > MAX_CONTEXT) {
                    return Err(bad(f, v, MAX_CONTEXT));
                }
            }
        }
        Ok(())
    }
}

impl Default for CaptureSidecar {
    fn default() -> Self {
        CaptureSidecar::new()
    }
}

/// The sidecar path for a report: `BASE.capture.json` beside `BASE.<ext>`, or
/// `capture.json` inside a directory of traces.
pub(crate) fn path_for(report: &Path) -> PathBuf {
    if report.is_dir() {
        return report.join("capture.json");
    }
    let name = report
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = [
        ".pt.trace.json.gz",
        ".pt.trace.json",
        ".json.gz",
        ".json",
        ".nsys-rep",
        ".qdrep",
        ".sqlite",
    ]
    .iter()
    .find_map(|ext| name.strip_suffix(ext))
    .unwrap_or(&name);
    report.with_file_name(format!("{base}.capture.json"))
}

/// Read the sidecar beside `report`: None when there is none; an input error when it
/// exists but is not a sidecar this build can read.
pub(crate) fn read_beside(report: &Path) -> Result<Option<(PathBuf, CaptureSidecar)>> {
    let path = path_for(report);
    let cannot = |e: std::io::Error| {
        Error::input(format!(
            "cannot read the capture sidecar {}: {e}",
            path.display()
        ))
    };
    // The file type and size before opening: a FIFO would block the open forever, and a
    // link to /dev/zero would be read until memory runs out.
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
    };
    if !meta.is_file() {
        return Err(Error::input(format!(
            "the capture sidecar {} is not a regular file (a pipe, a device or a directory): \
             remove it or replace it with the file `capture` wrote",
            path.display()
        )));
    }
    if meta.len() > MAX_BYTES {
        return Err(Error::input(format!(
            "the capture sidecar {} is {} bytes; a sidecar is a few hundred bytes and at most \
             {MAX_BYTES} are read: remove it or replace it with the file `capture` wrote",
            path.display(),
            meta.len()
        )));
    }
    let mut text = String::new();
    {
        use std::io::Read;
        // Bounded again while reading: the file may grow after the check.
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_BYTES + 1).read_to_string(&mut text))
            .map_err(cannot)?;
    }
    if text.len() as u64 > MAX_BYTES {
        return Err(Error::input(format!(
            "the capture sidecar {} grew past {MAX_BYTES} bytes while it was read",
            path.display()
        )));
    }
    let fail = |why: String| {
        Error::input(format!(
            "{} is not a stepgate capture sidecar ({why}): fix or remove it",
            path.display()
        ))
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| fail(e.to_string()))?;
    if v.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
        return Err(fail(format!("`schema` is not \"{SCHEMA}\"")));
    }
    match v.get("schema_version").and_then(serde_json::Value::as_u64) {
        Some(n) if n > u64::from(SCHEMA_VERSION) => {
            return Err(Error::input(format!(
                "{} is capture sidecar version {n}; this stepgate reads up to {SCHEMA_VERSION}: upgrade stepgate",
                path.display()
            )))
        }
        Some(_) => {}
        None => return Err(fail("no `schema_version`".to_owned())),
    }
    let s: CaptureSidecar = serde_json::from_value(v).map_err(|e| fail(e.to_string()))?;
    s.check(&path)?;
    Ok(Some((path, s)))
}

/// Write `sidecar` beside `report` (all or nothing, through [`crate::output`]); returns
/// the path written.
pub fn write_beside(report: &Path, sidecar: &CaptureSidecar) -> Result<PathBuf> {
    let path = path_for(report);
    sidecar.check(&path)?;
    let text = crate::text::to_json(sidecar);
    crate::output::write_atomic(&path, text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::capture::Drive;

    #[test]
    fn paths_strip_every_report_extension() {
        for (r, s) in [
            ("/d/run.sqlite", "/d/run.capture.json"),
            ("/d/run.nsys-rep", "/d/run.capture.json"),
            ("/d/rank0.pt.trace.json.gz", "/d/rank0.capture.json"),
            ("/d/trace.json", "/d/trace.capture.json"),
            ("/d/odd", "/d/odd.capture.json"),
        ] {
            assert_eq!(path_for(Path::new(r)), PathBuf::from(s), "{r}");
        }
    }

    #[test]
    fn round_trips_and_refuses_what_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("run.sqlite");
        assert!(read_beside(&report).unwrap().is_none());
        let s = CaptureSidecar {
            engine: Some("vllm".to_owned()),
            tp: Some(4),
            drive: Some(Drive {
                concurrency: 32,
                prompt_tokens: Some(1000),
                output_tokens: Some(20),
            }),
            ..CaptureSidecar::new()
        };
        let p = write_beside(&report, &s).unwrap();
        assert_eq!(p, dir.path().join("run.capture.json"));
        let (q, back) = read_beside(&report).unwrap().unwrap();
        assert_eq!((q, back), (p.clone(), s));
        // A newer version, another schema, a zero concurrency: refused with the file named.
        for (text, says) in [
            (
                r#"{"schema":"stepgate.capture","schema_version":2}"#,
                "version 2",
            ),
            (r#"{"schema":"other","schema_version":1}"#, "`schema`"),
            (
                r#"{"schema":"stepgate.capture","schema_version":1,"drive":{"concurrency":0}}"#,
                "drive.concurrency",
            ),
            ("not json", "not a stepgate capture sidecar"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_beside(&report).unwrap_err();
            assert!(e.message.contains(says), "{text}: {}", e.message);
            assert!(e.message.contains("run.capture.json"), "{}", e.message);
        }
    }
}
