//! A gzipped trace whose member trailer (CRC32 or ISIZE, RFC 1952 §2.3.1) does not match
//! its data is refused (exit 2, "corrupt gzip", the member's byte offset) on every read
//! path: inflated on the parsing thread (1), on a thread of its own (2), and into the
//! tape that byte ranges read from (4, 8); one member or several. The damaged files are
//! made here from a real fixture by changing trailer bytes.

use std::io::Write;
use std::path::Path;

use crate::common;

const FIXTURE: &str = "kineto/hta_a100_ddp_rank0_of2_profilerstep.json.gz";
/// Bytes per range of a split read (the test hook), so the fixture is read in many.
const MIN_RANGE_VAR: &str = "STEPGATE_TEST_MIN_RANGE_BYTES";

fn member(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn analyze(file: &Path, threads: usize) -> (i32, String, String) {
    let out = std::process::Command::new(common::bin())
        .args([
            "analyze",
            "--format",
            "json",
            "--threads",
            &threads.to_string(),
        ])
        .arg(file)
        .env(MIN_RANGE_VAR, "65536")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `analyze` JSON without the report's path.
fn unnamed(json: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["source"]["path"] = serde_json::Value::Null;
    v
}

/// The fixture's members: one (as the profiler wrote it, re-compressed) or the plain
/// bytes cut in three, each its own member (as `cat a.gz b.gz` makes). Returns the file
/// and where each member starts.
fn members(plain: &[u8], parts: usize) -> (Vec<u8>, Vec<usize>) {
    let mut file = Vec::new();
    let mut starts = Vec::new();
    let step = plain.len().div_ceil(parts);
    for piece in plain.chunks(step) {
        starts.push(file.len());
        file.extend(member(piece));
    }
    (file, starts)
}

#[test]
fn a_wrong_crc_or_length_in_any_member_is_refused_at_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let plain = common::gunzip(&common::fixture(FIXTURE));
    let whole = dir.path().join("whole.json.gz");
    std::fs::write(&whole, member(&plain)).unwrap();
    let reference = analyze(&whole, 1);
    assert_eq!(reference.0, 0, "{}", reference.2);
    for parts in [1, 3] {
        let (good, starts) = members(&plain, parts);
        assert_eq!(starts.len(), parts);
        let path = dir.path().join(format!("good{parts}.json.gz"));
        std::fs::write(&path, &good).unwrap();
        // Several members read as the one: the same output (but the file's name).
        let (code, out, err) = analyze(&path, 1);
        assert_eq!(code, 0, "{err}");
        assert!(unnamed(&out) == unnamed(&reference.1), "{parts} member(s)");
        for (victim, &start) in starts.iter().enumerate() {
            let end = starts.get(victim + 1).copied().unwrap_or(good.len());
            // Trailer: CRC32 at end-8..end-4, ISIZE at end-4..end (little-endian).
            for (field, at, word) in [("CRC32", end - 8, "CRC32"), ("ISIZE", end - 4, "length")] {
                let mut bad = good.clone();
                bad[at] ^= 0x01;
                let f = dir
                    .path()
                    .join(format!("bad{parts}-{victim}-{field}.json.gz"));
                std::fs::write(&f, &bad).unwrap();
                for threads in [1, 2, 4, 8] {
                    let (code, out, err) = analyze(&f, threads);
                    let what = format!(
                        "{parts} member(s), member {victim}'s {field}, {threads} thread(s)"
                    );
                    assert_eq!(code, 2, "{what}: {err}");
                    assert!(out.is_empty(), "{what}");
                    assert_eq!(err.lines().count(), 1, "{what}: {err}");
                    assert!(
                        err.contains(&format!(
                            "corrupt gzip: the member at byte {start}: its {word}"
                        )),
                        "{what}: {err}"
                    );
                }
            }
        }
    }
}
