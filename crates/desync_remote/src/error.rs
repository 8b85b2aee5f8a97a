//! Errors that end a remote load (exit 2 in the CLI). One object that cannot be fetched or
//! decoded is not among them: it becomes a warning in the report, like an unreadable file.
//!
//! `object_store`'s messages inline most of their cause chain but not all of it (an HTTP
//! error says "error sending request" and keeps "connection refused" in its source), so each
//! variant keeps one line built from the whole chain, without repeats, as text (`reason`):
//! printing the chain again as sources would repeat most of it.

use crate::url::Scheme;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid URL `{url}`: {why}")]
    Url { url: String, why: String },
    #[error("cannot set up access to {url}: {reason}")]
    Config { url: String, reason: String },
    #[error("{url}: bucket `{bucket}` does not exist (or these credentials cannot see it)")]
    NoBucket { url: String, bucket: String },
    #[error("{url}: access denied; check the credentials ({}): {reason}", scheme.credential_hint())]
    Denied { url: String, scheme: Scheme, reason: String },
    #[error("cannot list {url}: {reason}")]
    List { url: String, reason: String },
    #[error("no objects under {url} (an empty or mistyped prefix?)")]
    Empty { url: String },
    #[error("cannot start the network runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Load(#[from] desync_core::Error),
}

/// The HTTP status of a failed request, from the message. `object_store` 0.14 keeps its
/// `RetryError` (which has `status()`) crate-private and folds list failures into
/// `Error::Generic`, so the status line in the text is all a caller can see.
pub(crate) fn http_status(e: &object_store::Error) -> Option<u16> {
    if let object_store::Error::NotFound { .. } = e {
        return Some(404);
    }
    if let object_store::Error::PermissionDenied { .. } = e {
        return Some(403);
    }
    if let object_store::Error::Unauthenticated { .. } = e {
        return Some(401);
    }
    let text = e.to_string();
    let (_, after) = text.split_once("status code: ")?;
    after.get(..3)?.parse().ok()
}

/// One line out of a failed request's error and its causes: servers put whole XML or JSON error
/// documents in the body, which the status and the error code say better.
pub(crate) fn short_reason(e: &object_store::Error) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = c.source();
    }
    let text = text.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    // S3 and its clones answer `<Code>AccessDenied</Code><Message>...</Message>`.
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find("</")?;
        Some(text[start..start + end].to_owned())
    };
    match (tag("Code"), tag("Message")) {
        (Some(code), Some(message)) => {
            let head = text.split(" - ").next().unwrap_or(&text);
            format!("{head}: {code}: {message}")
        }
        _ if text.len() > 400 => format!("{}...", &text[..text.floor_char_boundary(400)]),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let e = Error::NoBucket { url: "s3://nope/run/".into(), bucket: "nope".into() };
        assert_eq!(
            e.to_string(),
            "s3://nope/run/: bucket `nope` does not exist (or these credentials cannot see it)"
        );
        let e = Error::Denied { url: "gs://b/".into(), scheme: Scheme::Gcs, reason: "403".into() };
        assert!(e.to_string().contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
        let e = Error::Empty { url: "s3://b/x/".into() };
        assert_eq!(e.to_string(), "no objects under s3://b/x/ (an empty or mistyped prefix?)");
    }

    #[test]
    fn statuses() {
        let generic =
            |text: &str| object_store::Error::Generic { store: "S3", source: text.into() };
        let e = generic(
            "Error performing GET http://x in 2ms - Server returned non-2xx status code: 404 Not Found: <Error/>",
        );
        assert_eq!(http_status(&e), Some(404));
        assert_eq!(http_status(&generic("connection refused")), None);
        let e = object_store::Error::PermissionDenied { path: "p".into(), source: "no".into() };
        assert_eq!(http_status(&e), Some(403));
    }

    #[test]
    fn reasons_keep_the_root_cause() {
        #[derive(Debug)]
        struct Sending(std::io::Error);
        impl std::fmt::Display for Sending {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request")
            }
        }
        impl std::error::Error for Sending {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = object_store::Error::Generic { store: "S3", source: Box::new(Sending(refused)) };
        assert_eq!(short_reason(&e), "Generic S3 error: error sending request: refused");
    }

    #[test]
    fn reasons_drop_xml_bodies() {
        let e = object_store::Error::Generic {
            store: "S3",
            source: "Error performing GET http://x in 2ms - Server returned non-2xx status code: 403 Forbidden: <?xml version=\"1.0\"?>\n<Error><Code>InvalidAccessKeyId</Code><Message>The key does not exist.</Message></Error>".into(),
        };
        assert_eq!(
            short_reason(&e),
            "Generic S3 error: Error performing GET http://x in 2ms: InvalidAccessKeyId: The key does not exist."
        );
    }
}
