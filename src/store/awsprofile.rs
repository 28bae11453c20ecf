//! Named AWS profiles for `s3://` datasets, which object_store does not read: with
//! `AWS_PROFILE=NAME` (or `--storage-option aws_profile=NAME`), the profile's static keys,
//! region and endpoint from the shared `config` and `credentials` files, under the
//! environment and `--storage-option` (which win). A profile that gets its credentials
//! another way (a role, SSO, a process) is refused in one line naming the key, never
//! silently replaced by other credentials. Every value read from a credential key is a
//! secret to [`crate::store::config::scrub`].
//!
//! File format (AWS SDKs and Tools reference guide, "Shared config and credentials
//! files"): INI sections, `[default]` or `[profile NAME]` in `config`, `[NAME]` in
//! `credentials`; a setting in both files is taken from `credentials`; a setting with an
//! empty value opens a sub-section of indented `key = value` lines; `services = NAME`
//! points at a `[services NAME]` section whose `s3` sub-section's `endpoint_url` overrides
//! the profile's own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::exit::{Error, Result};

/// Keys that make a profile get its credentials in a way stepgate does not implement.
const UNSUPPORTED: &[&str] = &[
    "credential_process",
    "role_arn",
    "source_profile",
    "credential_source",
    "web_identity_token_file",
    "sso_session",
    "sso_start_url",
    "sso_account_id",
    "sso_role_name",
    "login_session",
];

/// Profile keys and the object_store S3 configuration key each one sets.
const KEYS: &[(&str, &str)] = &[
    ("aws_access_key_id", "aws_access_key_id"),
    ("aws_secret_access_key", "aws_secret_access_key"),
    ("aws_session_token", "aws_session_token"),
    ("region", "aws_region"),
    ("endpoint_url", "aws_endpoint"),
];

/// The credential keys: their values are secrets (the key id too, as the environment's
/// AWS_ACCESS_KEY_ID is).
const SECRET: &[&str] = &[
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
];

/// Sections of one INI file: section name → settings (`key` or `parent.key` for a
/// sub-section's lines).
type Sections = BTreeMap<String, BTreeMap<String, String>>;

fn parse(text: &str) -> Sections {
    let mut out = Sections::new();
    let mut section: Option<String> = None;
    let mut parent: Option<String> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
            out.entry(name.clone()).or_default();
            section = Some(name);
            parent = None;
            continue;
        }
        let (Some(s), Some((k, v))) = (&section, line.split_once('=')) else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
        let indented = raw.starts_with([' ', '\t']);
        let key = match (&parent, indented) {
            (Some(p), true) => format!("{p}.{k}"),
            _ => {
                parent = v.is_empty().then(|| k.clone());
                k
            }
        };
        if let Some(sec) = out.get_mut(s) {
            sec.insert(key, v);
        }
    }
    out
}

/// A shared file's path: its variable when set and not empty, else `~/.aws/NAME`.
fn path(var: &str, name: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| Path::new(&h).join(".aws").join(name)),
    }
}

/// A missing file holds no profiles (AWS's tools read the other one alone).
fn read(p: Option<&PathBuf>) -> Result<Sections> {
    let Some(p) = p else {
        return Ok(Sections::new());
    };
    match std::fs::read_to_string(p) {
        Ok(t) => Ok(parse(&t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Sections::new()),
        Err(e) => Err(Error::usage(format!(
            "cannot read the AWS shared file {}: {e}",
            p.display()
        ))),
    }
}

/// The S3 settings of profile `name` (object_store keys and values), from the files
/// `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` name (default `~/.aws/config`,
/// `~/.aws/credentials`). `explicit_keys`: keys are given in the environment or as
/// options, so the profile's own credentials are not used (nor needed).
pub(crate) fn settings(name: &str, explicit_keys: bool) -> Result<Vec<(String, String)>> {
    let (cp, kp) = (
        path("AWS_CONFIG_FILE", "config"),
        path("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
    );
    let (config, creds) = (read(cp.as_ref())?, read(kp.as_ref())?);
    let in_config = if name == "default" {
        config
            .get("default")
            .or_else(|| config.get("profile default"))
    } else {
        config.get(&format!("profile {name}"))
    };
    let in_creds = creds.get(name);
    let shown = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or("(no HOME)".into(), |p| p.display().to_string())
    };
    if in_config.is_none() && in_creds.is_none() {
        return Err(Error::usage(format!(
            "AWS profile {name:?} is not in {} or {}: check AWS_PROFILE (or \
             --storage-option aws_profile=), AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE",
            shown(&cp),
            shown(&kp)
        )));
    }
    // The credentials file wins a setting both files hold.
    let mut p: BTreeMap<String, String> = in_config.cloned().unwrap_or_default();
    p.extend(in_creds.cloned().unwrap_or_default());
    if !explicit_keys {
        if let Some(k) = UNSUPPORTED.iter().find(|k| p.contains_key(**k)) {
            return Err(Error::usage(format!(
                "AWS profile {name:?} gets its credentials with {k}, which stepgate does not \
                 support: export them first (`aws configure export-credentials --profile \
                 {name} --format env`) or give the keys in AWS_ACCESS_KEY_ID and \
                 AWS_SECRET_ACCESS_KEY"
            )));
        }
    }
    // A service-specific endpoint beats the profile's own.
    if let Some(s3) = p
        .get("services")
        .and_then(|s| config.get(&format!("services {s}")))
        .and_then(|s| s.get("s3.endpoint_url"))
    {
        p.insert("endpoint_url".into(), s3.clone());
    }
    let mut out = Vec::new();
    for (from, to) in KEYS {
        let credential = from.starts_with("aws_");
        let Some(v) = p.get(*from).filter(|v| !v.is_empty()) else {
            continue;
        };
        if credential && explicit_keys {
            continue;
        }
        if SECRET.contains(from) {
            crate::store::secrets::remember([v.clone()]);
        }
        out.push(((*to).to_owned(), v.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_settings_and_sub_sections() {
        let s = parse(
            "# comment\n[default]\nregion = eu-west-1\n\n[profile  ci ]\n\
             aws_access_key_id=AKIA1\nservices = local\n; note\n\
             [services local]\ns3 =\n  endpoint_url = http://127.0.0.1:9000\n\
             \taddressing_style = path\nsts = \n  endpoint_url = http://x\n",
        );
        assert_eq!(s["default"]["region"], "eu-west-1");
        assert_eq!(s["profile ci"]["aws_access_key_id"], "AKIA1");
        assert_eq!(s["profile ci"]["services"], "local");
        let l = &s["services local"];
        assert_eq!(l["s3.endpoint_url"], "http://127.0.0.1:9000");
        assert_eq!(l["s3.addressing_style"], "path");
        assert_eq!(l["sts.endpoint_url"], "http://x");
        assert!(!l.contains_key("endpoint_url"));
    }
}
