//! The rmcp layer: request types (with JSON schemas), the tool router and the stdio transport.
//! Each tool forwards to [`crate::tools::Session`] and returns compact JSON text, or a tool
//! error (`isError: true`) carrying the message; malformed arguments become MCP
//! `invalid_params` errors from rmcp itself. Nothing here can bring the server down.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{self, Session};

#[derive(Deserialize, JsonSchema)]
pub struct LoadReq {
    /// Directory of per-rank Flight Recorder dumps (searched recursively), or one dump file;
    /// inside a directory the server allows (`desync mcp --allow-root`).
    pub path: String,
    /// Only read files named PREFIX<rank> (default: any name ending in a rank number).
    pub prefix: Option<String>,
    /// Directory holding the training code; frame paths are matched by their longest suffix.
    /// Inside a directory the server allows; only its *.py files are read.
    pub source_root: Option<String>,
    /// Path rewrites "FROM=TO": a frame path starting with FROM is read from TO instead (TO
    /// inside a directory the server allows).
    pub path_maps: Option<Vec<String>>,
    /// The job's world size, when the dumps may not show it (ranks below it with no dump are
    /// named as missing).
    pub world_size: Option<u32>,
    /// The job's log files (torchrun, SLURM, Kubernetes output; inside a directory the server
    /// allows): the ranks that raised and their tracebacks, which no dump holds. Without them,
    /// files named like logs (*.log, *.out, *.err) inside `path` are read when they
    /// are logs.
    pub logs: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
pub struct HandleReq {
    /// A handle returned by `load_dumps` (e.g. "h1").
    pub handle: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct PageReq {
    /// A handle returned by `load_dumps`.
    pub handle: String,
    /// Items to skip (default 0); pass the previous answer's `next_offset` for the next page.
    pub offset: Option<usize>,
    /// Items to return (default 20, at most 100).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct RankEntriesReq {
    /// A handle returned by `load_dumps`.
    pub handle: String,
    /// Global rank.
    pub rank: u32,
    /// Only entries of this process group (its name, e.g. "0").
    pub process_group: Option<String>,
    /// How many of the most recent entries to return (default 20, at most 100).
    pub last: Option<usize>,
    /// Skip this many of the newest entries first (default 0); pass the previous answer's
    /// `next_before` to page back through the history.
    pub before: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CollectiveReq {
    /// A handle returned by `load_dumps`.
    pub handle: String,
    /// Process group name (e.g. "0"), as in the verdict's `process_group.name`.
    pub process_group: String,
    /// The collective sequence id within that process group.
    pub seq: u64,
}

#[derive(Deserialize, JsonSchema)]
pub struct SourceReq {
    /// Optional handle: its `source_root`/`path_maps` are used to find the file.
    pub handle: Option<String>,
    /// File as it appears in a stack frame (a path on the training host) or a local path.
    pub file: String,
    /// 1-based line number.
    pub line: u32,
    /// Lines of context on each side (default 5).
    pub context: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
pub struct LintReq {
    /// Python files or directories (searched recursively for *.py), inside a directory the
    /// server allows.
    pub paths: Vec<String>,
    /// Findings to skip (default 0); pass the previous answer's `findings_page.next_offset`.
    pub offset: Option<usize>,
    /// Findings to return (default 20, at most 100).
    pub limit: Option<usize>,
}

#[derive(Clone)]
pub struct Server {
    session: Arc<Session>,
    tool_router: ToolRouter<Self>,
}

type ToolResult = Result<String, String>;

/// Every answer as compact JSON text, within [`tools::MAX_ANSWER_BYTES`].
fn compact(result: Result<serde_json::Value, String>) -> ToolResult {
    result.map(|v| tools::bound_answer(v).to_string())
}

/// The longest a load or a lint may take before the client gets an error (the work itself
/// cannot be interrupted; it finishes on its own thread and is dropped).
const WORK_TIMEOUT: std::time::Duration = std::time::Duration::from_mins(10);

/// Loads and lints that may run at once. Each load already uses every core (rayon), and a
/// client that sends 80 loads at once must queue them, not hold 80 jobs' memory together
/// (measured: the server aborted under a 4 GiB address-space cap before this bound).
const CONCURRENT_WORK: usize = 2;

static WORK_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_WORK);

/// Runs file-reading work on the blocking pool with a deadline (waiting for a slot included),
/// so a slow file system or a huge job never holds the threads that answer the other calls.
async fn off_thread(
    what: &str,
    work: impl FnOnce() -> Result<serde_json::Value, String> + Send + 'static,
) -> ToolResult {
    let queued_then_run = async {
        let slot = WORK_SLOTS.acquire().await.map_err(|e| e.to_string())?;
        // The slot travels with the work: past the deadline the work still runs, and still
        // counts.
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            work()
        })
        .await
        .map_err(|e| e.to_string())
    };
    match tokio::time::timeout(WORK_TIMEOUT, queued_then_run).await {
        Ok(Ok(result)) => compact(result),
        Ok(Err(e)) => Err(format!("{what} stopped: {e}")),
        Err(_) => Err(format!("{what} took longer than {} s; gave up", WORK_TIMEOUT.as_secs())),
    }
}

#[tool_router]
impl Server {
    pub fn new(session: Session) -> Self {
        Self { session: Arc::new(session), tool_router: Self::tool_router() }
    }

    #[tool(
        description = "Load and analyze a directory of per-rank PyTorch Flight Recorder dumps. Returns a handle for the other tools and a summary (ranks loaded as ranges, world size, the first 20 process groups and their total, warnings, verdict category). Rank sets in every answer are arrays cut at 64 ranks beside `*_ranges` text (\"0-3,5,8-1023\"); `*_truncated` marks a cut. Lists are paged: `offset`/`limit` in, `total`/`next_offset` out."
    )]
    async fn load_dumps(&self, Parameters(r): Parameters<LoadReq>) -> ToolResult {
        let session = Arc::clone(&self.session);
        let args = tools::LoadArgs {
            path: r.path,
            prefix: r.prefix,
            source_root: r.source_root,
            path_maps: r.path_maps.unwrap_or_default(),
            world_size: r.world_size,
            logs: r.logs.unwrap_or_default(),
        };
        off_thread("load_dumps", move || session.load(&args)).await
    }

    #[tool(
        description = "Forget a handle returned by load_dumps and the memory its analysis holds. Handles are also dropped, oldest first, past 16 or about 2 GiB of analyses."
    )]
    fn release(&self, Parameters(r): Parameters<HandleReq>) -> ToolResult {
        compact(self.session.release(&r.handle))
    }

    #[tool(
        description = "The verdict (category, culprit ranks, process group, collective seq, headline), the evidence lines, where the late ranks are (their stacks or the traceback the log holds), and, with a log, what it shows: each claim with the log lines (file, line, text) it rests on, and how it changed the dumps' verdict (log.upgrade)."
    )]
    fn verdict(&self, Parameters(r): Parameters<HandleReq>) -> ToolResult {
        compact(self.session.verdict(&r.handle))
    }

    #[tool(
        description = "Ranks grouped by behaviour, one page at a time (offset/limit, total, next_offset): where each group is (pg, seq, op, sizes, dtypes, call site file:line), which group is the culprit, which is stuck."
    )]
    fn groups(&self, Parameters(r): Parameters<PageReq>) -> ToolResult {
        compact(self.session.groups(&r.handle, tools::Page::new(r.offset, r.limit)))
    }

    #[tool(
        description = "The job's process groups, one page at a time (offset/limit, total, next_offset): name, description, members as ranges, size, stream classes and mismatches in each."
    )]
    fn process_groups(&self, Parameters(r): Parameters<PageReq>) -> ToolResult {
        compact(self.session.process_groups(&r.handle, tools::Page::new(r.offset, r.limit)))
    }

    #[tool(
        description = "The last N (at most 100) Flight Recorder entries of one rank (seq, pg, op, sizes, dtypes, state, call site file:line), optionally of one process group; `before` skips the newest ones to page back (`next_before` in the answer)."
    )]
    fn rank_entries(&self, Parameters(r): Parameters<RankEntriesReq>) -> ToolResult {
        compact(self.session.rank_entries(
            &r.handle,
            r.rank,
            r.process_group.as_deref(),
            r.last.unwrap_or(tools::DEFAULT_PAGE),
            r.before.unwrap_or(0),
        ))
    }

    #[tool(
        description = "One collective (process group + seq) across all member ranks, grouped by what each rank issued (at most 20 sides): ranks as ranges, op, sizes, dtypes, state, call site; ranks with no such entry are named as missing, grouped by the last seq they reached."
    )]
    fn collective(&self, Parameters(r): Parameters<CollectiveReq>) -> ToolResult {
        compact(self.session.collective(&r.handle, &r.process_group, r.seq))
    }

    #[tool(
        description = "The diverging Python stacks of the rank groups, the branch point (file:line, construct, condition) that sent them apart and the explanation."
    )]
    fn compare_stacks(&self, Parameters(r): Parameters<HandleReq>) -> ToolResult {
        compact(self.session.compare_stacks(&r.handle))
    }

    #[tool(
        description = "Source lines around file:line, found through the handle's source_root/path_maps; only Python files (*.py) inside those roots are read."
    )]
    fn source(&self, Parameters(r): Parameters<SourceReq>) -> ToolResult {
        compact(self.session.source(r.handle.as_deref(), &r.file, r.line, r.context.unwrap_or(5)))
    }

    #[tool(
        description = "A unified diff adding logging probes that confirm the diagnosis when the job is rerun (apply with `git apply`)."
    )]
    fn probes_diff(&self, Parameters(r): Parameters<HandleReq>) -> ToolResult {
        self.session.probes_diff(&r.handle)
    }

    #[tool(
        description = "Statically check Python training code for collectives that some ranks can skip, reorder or size differently. Returns findings as JSON."
    )]
    async fn lint(&self, Parameters(r): Parameters<LintReq>) -> ToolResult {
        let session = Arc::clone(&self.session);
        let page = tools::Page::new(r.offset, r.limit);
        off_thread("lint", move || session.lint(&r.paths, page)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        // rmcp's default names the server after rmcp itself; clients show this name.
        let about = Implementation::new("desync", env!("CARGO_PKG_VERSION")).with_description(
            "PyTorch distributed hangs, from Flight Recorder dumps to a root cause",
        );
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(about)
            .with_instructions(
                "desync diagnoses PyTorch distributed hangs from Flight Recorder dumps. Start with \
             load_dumps, then verdict, groups, collective, compare_stacks, source, probes_diff; \
             release handles you are done with. Every answer stays under 32 KB: lists are paged \
             (offset/limit, next_offset) and rank sets are ranges.",
            )
    }
}

pub async fn serve(session: Session) -> anyhow::Result<()> {
    eprintln!("desync mcp: serving on stdio");
    let service = Server::new(session).serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
