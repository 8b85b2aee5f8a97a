//! `desync mcp`: desync's analysis as Model Context Protocol tools, served over stdio.
//!
//! stdout *is* the protocol, so nothing here prints to it; diagnostics go to stderr. The tool
//! logic lives in [`tools`] (plain Rust, JSON values in and out, unit-testable without a
//! client); everything that touches `rmcp` (whose API churns between minor versions) is kept
//! in the private `server` module.

mod server;
pub mod tools;

pub use tools::Session;

/// Serves MCP on stdin/stdout until the client closes the connection. The client may name
/// only paths inside `allowed_roots` (see [`Session::new`]).
///
/// One runtime thread on purpose: the transport spawns a task per request, and a single thread
/// runs those tasks in the order the requests arrived, so calls that only touch the session
/// (`release`, then `verdict` on the released handle) take effect in the client's order. On a
/// multi-threaded runtime they raced: a `verdict` sent after a `release` still answered in 68 of
/// 100 tries. The slow work (loads, lints) runs on the blocking pool and keeps its parallelism.
pub fn serve_stdio(allowed_roots: Vec<std::path::PathBuf>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(server::serve(Session::new(allowed_roots)))
}
