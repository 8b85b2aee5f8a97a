//! `desync summarize`: one compact summary per dump, for shipping from the nodes of a large
//! job to where it is analyzed. Exits 0 when every summary was written (a dump that could not
//! be read gets a summary saying so, and a warning here), 2 when one could not be written.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use crate::Outcome;
use crate::cli::SummarizeArgs;
use crate::progress::Bar;

pub fn run(args: &SummarizeArgs) -> anyhow::Result<Outcome> {
    let bar = Bar::new(std::io::stderr().is_terminal() && !args.quiet);
    let options =
        desync_core::load::LoadOptions { prefix: args.prefix.clone(), ..Default::default() };
    let started = Instant::now();
    let done = desync_core::summary::summarize(&args.paths, &args.output, &options, &bar)?;
    let elapsed = started.elapsed();

    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    for w in &done.warnings {
        let place = w.path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default();
        let line = format!("{place}{}", w.message);
        writeln!(err, "desync: warning: {}", desync_core::report::escape_controls(&line))?;
    }
    if !args.quiet {
        let unreadable = match done.unreadable {
            0 => String::new(),
            n => format!(" ({n} of them unreadable, recorded as such)"),
        };
        let ratio = done.bytes_in as f64 / done.bytes_out.max(1) as f64;
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        writeln!(
            out,
            "summarized {} dump(s){unreadable} into {}: {} -> {} ({ratio:.1}x smaller) in {:.2}s",
            done.files,
            args.output.display(),
            bytes(done.bytes_in),
            bytes(done.bytes_out),
            elapsed.as_secs_f64()
        )?;
    }
    Ok(Outcome::Clean)
}

/// Sizes as people read them: "2.5 MB", "181 KB", "912 B" (powers of 1000, like `ls -lh --si`).
fn bytes(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n >= 1e9 => format!("{:.1} GB", n / 1e9),
        n if n >= 1e6 => format!("{:.1} MB", n / 1e6),
        n if n >= 1e3 => format!("{:.0} KB", n / 1e3),
        n => format!("{n} B"),
    }
}
