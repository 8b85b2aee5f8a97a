//! `desync lint`: static checks over Python training code. The report goes to stdout; paths
//! that could not be read are listed on stderr (and in the JSON/SARIF document) and make the
//! exit status 2 even when other files were linted. Files read but not parsed (nested past
//! what `CPython` compiles) are warnings.

use std::io::Write;

use anyhow::bail;

use crate::Outcome;
use crate::cli::LintArgs;

pub fn run(args: &LintArgs) -> anyhow::Result<Outcome> {
    let selectors = |list: &Option<String>| -> anyhow::Result<Vec<desync_lint::Rule>> {
        Ok(desync_lint::parse_selectors(list.as_deref().unwrap_or(""))?)
    };
    let options = desync_lint::Options {
        select: selectors(&args.select)?,
        ignore: selectors(&args.ignore)?,
        include_indirect: args.include_indirect,
        exit_after: true,
    };
    let report = desync_lint::lint_paths(&args.paths, &options);

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format.as_str() {
        "json" => desync_lint::write_json(&report, &mut out)?,
        "sarif" => desync_lint::write_sarif(&report, &mut out)?,
        _ => desync_lint::write_text(&report, &mut out)?,
    }
    out.flush()?;

    for e in report.errors.iter().filter(|e| !e.is_read_error()) {
        eprintln!("desync: warning: {e}");
    }
    if let Some(first) = report.errors.iter().find(|e| e.is_read_error()) {
        let unreadable: Vec<_> = report.errors.iter().filter(|e| e.is_read_error()).collect();
        for e in &unreadable {
            eprintln!("desync: {e}");
        }
        bail!(
            "{} path(s) could not be linted (first: {})",
            unreadable.len(),
            first.path().display()
        );
    }
    Ok(if report.findings.is_empty() { Outcome::Clean } else { Outcome::Findings })
}
