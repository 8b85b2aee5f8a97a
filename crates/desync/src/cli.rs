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
    /// Serve the analysis as Model Context Protocol tools over stdio (for LLM clients).
    Mcp,
}

#[derive(clap::Args, Debug)]
pub struct LintArgs {
    /// Python files or directories (searched recursively for *.py).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_parser = ["text", "json", "sarif"], default_value = "text")]
    pub format: String,
    /// Only these rules: comma-separated codes or prefixes (DSY001,DSY004 or DSY00).
    #[arg(long, value_name = "RULES")]
    pub select: Option<String>,
    /// Skip these rules (comma-separated codes or prefixes).
    #[arg(long, value_name = "RULES")]
    pub ignore: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: InputArgs,
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
    /// Directory of per-rank dumps (searched recursively), a single dump file, or a bucket
    /// prefix: `s3://BUCKET/PREFIX` or `gs://BUCKET/PREFIX` (access from `AWS_*` or `GOOGLE_*`
    /// variables).
    pub path: PathBuf,
    /// Only read files named PREFIX<rank> (default: any name ending in a rank number).
    #[arg(long, short = 'p')]
    pub prefix: Option<String>,
    /// Read frames under FROM from TO instead (repeatable), e.g. /workspace/job=./job.
    #[arg(long = "path-map", value_name = "FROM=TO")]
    pub path_maps: Vec<String>,
    /// Look for the training code under DIR, matching frame paths by their longest suffix.
    #[arg(long, value_name = "DIR")]
    pub source_root: Option<PathBuf>,
}

impl InputArgs {
    pub fn config(&self) -> anyhow::Result<desync_core::Config> {
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
        Ok(desync_core::Config {
            input: self.path.clone(),
            load: desync_core::load::LoadOptions { prefix: self.prefix.clone() },
            sources: desync_core::bridge::SourceOptions {
                path_maps,
                source_root: self.source_root.clone(),
            },
        })
    }
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
}
