//! Command-line arguments. Raw clap values become a validated `desync_core::Config` in one
//! place (`InputArgs::config`), so commands never look at strings again.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(
    name = "desync",
    version,
    about = "Find why a distributed PyTorch job hung, from its Flight Recorder dumps"
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Diagnose a hang from per-rank Flight Recorder dumps (a directory, one file, or an
    /// s3:// or gs:// prefix).
    Analyze(AnalyzeArgs),
    /// Check Python training code for collectives that some ranks can skip, reorder or size
    /// differently (exit 0: clean, 1: findings, 2: a path could not be read).
    Lint(LintArgs),
    /// Write the diagnosis as one self-contained HTML file: verdict, evidence, timeline, code
    /// (exit 0: healthy, 1: a problem was found, 2: an error).
    Report(ReportArgs),
    /// Convert the dumps to other tools' formats (--perfetto: Chrome Trace Event JSON).
    Export(ExportArgs),
    /// Reduce dumps to compact per-rank summaries (kilobytes each) that `analyze` reads like
    /// the dumps, with the same result: summarize on each node, analyze them all in one place.
    Summarize(SummarizeArgs),
    /// Serve the analysis as Model Context Protocol tools over stdio (for LLM clients).
    Mcp(McpArgs),
    /// Watch a live job (its debug-server workers, or a dump directory it rewrites) and
    /// report a desync while it hangs, before the watchdog fires (exit 1 after an alert).
    Watch(WatchArgs),
    /// Poll some ranks' debug-server workers (one node's, say) and keep their recorders as
    /// files in a directory that one `desync watch --dir` judges: an agent per node for jobs
    /// too large for one watcher (runs until interrupted or --for ends).
    Publish(PublishArgs),
    /// Run a job (`desync run -- torchrun ... train.py`) with Flight Recorder on and watch it;
    /// when it fails or hangs, print the diagnosis and write the HTML report next to the
    /// dumps. Exits with the job's own exit code.
    Run(RunArgs),
    /// Internal: the guard `run` starts beside its job (stops the job if `run` dies).
    #[command(hide = true)]
    JobGuard(JobGuardArgs),
}

/// `desync job-guard --parent PID --grace SECS`, reading `run`'s pipe on standard input
/// (`desync_live::job::guard_job`). Not for people: `run` starts it.
#[derive(clap::Args, Debug)]
pub struct JobGuardArgs {
    /// The `desync run` process.
    #[arg(long)]
    pub parent: i32,
    /// Seconds between SIGTERM and SIGKILL.
    #[arg(long)]
    pub grace: f64,
}

// These doc comments are `--help` text: backticks would print as they are.
#[allow(clippy::doc_markdown)]
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Directory for the dumps (DIR/dumps), the report (DIR/report.html) and desync's Python
    /// hook (default: desync-run-<UTC time> in the current directory).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Seconds between looks at the dumps (the ranks rewrite theirs this often).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub interval: f64,
    /// Seconds ranks may wait in a collective that others have not issued (or in a wait
    /// cycle) before the job counts as hung. Mismatched collectives count at once.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub lag: f64,
    /// Seconds without a new collective on any rank before the job counts as hung; counted
    /// from the start when no rank writes a dump at all.
    #[arg(long, value_name = "SECS", default_value_t = 300.0)]
    pub hang_after: f64,
    /// Seconds a stopped job's processes (all of them, also those that left its process
    /// group) get between SIGTERM and SIGKILL, and a failed job's ranks get to finish their
    /// dumps.
    #[arg(long, value_name = "SECS", default_value_t = 15.0)]
    pub grace: f64,
    /// Leave the job's PYTHONPATH alone: no sitecustomize hook. The script then calls
    /// desync.torch.enable() itself (Gloo never dumps otherwise; NCCL dumps on its timeout).
    #[arg(long)]
    pub no_inject: bool,
    /// Let the job write to the terminal itself: its output is not kept in DIR/dumps/job.log
    /// (where the report reads a crashing rank's traceback), and its stdout stays a terminal.
    #[arg(long)]
    pub no_output_log: bool,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub ownership: OwnershipArgs,
    /// The job's command, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND", value_parser = clap::value_parser!(std::ffi::OsString))]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(clap::Args, Debug)]
pub struct LintArgs {
    /// Python files or directories (searched recursively for *.py); `-` alone reads one file
    /// from standard input.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// With `-`: the path the source on standard input is reported as, and whose folder its
    /// imports are resolved from (an editor's buffer of `train.py`).
    #[arg(long, value_name = "PATH")]
    pub stdin_filename: Option<PathBuf>,
    #[arg(long, value_parser = ["text", "json", "sarif"], default_value = "text")]
    pub format: String,
    /// Only these rules: comma-separated codes or prefixes (DSY001,DSY004 or DSY00).
    #[arg(long, value_name = "RULES")]
    pub select: Option<String>,
    /// Skip these rules (comma-separated codes or prefixes).
    #[arg(long, value_name = "RULES")]
    pub ignore: Option<String>,
    /// Also report findings whose evidence is indirect (through a container's writes, an
    /// object's other fields, or what is read of an item the rank picked) or whose decision
    /// rests on the environment or the host alone; by default they are only counted.
    #[arg(long)]
    pub include_indirect: bool,
}

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// More log files, when PATH is a job's log (told from a dump by its content): torchrun,
    /// SLURM or Kubernetes output, per-rank or interleaved (docs/logs.md).
    #[arg(value_name = "LOG")]
    pub more_logs: Vec<PathBuf>,
    /// The job's log beside the dumps (repeatable): adds the ranks that raised and their
    /// tracebacks, and the log's own claims, to the report.
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Write the confirming probes as a unified diff (apply with `git apply` or `patch -p1`).
    #[arg(long, value_name = "FILE")]
    pub emit_probes: Option<PathBuf>,
    /// When to colour the text report.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only the verdict line (text format).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Also write the report as one self-contained HTML file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args, Debug)]
pub struct InputArgs {
    /// Directory of per-rank dumps or their summaries (searched recursively), one file, or a
    /// bucket prefix: `s3://BUCKET/PREFIX` or `gs://BUCKET/PREFIX` (access from `AWS_*` or
    /// `GOOGLE_*` variables).
    pub path: PathBuf,
    /// Only read files named PREFIX<rank> (default: any name ending in a rank number).
    #[arg(long, short = 'p')]
    pub prefix: Option<String>,
    #[command(flatten)]
    pub sources: SourceArgs,
    /// The job's world size, when the dumps may not show it (a copy of only some ranks'
    /// dumps): ranks below N with no dump are then named as missing.
    #[arg(long, value_name = "N", value_parser = world_size_range())]
    pub world_size: Option<u32>,
    #[command(flatten)]
    pub ownership: OwnershipArgs,
}

/// `--world-size`: 1 to desync's rank limit (docs/security.md).
fn world_size_range() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i64::from(desync_core::load::limits::MAX_WORLD_SIZE))
}

/// Which frames are library code beyond where their files live (site-packages, dist-packages
/// and the standard library are, torch's tree is found from the stacks).
#[derive(clap::Args, Debug, Default)]
pub struct OwnershipArgs {
    /// Frames whose path matches GLOB are library code (repeatable; `*` matches across
    /// slashes), e.g. `'*/third_party/*'`.
    #[arg(long = "library", value_name = "GLOB")]
    pub library: Vec<String>,
    /// Frames whose path matches GLOB are your code even where libraries live (repeatable),
    /// e.g. '*/site-packages/mytrainer/*'.
    #[arg(long = "user-code", value_name = "GLOB")]
    pub user_code: Vec<String>,
}

impl OwnershipArgs {
    pub fn ownership(&self) -> desync_core::load::Ownership {
        desync_core::load::Ownership { library: self.library.clone(), user: self.user_code.clone() }
    }
}

impl InputArgs {
    pub fn config(&self) -> anyhow::Result<desync_core::Config> {
        Ok(desync_core::Config {
            input: self.path.clone(),
            load: desync_core::load::LoadOptions {
                prefix: self.prefix.clone(),
                ownership: self.ownership.ownership(),
                world_size: self.world_size,
                per_rank_entries: false,
            },
            sources: self.sources.options()?,
            logs: Vec::new(),
            // Logs saved beside the dumps (`job.log`, `slurm-*.out`) are part of the evidence
            // (docs/logs.md, "With dumps").
            logs_beside: true,
        })
    }
}

/// Where the code bridge reads the training code (analyze, report, run, watch).
#[derive(clap::Args, Debug)]
pub struct SourceArgs {
    /// Read frames under FROM from TO instead (repeatable), e.g. /workspace/job=./job.
    #[arg(long = "path-map", value_name = "FROM=TO")]
    pub path_maps: Vec<String>,
    /// Look for the training code under DIR, matching frame paths by their longest suffix.
    /// Only Python files (*.py) under DIR and the --path-map targets are read (without
    /// either, under the working directory, unless that is / or the home directory: then
    /// none).
    #[arg(long, value_name = "DIR")]
    pub source_root: Option<PathBuf>,
}

impl SourceArgs {
    /// `--path-map` and `--source-root`, checked.
    pub fn options(&self) -> anyhow::Result<desync_core::bridge::SourceOptions> {
        let path_maps = self
            .path_maps
            .iter()
            .map(|m| desync_core::bridge::SourceOptions::parse_path_map(m))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(root) = &self.source_root
            && !root.is_dir()
        {
            return Err(desync_core::Error::SourceRoot(root.clone()).into());
        }
        // Without --source-root or --path-map, frame paths as written are read only under the
        // working directory: the job's checkout is where one runs desync, /etc is not
        // (docs/security.md). `/` and the home directory are no checkout: a frame could name
        // `/etc/shadow` or `~/.aws/credentials` inside them.
        let (fallback_root, refused_fallback) = match std::env::current_dir() {
            Ok(dir) if too_broad_for_a_default_root(&dir) => (None, Some(dir)),
            Ok(dir) => (Some(dir), None),
            Err(_) => (None, None),
        };
        Ok(desync_core::bridge::SourceOptions {
            path_maps,
            source_root: self.source_root.clone(),
            fallback_root,
            refused_fallback,
        })
    }
}

/// Whether `dir` is `/`, the home directory (`$HOME`) or a directory above it: never a root
/// by default, for sources or for the MCP server, since the secrets of the user and the
/// system are inside it.
pub fn too_broad_for_a_default_root(dir: &std::path::Path) -> bool {
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let dir = real(dir);
    if dir.parent().is_none() {
        return true;
    }
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .is_some_and(|home| real(std::path::Path::new(&home)).starts_with(&dir))
}

/// `desync mcp`: which directories the client may name.
#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// Let the client read under DIR (repeatable): `load_dumps` paths, `source_root`, every
    /// `path_maps` target and `lint` paths must resolve inside one (after symlinks and `..`).
    /// Default: the working directory, unless that is / or the home directory (then nothing).
    #[arg(long = "allow-root", value_name = "DIR")]
    pub allow_roots: Vec<PathBuf>,
}

impl McpArgs {
    /// The roots the client may name, checked: each must be a directory.
    pub fn allowed_roots(&self) -> anyhow::Result<Vec<PathBuf>> {
        if self.allow_roots.is_empty() {
            let cwd = std::env::current_dir()?;
            return Ok(if too_broad_for_a_default_root(&cwd) { Vec::new() } else { vec![cwd] });
        }
        for root in &self.allow_roots {
            if !root.is_dir() {
                anyhow::bail!("--allow-root {}: not a directory", root.display());
            }
        }
        Ok(self.allow_roots.clone())
    }
}

// These doc comments are `--help` text: backticks would print as they are.
#[allow(clippy::doc_markdown)]
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("live").required(true).args(["store", "workers", "dir"])))]
pub struct WatchArgs {
    /// The job's TCPStore (MASTER_ADDR:MASTER_PORT): find every rank's debug-server worker
    /// under `debug_server/rank<N>` (torch.distributed.debug.start_debug_server). Read only.
    #[arg(long, value_name = "HOST:PORT")]
    pub store: Option<String>,
    /// Poll these debug-server workers instead: `URL` (rank = position) or `RANK=URL`.
    #[arg(long, value_name = "URL", num_args = 1..)]
    pub workers: Vec<String>,
    /// Follow a directory of per-rank dumps that the job rewrites.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// With --dir: only files named PREFIX<rank>.
    #[arg(long, short = 'p', requires = "dir")]
    pub prefix: Option<String>,
    /// The job's world size: with --store, the ranks to look for (default: probe until no
    /// more register); always, ranks below N that do not answer are named as missing.
    #[arg(long, value_name = "N", value_parser = world_size_range())]
    pub world_size: Option<u32>,
    /// Seconds between snapshots (at least 0.1).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub interval: f64,
    /// Seconds that ranks may wait in a collective others have not issued (or in a wait
    /// cycle) before it is an alert. Mismatched collectives alert at once.
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    pub lag: f64,
    /// Seconds to wait for the store or one worker before calling it down.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Workers fetched at once (1 to 1024).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: u16,
    /// Save each alert's snapshot (dumps, Python stacks, report) under DIR.
    #[arg(long, value_name = "DIR", default_value = "desync-watch")]
    pub save: PathBuf,
    /// Do not save snapshots.
    #[arg(long, conflicts_with = "save")]
    pub no_save: bool,
    /// Run this shell command on each alert (env: DESYNC_CATEGORY, DESYNC_CULPRITS,
    /// DESYNC_HEADLINE, DESYNC_SNAPSHOT).
    #[arg(long, value_name = "CMD")]
    pub on_alert: Option<String>,
    /// Stop after the first alert (exit 1).
    #[arg(long)]
    pub exit_on_alert: bool,
    /// Stop after this many seconds (exit 0 if nothing was found).
    #[arg(long = "for", value_name = "SECS")]
    pub duration: Option<f64>,
    /// Stop once the job is gone: after a snapshot was taken, its store, workers or dump
    /// directory answered nothing for --timeout seconds (at least two polls). For a watcher
    /// started beside a job; --for still bounds it.
    #[arg(long)]
    pub until_gone: bool,
    /// text: a status line and the full report on alert; json: one JSON object per line.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    #[command(flatten)]
    pub sources: SourceArgs,
    #[command(flatten)]
    pub ownership: OwnershipArgs,
}

// These doc comments are `--help` text: backticks would print as they are.
#[allow(clippy::doc_markdown)]
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("live").required(true).args(["store", "workers"])))]
pub struct PublishArgs {
    /// The job's TCPStore (MASTER_ADDR:MASTER_PORT), where each rank's debug-server worker
    /// registered (torch.distributed.debug.start_debug_server). Read only.
    #[arg(long, value_name = "HOST:PORT")]
    pub store: Option<String>,
    /// Poll these debug-server workers instead: `URL` (rank = position) or `RANK=URL`.
    #[arg(long, value_name = "URL", num_args = 1..)]
    pub workers: Vec<String>,
    /// Only these ranks: a list of ranks and ranges, e.g. `0-7` or `0-3,8,12-15` (default:
    /// every rank that registered). With torchrun, node N of P-GPU nodes owns N*P to N*P+P-1.
    #[arg(long, value_name = "RANKS")]
    pub ranks: Option<String>,
    /// Directory to keep the files in (created if missing): `rank_<N>.pkl` or `.json` per
    /// rank, replaced whole at every poll. Point `desync watch --dir` at it.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
    /// With --store: the job's world size, the ranks to look for (default: probe until no
    /// more register).
    #[arg(long, value_name = "N", value_parser = world_size_range())]
    pub world_size: Option<u32>,
    /// Seconds between polls (at least 0.1).
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub interval: f64,
    /// Seconds to wait for the store or one worker before calling it down.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,
    /// Workers fetched at once (1 to 1024).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub concurrency: u16,
    /// Stop after this many seconds.
    #[arg(long = "for", value_name = "SECS")]
    pub duration: Option<f64>,
    /// text: one line per poll on stderr; json: one JSON object per poll on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Where to write the HTML report (`-` for stdout).
    #[arg(long, short = 'o', value_name = "FILE", default_value = "desync-report.html")]
    pub output: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Directory of per-rank dumps (searched recursively), a single dump file, or a bucket
    /// prefix: `s3://BUCKET/PREFIX` or `gs://BUCKET/PREFIX` (access from `AWS_*` or `GOOGLE_*`
    /// variables).
    pub path: PathBuf,
    /// Only read files named PREFIX<rank> (default: any name ending in a rank number).
    #[arg(long, short = 'p')]
    pub prefix: Option<String>,
    /// Write Chrome Trace Event JSON for Perfetto UI or Chrome's trace viewer (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub perfetto: PathBuf,
    /// Only these ranks (`0-7`, `0-3,8,12-15`). Past 64 ranks the default is one rank per
    /// behavioural group plus the culprits; the trace's `otherData.selection` says what was
    /// left out.
    #[arg(long, value_name = "RANKS", conflicts_with = "all_ranks")]
    pub ranks: Option<String>,
    /// Every rank, however many (a 512-rank job with stacks is hundreds of megabytes).
    #[arg(long)]
    pub all_ranks: bool,
    /// Only these process groups, by name or description (`0`, `default_pg,mesh_tp`).
    #[arg(long, value_name = "GROUPS", value_delimiter = ',')]
    pub groups: Option<Vec<String>>,
    /// Only the N collectives on each side of the earliest mismatch (or of the stuck
    /// collective) in its process group, and what other groups did meanwhile.
    #[arg(long, value_name = "N")]
    pub around_mismatch: Option<u64>,
    #[command(flatten)]
    pub ownership: OwnershipArgs,
}

#[derive(clap::Args, Debug)]
pub struct SummarizeArgs {
    /// Dump files, or directories of dumps (searched recursively), found as `analyze` finds
    /// them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Directory for the summaries (created if missing): `<dump name>.desync` per dump.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
    /// Only read files named PREFIX<rank> (default: any name ending in a rank number).
    #[arg(long, short = 'p')]
    pub prefix: Option<String>,
    /// No progress bar and no closing line; warnings still go to stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}
