//! The `desync` binary: parse arguments, run one command, map the outcome to an exit code.
//! Exit 0: nothing wrong found; 1: a problem was found; 2: desync could not do its job.

mod cli;
mod commands;
mod input;
mod progress;

use std::process::ExitCode;

use clap::Parser;

/// What a command concluded, before it becomes an exit code.
pub enum Outcome {
    Clean,
    Findings,
    /// A status of its own: `desync run` passes on the job's exit code.
    Exit(u8),
}

fn main() -> ExitCode {
    let args = cli::Args::parse();
    match commands::run(args) {
        Ok(Outcome::Clean) => ExitCode::from(0),
        Ok(Outcome::Findings) => ExitCode::from(1),
        Ok(Outcome::Exit(code)) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::from(0),
        Err(e) => {
            // Messages quote file names, which can hold terminal escapes.
            let message = format!("{e:#}");
            eprintln!("desync: error: {}", desync_core::report::escape_controls(&message));
            ExitCode::from(2)
        }
    }
}

/// `desync analyze ... | head` closes our stdout early; that is not a failure.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
