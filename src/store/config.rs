//! How stepgate reaches remote stores: a command's configuration (`--storage-option`,
//! `--io-timeout`), carried in its plan to every store it opens; the scrubbing of secrets
//! from every message; and the builders for s3://, gs:// and az:// URLs.

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path as Key;
use object_store::{BackoffConfig, ObjectStore, RetryConfig};

use crate::exit::{Error, Result};

/// How a command reaches remote stores: built from its flags ([`StoreConfig::new`]) and
/// carried in its plan to every store it opens (`gate` opens a history, a baseline and an
/// export with one configuration).
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `--storage-option KEY=VALUE`, applied after the environment.
    pub options: Vec<(String, String)>,
    /// Per-request timeout (`--io-timeout`).
    pub io_timeout: Duration,
    /// Retries of a failed request (5xx, 429, timeouts, dropped connections).
    pub retries: usize,
}

/// The default per-request timeout.
pub(crate) const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            options: Vec::new(),
            io_timeout: DEFAULT_IO_TIMEOUT,
            retries: 4,
        }
    }
}

impl StoreConfig {
    /// The configuration of `--storage-option` items and `--io-timeout`. The options'
    /// secret values join the ones [`scrub`] replaces from then on.
    pub fn new(options: &[String], io_timeout: Duration) -> Result<Self> {
        let options = parse_options(options)?;
        crate::store::secrets::remember(
            options
                .iter()
                .filter(|(k, _)| secret_key(k))
                .map(|(_, v)| v.clone()),
        );
        Ok(StoreConfig {
            options,
            io_timeout,
            ..StoreConfig::default()
        })
    }
}

/// Parse `--storage-option KEY=VALUE` items.
pub fn parse_options(items: &[String]) -> Result<Vec<(String, String)>> {
    items
        .iter()
        .map(|it| match it.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => Err(Error::usage(format!(
                "--storage-option {:?} is not KEY=VALUE (e.g. --storage-option \
                 aws_endpoint=http://127.0.0.1:9000)",
                scrub(it)
            ))),
        })
        .collect()
}

/// Whether a configuration key holds a secret (its value is never shown). A `*_FILE`
/// variable holds a path (`AWS_SHARED_CREDENTIALS_FILE`), which messages may name.
fn secret_key(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    !k.ends_with("_file")
        && ["secret", "token", "password", "key", "sas", "credential"]
            .iter()
            .any(|w| k.contains(w))
}

/// `msg` with every secret value of the configuration (environment and
/// `--storage-option`) replaced by `***`.
pub fn scrub(msg: &str) -> String {
    let mut out = msg.to_owned();
    let mut secrets: Vec<String> = std::env::vars()
        .filter(|(k, _)| {
            let u = k.to_ascii_uppercase();
            (u.starts_with("AWS_") || u.starts_with("GOOGLE_") || u.starts_with("AZURE_"))
                && secret_key(k)
        })
        .map(|(_, v)| v)
        .collect();
    secrets.extend(crate::store::secrets::all());
    // Longest first, so a secret that contains another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    // Short values (test keys, "true") would scrub ordinary words; real keys are long.
    for s in secrets.iter().filter(|s| s.len() >= 8) {
        out = out.replace(s.as_str(), "***");
    }
    out
}

/// A remote store from its URL: the environment, then `--storage-option`, then the
/// timeout, and a bounded retry with backoff.
pub(crate) fn remote(
    url: &str,
    scheme: &str,
    c: &StoreConfig,
) -> Result<(Arc<dyn ObjectStore>, Key)> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::usage(format!(
            "{}: cannot configure the store: {}",
            scrub(url),
            scrub(&e.to_string())
        ))
    };
    let parsed = url::Url::parse(url).map_err(|e| bad(&e))?;
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: c.retries,
        retry_timeout: (c.io_timeout * (c.retries as u32 + 1)).max(Duration::from_secs(5)),
    };
    let timeout = format!("{}ms", c.io_timeout.as_millis().max(1));
    let inner: Arc<dyn ObjectStore> = match scheme {
        "s3" | "s3a" => {
            use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
            let mut b = AmazonS3Builder::default();
            // A named profile first: the environment and the options below win over it.
            let (profile, options) = profile_option(&c.options);
            let env = env_settings(std::env::vars_os(), "AWS_");
            let profile = profile.or_else(|| {
                env.iter()
                    .find(|(k, _)| k == "aws_profile")
                    .map(|(_, v)| v.clone())
            });
            if let Some(name) = profile {
                let keyed = |k: &str| {
                    matches!(
                        k.parse::<AmazonS3ConfigKey>(),
                        Ok(AmazonS3ConfigKey::AccessKeyId)
                    )
                };
                let explicit =
                    env.iter().any(|(k, _)| keyed(k)) || options.iter().any(|(k, _)| keyed(k));
                for (k, v) in crate::store::awsprofile::settings(&name, explicit)? {
                    let key: AmazonS3ConfigKey = k.parse().map_err(|e| bad(&e))?;
                    b = b.with_config(key, v);
                }
            }
            for (k, v) in env {
                if let Ok(key) = k.parse::<AmazonS3ConfigKey>() {
                    b = b.with_config(key, v);
                }
            }
            let mut b = b.with_url(url);
            for (k, v) in &options {
                let key: AmazonS3ConfigKey = k.parse().map_err(|e| bad(&e))?;
                b = b.with_config(key, v);
            }
            let t: AmazonS3ConfigKey = "timeout".parse().map_err(|e| bad(&e))?;
            let ct: AmazonS3ConfigKey = "connect_timeout".parse().map_err(|e| bad(&e))?;
            b = b.with_config(t, &timeout).with_config(ct, &timeout);
            Arc::new(b.with_retry(retry).build().map_err(|e| bad(&e))?)
        }
        "gs" => {
            use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
            let mut b = GoogleCloudStorageBuilder::default();
            if let Some(path) = std::env::var("SERVICE_ACCOUNT")
                .ok()
                .filter(|v| !v.is_empty())
            {
                b = b.with_service_account_path(path);
            }
            for (k, v) in env_settings(std::env::vars_os(), "GOOGLE_") {
                if let Ok(key) = k.parse::<GoogleConfigKey>() {
                    b = b.with_config(key, v);
                }
            }
            let mut b = b.with_url(url);
            for (k, v) in &c.options {
                let key: GoogleConfigKey = k.parse().map_err(|e| bad(&e))?;
                b = b.with_config(key, v);
            }
            let t: GoogleConfigKey = "timeout".parse().map_err(|e| bad(&e))?;
            Arc::new(
                b.with_config(t, &timeout)
                    .with_retry(retry)
                    .build()
                    .map_err(|e| bad(&e))?,
            )
        }
        _ => {
            use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
            let mut b = MicrosoftAzureBuilder::default();
            if let Some(e) = std::env::var("IDENTITY_ENDPOINT")
                .ok()
                .filter(|v| !v.is_empty())
            {
                b = b.with_msi_endpoint(e);
            }
            for (k, v) in env_settings(std::env::vars_os(), "AZURE_") {
                if let Ok(key) = k.parse::<AzureConfigKey>() {
                    b = b.with_config(key, v);
                }
            }
            let mut b = b.with_url(url);
            for (k, v) in &c.options {
                let key: AzureConfigKey = k.parse().map_err(|e| bad(&e))?;
                b = b.with_config(key, v);
            }
            let t: AzureConfigKey = "timeout".parse().map_err(|e| bad(&e))?;
            Arc::new(
                b.with_config(t, &timeout)
                    .with_retry(retry)
                    .build()
                    .map_err(|e| bad(&e))?,
            )
        }
    };
    // The prefix inside the bucket: the URL's path (S3 and GCS name the bucket as the
    // host; Azure's az://container/path likewise).
    let root = Key::parse(parsed.path().trim_matches('/')).map_err(|e| bad(&e))?;
    Ok((inner, root))
}

/// `--storage-option aws_profile=NAME` (or `profile=`), and the other options.
fn profile_option(options: &[(String, String)]) -> (Option<String>, Vec<(String, String)>) {
    let mut name = None;
    let mut rest = Vec::new();
    for (k, v) in options {
        if matches!(k.to_ascii_lowercase().as_str(), "aws_profile" | "profile") {
            name = Some(v.clone()).filter(|v| !v.is_empty());
        } else {
            rest.push((k.clone(), v.clone()));
        }
    }
    (name, rest)
}

/// One short line of an object_store error, scrubbed.
pub(crate) fn short(e: &object_store::Error) -> String {
    use std::error::Error as _;
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    let one: String = s
        .replace(['\n', '\r'], " ")
        .chars()
        .filter(|c| !c.is_control())
        .take(300)
        .collect();
    scrub(&one)
}

/// The store's settings from the environment, as object_store's `from_env` reads them
/// (`AWS_*`, `GOOGLE_*`, `AZURE_*`, lower-cased into config keys), except that an empty
/// value counts as unset: CI systems expand an unset variable to "" (GitHub's
/// `${{ vars.X }}`), and an empty `AWS_ENDPOINT_URL` must mean AWS, not a broken URL.
fn env_settings(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    prefix: &str,
) -> Vec<(String, String)> {
    vars.filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, v)| k.starts_with(prefix) && !v.is_empty())
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_environment_settings_count_as_unset() {
        use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
        let vars = [
            ("AWS_ENDPOINT_URL", ""),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_SESSION_TOKEN", ""),
            ("GOOGLE_BUCKET", "g"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.into(), v.into()));
        let got = env_settings(vars.clone().into_iter(), "AWS_");
        assert_eq!(got, vec![("aws_region".to_owned(), "eu-west-1".to_owned())]);
        let mut b = AmazonS3Builder::default();
        for (k, v) in got {
            b = b.with_config(k.parse::<AmazonS3ConfigKey>().unwrap(), v);
        }
        assert_eq!(b.get_config_value(&AmazonS3ConfigKey::Endpoint), None);
        assert_eq!(
            b.get_config_value(&AmazonS3ConfigKey::Region).as_deref(),
            Some("eu-west-1")
        );
        // object_store's own from_env would keep the empty endpoint, which is what the CI
        // expansion of an unset variable gives.
        assert_eq!(env_settings(vars.into_iter(), "GOOGLE_").len(), 1);
    }

    #[test]
    fn secrets_are_scrubbed_and_keys_are_recognised() {
        assert!(secret_key("aws_secret_access_key"));
        assert!(secret_key("AWS_SESSION_TOKEN"));
        assert!(!secret_key("aws_region"));
        let c = StoreConfig::new(
            &["aws_secret_access_key=hunter2-secret".to_owned()],
            DEFAULT_IO_TIMEOUT,
        )
        .unwrap();
        assert_eq!(c.options[0].1, "hunter2-secret");
        assert_eq!(scrub("key hunter2-secret here"), "key *** here");
    }
}
