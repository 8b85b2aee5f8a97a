//! `desync analyze`: the post-mortem on a directory of dumps.

use std::io::{IsTerminal, Write};

use anyhow::Context;

use crate::Outcome;
use crate::cli::{AnalyzeArgs, ColorChoice, Format};
use crate::progress::Bar;

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<Outcome> {
    let config = args.input.config()?;
    for path in args.html.iter().chain(&args.emit_probes) {
        super::report::check_output(path)?;
    }
    let bar = Bar::new(std::io::stderr().is_terminal() && !args.quiet);
    let analysis = crate::input::analyze(&config, &bar)?;

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Json => desync_core::report::write_json(&analysis, &mut out)?,
        Format::Text if args.quiet => {
            let d = &analysis.diagnosis;
            let headline = desync_core::report::escape_controls(&d.headline);
            writeln!(out, "{}: {headline}", d.category.as_str())?;
        }
        Format::Text => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stdout().is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            let options = super::text_options(color);
            desync_core::report::write_text(&analysis, options, &mut out)?;
        }
    }
    out.flush()?;
    if let Some(path) = &args.html {
        let options = desync_core::report::HtmlOptions::default();
        super::report::write_output(path, |w| {
            desync_core::report::write_html(&analysis, &options, w)
        })?;
    }

    if let Some(path) = &args.emit_probes {
        if analysis.probes.is_empty() {
            eprintln!(
                "desync: no probes to emit (no branch point was found in local sources); {} not written",
                path.display()
            );
        } else {
            let base = std::env::current_dir().context("current directory")?;
            let diff = desync_core::bridge::probes_diff(&analysis.probes, &base, &config.sources);
            if diff.is_empty() {
                // An empty file would only make `git apply` fail with "No valid patches".
                eprintln!(
                    "desync: no probe can be written as a patch (each one's description says why; the report shows them as snippets); {} not written",
                    path.display()
                );
            } else {
                desync_core::output::write_file(path, |out| out.write_all(diff.as_bytes()))?;
            }
        }
    }
    Ok(if analysis.diagnosis.category.is_problem() { Outcome::Findings } else { Outcome::Clean })
}
