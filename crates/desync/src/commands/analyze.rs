//! `desync analyze`: the post-mortem on a directory of dumps, on a job's log alone (told by
//! its content), or on dumps with their log (`--log`).

use std::io::{IsTerminal, Write};

use anyhow::Context;

use crate::Outcome;
use crate::cli::{AnalyzeArgs, ColorChoice, Format};
use crate::progress::Bar;

pub fn run(args: &AnalyzeArgs) -> anyhow::Result<Outcome> {
    if let Some(logs) = log_inputs(args)? {
        return run_logs(args, &logs);
    }
    let mut config = args.input.config()?;
    config.logs.clone_from(&args.logs);
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

/// The positional paths when they are logs: PATH is a file whose content is a text log (not a
/// pickle, JSON, gzip or summary); every further path must be one too.
fn log_inputs(args: &AnalyzeArgs) -> anyhow::Result<Option<Vec<std::path::PathBuf>>> {
    let first = &args.input.path;
    let is_log = |path: &std::path::Path| -> anyhow::Result<bool> {
        if !path.is_file() {
            return Ok(false);
        }
        let mut head = Vec::with_capacity(64 * 1024);
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 64 * 1024), &mut head)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Ok(desync_core::logs::looks_like_log(&head))
    };
    if !is_log(first)? {
        if let Some(extra) = args.more_logs.first() {
            anyhow::bail!(
                "{}: several paths are read only as logs, and {} is not one; give dumps as one directory (and logs with --log)",
                extra.display(),
                first.display()
            );
        }
        return Ok(None);
    }
    let mut paths = vec![first.clone()];
    for path in &args.more_logs {
        if !is_log(path)? {
            anyhow::bail!(
                "{}: not a log (a dump, a directory or unreadable); give logs only, or the dumps' directory with --log",
                path.display()
            );
        }
        paths.push(path.clone());
    }
    if !args.logs.is_empty() {
        paths.extend(args.logs.iter().cloned());
    }
    Ok(Some(paths))
}

/// Reads logs that must show something desync reads; their content is never quoted when
/// they do not (they may be any file: docs/security.md).
fn read_logs(paths: &[std::path::PathBuf]) -> anyhow::Result<desync_core::logs::LogAnalysis> {
    let analysis = desync_core::logs::analyze(paths)?;
    if analysis.evidence.is_empty() {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(desync_core::Error::NotALog { names: names.join(", ") }.into());
    }
    Ok(analysis)
}

/// `desync analyze LOG...`: the verdict a log supports.
fn run_logs(args: &AnalyzeArgs, paths: &[std::path::PathBuf]) -> anyhow::Result<Outcome> {
    if args.html.is_some() || args.emit_probes.is_some() {
        anyhow::bail!("--html and --emit-probes need dumps; a log alone has no stacks to show");
    }
    let analysis = read_logs(paths)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Json => desync_core::logs::report::write_json(&analysis, &mut out)?,
        Format::Text if args.quiet => {
            let v = &analysis.verdict;
            let headline = desync_core::report::escape_controls(&v.headline);
            writeln!(out, "{}: {headline}", v.category.as_str())?;
        }
        Format::Text => desync_core::logs::report::write_text(&analysis, &mut out)?,
    }
    out.flush()?;
    Ok(if analysis.verdict.category.is_problem() { Outcome::Findings } else { Outcome::Clean })
}
