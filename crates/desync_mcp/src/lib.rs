//! `desync mcp`: desync's analysis as Model Context Protocol tools, served over stdio.
//!
//! stdout *is* the protocol, so nothing here prints to it; diagnostics go to stderr. The tool
//! logic lives in [`tools`] (plain Rust, JSON values in and out, unit-testable without a
//! client); everything that touches `rmcp` (whose API churns between minor versions) is kept
//! in the private `server` module.

mod server;
pub mod tools;

pub use tools::Session;

/// Serves MCP on stdin/stdout until the client closes the connection.
pub fn serve_stdio() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(server::serve())
}
