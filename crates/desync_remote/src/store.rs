//! Builds the object store client for a [`RemoteUrl`] from the standard environment variables,
//! handed in by the caller (the library never reads the process environment itself).
//!
//! The rules are `object_store`'s `from_env` builders': every `AWS_*` (S3) or `GOOGLE_*` (GCS)
//! variable that names a config key is applied (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`,
//! `AWS_REGION`, `GOOGLE_APPLICATION_CREDENTIALS`, ...), plus `SERVICE_ACCOUNT` for GCS.
//! Unknown names are ignored, as there: the environment holds many `AWS_*` variables meant for
//! other tools.

use std::sync::Arc;
use std::time::Duration;

use object_store::ObjectStore;
use object_store::RetryConfig;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};

use crate::Error;
use crate::url::{RemoteUrl, Scheme};

/// `object_store` retries for up to 3 minutes by default, which looks like a hang at a wrong
/// endpoint or without network; a post-mortem tool should say so in seconds.
fn retry() -> RetryConfig {
    RetryConfig { max_retries: 3, retry_timeout: Duration::from_secs(30), ..Default::default() }
}

/// rustls over ring for every HTTPS client in the process (reqwest is built with
/// `rustls-no-provider`, so without this the first https request fails). Installing twice is
/// harmless: the first provider stays.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client for `url`'s bucket, configured from `env` (name, value) pairs.
pub fn build(
    url: &RemoteUrl,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Arc<dyn ObjectStore>, Error> {
    let config_error =
        |e: object_store::Error| Error::Config { url: url.to_string(), reason: e.to_string() };
    install_tls_provider();
    Ok(match url.scheme {
        Scheme::S3 => Arc::new(s3(url, env).build().map_err(config_error)?),
        Scheme::Gcs => Arc::new(gcs(url, env).build().map_err(config_error)?),
    })
}

fn s3(url: &RemoteUrl, env: impl IntoIterator<Item = (String, String)>) -> AmazonS3Builder {
    let mut builder = AmazonS3Builder::new();
    for (key, value) in env {
        if key.starts_with("AWS_")
            && let Ok(key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>()
        {
            builder = builder.with_config(key, value);
        }
    }
    // The URL's bucket wins over an `AWS_BUCKET` left in the environment.
    builder.with_bucket_name(&url.bucket).with_retry(retry())
}

fn gcs(
    url: &RemoteUrl,
    env: impl IntoIterator<Item = (String, String)>,
) -> GoogleCloudStorageBuilder {
    let mut builder = GoogleCloudStorageBuilder::new();
    for (key, value) in env {
        let key = match key.as_str() {
            "SERVICE_ACCOUNT" => Ok(GoogleConfigKey::ServiceAccount),
            k if k.starts_with("GOOGLE_") => k.to_ascii_lowercase().parse(),
            _ => continue,
        };
        if let Ok(key) = key {
            builder = builder.with_config(key, value);
        }
    }
    builder.with_bucket_name(&url.bucket).with_retry(retry())
}

#[cfg(test)]
mod tests {
    use object_store::ClientConfigKey;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn url(s: &str) -> RemoteUrl {
        RemoteUrl::parse(s).unwrap()
    }

    #[test]
    fn s3_from_env() {
        let vars = env(&[
            ("AWS_ACCESS_KEY_ID", "key"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_PROFILE", "not-a-config-key-here"),
            ("HOME", "/root"),
        ]);
        let store = build(&url("s3://dumps/run/"), vars).unwrap();
        assert_eq!(store.to_string(), "AmazonS3(dumps)");
    }

    #[test]
    fn s3_config_keys() {
        let vars = env(&[
            ("AWS_ENDPOINT_URL", "http://minio:9000"),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_DEFAULT_REGION", "eu-central-1"),
            ("AWS_BUCKET", "from-env"),
            ("GOOGLE_BUCKET", "not-for-s3"),
        ]);
        let b = s3(&url("s3://from-url/p"), vars);
        let get = |k: AmazonS3ConfigKey| b.get_config_value(&k);
        assert_eq!(get(AmazonS3ConfigKey::Endpoint).as_deref(), Some("http://minio:9000"));
        assert_eq!(get(AmazonS3ConfigKey::DefaultRegion).as_deref(), Some("eu-central-1"));
        assert_eq!(get(AmazonS3ConfigKey::Bucket).as_deref(), Some("from-url"));
        let allow = AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp);
        assert_eq!(get(allow).as_deref(), Some("true"));
    }

    #[test]
    fn gcs_config_keys() {
        let vars = env(&[
            ("GOOGLE_SERVICE_ACCOUNT", "/keys/sa.json"),
            ("GOOGLE_BASE_URL", "http://127.0.0.1:4443"),
            ("GOOGLE_ALLOW_HTTP", "true"),
            ("AWS_ENDPOINT_URL", "http://not-for-gcs"),
        ]);
        let b = gcs(&url("gs://fr-dumps/job"), vars);
        let get = |k: GoogleConfigKey| b.get_config_value(&k);
        assert_eq!(get(GoogleConfigKey::ServiceAccount).as_deref(), Some("/keys/sa.json"));
        assert_eq!(get(GoogleConfigKey::BaseUrl).as_deref(), Some("http://127.0.0.1:4443"));
        assert_eq!(get(GoogleConfigKey::Bucket).as_deref(), Some("fr-dumps"));
        let allow = GoogleConfigKey::Client(ClientConfigKey::AllowHttp);
        assert_eq!(get(allow).as_deref(), Some("true"));
        // gcloud's older name for the key file.
        let b = gcs(&url("gs://b"), env(&[("SERVICE_ACCOUNT", "/keys/old.json")]));
        assert_eq!(
            b.get_config_value(&GoogleConfigKey::ServiceAccount).as_deref(),
            Some("/keys/old.json")
        );
    }

    #[test]
    fn s3_rejects_bad_values() {
        let vars = env(&[("AWS_ALLOW_HTTP", "perhaps")]);
        let e = build(&url("s3://dumps/"), vars).map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::Config { .. }), "{e:?}");
        assert!(e.to_string().starts_with("cannot set up access to s3://dumps/: "), "{e}");
    }

    #[test]
    fn gcs_from_env() {
        // Skipping signatures builds without credentials, as for a public bucket.
        let vars = env(&[
            ("GOOGLE_SKIP_SIGNATURE", "true"),
            ("GOOGLE_BASE_URL", "http://127.0.0.1:4443"),
            ("AWS_ACCESS_KEY_ID", "ignored for gs://"),
        ]);
        let store = build(&url("gs://fr-dumps/job/"), vars).unwrap();
        assert_eq!(store.to_string(), "GoogleCloudStorage(fr-dumps)");
    }

    #[test]
    fn gcs_service_account_that_does_not_exist() {
        let vars = env(&[("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/desync-test-key.json")]);
        let e = build(&url("gs://fr-dumps/"), vars).map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::Config { .. }), "{e:?}");
        assert!(e.to_string().contains("desync-test-key.json"), "{e}");
    }
}
