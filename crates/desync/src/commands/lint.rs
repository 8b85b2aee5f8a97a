//! `desync lint`: static checks over Python training code. The report goes to stdout; paths
//! that could not be read are listed on stderr (and in the JSON/SARIF document) and make the
//! exit status 2 even when other files were linted. Files read but not parsed (nested past
//! what `CPython` compiles) or linted despite syntax errors are warnings. `-` reads one file
//! from standard input (an editor's buffer), reported as `--stdin-filename`.

use std::io::Write;

use anyhow::bail;

use crate::Outcome;
use crate::cli::LintArgs;

pub fn run(args: &LintArgs) -> anyhow::Result<Outcome> {
    tune_allocator_for_a_parse_heavy_run();
    let selectors = |list: &Option<String>| -> anyhow::Result<Vec<desync_lint::Rule>> {
        Ok(desync_lint::parse_selectors(list.as_deref().unwrap_or(""))?)
    };
    let options = desync_lint::Options {
        select: selectors(&args.select)?,
        ignore: selectors(&args.ignore)?,
        include_indirect: args.include_indirect,
        exit_after: true,
    };
    let stdin = args.paths.iter().any(|p| p.as_os_str() == "-");
    if stdin && args.paths.len() > 1 {
        bail!("`-` (standard input) must be the only path");
    }
    if args.stdin_filename.is_some() && !stdin {
        bail!("--stdin-filename needs `-` as the path");
    }
    let report = if stdin {
        let mut source = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut source)
            .map_err(|e| anyhow::anyhow!("standard input is not readable as UTF-8 text: {e}"))?;
        let label = args.stdin_filename.clone().unwrap_or_else(|| "-".into());
        desync_lint::lint_text(&label, &source, &options)
    } else {
        desync_lint::lint_paths(&args.paths, &options)
    };

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

/// Linting parses every file and keeps the trees for the files that import them: millions of
/// small allocations on every worker thread, held to the end. glibc grows a thread's heap a
/// little at a time (a system call each), hands freed memory back to the system and takes it
/// again, and moves its mmap threshold as it goes; on the real-code bench that was a tenth of
/// the linter's CPU time (measured with `GLIBC_TUNABLES` before writing this). Here each heap
/// grows 64 MiB at a time, keeps what was freed, and only blocks of 32 MiB or more get their
/// own mapping. Other allocators were measured and not kept (docs/lint.md: mimalloc's
/// reservations broke an allocation glibc serves under an address-space cap).
fn tune_allocator_for_a_parse_heavy_run() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    // SAFETY: mallopt only changes glibc's allocator parameters (plain integers, read by the
    // allocations after the call); a value it rejects is reported by its return value,
    // ignored here: the defaults then stay, which is only slower.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}
