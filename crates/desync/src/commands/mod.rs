//! One module per verb; each returns an [`Outcome`](crate::Outcome) or an error.

mod analyze;
mod export;
mod lint;
mod mcp;
mod publish;
mod report;
mod run;
mod summarize;
mod watch;

use std::io::IsTerminal;

use crate::Outcome;
use crate::cli::{Args, Command};

/// Text report options for standard output: wrapped to `COLUMNS` when set, else to the
/// terminal's width when standard output is one; piped or redirected output keeps whole lines
/// (grep and diff read them better).
fn text_options(color: bool) -> desync_core::report::TextOptions {
    let from_env = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok());
    let width = from_env.filter(|&w| w > 0).or_else(|| {
        let stdout = console::Term::stdout();
        (std::io::stdout().is_terminal())
            .then(|| stdout.size_checked().map(|(_, w)| usize::from(w)))?
    });
    desync_core::report::TextOptions { color, max_mismatches: 5, width }
}

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    match args.command {
        Command::Analyze(a) => analyze::run(&a),
        Command::Lint(a) => lint::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Export(a) => export::run(&a),
        Command::Summarize(a) => summarize::run(&a),
        Command::Mcp(a) => mcp::run(&a),
        Command::Watch(a) => watch::run(&a),
        Command::Publish(a) => publish::run(&a),
        Command::Run(a) => run::run(&a),
        Command::JobGuard(a) => run::guard(&a),
    }
}
