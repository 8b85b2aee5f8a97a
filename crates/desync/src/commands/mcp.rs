//! `desync mcp`: serve the analysis as MCP tools on stdin/stdout until the client disconnects.
//! stdout is the protocol, so this command prints nothing there itself; what the client may
//! read (the `--allow-root` directories) is said once on stderr.

use crate::Outcome;
use crate::cli::McpArgs;

pub fn run(args: &McpArgs) -> anyhow::Result<Outcome> {
    let roots = args.allowed_roots()?;
    if roots.is_empty() {
        eprintln!(
            "desync mcp: the working directory is / or the home directory, so the client may read nothing; pass --allow-root DIR"
        );
    } else {
        let shown: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        eprintln!("desync mcp: the client may read under {}", shown.join(", "));
    }
    desync_mcp::serve_stdio(roots)?;
    Ok(Outcome::Clean)
}
