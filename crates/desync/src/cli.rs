//! Command-line arguments. Raw clap values become a validated `desync_core::Config` in one
//! place (`AnalyzeArgs::config`), so commands never look at strings again.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser, Debug)]
#[command(name = "desync", version, about = "Find why a distributed PyTorch job hung, from its Flight Recorder dumps")]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Diagnose a hang from per-rank Flight Recorder dumps (a directory, or one file).
    Analyze(AnalyzeArgs),
}

#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Directory of per-rank dumps (searched recursively), or a single dump file.
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

impl AnalyzeArgs {
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
            sources: desync_core::bridge::SourceOptions { path_maps, source_root: self.source_root.clone() },
        })
    }
}
