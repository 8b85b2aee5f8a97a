//! `desync export`: the dumps in other tools' formats. `--perfetto FILE` writes Chrome Trace
//! Event JSON (one process per rank, one track per process group, the earliest mismatch
//! marked and linked across ranks) for Perfetto UI and Chrome's trace viewer. A conversion,
//! so it exits 0 when the file was written, whatever the verdict; 2 when it could not be.

use std::io::IsTerminal;

use desync_core::model::RankSet;
use desync_core::report::{PerfettoOptions, REPRESENTATIVE_WORLD, representatives};

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
        ..Default::default()
    };
    super::report::check_output(&args.perfetto)?;
    let bar = Bar::new(std::io::stderr().is_terminal());
    let analysis = crate::input::analyze(&config, &bar)?;
    let options = perfetto_options(args, &analysis)?;
    options.check(&analysis)?;
    super::report::write_output(&args.perfetto, |out| {
        desync_core::report::write_perfetto(&analysis, &options, out).map_err(|e| match e {
            desync_core::report::PerfettoError::Io(e) => e,
            desync_core::report::PerfettoError::Selection(e) => std::io::Error::other(e),
        })
    })?;
    Ok(Outcome::Clean)
}

/// The selection the flags ask for; past [`REPRESENTATIVE_WORLD`] loaded ranks and without
/// `--ranks`/`--all-ranks`, representatives (said on stderr and in the trace's metadata).
fn perfetto_options(
    args: &ExportArgs,
    analysis: &desync_core::Analysis,
) -> anyhow::Result<PerfettoOptions> {
    let mut options = PerfettoOptions {
        groups: args.groups.clone(),
        around_mismatch: args.around_mismatch,
        ..PerfettoOptions::default()
    };
    if let Some(text) = &args.ranks {
        options.ranks = Some(RankSet::new(super::publish::parse_ranks(text)?));
        options.ranks_reason = Some("--ranks".to_owned());
    } else if !args.all_ranks && analysis.trace.ranks.len() > REPRESENTATIVE_WORLD {
        let picked = representatives(analysis);
        eprintln!(
            "desync export: {} ranks loaded; writing {} representative(s) ({}): one per behavioural group, the earliest mismatch's sides and the culprits. --all-ranks writes every rank, --ranks chooses.",
            analysis.trace.ranks.len(),
            picked.len(),
            picked.brief()
        );
        options.ranks = Some(picked);
        options.ranks_reason = Some(format!(
            "representatives: more than {REPRESENTATIVE_WORLD} ranks were loaded, so one rank per behavioural group, the first of each side of the earliest mismatch and the culprits (export with --all-ranks for every rank)"
        ));
    }
    Ok(options)
}
