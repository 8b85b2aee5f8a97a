//! `desync report`: the diagnosis as one self-contained HTML file, for people who look
//! rather than read (and for attaching to an incident). Exit codes as `analyze`: 0 healthy,
//! 1 a problem was found, 2 desync could not do its job.

use std::io::{IsTerminal, Write};
use std::path::Path;

use crate::Outcome;
use crate::cli::ReportArgs;
use crate::progress::Bar;

pub fn run(args: &ReportArgs) -> anyhow::Result<Outcome> {
    let config = args.input.config()?;
    check_output(&args.output)?;
    let bar = Bar::new(std::io::stderr().is_terminal());
    let analysis = crate::input::analyze(&config, &bar)?;
    write_output(&args.output, |out| {
        desync_core::report::write_html(
            &analysis,
            &desync_core::report::HtmlOptions::default(),
            out,
        )
    })?;
    if args.output.as_os_str() != "-" {
        eprintln!(
            "desync: {}: report written to {}",
            analysis.diagnosis.category.as_str(),
            args.output.display()
        );
    }
    Ok(if analysis.diagnosis.category.is_problem() { Outcome::Findings } else { Outcome::Clean })
}

/// Refuses an output path that is not a regular file or a new name (a FIFO would block the
/// write, a device or a directory cannot hold a report), before the analysis runs.
pub(super) fn check_output(path: &Path) -> anyhow::Result<()> {
    if path.as_os_str() != "-" {
        desync_core::output::check_file_target(path)?;
    }
    Ok(())
}

/// Runs `render` into `path` (`-`: stdout) through a buffer, or into a file through a
/// temporary name renamed over it ([`desync_core::output`]); a failure names the path.
pub(super) fn write_output(
    path: &Path,
    render: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        render(&mut out)?;
        out.flush()?;
        return Ok(());
    }
    desync_core::output::write_file(path, render)?;
    Ok(())
}
