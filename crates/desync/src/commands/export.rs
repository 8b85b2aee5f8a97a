//! `desync export`: the dumps in other tools' formats. `--perfetto FILE` writes Chrome Trace
//! Event JSON (one process per rank, one track per process group, the earliest mismatch
//! marked and linked across ranks) for Perfetto UI and Chrome's trace viewer. A conversion,
//! so it exits 0 when the file was written, whatever the verdict; 2 when it could not be.

use std::io::IsTerminal;

use crate::Outcome;
use crate::cli::ExportArgs;
use crate::progress::Bar;

pub fn run(args: &ExportArgs) -> anyhow::Result<Outcome> {
    // No sources: the trace only needs the diagnosis's mismatch and stuck points, not code.
    let config = desync_core::Config {
        input: args.path.clone(),
        load: desync_core::load::LoadOptions {
            prefix: args.prefix.clone(),
            ownership: args.ownership.ownership(),
            world_size: None,
            per_rank_entries: false,
        },
        sources: desync_core::bridge::SourceOptions::default(),
    };
    super::report::check_output(&args.perfetto)?;
    let bar = Bar::new(std::io::stderr().is_terminal());
    let analysis = crate::input::analyze(&config, &bar)?;
    super::report::write_output(&args.perfetto, |out| {
        desync_core::report::write_perfetto(&analysis, out)
    })?;
    Ok(Outcome::Clean)
}
