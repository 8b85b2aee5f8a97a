//! Where the dumps come from: a local directory or file (`desync_core`), or, with the `remote`
//! feature, an `s3://` or `gs://` prefix (`desync_remote`). Commands call [`analyze`] and never
//! see the difference.

use desync_core::{Analysis, Config, Progress};

/// Loads and analyses `config.input`, wherever it is.
pub fn analyze(config: &Config, progress: &dyn Progress) -> anyhow::Result<Analysis> {
    let Some(url) = config.input.to_str().filter(|s| is_remote(s)) else {
        return Ok(desync_core::analyze(config, progress)?);
    };
    let trace = load_remote(url, config, progress)?;
    Ok(desync_core::analyze_loaded(config, trace)?)
}

/// `s3://...` or `gs://...`. A local directory literally named `s3:` is still reachable as
/// `./s3:/...`.
fn is_remote(input: &str) -> bool {
    input.split_once("://").is_some_and(|(scheme, _)| {
        scheme.eq_ignore_ascii_case("s3") || scheme.eq_ignore_ascii_case("gs")
    })
}

#[cfg(feature = "remote")]
fn load_remote(
    url: &str,
    config: &Config,
    progress: &dyn Progress,
) -> anyhow::Result<desync_core::model::Trace> {
    let url = desync_remote::RemoteUrl::parse(url)?;
    // Credentials and endpoints come from the standard AWS_* / GOOGLE_* variables; names or
    // values that are not UTF-8 cannot be config keys.
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    Ok(desync_remote::load(&url, env, &config.load, progress)?)
}

#[cfg(not(feature = "remote"))]
fn load_remote(
    url: &str,
    _: &Config,
    _: &dyn Progress,
) -> anyhow::Result<desync_core::model::Trace> {
    anyhow::bail!(
        "{url}: this desync was built without the `remote` feature; rebuild with \
         `cargo install desync --features remote` or copy the dumps to a local directory"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_inputs() {
        assert!(is_remote("s3://bucket/prefix/"));
        assert!(is_remote("GS://bucket"));
        assert!(!is_remote("./s3:/bucket"));
        assert!(!is_remote("dumps"));
        assert!(!is_remote("https://host/x"));
    }
}
