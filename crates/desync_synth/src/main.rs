//! `desync-synth`: command-line front end of the synthetic FR dump generator.
//!
//! Role: parse flags into a [`desync_synth::Spec`], build the plan, write
//! the files, print a one-line summary (and where the fault hits) on stderr.
//! Invariant: all validation errors come from the library, so the CLI and
//! library callers reject the same specs.

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use desync_synth::{Fault, Format, OpMix, Plan, Spec, TailState, parse_groups, write_ranks};

/// Generate a synthetic torch Flight Recorder (NCCL) dump set.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// Output directory (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Number of ranks.
    #[arg(long, default_value_t = 8)]
    ranks: u32,
    /// Ring-buffer size: entries kept per rank.
    #[arg(long, default_value_t = 2000)]
    entries: u32,
    /// Entries recorded per healthy rank before the dump [default: 1.5 x --entries].
    #[arg(long)]
    history: Option<u64>,
    /// pickle (`_dump_nccl_trace`) or json (`_dump_nccl_trace_json`).
    #[arg(long, default_value = "pickle")]
    format: Format,
    /// Injected fault, e.g. divergence:ranks=3,seq=812[,pg=tp], mismatch:ranks=1,seq=40,
    /// stall:ranks=2+3,seq=40, gpuhang:ranks=1,seq=9, crash:ranks=5, straggler:rank=5,ms=20.
    #[arg(long, default_value = "none")]
    fault: Fault,
    /// Include Python stack frames in pickle entries.
    #[arg(long)]
    frames: bool,
    /// Only entries not completed yet (the recorder's `onlyactive=true`).
    #[arg(long)]
    only_active: bool,
    /// Process-group families, e.g. tp=8,dp (blocks of 8, then strided by 8).
    #[arg(long, default_value = "")]
    groups: String,
    /// Op weights over the default mix, e.g. `p2p=0,all_to_all=3`.
    #[arg(long, default_value = "")]
    ops: String,
    /// State of the newest op on ranks that are not stuck.
    #[arg(long, default_value = "started")]
    tail: TailState,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write only the files of ranks FIRST to LAST (inclusive) of the job: a job too large
    /// for the disk is written in slices (the same plan, so the slices make one job).
    #[arg(long, value_name = "FIRST-LAST")]
    rank_range: Option<String>,
    /// File name prefix; files are <prefix><rank>.
    #[arg(long, default_value = "nccl_trace_rank_")]
    prefix: String,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut spec = Spec::new(args.ranks, args.entries);
    spec.history = args.history;
    spec.groups = parse_groups(&args.groups)?;
    spec.ops = OpMix::parse(&args.ops)?;
    spec.frames = args.frames;
    spec.only_active = args.only_active;
    spec.fault = args.fault;
    spec.tail = args.tail;
    spec.seed = args.seed;
    let started = Instant::now();
    let plan = Plan::new(&spec)?;
    let ranks = match &args.rank_range {
        Some(text) => parse_range(text, spec.world_size)?,
        None => 0..=spec.world_size.saturating_sub(1),
    };
    let summary = write_ranks(&plan, &args.out, &args.prefix, args.format, ranks)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "wrote {} files, {:.1} MB, to {} in {:.2?} (step of {} ops)",
        summary.files,
        summary.bytes as f64 / 1e6,
        args.out.display(),
        started.elapsed(),
        plan.step_len(),
    );
    if let Some(site) = plan.fault_site() {
        eprintln!(
            "fault {} hits {} ({}) at collective_seq_id {} ({})",
            spec.fault, site.class, site.pg_desc, site.seq, site.profiling_name
        );
    }
    Ok(())
}

/// `FIRST-LAST`, inside the world.
fn parse_range(text: &str, world_size: u32) -> anyhow::Result<RangeInclusive<u32>> {
    let parsed = text.split_once('-').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
    match parsed {
        Some((first, last)) if first <= last && last < world_size => Ok(first..=last),
        _ => anyhow::bail!(
            "--rank-range wants FIRST-LAST with FIRST <= LAST < --ranks ({world_size}), not `{text}`"
        ),
    }
}
