//! One module per verb; each returns an [`Outcome`](crate::Outcome) or an error.

mod analyze;
mod export;
mod lint;
mod mcp;
mod report;
mod run;
mod summarize;
mod watch;

use crate::Outcome;
use crate::cli::{Args, Command};

pub fn run(args: Args) -> anyhow::Result<Outcome> {
    match args.command {
        Command::Analyze(a) => analyze::run(&a),
        Command::Lint(a) => lint::run(&a),
        Command::Report(a) => report::run(&a),
        Command::Export(a) => export::run(&a),
        Command::Summarize(a) => summarize::run(&a),
        Command::Mcp => mcp::run(),
        Command::Watch(a) => watch::run(&a),
        Command::Run(a) => run::run(&a),
    }
}
