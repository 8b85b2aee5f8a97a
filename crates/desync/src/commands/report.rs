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

/// Runs `render` into `path` (`-`: stdout) through a buffer; a failure names the path.
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
    let fail = |source| desync_core::Error::Write { path: path.to_path_buf(), source };
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut out = std::io::BufWriter::new(file);
    render(&mut out).map_err(fail)?;
    out.flush().map_err(fail)?;
    Ok(())
}
