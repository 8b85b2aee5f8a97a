//! `desync mcp`: serve the analysis as MCP tools on stdin/stdout until the client disconnects.
//! stdout is the protocol, so this command prints nothing there itself.

use crate::Outcome;

pub fn run() -> anyhow::Result<Outcome> {
    desync_mcp::serve_stdio()?;
    Ok(Outcome::Clean)
}
