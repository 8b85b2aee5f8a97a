//! `s3://bucket/prefix/` and `gs://bucket/prefix/`: what the user typed, checked once.
//!
//! The prefix is a "directory" in the bucket: it is listed segment by segment (`object_store`'s
//! rule), so `s3://b/job1` reads `job1/...` but not `job10/...`, like a local directory would.

use std::fmt;
use std::path::PathBuf;

use object_store::path::Path as ObjectPath;

use crate::Error;

/// The object stores desync reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    S3,
    Gcs,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::S3 => "s3",
            Self::Gcs => "gs",
        }
    }

    /// Where this store's credentials come from, for error messages.
    pub(crate) fn credential_hint(self) -> &'static str {
        match self {
            Self::S3 => {
                "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, \
                 or AWS_SKIP_SIGNATURE=true for a public bucket"
            }
            Self::Gcs => "GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT",
        }
    }
}

/// A bucket and a prefix in it, parsed from `s3://` or `gs://` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    pub scheme: Scheme,
    pub bucket: String,
    /// Without leading or trailing slashes; empty for the whole bucket.
    pub prefix: ObjectPath,
}

/// The scheme of `input` when it names a bucket (`s3://`, `gs://`), whether or not the rest
/// parses: front ends use it to route the input before reporting what is wrong with it.
pub fn scheme_of(input: &str) -> Option<Scheme> {
    let (scheme, _) = input.split_once("://")?;
    match scheme.to_ascii_lowercase().as_str() {
        "s3" => Some(Scheme::S3),
        "gs" => Some(Scheme::Gcs),
        _ => None,
    }
}

impl RemoteUrl {
    pub fn parse(input: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::Url { url: input.to_owned(), why: why.to_owned() };
        let scheme = scheme_of(input)
            .ok_or_else(|| bad("expected s3://BUCKET/PREFIX or gs://BUCKET/PREFIX"))?;
        let rest = &input[input.find("://").map_or(0, |i| i + 3)..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket name after the scheme"));
        }
        // S3 and GCS bucket names are lower-case letters, digits, `-`, `.` (and `_` on GCS);
        // legacy S3 buckets may hold upper case. Anything else (`?`, `@`, `:`) is a typo or a
        // URL form we do not read, such as a presigned link.
        if let Some(c) = bucket.chars().find(|c| !(c.is_ascii_alphanumeric() || "-._".contains(*c)))
        {
            return Err(bad(&format!("`{c}` cannot appear in a bucket name")));
        }
        if prefix.contains(['?', '#']) {
            return Err(bad(
                "query strings and fragments are not supported; give BUCKET/PREFIX only",
            ));
        }
        let prefix = ObjectPath::parse(prefix.trim_matches('/'))
            .map_err(|e| bad(&format!("invalid prefix: {e}")))?;
        Ok(Self { scheme, bucket: bucket.to_owned(), prefix })
    }

    /// How an object under this bucket is named in warnings and reports: `s3://bucket/key`.
    pub fn object(&self, location: &ObjectPath) -> PathBuf {
        PathBuf::from(format!("{}://{}/{location}", self.scheme.as_str(), self.bucket))
    }

    /// The whole input as a path-like name, for [`desync_core::Analysis::input`].
    pub fn as_input(&self) -> PathBuf {
        PathBuf::from(self.to_string())
    }
}

impl fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}/", self.scheme.as_str(), self.bucket)?;
        if !self.prefix.as_ref().is_empty() {
            write!(f, "{}/", self.prefix)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> RemoteUrl {
        RemoteUrl::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn error(s: &str) -> String {
        RemoteUrl::parse(s).map(|u| panic!("{s} parsed as {u:?}")).unwrap_err().to_string()
    }

    #[test]
    fn buckets_and_prefixes() {
        let u = parse("s3://my-bucket/jobs/run 7/dumps/");
        assert_eq!((u.scheme, u.bucket.as_str()), (Scheme::S3, "my-bucket"));
        assert_eq!(u.prefix.as_ref(), "jobs/run 7/dumps");
        assert_eq!(u.to_string(), "s3://my-bucket/jobs/run 7/dumps/");

        let u = parse("gs://fr.dumps_2024/prefix");
        assert_eq!(
            (u.scheme, u.bucket.as_str(), u.prefix.as_ref()),
            (Scheme::Gcs, "fr.dumps_2024", "prefix")
        );
        assert_eq!(u.to_string(), "gs://fr.dumps_2024/prefix/");
    }

    #[test]
    fn whole_bucket() {
        for s in ["s3://b", "s3://b/", "S3://b//"] {
            let u = parse(s);
            assert_eq!(u.prefix.as_ref(), "", "{s}");
            assert_eq!(u.to_string(), "s3://b/");
        }
    }

    #[test]
    fn object_names() {
        let u = parse("gs://b/run/");
        let key = ObjectPath::from("run/nccl_trace_rank_3");
        assert_eq!(u.object(&key), PathBuf::from("gs://b/run/nccl_trace_rank_3"));
        assert_eq!(u.object(&key).file_name().unwrap(), "nccl_trace_rank_3");
    }

    #[test]
    fn schemes() {
        assert_eq!(scheme_of("s3://b/p"), Some(Scheme::S3));
        assert_eq!(scheme_of("gs://b"), Some(Scheme::Gcs));
        assert_eq!(scheme_of("GS://b"), Some(Scheme::Gcs));
        assert_eq!(scheme_of("https://b.s3.amazonaws.com/p"), None);
        assert_eq!(scheme_of("./dumps"), None);
        assert_eq!(scheme_of("/data/s3:/x"), None);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(error("s3://"), "invalid URL `s3://`: no bucket name after the scheme");
        assert_eq!(
            error("s3:///prefix"),
            "invalid URL `s3:///prefix`: no bucket name after the scheme"
        );
        assert_eq!(
            error("gs://user@bucket/p"),
            "invalid URL `gs://user@bucket/p`: `@` cannot appear in a bucket name"
        );
        assert!(error("s3://b/p?X-Amz-Signature=1").contains("query strings"));
        assert!(error("s3://b/a//b").contains("invalid prefix"), "{}", error("s3://b/a//b"));
        assert!(error("s3://b/a/../b").contains("invalid prefix"));
        assert!(error("ftp://b/p").contains("expected s3://BUCKET/PREFIX"));
    }
}
