//! Named AWS profiles on a local S3 server (moto behind the recording proxy): the keys,
//! region and endpoint come from shared `config`/`credentials` files in a temporary
//! directory, with no AWS_ACCESS_KEY_ID or endpoint in the environment; the environment
//! wins over the profile; a wrong profile name, or one that needs a role, is one line and
//! exit 2; the profile's secret never appears in what stepgate prints or writes.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{bin, jittered_decode_report};
use crate::object_store::moto;
use crate::object_store_proxy::{Proxy, KEY_IDS};

const SECRET: &str = "profile-secret-never-shown-0123";

/// stepgate with only the profile to configure S3: every AWS variable removed, HOME in
/// the temporary directory (no real ~/.aws), any proxied request sent to a closed port
/// (nothing but 127.0.0.1 can be reached), and `env` on top.
fn sg(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(bin());
    for (k, _) in std::env::vars() {
        if k.starts_with("AWS_") || k.starts_with("GOOGLE_") || k.starts_with("AZURE_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", dir)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_CONFIG_FILE", dir.join("aws-config"))
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.join("aws-credentials"))
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost");
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_named_profile_reaches_the_store_and_its_secret_is_never_shown() {
    let Some(m) = moto() else { return };
    let p = Proxy::start(m.port);
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // The endpoint comes from the profile's services section (it beats the profile's own
    // endpoint_url, a closed port); region from the config file; keys from credentials,
    // which wins over the config file's (wrong) key id.
    std::fs::write(
        dir.join("aws-config"),
        format!(
            "[default]\nregion = eu-north-1\n\n[profile sgtest]\nregion = us-east-1\n\
             aws_access_key_id = AKIDFROMCONFIG\nendpoint_url = http://127.0.0.1:9\n\
             services = local-s3\n\n[services local-s3]\ns3 =\n  endpoint_url = \
             http://127.0.0.1:{}\n\n[profile needs-role]\nrole_arn = \
             arn:aws:iam::123456789012:role/x\nsource_profile = sgtest\n",
            p.port
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("aws-credentials"),
        format!("[sgtest]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    let r = dir.join("r.sqlite");
    jittered_decode_report(&r, 8, 12, 7, "NVIDIA H100 80GB HBM3", &|_| 1.0);
    let r = r.to_str().unwrap();
    // The gated capture is another report: a run is never part of its own history.
    let c = dir.join("c.sqlite");
    jittered_decode_report(&c, 8, 12, 8, "NVIDIA H100 80GB HBM3", &|_| 1.0);
    let c = c.to_str().unwrap();
    let url = "s3://sg-test/profiled";
    let profile = [("AWS_PROFILE", "sgtest")];
    let o = sg(dir, &profile, &["export", r, "-o", url, "--label", "n=1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains(SECRET));
    assert!(
        KEY_IDS.lock().unwrap().iter().any(|k| k == "AKIDPROFILE"),
        "the requests were signed with the profile's key id"
    );
    assert!(!KEY_IDS
        .lock()
        .unwrap()
        .iter()
        .any(|k| k == "AKIDFROMCONFIG"));
    // A second run, and a gate against the two, its report written.
    let o = sg(dir, &profile, &["export", r, "-o", url, "--label", "n=2"]);
    assert!(o.status.success(), "{}", text(&o));
    let report = dir.join("gate.json");
    let o = sg(
        dir,
        &profile,
        &[
            "gate",
            c,
            "--history",
            url,
            "--min-runs",
            "1",
            "--json",
            report.to_str().unwrap(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    assert!(
        text(&o).contains("matching run(s) of s3://sg-test/profiled"),
        "{}",
        text(&o)
    );
    let written = std::fs::read_to_string(&report).unwrap();
    assert!(!written.contains(SECRET) && !text(&o).contains(SECRET));
    // The same through --storage-option aws_profile=.
    let o = sg(
        dir,
        &[],
        &["trend", url, "--storage-option", "aws_profile=sgtest"],
    );
    assert!(o.status.success(), "{}", text(&o));

    // The environment wins: an endpoint that answers nothing makes the read fail, naming
    // the store in one line, never the profile's secret (a 503-free closed port: no retry
    // storm, just refused connections).
    let o = sg(
        dir,
        &[
            ("AWS_PROFILE", "sgtest"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
        ],
        &["trend", url, "--io-timeout", "1"],
    );
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!e.contains(SECRET), "{e}");

    // A profile that is not there, or that needs a role: one line, exit 2, naming it.
    let o = sg(dir, &[("AWS_PROFILE", "nope")], &["trend", url]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("AWS profile \"nope\" is not in"), "{e}");
    assert!(
        e.contains(&dir.join("aws-credentials").display().to_string()),
        "{e}"
    );
    let o = sg(dir, &[("AWS_PROFILE", "needs-role")], &["trend", url]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.contains("with role_arn, which stepgate does not support"),
        "{e}"
    );
    // With explicit keys in the environment the role is not needed: the profile gives
    // only its region and endpoint.
    let o = sg(
        dir,
        &[
            ("AWS_PROFILE", "needs-role"),
            ("AWS_ACCESS_KEY_ID", "AKIDENV"),
            ("AWS_SECRET_ACCESS_KEY", "env-secret-never-shown"),
            ("AWS_ENDPOINT_URL", &format!("http://127.0.0.1:{}", p.port)),
            ("AWS_REGION", "us-east-1"),
        ],
        &["trend", url],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(KEY_IDS.lock().unwrap().iter().any(|k| k == "AKIDENV"));
}
