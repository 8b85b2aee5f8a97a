//! Shared by the integration tests that talk to real torch.

use std::path::PathBuf;

/// The Python with torch: `$DESYNC_PYTHON` (scripts/test.sh sets it) or the checkout's
/// `.venv`. Without one these tests fail with a clear message rather than skip.
pub fn torch_python() -> PathBuf {
    if let Some(p) = std::env::var_os("DESYNC_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with torch: run via scripts/test.sh or set DESYNC_PYTHON (scripts/venv.sh prints one)"
    );
    venv
}
