//! `gate --history --where label.K=V` skips the `runs` objects whose names cannot carry the
//! label (the label digests in `run-<id>.l<digests>.parquet`), on a local directory and on
//! a local S3 server (moto), counted with `STEPGATE_DEBUG_READS`; a name without digests
//! (what stepgate wrote before them) is still read, and the duplicate check, `--replace`,
//! decisions and `vacuum` find a run under either name. Run ids and digests are computed
//! here from docs/dataset.md's definitions, not taken from stepgate's output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

use crate::common::{bin, jittered_decode_report};
use crate::object_store::{http, moto};

const H100: &str = "NVIDIA H100 80GB HBM3";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The run id of a report exported with one label: the first 16 hex digits of
/// sha256(hex sha256 of the report's bytes, NUL, `key=value`).
fn run_id(report: &Path, k: &str, v: &str) -> String {
    let sha = hex(&Sha256::digest(std::fs::read(report).unwrap()));
    let mut h = Sha256::new();
    h.update(sha.as_bytes());
    h.update([0u8]);
    h.update(format!("{k}={v}").as_bytes());
    hex(&h.finalize())[..16].to_owned()
}

/// A label's digest in a `runs` name: 8 hex digits of sha256(`key=value`).
fn digest(k: &str, v: &str) -> String {
    hex(&Sha256::digest(format!("{k}={v}").as_bytes()))[..8].to_owned()
}

/// The partition every run of these reports lands in.
const PART: &str = "runs/gpu=nvidia-h100-80gb-hbm3/model=unknown";

enum Target {
    Local(PathBuf),
    S3 { port: u16, prefix: String },
}

impl Target {
    fn ds(&self) -> String {
        match self {
            Target::Local(p) => p.display().to_string(),
            Target::S3 { prefix, .. } => format!("s3://sg-test/{prefix}"),
        }
    }

    /// stepgate with nothing from the environment that could reach a store, the test
    /// store's keys and endpoint for S3, and the read counter on.
    fn sg(&self, args: &[&str]) -> Output {
        let mut c = Command::new(bin());
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") || k.starts_with("GOOGLE_") || k.starts_with("AZURE_") {
                c.env_remove(k);
            }
        }
        if let Target::S3 { port, .. } = self {
            c.env("AWS_ACCESS_KEY_ID", "test")
                .env("AWS_SECRET_ACCESS_KEY", "test-secret-never-shown")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"))
                .env("AWS_ALLOW_HTTP", "true")
                .env("AWS_EC2_METADATA_DISABLED", "true");
        }
        c.args(args)
            .env("STEPGATE_DEBUG_READS", "1")
            .output()
            .unwrap()
    }

    /// The names of the `runs` objects of the one partition, sorted (listed by a second
    /// reader: the file system, or the S3 API itself).
    fn runs_names(&self) -> Vec<String> {
        let mut out: Vec<String> = match self {
            Target::Local(p) => std::fs::read_dir(p.join(PART))
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Target::S3 { port, prefix } => {
                let list = http(
                    *port,
                    &format!(
                        "GET /sg-test?list-type=2&prefix={prefix}/{PART}/ HTTP/1.1\r\nHost: \
                         127.0.0.1\r\n\r\n"
                    ),
                );
                list.split("<Key>")
                    .skip(1)
                    .map(|k| {
                        let k = k.split("</Key>").next().unwrap();
                        k.rsplit('/').next().unwrap().to_owned()
                    })
                    .collect()
            }
        };
        out.sort();
        out
    }

    /// Rename one `runs` object of the partition (to the name stepgate gave it before).
    fn rename(&self, from: &str, to: &str) {
        match self {
            Target::Local(p) => {
                std::fs::rename(p.join(PART).join(from), p.join(PART).join(to)).unwrap();
            }
            Target::S3 { port, prefix } => {
                // moto refuses an unsigned copy: boto3 from moto's own virtualenv signs it.
                let py = crate::object_store::moto_binary()
                    .unwrap()
                    .with_file_name("python");
                let key = |n: &str| format!("{prefix}/{PART}/{n}");
                let script = format!(
                    "import boto3\ns3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{port}', \
                     region_name='us-east-1', aws_access_key_id='test', \
                     aws_secret_access_key='test')\n\
                     s3.copy_object(Bucket='sg-test', Key='{to}', CopySource={{'Bucket': 'sg-test', \
                     'Key': '{from}'}})\ns3.delete_object(Bucket='sg-test', Key='{from}')\n",
                    to = key(to),
                    from = key(from)
                );
                let o = Command::new(py)
                    .args(["-c", &script])
                    .env("AWS_EC2_METADATA_DISABLED", "true")
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", err(&o));
            }
        }
    }
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// How many objects of `table` the store of `ds` read, from the debug lines on stderr.
fn reads(o: &Output, ds: &str, table: &str) -> u64 {
    let head = format!("stepgate: debug: objects read from {ds}: ");
    err(o)
        .lines()
        .filter_map(|l| l.strip_prefix(&head))
        .flat_map(|rest| rest.split(' '))
        .filter_map(|kv| kv.split_once('='))
        .filter(|(t, _)| *t == table)
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum()
}

/// The history note's run ids, from the gate's JSON report.
fn history_runs(o: &Output) -> Vec<String> {
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", err(o)));
    let s = v.to_string();
    let at = s
        .find("matching run(s) of")
        .unwrap_or_else(|| panic!("{s}"));
    let tail = &s[at..];
    let tail = &tail[tail.find(": ").unwrap() + 2..];
    let mut ids: Vec<String> = tail
        .split([',', ' ', ';', '"'])
        .take_while(|t| t.is_empty() || t.len() == 16)
        .filter(|t| t.len() == 16 && t.chars().all(|c| c.is_ascii_hexdigit()))
        .map(str::to_owned)
        .collect();
    ids.sort();
    ids
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn scenario(t: &Target, dir: &Path) {
    let ds = t.ds();
    let rep = |name: &str, seed: u64| {
        let p = dir.join(format!("{name}.sqlite"));
        jittered_decode_report(&p, 8, 12, seed, H100, &|_| 1.0);
        p
    };
    let main: Vec<PathBuf> = (1..=3).map(|s| rep(&format!("main{s}"), s)).collect();
    let feat: Vec<PathBuf> = (4..=5).map(|s| rep(&format!("feat{s}"), s)).collect();
    let cand = rep("cand", 9);
    let cand2 = rep("cand2", 10);
    let export = |r: &Path, branch: &str, extra: &[&str]| {
        let label = format!("branch={branch}");
        let mut a = vec!["export", r.to_str().unwrap(), "-o", &ds, "--label", &label];
        a.extend_from_slice(extra);
        t.sg(&a)
    };
    for r in &main {
        let o = export(r, "main", &[]);
        assert!(o.status.success(), "{}", err(&o));
    }
    for r in &feat {
        let o = export(r, "feature", &[]);
        assert!(o.status.success(), "{}", err(&o));
    }
    let ids = |rs: &[PathBuf], branch: &str| -> Vec<String> {
        sorted(rs.iter().map(|r| run_id(r, "branch", branch)).collect())
    };
    let (main_ids, feat_ids) = (ids(&main, "main"), ids(&feat, "feature"));
    // Each name carries its label's digest.
    let name = |id: &str, branch: &str| format!("run-{id}.l{}.parquet", digest("branch", branch));
    let mut want: Vec<String> = main_ids.iter().map(|i| name(i, "main")).collect();
    want.extend(feat_ids.iter().map(|i| name(i, "feature")));
    assert_eq!(t.runs_names(), sorted(want));

    let gate = |cand: &Path, branch: &str, extra: &[&str]| {
        let w = format!("label.branch={branch}");
        let mut a = vec![
            "gate",
            cand.to_str().unwrap(),
            "--history",
            &ds,
            "--where",
            &w,
            "--min-runs",
            "1",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        t.sg(&a)
    };
    // Only the feature branch's two runs objects are read, and their data.
    let o = gate(&cand, "feature", &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", err(&o));
    assert_eq!(history_runs(&o), feat_ids);
    assert_eq!(reads(&o, &ds, "runs"), 2, "{}", err(&o));
    assert_eq!(reads(&o, &ds, "steps"), 2, "{}", err(&o));
    let o = gate(&cand, "main", &[]);
    assert_eq!(history_runs(&o), main_ids);
    assert_eq!(reads(&o, &ds, "runs"), 3, "{}", err(&o));
    // No run matches: the listing alone says so.
    let o = gate(&cand, "release", &[]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert_eq!(reads(&o, &ds, "runs"), 0, "{}", err(&o));
    // Another --where form prunes nothing new: every runs object is read.
    let o = t.sg(&[
        "gate",
        cand.to_str().unwrap(),
        "--history",
        &ds,
        "--where",
        "engine=nothing-runs-this",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert_eq!(reads(&o, &ds, "runs"), 5, "{}", err(&o));

    // A run committed under the name without digests (an older stepgate) is read by
    // every label clause, and found by the duplicate check.
    let f0 = run_id(&feat[0], "branch", "feature");
    t.rename(&name(&f0, "feature"), &format!("run-{f0}.parquet"));
    let o = gate(&cand, "feature", &[]);
    assert_eq!(history_runs(&o), feat_ids);
    assert_eq!(reads(&o, &ds, "runs"), 2, "{}", err(&o));
    let o = gate(&cand, "main", &[]);
    assert_eq!(history_runs(&o), main_ids, "the real filter still applies");
    assert_eq!(reads(&o, &ds, "runs"), 4, "{}", err(&o));
    let o = export(&feat[0], "feature", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("is already in"), "{}", err(&o));
    // --replace finds it under the old name and leaves it under the new one only.
    let o = export(&feat[0], "feature", &["--replace"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("replaced run"));
    let names = t.runs_names();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.contains(&name(&f0, "feature")), "{names:?}");

    // A rejected feature run is left out of the next feature gate.
    let cmp = dir.join("cmp.json").display().to_string();
    let o = gate(
        &cand2,
        "feature",
        &["--export", &ds, "--label", "branch=feature", "--json", &cmp],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", err(&o));
    let o = t.sg(&["reject", &cmp, "--history", &ds, "--reason", "a bad run"]);
    assert!(o.status.success(), "{}", err(&o));
    let o = gate(&cand, "feature", &[]);
    assert_eq!(history_runs(&o), feat_ids);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 rejected run(s) left out"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(reads(&o, &ds, "runs"), 3, "{}", err(&o));

    // vacuum counts every committed run, whatever its name, and names all their files.
    let o = t.sg(&["dataset", "vacuum", &ds, "--older-than", "1m"]);
    assert!(o.status.success(), "{}", err(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("removed 0 object(s)")
            && out.contains("kept 6 committed run(s) and 0 unnamed object(s)"),
        "{out}"
    );
    // trend prunes the same way and finds the same runs.
    let o = t.sg(&[
        "trend",
        &ds,
        "--where",
        "label.branch=feature",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(reads(&o, &ds, "runs"), 3, "{}", err(&o));
}

#[test]
fn a_label_clause_reads_only_the_runs_objects_that_can_match_on_a_local_directory() {
    let d = tempfile::tempdir().unwrap();
    scenario(&Target::Local(d.path().join("history")), d.path());
}

#[test]
fn a_label_clause_reads_only_the_runs_objects_that_can_match_on_s3() {
    let Some(m) = moto() else { return };
    let d = tempfile::tempdir().unwrap();
    scenario(
        &Target::S3 {
            port: m.port,
            prefix: "pruned".into(),
        },
        d.path(),
    );
}

#[test]
fn a_runs_name_whose_digests_are_not_its_labels_is_left_out_with_a_warning() {
    let d = tempfile::tempdir().unwrap();
    let t = Target::Local(d.path().join("history"));
    let ds = t.ds();
    let r = d.path().join("r.sqlite");
    jittered_decode_report(&r, 8, 12, 1, H100, &|_| 1.0);
    let o = t.sg(&[
        "export",
        r.to_str().unwrap(),
        "-o",
        &ds,
        "--label",
        "branch=main",
    ]);
    assert!(o.status.success(), "{}", err(&o));
    // Renamed by hand to the digest of another branch: a feature query would read it and
    // a main query skip it, so every query leaves it out, saying why.
    let id = run_id(&r, "branch", "main");
    t.rename(
        &format!("run-{id}.l{}.parquet", digest("branch", "main")),
        &format!("run-{id}.l{}.parquet", digest("branch", "feature")),
    );
    let o = t.sg(&["trend", &ds, "--format", "json"]);
    let e = err(&o);
    assert!(
        e.contains("the label digests in its name are not those of its labels"),
        "{e}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains(&format!("\"run_id\": \"{id}\"")),
        "left out: {out}"
    );
}
